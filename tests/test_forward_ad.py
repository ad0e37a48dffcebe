"""Forward-mode AD (``torch.autograd.forward_ad``), compared with PyTorch 2.13 running the same lines.

What each snippet prints (dual tensors with their ``tangent=``, the unpacked primal and tangent,
grad_fn names) must be torch's text exactly, and every tensor it leaves must agree with torch's
(values, requires_grad, graph). Errors are torch's type and message. The tangents are also checked
against gradviz's own reverse-mode ``functional.jvp`` on random programs, and against central
differences.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from gradviz.autograd import forward_ad  # noqa: E402
from parity import assert_same, assert_same_error, run_both, mask  # noqa: E402
from programs import random_programs, run_program  # noqa: E402


pytestmark = pytest.mark.usefixtures("no_dual_level_left")


HEAD = ("fwAD = torch.autograd.forward_ad\n"
        "x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])\n"
        "v = torch.tensor([[1.0, 0.5, -2.0], [0.0, 1.0, 0.25]])\n"
        "w = torch.tensor([[0.3, 0.2], [-0.4, 1.0], [0.6, -0.1]])\n"
        "b = torch.tensor([0.1, -0.2, 0.3])\n")


def dual_program(body: str) -> str:
    """``body`` (one expression of the dual ``d``) run in a dual level; the result, its primal and tangent printed."""
    return (HEAD + "with fwAD.dual_level():\n"
            "    d = fwAD.make_dual(x, v)\n"
            f"    out = {body}\n"
            "    print(out)\n"
            "    p, t = fwAD.unpack_dual(out)\n"
            "    print(p, t)\n"
            "    print(fwAD.unpack_dual(out))\n"
            "print(out)\n"
            "print(fwAD.unpack_dual(out))\n")


# ops a tutorial uses: tangents from the written rules (linear and product ops) and from the double-vjp trick
EXPRESSIONS = {
    "add": "d + x", "add_broadcast": "d + b", "add_number": "d + 2", "add_alpha": "torch.add(x, d, alpha=3)",
    "sub": "x - d", "rsub": "1 - d", "mul": "d * x", "mul_self": "d * d", "mul_number": "d * 3",
    "mul_broadcast": "b * d", "div": "d / (x + 3)", "div_number": "d / 4", "rdiv": "1 / (d + 3)",
    "neg": "-d", "pow": "d ** 2", "pow_float": "(d + 2) ** 1.5", "exp": "d.exp()", "log": "(d + 2).log()",
    "sin": "d.sin()", "cos": "d.cos()", "tanh": "torch.tanh(d)", "sigmoid": "torch.sigmoid(d)",
    "relu": "torch.relu(d)", "sqrt": "(d + 2).sqrt()", "abs": "d.abs()", "clamp": "d.clamp(-0.5, 1.0)",
    "gelu": "F.gelu(d)", "silu": "F.silu(d)", "softplus": "F.softplus(d)", "leaky_relu": "F.leaky_relu(d, 0.1)",
    "sum": "d.sum()", "sum_dim": "d.sum(0)", "sum_keepdim": "d.sum(1, keepdim=True)", "mean": "d.mean()",
    "mean_dim": "d.mean(1)", "max": "d.max()", "max_dim": "d.max(1)[0]", "amax": "d.amax(0)",
    "mm": "d.mm(w)", "mm_right": "w.t().mm(d.t())", "matmul": "d @ w", "matmul_vector": "d @ b",
    "mv": "d.mv(b)", "dot": "d[0].dot(b)", "bmm": "d.unsqueeze(0).bmm(w.unsqueeze(0))",
    "view": "d.view(3, 2)", "reshape": "d.reshape(-1)", "t": "d.t()", "transpose": "d.transpose(0, 1)",
    "permute": "d.permute(1, 0)", "unsqueeze": "d.unsqueeze(1)", "squeeze": "d[:1].squeeze(0)",
    "expand": "d[:1].expand(4, 3)", "flatten": "d.flatten()", "index": "d[1]", "slice": "d[:, 1:]",
    "fancy_index": "d[[1, 0, 1]]", "mask": "d[x > 0]", "clone": "d.clone()", "double": "d.double()",
    "cat": "torch.cat([d, x])", "cat_dim": "torch.cat([x, d], dim=1)", "stack": "torch.stack([d, x, d])",
    "softmax": "d.softmax(1)", "log_softmax": "F.log_softmax(d, dim=0)",
    "mse": "F.mse_loss(d, x.flip(0))", "cross_entropy": "F.cross_entropy(d, torch.tensor([2, 0]))",
    "nll": "F.nll_loss(F.log_softmax(d, 1), torch.tensor([1, 2]))",
    "linear": "F.linear(d, w.t(), torch.tensor([0.5, -0.5]))", "where": "torch.where(x > 0, d, d * 2)",
    "chain": "(d.sin() * x + d.exp().sum(0)).tanh().mean()",
    # ops whose backward is computed on arrays only: J v one backward pass per output element
    "logcumsumexp": "d.logcumsumexp(1)", "i0": "torch.special.i0(d)", "digamma": "torch.digamma(d + 3)",
}


# A 0-d tangent prints every digit of its float (torch's ``f"{tangent}"`` of a 0-d tensor is its item's
# repr), so float32 rounding that differs in the last bits shows in the text: for these the values are
# compared instead (and gelu's derivative at -0.75 cancels to 2e-4, where gradviz's reverse-mode gelu
# gradient already differs from torch's in the fifth digit, as does torch's own forward from its reverse).
ROUNDING = {"chain", "cross_entropy", "nll", "gelu"}


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_tangents_print_and_agree_with_torch(name):
    assert_same(dual_program(EXPRESSIONS[name]), printed=name not in ROUNDING)
    if name in ROUNDING:
        (scope_t, _), (scope_g, _) = run_both(dual_program(EXPRESSIONS[name]))
        np.testing.assert_allclose(scope_g["t"].numpy(), scope_t["t"].numpy(), rtol=2e-5, atol=2e-7)


GRAPHED = {"exp": "d.exp()", "sin": "d.sin()", "cos": "d.cos()", "tanh": "d.tanh()", "sigmoid": "d.sigmoid()",
           "relu": "d.relu()", "neg": "-d", "mul": "d * d", "add": "d + x", "sum": "d.sum()", "mm": "d.mm(d.t())",
           "view": "d.view(6)", "linear": "F.linear(d, d, b[:2])"}


@pytest.mark.parametrize("name", sorted(GRAPHED))
def test_tangent_of_a_primal_that_requires_grad_has_torchs_graph(name):
    """The written rules use torch's formulas with torch's ops, so the tangent's own grad_fn graph is torch's."""
    assert_same(HEAD + "xr = x.clone().requires_grad_()\n"
                "with fwAD.dual_level():\n"
                "    d = fwAD.make_dual(xr, v)\n"
                f"    out = {GRAPHED[name]}\n"
                "    p, t = fwAD.unpack_dual(out)\n"
                "    print(out, p, t)\n")


def test_split_chunk_unbind_give_each_piece_its_tangent():
    assert_same(HEAD + "with fwAD.dual_level():\n"
                "    d = fwAD.make_dual(x, v)\n"
                "    for piece in list(d.split(2, dim=1)) + list(d.chunk(2)) + list(d.unbind(1)):\n"
                "        print(piece)\n"
                "    s = torch.std_mean(d, 1)\n"
                "    print(s)\n")


def test_dual_of_a_tensor_that_requires_grad():
    """The dual is a ViewBackward0 view; the primal hangs from torch's Identity node; the tangent has a graph."""
    assert_same(HEAD + "xr = x.clone().requires_grad_()\n"
                "with fwAD.dual_level():\n"
                "    d = fwAD.make_dual(xr, v)\n"
                "    print(d)\n"
                "    p, t = fwAD.unpack_dual(d)\n"
                "    print(p, t, p.grad_fn.name())\n"
                "    out = (d * d).sum()\n"
                "    print(out, fwAD.unpack_dual(out))\n"
                "    out.backward()\n"
                "    g, = torch.autograd.grad(fwAD.unpack_dual(out).tangent, xr)\n"
                "print(xr.grad, g)\n")


