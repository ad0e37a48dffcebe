"""``Tensor.register_post_accumulate_grad_hook`` against torch 2.13: errors, call order, removal,
and the optimizer-step-in-backward pattern (each parameter stepped as soon as its gradient is in)."""
from __future__ import annotations

import numpy as np
import pytest

import gradviz as gv


@pytest.fixture(params=["gradviz", "torch"])
def lib(request):
    return gv if request.param == "gradviz" else pytest.importorskip("torch")


def outcome(function):
    try:
        return function()
    except Exception as error:  # the error is what is compared
        return type(error).__name__, str(error)


def errors(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    return (outcome(lambda: (x * 2).register_post_accumulate_grad_hook(print)),
            outcome(lambda: lib.tensor([1.0]).register_post_accumulate_grad_hook(print)))


def test_errors_are_torchs(torch):
    assert errors(gv) == errors(torch)
    assert errors(gv)[0] == ("RuntimeError", "post accumulate grad hooks cannot be registered on non-leaf tensors")


def call_order(lib):
    """Tensor hooks first (they may change the gradient), then ``.grad`` is written, then the hook."""
    seen = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, -1.0], requires_grad=True)
    x.register_hook(lambda g: seen.append(("x tensor hook", g.tolist())) or g * 2)
    x.register_post_accumulate_grad_hook(lambda p: seen.append(("x post", p.grad.tolist())))
    handle = w.register_post_accumulate_grad_hook(lambda p: seen.append(("w post", p.grad.tolist())))
    w.register_post_accumulate_grad_hook(lambda p: seen.append(("w second", p is w)))
    (x * w).sum().backward()
    handle.remove()
    (x * w * w).sum().backward()  # a second graph reaches the same hooks (one removed)
    x.backward(lib.ones(2))  # a leaf's own backward
    return seen


def test_call_order_and_removal(torch):
    assert call_order(gv) == call_order(torch)


def registered_after_the_graph(lib):
    seen = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    loss.backward()
    return seen


def test_a_hook_registered_after_the_graph_was_built_runs(torch):
    assert registered_after_the_graph(gv) == registered_after_the_graph(torch) == [[2.0, 4.0]]


def test_autograd_grad_writes_no_grad_and_runs_no_hook():
    seen = []
    x = gv.tensor([1.0, 2.0], requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda p: seen.append(1))
    gv.autograd.grad((x * x).sum(), x)
    assert seen == [] and x.grad is None


def optimizer_in_backward(lib, weights, optimizer_name):
    """The pattern from PyTorch's tutorial on fusing the optimizer step into backward, written from
    its API: one optimizer per parameter, stepped (and its gradient freed) by a post-accumulate hook."""
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for parameter, values in zip(model.parameters(), weights):
            parameter.copy_(lib.tensor(values))
    make = {"SGD": lambda p: lib.optim.SGD([p], lr=0.1, momentum=0.9),
            "Adam": lambda p: lib.optim.Adam([p], lr=0.01)}[optimizer_name]
    optimizers = {parameter: make(parameter) for parameter in model.parameters()}
    stepped = []

    def step(parameter):
        stepped.append(tuple(parameter.shape))
        optimizers[parameter].step()
        optimizers[parameter].zero_grad()

    for parameter in model.parameters():
        parameter.register_post_accumulate_grad_hook(step)
    inputs = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [0.0, 1.0, 1.0]])
    targets = lib.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    losses = []
    for _ in range(4):
        loss = ((model(inputs) - targets) ** 2).mean()
        loss.backward()
        losses.append(loss.item())
    return losses, stepped, [parameter.detach().numpy() for parameter in model.parameters()], \
        [parameter.grad for parameter in model.parameters()]


@pytest.mark.parametrize("optimizer_name", ["SGD", "Adam"])
def test_optimizer_step_in_backward_matches_torch(torch, optimizer_name):
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(shape).astype(np.float32).tolist() for shape in ((4, 3), (4,), (2, 4), (2,))]
    ours = optimizer_in_backward(gv, weights, optimizer_name)
    theirs = optimizer_in_backward(torch, weights, optimizer_name)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    assert ours[1] == theirs[1]  # the same parameters stepped in the same order
    for mine, torchs in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(mine, torchs, rtol=1e-5, atol=1e-6)
    assert ours[3] == theirs[3] == [None] * 4  # every gradient freed as soon as it was used
