"""``autograd.functional`` (jacobian, hessian, vjp, jvp, hvp, vhp) and ``autograd.graph``'s
saved-tensor hooks, compared with PyTorch 2.13 running the same code."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

SETUP = """
F_ = torch.autograd.functional
x = torch.tensor([0.5, -1.0, 2.0])
y = torch.tensor([1.5, 0.5, -0.5])
v = torch.tensor([1.0, 2.0, -1.0])
def scalar(x):
    return (x ** 3).sum() + (x.sin() * x).sum()
def vector(x):
    return x ** 2 * x.sum()
def two_inputs(x, y):
    return (x ** 2 * y).sum() + (x * y).exp().sum()
def two_outputs(x, y):
    return x * y, (x + y).tanh()
"""

PROGRAMS = {
    "jacobian": "J = F_.jacobian(vector, x)\nprint(J)\n",
    "jacobian_tuple": "Jx, Jy = F_.jacobian(two_inputs, (x, y))\nprint(Jx, Jy)\n",
    "jacobian_two_outputs": "J = F_.jacobian(two_outputs, (x, y))\nrows = [J[0][0], J[0][1], J[1][0], J[1][1]]\n",
    "hessian": "H = F_.hessian(scalar, x)\nprint(H)\n",
    "hessian_tuple": "H = F_.hessian(two_inputs, (x, y))\nrows = [H[0][0], H[0][1], H[1][0], H[1][1]]\n",
    "vjp": "out, product = F_.vjp(vector, x, v)\nprint(out, product)\n",
    "vjp_scalar": "out, product = F_.vjp(scalar, x)\nprint(out, product)\n",
    "jvp": "out, product = F_.jvp(vector, x, v)\nprint(out, product)\n",
    "hvp": "out, product = F_.hvp(scalar, x, v)\nprint(out, product)\n",
    "vhp": "out, product = F_.vhp(scalar, x, v)\nprint(out, product)\n",
    "hessian_create_graph": "w = x.clone().requires_grad_()\nH = F_.hessian(scalar, w, create_graph=True)\n"
                            "H.sum().backward()\n",
    "vjp_create_graph": "w = x.clone().requires_grad_()\nout, product = F_.vjp(vector, w, v, create_graph=True)\n"
                        "product.sum().backward()\n",
    "saved_tensors_hooks": """
w = torch.tensor([1.0, 2.0], requires_grad=True)
def pack(t):
    print("pack", t)
    return t * 1
def unpack(t):
    print("unpack", t)
    return t
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    z = (w * w).exp().sum()
z.backward()
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_functional_matches_torch(name):
    assert_same(SETUP + PROGRAMS[name])


ERRORS = {
    "vjp_needs_v": "F_.vjp(vector, x)\n",
    "vjp_v_size": "F_.vjp(vector, x, torch.ones(2))\n",
    "jvp_v_count": "F_.jvp(two_inputs, (x, y), (v,))\n",
    "inputs_not_tensor": "F_.jacobian(vector, [1.0, 2.0])\n",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_functional_errors_match_torch(name):
    assert_same_error(SETUP + ERRORS[name])
