"""Every registered op's backward against central differences of its own forward, in float64.

The parity suite checks gradients against torch; this one needs no torch and checks each
backward against the op's forward directly: ``d/dx sum(w * f(x))`` by ``(f(x + h) - f(x - h)) / 2h``.
A registered op without a case here fails the suite, so no op ships without a gradient check.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradviz as gv
import gradviz.nn.functional as F
from gradviz.ops import activation, double_backward, elementwise, loss, registry
from gradviz.ops.arithmetic import SubBackward1
from gradviz.ops.loss import LogitBackward0

RNG = np.random.default_rng(0)


def values(*shape, low=-1.5, high=1.5):
    return RNG.uniform(low, high, size=shape)


def positive(*shape):
    return values(*shape, low=0.3, high=2.0)


def probabilities(*shape):
    return values(*shape, low=0.1, high=0.9)


TARGET_PROBABILITIES = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])


def seeded():
    """The same random numbers at every evaluation: a random fill is a constant to the chain rule."""
    return gv.Generator().manual_seed(0)


# op name -> (function of tensors, list of float64 input arrays)
CASES = {
    "AbsBackward0": (lambda x: x.abs(), [positive(3) * np.array([1, -1, 1])]),
    "AliasBackward0": (lambda x: x[...] * x, [values(2, 3)]),
    "AsStridedBackward0": (lambda x: _view_of_changed_base(x), [values(3, 2)]),
    "CatBackward0": (lambda a, b: gv.cat([a, b * b], 1), [values(2, 3), values(2, 2)]),
    "CopySlices": (lambda x, y: _write_through_view(x, y), [values(3, 2), values(2)]),
    "AddBackward0": (lambda a, b: gv.add(a, b, alpha=2), [values(2, 3), values(3)]),
    "AddBackward1": (lambda x, q: F.cross_entropy(x, q, label_smoothing=0.2), [values(2, 3), probabilities(2, 3)]),
    "AddmmBackward0": (lambda b, x, w: gv.addmm(b, x, w), [values(4), values(2, 3), values(3, 4)]),
    "BinaryCrossEntropyBackward0": (lambda p, t: F.binary_cross_entropy(p, t), [probabilities(4), probabilities(4)]),
    "BinaryCrossEntropyWithLogitsBackward0": (
        lambda z, t: F.binary_cross_entropy_with_logits(z, t, pos_weight=gv.tensor([2.0, 0.5, 1.0, 3.0],
                                                                                  dtype=gv.float64)),
        [values(4), probabilities(4)]),
    "BernoulliBackward0": (lambda p: gv.bernoulli(p, generator=seeded()) + p, [probabilities(4)]),
    "BernoulliBackward1": (lambda x, p: (x * 1).bernoulli_(p, generator=seeded()) + x * p,
                           [values(4), probabilities(4)]),
    "BernoulliBackward2": (lambda x: (x * 1).bernoulli_(0.3, generator=seeded()) + x, [values(4)]),
    "BmmBackward0": (lambda a, b: gv.bmm(a, b), [values(2, 2, 3), values(2, 3, 2)]),
    "ClampBackward1": (lambda x: x.clamp(-0.5, 0.7), [np.array([-1.0, -0.2, 0.3, 1.1])]),
    "CloneBackward0": (lambda x: x.clone(), [values(3)]),
    # the ops only a recorded backward pass makes (create_graph=True), applied directly
    "TanhBackwardBackward0": (lambda g, x: double_backward.TanhBackwardBackward0.apply(g, x.tanh()),
                              [values(3), values(3)]),
    "SigmoidBackwardBackward0": (lambda g, x: double_backward.SigmoidBackwardBackward0.apply(g, x.sigmoid()),
                                 [values(3), values(3)]),
    "ThresholdBackwardBackward0": (lambda g, x: double_backward.ThresholdBackwardBackward0.apply(g, x.relu(), 0),
                                   [values(3), np.array([-1.0, 0.5, 2.0])]),
    "MseLossBackwardBackward0": (lambda g, x, t: double_backward.MseLossBackwardBackward0.apply(g, x, t, 1),
                                 [np.array(0.7), values(2, 3), values(2, 3)]),
    "SelectBackwardBackward0": (lambda g: double_backward.SelectBackwardBackward0.apply(g, (2, 3), 1, -1, 2**64 - 1),
                                [values(2)]),
    "SliceBackwardBackward0": (lambda g: double_backward.SliceBackwardBackward0.apply(
        g, (4, 2), (slice(1, 3, 1),), {"dim": 0, "end": 3, "start": 1, "step": 1}), [values(2, 2)]),
    "DiagonalBackwardBackward0": (lambda g: double_backward.DiagonalBackwardBackward0.apply(
        g, (2, 3, 3), (2, 1), {"dim1": 2**64 - 1, "dim2": 2**64 - 2, "offset": 2**64 - 1}), [values(2, 2)]),
    "IndexFillBackward1": (lambda x, v: double_backward.IndexFillBackward1.apply(x, v.sum(), 1, gv.tensor([2, 0, 2])),
                           [values(2, 4), values(3)]),
    "LogSoftmaxBackwardDataBackward0": (
        lambda g, x: double_backward.LogSoftmaxBackwardDataBackward0.apply(g, F.log_softmax(x, 1), 1, 1),
        [values(2, 3), values(2, 3)]),
    "SoftmaxBackwardDataBackward0": (
        lambda g, x: double_backward.SoftmaxBackwardDataBackward0.apply(g, F.softmax(x, -1), 1, 2**64 - 1),
        [values(2, 3), values(2, 3)]),
    "NllLossBackwardBackward0": (
        lambda g, x: double_backward.NllLossBackwardBackward0.apply(
            g, x, gv.tensor([0, 2]), None, 1, -100, gv.tensor(2.0, dtype=gv.float64)), [np.array(0.8), values(2, 3)]),
    "BinaryCrossEntropyBackwardBackward0": (
        lambda g, x, t: double_backward.BinaryCrossEntropyBackwardBackward0.apply(g, x, t, None, 1),
        [np.array(0.7), probabilities(2, 3), probabilities(2, 3)]),
    "SgnBackward0": (lambda x: double_backward.SgnBackward0.apply(x) * x, [np.array([-1.2, 0.4, 2.0])]),
    "ScatterBackward0": (lambda g: double_backward.ScatterBackward0.apply(
        gv.zeros(2, 3, dtype=gv.float64), g, 1, gv.tensor([[2], [0]])), [values(2, 1)]),
    "ScatterAddBackward0": (lambda g: double_backward.ScatterAddBackward0.apply(
        gv.zeros(3, dtype=gv.float64), g, 0, gv.tensor([2, 0, 2])), [values(3)]),
    "IndexAddBackward0": (lambda g: double_backward.IndexAddBackward0.apply(
        gv.zeros(3, 2, dtype=gv.float64), g, 0, gv.tensor([2, 0, 2])), [values(3, 2)]),
    "IndexPutImplBackward0": (lambda g: double_backward.IndexPutImplBackward0.apply(
        gv.zeros(3, 2, dtype=gv.float64), g, [gv.tensor([2, 0, 2])], accumulate=True), [values(3, 2)]),
    "MaskedSelectBackward0": (lambda g: double_backward.MaskedSelectBackward0.apply(g, gv.tensor([True, False, True])),
                              [values(2, 3)]),
    "MaskedScatterBackward0": (lambda x, s: double_backward.MaskedScatterBackward0.apply(
        x, s, gv.tensor([[True, False, True], [False, True, False]])), [values(2, 3), values(2, 2)]),
    "SubBackward1": (lambda x: SubBackward1.apply(x, 1.5), [values(3)]),
    "SplitBackward0": (lambda x: gv.cat([piece * (i + 1) for i, piece in enumerate(x.split(2))]), [values(5)]),
    "SplitWithSizesBackward0": (lambda x: x.split([1, 3], dim=1)[1] * 2, [values(2, 4)]),
    "UnbindBackward0": (lambda x: x.unbind(1)[0] * x.unbind(1)[2], [values(2, 3)]),
    "CopyBackwards": (lambda a, b: (a * 1).copy_(b), [values(2, 3), values(3)]),
    "CosBackward0": (lambda x: x.cos(), [values(3)]),
    "DivBackward0": (lambda a, b: a / b, [values(2, 3), positive(3)]),
    "DivBackward1": (lambda x: F.cross_entropy(x, gv.tensor(TARGET_PROBABILITIES, dtype=gv.float64)), [values(2, 3)]),
    "DotBackward0": (lambda a, b: gv.dot(a, b), [values(3), values(3)]),
    "ExpBackward0": (lambda x: x.exp(), [values(3)]),
    "ExpandBackward0": (lambda x: x.expand(2, 3), [values(3)]),
    "GatherBackward0": (lambda x: x.gather(1, gv.tensor([[0, 0, 2], [1, 2, 1]])), [values(2, 3)]),
    "IndexPutBackward0": (lambda x, v: _index_put(x, v), [values(3, 2), values(2, 2)]),
    "IndexSelectBackward0": (lambda x: x.index_select(0, gv.tensor([2, 0, 2])), [values(3, 2)]),
    "LinalgVectorNormBackward0": (lambda x: x.norm(dim=1) + x.norm(p=3) + x.norm(p=1), [positive(2, 3)]),
    "MaskedFillBackward0": (lambda x: x.masked_fill(gv.tensor([True, False, True]), 0.5) * x, [values(2, 3)]),
    "MaskedFillBackward1": (lambda x, v: x.masked_fill(gv.tensor([True, False, True]), v.sum()) * x,
                            [values(2, 3), values(2)]),
    "FillBackward2": (lambda x: (x * 1).fill_(2.0) + x, [values(3)]),
    "FillBackward3": (lambda x, v: (x * 1).fill_(v[1]) * x, [values(3), values(2)]),
    "IndexBackward0": (lambda x: x[gv.tensor([0, 2, 0])], [values(3, 2)]),
    "LogBackward0": (lambda x: x.log(), [positive(3)]),
    "LogitBackward0": (lambda p: LogitBackward0.apply(p), [probabilities(4)]),  # only BCE's recorded backward makes it
    "LogSoftmaxBackward0": (lambda x: gv.log_softmax(x, 1), [values(2, 3)]),
    "MaskedFillBackward0": (lambda x: F.cross_entropy(x, gv.tensor([2, 0, 1]), ignore_index=0, label_smoothing=0.2),
                            [values(3, 3)]),
    "MaxBackward0": (lambda x: x.max(1)[0], [np.array([[0.1, 0.9, -0.4], [1.3, 0.2, 0.8]])]),
    "MaxBackward1": (lambda x: x.max(), [np.array([0.1, 0.9, -0.4])]),
    "MaximumBackward0": (lambda a, b: gv.maximum(a, b), [np.array([0.1, 0.9, -0.4]), np.array([0.5, 0.2, 0.0])]),
    "MeanBackward0": (lambda x: x.mean(), [values(2, 3)]),
    "MeanBackward1": (lambda x: x.mean(0), [values(2, 3)]),
    "MinimumBackward0": (lambda a, b: gv.minimum(a, b), [np.array([0.1, 0.9, -0.4]), np.array([0.5, 0.2, 0.0])]),
    "MmBackward0": (lambda a, b: a @ b, [values(2, 3), values(3, 4)]),
    "MseLossBackward0": (lambda a, b: F.mse_loss(a, b), [values(4), values(4)]),
    "MulBackward0": (lambda a, b: a * b, [values(2, 3), values(2, 1)]),
    "MulBackward1": (lambda x: F.cross_entropy(x, gv.tensor([2, 0]), label_smoothing=0.2), [values(2, 3)]),
    "MvBackward0": (lambda a, v: a @ v, [values(2, 3), values(3)]),
    "NegBackward0": (lambda x: -x, [values(3)]),
    "NllLossBackward0": (lambda x: F.nll_loss(x, gv.tensor([2, 0])), [values(2, 3)]),
    "NormalBackward0": (lambda x: (x * 1).normal_(generator=seeded()) * x, [values(3)]),
    "PermuteBackward0": (lambda x: x.permute(2, 0, 1), [values(2, 3, 4)]),
    "PowBackward0": (lambda x: x ** 3, [values(3)]),
    "PowBackward1": (lambda a, b: a ** b, [positive(3), values(3)]),
    "PowBackward2": (lambda x: 2.5 ** x, [values(3)]),
    "ReciprocalBackward0": (lambda x: x.reciprocal(), [positive(3)]),
    "ReluBackward0": (lambda x: x.relu(), [np.array([-1.0, 0.5, 2.0])]),
    "RepeatBackward0": (lambda x: x.repeat(2, 1, 3) * gv.arange(12.0, dtype=gv.float64).reshape(2, 2, 3)
                        .repeat(1, 1, 2), [values(2, 2)]),
    "RsubBackward1": (lambda x: 2 - x, [values(3)]),
    "SelectBackward0": (lambda x: x[1], [values(3, 2)]),
    "SigmoidBackward0": (lambda x: x.sigmoid(), [values(3)]),
    "SinBackward0": (lambda x: x.sin(), [values(3)]),
    "SliceBackward0": (lambda x: x[1:], [values(3, 2)]),
    "SoftmaxBackward0": (lambda x: gv.softmax(x, -1), [values(2, 3)]),
    "SqrtBackward0": (lambda x: x.sqrt(), [positive(3)]),
    "SqueezeBackward0": (lambda x: x.squeeze(), [values(1, 3)]),
    "SqueezeBackward1": (lambda x: x.squeeze(0), [values(1, 3)]),
    "SqueezeBackward2": (lambda x: x.squeeze((0,)), [values(1, 3)]),
    "SqueezeBackward4": (lambda v, w: v @ w, [values(3), values(3, 2)]),
    "StackBackward0": (lambda a, b: gv.stack([a, b * b], -1), [values(2, 3), values(2, 3)]),
    "SubBackward0": (lambda a, b: gv.sub(a, b, alpha=3), [values(2, 3), values(3)]),
    "SumBackward0": (lambda x: x.sum(), [values(2, 3)]),
    "SumBackward1": (lambda x: x.sum(1, keepdim=True), [values(2, 3)]),
    "TBackward0": (lambda x: x.t(), [values(2, 3)]),
    "TanhBackward0": (lambda x: x.tanh(), [values(3)]),
    "ToCopyBackward0": (lambda x: x.to(gv.float32).to(gv.float64), [values(3)]),
    "TransposeBackward0": (lambda x: x.transpose(0, 2), [values(2, 3, 4)]),
    "UniformBackward0": (lambda x: (x * 1).uniform_(-1, 2, generator=seeded()) * x, [values(3)]),
    "UnsafeViewBackward0": (lambda a, w: a @ w, [values(2, 2, 3), values(3, 2)]),
    "UnsqueezeBackward0": (lambda x: x.unsqueeze(-1), [values(3)]),
    "ViewBackward0": (lambda x: x.view(6), [values(2, 3)]),
    "ReshapeAliasBackward0": (lambda x: x.t().reshape(3, 2, 1), [values(2, 3)]),
    "WhereBackward0": (lambda a, b: gv.where(gv.tensor([True, False, True]), a, b), [values(3), values(3)]),
    "ZeroBackward0": (lambda x: (x * 1).zero_() + x * x, [values(3)]),
}
# nn activations, losses and layers
CASES.update({
    "EluBackward0": (lambda x: F.elu(x, 0.7), [values(2, 3)]),
    "GeluBackward0": (lambda x: F.gelu(x) + F.gelu(x, approximate="tanh"), [values(2, 3)]),
    "HardtanhBackward0": (lambda x: F.hardtanh(x, -0.5, 0.8), [np.array([-1.0, -0.2, 0.3, 1.1])]),
    "HuberLossBackward0": (lambda x, t: F.huber_loss(x, t, delta=0.5), [values(2, 3), values(2, 3)]),
    "LeakyReluBackward0": (lambda x: F.leaky_relu(x, 0.2), [np.array([-1.0, -0.2, 0.3, 1.1])]),
    "SiluBackward0": (lambda x: F.silu(x), [values(2, 3)]),
    "SmoothL1LossBackward0": (lambda x, t: F.smooth_l1_loss(x, t, beta=0.7, reduction="sum"), [values(2, 3), values(2, 3)]),
    "SoftplusBackward0": (lambda x: F.softplus(x) + F.softplus(x * 3, beta=2, threshold=4), [values(2, 3)]),
    "EmbeddingBackward0": (lambda w: F.embedding(gv.tensor([[0, 2], [2, 3]]), w), [values(4, 3)]),
    "NativeLayerNormBackward0": (lambda x, w, b: F.layer_norm(x, (3,), w, b), [values(2, 3), values(3), values(3)]),
    "ConstantPadNdBackward0": (lambda x: F.pad(x, (1, -1, 2, 0), value=0.5), [values(2, 3)]),
    "NativeBatchNormBackward0": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                                 [values(4, 3, 2), values(3), values(3)]),
    "CeluBackward0": (lambda x: F.celu(x, 0.6), [values(2, 3)]),
    "CeluBackward1": (lambda x: F.celu(x * 1, 0.6, inplace=True), [values(2, 3)]),
    "LogSigmoidBackward0": (lambda x: F.logsigmoid(x * 3), [values(2, 3)]),
    "MishBackward0": (lambda x: F.mish(x * 2), [values(2, 3)]),
    "HardswishBackward0": (lambda x: F.hardswish(x * 3), [np.array([-4.0, -1.1, 0.4, 2.5, 3.6])]),
    "HardsigmoidBackward0": (lambda x: F.hardsigmoid(x * 3), [np.array([-4.0, -1.1, 0.4, 2.5, 3.6])]),
    "PreluKernelBackward0": (lambda x, a: F.prelu(x, a), [values(4, 3), positive(3)]),
    "LeakyReluBackward1": (lambda x: F.leaky_relu(x * 1, 0.2, inplace=True), [np.array([-1.0, -0.2, 0.3, 1.1])]),
    "EluBackward1": (lambda x: F.elu(x * 1, 0.7, inplace=True), [values(2, 3)]),
    "GeluBackwardBackward0": (lambda g, x: activation.GeluBackwardBackward0.apply(g, x, "none")
                              + activation.GeluBackwardBackward0.apply(g, x, "tanh"), [values(2, 3), values(2, 3)]),
    "EluBackwardBackward0": (lambda g, x: activation.EluBackwardBackward0.apply(g, x, 0.7)
                             + activation.EluBackwardBackward0.apply(g, F.celu(x, 0.5), 0.5, 1, 2.0, True),
                             [values(2, 3), values(2, 3)]),
    "SoftplusBackwardBackward0": (lambda g, x: activation.SoftplusBackwardBackward0.apply(g, x, 2, 1.5),
                                  [values(2, 3), values(2, 3)]),
    "LogSigmoidBackwardBackward0": (lambda g, x: activation.LogSigmoidBackwardBackward0.apply(
        g, x, (-x.abs()).exp().detach()), [values(2, 3), values(2, 3)]),
    "HardswishBackwardBackward0": (lambda g, x: activation.HardswishBackwardBackward0.apply(g, x * 3),
                                   [values(4), np.array([-1.5, -0.2, 0.3, 1.1])]),
    "HuberLossBackwardBackward0": (lambda g, x, t: loss.HuberLossBackwardBackward0.apply(g.sum(), x, t, 1, 0.8)
                                   + loss.HuberLossBackwardBackward0.apply(g, t, x, 0, 0.8),
                                   [values(2, 3), values(2, 3), values(2, 3)]),
    "SmoothL1LossBackwardBackward0": (lambda g, x, t: loss.SmoothL1LossBackwardBackward0.apply(g, x, t, 2, 0.5),
                                      [np.array(0.7), values(4), values(4)]),
    "DivBackward2": (lambda x, y: elementwise.DivBackward2.apply(x * 3, y, "floor") * x
                     + elementwise.DivBackward2.apply(x * 3, y, "trunc") * y, [values(2, 3), positive(2, 3)]),
    "LeakyReluBackwardBackward0": (lambda g, x: activation.LeakyReluBackwardBackward0.apply(g, x, 0.2),
                                   [values(2, 3), np.array([[-1.0, 0.5, 2.0], [0.3, -0.2, 1.1]])]),
    "HardtanhBackwardBackward0": (lambda g, x: activation.HardtanhBackwardBackward0.apply(g, x, -0.5, 0.8),
                                  [values(4), np.array([-1.0, -0.2, 0.3, 1.1])]),
})


def _view_of_changed_base(x):
    """A view whose base changed in place after it was made: its grad_fn becomes AsStridedBackward0."""
    base = x * 1
    view = base[1:]
    base.mul_(2)
    return view * view


def _write_through_view(x, y):
    """An in-place op on a view records CopySlices on the base."""
    base = x * 1
    base[1:].mul_(y)
    return base * base


def _index_put(x, values):
    base = x * 1
    base[gv.tensor([0, 2])] = values
    return base * x


# ToCopyBackward0 passes through float32: a larger step keeps float32 rounding out of the difference
STEP = {"ToCopyBackward0": 1e-2}
# sampling ops whose gradient PyTorch defines as zero (``normal(mean, std)`` is not reparameterized): central
# differences of a seeded sample would measure the reparameterized derivative instead
ZERO_BY_DEFINITION = {"NormalBackward1", "NormalBackward2", "NormalBackward3"}
TOLERANCE = {"ToCopyBackward0": 1e-4}


def names_in_graph(tensor) -> set:
    """The op classes in ``tensor``'s graph (class names: CopySlices prints as torch::autograd::CopySlices)."""
    return {type(node).__name__ for node in graph_nodes(tensor)}  # (every node: two of one class may lead apart)


