"""NAdam, RAdam, Rprop and ASGD against torch 2.13: parameters, state (every entry, in torch's order) and
``repr`` after steps with fresh gradients and a learning rate changed half way, in float32 and float64, with
their options (weight decay coupled and decoupled, maximize, momentum decay, etas and step-size limits, ASGD's
averaging from ``t0``); their constructors' errors; and a small network trained by each to torch's losses."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from parity import assert_same_error  # noqa: E402
from test_optim import run_optimizer  # noqa: E402

CASES = [
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "betas": (0.8, 0.95), "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"weight_decay": 0.2, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {}),
    ("RAdam", {"betas": (0.9, 0.6)}),  # rho_t > 5 from the first steps: the rectified branch
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {"betas": (0.5, 0.7), "weight_decay": 0.3}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.7), "step_sizes": (1e-3, 0.08), "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 2, "weight_decay": 0.1}),
    ("ASGD", {"t0": 0, "maximize": True}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, settings", CASES, ids=[f"{n}{s}" for n, s in CASES])
def test_steps_and_state_match_torch(name, settings, dtype):
    (ours, ours_optimizer), (theirs, theirs_optimizer) = (run_optimizer(lib, name, settings, dtype, steps=12)
                                                          for lib in (gv, torch))
    tolerance = {"float32": dict(rtol=4e-6, atol=4e-7), "float64": dict(rtol=1e-12, atol=1e-13)}[dtype]
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), **tolerance)
        assert p.is_leaf and p.requires_grad and p.grad_fn is None
    ours_state, theirs_state = ours_optimizer.state_dict(), theirs_optimizer.state_dict()
    assert ours_state["param_groups"] == theirs_state["param_groups"]
    for index, entries in theirs_state["state"].items():
        assert list(ours_state["state"][index]) == list(entries)
        for key, value in entries.items():
            mine = ours_state["state"][index][key]
            assert str(mine.dtype) == str(value.dtype) and tuple(mine.shape) == tuple(value.shape), key
            np.testing.assert_allclose(mine.numpy(), value.numpy(), **tolerance, err_msg=key)
    assert repr(ours_optimizer) == repr(theirs_optimizer)


@pytest.mark.parametrize("name", ["NAdam", "RAdam", "Rprop", "ASGD"])
def test_a_small_network_trains_to_torch_s_losses(name):
    losses = []
    for lib in (gv, torch):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 8), lib.nn.Tanh(), lib.nn.Linear(8, 1))
        x = lib.linspace(-1, 1, 24).reshape(8, 3)
        y = (x ** 2).sum(1, keepdim=True)
        optimizer = getattr(lib.optim, name)(model.parameters(), lr=0.01)
        run = []
        for _ in range(15):
            optimizer.zero_grad()
            loss = lib.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)


@pytest.mark.parametrize("code", [
    "torch.optim.NAdam([torch.nn.Parameter(torch.ones(1))], momentum_decay=-1.0)",
    "torch.optim.NAdam([torch.nn.Parameter(torch.ones(1))], betas=(0.9, 1.0))",
    "torch.optim.RAdam([torch.nn.Parameter(torch.ones(1))], lr=-0.1)",
    "torch.optim.RAdam([torch.nn.Parameter(torch.ones(1))], weight_decay=-0.1)",
    "torch.optim.Rprop([torch.nn.Parameter(torch.ones(1))], etas=(1.5, 1.2))",
    "torch.optim.Rprop([torch.nn.Parameter(torch.ones(1))], lr=-1.0)",
    "torch.optim.ASGD([torch.nn.Parameter(torch.ones(1))], weight_decay=-1.0)",
    "torch.optim.ASGD([torch.nn.Parameter(torch.ones(1))], lr=-1.0)",
])
def test_errors_match_torch(code):
    assert_same_error(code)


# -- the schedulers: one-cycle, cyclic, warm restarts, sequential and chained -------------------------------------------
from test_lr_scheduler import run_schedule  # noqa: E402

SCHEDULES = [
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 14}),
    ("OneCycleLR", {"max_lr": [0.5, 0.2], "epochs": 2, "steps_per_epoch": 7, "anneal_strategy": "linear",
                    "pct_start": 0.4, "div_factor": 10.0, "final_div_factor": 100.0}),
    ("OneCycleLR", {"max_lr": 0.3, "total_steps": 20, "three_phase": True, "base_momentum": [0.7, 0.8]}),
    ("OneCycleLR", {"max_lr": 0.3, "total_steps": 14, "cycle_momentum": False}),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 3}),
    ("CyclicLR", {"base_lr": [0.01, 0.02], "max_lr": 0.2, "step_size_up": 2, "step_size_down": 4,
                  "mode": "triangular2"}),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 3, "mode": "exp_range", "gamma": 0.9}),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 2, "scale_fn": lambda x: 0.5 ** x,
                  "scale_mode": "iterations", "cycle_momentum": False}),
    ("CosineAnnealingWarmRestarts", {"T_0": 4}),
    ("CosineAnnealingWarmRestarts", {"T_0": 2, "T_mult": 2, "eta_min": 0.001}),
]


@pytest.mark.parametrize("optimizer_name", ["SGD", "Adam"])
@pytest.mark.parametrize("name, settings", SCHEDULES, ids=[f"{n}{sorted(s)}" for n, s in SCHEDULES])
def test_schedules_match_torch_step_by_step(name, settings, optimizer_name):
    ours, theirs = (run_schedule(lib, name, settings, optimizer_name) for lib in (gv, torch))
    assert ours[0] == theirs[0]  # the rates, exactly
    for p, q in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=2e-6, atol=2e-7)
    assert ours[2].param_groups[0].keys() == theirs[2].param_groups[0].keys()
    for mine, their in zip(ours[2].param_groups, theirs[2].param_groups):  # momenta and betas, lrs, bounds
        assert {k: v for k, v in mine.items() if k != "params"} == {k: v for k, v in their.items() if k != "params"}
    mine, their = ours[3].state_dict(), theirs[3].state_dict()
    assert mine.keys() == their.keys() and {k: v for k, v in mine.items() if k != "_scale_fn_custom"} == \
        {k: v for k, v in their.items() if k != "_scale_fn_custom"}


def test_one_cycle_refuses_a_step_past_its_end_as_torch():
    messages = []
    for lib in (gv, torch):
        optimizer = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.1, momentum=0.9)
        scheduler = lib.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1.0, total_steps=3)
        for _ in range(3):
            optimizer.step()
            scheduler.step()
        with pytest.raises(ValueError) as raised:
            optimizer.step()
            scheduler.step()
        messages.append(str(raised.value))
    assert messages[0] == messages[1] == "Tried to step 4 times. The specified number of total steps is 3"


def test_warm_restarts_with_fractional_epochs_as_torch():
    seen = []
    for lib in (gv, torch):
        optimizer = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.1)
        scheduler = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=3, T_mult=2)
        rates = []
        for epoch in range(10):
            for batch in range(4):
                optimizer.step()
                scheduler.step(epoch + batch / 4)
                rates.append(scheduler.get_last_lr()[0])
        seen.append((rates, scheduler.T_i, scheduler.T_cur))
    assert seen[0] == seen[1]


def _composite(lib, kind):
    first = lib.nn.Parameter(lib.ones(2))
    optimizer = lib.optim.SGD([first], lr=0.1, momentum=0.9)
    inner = lib.optim.lr_scheduler
    warmup = inner.LinearLR(optimizer, start_factor=0.1, total_iters=3)
    decay = inner.ExponentialLR(optimizer, gamma=0.8)
    if kind == "sequential":
        scheduler = inner.SequentialLR(optimizer, [warmup, decay, inner.StepLR(optimizer, 2, 0.5)], milestones=[3, 7])
    else:
        scheduler = inner.ChainedScheduler([warmup, decay])
    rates = [scheduler.get_last_lr()]
    for _ in range(12):
        first.grad = lib.ones(2)
        optimizer.step()
        scheduler.step()
        rates.append(scheduler.get_last_lr())
    return rates, scheduler


@pytest.mark.parametrize("kind", ["sequential", "chained"])
def test_sequential_and_chained_schedulers_match_torch(kind):
    (ours, our_scheduler), (theirs, their_scheduler) = (_composite(lib, kind) for lib in (gv, torch))
    assert ours == theirs
    mine, their = our_scheduler.state_dict(), their_scheduler.state_dict()
    assert mine.keys() == their.keys() and mine["_schedulers"] == their["_schedulers"]


@pytest.mark.parametrize("code", [
    "torch.optim.lr_scheduler.OneCycleLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), 0.1)",
    "torch.optim.lr_scheduler.OneCycleLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), 0.1, total_steps=0)",
    "torch.optim.lr_scheduler.OneCycleLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), 0.1, epochs=2, "
    "steps_per_epoch=-1)",
    "torch.optim.lr_scheduler.OneCycleLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), 0.1, 10, pct_start=2.0)",
    "torch.optim.lr_scheduler.OneCycleLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), 0.1, 10, "
    "anneal_strategy='step')",
    "torch.optim.lr_scheduler.OneCycleLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), [0.1, 0.2], 10)",
    "torch.optim.lr_scheduler.OneCycleLR(torch.optim.Adagrad([torch.nn.Parameter(torch.ones(1))]), 0.1, 10)",
    "torch.optim.lr_scheduler.CyclicLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), 0.01, 0.1, mode='wave')",
    "torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), 0)",
    "torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), 2, "
    "T_mult=0)",
    "torch.optim.lr_scheduler.SequentialLR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))]), [], [])",
    "o = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))])\n"
    "torch.optim.lr_scheduler.SequentialLR(o, [torch.optim.lr_scheduler.StepLR(o, 2)], [3])",
    "o = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))])\n"
    "torch.optim.lr_scheduler.ChainedScheduler([torch.optim.lr_scheduler.ReduceLROnPlateau(o)])",
    "torch.optim.lr_scheduler.ChainedScheduler([])",
])
def test_scheduler_errors_match_torch(code):
    assert_same_error(code)


# -- L-BFGS ---------------------------------------------------------------------------------------------------------------
def _lbfgs(lib, dtype: str, steps: int = 4, **settings):
    """A least-squares fit with a quartic term, minimized by ``steps`` calls of ``step(closure)``."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((6, 3)).astype(dtype), rng.standard_normal(6).astype(dtype)
    w = lib.nn.Parameter(lib.tensor(np.zeros(3, dtype)))
    c = lib.nn.Parameter(lib.tensor(np.ones(2, dtype)))
    a, b = lib.tensor(a), lib.tensor(b)
    optimizer = lib.optim.LBFGS([w, c], **settings)

    def closure():
        optimizer.zero_grad()
        loss = ((a @ w - b) ** 2).sum() + ((c - 3) ** 4).sum() + 0.1 * (w ** 4).sum()
        loss.backward()
        return loss

    losses = [optimizer.step(closure).item() for _ in range(steps)]
    return losses, (w, c), optimizer


