"""Widget benchmark, in two tables.

1. MLPs of about 10, 100, 1,000 and 5,000 nodes: Python-side snapshot + trace + layout, payload
   and HTML size, and in-browser first render and per-step time; beside each, torchviz
   ``make_dot`` + Graphviz render on the same torch graph, as a ratio.
2. Shapes that stress layout and export (``tests/fixtures/shapes.py``): fan-out of 100 and 1,000
   uses of one tensor, a scalar RNN unrolled 60 and 200 steps, chains of 20,000, 66,666 and
   100,000 nodes (gradviz tensors, as a lesson writes them), and the 2,000-layer torch model of
   ``bench_torch_graphs.py`` (18,000 nodes): ``gv.show`` (with the message ipywidgets sends:
   its scan of the state for binary buffers, then the JSON the kernel's session writes, as
   ``bench_refresh.sent_as_by_a_kernel`` counts it) and
   ``gv.export_html`` time, the layout engine chosen, the HTML size, and torchviz on the same
   graph built with torch, where it finishes within ``--dot-timeout``.
3. What an empty notebook cell costs after 200 widgets were shown and deleted, and with one open
   20,000-node widget (``bench_refresh.py``, run here too).

Run: ``python benchmarks/bench_widget.py [--sizes ...] [--shapes ...] [--skip-mlp] [--skip-refresh]
[--no-torchviz]`` (needs torch, torchviz, anywidget, playwright and Chromium). Show and export
times are wall seconds with CPU seconds in brackets (this process and its ``dot`` children): on a
machine shared with other work, the CPU time is close to what the wall time is on an idle one. It uses only public entry points
(``gv.show``, ``gv.export_html``), so the same script measures an older checkout for a
before/after. Browser times are measured inside the page with ``performance.now()``. Targets
(DESIGN.md): 1,000 nodes first render <= 2 s, one step <= 16 ms; show or export of any
20,000-node graph <= 2 s in Python; the 2,000-layer torch export <= 5 s and <= 5 MB.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))  # the shared shapes
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))  # torchviz recurses once per node of depth

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SIZES = (10, 100, 1000, 5000)

# Resolves window.__gvFirstRender with performance.now() once the first node is drawn and painted.
FIRST_RENDER_PROBE = """
window.__gvFirstRender = new Promise((resolve) => {
  const observer = new MutationObserver(() => {
    if (!document.querySelector('[data-node-id]')) return;
    observer.disconnect();
    requestAnimationFrame(() => setTimeout(() => resolve(performance.now()), 0));
  });
  document.addEventListener('DOMContentLoaded', () =>
    observer.observe(document.body, { childList: true, subtree: true }));
});
"""

STEP_PROBE = """async (count) => {
  const next = document.querySelector('[data-action=next]');
  const times = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    next.click();
    document.body.getBoundingClientRect();  // force style and layout inside the measurement
    times.push(performance.now() - start);
    await new Promise((resolve) => requestAnimationFrame(resolve));
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)], max: times[times.length - 1], count };
}"""


def torch_model(target_nodes: int):
    """An MLP whose graph has about ``target_nodes`` nodes (7 per Linear+ReLU block, plus 3)."""
    import torch

    torch.manual_seed(0)
    layers = []
    for _ in range(max(1, round((target_nodes - 3) / 7))):
        layers += [torch.nn.Linear(4, 4), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers)
    loss = model(torch.randn(2, 4)).sum()
    return model, loss


def python_side(model, loss, workdir: pathlib.Path) -> dict:
    from gradviz.render.layout import compute_layout
    from gradviz.widget.export import page_html
    from gradviz.widget.state import OPTIONS, snapshot_state

    start = time.perf_counter()
    graph, steps, note = snapshot_state(loss, {"loss": loss})
    traced = time.perf_counter()
    layout = compute_layout(graph)
    done = time.perf_counter()
    state = {"graph": graph.to_dict(), "graph_layout": layout, "trace": steps, "step_index": 0,
             "note": note, **OPTIONS}
    page = workdir / f"graph-{len(graph.nodes)}.html"
    page.write_text(page_html(state), encoding="utf-8")
    return {"nodes": len(graph.nodes), "steps": len(steps), "engine": layout["engine"],
            "snapshot_trace_s": traced - start, "layout_s": done - traced, "python_s": done - start,
            "payload_bytes": len(json.dumps(state)), "html_bytes": page.stat().st_size, "page": page}


def torchviz_side(model, loss, workdir: pathlib.Path) -> dict:
    try:
        from torchviz import make_dot
    except ImportError:
        return {"torchviz_s": None, "torchviz_error": "torchviz not installed"}
    start = time.perf_counter()
    try:
        dot = make_dot(loss, params=dict(model.named_parameters()))
        dot.render(str(workdir / "torchviz"), format="svg", cleanup=True)
    except RecursionError:
        return {"torchviz_s": None, "torchviz_error": "RecursionError"}
    return {"torchviz_s": time.perf_counter() - start, "torchviz_error": None}


def browser_side(browser, page_path: pathlib.Path, steps: int) -> dict:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                  else route.abort())
    context.add_init_script(FIRST_RENDER_PROBE)
    page = context.new_page()
    page.goto(page_path.as_uri())
    first_ms = page.evaluate("window.__gvFirstRender")
    stepping = page.evaluate(STEP_PROBE, min(steps, 200))
    context.close()
    return {"first_render_ms": first_ms, "step_median_ms": stepping["median"], "step_max_ms": stepping["max"]}


SHAPES = ("fan-out 100", "fan-out 1000", "rnn 60", "rnn 200", "chain 20000", "chain 66666", "chain 100000",
          "torch 2000 layers")


def shape_case(name: str, lib):
    """``(output tensor, names)`` of a named shape, built with ``lib`` (gradviz or torch)."""
    from fixtures import shapes

    kind, size = name.split()[0], int(name.split()[1])
    if kind == "torch":
        from bench_torch_graphs import deep_chain

        return deep_chain(size)
    make = {"fan-out": shapes.fan_out, "rnn": shapes.unrolled_rnn, "chain": shapes.chain}[kind]
    return make(size, lib=lib), {}


def cpu_s() -> float:
    """CPU seconds of this process and its finished children (``dot``): on a machine shared with
    other work, what the wall time would be if this process had a core to itself."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def measure_shape(name: str, workdir: pathlib.Path, dot_timeout: float | None) -> dict:
    """Show and export time, engine and HTML size in gradviz; torchviz on the torch twin
    (not run when ``dot_timeout`` is None)."""
    import torch

    import gradviz as gv
    from bench_refresh import sent_as_by_a_kernel

    output, names = shape_case(name, gv)
    start, start_cpu = time.perf_counter(), cpu_s()
    with sent_as_by_a_kernel():
        widget = gv.show(output, names=names)
    show_s, show_cpu = time.perf_counter() - start, cpu_s() - start_cpu
    engine, nodes = widget.graph_layout["engine"], len(widget.graph["nodes"])
    widget.close()
    del widget
    page = workdir / "shape.html"
    start, start_cpu = time.perf_counter(), cpu_s()
    gv.export_html(output, page, names=names)
    export_s, export_cpu = time.perf_counter() - start, cpu_s() - start_cpu
    row = {"case": name, "nodes": nodes, "engine": engine, "show_s": show_s, "export_s": export_s,
           "show_cpu_s": show_cpu, "export_cpu_s": export_cpu,
           "html_mb": page.stat().st_size / 1e6}
    if dot_timeout is None:
        row["torchviz"] = "not run"
        return row
    twin, twin_names = (output, names) if name.startswith("torch") else shape_case(name, torch)
    row["torchviz"] = torchviz_render(twin, twin_names, workdir, dot_timeout)
    return row