def graph_nodes(out) -> list:
    """Every node of ``out``'s graph, each once."""
    seen, stack, nodes = set(), [out.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return nodes


def numerical_grad(function, arrays, index, weights, step=1e-6):
    """Central differences of ``sum(weights * function(...))`` with respect to input ``index``."""
    grad = np.zeros_like(arrays[index])
    for position in np.ndindex(arrays[index].shape):
        totals = []
        for sign in (1, -1):
            shifted = [array.copy() for array in arrays]
            shifted[index][position] += sign * step
            # grad mode on and inputs that require grad, as in the case itself: a double backward's case
            # differentiates inside its function
            out = function(*[gv.tensor(array, dtype=gv.float64, requires_grad=True) for array in shifted])
            totals.append(float((out.detach().numpy() * weights).sum()))
        grad[position] = (totals[0] - totals[1]) / (2 * step)
    return grad


def test_every_registered_op_has_a_gradient_check():
    missing = sorted(cls.__name__ for cls in registry() if cls.__name__ not in CASES)
    assert not missing, f"ops without a gradient check: {missing}"


def pytest_generate_tests(metafunc):
    """Every case, including those the file adds below this test: pytest asks once the module has run
    (a ``parametrize`` mark here would see only the cases above it)."""
    if metafunc.function is test_gradient_matches_central_differences:
        metafunc.parametrize("name", sorted(CASES))


def test_gradient_matches_central_differences(name):
    function, arrays = CASES[name]
    inputs = [gv.tensor(array, dtype=gv.float64, requires_grad=True) for array in arrays]
    out = function(*inputs)
    assert name in names_in_graph(out), f"the case for {name} does not record {name}"
    weights = RNG.uniform(0.5, 1.5, size=tuple(out.shape))
    if name in ZERO_BY_DEFINITION:  # the node's gradient is zero by PyTorch's definition, whatever the numbers say
        sent = []
        node = next(node for node in graph_nodes(out) if node.name() == name)
        node.register_hook(lambda grad_inputs, grad_outputs: sent.extend(grad_inputs))
        (out * gv.tensor(weights, dtype=out.dtype)).sum().backward()
        assert sent and all(g is None or not g.numpy().any() for g in sent), f"{name}: {sent}"
        return
    (out * gv.tensor(weights, dtype=out.dtype)).sum().backward()
    for index, tensor in enumerate(inputs):
        expected = numerical_grad(function, arrays, index, weights, STEP.get(name, 1e-6))
        actual = tensor.grad.numpy() if tensor.grad is not None else np.zeros_like(expected)  # None: no path, zero
        np.testing.assert_allclose(actual, expected, rtol=TOLERANCE.get(name, 1e-5),
                                   atol=TOLERANCE.get(name, 1e-6), err_msg=f"{name}: input {index}")


@pytest.mark.parametrize("cls", registry(), ids=lambda cls: cls.__name__)
def test_every_op_declares_a_formula_per_input(cls):
    assert cls.inputs, f"{cls.__name__} declares no inputs"
    assert set(cls.derivatives) == set(cls.inputs), f"{cls.__name__}: formulas for {sorted(cls.derivatives)}"
    for name in cls.inputs:
        text, latex = cls.derivatives[name]
        assert text.strip() and latex.strip(), f"{cls.__name__}.{name}: empty formula"


# the wider tensor API (api3): more elementwise math
CASES.update({
    "Log1PBackward0": (lambda x: x.log1p(), [positive(3)]),
    "Expm1Backward0": (lambda x: x.expm1(), [values(3)]),
    "Log2Backward0": (lambda x: x.log2(), [positive(3)]),
    "Log10Backward0": (lambda x: x.log10(), [positive(3)]),
    "RsqrtBackward0": (lambda x: x.rsqrt(), [positive(3)]),
    "ErfBackward0": (lambda x: x.erf(), [values(3)]),
    "AsinBackward0": (lambda x: x.asin(), [values(3, low=-0.9, high=0.9)]),
    "AcosBackward0": (lambda x: x.acos(), [values(3, low=-0.9, high=0.9)]),
    "AtanBackward0": (lambda x: x.atan(), [values(3)]),
    "SinhBackward0": (lambda x: x.sinh(), [values(3)]),
    "CoshBackward0": (lambda x: x.cosh(), [values(3)]),
    "Atan2Backward0": (lambda a, b: gv.atan2(a, b), [values(2, 3), values(3)]),
    # rounding is flat between its jumps: points away from them
    "FloorBackward0": (lambda x: x.floor() + x, [np.array([0.3, -1.4, 2.6])]),
    "CeilBackward0": (lambda x: x.ceil() * x, [np.array([0.3, -1.4, 2.6])]),
    "TruncBackward0": (lambda x: x.trunc() + x, [np.array([0.3, -1.4, 2.6])]),
    "RoundBackward0": (lambda x: x.round() * x, [np.array([0.3, -1.4, 2.6])]),
    "RoundBackward1": (lambda x: x.round(decimals=1) + x, [np.array([0.33, -1.42, 2.61])]),
    "SignBackward0": (lambda x: x.sign() * x, [np.array([0.3, -1.4, 2.6])]),
    "FracBackward0": (lambda x: x.frac(), [np.array([0.3, -1.4, 2.6])]),
    "ClampMinBackward0": (lambda x: x.clamp_min(0.2), [np.array([-1.0, 0.5, 2.0])]),
    "ClampMaxBackward0": (lambda x: x.clamp_max(0.2), [np.array([-1.0, 0.5, 2.0])]),
    "RemainderBackward0": (lambda x: x % 0.7, [np.array([0.3, -1.2, 2.6])]),
    "RemainderBackward1": (lambda a, b: a % b, [np.array([0.3, -1.2, 2.6]), np.array([0.7, 0.5, -0.9])]),
    "FmodBackward0": (lambda x: x.fmod(0.7), [np.array([0.3, -1.2, 2.6])]),
    "FmodBackward1": (lambda a, b: a.fmod(b), [np.array([0.3, -1.2, 2.6]), np.array([0.7, 0.5, -0.9])]),
    "LerpBackward0": (lambda a, b: a.lerp(b, 0.3), [values(2, 3), values(3)]),
    "AddcmulBackward0": (lambda s, a, b: s.addcmul(a, b, value=0.5), [values(3), values(2, 3), values(2, 1)]),
    "HypotBackward0": (lambda a, b: a.hypot(b), [values(2, 3), values(3)]),
    "NanToNumBackward0": (lambda x: x.nan_to_num() * x, [values(3)]),
})


# the wider tensor API (api3): reductions and layout
CASES.update({
    "MinBackward1": (lambda x: x.min(), [np.array([0.1, -0.9, 0.4])]),
    "MinBackward0": (lambda x: x.min(1)[0], [np.array([[0.1, 0.9, -0.4], [1.3, 0.2, 0.8]])]),
    "AmaxBackward0": (lambda x: x.amax((0, 2)), [values(2, 3, 2)]),
    "AminBackward0": (lambda x: x.amin(-1, keepdim=True), [values(2, 3)]),
    "VarBackward0": (lambda x: x.var(1) + x.var(), [values(2, 3)]),
    "StdBackward0": (lambda x: x.std(0, correction=0) + x.std(), [values(2, 3)]),
    "ProdBackward0": (lambda x: x.prod(), [values(2, 3)]),
    "ProdBackward1": (lambda x: x.prod(1, keepdim=True), [values(2, 3)]),
    "LogsumexpBackward0": (lambda x: x.logsumexp(-1), [values(2, 3)]),
    "CumsumBackward0": (lambda x: x.cumsum(1), [values(2, 3)]),
    "CumprodBackward0": (lambda x: x.cumprod(-1), [values(2, 3)]),
    "FlipBackward0": (lambda x: x.flip((0, 1)), [values(2, 3)]),
    "RollBackward0": (lambda x: x.roll((1, -1), (0, 1)) + x.roll(2), [values(2, 3)]),
    "TrilBackward0": (lambda x: x.tril(), [values(3, 3)]),
    "TriuBackward0": (lambda x: x.triu(-1), [values(3, 4)]),
    "DiagonalBackward0": (lambda x: x.diagonal(1, 0, 2), [values(2, 3, 4)]),
    "DiagonalBackward0_copy": (lambda x: x.diag(-1), [values(3, 3)]),
    "DiagEmbedBackward0": (lambda x: x.diag(1), [values(3)]),
    "TraceBackward0": (lambda x: x.trace(), [values(2, 3)]),
})
CASES.update({
    "SortBackward0": (lambda x: x.sort(1, descending=True)[0] * gv.arange(3.0, dtype=gv.float64), [values(2, 3)]),
    "SortBackward1": (lambda x: x.sort(0, stable=True)[0] * gv.arange(2.0, dtype=gv.float64).reshape(2, 1),
                      [values(2, 3)]),
    "TopkBackward0": (lambda x: x.topk(2)[0] * gv.tensor([1.0, 2.0], dtype=gv.float64), [values(2, 3)]),
})
CASES["ReshapeAliasBackward0"] = (lambda x: x.t().reshape(3, 1, 2), [values(2, 3)])
CASES.update({
    "Exp2Backward0": (lambda x: x.exp2(), [values(3)]),
    "MaskedSelectBackward0": (lambda x: x.masked_select(gv.tensor([True, False, True])), [values(2, 3)]),
})
CASES["ScatterBackward1"] = (lambda x: x.scatter(1, gv.tensor([[2], [0]]), 0.5) * x, [values(2, 3)])


# -- more products, torch.linalg, scatter_reduce, padding modes, unfold -------------------------------
def _spd(a):
    """A symmetric positive-definite matrix made from ``a`` (so its Cholesky factor exists)."""
    return a @ a.t() + gv.eye(a.shape[0], dtype=a.dtype) * 3


WELL_CONDITIONED = np.array([[2.0, -1.0, 0.5], [0.3, 1.5, -0.7], [1.0, 0.2, 3.0]])
CASES.update({
    "BaddbmmBackward0": (lambda s, a, b: gv.baddbmm(s, a, b, beta=0.5, alpha=2), [values(3, 4), values(2, 3, 5),
                                                                                 values(2, 5, 4)]),
    "AddbmmBackward0": (lambda s, a, b: gv.addbmm(s, a, b, alpha=-1), [values(3, 4), values(2, 3, 5), values(2, 5, 4)]),
    "AddmvBackward0": (lambda s, m, v: gv.addmv(s, m, v, beta=2), [values(3), values(3, 4), values(4)]),
    "AddrBackward0": (lambda s, u, v: gv.addr(s, u, v, alpha=0.5), [values(3, 4), values(3), values(4)]),
    "LinalgCrossBackward0": (lambda a, b: gv.linalg.cross(a, b), [values(4, 3), values(1, 3)]),
    "VdotBackward0": (lambda a, b: gv.vdot(a, b), [values(4), values(4)]),
    "LinalgInvExBackward0": (lambda a: gv.linalg.inv(a), [WELL_CONDITIONED]),
    "LinalgDetBackward0": (lambda a: gv.linalg.det(a), [WELL_CONDITIONED]),
    "LinalgSlogdetBackward0": (lambda a: gv.linalg.slogdet(a).logabsdet, [WELL_CONDITIONED]),
    "LinalgCholeskyExBackward0": (lambda a: gv.linalg.cholesky(_spd(a)), [values(3, 3)]),
    "CholeskyBackward0": (lambda a: gv.cholesky(_spd(a), upper=True), [values(3, 3)]),
    "LinalgSolveExBackward0": (lambda a, b: gv.linalg.solve(a, b), [WELL_CONDITIONED, values(3, 2)]),
    "ScatterReduceBackward0": (lambda x, s: x.scatter_reduce(1, gv.tensor([[0, 2, 0], [1, 1, 3]]), s, "prod"),
                               [values(2, 4), values(2, 3)]),
    "ReflectionPad1DBackward0": (lambda x: F.pad(x, (2, 1), mode="reflect"), [values(2, 4)]),
    "ReflectionPad2DBackward0": (lambda x: F.pad(x, (1, 2, 2, 0), mode="reflect"), [values(1, 3, 4)]),
    "ReflectionPad3DBackward0": (lambda x: F.pad(x, (1, 1, 0, 1, 1, 0), mode="reflect"), [values(1, 2, 3, 2)]),
    "ReplicationPad1DBackward0": (lambda x: F.pad(x, (3, 1), mode="replicate"), [values(2, 3)]),
    "ReplicationPad2DBackward0": (lambda x: F.pad(x, (1, 2, 2, 0), mode="replicate"), [values(1, 3, 4)]),
    "ReplicationPad3DBackward0": (lambda x: F.pad(x, (1, 1, 0, 2, 1, 0), mode="replicate"), [values(1, 2, 3, 2)]),
    "UnfoldBackward0": (lambda x: x.unfold(1, 3, 2), [values(2, 7)]),
    "LinalgSolveTriangularBackward0": (lambda a, b: gv.linalg.solve_triangular(a, b, upper=False) + gv.linalg.solve_triangular(
        a.mT, b.mT, upper=True, left=False, unitriangular=True).mT, [WELL_CONDITIONED, values(3, 3)]),
})
# -- order statistics, summaries, special math, lookups (each case also checks its learner formula) ----
def _distinct(*shape):
    """Values with no ties (a tie's winner is the index torch picks: tests/test_order_statistics.py checks that)."""
    return RNG.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) * 0.25 - 1


