"""``torch.autograd.Function``: users' own ops, compared with PyTorch 2.13 running the same code.

The examples are written in the style of PyTorch's docs (a ReLU, a Legendre polynomial, exp saving
its output, an in-place op, two outputs, ``once_differentiable``); each runs in both libraries and
every tensor it leaves (values, grads, the grad_fn graph) and everything it prints must agree.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from orders import torch_order  # noqa: E402
from parity import assert_same, assert_same_error, run_both  # noqa: E402

X = "x = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)\n"

MY_RELU = """
class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input
"""

LEGENDRE = """
class LegendreP3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)
"""

EXP = """
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result
"""

SCALE_IN_PLACE = """
class ScaleInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
"""

SPLIT_SIGN = """
class SplitSign(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0), x.clamp(max=0)

    @staticmethod
    def backward(ctx, grad_positive, grad_negative):
        x, = ctx.saved_tensors
        return torch.where(x > 0, grad_positive, grad_negative)
"""

SCALE_SETUP_CONTEXT = """
class Scale(torch.autograd.Function):
    @staticmethod
    def forward(x, factor):
        return x * factor

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, factor = inputs
        ctx.factor = factor

    @staticmethod
    def backward(ctx, grad):
        print("needs", ctx.needs_input_grad)
        return grad * ctx.factor, None
"""

ONCE = """
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        print("grad mode in backward:", torch.is_grad_enabled())
        return 2 * x * grad
"""

PROGRAMS = {
    "relu": X + MY_RELU + "y = MyReLU.apply(x * 2)\nprint(y)\nz = y.sum()\nz.backward()\nprint(x.grad)\n",
    "relu_names": X + MY_RELU + "y = MyReLU.apply(x)\nprint(y.grad_fn.name(), type(y.grad_fn).__name__)\n"
                                "print(y.grad_fn.next_functions[0][0].name())\n",
    "legendre": X + LEGENDRE + "y = LegendreP3.apply(x)\n(y * torch.tensor([1., 2., 3.])).sum().backward()\n",
    "exp_saves_output": X + EXP + "y = Exp.apply(x)\nprint(y, y.grad_fn.saved_tensors[0].grad_fn is y.grad_fn)\n"
                                  "y.sum().backward()\n",
    "in_place": X + SCALE_IN_PLACE + "c = x.clone()\nd = ScaleInPlace.apply(c)\nprint(d is c, c._version)\n"
                                     "(d * d).sum().backward()\n",
    "two_outputs": X + SPLIT_SIGN + "p, n = SplitSign.apply(x)\nprint(p.output_nr, n.output_nr, p.grad_fn is n.grad_fn)\n"
                                    "(p * 3 + n).sum().backward()\n",
    "one_output_used": X + SPLIT_SIGN + "p, n = SplitSign.apply(x)\np.sum().backward()\n",
    "setup_context": X + SCALE_SETUP_CONTEXT + "y = Scale.apply(x, 3.0)\ny.sum().backward()\n",
    "non_tensor_and_none": X + """
w = torch.tensor([0.5, 1.0, 1.5], requires_grad=True)
class Weighted(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, power):
        ctx.save_for_backward(x, w)
        ctx.power = power
        return x ** power * w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        print("needs", ctx.needs_input_grad)
        return grad * ctx.power * x ** (ctx.power - 1) * w, None, None
y = Weighted.apply(x, w, 2)
y.sum().backward()
""",
    "materialize_off": X + """
