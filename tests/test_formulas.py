"""The formula a learner reads is the gradient that ran: every op's displayed formula, evaluated.

For every node of every gradient-check program (``tests/test_gradcheck.py``'s ``CASES``, one or
more per op) and of the extra programs below (the calls' options: weights, reductions, alpha,
broadcasting), the learner formula shown for each input is evaluated in float64 from what the node
saved and compared with the gradient ``backward()`` sent. An op class without a learner formula
fails. The same check runs on PyTorch's own graphs, since formulas are keyed by node name.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import gradviz as gv
import gradviz.nn.functional as F
from gradviz.autograd.engine import backward_steps
from gradviz.ops import registry
from gradviz.snapshot import graph_of, trace_of
from gradviz.snapshot.formula_table import TABLE
from gradviz.snapshot.formulas import formulas_for, gradient_sent, node_name
from gradviz.snapshot.math import TAGS, Var, evaluate, sin, to_mathml_json
from gradviz.snapshot.model import to_numpy
from tests.test_gradcheck import CASES, positive, probabilities, values

RNG = np.random.default_rng(7)

EXTRA = {
    "bce logits, weight, sum": (lambda z, t: F.binary_cross_entropy_with_logits(
        z, t, weight=gv.tensor([1.0, 2.0, 0.5], dtype=gv.float64), reduction="sum"), [values(2, 3), probabilities(2, 3)]),
    "bce logits, none": (lambda z, t: F.binary_cross_entropy_with_logits(z, t, reduction="none"),
                         [values(3), probabilities(3)]),
    "bce logits, pos_weight and weight": (lambda z, t: F.binary_cross_entropy_with_logits(
        z, t, weight=gv.tensor([2.0, 1.0], dtype=gv.float64), pos_weight=gv.tensor([3.0, 0.5], dtype=gv.float64)),
        [values(2), probabilities(2)]),
    "bce, weight, none": (lambda p, t: F.binary_cross_entropy(p, t, weight=gv.tensor([2.0, 1.0, 3.0], dtype=gv.float64),
                                                               reduction="none"), [probabilities(3), probabilities(3)]),
    "mse, sum, broadcast": (lambda a, b: F.mse_loss(a, b, reduction="sum") if a.shape == b.shape else None,
                            [values(2, 3), values(2, 3)]),
    "mse, none": (lambda a, b: F.mse_loss(a, b, reduction="none"), [values(4), values(4)]),
    "nll, weight": (lambda x: F.nll_loss(x, gv.tensor([2, 0, 1]), weight=gv.tensor([1.0, 2.0, 0.5], dtype=gv.float64)),
                    [values(3, 3)]),
    "nll, none": (lambda x: F.nll_loss(x, gv.tensor([2, 0]), reduction="none"), [values(2, 3)]),
    "nll, sum, ignore": (lambda x: F.nll_loss(x, gv.tensor([2, 1, 1]), reduction="sum", ignore_index=1), [values(3, 3)]),
    "cross entropy": (lambda x: F.cross_entropy(x, gv.tensor([1, 0])), [values(2, 3)]),
    "addmm alpha beta": (lambda b, x, w: gv.addmm(b, x, w, beta=0.5, alpha=2.0), [values(4), values(2, 3), values(3, 4)]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [values(2, 3), values(4, 3), values(4)]),
    "add broadcast": (lambda a, b: a + b, [values(2, 3), values(2, 1)]),
    "add scalar tensor": (lambda a, b: a * b + a, [values(2, 3), values(1)]),
    "pow 2 and 0.5": (lambda x: x ** 2 + x ** 0.5, [positive(3)]),
    "clamp min only": (lambda x: x.clamp(min=0.0), [np.array([-1.0, 0.5, 2.0])]),
    "softmax dim 0": (lambda x: gv.softmax(x, 0) * x, [values(3, 2)]),
    # PReLU's kernel backward recorded (one node, two outputs), differentiated
    "prelu twice": (lambda x, a: _gradient_of(lambda y: (F.prelu(y * y - 0.5, a[:1]) * y).sum(), x) * 1.5
                    + gv.autograd.grad((F.prelu(x.reshape(1, 2, 2) * x.reshape(1, 2, 2), a * 1) * x.reshape(1, 2, 2)).sum(),
                                       a, create_graph=True)[0].sum(),
                    [np.array([-1.5, 0.5, 2.0, -0.3]), np.array([0.25, -0.5])]),
    # embedding's backward recorded (EmbeddingDenseBackwardBackward0), padding row too
    "embedding twice": (lambda w: _gradient_of(lambda v: (F.embedding(gv.tensor([[1, 0], [2, 1]]), v, padding_idx=0)
                                                         ** 3).sum(), w), [values(3, 2)]),
    # masked_select differentiated twice (MaskedScatterBackwardBackward0)
    "masked_select thrice": (lambda x: _gradient_of(lambda v: (_gradient_of(lambda u: (u.masked_select(gv.tensor(
        [[True, False, True], [False, True, True]])) ** 4).sum(), v) ** 2).sum(), x), [values(2, 3)]),
    # clamp with tensor bounds (ops/clamping.py)
    "clamp tensor bounds": (lambda x, lo, hi: gv.clamp(x, lo, hi) + gv.clamp(x, lo) + gv.clamp(x, max=hi),
                            [np.array([-1.0, 0.5, 2.0, 0.1]), np.array([0.0, 0.0, 0.0, 0.3]), np.array([1.0, 1.0, 1.0, 0.2])]),
    "clamp_min clamp_max tensors": (lambda x, lo, hi: gv.clamp_min(x, lo) * gv.clamp_max(x, hi),
                                    [np.array([-1.0, 0.5, 2.0]), np.array([0.0, 1.0, 0.0]), np.array([1.0, 1.0, 1.5])]),
    "sum dims": (lambda x: x.sum((0, 2)), [values(2, 3, 2)]),
    "mean dim keepdim": (lambda x: x.mean(-1, keepdim=True), [values(2, 3)]),
    "norm 2 dim, 1, inf, 3": (lambda x: x.norm(dim=1) + x.norm(p=1) + x.norm(p=float("inf")) + x.norm(p=3),
                              [positive(2, 3)]),
    "max dim keepdim": (lambda x: x.max(0, keepdim=True)[0], [np.array([[0.1, 0.9], [1.3, 0.2]])]),
    "sub rsub div": (lambda a, b: (1 - a) / b - b, [values(3), positive(3)]),
    "index and select": (lambda x: x[gv.tensor([1, 1, 0]), 1:] * x[0, 1], [values(3, 4)]),
    "narrow slice step": (lambda x: x[:, ::2] * 2, [values(2, 5)]),
    "mlp": (lambda x, w1, w2: (x @ w1).relu().matmul(w2).sigmoid().mean(), [values(4, 3), values(3, 5), values(5, 1)]),
    # a gradient recorded with create_graph=True, differentiated again: the ...BackwardBackward0 ops
    "tanh, sigmoid, relu twice": (lambda x: _gradient_of(lambda y: (y.tanh() + y.sigmoid() * y.relu()).sum(), x).sum(),
                                  [np.array([-1.0, 0.5, 2.0])]),
    "mse twice, mean": (lambda x, t: _gradient_of(lambda y: F.mse_loss(y * y, t), x), [values(2, 3), values(2, 3)]),
    "mse twice, none": (lambda x, t: _gradient_of(lambda y: (F.mse_loss(y.sin(), t, reduction="none") * y).sum(), x),
                        [values(4), values(4)]),
    "select and slice twice": (lambda x: _gradient_of(lambda y: (y[1] ** 3).sum() + (y[:, -1] ** 2).sum()
                                                      + (y[:, 1:3] * y[:, :2]).sum() + (y[::2, :-1] ** 2).sum(), x),
                               [values(3, 4)]),
    "trace and diagonal twice": (lambda x: _gradient_of(lambda y: gv.trace(y) ** 2 + (y.diagonal(1) ** 3).sum()
                                                          + (y.unsqueeze(0).diagonal(-1, -1, -2) ** 2).sum(), x),
                                 [values(3, 4)]),
    "logsigmoid and hardswish twice": (lambda x: _gradient_of(lambda y: (F.logsigmoid(y * 2) * y + F.hardswish(y * 3)
                                                                    ** 2).sum(), x), [np.array([-1.5, -0.4, 0.3, 2.0])]),
    "huber and smooth L1 twice": (lambda x, t: _gradient_of(lambda y: F.huber_loss(y * y, t, delta=0.8) + F.smooth_l1_loss(
        t, y.sin(), beta=0.5, reduction="sum") + (F.huber_loss(y, t * y, reduction="none") * y).sum(), x),
                                  [np.array([-1.5, -0.4, 0.3, 2.0]), np.array([0.5, -0.2, 1.0, 0.1])]),
    "in-place activations twice": (lambda x: _gradient_of(lambda y: (F.elu(y * 2, 0.7, inplace=True) ** 2 + F.celu(
        y * 1, 0.5, True) * y + F.leaky_relu(y * y, 0.2, True) * y).sum(), x), [np.array([-1.5, -0.4, 0.3, 2.0])]),
    "remainder and fmod twice": (lambda x, y: _gradient_of(lambda z: (gv.remainder(x * 3, z) ** 2 + gv.fmod(x, z * z)
                                                                  * z).sum(), y), [values(4), positive(4)]),
    "abs and clamp twice": (lambda x: _gradient_of(lambda y: (y.abs() * y + y.clamp(-1, 1) * y
                                                           + y.clamp(max=0.2) ** 2).sum(), x),
                            [np.array([-1.5, 0.5, 2.0, -0.3])]),
    "maximum, minimum, where twice": (lambda x, y: _gradient_of(lambda z: (gv.maximum(z, y) * gv.minimum(z * 2, y)
                                                                          + gv.where(z > 0, z * y, z) ** 2).sum(), x),
                                      [np.array([-1.5, 0.5, 2.0, 1.0]), np.array([0.5, -1.0, 2.0, 1.0])]),
    "max all and along a dim twice": (lambda x: _gradient_of(lambda z: z.max() ** 2 + (z.max(1)[0] ** 3).sum()
                                                             + (z.max(-2, keepdim=True)[0] * z).sum(), x),
                                      [values(3, 4)]),
    "norm 2 and 1 twice": (lambda x: _gradient_of(lambda z: z.norm() * z.sum() + (z.norm(dim=1) ** 3).sum()
                                                  + z.norm(1, dim=(0, 1)) ** 2, x), [values(3, 4)]),
    "cat, stack, repeat twice": (lambda x: _gradient_of(lambda z: (gv.cat([z, z * z], -1) ** 3).sum()
                                                        + (gv.stack([z, z.sin()], 0) ** 2).sum()
                                                        + (z.repeat(2, 1, 3) ** 3).sum(), x), [values(2, 3)]),
    "dot and bmm twice": (lambda x: _gradient_of(lambda z: z[0].dot(z[1]) ** 2 + (gv.bmm(z.unsqueeze(0), z.t().unsqueeze(0))
                                                                              ** 2).sum(), x), [values(2, 3)]),
    "tensor and number powers twice": (lambda x, y: _gradient_of(lambda z: (z ** y + 2.0 ** (z * y)).sum(), x),
                                       [positive(2, 3), values(2, 3)]),
    "masked_fill twice": (lambda x: _gradient_of(lambda z: (z.masked_fill(z > 0.5, 1.0) ** 3).sum(), x), [values(2, 3)]),
    "gather twice": (lambda x: _gradient_of(lambda z: (z.gather(1, gv.tensor([[2, 2], [0, 1], [1, 1]])) ** 3).sum(), x),
                     [values(3, 4)]),
    "index_select twice": (lambda x: _gradient_of(lambda z: (z.index_select(-1, gv.tensor([3, 0, 3])) ** 3).sum(), x),
                           [values(2, 4)]),
    "bce twice, mean and weighted sum": (lambda x, t: _gradient_of(
        lambda z: F.binary_cross_entropy(z.sigmoid(), t.detach()) + F.binary_cross_entropy(
            z.sigmoid(), t.detach(), weight=t.detach() + 1, reduction="sum"), x), [values(2, 3), probabilities(2, 3)]),
    # several outputs: pieces used differently, one unused
    "split, one piece unused": (lambda x: (lambda a, b, c: a * 2 + c.sum())(*x.split(2)), [values(6)]),
    "split 2-d, dim 1": (lambda x: (lambda a, b: a.sum(1) * b.mean(1))(*x.split(2, dim=1)), [values(3, 4)]),
    "chunk, last piece smaller": (lambda x: (lambda a, b, c: a.sum() * c.sum())(*x.chunk(3)), [values(5)]),
    "split with sizes, negative dim": (lambda x: (lambda a, b, c: (a * c).sum() + b.sum())(*x.split([1, 2, 1], dim=-1)),
                                       [values(2, 4)]),
    "unbind, one slice unused": (lambda x: (lambda a, b, c: a * b)(*x.unbind(0)), [values(3, 2)]),
    "unbind dim 1, a slice used twice": (lambda x: (lambda a, b: a * a + b)(*x.unbind(-1)), [values(3, 2)]),
}
# nn activations and losses: the options that change the formula
EXTRA.update({
    "leaky relu, default slope": (lambda x: F.leaky_relu(x), [np.array([-1.0, -0.2, 0.3, 1.1])]),
    "elu, alpha 1": (lambda x: F.elu(x), [values(2, 3)]),
    "softplus, beta 1, threshold": (lambda x: F.softplus(x * 10, threshold=5.0), [values(2, 3)]),
    "relu6": (lambda x: F.relu6(x * 5), [values(2, 3)]),
    "smooth l1, mean and none": (lambda x, t: F.smooth_l1_loss(x, t) + F.smooth_l1_loss(x, t, reduction="none"),
                                 [values(2, 3), values(2, 3)]),
    "huber, sum and weight": (lambda x, t: F.huber_loss(x, t, reduction="sum") + F.huber_loss(
        x, t, weight=gv.tensor(positive(2, 3), dtype=gv.float64)), [values(2, 3), values(2, 3)]),
    "l1 and kl": (lambda x, t: F.l1_loss(x, t) + F.kl_div(x, t.softmax(1), reduction="batchmean")
                  + F.kl_div(x, t, reduction="sum", log_target=True), [values(2, 3), values(2, 3)]),
    "embedding, padding and frequency": (lambda w: F.embedding(gv.tensor([0, 2, 2, 1]), w, padding_idx=1,
                                                               scale_grad_by_freq=True), [values(4, 3)]),
    "layer norm, no affine, two dims": (lambda x: F.layer_norm(x, (2, 3)), [values(2, 2, 3)]),
    "layer norm, weight only": (lambda x, w: F.layer_norm(x, (3,), w), [values(2, 3), values(3)]),
    "cosine similarity": (lambda x, y: F.cosine_similarity(x, y), [values(2, 3), values(2, 3)]),
    "batch norm, eval, no affine": (lambda x: F.batch_norm(x, gv.tensor([0.1, -0.2, 0.3], dtype=gv.float64),
                                                           gv.tensor([1.5, 0.5, 2.0], dtype=gv.float64)),
                                    [values(4, 3)]),
    "batch norm, eval, affine, 3-d": (lambda x, w, b: F.batch_norm(
        x, gv.tensor([0.1, -0.2, 0.3], dtype=gv.float64), gv.tensor([1.5, 0.5, 2.0], dtype=gv.float64), w, b),
        [values(2, 3, 2), values(3), values(3)]),
    "batch norm, training, weight only": (lambda x, w: F.batch_norm(x, None, None, w, training=True),
                                          [values(5, 3), values(3)]),
    "selu, celu and in-place selu": (lambda x: F.selu(x) + F.celu(x) + F.selu(x * 1, inplace=True) * 2,
                                     [values(2, 3)]),
    "selu and celu twice": (lambda x: _gradient_of(lambda z: (F.selu(z) ** 2 + F.celu(z, 0.5) ** 2).sum(), x),
                            [values(2, 3)]),
    "prelu, one slope, 3-d": (lambda x, a: F.prelu(x, a), [values(2, 3, 2), positive(1)]),
    "gelu, elu and softplus twice": (lambda x: _gradient_of(lambda z: (F.gelu(z) * F.elu(z, 0.5)
                                                                      + F.gelu(z, approximate="tanh") ** 2
                                                                      + F.softplus(z * 3, beta=2, threshold=4) ** 2).sum(),
                                                            x), [values(2, 3)]),
    "silu, leaky relu, relu6 and pad twice": (lambda x: _gradient_of(lambda z: (F.silu(z) * F.leaky_relu(z, 0.3)
                                                                              + F.relu6(z * 4) ** 2).sum()
                                                                    + (F.pad(z, (1, -1)) ** 3).sum(), x),
                                              [values(2, 3)]),
})
# the wider tensor API: options its formulas read
EXTRA.update({
    "index_add alpha, scatter_add into a leaf": (lambda x, s: x.index_add(0, gv.tensor([2, 0]), s, alpha=2.5)
                                                  + x.scatter_add(1, gv.tensor([[0, 2, 2], [1, 1, 0]]), s[:2]),
                                                  [values(3, 3), values(2, 3)]),
    "scatter a tensor into a leaf": (lambda x, s: x.scatter(0, gv.tensor([[1, 0, 2]]), s) * x, [values(3, 3), values(1, 3)]),
    "var, std, logsumexp keepdim": (lambda x: x.var(0, keepdim=True) + x.std(1, keepdim=True, correction=0)
                                    + x.logsumexp((0, 1), keepdim=True), [values(2, 3)]),
})


def _gradient_of(f, x):
    """∂f/∂x recorded with create_graph=True: a tensor whose graph holds the backward pass's ops."""
    gradient, = gv.autograd.grad(f(x), x, create_graph=True)
    return gradient