CASES.update({
    "KthvalueBackward0": (lambda x: x.kthvalue(2, 1).values, [_distinct(3, 4)]),
    "MedianBackward0": (lambda x: x.median() * x, [_distinct(3, 3)]),
    "MedianBackward1": (lambda x: x.median(0, keepdim=True).values, [_distinct(3, 4)]),
    "NanmedianBackward0": (lambda x: x.nanmedian() * x, [_distinct(2, 3)]),
    "NanmedianBackward1": (lambda x: x.nanmedian(-1).values, [_distinct(3, 4)]),
    # (each row's values distinct, so its mode is its least value and stays that under a small step; with a tie, a
    # step breaks it and the mode jumps: no central difference there)
    "ModeBackward0": (lambda x: x.mode(1).values * x.sum(1), [np.array([[1.0, 2.0, 1.5], [0.7, 0.5, 3.0]])]),
    "CummaxBackward0": (lambda x: x.cummax(1).values, [_distinct(2, 5)]),
    "CumminBackward0": (lambda x: x.cummin(0).values, [_distinct(4, 2)]),
    "VarMeanBackward0": (lambda x: gv.stack(gv.var_mean(x, 1)), [values(3, 4)]),
    "StdMeanBackward0": (lambda x: gv.stack(gv.std_mean(x, 0, keepdim=True, correction=0)), [values(3, 4)]),
    "AminmaxBackward0": (lambda x: gv.stack(tuple(x.aminmax(dim=1))), [_distinct(3, 4)]),
    "NansumBackward0": (lambda x: x.nansum(1) + x.nanmean(), [values(3, 4)]),
    "LogcumsumexpBackward0": (lambda x: x.logcumsumexp(1), [values(2, 5)]),
    "LogaddexpBackward0": (lambda a, b: gv.logaddexp(a, b), [values(2, 3), values(3)]),
    "Logaddexp2Backward0": (lambda a, b: gv.logaddexp2(a, b), [values(2, 3), values(2, 3)]),
    "AddcdivBackward0": (lambda s, a, b: gv.addcdiv(s, a, b, value=0.5), [values(2, 3), values(2, 3), positive(3)]),
    "XlogyBackward0": (lambda a, b: gv.xlogy(a, b), [values(2, 3), positive(2, 3)]),
    "XlogyBackward1": (lambda b: gv.xlogy(2.5, b), [positive(4)]),
    "XlogyBackward2": (lambda a: gv.xlogy(a, 3.0), [values(4)]),
    "SincBackward0": (lambda x: x.sinc(), [values(5)]),
    "Deg2RadBackward0": (lambda x: x.deg2rad(), [values(3)]),
    "Rad2DegBackward0": (lambda x: x.rad2deg(), [values(3)]),
    "TakeBackward0": (lambda x: x.take(gv.tensor([[0, 5], [5, -1]])), [values(2, 3)]),
    "IndexFillBackward0": (lambda x: x.index_fill(1, gv.tensor([0, 2]), 1.5), [values(2, 3)]),
    "IndexCopyBackward0": (lambda x, s: x.index_copy(0, gv.tensor([2, 0]), s), [values(3, 2), values(2, 2)]),
    "ErfcBackward0": (lambda x: gv.special.erfc(x), [values(4)]),
    "ErfinvBackward0": (lambda x: x.erfinv(), [values(4, low=-0.9, high=0.9)]),
    "LgammaBackward0": (lambda x: gv.special.gammaln(x), [positive(4)]),
    "DigammaBackward0": (lambda x: x.digamma(), [positive(4)]),
    "SpecialEntrBackward0": (lambda x: gv.special.entr(x), [probabilities(4)]),
    "I0Backward0": (lambda x: gv.special.i0(x * 3), [values(5)]),
    "SpecialXlog1PyBackward0": (lambda a, b: gv.special.xlog1py(a, b), [values(2, 3), positive(2, 3)]),
    "SpecialXlog1PyBackward1": (lambda b: gv.special.xlog1py(2.5, b), [values(4, low=-0.5, high=2.0)]),
    "SpecialXlog1PyBackward2": (lambda a: gv.special.xlog1py(a, 3.0), [values(4)]),
    "PutBackward0": (lambda x, s: x.put(gv.tensor([4, 0]), s) + x.put(gv.tensor([1, 1]), s * s, accumulate=True),
                     [values(2, 3), values(2)]),
})
# -- clamp with tensor bounds, PReLU's two-output kernel backward
CASES.update({
    "ClampBackward0": (lambda x, lo, hi: gv.clamp(x, lo, hi) + gv.clamp(x, lo) * 2 + gv.clamp(x, None, hi) * 3,
                       [np.array([-1.5, 0.2, 0.7, 2.0]), np.array([-0.5, 0.1, 0.6, 0.5]), np.array([1.0, 1.1, 0.65, 1.5])]),
    "ClampMinBackward1": (lambda x, lo: gv.clamp_min(x, lo), [np.array([-1.5, 0.2, 2.0]), np.array([-0.5, 0.3, 0.5])]),
    "ClampMaxBackward1": (lambda x, hi: gv.clamp_max(x, hi), [np.array([-1.5, 0.2, 2.0]), np.array([-0.5, 0.3, 0.5])]),
    "PreluKernelBackwardBackward0": (lambda g, x, a: (lambda grads: grads[0] * 1.5 + grads[1])(
        activation.PreluKernelBackwardBackward0.apply(g, x, a)), [values(2, 3), values(2, 3), values(1, 3)]),
})
CASES["EmbeddingDenseBackwardBackward0"] = (
    lambda g: __import__("gradviz.ops.double_backward", fromlist=["x"]).EmbeddingDenseBackwardBackward0.apply(
        g, gv.tensor([[1, 0], [2, 1]]), 3, 0, False), [values(2, 2, 2)])
