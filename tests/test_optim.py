"""gradviz.optim.SGD against torch.optim.SGD: same weights, several steps, same parameters."""
from __future__ import annotations

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


def test_step_skips_parameters_without_grad_and_runs_closure():
    a, b = gv.nn.Parameter(gv.ones(2)), gv.nn.Parameter(gv.ones(2))
    optimizer = gv.optim.SGD([a, b], lr=1.0)

    def closure():
        optimizer.zero_grad()
        loss = (a * 3).sum()
        loss.backward()
        return loss

    loss = optimizer.step(closure)
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
