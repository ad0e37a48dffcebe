"""Instruction counts of a big show or export, for before/after comparisons on a busy machine.

Each case builds its graph, then runs ``gv.show`` (with the message a kernel would send, as
``bench_widget.py`` counts it) or ``gv.export_html`` once; the same script is run a second time
without the call, and the difference of valgrind's instruction counts is the call's own cost::

    python benchmarks/widget_instructions.py                 # every case
    python benchmarks/widget_instructions.py "chain 5000 export"

Cases: ``chain 5000`` (5,003 gradviz nodes) and ``torch 500`` (the 500-layer torch model of
``bench_torch_graphs.py``, about 4,500 nodes), each ``show`` and ``export``. Copy this file into an
older checkout's ``benchmarks/`` to measure it there (it imports the checkout it sits in).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

CASES = ("chain 5000 show", "chain 5000 export", "torch 500 show", "torch 500 export")


def run_case(case: str, calls: int) -> None:
    """Build the case's graph, then do its call ``calls`` times (0 or 1)."""
    import gradviz as gv

    kind, size, what = case.split()
    if kind == "chain":
        from fixtures import shapes

        output, names = shapes.chain(int(size)), {}
    else:
        from bench_torch_graphs import deep_chain

        output, names = deep_chain(int(size))
    from bench_refresh import sent_as_by_a_kernel

    import gradviz.widget.widget  # noqa: F401  (imported in both runs: not counted)

    with tempfile.TemporaryDirectory() as folder:
        for _ in range(calls):
            if what == "show":
                with sent_as_by_a_kernel():
                    gv.show(output, names=names).close()
            else:
                gv.export_html(output, os.path.join(folder, "page.html"), names=names)


def instructions(case: str, calls: int) -> int:
    with tempfile.TemporaryDirectory() as folder:
        completed = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={folder}/out", sys.executable,
             os.path.abspath(__file__), "--run", case, str(calls)], capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", completed.stderr).group(1))


def main() -> None:
    if sys.argv[1:2] == ["--run"]:
        run_case(sys.argv[2], int(sys.argv[3]))
        return
    for case in sys.argv[1:] or CASES:
        cost = instructions(case, 1) - instructions(case, 0)
        print(f"{case}: {cost / 1e6:,.0f}M instructions", flush=True)


if __name__ == "__main__":
    main()