CASES["MaskedScatterBackwardBackward0"] = (
    lambda g: __import__("gradviz.ops.double_backward", fromlist=["x"]).MaskedScatterBackwardBackward0.apply(
        g, gv.tensor([[True, False, True], [False, True, False]]), (2, 2)), [values(2, 3)])


# -- the SVD family: losses that do not depend on the vectors' signs (which LAPACK fixes only up to ±1)
def _svd_product(a):
    U, S, Vh = gv.linalg.svd(a, full_matrices=False)
    return (U * S.unsqueeze(-2) ** 2) @ Vh + (U @ U.mT).sum() + (Vh.mT @ Vh).sum(0, keepdim=True)


def _eigh_product(a):
    values, vectors = gv.linalg.eigh(a + a.mT)
    return (vectors * values.unsqueeze(-2) ** 3) @ vectors.mT + vectors.abs()


CASES.update({
    "LinalgSvdBackward0": (_svd_product, [values(4, 3)]),
    "LinalgEighBackward0": (_eigh_product, [values(3, 3)]),
    "LinalgQrBackward0": (lambda a: gv.linalg.qr(a).Q * 2 + gv.linalg.qr(a).R.sum() + gv.linalg.qr(a.mT).Q.sum(),
                          [values(4, 3)]),
    "LinalgPinvBackward0": (lambda a: gv.linalg.pinv(a), [values(3, 4)]),
})
# -- torch.special's extras (zeta and the incomplete gamma functions: only in q / x, as PyTorch)
CASES.update({
    "SpecialI0EBackward0": (lambda x: gv.special.i0e(x * 3), [values(5)]),
    "SpecialI1Backward0": (lambda x: gv.special.i1(x * 3), [values(5)]),
    "SpecialI1EBackward0": (lambda x: gv.special.i1e(x * 3), [values(5)]),
    "PolygammaBackward0": (lambda x: gv.special.polygamma(2, x) + gv.special.polygamma(0, x), [positive(4)]),
    "MvlgammaBackward0": (lambda x: gv.special.multigammaln(x + 2, 3), [positive(4)]),
    "SpecialNdtriBackward0": (lambda x: gv.special.ndtri(x), [probabilities(4)]),
    "SpecialLogNdtrBackward0": (lambda x: gv.special.log_ndtr(x * 4), [values(5)]),
    # (erfcx(x) grows as 2 exp(x²) for negative x: at x = -4.5 the central difference drowns in rounding)
    "SpecialErfcxBackward0": (lambda x: gv.special.erfcx(x * 1.5), [values(5)]),
    "SpecialZetaBackward0": (lambda q: gv.special.zeta(gv.tensor([2.0, 3.5, 5.0], dtype=gv.float64), q), [positive(3)]),
    "SpecialZetaBackward1": (lambda q: gv.special.zeta(2.5, q), [positive(3)]),
    "IgammaBackward0": (lambda x: gv.special.gammainc(gv.tensor([0.5, 2.0, 4.5], dtype=gv.float64), x), [positive(3)]),
    "IgammacBackward0": (lambda x: gv.special.gammaincc(gv.tensor([0.5, 2.0, 4.5], dtype=gv.float64), x), [positive(3)]),
})
# -- torch.normal with tensors of means and standard deviations (zero gradients: the draw is a constant)
CASES.update({
    "NormalBackward1": (lambda m: gv.normal(m, 1.5, generator=seeded()) * m, [values(3)]),
    "NormalBackward2": (lambda s: gv.normal(0.5, s, generator=seeded()) * s, [positive(3)]),
    "NormalBackward3": (lambda m, s: gv.normal(m, s, generator=seeded()) * m * s, [values(2, 3), positive(3)]),
})
CASES["LinalgLstsqBackward0"] = (lambda a, b: gv.linalg.lstsq(a, b).solution, [values(4, 3), values(4, 2)])
CASES["LinalgMatrixExpBackward0"] = (lambda a: gv.linalg.matrix_exp(a * 3), [values(3, 3)])


