"""How large a real PyTorch graph gradviz can show, and how fast, beside torchviz.

For deep chains ``x = tanh(x @ w_i + b_i)`` (1-D ``x``, so each layer is Unsqueeze, Mm, Squeeze,
Add, Tanh and two parameters: 9 graph nodes) of 10 to 2,000 layers, and a ResNet-18-sized
convolutional network, it measures:

* nodes/edges: the size of gradviz's snapshot;
* snapshot: ``build_torch_graph`` (walk, labels, saved-tensor summaries);
* trace: the observed ``torch_backward_steps`` (no engine, no hooks) as the widget's JSON trace;
* layout: ``gradviz.render.compute_layout`` (skipped if that module is missing);
* export: ``gradviz.widget.export.export_html`` to one HTML file (snapshot + trace + layout +
  writing), skipped if missing;
* first render: the exported page opened in Chromium (every network request blocked), from
  navigation to the first node drawn and painted, by ``performance.now()`` inside the page; a
  model's graph opens collapsed by module (target for a ResNet-18: <= 3 s);
* torchviz: ``make_dot`` plus rendering its DOT to SVG with Graphviz, or the error it raised
  (it recurses once per node of depth, so deep graphs end in RecursionError).

Run: ``python benchmarks/bench_torch_graphs.py [--layers 10 100 ...] [--dot-timeout 120]``.
Times are single runs in seconds (these graphs are big enough that one run is representative).
"""
from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import tempfile
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_widget's browser probe
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))  # the shared ResNet-18

from fixtures.torch_models import ResNet18  # noqa: E402
from gradviz.interop.torch_source import build_torch_graph  # noqa: E402
from gradviz.interop.torch_steps import torch_backward_steps  # noqa: E402
from gradviz.snapshot.trace import trace_to_dict  # noqa: E402


def deep_chain(layers: int):
    """A loss over ``layers`` tanh layers; returns (loss, names) with every parameter named."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(16, generator=generator)
    names = {}
    for layer in range(layers):
        weight = (torch.randn(16, 16, generator=generator) / 4).requires_grad_()
        bias = torch.zeros(16, requires_grad=True)
        names[f"w{layer}"], names[f"b{layer}"] = weight, bias
        x = torch.tanh(x @ weight + bias)
    loss = x.sum()
    names["loss"] = loss
    return loss, names


def resnet18_case():
    """(loss, names, model) for a ResNet-18 on two 64x64 images; labels come from the model."""
    torch.manual_seed(0)
    model = ResNet18()
    logits = model(torch.randn(2, 3, 64, 64))
    return nn.functional.cross_entropy(logits, torch.tensor([1, 3])), None, model


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def optional(module_name: str, attribute: str):
    """``module.attribute`` if the (possibly unfinished) module provides it, else None."""
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError):
        return None


def measure_gradviz(loss, names, model, workdir: str) -> dict:
    row = {}
    graph, row["snapshot"] = timed(build_torch_graph, loss, names=names, model=model)
    row["nodes"], row["edges"] = len(graph.nodes), len(graph.edges)
    steps, seconds = timed(lambda: list(torch_backward_steps(loss, dry_run=True, run_hooks=False)))
    _, row["trace"] = timed(trace_to_dict, steps, graph)
    row["trace"] += seconds
    layout = optional("gradviz.render", "compute_layout")
    row["layout"] = _attempt(layout, graph) if layout else "n/a"
    export = optional("gradviz.widget.export", "export_html")
    path = os.path.join(workdir, f"graph-{row['nodes']}.html")
    row["export"] = _attempt(export, loss, path, names=names or {}, model=model) if export else "n/a"
    if export and isinstance(row["export"], float):
        row["html_mb"] = os.path.getsize(path) / 1e6
        row["first_render_ms"] = first_render_ms(path)
    return row


def first_render_ms(path: str):
    """Milliseconds from navigation to the first drawn node, measured inside Chromium, or "n/a"."""
    try:
        from playwright.sync_api import sync_playwright

        from bench_widget import CHROMIUM, CHROMIUM_ARGS, FIRST_RENDER_PROBE
    except ImportError:
        return "n/a"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                      else route.abort())
        context.add_init_script(FIRST_RENDER_PROBE)
        page = context.new_page()
        page.goto(f"file://{os.path.abspath(path)}")
        milliseconds = page.evaluate("window.__gvFirstRender")
        browser.close()
    return round(milliseconds)


FAILURES: list = []  # (what, error) for the notes under the table


def _attempt(function, *args, **kwargs):
    """Seconds taken, or the error's type name when the call failed (details listed later)."""
    try:
        return timed(function, *args, **kwargs)[1]
    except Exception as error:  # a benchmark reports failures instead of stopping
        FAILURES.append((getattr(function, "__name__", str(function)), error))
        return type(error).__name__


def measure_torchviz(loss, names, model, dot_timeout: float) -> str:
    """torchviz's make_dot plus a Graphviz render, or why it did not finish."""
    try:
        from torchviz import make_dot
    except ImportError:
        return "not installed"
    params = {k: v for k, v in (names or {}).items() if v.grad_fn is None}
    if model is not None:
        params.update(dict(model.named_parameters()))
    try:
        dot, make_seconds = timed(make_dot, loss, params=params)
    except RecursionError:
        return "RecursionError"
    try:
        _, render_seconds = timed(subprocess.run, ["dot", "-Tsvg"], input=dot.source.encode(),
                                  capture_output=True, check=True, timeout=dot_timeout)
    except subprocess.TimeoutExpired:
        return f"{make_seconds:.2f}s + dot > {dot_timeout:.0f}s"
    except (OSError, subprocess.CalledProcessError) as error:
        return f"{make_seconds:.2f}s + dot failed ({type(error).__name__})"
    return f"{make_seconds + render_seconds:.2f}s"


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[10, 100, 500, 1000, 2000])
    parser.add_argument("--dot-timeout", type=float, default=120.0,
                        help="seconds Graphviz may take to render torchviz's picture")
    parser.add_argument("--no-resnet", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)

    cases = [(f"chain {layers}", lambda layers=layers: (*deep_chain(layers), None))
             for layers in args.layers]
    if not args.no_resnet:
        cases.append(("resnet-18", resnet18_case))

    header = ("model", "nodes", "edges", "snapshot s", "trace s", "layout s", "export s",
              "html MB", "first render ms", "torchviz make_dot+dot")
    print(f"torch {torch.__version__}, recursion limit {sys.getrecursionlimit()}")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    with tempfile.TemporaryDirectory() as workdir:
        for title, make in cases:
            loss, names, model = make()
            row = measure_gradviz(loss, names, model, workdir)
            row["torchviz"] = measure_torchviz(loss, names, model, args.dot_timeout)
            cells = [title, row["nodes"], row["edges"], row["snapshot"], row["trace"],
                     row["layout"], row["export"], row.get("html_mb", "n/a"),
                     row.get("first_render_ms", "n/a"), row["torchviz"]]
            print(" | ".join(_cell(c) for c in cells), flush=True)
    seen = set()
    for what, error in FAILURES:
        if (what, str(error)) not in seen:
            seen.add((what, str(error)))
            print(f"note: {what} failed: {type(error).__name__}: {error}")


if __name__ == "__main__":
    main()