def test_unpack_outside_and_inside_a_level():
    assert_same(HEAD + "print(fwAD.unpack_dual(x))\n"
                "with fwAD.dual_level() as level:\n"
                "    print(level)\n"
                "    u = fwAD.unpack_dual(x)\n"
                "    print(u, u.primal is x, u.primal._base is x, type(u).__name__, u._fields)\n"
                "    d = fwAD.make_dual(x, v)\n"
                "    print(d._base is x, fwAD.unpack_dual(d).tangent is v)\n"
                "    print(fwAD.unpack_dual(d, level=0))\n"
                "    y = x * 2\n"
                "print(fwAD.unpack_dual(d))\n"
                "level = fwAD.enter_dual_level()\n"
                "e = fwAD.make_dual(x, v)\n"
                "print(level, e)\n"
                "fwAD.exit_dual_level(level=level)\n"
                "print(e)\n")


def test_in_place_ops_carry_the_tangent():
    assert_same(HEAD + "with fwAD.dual_level():\n"
                "    base = x.clone()\n"
                "    d = fwAD.make_dual(base, v)\n"
                "    d.mul_(2)\n"
                "    print(d, base)\n"
                "    y = torch.zeros(2, 3)\n"
                "    y.add_(d)\n"
                "    print(y)\n"
                "    d.exp_()\n"
                "    print(fwAD.unpack_dual(d))\n")