# -- recorded first derivatives that are nodes of their own: the norms', reflect/replicate padding's, unfold's


_PAD_SHAPES = {1: ((1, 1, 7), (1, 1, 4)), 2: ((1, 1, 7, 6), (1, 1, 4, 3)), 3: ((1, 1, 5, 6, 6), (1, 1, 4, 3, 3))}


def _first_derivative(output, inputs, grad):
    """The recorded gradients of ``output`` for ``inputs`` with ``grad`` arriving, summed into one tensor."""
    grads = gv.autograd.grad(output, inputs, grad, create_graph=True)
    total = grads[0]
    for index, extra in enumerate(grads[1:]):
        total = total + (extra * (index + 2)).sum()
    return total


CASES.update({
    "NativeLayerNormBackwardBackward0": (lambda g, x, w: _first_derivative(
        gv.nn.functional.layer_norm(x, (3,), w), (x, w), g), [values(2, 3), values(2, 3), values(3)]),
    "NativeBatchNormBackwardBackward0": (lambda g, x, w: _first_derivative(
        gv.nn.functional.batch_norm(x, None, None, w, training=True), (x, w), g), [values(4, 3), values(4, 3), values(3)]),
    **{f"{kind}Pad{dims}DBackwardBackward0": (
        (lambda mode, dims: lambda g, x: _first_derivative(
            gv.nn.functional.pad(x, (1, 2, 2, 1, 1, 0)[:2 * dims], mode=mode), (x,), g))(mode, dims),
        [values(*_PAD_SHAPES[dims][0]), values(*_PAD_SHAPES[dims][1])])
       for kind, mode in (("Reflection", "reflect"), ("Replication", "replicate")) for dims in (1, 2, 3)},
    "UnfoldBackwardBackward0": (lambda g, x: _first_derivative(x.unfold(1, 2, 1), (x,), g),
                                [values(2, 3, 2), values(2, 4)]),
})
# more two-operand math, distances, diag_embed, glu, the shrinks, threshold, rrelu (in evaluation: one slope)
CASES.update({
    "FmaxBackward0": (lambda a, b: gv.fmax(a, b), [values(2, 3), values(3)]),
    "FminBackward0": (lambda a, b: gv.fmin(a, b), [values(2, 3), values(2, 1)]),
    "CopysignBackward0": (lambda a, b: gv.copysign(a, b), [values(2, 3), values(3)]),
    "CopysignBackward1": (lambda a: gv.copysign(a, -2.0), [values(2, 3)]),
    "NextafterBackward0": (lambda a, b: gv.nextafter(a, b), [values(2, 3), values(2, 3)]),
    "DistBackward0": (lambda a, b: gv.dist(a, b, 3), [values(2, 3), values(3)]),
    "CdistBackward0": (lambda a, b: gv.cdist(a, b), [values(2, 3, 4), values(3, 4)]),
    "NormBackward1": (lambda a, b: F.pairwise_distance(a, b, 1.5), [values(2, 3), values(2, 3)]),
    "DiagEmbedBackward0": (lambda a: gv.diag_embed(a, -1, 0, 2), [values(2, 3)]),
    "GluBackward0": (lambda a: F.glu(a, 0), [values(4, 3)]),
    "SoftshrinkBackward0": (lambda a: F.softshrink(a, 0.3), [values(3, 4)]),
    "HardshrinkBackward0": (lambda a: F.hardshrink(a, 0.3), [values(3, 4)]),
    "ThresholdBackward0": (lambda a: F.threshold(a, 0.1, -2.0), [values(3, 4)]),
    "ThresholdBackward1": (lambda a: F.threshold(a * 1, 0.1, 5.0, inplace=True), [values(3, 4)]),
    "RreluWithNoiseBackward0": (lambda a: F.rrelu(a, 0.1, 0.3), [values(3, 4)]),
    "RreluWithNoiseBackward1": (lambda a: F.rrelu(a * 1, 0.1, 0.3, inplace=True), [values(3, 4)]),
})
# the tensor API sweep: tan, torch.rsub with a tensor (and alpha), exponential_, poisson
CASES.update({
    "TanBackward0": (lambda x: x.tan(), [values(3, low=-1.2, high=1.2)]),
    "RsubBackward0": (lambda a, b: gv.rsub(a, b, alpha=3), [values(2, 3), values(3)]),
    "ExponentialBackward0": (lambda x: (x * 1).exponential_(2.0, generator=seeded()) * x, [values(3)]),
    "PoissonBackward0": (lambda x: gv.poisson(x * x, generator=seeded()) + x, [positive(4)]),
})
CASES.update({
    "AsinhBackward0": (lambda x: x.asinh(), [values(3)]),
    "AcoshBackward0": (lambda x: x.acosh(), [values(3, low=1.2, high=3.0)]),
    "AtanhBackward0": (lambda x: x.atanh(), [values(3, low=-0.8, high=0.8)]),
})
CASES.update({
    "CauchyBackward0": (lambda x: (x * 1).cauchy_(generator=seeded()) * x, [values(3)]),
    "GeometricBackward0": (lambda x: (x * 1).geometric_(0.3, generator=seeded()) * x, [values(3)]),
    "LogNormalBackward0": (lambda x: (x * 1).log_normal_(generator=seeded()) * x, [values(3)]),
    "RandomBackward0": (lambda x: (x * 1).random_(1, 5, generator=seeded()) * x, [values(3)]),
    "RandomBackward1": (lambda x: (x * 1).random_(5, generator=seeded()) * x, [values(3)]),
    "RandomBackward2": (lambda x: (x * 1).random_(generator=seeded()) * x, [values(3)]),
})
# -- convolution and pooling (ops/convolution.py, ops/pooling.py); the second-order nodes through create_graph


