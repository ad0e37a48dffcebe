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


def test_linear_init_draws_torchs_numbers():
    torch = torch_or_skip()
    for lib in (gv, torch):
        lib.manual_seed(0)
    for in_features, out_features, options in ((25, 40, {}), (3, 2, {"bias": False}), (1, 1, {}),
                                               (7, 5, {"dtype": "float64"})):
        layers = []
        for lib in (gv, torch):
            if "dtype" in options:
                options = dict(options, dtype=getattr(lib, "float64"))
            layers.append(lib.nn.Linear(in_features, out_features, **options))
        ours, theirs = layers
        assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
        for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert p.dtype == getattr(gv, str(q.dtype).split(".")[1]), name
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)
    assert nn.Linear(3, 2, bias=False).bias is None


@pytest.mark.parametrize("call", [
    "uniform_(w, -0.5, 2.0)", "normal_(w, 0.3, 2.0)", "constant_(w, 0.25)", "zeros_(w)", "ones_(w)",
    "xavier_uniform_(w)", "xavier_uniform_(w, gain=torch.nn.init.calculate_gain('tanh'))", "xavier_normal_(w)",
    "kaiming_uniform_(w)", "kaiming_uniform_(w, a=0.2, mode='fan_out')", "kaiming_normal_(w, nonlinearity='relu')",
    "kaiming_normal_(w, mode='fan_out', nonlinearity='leaky_relu')",
])
def test_init_functions_match_torch(call):
    torch_or_skip()
    from parity import assert_same

    assert_same(f"torch.manual_seed(3)\nw = torch.empty(6, 4, 3)\nr = torch.nn.init.{call}\n"
                "print(r is w, w.requires_grad)\n")


@pytest.mark.parametrize("code", [
    "torch.nn.init.calculate_gain('softplus')",
    "torch.nn.init.calculate_gain('leaky_relu', True)",
    "torch.nn.init.xavier_uniform_(torch.empty(3))",
    "torch.nn.init.kaiming_uniform_(torch.empty(3, 2), mode='fan')",
])
def test_init_errors_match_torch(code):
    torch_or_skip()
    from parity import assert_same_error

    assert_same_error(code)


def test_calculate_gain_matches_torch():
    torch = torch_or_skip()
    for name in ("linear", "conv2d", "sigmoid", "tanh", "relu", "selu", "leaky_relu"):
        assert gv.nn.init.calculate_gain(name) == torch.nn.init.calculate_gain(name)
    assert gv.nn.init.calculate_gain("leaky_relu", math.sqrt(5)) == torch.nn.init.calculate_gain("leaky_relu",
                                                                                                 math.sqrt(5))


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


def test_parameters_and_modules_of_a_nested_model_match_torch():
    torch_or_skip()
    from parity import assert_same

    assert_same("""
torch.manual_seed(0)
shared = torch.nn.Linear(3, 3)
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Sequential(torch.nn.Flatten(), shared, torch.nn.ReLU(), torch.nn.Dropout(0.2))
        self.again = shared
        self.head = torch.nn.Linear(3, 2, bias=False)
        self.scale = torch.nn.Parameter(torch.ones(1))
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)
    def forward(self, x):
        return self.head(self.again(self.encoder(x))) * self.scale
net = Net()
print(net)
print([name for name, _ in net.named_parameters()])
print([name for name, _ in net.named_parameters(remove_duplicate=False)])
print([name for name, _ in net.named_modules()])
print([type(m).__name__ for m in net.modules()])
print([name for name, _ in net.named_children()], [type(m).__name__ for m in net.children()])
print([name for name, _ in net.named_buffers()], list(net.state_dict()))
print(list(net.state_dict(prefix="model.")), type(net.state_dict(keep_vars=True)["scale"]).__name__)
print(all(not v.requires_grad for v in net.state_dict().values()), len(list(net.parameters())))
out = net(torch.randn(2, 3))
""")


def test_train_eval_flags_and_dropout_follow_them_like_torch():
    torch_or_skip()
    from parity import assert_same

    assert_same("""
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.ReLU(), torch.nn.Linear(8, 1))
x = torch.ones(3, 4)
print(model.training, [m.training for m in model.modules()])
train_out = model(x)
print(model.eval() is model, model.training, [m.training for m in model.modules()])
eval_out = model(x)
eval_again = model(x)
model.train()
print(model.training, model[1].training)
model[1].eval()
print(model.training, model[1].training)
""")


