"""Whole programs in the style of the autograd tutorials learners run (written here from the API, not copied):
the PyTorch docs' autograd-mechanics notes, "Learning PyTorch with examples", "A gentle introduction to
torch.autograd", the double-backward-with-custom-functions tutorial, micrograd's tests, d2l's autograd
chapter, and the things learners' scripts print. Each runs unchanged with ``torch`` bound to PyTorch 2.13
and to gradviz; what it prints, and every tensor it leaves (values, grads, graphs), must agree.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

PROGRAMS = {
    # -- autograd mechanics: in-place checks, retain_grad, hooks, grad modes ----------------------------------------
    "mechanics_saved_tensor_modified": """
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a.sigmoid()
c = b * 2
b.mul_(3)
try:
    c.sum().backward()
except RuntimeError as error:
    print(type(error).__name__, str(error)[:80])
d = a.exp()
e = d.sum()
print(d._version, e)
""",
    "mechanics_retain_grad_and_leaf": """
x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
y = x * 2
y.retain_grad()
z = (y ** 2).sum()
z.backward()
print(x.is_leaf, y.is_leaf, z.is_leaf, y.grad, x.grad, y.retains_grad, x.grad_fn, z.grad_fn)
w = torch.ones(2, requires_grad=True)
try:
    w.add_(1)
except RuntimeError as error:
    print(error)
""",
    "mechanics_tensor_hooks": """
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
seen = []
handle = x.register_hook(lambda grad: seen.append(grad.clone()))
y = x * x
y.register_hook(lambda grad: grad * 10)
y.sum().backward()
print(seen, x.grad)
handle.remove()
x.grad = None
(x * 3).sum().backward()
print(len(seen), x.grad)
""",
    "mechanics_node_hooks": """
x = torch.tensor([0.5, -1.0], requires_grad=True)
y = x.exp()
z = y.sum()
calls = []
def after(grad_inputs, grad_outputs):
    calls.append(("hook", [g.clone() for g in grad_inputs], [g.clone() for g in grad_outputs]))
def before(grad_outputs):
    calls.append(("prehook", [g.clone() for g in grad_outputs]))
    return (grad_outputs[0] * 2,)
y.grad_fn.register_hook(after)
y.grad_fn.register_prehook(before)
z.backward()
print(calls)
print(x.grad)
""",
    "mechanics_grad_modes": """
x = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.no_grad():
    y = x * 2
    with torch.enable_grad():
        z = x * 3
print(y.requires_grad, z.requires_grad, torch.is_grad_enabled())
with torch.set_grad_enabled(False):
    w = x + 1
print(w.requires_grad)
torch.set_grad_enabled(False)
v = x * x
torch.set_grad_enabled(True)
print(v.requires_grad, torch.is_grad_enabled())
@torch.no_grad()
def doubled(t):
    return t * 2
print(doubled(x).requires_grad)
with torch.inference_mode():
    u = x * 5
print(u.requires_grad, u.is_inference(), torch.is_inference_mode_enabled())
try:
    (u * x).sum().backward()
    print(x.grad)
except RuntimeError as error:
    print(error)
""",
    "mechanics_requires_grad_flags": """
a = torch.randn(2, 2)
b = a * 2
print(b.requires_grad)
a.requires_grad_()
c = (a * a).sum()
print(c.requires_grad, c.grad_fn)
d = c.detach()
print(d.requires_grad, d.grad_fn)
""",
    # -- learning PyTorch with examples ---------------------------------------------------------------------------
    "examples_polynomial_raw_tensors": """
import math
x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)
a = torch.tensor(0.1, requires_grad=True)
b = torch.tensor(-0.2, requires_grad=True)
c = torch.tensor(0.05, requires_grad=True)
d = torch.tensor(0.01, requires_grad=True)
learning_rate = 1e-4
for t in range(300):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, round(loss.item(), 3))
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None
print(f'Result: y = {a.item():.3f} + {b.item():.3f} x + {c.item():.3f} x^2 + {d.item():.3f} x^3')
""",
    "examples_legendre_custom_function": """
import math
class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)

x = torch.linspace(-math.pi, math.pi, 100)
y = torch.sin(x)
a = torch.full((), 0.0, requires_grad=True)
b = torch.full((), -1.0, requires_grad=True)
c = torch.full((), 0.0, requires_grad=True)
d = torch.full((), 0.3, requires_grad=True)
P3 = LegendrePolynomial3.apply
for t in range(200):
    y_pred = a + b * P3(c + d * x)
    loss = (y_pred - y).pow(2).sum()
    if t % 50 == 49:
        print(t, round(loss.item(), 3))
    loss.backward()
    with torch.no_grad():
        for p in (a, b, c, d):
            p -= 5e-6 * p.grad
            p.grad = None
print(y_pred.grad_fn, y_pred.grad_fn.next_functions[1][0].next_functions[1][0])
""",
    "examples_nn_and_optim": """
import math
torch.manual_seed(0)
x = torch.linspace(-math.pi, math.pi, 100)
y = torch.sin(x)
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)
model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
loss_fn = torch.nn.MSELoss(reduction='sum')
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
for t in range(200):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    if t % 50 == 49:
        print(t, round(loss.item(), 2))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
