"""gradviz.optim against torch.optim: the same weights and gradients, several steps, the same parameters.

gradviz follows PyTorch's single-tensor update code (its choice on the CPU) operation for operation.
Two things in PyTorch's own kernels are out of numpy's reach: its AVX2 kernels fuse some multiply-adds
(``addcmul``, ``lerp``) into one rounding, and its float ``sqrt`` goes through MKL, which is not
correctly rounded. So the parameters agree within a few units in the last place with the torch
that runs here, and bit for bit with torch's portable kernels (``ATEN_CPU_CAPABILITY=default``) for
SGD, and for every optimizer when gradviz does its arithmetic with torch (the torch backend): the
order of operations is PyTorch's exactly.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gradviz as gv


def torch_or_skip():
    return pytest.importorskip("torch")


def twin_models(torch):
    gv.manual_seed(0)
    ours = gv.nn.Sequential(gv.nn.Linear(3, 8), gv.nn.Tanh(), gv.nn.Linear(8, 1))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy().copy()))
    return ours, theirs


@pytest.mark.parametrize("settings", [
    {"lr": 0.1},
    {"lr": 0.05, "momentum": 0.9},
    {"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01},
    {"lr": 0.05, "momentum": 0.8, "nesterov": True},
    {"lr": 0.05, "momentum": 0.5, "maximize": True},
])
def test_sgd_steps_match_torch(settings):
    torch = torch_or_skip()
    ours, theirs = twin_models(torch)
    optimizers = (gv.optim.SGD(ours.parameters(), **settings), torch.optim.SGD(theirs.parameters(), **settings))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 3)).astype(np.float32)
    y = rng.standard_normal((16, 1)).astype(np.float32)
    for _ in range(5):
        for lib, model, optimizer in ((gv, ours, optimizers[0]), (torch, theirs, optimizers[1])):
            loss = lib.nn.functional.mse_loss(model(lib.tensor(x)), lib.tensor(y))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
        assert p.is_leaf and p.requires_grad and p.grad_fn is None
    ours_state, theirs_state = optimizers[0].state_dict(), optimizers[1].state_dict()
    assert ours_state["param_groups"] == theirs_state["param_groups"]
    assert sorted(ours_state["state"]) == sorted(theirs_state["state"])
    for index, entry in theirs_state["state"].items():
        assert sorted(ours_state["state"][index]) == sorted(entry)
        np.testing.assert_allclose(ours_state["state"][index]["momentum_buffer"].numpy(),
                                   entry["momentum_buffer"].numpy(), rtol=1e-5, atol=1e-6)


def test_step_updates_in_place_and_bumps_version():
    model = gv.nn.Linear(2, 1)
    weight = model.weight
    storage = weight._data
    version = weight._version
    optimizer = gv.optim.SGD(model.parameters(), lr=0.5)
    model(gv.ones(3, 2)).sum().backward()
    before = weight.detach().numpy().copy()
    optimizer.step()
    assert model.weight is weight and weight._data is storage  # the same object and array: widgets see it
    assert weight._version > version
    np.testing.assert_allclose(weight.detach().numpy(), before - 0.5 * 3.0)
    assert weight.grad_fn is None and weight.is_leaf


def step_with_closure(lib, name: str, lr: float):
    """One step of ``name`` on two parameters, through a closure that gives only the first a grad."""
    a, b = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(2))
    optimizer = getattr(lib.optim, name)([a, b], lr=lr)

    def closure():
        optimizer.zero_grad()
        loss = (a * 3).sum()
        loss.backward()
        return loss

    return a, b, optimizer, optimizer.step(closure)


def test_step_skips_parameters_without_grad_and_runs_closure():
    a, b, _, loss = step_with_closure(gv, "SGD", 1.0)
    assert loss.item() == 6.0
    assert a.tolist() == [-2.0, -2.0] and b.tolist() == [1.0, 1.0]


def test_zero_grad_semantics_match_torch():
    torch = torch_or_skip()
    for lib in (gv, torch):
        parameter = lib.nn.Parameter(lib.ones(3))
        optimizer = lib.optim.SGD([parameter], lr=0.1)
        (parameter * 2).sum().backward()
        grad = parameter.grad
        optimizer.zero_grad(set_to_none=False)
        assert parameter.grad is grad and parameter.grad.tolist() == [0.0, 0.0, 0.0]
        (parameter * 2).sum().backward()
        optimizer.zero_grad()
        assert parameter.grad is None


def test_repr_and_param_groups_match_torch():
    torch = torch_or_skip()
    ours, theirs = twin_models(torch)
    assert repr(gv.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)) == \
        repr(torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9))
    groups = lambda lib, model: [{"params": list(model[0].parameters())},  # noqa: E731
                                 {"params": list(model[2].parameters()), "lr": 0.01}]
    ours_optimizer = gv.optim.SGD(groups(gv, ours), lr=0.1)
    theirs_optimizer = torch.optim.SGD(groups(torch, theirs), lr=0.1)
    assert repr(ours_optimizer) == repr(theirs_optimizer)
    assert ours_optimizer.state_dict() == theirs_optimizer.state_dict()


@pytest.mark.parametrize("arguments", [
    {"lr": -0.1}, {"lr": 0.1, "momentum": -1}, {"lr": 0.1, "weight_decay": -1},
    {"lr": 0.1, "nesterov": True},
])
def test_bad_settings_raise_like_torch(arguments):
    torch = torch_or_skip()
    messages = []
    for lib in (gv, torch):
        with pytest.raises(ValueError) as error:
            lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], **arguments)
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_bad_params_raise_like_torch():
    torch = torch_or_skip()
    for make, kind in ((lambda lib: [], ValueError), (lambda lib: lib.ones(2, requires_grad=True), TypeError)):
        messages = []
        for lib in (gv, torch):
            with pytest.raises(kind) as error:
                lib.optim.SGD(make(lib), lr=0.1)
            messages.append(str(error.value))
        assert messages[0] == messages[1]


# -- Adam, AdamW, RMSprop (and SGD) step by step ---------------------------------------------------------
CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True, "betas": (0.8, 0.9)}),
    ("Adam", {"lr": 0.01, "betas": (0.3, 0.999), "maximize": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.3}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.9, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.3, "centered": True, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 0.5, "maximize": True}),
]


def run_optimizer(lib, name: str, settings: dict, dtype: str = "float32", steps: int = 6):
    """Parameters of three shapes, fresh random gradients each step, the learning rate halved
    through ``param_groups`` half way; returns the parameters and the optimizer."""
    rng = np.random.default_rng(0)
    params = [lib.nn.Parameter(lib.tensor(rng.standard_normal(shape).astype(dtype))) for shape in ((5, 3), (7,), (37,))]
    optimizer = getattr(lib.optim, name)(params, **settings)
    for step in range(steps):
        for param in params:
            param.grad = lib.tensor(rng.standard_normal(tuple(param.shape)).astype(dtype))
        if step == steps // 2:
            optimizer.param_groups[0]["lr"] /= 2
        optimizer.step()
    return params, optimizer


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, settings", CASES, ids=[f"{n}{s}" for n, s in CASES])
def test_steps_and_state_match_torch(name, settings, dtype):
    torch = torch_or_skip()
    (ours, ours_optimizer), (theirs, theirs_optimizer) = (run_optimizer(lib, name, settings, dtype) for lib in (gv, torch))
    tolerance = {"float32": dict(rtol=2e-6, atol=2e-7), "float64": dict(rtol=1e-12, atol=1e-13)}[dtype]
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), **tolerance)
        assert p.is_leaf and p.requires_grad and p.grad_fn is None and p.dtype == getattr(gv, dtype)
    ours_state, theirs_state = ours_optimizer.state_dict(), theirs_optimizer.state_dict()
    assert ours_state["param_groups"] == theirs_state["param_groups"]
    assert sorted(ours_state["state"]) == sorted(theirs_state["state"])
    for index, entries in theirs_state["state"].items():
        assert sorted(ours_state["state"][index]) == sorted(entries)
        for key, value in entries.items():
            mine = ours_state["state"][index][key]
            assert repr(mine.dtype) == str(value.dtype) and tuple(mine.shape) == tuple(value.shape), key
            np.testing.assert_allclose(mine.numpy(), value.numpy(), **tolerance)
    assert repr(ours_optimizer) == repr(theirs_optimizer)


_PORTABLE_KERNELS_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {tests!r})
    import torch
    import gradviz as gv
    from gradviz import backends
    from test_optim import CASES, run_optimizer
    assert torch.backends.cpu.get_cpu_capability() == "DEFAULT"
    same = {{}}
    for index, (name, settings) in enumerate(CASES):
        for dtype in ("float32", "float64"):
            theirs = [p.detach().numpy() for p in run_optimizer(torch, name, settings, dtype)[0]]
            ours = [p.detach().numpy() for p in run_optimizer(gv, name, settings, dtype)[0]]
            with backends.using("torch"):
                through_torch = [p.detach().numpy() for p in run_optimizer(gv, name, settings, dtype)[0]]
            same[f"{{index}} {{dtype}}"] = [all((a == b).all() for a, b in zip(ours, theirs)),
                                            all((a == b).all() for a, b in zip(through_torch, theirs))]
    print(json.dumps(same))
""")


