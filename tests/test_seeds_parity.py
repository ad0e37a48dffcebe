"""The programs in the seed tutorials (shared/seeds/*.txt) run in torch and in gradviz.

Random inputs are replaced by fixed tensors built from the same numbers, so both libraries see
identical data; then the printed text (object addresses masked), the grads and the grad_fn
graphs must agree. Seeds 000, 001 and 003 are the same one-layer network as 002 (with ``randn``
for the bias instead of ``rand``), so they share one program with both bias draws.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same  # noqa: E402

W = ("w = torch.tensor([[0.3367, 0.1288, 0.2345], [0.2303, -1.1229, -0.1863], [2.2082, -0.6380, 0.4617],"
     " [0.2674, 0.5349, 0.8094], [1.1103, -1.6898, -0.9890]], requires_grad=True)\n")

ONE_LAYER = """x = torch.ones(5)  # input
y = torch.zeros(3)  # expected output
{w}b = torch.tensor({b}, requires_grad=True)
z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
print(f"Gradient of function z = {{z.grad_fn}}")
print(f"Gradient of loss fuction = {{loss.grad_fn}}")
print('Gradient function for z =', z.grad_fn)
loss.backward()
print(w.grad)
print(b.grad)
z = torch.matmul(x, w) + b
print(z.requires_grad)
with torch.no_grad():
    z = torch.matmul(x, w) + b
print(z.requires_grad)
z = torch.matmul(x, w) + b
z_det = z.detach()
print(z_det.requires_grad)
"""

SEED_004 = """x = torch.tensor(3.0, requires_grad=True)
print(x)
y = x**2
print(y)
y.backward(retain_graph = True)
print(x.grad)
x = torch.tensor(4.0, requires_grad=True)
y = 2 * x * (torch.cos(x) ** 2)
z = torch.sin(y)
print(x, y, z)
z.backward()
print(x.grad)
print(y.grad)

x = torch.tensor(6.7)
y = torch.tensor(0.0)
w = torch.tensor(1.0)
b = torch.tensor(0.0)

def binary_cross_entropy_loss(prediction, target):
    epsilon = 1e-8
    prediction = torch.clamp(prediction, epsilon, 1 - epsilon)
    return -(target * torch.log(prediction) + (1 - target) * torch.log(1 - prediction))

z = w * x + b
y_pred = torch.sigmoid(z)
loss = binary_cross_entropy_loss(y_pred, y)
print(loss)
dloss_dy_pred = (y_pred - y)/(y_pred*(1-y_pred))
dy_pred_dz = y_pred * (1 - y_pred)
dz_dw = x
dz_db = 1
dL_dw = dloss_dy_pred * dy_pred_dz * dz_dw
dL_db = dloss_dy_pred * dy_pred_dz * dz_db
print(f"Manual Gradient of loss w.r.t weight (dw): {dL_dw}")
print(f"Manual Gradient of loss w.r.t bias (db): {dL_db}")

x = torch.tensor(6.7)
y = torch.tensor(0.0)
w = torch.tensor(1.0, requires_grad=True)
b = torch.tensor(0.0, requires_grad=True)
z = w*x + b
print(z)
y_pred = torch.sigmoid(z)
print(y_pred)
loss = binary_cross_entropy_loss(y_pred, y)
print(loss)
loss.backward()
print(w.grad)
print(b.grad)

x = torch.tensor([[1.0, 2.0, 3.0], [2.5, 9.8, 5.7]], requires_grad = True)
print(x)
y = (x**2).mean()
print(y)
y.backward()
print(x.grad)

x = torch.tensor(2.0, requires_grad = True)
y = x ** 2
print(y)
y.backward()
print(x.grad)
print(x.grad.zero_())

x = torch.tensor(2.0, requires_grad=True)
y = x ** 2
y.backward()
print(x.grad)
print(x.requires_grad_(False))
print(x)
y = x ** 2
print(y)
try:
    y.backward()
except Exception as e:
    print(e)

x = torch.tensor(2.0, requires_grad=True)
y = x ** 2
y.backward()
z = x.detach()
print(z)
y = z ** 2
print(y)
try:
    y.backward()
except Exception as e:
    print(e)

x = torch.tensor([1.0, 2.0], requires_grad=True)
x = torch.tensor(2.4, requires_grad=True)
y = x ** 2
y.backward()
print(x.grad)
with torch.no_grad():
    y = x + 10
    try:
        y.backward()
        print(x.grad())
    except Exception as e:
        print(e)
"""

PROGRAMS = {
    "one_layer_randn_bias": ONE_LAYER.format(w=W, b="[-0.0431, -1.6047, -0.7521]"),
    "one_layer_rand_bias": ONE_LAYER.format(w=W, b="[0.4963, 0.7682, 0.0885]"),
    "seed_004": SEED_004,
}


@pytest.mark.parametrize("backend", ("numpy", "torch"))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_seed_program_matches_torch(name, backend):
    assert_same(PROGRAMS[name], backend)


def test_seed_004_prints_the_tutorials_numbers():
    """The numbers the tutorial itself shows come out of gradviz too (a check on the oracle's inputs)."""
    from parity import run

    import gradviz

    _, printed = run(SEED_004, gradviz)
    for text in ("tensor(9., grad_fn=<PowBackward0>)", "tensor(6.7924)", "tensor(6.7012, grad_fn=<NegBackward0>)",
                 "Manual Gradient of loss w.r.t weight (dw): 6.691762447357178",
                 "tensor([[0.3333, 0.6667, 1.0000],\n        [0.8333, 3.2667, 1.9000]])",
                 "element 0 of tensors does not require grad and does not have a grad_fn"):
        assert text in printed
