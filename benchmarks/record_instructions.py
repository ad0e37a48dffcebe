"""Instruction counts of recording ops, for before/after comparisons on a busy machine.

Timings on a shared machine wander; valgrind's instruction counts do not. Run one workload ``n``
times under callgrind, then zero times, and divide the difference::

    python benchmarks/record_instructions.py mul 2000        # one workload, printed per call
    python benchmarks/record_instructions.py --all           # every workload under callgrind

Workloads: ``mul``/``add``/``mul_number``/``square``/``cube``/``tanh`` record one op on 0-d float32
tensors that require grad; ``matmul_add``, ``relu``, ``bce`` record the ops of the raw-tensor lesson
step on its own shapes, ``linear`` is ``F.linear`` (an ``nn.Linear`` layer's recorded ops) on those
shapes, ``raw_forward`` is that step's whole forward pass and ``raw_update`` its update phase
(``p -= lr * p.grad`` and ``p.grad = None`` under ``no_grad``, for each of its six parameters);
``cubic`` and ``micrograd`` are one whole step of bench_core's scalar rows (forward, backward,
update). Only numpy and gradviz are imported (no torch).
"""
from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

WORKLOADS = ("mul", "add", "mul_number", "square", "cube", "tanh", "matmul_add", "linear", "relu", "bce", "raw_forward",
             "raw_update", "cubic", "micrograd")
# a fixed hash seed, and numpy's BLAS on one thread as bench_core runs it: OpenBLAS's idle worker threads
# otherwise run (and are counted) while the workload runs, about 1,400 instructions per 0-d op
QUIET_ENVIRONMENT = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
CALLS = {"cubic": 20, "micrograd": 10, "matmul_add": 500, "linear": 500, "relu": 500, "bce": 500, "raw_forward": 100, "raw_update": 200}


def workload(name):
    import gradviz as lib

    a = lib.tensor(1.5, requires_grad=True)
    b = lib.tensor(0.75, requires_grad=True)
    if name == "mul":
        return lambda: a * b
    if name == "add":
        return lambda: a + b
    if name == "mul_number":
        return lambda: a * 0.5
    if name == "square":
        return lambda: a ** 2
    if name == "cube":
        return lambda: a ** 3
    if name == "tanh":
        return lambda: a.tanh()
    if name == "matmul_add":
        x = lib.ones(64, 16)
        w = lib.ones(16, 16, requires_grad=True)
        bias = lib.ones(16, requires_grad=True)
        return lambda: x @ w + bias
    if name == "linear":  # what nn.Linear records: AddmmBackward0 over TBackward0
        x = lib.ones(64, 16)
        w = lib.ones(16, 16, requires_grad=True)
        bias = lib.ones(16, requires_grad=True)
        return lambda: lib.nn.functional.linear(x, w, bias)
    if name == "raw_update":  # the update phase alone: gradients put back (a slot store each) before each one
        from workloads import make_raw_problem, raw_update

        params, x, y = make_raw_problem(lib, (2, 16, 16, 1), 64)
        grads = [lib.ones_like(p) * 0.01 for p in params]

        def update():
            for p, g in zip(params, grads):
                p._grad = g
            raw_update(lib, params)
        return update
    if name in ("relu", "bce", "raw_forward"):
        from workloads import make_raw_problem, raw_forward

        params, x, y = make_raw_problem(lib, (2, 16, 16, 1), 64)
        hidden = x @ params[0] + params[1]
        logits = lib.tanh(lib.relu(hidden) @ params[2] + params[3]) @ params[4] + params[5]
        if name == "relu":
            return lambda: lib.relu(hidden)
        if name == "bce":
            return lambda: lib.nn.functional.binary_cross_entropy_with_logits(logits, y)
        return lambda: raw_forward(lib, params, x, y)
    raise ValueError(f"unknown workload {name!r}; one of {', '.join(WORKLOADS)}")


def run(name, calls):
    if name in ("cubic", "micrograd"):
        import gradviz as lib

        from workloads import make_cubic_fit, make_neuron_net  # bench_core's own steps, without torch

        step = (make_cubic_fit if name == "cubic" else make_neuron_net)(lib)
    else:
        step = workload(name)
    step()  # warm: first calls fill caches
    gc.collect()
    gc.freeze()  # the imported modules' objects out of the collector's sight: a full collection falling into
    # one run or the other (the imports hold about 10^5 objects) moved a per-call count by thousands
    for _ in range(calls):
        step()


def instructions(name, calls):
    counts = []
    for n in (0, calls):
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "callgrind.out")
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
                            os.path.abspath(__file__), name, str(n), "--inner"],
                           check=True, capture_output=True, env={**os.environ, **QUIET_ENVIRONMENT})
            with open(out) as dump:
                counts.append(int(re.search(r"^summary: (\d+)", dump.read(), re.M).group(1)))
    return (counts[1] - counts[0]) / calls


if __name__ == "__main__":
    if "--inner" in sys.argv:
        run(sys.argv[1], int(sys.argv[2]))
    else:
        names = WORKLOADS if "--all" in sys.argv else [sys.argv[1]]
        for name in names:
            calls = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else CALLS.get(name, 2000)
            print(f"{name:12} {instructions(name, calls):12,.0f} instructions per call", flush=True)
