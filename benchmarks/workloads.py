"""The workloads the core benchmarks time, written as learners write them, for any library with
PyTorch's API (``torch`` or ``gradviz``): the raw-tensor lesson step of the seeds, a cubic fit on 0-d
tensors, a micrograd-style network. Each scalar workload comes as (forward, update) phases, which
``bench_backward.py`` times apart, and as one step (``stepped``), which ``bench_core.py`` times.
numpy only: ``record_instructions.py`` imports this without torch.
"""
from __future__ import annotations

import numpy as np


def make_raw_problem(lib, sizes, points, seed=0):
    """Raw parameters ``[W1, b1, W2, b2, W3, b3]`` (W as fan_in x fan_out, for ``x @ W + b``) and data."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(fan_in)
        for shape in ((fan_in, fan_out), (fan_out,)):
            params.append(lib.tensor(rng.uniform(-bound, bound, shape).astype(np.float32), requires_grad=True))
    x = rng.standard_normal((points, sizes[0])).astype(np.float32)
    y = (x[:, :1] * x[:, -1:] > 0).astype(np.float32)
    return params, lib.tensor(x), lib.tensor(y)


def raw_forward(lib, params, x, y):
    """The forward pass as the seeds write it: ``x @ W + b``, ``relu``, ``tanh``, BCE with logits."""
    w1, b1, w2, b2, w3, b3 = params
    hidden = lib.relu(x @ w1 + b1)
    hidden = lib.tanh(hidden @ w2 + b2)
    logits = hidden @ w3 + b3
    return lib.nn.functional.binary_cross_entropy_with_logits(logits, y)


def raw_update(lib, params, lr=0.1):
    """Plain gradient descent, as tutorials write it before they meet ``optim``."""
    with lib.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None


def raw_step(lib, params, x, y):
    loss = raw_forward(lib, params, x, y)
    loss.backward()
    raw_update(lib, params)
    return loss


def cubic_fit_phases(lib, points=16):
    """(forward, update) of ``y = a + b x + c x^2 + d x^3`` fitted to sin(x), one 0-d tensor op at a time."""
    xs = [lib.tensor(float(v)) for v in np.linspace(-1.5, 1.5, points)]
    ts = [lib.tensor(float(np.sin(v))) for v in np.linspace(-1.5, 1.5, points)]
    coefficients = [lib.tensor(0.1 * (i + 1), requires_grad=True) for i in range(4)]

    def forward():
        a, b, c, d = coefficients
        loss = 0.0
        for x, t in zip(xs, ts):
            prediction = a + b * x + c * x ** 2 + d * x ** 3
            loss = loss + (prediction - t) ** 2
        return loss

    def update():
        with lib.no_grad():
            for p in coefficients:
                p -= 1e-3 * p.grad
                p.grad = None
    return forward, update


def neuron_net_phases(lib, sizes=(2, 4, 4, 1), samples=4, seed=0):
    """(forward, update) of a micrograd-style network: every weight a 0-d tensor, each neuron
    ``tanh(sum(w_i x_i) + b)``."""
    rng = np.random.default_rng(seed)
    layers = [[([lib.tensor(float(rng.uniform(-1, 1)), requires_grad=True) for _ in range(fan_in)],
                lib.tensor(float(rng.uniform(-1, 1)), requires_grad=True)) for _ in range(fan_out)]
              for fan_in, fan_out in zip(sizes[:-1], sizes[1:])]
    params = [p for layer in layers for weights, bias in layer for p in weights + [bias]]
    data = [[lib.tensor(float(v)) for v in rng.uniform(-1, 1, sizes[0])] for _ in range(samples)]
    targets = [lib.tensor(float(v)) for v in (1.0, -1.0, -1.0, 1.0)[:samples]]

    def forward():
        loss = 0.0
        for inputs, target in zip(data, targets):
            values = inputs
            for layer in layers:
                outputs = []
                for weights, bias in layer:
                    total = bias
                    for w, v in zip(weights, values):
                        total = total + w * v
                    outputs.append(total.tanh())
                values = outputs
            loss = loss + (values[0] - target) ** 2
        return loss

    def update():
        with lib.no_grad():
            for p in params:
                p -= 0.05 * p.grad
                p.grad = None
    return forward, update


def stepped(forward, update):
    """One training step from its phases: forward, ``loss.backward()``, update."""
    def step():
        loss = forward()
        loss.backward()
        update()
        return loss
    return step


def make_cubic_fit(lib, points=16):
    return stepped(*cubic_fit_phases(lib, points))


def make_neuron_net(lib, sizes=(2, 4, 4, 1), samples=4, seed=0):
    return stepped(*neuron_net_phases(lib, sizes, samples, seed))