linear_layer = model[0]
print(model)
print(linear_layer.bias.shape, linear_layer.weight.shape, loss.grad_fn)
""",
    "examples_nn_manual_update": """
import math
torch.manual_seed(1)
x = torch.linspace(-1, 1, 50)
y = x ** 3 - x
xx = x.unsqueeze(-1).pow(torch.tensor([1, 2, 3]))
model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
loss_fn = torch.nn.MSELoss(reduction='sum')
for t in range(100):
    loss = loss_fn(model(xx), y)
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= 1e-3 * param.grad
print(round(loss.item(), 4), [tuple(p.shape) for p in model.parameters()])
""",
    # -- a gentle introduction to torch.autograd ---------------------------------------------------------------------
    "gentle_introduction": """
a = torch.tensor([2., 3.], requires_grad=True)
b = torch.tensor([6., 4.], requires_grad=True)
Q = 3 * a ** 3 - b ** 2
external_grad = torch.tensor([1., 1.])
Q.backward(gradient=external_grad)
print(9 * a ** 2 == a.grad)
print(-2 * b == b.grad)
print(Q)
x = torch.rand(5, 5)
y = torch.rand(5, 5)
z = torch.rand((5, 5), requires_grad=True)
print(f"Does `a` require gradients?: {(x + y).requires_grad}")
print(f"Does `b` require gradients?: {(x + z).requires_grad}")
""",
    "gentle_introduction_frozen_parameters": """
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
for param in model.parameters():
    param.requires_grad = False