LBFGS_CASES = [{}, {"line_search_fn": "strong_wolfe"}, {"history_size": 2, "max_iter": 5},
               {"history_size": 2, "max_iter": 5, "line_search_fn": "strong_wolfe"}, {"lr": 0.5, "max_iter": 3},
               {"max_iter": 4, "max_eval": 6, "tolerance_change": 1e-5}]


@pytest.mark.parametrize("settings", LBFGS_CASES, ids=[str(s) for s in LBFGS_CASES])
def test_lbfgs_matches_torch(settings):
    (ours, our_params, our_optimizer), (theirs, their_params, their_optimizer) = (
        _lbfgs(lib, "float64", **settings) for lib in (gv, torch))
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    for p, q in zip(our_params, their_params):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-9, atol=1e-11)
    mine, their = our_optimizer.state[our_params[0]], their_optimizer.state[their_params[0]]
    assert list(mine) == list(their)  # the state's entries, in PyTorch's order
    for key in ("func_evals", "n_iter"):
        assert mine[key] == their[key], key
    assert len(mine["old_dirs"]) == len(their["old_dirs"]) and mine["prev_loss"] == pytest.approx(their["prev_loss"])
    assert repr(our_optimizer) == repr(their_optimizer)


def test_lbfgs_float32_close_to_torch():
    ours, theirs = (_lbfgs(lib, "float32", line_search_fn="strong_wolfe")[0] for lib in (gv, torch))
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_lbfgs_fits_an_image_like_the_style_transfer_tutorial():
    """The tutorial optimizes the input itself (``LBFGS([input_img])``), clamping it inside the closure."""
    results = []
    for lib in (gv, torch):
        lib.manual_seed(0)
        target = lib.rand(1, 3, 4, 4)
        image = lib.rand(1, 3, 4, 4).requires_grad_(True)
        optimizer = lib.optim.LBFGS([image])
        for _ in range(3):
            def closure():
                with lib.no_grad():
                    image.clamp_(0, 1)
                optimizer.zero_grad()
                loss = lib.nn.functional.mse_loss(image, target)
                loss.backward()
                return loss
            optimizer.step(closure)
        results.append(image.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("code", [
    "torch.optim.LBFGS([torch.nn.Parameter(torch.ones(1))], lr=-1.0)",
    "torch.optim.LBFGS([{'params': [torch.nn.Parameter(torch.ones(1))]}, {'params': [torch.nn.Parameter(torch.ones(1))]}])",
    "p = torch.nn.Parameter(torch.ones(2))\no = torch.optim.LBFGS([p], line_search_fn='backtracking')\n"
    "def closure():\n    o.zero_grad()\n    loss = (p * p).sum()\n    loss.backward()\n    return loss\no.step(closure)",
])
def test_lbfgs_errors_match_torch(code):
    assert_same_error(code)