def _programs():
    for name, (function, arrays) in sorted(CASES.items()):
        yield name, function, arrays
    for name, (function, arrays) in EXTRA.items():
        yield name, function, arrays


PROGRAMS = list(_programs())


def _checked_nodes(out) -> set:
    """Evaluate the formula of every input of every step of ``out``'s backward; the names checked."""
    weights = gv.tensor(RNG.uniform(0.5, 1.5, size=tuple(out.shape)), dtype=out.dtype)
    checked = set()
    for step in backward_steps(out, weights, retain_graph=True, dry_run=True):
        arriving = [None if g is None else to_numpy(g) for g in step.grad_outputs]  # one per output of the node
        if step.is_accumulate:
            before = 0 if step.grad_before is None else to_numpy(step.grad_before)
            got = gradient_sent(step.node, 0, arriving, (tuple(arriving[0].shape),))
            np.testing.assert_allclose(got - before, to_numpy(step.grad_after) - before, rtol=1e-12)
            checked.add(step.name)
            continue
        shapes = tuple(None if g is None else tuple(g.shape) for g in step.grad_inputs)
        for slot, sent in enumerate(step.grad_inputs):
            if sent is None:
                continue
            got = gradient_sent(step.node, slot, arriving, shapes)
            tolerance = 1e-5 if step.name == "ToCopyBackward0" or to_numpy(sent).dtype != np.float64 else 1e-9
            np.testing.assert_allclose(got, to_numpy(sent), rtol=tolerance, atol=tolerance,
                                       err_msg=f"{step.name}, input {slot}")
        checked.add(step.name)
    return checked