model[2] = torch.nn.Linear(3, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
out = model(torch.rand(5, 4)).sum()
out.backward()
optimizer.step()
print([p.grad is None for p in model.parameters()])
print(out.grad_fn, model[2].weight.grad.shape)
""",
    # -- double backward with a custom function ---------------------------------------------------------------------
    "double_backward_custom_square": """
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x

x = torch.tensor([0.5, -1.5, 2.0], dtype=torch.double, requires_grad=True)
y = Square.apply(x)
grad_x, = torch.autograd.grad(y.sum(), x, create_graph=True)
print(grad_x)
grad_grad_x, = torch.autograd.grad(grad_x.sum(), x)
print(grad_grad_x)
""",
    "double_backward_custom_exp_saves_output": """
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return result * grad_out

x = torch.tensor([0.0, 1.0, -2.0], dtype=torch.double, requires_grad=True)
y = Exp.apply(x)
g, = torch.autograd.grad(y.sum(), x, create_graph=True)
gg, = torch.autograd.grad(g.sum(), x)
print(g, gg)
""",
    "double_backward_custom_sinh_intermediates": """
class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
        expx, expnegx = ctx.saved_tensors
        grad_input = grad_out * (expx + expnegx) / 2
        grad_input += _grad_out_exp * expx
        grad_input -= _grad_out_negexp * expnegx
        return grad_input

def sinh(x):
    return Sinh.apply(x)[0]

x = torch.tensor([0.3, -0.7], dtype=torch.double, requires_grad=True)
y = sinh(x)
g, = torch.autograd.grad(y.sum(), x, create_graph=True)
gg, = torch.autograd.grad(g.sum(), x)
print(y, g, gg)
""",
    "double_backward_gradcheck_and_gradgradcheck": """
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x

class WrongSquare(Square):
    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 3 * x

x = torch.tensor([[0.5, -1.5], [2.0, 0.25]], dtype=torch.double, requires_grad=True)
print(torch.autograd.gradcheck(Square.apply, x), torch.autograd.gradgradcheck(Square.apply, x))
print(torch.autograd.gradcheck(lambda a, b: (a @ b, a.sum(0)), (x, x[:, :1].detach().clone().requires_grad_())))
print(torch.autograd.gradcheck(WrongSquare.apply, (x,), raise_exception=False))
try:
    torch.autograd.gradcheck(WrongSquare.apply, (x,))
except RuntimeError as error:
    print(type(error).__name__, error)
print(x.grad)
""",
    # -- micrograd's tests --------------------------------------------------------------------------------------------
    "micrograd_sanity_check": """
x = torch.Tensor([-4.0]).double()
x.requires_grad = True
z = 2 * x + 2 + x
q = z.relu() + z * x
h = (z * z).relu()
y = h + q + q * x
y.backward()
xpt, ypt = x, y
print(ypt.data.item(), xpt.grad.item())
""",
    "micrograd_more_ops": """
a = torch.Tensor([-4.0]).double()
b = torch.Tensor([2.0]).double()
a.requires_grad = True
b.requires_grad = True
c = a + b
d = a * b + b**3
c = c + c + 1
c = c + 1 + c + (-a)
d = d + d * 2 + (b + a).relu()
d = d + 3 * d + (b - a).relu()
e = c - d
f = e**2
g = f / 2.0
g = g + 10.0 / f
g.backward()
apt, bpt, gpt = a, b, g
print(gpt.data.item(), apt.grad.item(), bpt.grad.item())
""",
    # -- d2l's autograd chapter -------------------------------------------------------------------------------------
    "d2l_autograd": """
x = torch.arange(4.0)
print(x)
x.requires_grad_(True)
print(x.grad)
y = 2 * torch.dot(x, x)
print(y)
y.backward()
print(x.grad, x.grad == 4 * x)
x.grad.zero_()
y = x.sum()
y.backward()
print(x.grad)
x.grad.zero_()
y = x * x
y.backward(gradient=torch.ones(len(y)))
print(x.grad)
x.grad.zero_()
y = x * x
u = y.detach()
z = u * x
z.sum().backward()
print(x.grad == u)
x.grad.zero_()
y.sum().backward()
print(x.grad == 2 * x)
""",
    "d2l_control_flow": """
def f(a):
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c

torch.manual_seed(42)
a = torch.randn(size=(), requires_grad=True)
d = f(a)
d.backward()
print(a.grad == d / a, d.grad_fn)
""",
    "d2l_non_scalar_backward": """
x = torch.arange(6.0, requires_grad=True)
y = x.reshape(2, 3) ** 2
try:
    y.backward()
except RuntimeError as error:
    print(error)
y.sum().backward()
print(x.grad)
""",
    # -- what learners' scripts print -----------------------------------------------------------------------------
    "learner_printing": """
w = torch.tensor([[0.5, -1.25], [2.0, 3.0]], requires_grad=True)
print(w)
print(repr(w * 2))
print(w.sum(), w.mean(), w.T)
print(w[0, 1].item(), w.tolist(), w.detach().numpy().tolist())
print(w.shape, w.size(), w.dtype, w.grad, w.is_leaf)
print(torch.tensor(3.5, requires_grad=True).item())
try:
    w.numpy()
except RuntimeError as error:
    print(error)
print(w.sum().item(), float(w[1, 1]), int(w[1, 0]))
""",
    "learner_tiny_training_loop": """
torch.manual_seed(0)
X = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
Y = 2 * X + 1
w = torch.zeros(1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for epoch in range(50):
    pred = X * w + b
    loss = ((pred - Y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.05 * w.grad
        b -= 0.05 * b.grad
    w.grad.zero_()
    b.grad.zero_()
    if epoch % 10 == 0:
        print(epoch, round(loss.item(), 4), w, b)
print(w.item() > 1.5, loss.grad_fn, pred.grad_fn.next_functions)
""",
    "learner_sequential_edit": """
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
model[1] = torch.nn.Tanh()
model[-1] = torch.nn.Linear(3, 2)
print(model)
del model[0]
print(model, len(model))
out = model(torch.ones(4, 3)).sum()
out.backward()
print(out, model[1].weight.grad)
""",
    "learner_grad_data_and_state_dict": """
torch.manual_seed(0)
layer = torch.nn.Linear(2, 1)
x = torch.tensor([[1.0, 2.0], [3.0, -1.0]])
for step in range(3):
    loss = layer(x).pow(2).mean()
    loss.backward()
    layer.weight.data -= 0.1 * layer.weight.grad.data
    layer.bias.data -= 0.1 * layer.bias.grad.data
    layer.weight.grad.data.zero_()
    layer.bias.grad.data.zero_()
    print(step, loss)
print(layer.state_dict())
y = layer(x)
y.backward(torch.ones_like(y))
print(layer.weight.grad, y)
""",
    "learner_forward_hooks": """
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
activations = {}
def keep(name):
    def hook(module, args, output):
        activations[name] = output.detach()
    return hook
handles = [model[i].register_forward_hook(keep(f"layer{i}")) for i in range(3)]
model[0].register_forward_pre_hook(lambda module, args: (args[0] * 2,))
model[1].register_forward_hook(lambda module, args, output: output + 1)
out = model(torch.ones(2, 3))
print(sorted(activations), activations["layer1"], out)
for handle in handles:
    handle.remove()
activations.clear()
model(torch.ones(1, 3)).sum().backward()
print(activations, model[0].weight.grad)
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_tutorial_program_matches_torch(name):
    assert_same(PROGRAMS[name])


ERRORS = {
    "backward_twice": "x = torch.tensor([1.0, 2.0], requires_grad=True)\ny = (x.exp() * 2).sum()\ny.backward()\n"
    "y.backward()\n",
    "grad_of_non_scalar": "x = torch.tensor([1.0, 2.0], requires_grad=True)\n(x * 2).backward()\n",
    "numpy_of_requires_grad": "x = torch.tensor([1.0, 2.0], requires_grad=True)\nx.numpy()\n",
    "item_of_many": "x = torch.tensor([1.0, 2.0], requires_grad=True)\nx.item()\n",
    "requires_grad_on_non_leaf": "x = torch.tensor([1.0, 2.0], requires_grad=True)\ny = x * 2\ny.requires_grad = False\n",
    "int_requires_grad": "x = torch.tensor([1, 2], requires_grad=True)\n",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_tutorial_errors_match_torch(name):
    assert_same_error(ERRORS[name])