def test_order_of_operations_is_torchs_bit_for_bit():
    """Against torch's portable kernels: SGD bit for bit on numpy; every optimizer bit for bit when
    gradviz's arithmetic runs on torch (so even MKL's sqrt is the same)."""
    torch_or_skip()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = _PORTABLE_KERNELS_SCRIPT.format(root=root, tests=os.path.join(root, "tests"))
    output = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True,
                            env=dict(os.environ, ATEN_CPU_CAPABILITY="default")).stdout
    for key, (numpy_same, torch_backend_same) in json.loads(output).items():
        name = CASES[int(key.split()[0])][0]
        assert torch_backend_same, key
        if name == "SGD":
            assert numpy_same, key


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_load_state_dict_resumes_exactly(name):
    settings = {"SGD": {"lr": 0.1, "momentum": 0.9}, "Adam": {"lr": 0.01, "amsgrad": True},
                "AdamW": {"lr": 0.01}, "RMSprop": {"lr": 0.01, "centered": True, "momentum": 0.5},
                "Adagrad": {"lr": 0.1, "lr_decay": 0.1}}[name]
    rng = np.random.default_rng(0)
    start = [rng.standard_normal(shape).astype("float32") for shape in ((5, 3), (7,))]
    grads = [[rng.standard_normal(array.shape).astype("float32") for array in start] for _ in range(6)]

    def train(params, optimizer, steps):
        for step in steps:
            for param, grad in zip(params, grads[step]):
                param.grad = gv.tensor(grad)
            optimizer.step()

    straight = [gv.nn.Parameter(gv.tensor(array)) for array in start]
    train(straight, getattr(gv.optim, name)(straight, **settings), range(6))
    first = [gv.nn.Parameter(gv.tensor(array)) for array in start]
    optimizer = getattr(gv.optim, name)(first, **settings)
    train(first, optimizer, range(3))
    resumed = [gv.nn.Parameter(p.detach().clone()) for p in first]
    resumed_optimizer = getattr(gv.optim, name)(resumed, lr=0.5)
    resumed_optimizer.load_state_dict(optimizer.state_dict())
    assert resumed_optimizer.param_groups[0]["lr"] == settings["lr"]
    train(resumed, resumed_optimizer, range(3, 6))
    for p, q in zip(resumed, straight):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_load_state_dict_errors_match_torch():
    torch = torch_or_skip()
    messages = []
    for lib in (gv, torch):
        a, b = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(3))
        saved = lib.optim.Adam([a, b], lr=0.1).state_dict()
        with pytest.raises(ValueError) as one:
            lib.optim.Adam([{"params": [a]}, {"params": [b]}]).load_state_dict(saved)
        with pytest.raises(ValueError) as two:
            lib.optim.Adam([a]).load_state_dict(saved)
        messages.append((str(one.value), str(two.value)))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("name, arguments", [
    ("Adam", {"lr": -1.0}), ("Adam", {"eps": -1.0}), ("Adam", {"betas": (1.0, 0.9)}), ("Adam", {"betas": (0.9, -0.1)}),
    ("Adam", {"weight_decay": -1.0}), ("AdamW", {"lr": -0.5}), ("RMSprop", {"alpha": -1.0}),
    ("RMSprop", {"momentum": -1.0}), ("RMSprop", {"eps": -1e-8}), ("RMSprop", {"weight_decay": -1.0}),
    ("Adagrad", {"lr": -1.0}), ("Adagrad", {"lr_decay": -1.0}), ("Adagrad", {"weight_decay": -1.0}),
    ("Adagrad", {"initial_accumulator_value": -1.0}), ("Adagrad", {"eps": -1.0}),
])
def test_bad_adam_and_rmsprop_settings_raise_like_torch(name, arguments):
    torch = torch_or_skip()
    messages = []
    for lib in (gv, torch):
        with pytest.raises(ValueError) as error:
            getattr(lib.optim, name)([lib.nn.Parameter(lib.ones(1))], **arguments)
        messages.append(str(error.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop", "Adagrad"])
def test_optimizers_skip_params_without_grad_and_zero_grad_like_torch(name):
    torch = torch_or_skip()
    results = []
    for lib in (gv, torch):
        a, b, optimizer, loss = step_with_closure(lib, name, 0.1)
        results.append((loss.item(), b.tolist(), b in optimizer.state, a.grad is not None, a.tolist()))
        optimizer.zero_grad()
        assert a.grad is None
    assert results[0][:4] == results[1][:4]
    assert results[0][4] == pytest.approx(results[1][4], abs=1e-6)  # one step of rounding apart


def test_a_tutorial_training_loop_matches_torch():
    """Seeded init, data, dropout masks and Adam steps: the whole loop as torch runs it."""
    torch_or_skip()
    from parity import assert_same

    assert_same("""
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Dropout(0.2),
                            torch.nn.Linear(16, 3))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(32, 2, 2)
y = torch.randint(0, 3, (32,))
for epoch in range(30):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
    loss.backward()
    optimizer.step()
    if epoch % 10 == 0:
        print(f"{epoch} {loss.item():.4f}")
model.eval()
correct = (model(x).max(1)[1] == y).sum()
weights = [p for p in model.parameters()]
""")