@pytest.mark.parametrize("name, function, arrays", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_formula_evaluates_to_what_backward_sent(name, function, arrays):
    inputs = [gv.tensor(array, dtype=gv.float64, requires_grad=True) for array in arrays]
    out = function(*inputs)
    checked = _checked_nodes(out)
    if name in CASES:
        assert name in {n.replace("torch::autograd::", "") for n in checked}, f"{name} never ran"


def test_every_op_class_has_a_learner_formula_per_input():
    missing = []
    for cls in registry():
        name = getattr(cls, "qualified_name", cls.__name__)
        entry = TABLE.get(name)
        if entry is None:
            missing.append(name)
    assert not missing, f"ops without a learner formula: {missing}"


def test_every_op_formula_names_every_input():
    """Each op's rules cover its inputs, for the call each gradient-check program makes."""
    seen = {}
    for name, function, arrays in PROGRAMS:
        out = function(*[gv.tensor(a, dtype=gv.float64, requires_grad=True) for a in arrays])
        stack, visited = [out.grad_fn], set()
        while stack:
            node = stack.pop()
            if node is None or id(node) in visited:
                continue
            visited.add(id(node))
            stack.extend(n for n, _ in node.next_functions)
            if hasattr(type(node), "inputs"):
                inputs = [f.input for f in formulas_for(node)]
                assert inputs == list(type(node).inputs), f"{node_name(node)}: {inputs}"
                seen[node_name(node)] = True
    every = {getattr(cls, "qualified_name", cls.__name__) for cls in registry()}
    assert every <= set(seen), f"never built: {sorted(every - set(seen))}"


def test_formula_is_specialised_to_the_call():
    """Weight and pos_weight appear only when given; /n only for reduction='mean'; alpha only when not 1."""
    def text(tree) -> str:
        return tree.get("text", "") + "".join(text(child) for child in tree.get("children", []))

    def formula_text(out, slot=0) -> str:
        return text(formulas_for(out.grad_fn)[slot].math)

    z = gv.tensor([0.5, -1.0, 2.0], requires_grad=True)
    target = gv.tensor([1.0, 0.0, 1.0])
    plain = formula_text(F.binary_cross_entropy_with_logits(z, target))
    assert "weight" not in plain and "pos_weight" not in plain and "3" in plain  # /n with n = 3
    weighted = formula_text(F.binary_cross_entropy_with_logits(z, target, weight=gv.tensor([1.0, 2.0, 3.0]),
                                                               pos_weight=gv.tensor([2.0, 2.0, 2.0]), reduction="sum"))
    assert "weight" in weighted and "pos_weight" in weighted
    assert formula_text(gv.add(z, z, alpha=1), 1).endswith("∂L∂z·1")
    assert "2.5" in formula_text(gv.add(z, z, alpha=2.5), 1)


def test_mathml_tree_holds_text_only_and_known_tags():
    """Labels that look like markup or LaTeX stay text: the tree has no other way to carry them."""
    expr = sin(Var("self", "</math><script>alert(1)</script>")) * Var("other", r"\frac{a}{b}")
    tree = to_mathml_json(expr)

    def walk(node):
        assert node["tag"] in TAGS
        assert set(node) <= {"tag", "text", "children", "var", "sym"}
        for child in node.get("children", []):
            walk(child)

    walk(tree)
    assert r"\frac{a}{b}" in json.dumps(tree)
    assert evaluate(expr, {"self": np.float64(0.5), "other": np.float64(2.0)}) == pytest.approx(2 * np.sin(0.5))


def test_trace_carries_the_numbers_of_each_step():
    """At CosBackward0 with x = 4: the arriving gradient, x and the local derivative -sin 4."""
    x = gv.tensor(4.0, requires_grad=True)
    y = x.cos() * 3
    graph = graph_of(y, {"x": x})
    trace = trace_of(y, graph)
    cos_step = next(step for step in trace if step["name"] == "CosBackward0")
    numbers = cos_step["numbers"][0]
    assert numbers == {"local": {"shape": [], "dtype": "float32", "preview": f"{-np.sin(4.0):.4f}"}, "summed": False}
    saved = {item.name: item.value.preview for item in graph.node(cos_step["node"]).saved}
    assert saved == {"self": "4."} and cos_step["grad_outputs"][0]["preview"] == "3."


def test_trace_says_when_broadcasting_summed_a_gradient():
    x = gv.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = gv.tensor([0.5, 2.0], requires_grad=True)
    y = (x * b).sum()
    mul_step = next(step for step in trace_of(y, graph_of(y)) if step["name"] == "MulBackward0")
    assert [n["summed"] for n in mul_step["numbers"]] == [False, True]


@pytest.mark.filterwarnings("ignore:divide by zero", "ignore:invalid value")
def test_nan_and_inf_show_as_such():
    x = gv.tensor([0.0, -1.0], requires_grad=True)
    y = x.log().sum()
    trace = trace_of(y, graph_of(y))
    log_step = next(step for step in trace if step["name"] == "LogBackward0")
    assert "inf" in log_step["numbers"][0]["local"]["preview"]  # 1/x at x = 0
    assert "nan" in trace_of(x.sqrt().log().sum(), graph_of(x.sqrt().log().sum()))[1]["numbers"][0]["local"]["preview"]


def test_graph_json_writes_each_formula_once():
    layers = [gv.nn.Linear(4, 4) for _ in range(20)]
    x = gv.randn(2, 4)
    for layer in layers:
        x = layer(x).relu()
    data = graph_of(x.sum()).to_dict()
    assert len(data["formulas"]) < 8
    assert all(node["formula"] is None or isinstance(node["formula"], int) for node in data["nodes"])


# ------------------------------------------------------------------ torch graphs show the same formulas
TORCH_PROGRAMS = {
    "mlp with bce logits": lambda torch: _torch_mlp(torch),
    "unary": lambda torch: (lambda x: (x.sin() * x.cos() + x.exp().log() - x.tanh() / x.sigmoid()).abs().sqrt().sum())(
        torch.tensor([0.3, 1.2, 2.0], dtype=torch.float64, requires_grad=True)),
    "softmax, cross entropy, mse": lambda torch: _torch_losses(torch),
    "shapes and indexing": lambda torch: _torch_shapes(torch),
    "pow, div, max": lambda torch: (lambda a, b: ((a ** 2) / b + b ** a + 2.0 ** a - a.max() + torch.maximum(a, b)).sum())(
        torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True),
        torch.tensor([1.2, 0.7], dtype=torch.float64, requires_grad=True)),
    "second order and pieces": lambda torch: _torch_second_order(torch),
}


