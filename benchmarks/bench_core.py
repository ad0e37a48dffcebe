"""gradviz's core against PyTorch's CPU eager mode, as ratios taken in one run.

The same training code runs against both libraries (``lib`` is ``gradviz`` or ``torch``, as in
``import gradviz as torch``), with the same initial weights and data:

* lesson-size MLP step, nn style: 2-16-16-1 on 64 points (Linear, ReLU, Linear, Tanh, Linear,
  BCE-with-logits, ``zero_grad``, ``backward``, ``SGD.step`` under no_grad); target <= 0.8
* the same step in the raw-tensor style of the seeds and PyTorch's tensor tutorials
  (``x @ W + b``, ``relu``/``tanh``, ``F.binary_cross_entropy_with_logits``, ``backward``,
  ``p -= lr * p.grad`` under ``no_grad``, ``p.grad = None``); target <= 0.8, and the same step
  split per phase (forward, backward, update: microseconds per step of each library)
* scalar-heavy loops (many tiny ops): a cubic fitted to 16 points one 0-d tensor at a time, and a
  micrograd-style network (2-4-4-1 neurons of 0-d weights, tanh) on 4 samples; target <= 0.8
* wide MLP step: 32-256-256-1 on 1024 points, nn and raw-tensor style; target <= 1.1
* 100,000-op scalar chain: build (alternating ``* c`` and ``+ c``) and backward; target <= 1.5
* memory: RSS growth of gradviz over 10,000 lesson-size steps; target < 5 MB

Both run on one thread: PyTorch through ``torch.set_num_threads(1)``, numpy's BLAS through
``OPENBLAS_NUM_THREADS=1`` (set here before numpy loads, unless already set), so the ratio
compares the engines, not thread counts. Each timing is the median of
``--repeats`` samples (twice as many, each shorter, for the small rows); the samples of the two
libraries are interleaved so that machine noise hits both alike, and the ratio is the median of
the paired ratios, printed with their quartiles (the machine is shared: read the spread). Times
are CPU time of this one-threaded process (``time.process_time``), so waiting for a core on a
busy machine does not count. Run: ``python benchmarks/bench_core.py [--repeats 15] [--quick]``.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # before numpy loads its BLAS

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import gradviz  # noqa: E402
from workloads import make_cubic_fit, make_neuron_net, make_raw_problem, raw_forward, raw_step, raw_update  # noqa: E402

torch.set_num_threads(1)


# -- the workloads (identical code for both libraries) ----------------------------------------
def make_mlp(lib, sizes, weights):
    """``Linear, ReLU, Linear, Tanh, Linear`` with the given (weight, bias) numpy arrays."""
    nn = lib.nn
    layers = [nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Linear(sizes[1], sizes[2]), nn.Tanh(),
              nn.Linear(sizes[2], sizes[3])]
    model = nn.Sequential(*layers)
    with lib.no_grad():
        for layer, (weight, bias) in zip(layers[::2], weights):
            layer.weight.copy_(lib.tensor(weight))
            layer.bias.copy_(lib.tensor(bias))
    return model


def make_problem(lib, sizes, points, seed=0):
    """Model, optimizer and data for one library, from a fixed numpy seed."""
    rng = np.random.default_rng(seed)
    weights = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(fan_in)
        weights.append((rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32),
                        rng.uniform(-bound, bound, (fan_out,)).astype(np.float32)))
    x = rng.standard_normal((points, sizes[0])).astype(np.float32)
    y = (x[:, :1] * x[:, -1:] > 0).astype(np.float32)
    model = make_mlp(lib, sizes, weights)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, optimizer, lib.tensor(x), lib.tensor(y)


def training_step(lib, model, optimizer, x, y):
    """One step of a lesson's training loop."""
    logits = model(x)
    loss = lib.nn.functional.binary_cross_entropy_with_logits(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


def scalar_chain(lib, length):
    """Build ``length`` scalar ops on one leaf, then run backward; returns the leaf's grad."""
    x = lib.tensor(1.0, requires_grad=True)
    y = x
    for i in range(length // 2):
        y = y * 0.99999
        y = y + 0.001
    y.backward()
    del y
    return x.grad


# -- timing -------------------------------------------------------------------------------------------
# CPU time of this process, not wall time: both libraries run on one thread here, so the two agree
# on a quiet machine, and on a shared one the time spent waiting for a core is left out.
CLOCK = time.process_time

def per_call(function, calls):
    gc.collect()
    start = CLOCK()
    for _ in range(calls):
        function()
    return (CLOCK() - start) / calls


def compare(make_run, calls, repeats):
    """Median seconds per call for gradviz and torch, interleaving their samples.

    Also the median and quartiles of the paired ratios (each gradviz sample over the torch sample
    taken right after it): on a shared, busy machine a burst of load hits both halves of a pair,
    so the paired ratio is steadier than the ratio of the two medians.
    """
    runs = {"gradviz": make_run(gradviz), "torch": make_run(torch)}
    for run in runs.values():  # warm up (first calls allocate, import, fill caches)
        per_call(run, max(1, calls // 4))
    samples = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            samples[name].append(per_call(run, calls))
    result = {name: statistics.median(values) for name, values in samples.items()}
    ratios = sorted(mine / theirs for mine, theirs in zip(samples["gradviz"], samples["torch"]))
    result["ratio"] = statistics.median(ratios)
    result["spread"] = (ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4])
    return result


def phase_times(lib, problem, calls):
    """Seconds per step spent in forward, backward and update of the raw-tensor step."""
    params, x, y = problem
    totals = [0.0, 0.0, 0.0]
    clock = CLOCK
    gc.collect()
    for _ in range(calls):
        start = clock()
        loss = raw_forward(lib, params, x, y)
        forward_end = clock()
        loss.backward()
        backward_end = clock()
        raw_update(lib, params)
        end = clock()
        totals[0] += forward_end - start
        totals[1] += backward_end - forward_end
        totals[2] += end - backward_end
    return [total / calls for total in totals]


def compare_phases(sizes, points, calls, repeats):
    """Median seconds per step of each phase, per library, interleaved like ``compare``."""
    problems = {"gradviz": make_raw_problem(gradviz, sizes, points), "torch": make_raw_problem(torch, sizes, points)}
    libraries = {"gradviz": gradviz, "torch": torch}
    for name, problem in problems.items():
        phase_times(libraries[name], problem, max(1, calls // 4))
    samples = {name: [] for name in problems}
    for _ in range(repeats):
        for name, problem in problems.items():
            samples[name].append(phase_times(libraries[name], problem, calls))
    return {name: [statistics.median(sample[i] for sample in values) for i in range(3)]
            for name, values in samples.items()}


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def rss_growth(steps):
    """RSS growth (bytes) of gradviz over ``steps`` lesson-size training steps, after a warm-up."""
    model, optimizer, x, y = make_problem(gradviz, (2, 16, 16, 1), 64)
    for _ in range(500):
        training_step(gradviz, model, optimizer, x, y)
    gc.collect()
    before = rss_bytes()
    for _ in range(steps):
        training_step(gradviz, model, optimizer, x, y)
    gc.collect()
    return rss_bytes() - before


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="fewer calls, for a smoke test")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    repeats = 3 if args.quick else args.repeats

    def mlp_step(sizes, points):
        def make_run(lib):
            problem = make_problem(lib, sizes, points)
            return lambda: training_step(lib, *problem)
        return make_run

    def raw_mlp_step(sizes, points):
        def make_run(lib):
            problem = make_raw_problem(lib, sizes, points)
            return lambda: raw_step(lib, *problem)
        return make_run

    rows = []
    lesson = compare(mlp_step((2, 16, 16, 1), 64), 50 // scale, 2 * repeats)
    rows.append(("lesson MLP step, nn + optim (2-16-16-1)", lesson, 0.8, "us", 1e6))
    raw = compare(raw_mlp_step((2, 16, 16, 1), 64), 50 // scale, 2 * repeats)
    rows.append(("lesson MLP step, raw tensors (seed style)", raw, 0.8, "us", 1e6))
    cubic = compare(make_cubic_fit, 5 // scale or 1, 2 * repeats)
    rows.append(("cubic fit on 0-d tensors (16 points)", cubic, 0.8, "us", 1e6))
    neurons = compare(make_neuron_net, 3 // scale or 1, 2 * repeats)
    rows.append(("micrograd-style net (2-4-4-1, 4 samples)", neurons, 0.8, "us", 1e6))
    wide = compare(mlp_step((32, 256, 256, 1), 1024), 20 // scale, repeats)
    rows.append(("wide MLP step, nn + optim (32-256-256-1)", wide, 1.1, "us", 1e6))
    wide_raw = compare(raw_mlp_step((32, 256, 256, 1), 1024), 20 // scale, repeats)
    rows.append(("wide MLP step, raw tensors", wide_raw, 1.1, "us", 1e6))
    chain_length = 100_000 // scale
    chain = compare(lambda lib: (lambda: scalar_chain(lib, chain_length)), 1, max(3, repeats // 3))
    rows.append((f"{chain_length:,}-op scalar chain, build + backward", chain, 1.5, "ms", 1e3))
    phases = compare_phases((2, 16, 16, 1), 64, 200 // scale, repeats)

    with open("/proc/loadavg") as loadavg:
        load = " ".join(loadavg.read().split()[:3])

    print(f"gradviz {gradviz.__version__} / torch {torch.__version__} (1 thread), "
          f"numpy {np.__version__}, Python {sys.version.split()[0]}; median of {repeats}; load {load}")
    print("ratio: median of paired samples (gradviz sample / the torch sample right after it); "
          "spread: their quartiles")
    print(f"{'benchmark':46} {'gradviz':>12} {'torch':>12} {'ratio':>7} {'spread':>11} {'target':>8}  ok")
    for label, times, target, unit, factor in rows:
        ratio = times["ratio"]
        print(f"{label:46} {times['gradviz'] * factor:9.1f} {unit} {times['torch'] * factor:9.1f} {unit} "
              f"{ratio:7.2f} {times['spread'][0]:5.2f}-{times['spread'][1]:<5.2f} {'<= ' + str(target):>8}  "
              f"{'yes' if ratio <= target else 'NO'}")
    for index, phase in enumerate(("forward", "backward", "update")):
        label = f"  raw lesson step: {phase}"
        ratio = phases["gradviz"][index] / phases["torch"][index]
        print(f"{label:46} {phases['gradviz'][index] * 1e6:9.1f} us {phases['torch'][index] * 1e6:9.1f} us "
              f"{ratio:7.2f}")
    steps = 10_000 // scale
    growth = rss_growth(steps)
    print(f"{f'RSS growth over {steps:,} lesson steps (gradviz)':46} {growth / 2**20:9.2f} MB "
          f"{'':12} {'':7} {'':11} {'< 5 MB':>8}  {'yes' if growth < 5 * 2**20 else 'NO'}")


if __name__ == "__main__":
    main()
