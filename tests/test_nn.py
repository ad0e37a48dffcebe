"""gradviz.nn against torch.nn: the same weights in both, then compare outputs, grads and text."""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest

import gradviz as gv
from gradviz import nn


def torch_or_skip():
    return pytest.importorskip("torch")


def copy_weights(gv_module, torch_module):
    """Give the torch module gradviz's parameter values (same names, same order)."""
    torch = torch_or_skip()
    gv_params = dict(gv_module.named_parameters())
    with torch.no_grad():
        for name, parameter in torch_module.named_parameters():
            parameter.copy_(torch.from_numpy(gv_params[name].detach().numpy().copy()))


def close(gv_tensor, torch_tensor, tol=1e-6):
    np.testing.assert_allclose(gv_tensor.detach().numpy(), torch_tensor.detach().numpy(), rtol=tol, atol=tol)


def mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(2, 16), lib.nn.ReLU(), lib.nn.Linear(16, 16), lib.nn.Tanh(),
                             lib.nn.Linear(16, 1))


# -- printing -------------------------------------------------------------------------------------
def test_module_reprs_match_torch():
    torch = torch_or_skip()

    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(2, 16), lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.Sigmoid(),
                                 lib.nn.Linear(16, 1, bias=False), lib.nn.MSELoss(), lib.nn.BCEWithLogitsLoss())

    assert repr(build(gv)) == repr(build(torch))
    assert repr(gv.nn.Module()) == repr(torch.nn.Module()) == "Module()"
    assert repr(gv.nn.ReLU(inplace=True)) == repr(torch.nn.ReLU(inplace=True))