def _torch_mlp(torch):
    x = torch.tensor(values(4, 3))
    w1 = torch.tensor(values(3, 5), requires_grad=True)
    b1 = torch.tensor(values(5), requires_grad=True)
    w2 = torch.tensor(values(5, 1), requires_grad=True)
    hidden = torch.relu(x @ w1 + b1)
    logits = torch.nn.functional.linear(hidden, w2.t()).squeeze(1)
    return torch.nn.functional.binary_cross_entropy_with_logits(
        logits, torch.tensor([1.0, 0.0, 1.0, 1.0], dtype=torch.float64), pos_weight=torch.tensor([2.0], dtype=torch.float64))


def _torch_losses(torch):
    x = torch.tensor(values(3, 4), requires_grad=True)
    y = torch.nn.functional.cross_entropy(x, torch.tensor([1, 0, 3]), weight=torch.tensor([1.0, 2.0, 0.5, 1.0],
                                                                                          dtype=torch.float64))
    return y + torch.nn.functional.mse_loss(torch.softmax(x, 1), torch.zeros(3, 4, dtype=torch.float64))


def _torch_shapes(torch):
    x = torch.tensor(values(2, 3, 4), requires_grad=True)
    y = x.permute(2, 0, 1).reshape(4, 6).t()[1:, ::2]
    z = torch.cat([y, y[:, :1] * 2], 1).unsqueeze(0).expand(2, 5, 3).sum(0)
    picked = z[torch.tensor([0, 2, 2])].index_select(1, torch.tensor([2, 0])).mean(1, keepdim=True)
    return (picked * torch.stack([picked, picked], 0).sum(0)).sum() + x.transpose(0, 1)[1].norm()


