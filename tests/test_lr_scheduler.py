"""``gradviz.optim.lr_scheduler`` against ``torch.optim.lr_scheduler``: the same schedule, epoch by epoch.

Each scheduler is stepped alongside a real optimizer for many epochs in both libraries; the rates
(``get_last_lr()`` and each group's ``lr``) must be PyTorch's floats exactly (they are computed in
Python, in PyTorch's order), the parameters PyTorch's within float32 rounding, and ``state_dict()``
the same dict.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradviz as gv

torch = pytest.importorskip("torch")

SCHEDULES = [
    ("StepLR", {"step_size": 3}),
    ("StepLR", {"step_size": 2, "gamma": 0.5}),
    ("MultiStepLR", {"milestones": [2, 5, 5, 9], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("LambdaLR", {"lr_lambda": lambda epoch: 0.95 ** epoch / (1 + epoch)}),
    ("LambdaLR", {"lr_lambda": [lambda epoch: 1.0 / (epoch + 1), lambda epoch: 0.5 ** (epoch // 3)]}),
    ("CosineAnnealingLR", {"T_max": 4}),
    ("CosineAnnealingLR", {"T_max": 5, "eta_min": 0.01}),
    ("LinearLR", {}),
    ("LinearLR", {"start_factor": 0.5, "end_factor": 0.1, "total_iters": 6}),
]


def run_schedule(lib, name: str, settings: dict, optimizer_name: str = "SGD", epochs: int = 14):
    """Two param groups trained with fresh gradients each epoch; the rates seen at every epoch."""
    rng = np.random.default_rng(0)
    first = lib.nn.Parameter(lib.tensor(rng.standard_normal((3, 2)).astype("float32")))
    second = lib.nn.Parameter(lib.tensor(rng.standard_normal(4).astype("float32")))
    optimizer = getattr(lib.optim, optimizer_name)([{"params": [first]}, {"params": [second], "lr": 0.05}], lr=0.1)
    scheduler = getattr(lib.optim.lr_scheduler, name)(optimizer, **settings)
    seen = [scheduler.get_last_lr()]
    for _ in range(epochs):
        for param in (first, second):
            param.grad = lib.tensor(rng.standard_normal(tuple(param.shape)).astype("float32"))
        optimizer.step()
        scheduler.step()
        seen.append(scheduler.get_last_lr())
        assert seen[-1] == [group["lr"] for group in optimizer.param_groups]
    return seen, (first, second), optimizer, scheduler


@pytest.mark.parametrize("optimizer_name", ["SGD", "Adam"])
@pytest.mark.parametrize("name, settings", SCHEDULES, ids=[f"{n}{sorted(s)}" for n, s in SCHEDULES])
def test_schedules_match_torch_epoch_by_epoch(name, settings, optimizer_name):
    ours, theirs = (run_schedule(lib, name, settings, optimizer_name) for lib in (gv, torch))
    assert ours[0] == theirs[0]  # the rates, exactly
    for p, q in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=2e-6, atol=2e-7)
    assert ours[3].state_dict() == theirs[3].state_dict()
    assert ours[2].param_groups[0]["initial_lr"] == theirs[2].param_groups[0]["initial_lr"] == 0.1


@pytest.mark.parametrize("name, settings", SCHEDULES[:4] + SCHEDULES[6:])
def test_a_resumed_schedule_continues_like_torch(name, settings):
    """``state_dict()`` saved half way, loaded into a fresh scheduler: the rest of the schedule is the same."""
    results = []
    for lib in (gv, torch):
        seen, params, optimizer, scheduler = run_schedule(lib, name, settings, epochs=5)
        fresh_optimizer = lib.optim.SGD([{"params": [param]} for param in params], lr=0.1)
        for fresh, old in zip(fresh_optimizer.param_groups, optimizer.param_groups):
            fresh["lr"], fresh["initial_lr"] = old["lr"], old["initial_lr"]
        resumed = getattr(lib.optim.lr_scheduler, name)(fresh_optimizer, last_epoch=4, **settings)
        resumed.load_state_dict(scheduler.state_dict())
        rates = []
        for _ in range(6):
            fresh_optimizer.step()
            resumed.step()
            rates.append(resumed.get_last_lr())
        results.append(rates)
    assert results[0] == results[1]


def test_step_with_an_epoch_uses_the_closed_form_and_warns_like_torch():
    rates = []
    for lib in (gv, torch):
        optimizer = lib.optim.SGD([lib.nn.Parameter(lib.ones(2))], lr=1.0)
        scheduler = lib.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10)
        optimizer.step()
        with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
            scheduler.step(7)
        rates.append(scheduler.get_last_lr())
    assert rates[0] == rates[1]


def test_warnings_match_torch():
    """Stepping the scheduler before the optimizer, and calling get_lr() outside step(), warn as in torch."""
    messages = []
    for lib in (gv, torch):
        optimizer = lib.optim.SGD([lib.nn.Parameter(lib.ones(2))], lr=1.0)
        scheduler = lib.optim.lr_scheduler.StepLR(optimizer, 2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scheduler.step()
            scheduler.get_lr()
        messages.append([str(w.message) for w in caught])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            optimizer.step()
            scheduler.step()  # in the right order: no warning
    assert messages[0] == messages[1] and len(messages[0]) == 2


def test_errors_match_torch():
    from parity import assert_same_error

    for code in ("torch.optim.lr_scheduler.StepLR(3, 2)",
                 "torch.optim.lr_scheduler.StepLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), 2, last_epoch=3)",
                 "torch.optim.lr_scheduler.LambdaLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), [abs, abs])"):
        assert_same_error(f"y = {code}\n")


def test_lambda_state_keeps_callable_objects_like_torch():
    class Warmup:
        def __init__(self, steps):
            self.steps = steps

        def __call__(self, epoch):
            return min(1.0, (epoch + 1) / self.steps)

    states = []
    for lib in (gv, torch):
        optimizer = lib.optim.SGD([lib.nn.Parameter(lib.ones(2))], lr=1.0)
        scheduler = lib.optim.lr_scheduler.LambdaLR(optimizer, [Warmup(4)])
        optimizer.step()
        scheduler.step()
        state = scheduler.state_dict()
        other = lib.optim.lr_scheduler.LambdaLR(optimizer, [Warmup(9)])
        other.load_state_dict(state)
        states.append((state, other.lr_lambdas[0].steps))
    assert states[0] == states[1] and states[0][1] == 4


@pytest.mark.parametrize("settings", [{}, {"patience": 1, "factor": 0.5}, {"mode": "max", "patience": 0, "cooldown": 2},
                                      {"threshold_mode": "abs", "threshold": 0.05, "patience": 1, "min_lr": [0.02, 0.0]}])
def test_reduce_on_plateau_matches_torch(settings):
    losses = [1.0, 0.9, 0.95, 0.91, 0.9, 0.89, 0.92, 0.93, 0.5, 0.6, 0.61, 0.62, 0.63, 0.2, 0.3, 0.3, 0.3]
    runs = []
    for lib in (gv, torch):
        first, second = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(1))
        optimizer = lib.optim.SGD([{"params": [first]}, {"params": [second], "lr": 0.05}], lr=0.1)
        scheduler = lib.optim.lr_scheduler.ReduceLROnPlateau(optimizer, **settings)
        rates = []
        for loss in losses:
            optimizer.step()
            scheduler.step(lib.tensor(loss))
            rates.append(scheduler.get_last_lr())
        runs.append((rates, scheduler.state_dict()))
    assert runs[0] == runs[1]


def test_reduce_on_plateau_errors_match_torch():
    from parity import assert_same_error

    optimizer = "torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1)"
    for arguments in ("factor=1.0", "mode='up'", "threshold_mode='x'", "min_lr=[0.1, 0.2]"):
        assert_same_error(f"y = torch.optim.lr_scheduler.ReduceLROnPlateau({optimizer}, {arguments})\n")
    for arguments in ("start_factor=0", "end_factor=1.5"):
        assert_same_error(f"y = torch.optim.lr_scheduler.LinearLR({optimizer}, {arguments})\n")