@pytest.mark.parametrize("code", [
    "y = F.dropout(x, 0.3)\ny.sum().backward()\n",
    "y = F.dropout(x, 0.9)\ny.sum().backward()\n",
    "y = F.dropout(x * 1, 0.5, inplace=True)\ny.sum().backward()\n",
    "y = F.dropout(x, 1.0)\ny.sum().backward()\n",
    "y = torch.nn.Dropout(0.25)(x)\nprint(torch.nn.Dropout(0.25))\ny.sum().backward()\n",
    "y = torch.nn.Dropout(0.5, inplace=True)(x * 2)\ny.sum().backward()\n",
    "y = F.dropout(x, 0.5, training=False)\nprint(y is x)\nz = F.dropout(x, 0.0)\nprint(z is x)\n",
    "d = torch.nn.Dropout(0.4).eval()\ny = d(x)\nprint(y is x)\nafter = torch.rand(3)\n",
    "a = F.dropout(x, 0.5)\nb = torch.rand(4)\nc = F.dropout(x.double(), 0.2)\n",
])
def test_dropout_masks_graph_and_stream_match_torch(code):
    torch_or_skip()
    from parity import assert_same

    assert_same("torch.manual_seed(7)\nx = torch.randn(5, 6, requires_grad=True)\n" + code)


@pytest.mark.parametrize("code", [
    "torch.nn.Dropout(1.5)",
    "torch.nn.functional.dropout(torch.ones(3), -0.1)",
    "torch.nn.Parameter(torch.tensor([1, 2]))",
    "torch.nn.Linear(2, 3).load_state_dict([1, 2])",
])
def test_nn_errors_match_torch(code):
    torch_or_skip()
    from parity import assert_same_error

    assert_same_error(code)


def test_int_parameter_without_grad_is_allowed_like_torch():
    torch_or_skip()
    from parity import assert_same

    assert_same("p = torch.nn.Parameter(torch.tensor([1, 2]), requires_grad=False)\nprint(p)\n")


@pytest.mark.parametrize("code", [
    "y = torch.nn.Flatten()(torch.randn(2, 3, 4, requires_grad=True))\n",
    "y = torch.nn.Flatten(0, 1)(torch.randn(2, 3, 4, requires_grad=True))\n",
    "x = torch.randn(2, 3, 4, requires_grad=True)\ny = torch.nn.Flatten()(x.transpose(1, 2))\n",
    "y = torch.nn.Softmax(dim=1)(torch.randn(2, 3, requires_grad=True))\n",
    "y = torch.nn.LogSoftmax(dim=-1)(torch.randn(2, 3, requires_grad=True))\n",
    "y = torch.nn.Softmax()(torch.randn(2, 3, requires_grad=True))\n",
    "y = torch.nn.LogSoftmax()(torch.randn(4, 2, 3, requires_grad=True))\n",
    "y = F.softmax(torch.randn(5, requires_grad=True))\n",
    "y = torch.nn.Identity(54, unused=1)(torch.randn(2, requires_grad=True))\n",
])
def test_shape_and_softmax_modules_match_torch(code):
    torch_or_skip()
    from parity import assert_same

    assert_same("torch.manual_seed(0)\n" + code + "y.sum().backward() if y.requires_grad else None\n")


def test_modules_print_like_torch():
    torch = torch_or_skip()

    def build(lib):
        return lib.nn.Sequential(lib.nn.Flatten(), lib.nn.Flatten(0, 2), lib.nn.Dropout(), lib.nn.Dropout(0.1, True),
                                 lib.nn.Softmax(), lib.nn.Softmax(dim=1), lib.nn.LogSoftmax(dim=0), lib.nn.Identity(),
                                 lib.nn.CrossEntropyLoss(), lib.nn.CrossEntropyLoss(label_smoothing=0.1),
                                 lib.nn.NLLLoss())

    assert repr(build(gv)) == repr(build(torch))


def test_implicit_softmax_dim_warns_like_torch():
    torch = torch_or_skip()
    for name in ("softmax", "log_softmax"):
        messages = []
        for lib in (gv, torch):
            with pytest.warns(UserWarning) as record:
                getattr(lib.nn.functional, name)(lib.ones(2, 3))
            messages.append([str(w.message) for w in record])
        assert messages[0] == messages[1]


T = "t = torch.tensor([0, 2, 1, 2, 1])\n"
P = "p = torch.softmax(torch.randn(5, 3), 1)\n"
W = "w = torch.tensor([0.2, 1.0, 3.0])\n"