def test_nested_custom_module_repr_and_names_match_torch():
    torch = torch_or_skip()

    def build(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(2, 3)
                self.body = lib.nn.Sequential(lib.nn.Linear(3, 3), lib.nn.ReLU())
                self.scale = lib.nn.Parameter(lib.ones(1))

            def forward(self, x):
                return self.body(self.fc(x)) * self.scale

        return Net()

    ours, theirs = build(gv), build(torch)
    assert repr(ours).replace("Net", "X") == repr(theirs).replace("Net", "X")
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert [type(m).__name__ for m in ours.children()] == [type(m).__name__ for m in theirs.children()]
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_parameter_repr_matches_torch():
    torch = torch_or_skip()
    for values in ([1.0, 2.0], 3.0, [[1.5, -2.0], [0.25, 4.0]]):
        assert repr(gv.nn.Parameter(gv.tensor(values))) == repr(torch.nn.Parameter(torch.tensor(values)))
    assert repr(gv.nn.Parameter(gv.ones(2), requires_grad=False)) == \
        repr(torch.nn.Parameter(torch.ones(2), requires_grad=False))


# -- Parameter and Linear --------------------------------------------------------------------------
def test_parameter_is_a_leaf_tensor_sharing_data():
    data = gv.zeros(3)
    parameter = nn.Parameter(data)
    assert isinstance(parameter, gv.Tensor) and isinstance(parameter, nn.Parameter)
    assert parameter.is_leaf and parameter.requires_grad and parameter.grad_fn is None
    with gv.no_grad():
        data.add_(1)
    assert parameter.tolist() == [1.0, 1.0, 1.0]  # shares the array, as torch's does
    (parameter * 2).sum().backward()
    assert parameter.grad.tolist() == [2.0, 2.0, 2.0]
    assert not nn.Parameter(gv.ones(1), requires_grad=False).requires_grad


def test_linear_init_follows_torch_bounds_and_seed():
    gv.manual_seed(0)
    first = nn.Linear(25, 40)
    bound = 1 / math.sqrt(25)
    for parameter in (first.weight, first.bias):
        values = parameter.detach().numpy()
        assert values.dtype == np.float32
        assert values.min() >= -bound and values.max() <= bound
        assert values.max() - values.min() > bound  # spread over the interval, not constant
    assert first.weight.shape == gv.Size([40, 25]) and first.bias.shape == gv.Size([40])
    gv.manual_seed(0)
    second = nn.Linear(25, 40)
    np.testing.assert_array_equal(first.weight.detach().numpy(), second.weight.detach().numpy())
    assert nn.Linear(3, 2, bias=False).bias is None
    assert [n for n, _ in nn.Linear(3, 2, bias=False).named_parameters()] == ["weight"]


# -- forward and backward parity -------------------------------------------------------------------
@pytest.mark.parametrize("loss_name", ["bce", "mse"])
def test_mlp_outputs_and_grads_match_torch(loss_name):
    torch = torch_or_skip()
    gv.manual_seed(1)
    ours, theirs = mlp(gv), mlp(torch)
    copy_weights(ours, theirs)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 2)).astype(np.float32)
    y = (x[:, :1] * x[:, 1:] > 0).astype(np.float32)
    losses = {"bce": (gv.nn.BCEWithLogitsLoss(), torch.nn.BCEWithLogitsLoss()),
              "mse": (gv.nn.MSELoss(), torch.nn.MSELoss())}[loss_name]
    gv_loss = losses[0](ours(gv.tensor(x)), gv.tensor(y))
    torch_loss = losses[1](theirs(torch.tensor(x)), torch.tensor(y))
    close(gv_loss, torch_loss)
    assert gv_loss.grad_fn.name() == torch_loss.grad_fn.name()
    gv_loss.backward()
    torch_loss.backward()
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        close(p.grad, q.grad, tol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_reduction_match_torch(reduction):
    torch = torch_or_skip()
    rng = np.random.default_rng(3)
    scores = rng.standard_normal((5, 3)).astype(np.float32)
    target = rng.uniform(0, 1, (5, 3)).astype(np.float32)
    for ours, theirs in ((gv.nn.MSELoss(reduction=reduction), torch.nn.MSELoss(reduction=reduction)),
                         (gv.nn.BCEWithLogitsLoss(reduction=reduction),
                          torch.nn.BCEWithLogitsLoss(reduction=reduction))):
        a = gv.tensor(scores, requires_grad=True)
        b = torch.tensor(scores, requires_grad=True)
        out_a, out_b = ours(a, gv.tensor(target)), theirs(b, torch.tensor(target))
        close(out_a, out_b)
        out_a.sum().backward()
        out_b.sum().backward()
        close(a.grad, b.grad)


def test_activation_modules_match_torch():
    torch = torch_or_skip()
    values = np.linspace(-3, 3, 13, dtype=np.float32)
    for name in ("ReLU", "Tanh", "Sigmoid"):
        a = gv.tensor(values, requires_grad=True)
        b = torch.tensor(values, requires_grad=True)
        out_a, out_b = getattr(gv.nn, name)()(a), getattr(torch.nn, name)()(b)
        close(out_a, out_b)
        assert out_a.grad_fn.name() == out_b.grad_fn.name()


def test_linear_graph_names_match_torch():
    torch = torch_or_skip()
    ours, theirs = gv.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    copy_weights(ours, theirs)
    out_a, out_b = ours(gv.ones(4, 3)), theirs(torch.ones(4, 3))
    close(out_a, out_b)

    def names(node):
        return [None if n is None else n.name() for n, _ in node.next_functions]

    assert out_a.grad_fn.name() == out_b.grad_fn.name()
    assert names(out_a.grad_fn) == names(out_b.grad_fn)


# -- module state -----------------------------------------------------------------------------------
def test_zero_grad_sets_none_by_default_or_zeros():
    model = mlp(gv)
    model(gv.ones(4, 2)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.detach().numpy().any() for p in model.parameters())
    model(gv.ones(4, 2)).sum().backward()
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_train_eval_and_indexing():
    torch = torch_or_skip()
    for lib in (gv, torch):
        model = mlp(lib)
        assert model.training and all(m.training for m in model.modules())
        assert model.eval() is model and not any(m.training for m in model.modules())
        model.train()
        assert all(m.training for m in model.modules())
        assert len(model) == 5 and type(model[0]).__name__ == "Linear" and type(model[-1]).__name__ == "Linear"
        assert len(list(model.parameters())) == 6


def test_state_dict_round_trip():
    source, target = mlp(gv), mlp(gv)
    result = target.load_state_dict(source.state_dict())
    assert repr(result) == "<All keys matched successfully>"
    for p, q in zip(source.parameters(), target.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
        assert q.is_leaf and q.requires_grad
    with pytest.raises(RuntimeError, match="Missing key"):
        target.load_state_dict(OrderedDict(list(source.state_dict().items())[:2]))


def test_module_attribute_errors_match_torch():
    torch = torch_or_skip()
    for lib in (gv, torch):
        with pytest.raises(AttributeError) as error:
            lib.nn.Linear(2, 2).missing
        assert str(error.value) == "'Linear' object has no attribute 'missing'"