def test_nn_module_with_dual_parameters():
    """The forward-AD tutorial's recipe: swap each parameter for a dual tensor, run the model, read the jvp."""
    (scope_t, out_t), (scope_g, out_g) = run_both(
        "fwAD = torch.autograd.forward_ad\n"
        "torch.manual_seed(0)\n"
        "model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))\n"
        "inputs = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])\n"
        "params = dict(model.named_parameters())\n"
        "tangents = {name: torch.ones_like(p) * 0.1 for name, p in params.items()}\n"
        "with fwAD.dual_level():\n"
        "    for name, p in params.items():\n"
        "        module_name, attr = name.split('.')\n"
        "        delattr(model[int(module_name)], attr)\n"
        "        setattr(model[int(module_name)], attr, fwAD.make_dual(p, tangents[name]))\n"
        "    out = model(inputs)\n"
        "    primal, jvp = fwAD.unpack_dual(out)\n"
        "    print(primal)\n"
        "    print(jvp.detach())\n")
    assert mask(out_g) == mask(out_t)
    np.testing.assert_allclose(scope_g["jvp"].detach().numpy(), scope_t["jvp"].detach().numpy(), rtol=1e-5, atol=1e-6)


CUSTOM = """
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.scale = scale
        return x ** 3 * scale

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * 3 * x ** 2 * ctx.scale, None

    @staticmethod
    def jvp(ctx, x_t, scale_t):
        x, = ctx.saved_tensors
        return x_t * 3 * x ** 2 * ctx.scale


class NoJvp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
"""


def test_custom_function_jvp():
    assert_same(HEAD + CUSTOM + "xr = x.clone().requires_grad_()\n"
                "with fwAD.dual_level():\n"
                "    out = Cube.apply(fwAD.make_dual(x, v), 2.0)\n"
                "    print(out, fwAD.unpack_dual(out))\n"
                "    y = Cube.apply(fwAD.make_dual(xr, v), 0.5)\n"
                "    print(y)\n"
                "    plain = NoJvp.apply(x)\n"
                "    print(plain)\n")


