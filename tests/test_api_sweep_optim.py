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
