"""The learning-rate schedulers the API sweep added, against torch 2.13's, epoch by epoch (rates exactly, the
parameters they moved, the state_dict), resumed, with ``step(epoch)``'s closed form, and their errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from parity import assert_same_error  # noqa: E402
from test_lr_scheduler import run_schedule  # noqa: E402

SCHEDULES = [
    ("ConstantLR", {}),
    ("ConstantLR", {"factor": 0.5, "total_iters": 3}),
    ("MultiplicativeLR", {"lr_lambda": lambda epoch: 0.9}),
    ("MultiplicativeLR", {"lr_lambda": [lambda epoch: 0.95 ** epoch, lambda epoch: 1.0 / (1 + epoch)]}),
    ("PolynomialLR", {}),
    ("PolynomialLR", {"total_iters": 8, "power": 2.0}),
]


@pytest.mark.parametrize("optimizer_name", ["SGD", "Adam"])
@pytest.mark.parametrize("name, settings", SCHEDULES, ids=[f"{n}{sorted(s)}" for n, s in SCHEDULES])
def test_schedules_match_torch_epoch_by_epoch(name, settings, optimizer_name):
    ours, theirs = (run_schedule(lib, name, settings, optimizer_name) for lib in (gv, torch))
    assert ours[0] == theirs[0]
    for p, q in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=2e-6, atol=2e-7)
    assert ours[3].state_dict() == theirs[3].state_dict()


@pytest.mark.parametrize("name, settings", [SCHEDULES[1], SCHEDULES[5]])
def test_step_with_an_epoch_uses_the_closed_form(name, settings):
    seen = []
    for lib in (gv, torch):
        optimizer = lib.optim.SGD([lib.nn.Parameter(lib.ones(2))], lr=0.1)
        scheduler = getattr(lib.optim.lr_scheduler, name)(optimizer, **settings)
        rates = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (2, 5, 1, 9, 3):
                optimizer.step()
                scheduler.step(epoch)
                rates.append(scheduler.get_last_lr())
        seen.append(rates)
    assert seen[0] == seen[1]


@pytest.mark.parametrize("code", [
    "torch.optim.lr_scheduler.ConstantLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), factor=1.5)",
    "torch.optim.lr_scheduler.MultiplicativeLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), [abs, abs])",
])
def test_errors(code):
    assert_same_error(code)


# -- Adadelta and Adamax ----------------------------------------------------------------------------------------------
from test_optim import run_optimizer  # noqa: E402

OPTIMIZER_CASES = [
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "betas": (0.8, 0.95), "weight_decay": 0.2, "maximize": True}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, settings", OPTIMIZER_CASES, ids=[f"{n}{s}" for n, s in OPTIMIZER_CASES])
def test_optimizer_steps_and_state_match_torch(name, settings, dtype):
    (ours, ours_optimizer), (theirs, theirs_optimizer) = (run_optimizer(lib, name, settings, dtype) for lib in (gv, torch))
    tolerance = {"float32": dict(rtol=2e-6, atol=2e-7), "float64": dict(rtol=1e-12, atol=1e-13)}[dtype]
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), **tolerance)
    ours_state, theirs_state = ours_optimizer.state_dict(), theirs_optimizer.state_dict()
    assert ours_state["param_groups"] == theirs_state["param_groups"]
    for index, entries in theirs_state["state"].items():
        assert list(ours_state["state"][index]) == list(entries)
        for key, value in entries.items():
            np.testing.assert_allclose(ours_state["state"][index][key].numpy(), value.numpy(), **tolerance)
    assert repr(ours_optimizer) == repr(theirs_optimizer)


@pytest.mark.parametrize("code", ["torch.optim.Adadelta([torch.nn.Parameter(torch.ones(1))], rho=1.5)",
                                  "torch.optim.Adadelta([torch.nn.Parameter(torch.ones(1))], lr=-1)",
                                  "torch.optim.Adamax([torch.nn.Parameter(torch.ones(1))], betas=(1.0, 0.9))",
                                  "torch.optim.Adamax([torch.nn.Parameter(torch.ones(1))], eps=-1.0)"])
def test_optimizer_errors(code):
    assert_same_error(code)
