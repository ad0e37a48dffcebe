"""Live-refresh benchmark: what an ordinary notebook cell costs after graph widgets were shown.

Runs cells in an IPython shell (the kernel's cell machinery, no front end) with the live refresh
registered, and reports the time of an empty cell (``y = 1``) in each situation, as milliseconds
added to the same cell with no widget at all, measured in this one run:

* 200 widgets shown (``w = gv.show(loss); w``) and then deleted (``del w``);
* one open 20,000-node widget, held by the user and reported on screen by the front end;
* that widget after a cell that changes every leaf's ``.grad`` (``x.grad.add_(1.0)``, a new value
  each time), the ``.grad``-only update (no trace, no hook), its message written as a kernel sends it;
* that widget after ``backward()`` freed its graph (a new snapshot, once).

Also the RSS growth over the 200 widgets. Target (DESIGN.md): a cell adds <= 50 ms, whatever was
shown before. Run: ``python benchmarks/bench_refresh.py [--cells N] [--nodes N]``.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import pathlib
import resource
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))


def cell_ms(shell, code: str, repeats: int) -> float:
    """Median wall time of running ``code`` as a cell, post_run_cell callbacks included."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        shell.run_cell(code, silent=False, store_history=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


@contextlib.contextmanager
def sent_as_by_a_kernel():
    """Widgets send their messages as in a kernel: ipywidgets sends nothing when no kernel is
    connected; here each message is written as the kernel's session writes it (JSON, with binary
    buffers apart), so the time of sending a state is counted."""
    from ipywidgets.widgets.widget import Widget

    def send(widget, msg, buffers=None):
        json.dumps(msg)

    original = Widget._send
    Widget._send = send
    try:
        yield
    finally:
        Widget._send = original


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 1e6


def measure(cells: int = 30, widgets: int = 200, nodes: int = 20_000) -> dict:
    """Run the situations of the module docstring in one IPython shell; returns ``rows``
    ``[(situation, cell ms, ms added to the no-widget cell)]`` and what else the report prints.
    The cells' own output (``Out[12]: ...``) is not printed."""
    with contextlib.redirect_stdout(io.StringIO()):
        return _measure(cells, widgets, nodes)


def _measure(cells: int, widgets: int, nodes: int) -> dict:
    from IPython.core.interactiveshell import InteractiveShell

    from gradviz.widget import live

    shell = InteractiveShell.instance()
    shell.display_formatter.active_types = ["text/plain"]  # no front end: keep output small
    shell.run_cell("import gradviz as gv\nx = gv.tensor(2.0, requires_grad=True)\nloss = x * x")
    live.register(shell)
    empty = "y = 1"
    baseline = cell_ms(shell, empty, cells)
    rows = [("empty cell, no widget (baseline)", baseline, 0.0)]

    rss_before = rss_mb()
    start = time.perf_counter()
    for _ in range(widgets):
        shell.run_cell("w = gv.show(loss)\nw")
    shown_s = time.perf_counter() - start
    shell.run_cell("del w")
    gc.collect()
    with_deleted = cell_ms(shell, empty, cells)
    rows.append((f"empty cell after {widgets} widgets shown then deleted", with_deleted,
                 with_deleted - baseline))
    rss_growth = rss_mb() - rss_before
    followed_after_delete = len(live.tracked())

    # about `nodes` nodes: each step of the chain adds MulBackward0, AddBackward0, two constants
    build = ("h = x\nfor i in range(%d):\n    h = h * 0.999 + 0.001\nbig = h" % (nodes // 4))
    shell.run_cell(build)
    start = time.perf_counter()
    shell.run_cell("big_widget = gv.show(big)")
    show_s = time.perf_counter() - start
    widget = shell.user_ns["big_widget"]
    shown_nodes = len(widget.graph["nodes"])
    widget._on_front_end_message(widget, {"type": "gradviz-view", "open": True}, [])  # on screen
    del widget
    with_big = cell_ms(shell, empty, cells)
    rows.append((f"empty cell with one open {shown_nodes:,}-node widget", with_big, with_big - baseline))

    shell.run_cell("big.backward(retain_graph=True)")
    with sent_as_by_a_kernel():
        grad_cell = cell_ms(shell, "x.grad.add_(1.0)", max(3, cells // 5))
    rows.append(("x.grad.add_(1.0) with that widget (.grad-only update)", grad_cell, grad_cell - baseline))
    freed = cell_ms(shell, "big.backward()", 1)
    rows.append(("big.backward() freeing its graph (one new snapshot)", freed, freed - baseline))
    after_freed = cell_ms(shell, empty, cells)
    rows.append(("empty cell after that", after_freed, after_freed - baseline))
    shell.run_cell("del big_widget, big, h")
    return {"rows": rows, "widgets": widgets, "shown_s": shown_s, "followed_after_delete": followed_after_delete,
            "rss_growth_mb": rss_growth, "nodes": shown_nodes, "show_s": show_s}


def report(result: dict) -> None:
    print(f"{'situation':58} {'cell ms':>9} {'added ms':>9}")
    for label, total, added in result["rows"]:
        print(f"{label:58} {total:9.2f} {added:9.2f}")
    print(f"\n{result['widgets']} widgets shown in {result['shown_s']:.1f} s; still followed after `del w`: "
          f"{result['followed_after_delete']}; RSS growth over them: {result['rss_growth_mb']:.1f} MB")
    print(f"the {result['nodes']:,}-node widget took {result['show_s']:.1f} s to show (snapshot, trace, layout)")
    print("target: <= 50 ms added per cell, whatever was shown before")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=30, help="empty cells timed per situation")
    parser.add_argument("--widgets", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=20_000, help="nodes of the big graph (about)")
    args = parser.parse_args()
    report(measure(args.cells, args.widgets, args.nodes))


if __name__ == "__main__":
    main()