def _gradient_of_square(function):
    """``x -> ∂(Σ function(x, ...)²)/∂x`` recorded with create_graph: its graph holds the op's second-order node."""
    def gradient(x, *rest):
        return gv.autograd.grad((function(x, *rest) ** 2).sum(), (x,), create_graph=True)[0]
    return gradient


CASES.update({
    "ConvolutionBackward0": (lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
                             [values(2, 4, 5, 5), values(4, 2, 3, 2), values(4)]),
    "ConvolutionBackwardBackward0": (_gradient_of_square(lambda x, w: F.conv_transpose2d(x, w, stride=2, groups=2)),
                                     [values(1, 4, 3, 3), values(4, 1, 2, 3)]),
    "MaxPool2DWithIndicesBackward0": (lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [values(2, 2, 5, 6)]),
    "MaxPool2DWithIndicesBackwardBackward0": (_gradient_of_square(lambda x: F.max_pool2d(x, 2, 1)),
                                              [values(1, 2, 4, 4)]),
    "AvgPool2DBackward0": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                           [values(2, 2, 5, 6)]),
    "AvgPool2DBackwardBackward0": (_gradient_of_square(lambda x: F.avg_pool2d(x, 2, 1, 1)), [values(1, 2, 4, 4)]),
    "AdaptiveAvgPool2DBackward0": (lambda x: F.adaptive_avg_pool2d(x, (3, 4)), [values(2, 2, 5, 6)]),
    "AdaptiveAvgPool2DBackwardBackward0": (_gradient_of_square(lambda x: F.adaptive_avg_pool2d(x, 3)),
                                           [values(1, 2, 4, 5)]),
})
# integer and bit math: ldexp, frexp's mantissa, the comparisons in place (their gradient is 0)
CASES.update({
    "LdexpBackward0": (lambda a, b: gv.ldexp(a, b), [values(2, 3), values(3)]),
    "FrexpBackward0": (lambda a: gv.frexp(a).mantissa, [values(2, 3)]),
    **{f"{name.capitalize()}Backward0": ((lambda name: lambda a: getattr(a * 1, f"{name}_")(0.25))(name), [values(2, 3)])
       for name in ("ge", "gt", "le", "lt", "eq", "ne")},
    **{f"{name.capitalize()}Backward1": ((lambda name: lambda a, b: getattr(a * 1, f"{name}_")(b))(name),
                                         [values(2, 3), values(3)])
       for name in ("ge", "gt", "le", "lt", "eq", "ne")},
})
# shape helpers: rot90, block_diag, torch.fill (a number, a 0-d tensor)
CASES.update({
    "Rot90Backward0": (lambda a: gv.rot90(a, -1, (1, 0)), [values(2, 3, 2)]),
    "BlockDiagBackward0": (lambda a, b, c: gv.block_diag(a, b, c), [values(2, 3), values(3), values(1).reshape(())]),
    "FillBackward0": (lambda a: gv.fill(a, 2.5) * a, [values(2, 3)]),
    "FillBackward1": (lambda a, v: gv.fill(a, v) * a, [values(2, 3), values(1).reshape(())]),
})
# the in-place view ops: the tensor's own sizes and strides changed, its grad_fn the view op's node
CASES.update({
    "UnsqueezeBackward1": (lambda a: (a * 1).unsqueeze_(-1), [values(2, 3)]),
    "TBackward1": (lambda a: (a * 1).t_(), [values(2, 3)]),
    "TransposeBackward1": (lambda a: (a * 1).transpose_(0, -1), [values(2, 3, 2)]),
    "SqueezeBackward3": (lambda a: (a * 1).squeeze_(), [values(2, 1, 3)]),
    "SqueezeBackward5": (lambda a: (a * 1).squeeze_((1, -1)), [values(2, 1, 3, 1)]),
})
# statistics: lerp with a tensor weight (what quantile interpolates with)
from gradviz.ops.statistics_more import LerpBackward1  # noqa: E402