def _torch_second_order(torch):
    """A gradient recorded with create_graph=True, then cut into pieces that are used differently."""
    x = torch.tensor(values(3, 4), requires_grad=True)
    y = x * 1
    loss = ((y.tanh() + y.sigmoid() * y.relu()).sum() + torch.nn.functional.mse_loss(y * y, torch.ones(3, 4, dtype=torch.float64))
            + (y[1] ** 3).sum() + (y[:, 1:3] ** 2).sum())
    gradient, = torch.autograd.grad(loss, x, create_graph=True)
    a, _, c = gradient.split([1, 2, 1], dim=-1)
    first, _, third = gradient.unbind(0)
    return (a * c).sum() + (first * third).sum() + gradient.split(2)[1].sum()


def _torch_nn_layers(torch):
    """The nn activations, losses and layers, on torch's own nodes."""
    F = torch.nn.functional
    x = torch.tensor(values(2, 3), requires_grad=True)
    table = torch.tensor(values(4, 3), requires_grad=True)
    w, b = torch.tensor(values(3), requires_grad=True), torch.tensor(values(3), requires_grad=True)
    rows = F.embedding(torch.tensor([[0, 2], [2, 3]]), table, padding_idx=3, scale_grad_by_freq=True).sum(1)
    h = F.layer_norm(rows + x, (3,), w, b)
    h = F.gelu(h) + F.gelu(h, approximate="tanh") + F.silu(h) + F.leaky_relu(h, 0.2) + F.elu(h, 0.5)
    h = F.softplus(h, beta=2, threshold=1) + F.hardtanh(h, -0.5, 0.5) + F.relu6(h * 5)
    h = F.selu(h) + F.celu(h, 0.5) + F.logsigmoid(h) + F.mish(h) + F.hardswish(h * 4) + F.hardsigmoid(h * 4)
    h = F.prelu(h, torch.tensor(values(3), requires_grad=True)) + F.elu(h * 1, inplace=True)
    target = torch.tensor(values(2, 4), requires_grad=True)
    h = torch.nn.functional.batch_norm(h, None, None, w, b, training=True)
    padded = F.pad(h, (1, 0, 0, 0), value=0.5)
    return F.smooth_l1_loss(padded, target, beta=0.5) + F.huber_loss(padded, target, delta=0.3, reduction="sum")