@pytest.mark.parametrize("call", [
    "F.cross_entropy(x, t)", "F.cross_entropy(x, t, reduction='sum')", "F.cross_entropy(x, t, reduction='none')",
    "F.cross_entropy(x, t, weight=w)", "F.cross_entropy(x, t, ignore_index=2)", "F.cross_entropy(x, t, ignore_index=1, reduction='none')",
    "F.cross_entropy(x, t, label_smoothing=0.1)", "F.cross_entropy(x, t, label_smoothing=0.1, reduction='sum')",
    "F.cross_entropy(x, t, label_smoothing=0.3, reduction='none')", "F.cross_entropy(x, t, weight=w, label_smoothing=0.2)",
    "F.cross_entropy(x, t, weight=w, label_smoothing=0.2, reduction='none')",
    "F.cross_entropy(x, t, ignore_index=1, label_smoothing=0.25)",
    "F.cross_entropy(x, t, weight=w, ignore_index=0, label_smoothing=0.25)",
    "F.cross_entropy(x, t, label_smoothing=-0.1)", "F.cross_entropy(x, t, label_smoothing=1.0)",
    "F.cross_entropy(x, p)", "F.cross_entropy(x, p, reduction='sum')", "F.cross_entropy(x, p, reduction='none')",
    "F.cross_entropy(x, p, weight=w)", "F.cross_entropy(x, p, label_smoothing=0.2)",
    "F.cross_entropy(x, p, weight=w, label_smoothing=0.2, reduction='none')",
    "F.cross_entropy(x, p.double())",
    "F.cross_entropy(x[0], t[0])", "F.cross_entropy(x[0], t[0], label_smoothing=0.2)", "F.cross_entropy(x[0], p[0])",
    "torch.nn.CrossEntropyLoss()(x, t)", "torch.nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)(x, t)",
    "torch.nn.CrossEntropyLoss(reduction='sum', label_smoothing=0.05)(x, p)", "torch.nn.NLLLoss(weight=w)(x.log_softmax(1), t)",
])
def test_cross_entropy_graphs_and_grads_match_torch(call):
    torch_or_skip()
    from parity import assert_same

    assert_same("torch.manual_seed(0)\nx = torch.randn(5, 3, requires_grad=True)\n" + T + P + W +
                f"loss = {call}\nloss.sum().backward()\n")


def test_cross_entropy_with_a_target_that_requires_grad_matches_torch():
    torch_or_skip()
    from parity import assert_same

    assert_same("torch.manual_seed(0)\nx = torch.randn(4, 3, requires_grad=True)\n"
                "q = torch.rand(4, 3, requires_grad=True)\nloss = F.cross_entropy(x, q, label_smoothing=0.1)\n"
                "loss.backward()\n")


@pytest.mark.parametrize("call", [
    "F.cross_entropy(x, t, label_smoothing=1.5)", "F.cross_entropy(x, torch.rand(5, 2))",
    "F.cross_entropy(x, p, ignore_index=1)", "F.cross_entropy(x, t[:3])", "F.cross_entropy(x, t, reduction='avg')",
])
def test_cross_entropy_errors_match_torch(call):
    torch_or_skip()
    from parity import assert_same_error

    assert_same_error("x = torch.randn(5, 3, requires_grad=True)\n" + T + P + call)


def test_load_state_dict_errors_and_results_match_torch():
    torch = torch_or_skip()

    def model(lib):
        lib.manual_seed(0)
        return lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU(), lib.nn.Linear(3, 1))

    def outcome(lib, edit, strict):
        target = model(lib)
        state = OrderedDict(model(lib).state_dict())
        edit(lib, state)
        try:
            result = target.load_state_dict(state, strict=strict)
        except Exception as error:  # noqa: BLE001 - compared with torch's
            return type(error).__name__, str(error)
        return repr(result), [p.detach().numpy().tolist() for p in target.parameters()]

    def wrong_shape(lib, state):
        state["0.weight"] = lib.zeros(4, 2)

    def missing_and_unexpected(lib, state):
        del state["2.bias"]
        state["extra"] = lib.zeros(1)
        state["0.extra"] = lib.zeros(1)
        state["0.weight"] = lib.zeros(4, 2)

    def not_a_tensor(lib, state):
        state["2.bias"] = 5

    def renamed(lib, state):
        state["2.b"] = state.pop("2.bias")

    def double(lib, state):
        state["0.weight"] = state["0.weight"].double() + 1

    for edit in (wrong_shape, missing_and_unexpected, not_a_tensor, renamed, double):
        for strict in (True, False):
            assert outcome(gv, edit, strict) == outcome(torch, edit, strict), (edit.__name__, strict)


def test_load_state_dict_copies_in_place_or_assigns():
    source, target = mlp(gv), mlp(gv)
    weight = target[0].weight
    target.load_state_dict(source.state_dict())
    assert target[0].weight is weight and weight.requires_grad and weight.dtype == gv.float32
    np.testing.assert_array_equal(weight.detach().numpy(), source[0].weight.detach().numpy())
    target.load_state_dict(source.state_dict(), assign=True)
    assert target[0].weight is not weight and isinstance(target[0].weight, nn.Parameter)
    assert target[0].weight.requires_grad


def test_requires_grad_and_zero_grad_on_modules_match_torch():
    torch_or_skip()
    from parity import assert_same

    assert_same("""
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
print(model.requires_grad_(False) is model, [p.requires_grad for p in model.parameters()])
model[2].requires_grad_()
print([p.requires_grad for p in model.parameters()])
x = torch.ones(4, 2)
model(x).sum().backward()
print([p.grad is None for p in model.parameters()])
model.zero_grad(set_to_none=False)
kept = [p.grad for p in model.parameters() if p.grad is not None]
model(x).sum().backward()
model.zero_grad()
print([p.grad is None for p in model.parameters()])
""")