CASES.update({"LerpBackward1": (lambda a, b, w: LerpBackward1.apply(a, b, w), [values(2, 3), values(2, 3), values(2, 3)])})
# more losses: the soft margin loss's one node
CASES.update({"SoftMarginLossBackward0": (lambda a: F.soft_margin_loss(a, gv.tensor([[1.0, -1.0, 1.0], [-1.0, 1.0, 1.0]],
                                                                                    dtype=gv.float64)), [values(2, 3)])})


def test_gradcheck_of_a_function_with_a_transposed_output():
    """The seed of each output element is laid out flat, whatever the output's strides (a transposed
    output made ``zeros_like(out).view(-1)`` fail)."""
    x = gv.randn(3, 4, dtype=gv.float64, requires_grad=True)
    assert gv.autograd.gradcheck(lambda t: t.t() * 2, (x,))
    assert gv.autograd.gradgradcheck(lambda t: t.t() ** 3, (x,))
# group normalization (ops/normalization.py)
CASES.update({"NativeGroupNormBackward0": (lambda x, w, b: F.group_norm(x, 2, w, b),
                                           [values(2, 4, 3), values(4), values(4)])})
# resampling (ops/resampling.py): every upsample node, its recorded gradient, the shuffles
from gradviz.ops import resampling as _resampling  # noqa: E402