def torchviz_render(output, names: dict, workdir: pathlib.Path, dot_timeout: float) -> str:
    """torchviz's make_dot plus Graphviz's SVG render, in seconds, or why it did not finish."""
    import subprocess

    try:
        from torchviz import make_dot
    except ImportError:
        return "not installed"
    start = time.perf_counter()
    try:
        dot = make_dot(output, params={k: v for k, v in names.items() if v.grad_fn is None})
    except RecursionError:
        return "RecursionError"
    try:
        subprocess.run(["dot", "-Tsvg", "-o", str(workdir / "torchviz.svg")], input=dot.source.encode(),
                       capture_output=True, check=True, timeout=dot_timeout)
    except subprocess.TimeoutExpired:
        return f"> {dot_timeout:.0f} s"
    return f"{time.perf_counter() - start:.2f}"


SHAPE_HEADER = ("case", "nodes", "engine", "show s (cpu)", "export s (cpu)", "html MB", "torchviz s")


def shape_line(row: dict) -> str:
    return " | ".join([row["case"], str(row["nodes"]), row["engine"], f"{row['show_s']:.2f} ({row['show_cpu_s']:.2f})",
                       f"{row['export_s']:.2f} ({row['export_cpu_s']:.2f})", f"{row['html_mb']:.1f}", row["torchviz"]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--shapes", nargs="*", default=list(SHAPES), help=f"any of {SHAPES}")
    parser.add_argument("--skip-mlp", action="store_true", help="no MLP table")
    parser.add_argument("--skip-refresh", action="store_true", help="no per-cell refresh table")
    parser.add_argument("--no-torchviz", action="store_true", help="shapes without torchviz beside them")
    parser.add_argument("--dot-timeout", type=float, default=60.0, help="seconds torchviz's Graphviz render may take")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()

    import gradviz.widget.widget  # noqa: F401 - anywidget's import is not part of the first show's time

    print(f"load average at the start: {os.getloadavg()}", file=sys.stderr if args.json else sys.stdout)
    shape_rows = []
    dot_timeout = None if args.no_torchviz else args.dot_timeout
    if not args.json:
        print(" | ".join(SHAPE_HEADER))
        print(" | ".join("---" for _ in SHAPE_HEADER))
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.shapes:
            shape_rows.append(measure_shape(name, pathlib.Path(tmp), dot_timeout))
            if not args.json:
                print(shape_line(shape_rows[-1]), flush=True)  # each row as soon as it is measured
    if args.json:
        print(json.dumps(shape_rows, indent=2))
    if not args.skip_refresh:
        import bench_refresh

        print()
        bench_refresh.report(bench_refresh.measure())
    print(f"load average after the shapes: {os.getloadavg()}", file=sys.stderr if args.json else sys.stdout)
    if args.skip_mlp:
        return
    print()
    from playwright.sync_api import sync_playwright

    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        workdir = pathlib.Path(tmp)
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        for size in args.sizes:
            model, loss = torch_model(size)
            row = python_side(model, loss, workdir)
            row.update(torchviz_side(model, loss, workdir))
            row.update(browser_side(browser, row.pop("page"), row["steps"]))
            row["ratio_vs_torchviz"] = row["python_s"] / row["torchviz_s"] if row["torchviz_s"] else None
            rows.append(row)
        browser.close()
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    header = ("nodes", "engine", "py snap+trace s", "py layout s", "payload KB", "html KB",
              "first render ms", "step median ms", "step max ms", "torchviz s", "py / torchviz")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in rows:
        torchviz = f"{row['torchviz_s']:.3f}" if row["torchviz_s"] else row["torchviz_error"]
        ratio = f"{row['ratio_vs_torchviz']:.2f}" if row["ratio_vs_torchviz"] else "-"
        print(" | ".join([str(row["nodes"]), row["engine"], f"{row['snapshot_trace_s']:.3f}",
                          f"{row['layout_s']:.3f}", f"{row['payload_bytes'] / 1024:.0f}",
                          f"{row['html_bytes'] / 1024:.0f}", f"{row['first_render_ms']:.0f}",
                          f"{row['step_median_ms']:.2f}", f"{row['step_max_ms']:.2f}", torchviz, ratio]))


if __name__ == "__main__":
    main()
