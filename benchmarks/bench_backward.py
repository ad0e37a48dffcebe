"""The backward pass and the update of gradviz against PyTorch, per phase, and as instruction counts.

Three workloads from ``bench_core.py`` (the same code runs against both libraries):

* ``cubic``: the cubic fitted to 16 points one 0-d tensor at a time;
* ``micrograd``: the micrograd-style network (2-4-4-1 neurons of 0-d weights, tanh) on 4 samples;
* ``raw``: the lesson-size MLP step (2-16-16-1 on 64 points) in the raw-tensor style;
* ``wide``: bench_core's wide raw-tensor step (32-256-256-1 on 1024 points), where the arrays' own
  work dominates (timing only by default: ``--callgrind wide`` runs it too, slowly).

Each step is split into three phases: ``forward`` (building the graph), ``backward``
(``loss.backward()``) and ``update`` (``p -= lr * p.grad; p.grad = None`` under ``no_grad``).

Modes::

    python benchmarks/bench_backward.py [cubic micrograd raw]   # µs per phase, gradviz / torch ratios
    python benchmarks/bench_backward.py --callgrind            # instructions per phase (gradviz only)
    python benchmarks/bench_backward.py --count cubic 5        # what --callgrind runs under valgrind

Timing interleaves the two libraries' samples (CPU time of this one-threaded process) and prints the
median of the paired ratios, with the load average: the machine may be shared, so read the spread.
``--callgrind`` runs ``valgrind --tool=callgrind`` once per workload on ``--count``, which runs each
phase of each measured step in its own ``exec``; callgrind counts only inside those and dumps after
each, so the instructions of every phase come out separately (the median over the steps is
printed): steady under load, for before/after comparisons of small changes.
"""
from __future__ import annotations

import argparse
import gc
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # before numpy loads its BLAS

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import gradviz  # noqa: E402
from workloads import cubic_fit_phases as cubic, make_raw_problem, neuron_net_phases as micrograd  # noqa: E402
from workloads import raw_forward, raw_update  # noqa: E402

WORKLOADS = ("cubic", "micrograd", "raw", "wide")
CALLGRIND_WORKLOADS = ("cubic", "micrograd", "raw")  # wide under valgrind takes minutes: ask for it by name


# -- the workloads: (forward() -> loss, update()) for one library, bench_core's own (workloads.py) ------
def raw(lib, sizes=(2, 16, 16, 1), points=64):
    """bench_core's raw-tensor lesson step as (forward, update)."""
    params, x, y = make_raw_problem(lib, sizes, points)
    return (lambda: raw_forward(lib, params, x, y)), (lambda: raw_update(lib, params))


def wide(lib):
    """bench_core's wide raw-tensor step as (forward, update)."""
    return raw(lib, sizes=(32, 256, 256, 1), points=1024)


# -- instruction counts ---------------------------------------------------------------------------
# Each phase of each measured step runs inside its own ``exec`` of a compiled line: callgrind counts
# only inside ``builtin_exec`` (--toggle-collect) and writes one dump as each exec returns
# (--dump-after), so one process gives every phase of every step separately. The imports before
# (which exec modules too) make the earlier dumps; the measured ones are the last 3 * N.
FORWARD = compile("loss = forward()", "<forward>", "exec")
BACKWARD = compile("loss.backward()", "<backward>", "exec")
UPDATE = compile("update()", "<update>", "exec")


def count(workload: str, iterations: int) -> None:
    """Set up, warm up, then run ``iterations`` steps, each phase in its own ``exec`` (for callgrind)."""
    forward, update = globals()[workload](gradviz)
    for _ in range(3):  # warm up: first calls import lazily and fill caches
        forward().backward()
        update()
    namespace = {"forward": forward, "update": update}
    gc.collect()
    gc.disable()  # a collection would land in one step and not another
    for _ in range(iterations):
        exec(FORWARD, namespace)
        exec(BACKWARD, namespace)
        exec(UPDATE, namespace)
        del namespace["loss"]