_UPSAMPLE_SHAPES = {1: (1, 2, 3), 2: (1, 2, 3, 2), 3: (1, 1, 2, 3, 2)}
_UPSAMPLE_SIZES = {1: (5,), 2: (4, 5), 3: (3, 4, 3)}
for (_mode, _spatial), _cls in _resampling.UPSAMPLE_OPS.items():
    _kwargs = {} if _mode.startswith("nearest") else {"align_corners": _spatial != 2}
    CASES[_cls.__name__] = ((lambda mode, spatial, kwargs: lambda x: F.interpolate(
        x, size=_UPSAMPLE_SIZES[spatial], mode=mode, **kwargs))(_mode, _spatial, _kwargs),
        [values(*_UPSAMPLE_SHAPES[_spatial])])
    CASES[_cls.double.__name__] = ((lambda mode, spatial, kwargs: lambda g, x: _first_derivative(F.interpolate(
        x, size=_UPSAMPLE_SIZES[spatial], mode=mode, **kwargs), (x,), g))(_mode, _spatial, _kwargs),
        [values(*_UPSAMPLE_SHAPES[_spatial][:2], *_UPSAMPLE_SIZES[_spatial]), values(*_UPSAMPLE_SHAPES[_spatial])])
CASES.update({
    "PixelShuffleBackward0": (lambda x: F.pixel_shuffle(x, 2), [values(1, 8, 2, 3)]),
    "PixelUnshuffleBackward0": (lambda x: F.pixel_unshuffle(x, 2), [values(2, 4, 2)]),
    "ChannelShuffleBackward0": (lambda x: F.channel_shuffle(x, 3), [values(2, 6, 2)]),
})
# the scatters into a copy, masked_scatter, renorm (ops/scatter_views.py)
CASES.update({
    "SelectScatterBackward0": (lambda a, s: gv.select_scatter(a, s, 1, -1), [values(2, 3, 2), values(2, 2)]),
    "SliceScatterBackward0": (lambda a, s: gv.slice_scatter(a, s, -1, 1, None, 2), [values(2, 5), values(2, 2)]),
    "DiagonalScatterBackward0": (lambda a, s: gv.diagonal_scatter(a, s, -1), [values(4, 3), values(3)]),
    "MaskedScatterBackward0": (lambda a, s: a.masked_scatter(gv.tensor([[True, False, True], [False, True, True]]), s),
                               [values(2, 3), values(5)]),
    "RenormBackward0": (lambda a: a.renorm(3, 0, 1.2), [values(3, 4)]),
})
# recurrent layers: unsafe_chunk's pieces, and one whole LSTM layer as oneDNN records it (called directly: in
# float64 torch records the decomposed cells instead)
from gradviz.ops.recurrent import MkldnnRnnLayerBackward0, unsafe_chunk  # noqa: E402


def _lstm_layer(reverse):
    def layer(x, w_ih, w_hh, b_ih, b_hh, h, c):
        output, hy, cy, _ = MkldnnRnnLayerBackward0.apply(x, w_ih, w_hh, b_ih, b_hh, h, c, reverse=reverse,
                                                          hidden_size=2, num_layers=1, has_biases=True,
                                                          bidirectional=False, batch_first=False, train=True)
        return gv.cat([output.reshape(-1), hy.reshape(-1) * 2, cy.reshape(-1) * 3])
    return layer


CASES.update({
    "UnsafeSplitBackward0": (lambda x: gv.cat([p * (i + 1) for i, p in enumerate(unsafe_chunk(x, 3, 1))], 1),
                             [values(2, 7)]),
    "MkldnnRnnLayerBackward0": (_lstm_layer(False), [values(3, 2, 3), values(8, 3), values(8, 2), values(8), values(8),
                                                     values(2, 2), values(2, 2)]),
})


def test_gradient_of_a_reverse_lstm_layer_matches_central_differences():
    function, arrays = _lstm_layer(True), CASES["MkldnnRnnLayerBackward0"][1]
    inputs = [gv.tensor(a, dtype=gv.float64, requires_grad=True) for a in arrays]
    assert gv.autograd.gradcheck(function, inputs)
# attention: the fused CPU node (mask and causal forms) and the math path's safe softmax
from gradviz.ops.attention import SafeSoftmaxBackward0  # noqa: E402

CASES.update({
    "ScaledDotProductFlashAttentionForCpuBackward0": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=gv.tensor([[0.0, -1.0, 0.5]], dtype=gv.float64))
        + F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7),
        [values(1, 2, 2, 3), values(1, 2, 3, 3), values(1, 2, 3, 3)]),
    "SafeSoftmaxBackward0": (lambda x: SafeSoftmaxBackward0.apply(x, -1), [values(2, 3)]),
})
# the rest of pooling, fold/unfold (ops/pooling.py, ops/fold.py); the second-order nodes through create_graph

CASES.update({
    "MaxPool3DWithIndicesBackward0": (lambda x: F.max_pool3d(x, 2, 1, 1, ceil_mode=True), [values(1, 2, 3, 4, 3)]),
    "MaxPool3DWithIndicesBackwardBackward0": (_gradient_of_square(lambda x: F.max_pool3d(x, 2, 1)),
                                              [values(1, 1, 3, 3, 3)]),
    "AvgPool3DBackward0": (lambda x: F.avg_pool3d(x, 2, 1, 1, count_include_pad=False), [values(1, 2, 3, 4, 3)]),
    "AvgPool3DBackwardBackward0": (_gradient_of_square(lambda x: F.avg_pool3d(x, 2, 1, 1)), [values(1, 1, 3, 3, 3)]),
    "AdaptiveAvgPool3DBackward0": (lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)), [values(1, 2, 3, 4, 3)]),
    "AdaptiveAvgPool3DBackwardBackward0": (_gradient_of_square(lambda x: F.adaptive_avg_pool3d(x, 2)),
                                           [values(1, 1, 3, 3, 3)]),
    "AdaptiveMaxPool2DBackward0": (lambda x: F.adaptive_max_pool2d(x, (3, 2)), [values(2, 2, 5, 4)]),
    "AdaptiveMaxPool2DBackwardBackward0": (_gradient_of_square(lambda x: F.adaptive_max_pool2d(x, 3)),
                                           [values(1, 2, 4, 5)]),
    "AdaptiveMaxPool3DBackward0": (lambda x: F.adaptive_max_pool3d(x, (2, 3, 2)), [values(1, 2, 3, 4, 3)]),
    "AdaptiveMaxPool3DBackwardBackward0": (_gradient_of_square(lambda x: F.adaptive_max_pool3d(x, 2)),
                                           [values(1, 1, 3, 3, 3)]),
    "MaxUnpool2DBackward0": (lambda x: F.max_unpool2d(x, gv.tensor([[[[0, 3], [9, 14]]], [[[5, 2], [8, 15]]]]), 2),
                             [values(2, 1, 2, 2)]),
    "MaxUnpool3DBackward0": (lambda x: F.max_unpool3d(x, gv.tensor([[[[[0, 7]], [[20, 31]]]]]), 2),
                             [values(1, 1, 2, 1, 2)]),
    "Im2ColBackward0": (lambda x: F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), [values(1, 2, 4, 5)]),
    "Col2ImBackward0": (lambda x: F.fold(x, (4, 5), (2, 3), padding=(1, 0), stride=(1, 2)), [values(1, 12, 10)]),
})