TORCH_PROGRAMS["nn activations, losses and layers"] = _torch_nn_layers


@pytest.mark.parametrize("name", sorted(TORCH_PROGRAMS))
def test_torch_formula_evaluates_to_what_torch_sent(name):
    torch = pytest.importorskip("torch")
    out = TORCH_PROGRAMS[name](torch)
    checked = set()
    unknown = set()
    for step in backward_steps(out, retain_graph=True, dry_run=True):
        if step.name not in TABLE:
            unknown.add(step.name)
            continue
        arriving = [None if g is None else to_numpy(g) for g in step.grad_outputs]
        if step.is_accumulate:
            continue
        shapes = tuple(None if g is None else tuple(g.shape) for g in step.grad_inputs)
        for slot, sent in enumerate(step.grad_inputs):
            if sent is not None:
                np.testing.assert_allclose(gradient_sent(step.node, slot, arriving, shapes), to_numpy(sent),
                                           rtol=1e-9, atol=1e-12, err_msg=f"{step.name}, input {slot}")
        checked.add(step.name)
    assert not unknown, f"torch nodes without a learner formula: {sorted(unknown)}"
    assert len(checked) >= 4


def test_torch_trace_carries_the_same_numbers():
    torch = pytest.importorskip("torch")
    x = torch.tensor(4.0, requires_grad=True)
    y = x.cos() * 3
    graph = graph_of(y, {"x": x})
    cos_step = next(step for step in trace_of(y, graph) if step["name"] == "CosBackward0")
    assert cos_step["numbers"][0]["local"]["preview"] == f"{-np.sin(4.0):.4f}"
    node = graph.node(cos_step["node"])
    assert [f.input for f in node.formula] == ["self"] and node.formula == formulas_for(x.cos().grad_fn)