def callgrind_counts(workload: str, iterations: int) -> list:
    """Instructions of each measured step's phases: ``iterations`` lists [forward, backward, update]."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "callgrind.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=builtin_exec",
                        "--dump-after=builtin_exec", f"--callgrind-out-file={out}", sys.executable,
                        os.path.abspath(__file__), "--count", workload, str(iterations)],
                       capture_output=True, text=True, check=True)
        dumps = sorted((name for name in os.listdir(folder) if re.fullmatch(r"callgrind\.out\.\d+", name)),
                       key=lambda name: int(name.rsplit(".", 1)[1]))[-3 * iterations:]
        totals = []
        for name in dumps:
            with open(os.path.join(folder, name)) as dump:
                totals.append(int(re.search(r"^summary: (\d+)", dump.read(), re.MULTILINE).group(1)))
    return [totals[i:i + 3] for i in range(0, len(totals), 3)]


def callgrind_table(workloads, iterations: int) -> None:
    print(f"instructions per phase (callgrind, median of {iterations} steps after 3 warm-up steps)")
    print(f"{'workload':10} {'forward':>12} {'backward':>12} {'update':>12} {'step':>12}")
    for workload in workloads:
        steps = callgrind_counts(workload, iterations)
        phases = [statistics.median(step[i] for step in steps) for i in range(3)]
        total = statistics.median(sum(step) for step in steps)
        print(f"{workload:10} {phases[0]:12,.0f} {phases[1]:12,.0f} {phases[2]:12,.0f} {total:12,.0f}", flush=True)


# -- timing against torch -------------------------------------------------------------------------
CLOCK = time.process_time


def phase_times(forward, update, calls: int) -> list:
    """Seconds per call of forward, backward and update."""
    totals = [0.0, 0.0, 0.0]
    gc.collect()
    for _ in range(calls):
        start = CLOCK()
        loss = forward()
        middle = CLOCK()
        loss.backward()
        end = CLOCK()
        update()
        totals[0] += middle - start
        totals[1] += end - middle
        totals[2] += CLOCK() - end
    return [total / calls for total in totals]


def timing_table(workloads, repeats: int) -> None:
    import torch

    torch.set_num_threads(1)
    calls = {"cubic": 20, "micrograd": 10, "raw": 200, "wide": 10}
    with open("/proc/loadavg") as loadavg:
        load = " ".join(loadavg.read().split()[:3])
    print(f"µs per call, median of {repeats} interleaved samples; ratio: median of paired ratios; load {load}")
    print(f"{'workload':10} {'phase':9} {'gradviz':>10} {'torch':>10} {'ratio':>6} {'spread':>11}")
    for workload in workloads:
        runs = {name: globals()[workload](lib) for name, lib in (("gradviz", gradviz), ("torch", torch))}
        for forward, update in runs.values():
            phase_times(forward, update, max(1, calls[workload] // 4))
        samples = {name: [] for name in runs}
        for _ in range(repeats):
            for name, (forward, update) in runs.items():
                times = phase_times(forward, update, calls[workload])
                samples[name].append(times + [sum(times)])
        for index, phase in enumerate(("forward", "backward", "update", "step")):
            mine = [sample[index] for sample in samples["gradviz"]]
            theirs = [sample[index] for sample in samples["torch"]]
            ratios = sorted(m / t for m, t in zip(mine, theirs))
            print(f"{workload:10} {phase:9} {statistics.median(mine) * 1e6:10.1f} "
                  f"{statistics.median(theirs) * 1e6:10.1f} {statistics.median(ratios):6.2f} "
                  f"{ratios[len(ratios) // 4]:5.2f}-{ratios[(3 * len(ratios)) // 4]:<5.2f}", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", nargs=2, metavar=("WORKLOAD", "N"),
                        help="run N steps of WORKLOAD, each phase in its own exec (what --callgrind measures)")
    parser.add_argument("--callgrind", action="store_true", help="instructions per phase, from callgrind")
    parser.add_argument("--iterations", type=int, default=5, help="measured steps per callgrind run")
    parser.add_argument("--repeats", type=int, default=15, help="timing samples per library")
    parser.add_argument("workloads", nargs="*", help=f"some of {WORKLOADS} (default: all; {CALLGRIND_WORKLOADS} "
                        "with --callgrind)")
    args = parser.parse_args(argv)
    if not args.workloads:
        args.workloads = list(CALLGRIND_WORKLOADS if args.callgrind else WORKLOADS)
    if not set(args.workloads) <= set(WORKLOADS):
        parser.error(f"workloads are some of {WORKLOADS}")
    if args.count:
        workload, iterations = args.count
        if workload not in WORKLOADS:
            parser.error(f"WORKLOAD is one of {WORKLOADS}")
        count(workload, int(iterations))
    elif args.callgrind:
        callgrind_table(args.workloads, args.iterations)
    else:
        timing_table(args.workloads, args.repeats)


if __name__ == "__main__":
    main()