def test_tutorial_custom_function_with_ctx_attribute_and_layouts():
    """The forward-AD tutorial's shapes of use: a tangent stored as it is (or copied when its layout differs
    from the primal's), a Function whose jvp reads ``ctx.result`` and then deletes it, a double primal with a
    float tangent, and the tangent forgotten once the level is left."""
    assert_same(HEAD + """
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = torch.exp(foo)
        ctx.result = result
        return result

    @staticmethod
    def jvp(ctx, grad_input):
        grad_output = grad_input * ctx.result
        del ctx.result
        return grad_output

primal = x.double().requires_grad_()
tangent = v.t().contiguous()
with fwAD.dual_level():
    same = fwAD.make_dual(x, v)
    print(fwAD.unpack_dual(same).tangent is v)
    copied = fwAD.make_dual(x, tangent.t())
    t2 = fwAD.unpack_dual(copied).tangent
    print(t2.is_contiguous(), t2.stride(), t2)
    t3 = fwAD.unpack_dual(fwAD.make_dual(x.t(), tangent)).tangent
    print(t3.is_contiguous(), t3.stride(), t3)
    out = Exp.apply(fwAD.make_dual(primal, v))
    jvp = fwAD.unpack_dual(out).tangent
    print(out, jvp, hasattr(out.grad_fn, "result"))
    plain = torch.ones(2, 3)
    both = fwAD.make_dual(x, v) ** 2 + plain ** 2
print(fwAD.unpack_dual(both).tangent is None, both)
""")