class Two(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        print("second gradient:", g2)
        return g1 * 2
a, b = Two.apply(x)
a.sum().backward()
""",
    "materialize_on": X + """
class Two(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        print("second gradient:", g2)
        return g1 * 2 + g2 * 3
a, b = Two.apply(x)
a.sum().backward()
""",
    "non_differentiable": X + """
class MaxAndIndex(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        index = x.argmax()
        ctx.mark_non_differentiable(index)
        ctx.save_for_backward(x, index)
        return x.max(), index

    @staticmethod
    def backward(ctx, grad, grad_index):
        x, index = ctx.saved_tensors
        result = torch.zeros_like(x)
        result[index] = grad
        return result
value, index = MaxAndIndex.apply(x)
print(index.requires_grad, index.grad_fn)
value.backward()
""",
    "no_grad_input": """
x = torch.tensor([1.0, 2.0])
""" + LEGENDRE + "y = LegendreP3.apply(x)\nprint(y.requires_grad, y.grad_fn)\n",
    "under_no_grad": X + LEGENDRE + "with torch.no_grad():\n    y = LegendreP3.apply(x)\nprint(y.requires_grad)\n",
    "returns_input": X + """
class Identity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 1
y = Identity.apply(x)
print(y is x, y._base is x)
(y * 2).sum().backward()
""",
    "broadcast_gradient_is_summed": X + """
class Spread(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad.expand(4, 3)
y = Spread.apply(x)
y.sum().backward()
""",
    "once_differentiable_first_order": X + ONCE + "y = Square.apply(x)\ny.sum().backward()\n",
    "legendre_second_order": X + LEGENDRE + """
y = LegendreP3.apply(x)
g, = torch.autograd.grad(y.sum(), x, create_graph=True)
print(g)
g.sum().backward()
""",
    "exp_second_order": X + EXP + """
y = Exp.apply(x)
g, = torch.autograd.grad(y.sum(), x, create_graph=True)
g.sum().backward()
""",
    "polynomial_fit_with_p3": LEGENDRE + """
x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)
a = torch.full((), 0.0, requires_grad=True)
b = torch.full((), -1.0, requires_grad=True)
c = torch.full((), 0.0, requires_grad=True)
d = torch.full((), 0.3, requires_grad=True)
for step in range(40):
    y_pred = a + b * LegendreP3.apply(c + d * x)
    loss = (y_pred - y).pow(2).sum()
    if step % 10 == 0:
        print(step, round(loss.item(), 3))
    loss.backward()
    with torch.no_grad():
        for p in (a, b, c, d):
            p -= 5e-6 * p.grad
            p.grad = None
""",
    "once_differentiable_graph": X + ONCE + """
y = Square.apply(x)
g, = torch.autograd.grad(y.sum() * y.sum(), x, create_graph=True)
print(g.grad_fn.name(), g.grad_fn.next_functions[0][0].name())
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_custom_function_matches_torch(name):
    assert_same(PROGRAMS[name])


ERRORS = {
    "too_many_gradients": X + """
class Bad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad, grad
Bad.apply(x).sum().backward()
""",
    "too_few_gradients": X + """
class Bad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        return x * k

    @staticmethod
    def backward(ctx, grad):
        return grad
Bad.apply(x, 3).sum().backward()
""",
    "gradient_for_a_number": X + """
class Bad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        return x * k

    @staticmethod
    def backward(ctx, grad):
        return grad * 2, grad
Bad.apply(x, 3).sum().backward()
""",
    "wrong_shape": X + """
class Bad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return torch.ones(4)
Bad.apply(x).sum().backward()
""",
    "save_a_number": X + """
class Bad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(3)
        return x
Bad.apply(x)
""",
    "saved_tensors_after_backward": X + LEGENDRE + "y = LegendreP3.apply(x)\ny.sum().backward()\ny.grad_fn.saved_tensors\n",
    "backward_twice": X + LEGENDRE + "y = LegendreP3.apply(x)\ny.sum().backward()\ny.sum().backward()\n",
    "saved_then_modified": X + LEGENDRE + "b = x * 1\ny = LegendreP3.apply(b)\nb.add_(1)\ny.sum().backward()\n",
    "dirty_leaf": X + SCALE_IN_PLACE + "ScaleInPlace.apply(x)\n",
    "no_forward": X + "torch.autograd.Function.apply(x)\n",
    "once_differentiable_twice": X + ONCE + """
y = Square.apply(x)
g, = torch.autograd.grad(y.sum() * y.sum(), x, create_graph=True)
g.sum().backward()
""",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_custom_function_errors_match_torch(name):
    assert_same_error(ERRORS[name])


def test_node_prints_as_torch_prints_it():
    (scope_t, out_t), (scope_g, out_g) = run_both(X + MY_RELU + "y = MyReLU.apply(x)\nprint(y.grad_fn)\n")
    assert out_g.split(" at 0x")[0] == out_t.split(" at 0x")[0] == "<torch.autograd.function.MyReLUBackward object"


def test_custom_node_steps_in_torch_order(torch):
    (scope_t, _), (scope_g, _) = run_both(X + LEGENDRE + MY_RELU + "y = (MyReLU.apply(x) + LegendreP3.apply(x * 2)).sum()\n")
    expected = torch_order(scope_t["y"])
    assert [step.name for step in gv.autograd.backward_steps(scope_g["y"])] == expected


class ClampedReLU(gv.autograd.Function):
    """A custom Function defined in this file, so that its source can be read back."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * (input > 0).float()


def test_a_custom_node_shows_in_the_graph_under_its_class_name_with_its_backward_as_code():
    x = gv.tensor([1.0, -2.0], requires_grad=True)
    graph = gv.graph(ClampedReLU.apply(x).sum())
    node = next(n for n in graph.nodes if n.name == "ClampedReLUBackward")
    assert node.kind == "function" and node.formula == ()
    assert node.code.lstrip().startswith("@staticmethod") or node.code.lstrip().startswith("def backward")
    assert "grad_output * (input > 0).float()" in node.code
    assert node.to_dict()["code"] == node.code
    assert [s.name for s in node.saved] == ["saved_tensors[0]"]
    assert all(n.code is None for n in graph.nodes if n.name != "ClampedReLUBackward")


def test_ops_cannot_subclass_the_user_facing_function_by_mistake():
    with pytest.raises(TypeError, match="OpFunction"):
        type("MulBackward9", (gv.autograd.Function,), {"__module__": "gradviz.ops.arithmetic"})