def test_small_tensors_carry_all_their_values():
    x = gv.arange(20.0).reshape(4, 5).requires_grad_()
    y = (x.sin() * 2).sum()
    sin_step = next(step for step in trace_of(y, graph_of(y)) if step["name"] == "SinBackward0")
    assert sin_step["grad_inputs"][0]["full"].count(",") == 19
    assert sin_step["numbers"][0]["local"]["full"].count(",") == 19
    assert "full" not in trace_of(y, graph_of(y))[0]["grad_outputs"][0]  # a scalar is shown whole anyway


def test_every_name_a_note_mentions_is_one_its_formula_shows():
    """``{self:x}`` in a note becomes the label the formula's own ``sym`` gets in the panel, so a
    note can only mention names that its formula (or the node's output) carries."""
    import re

    from gradviz.snapshot.formula_table import TABLE

    mentioned = 0
    for name, entry in TABLE.items():
        for options in option_samples(entry):
            try:
                rules = entry.build(options)
            except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError):
                continue
            for input_name, rule in rules.items():
                for token in re.findall(r"\{(\w+):[^{}:]+\}", rule.note or ""):
                    mentioned += 1
                    assert token in symbols_of(rule) | {input_name, "result"}, (name, token, rule.note)
                assert "{" not in re.sub(r"\{\w+:[^{}:]+\}", "", rule.note or ""), (name, rule.note)
    assert mentioned >= 6