ERRORS = {
    "no_level": "fwAD.make_dual(x, v)",
    "nested": "with fwAD.dual_level():\n    with fwAD.dual_level():\n        pass",
    "enter_twice": "fwAD.enter_dual_level()\nfwAD.enter_dual_level()",
    "exit_without_level": "fwAD.exit_dual_level()",
    "exit_wrong_level": "with fwAD.dual_level():\n    fwAD.exit_dual_level(level=3)",
    "wrong_size": "with fwAD.dual_level():\n    fwAD.make_dual(x, v[0])",
    "wrong_size_2d": "with fwAD.dual_level():\n    fwAD.make_dual(x, w)",
    "int_tangent": "with fwAD.dual_level():\n    fwAD.make_dual(x, v.long())",
    "int_primal": "with fwAD.dual_level():\n    fwAD.make_dual(x.long(), v)",
    "invalid_level": "with fwAD.dual_level():\n    fwAD.make_dual(x, v, level=3)",
    "invalid_unpack_level": "with fwAD.dual_level():\n    fwAD.unpack_dual(fwAD.make_dual(x, v), level=2)",
    "unpack_number": "with fwAD.dual_level():\n    fwAD.unpack_dual(3.0)",
    "dual_of_dual": "with fwAD.dual_level():\n    fwAD.make_dual(fwAD.make_dual(x, v), v)",
    "custom_without_jvp": CUSTOM + "with fwAD.dual_level():\n    NoJvp.apply(fwAD.make_dual(x, v))",
    "unique": "with fwAD.dual_level():\n    torch.unique(fwAD.make_dual(x, v))",
    "unique_dim": "with fwAD.dual_level():\n    torch.unique(fwAD.make_dual(x, v), dim=0)",
    "unique_consecutive": "with fwAD.dual_level():\n    torch.unique_consecutive(fwAD.make_dual(x, v))",
    "heaviside": "with fwAD.dual_level():\n    d = fwAD.make_dual(x, v)\n    torch.heaviside(d, d)",
    "scatter_reduce": ("with fwAD.dual_level():\n"
                       "    fwAD.make_dual(x, v).scatter(0, torch.tensor([[0, 1, 0]]), 1.0, reduce='add')"),
    "in_place_on_dual_leaf": ("xr = x.clone().requires_grad_()\n"
                              "with fwAD.dual_level():\n    fwAD.make_dual(xr, v)\n    xr.mul_(2)"),
    "backward_of_dual_without_grad": "with fwAD.dual_level():\n    fwAD.make_dual(x, v).sum().backward()",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    assert_same_error(HEAD + ERRORS[name])


def test_no_tangent_for_integer_results_and_no_error_for_histc():
    assert_same(HEAD + "with fwAD.dual_level():\n"
                "    d = fwAD.make_dual(x, v)\n"
                "    i = d.argmax()\n"
                "    c = d > 0\n"
                "    h = torch.histc(d, bins=4)\n"
                "    r = torch.round(d)\n"
                "    l = d.long()\n"
                "    print(i, c, h, r, l, d.detach())\n")


def test_tangent_with_its_own_dtype_and_under_no_grad():
    assert_same(HEAD + "with fwAD.dual_level():\n"
                "    d = fwAD.make_dual(x, v.double())\n"
                "    print(d, d * x, d + 1)\n"
                "    with torch.no_grad():\n"
                "        print(fwAD.make_dual(x.clone(), v) * x)\n")


# -- autograd.functional with strategy="forward-mode" ----------------------------------------------------
FUNCTIONAL = {
    "jacobian_tuple": ("torch.autograd.functional.jacobian(lambda a, c: (a.sin() * c, (a * c).sum()), (x[0], b), "
                       "strategy='forward-mode', vectorize=True)"),
    "jacobian_single": ("torch.autograd.functional.jacobian(lambda a: a.exp() @ w, x, strategy='forward-mode', "
                        "vectorize=True)"),
    "jacobian_tuple_inputs_only": ("torch.autograd.functional.jacobian(lambda a, c: a.softmax(0) * c, (b, x[1]), "
                                   "strategy='forward-mode', vectorize=True)"),
    "jacobian_unused_input": ("torch.autograd.functional.jacobian(lambda a, c: a * 2, (b, x[1]), "
                              "strategy='forward-mode', vectorize=True)"),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_forward_mode_jacobian_prints_as_torch(name):
    (scope_t, out_t), (scope_g, out_g) = run_both(HEAD + f"jac = {FUNCTIONAL[name]}\nprint(jac)\n")
    assert mask(out_g) == mask(out_t)


HESSIANS = {
    "single": "lambda a: (a.sin() * a).sum()",
    "matrix": "lambda a: (a @ w).tanh().sum()",
    "softmax": "lambda a: (a.softmax(1) * x).sum()",
}


@pytest.mark.parametrize("name", sorted(HESSIANS))
def test_forward_over_reverse_hessian_values_match_torch(name):
    """Values (signed zeros included) as torch's; torch's result also carries a stray ReshapeAliasBackward0
    grad_fn from its vmap, which gradviz's detached result does not."""
    code = HEAD + (f"h = torch.autograd.functional.hessian({HESSIANS[name]}, x, "
                   "outer_jacobian_strategy='forward-mode', vectorize=True)\n"
                   f"r = torch.autograd.functional.hessian({HESSIANS[name]}, x)\n")
    (scope_t, _), (scope_g, _) = run_both(code)
    np.testing.assert_allclose(scope_g["h"].numpy(), scope_t["h"].detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(scope_g["h"].numpy(), scope_g["r"].numpy(), rtol=1e-5, atol=1e-6)


def test_forward_over_reverse_hessian_of_two_inputs():
    code = HEAD + ("h = torch.autograd.functional.hessian(lambda a, c: (a.sin() * c * a).sum(), (x[0], b), "
                   "outer_jacobian_strategy='forward-mode', vectorize=True)\n")
    (scope_t, _), (scope_g, _) = run_both(code)
    assert isinstance(scope_g["h"], list) and all(isinstance(row, list) for row in scope_g["h"])
    for row_t, row_g in zip(scope_t["h"], scope_g["h"]):
        for block_t, block_g in zip(row_t, row_g):
            np.testing.assert_allclose(block_g.numpy(), block_t.detach().numpy(), rtol=1e-5, atol=1e-6)


# -- tangents against reverse mode, and against central differences --------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs(), st.lists(st.floats(-1.5, 1.5), min_size=12, max_size=12))
def test_forward_tangent_equals_reverse_mode_jvp(steps, numbers):
    """On random programs, the tangent forward AD carries out equals J v from reverse mode's double-vjp."""
    values = np.array(numbers, dtype=np.float64).reshape(4, 3)
    x, y, vx, vy = (gv.tensor(row) for row in values)

    def program(a, c):
        return run_program(gv, steps, a, c)

    _, expected = gv.autograd.functional.jvp(program, (x, y), (vx, vy))
    with forward_ad.dual_level():
        out = program(forward_ad.make_dual(x, vx), forward_ad.make_dual(y, vy))
        tangent = forward_ad.unpack_dual(out).tangent
    actual = 0.0 if tangent is None else tangent.item()
    np.testing.assert_allclose(actual, expected.item(), rtol=1e-9, atol=1e-9)


CENTRAL = {
    "exp": lambda a: a.exp(), "tanh": lambda a: a.tanh(), "softmax": lambda a: a.softmax(1),
    "log_softmax": lambda a: a.log_softmax(0), "mm": lambda a: a @ a.t(), "mul": lambda a: a * a.flip(0),
    "div": lambda a: a / (a * a + 1), "gelu": lambda a: gv.nn.functional.gelu(a),
    "mse": lambda a: gv.nn.functional.mse_loss(a, a.flip(1)),
    "cross_entropy": lambda a: gv.nn.functional.cross_entropy(a, gv.tensor([2, 0])),
    "norm": lambda a: a.norm(), "std": lambda a: a.std(1), "cumsum": lambda a: a.cumsum(1),
    "sort": lambda a: a.sort(1)[0], "prod": lambda a: a.prod(0), "logsumexp": lambda a: a.logsumexp(1),
    "addmm": lambda a: gv.addmm(a[:, :2], a, a.t()),
}


@pytest.mark.parametrize("name", sorted(CENTRAL))
def test_tangent_matches_central_differences(name):
    function = CENTRAL[name]
    x = gv.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=gv.float64)
    v = gv.tensor([[1.0, 0.5, -2.0], [0.0, 1.0, 0.25]], dtype=gv.float64)
    step = 1e-6
    numeric = (function(x + step * v) - function(x - step * v)) / (2 * step)
    with forward_ad.dual_level():
        tangent = forward_ad.unpack_dual(function(forward_ad.make_dual(x, v))).tangent
    np.testing.assert_allclose(tangent.numpy(), numeric.numpy(), rtol=1e-6, atol=1e-7)


def test_no_level_costs_no_table_and_leaving_forgets_tangents():
    x = gv.tensor([1.0, 2.0])
    with forward_ad.dual_level():
        d = forward_ad.make_dual(x, gv.ones(2))
        y = d * 3
        assert forward_ad.unpack_dual(y).tangent is not None
    assert forward_ad._tangents == {}
    from gradviz.autograd.function import _FORWARD_AD, OpFunction

    assert _FORWARD_AD[0] is None
    assert not forward_ad._swapped
    assert all(not getattr(klass.__dict__["apply"], "__func__", None).__name__ == "dual_apply"
               for klass in forward_ad._own_applies())
    assert forward_ad.unpack_dual(y).tangent is None and "tangent" not in repr(y)
    assert OpFunction.apply.__func__ is forward_ad._base_apply


def test_graph_with_duals_draws_as_without():
    """A graph whose tensors carry tangents draws and steps exactly as the same graph without them
    (``make_dual`` of a tensor that requires grad is a view: compared with ``x.view(x.shape)``)."""
    from gradviz.snapshot import graph_of, observe_all_steps

    def build(make):
        x = gv.tensor([1.0, -2.0, 0.5], requires_grad=True)
        d = make(x)
        return x, ((d * 2).sin() * d).sum()

    def drawn(loss):
        graph = graph_of(loss).to_dict()
        nodes = [(n["name"], n["label"], n["shape"], n["value"], n["formula"]) for n in graph["nodes"]]
        steps = [(s.node.name(), [None if g is None else np.asarray(g).tolist() for g in s.grad_inputs])
                 for s in observe_all_steps(loss)]
        return nodes, steps

    x, plain = build(lambda t: t.view(t.shape))
    expected = drawn(plain)
    with forward_ad.dual_level():
        x2, loss = build(lambda t: forward_ad.make_dual(t, gv.ones(3)))
        assert forward_ad.unpack_dual(loss).tangent is not None
        assert drawn(loss) == expected
        html = gv.to_html(loss)
    assert "SinBackward0" in html
    assert x2.grad is None and forward_ad.unpack_dual(loss).tangent is None  # observing wrote nothing
