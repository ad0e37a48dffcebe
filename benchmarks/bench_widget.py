"""Widget benchmark: Python-side snapshot + trace + layout, payload and HTML size, and in-browser
first render and per-step time, for graphs of about 10, 100, 1,000 and 5,000 nodes; beside each,
torchviz ``make_dot`` + Graphviz render on the same torch graph, as a ratio.

Run: ``python benchmarks/bench_widget.py`` (needs torch, torchviz, playwright and Chromium).
Browser times are measured inside the page with ``performance.now()``. Targets (DESIGN.md):
1,000 nodes first render <= 2 s, one step <= 16 ms.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
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