def option_samples(entry) -> list:
    """A few option dicts an entry may be built with (the formula suite builds the real ones)."""
    base = {option: None for option in entry.options} | {tensor: None for tensor in entry.present}
    sized = {key: (2, 3) for key in entry.present}
    samples = []
    for reduction in (0, 1):
        for ord_ in (2, 1):
            samples.append(base | sized | {"reduction": reduction, "ord": ord_, "dim": 1, "keepdim": False,
                                           "ignore_index": -100, "size": (2,), "stride": (1,), "storage_offset": 0})
    return samples


def symbols_of(rule) -> set:
    from gradviz.snapshot.math import to_mathml_json

    found, stack = set(), [to_mathml_json(rule.expression)]
    while stack:
        tree = stack.pop()
        if tree.get("sym"):
            found.add(tree["sym"])
        stack.extend(tree.get("children", ()))
    return found


def test_a_complex_steps_local_derivative_keeps_its_imaginary_part(torch):
    """``z * conj(z)``: the local derivative for z is conj(z), complex; casting it to float would
    print numpy's ComplexWarning into the notebook and show only its real part."""
    import warnings

    from gradviz.snapshot import graph_of, trace_of

    z = torch.tensor([1 + 2j, -0.5 + 1j], requires_grad=True)
    loss = (z * z.conj()).real.sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = trace_of(loss, graph_of(loss, {"z": z, "loss": loss}))
    mul = next(step for step in trace if step["name"] == "MulBackward0")
    local = mul["numbers"][0]["local"]
    assert local["dtype"].startswith("complex") and "j" in local["preview"], local
