"""Every op against PyTorch 2.13: the same snippet runs in both, then everything is compared.

Each case is a few lines a learner might write. ``assert_same`` compares every tensor the
snippet leaves (values, dtype, grads, the whole grad_fn graph with saved attributes) and the
printed text. The cases run on the numpy backend and on the torch backend.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same  # noqa: E402

X = "x = torch.tensor([[0.5, -1.5, 2.0], [1.2, 0.3, -0.7]], requires_grad=True)\n"
V = "v = torch.tensor([0.4, -0.8, 1.1], requires_grad=True)\n"
C = "c = torch.tensor([2.0, -0.5, 0.25])\n"
W = "w = torch.tensor([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]], requires_grad=True)\n"


def backward(expr: str) -> str:
    return f"y = {expr}\ny.sum().backward() if y.requires_grad and y.dim() else (y.backward() if y.requires_grad else None)\n"


CASES = {
    # arithmetic and the variants PyTorch records differently
    "add": X + C + backward("x + c"),
    "add_scalar": X + backward("x + 2"),
    "radd_scalar": X + backward("2 + x"),
    "add_alpha": X + C + backward("torch.add(x, c, alpha=3)"),
    "add_both": X + V + backward("x + v"),
    "sub": X + C + backward("x - c"),
    "sub_scalar": X + backward("x - 2"),
    "rsub_scalar": X + backward("2 - x"),
    "rsub_tensor": X + C + backward("c - x"),
    "mul": X + V + backward("x * v"),
    "mul_scalar": X + backward("x * 2"),
    "mul_float_scalar": X + backward("x * 2.5"),
    "mul_same": X + backward("x * x"),
    "div": X + V + backward("x / (v + 3)"),
    "div_scalar": X + backward("x / 2"),
    "rdiv_scalar": X + backward("2 / x"),
    "rdiv_tensor": X + C + backward("c / x"),
    "pow_scalar": X + backward("x ** 2"),
    "pow_float": X + backward("x.abs() ** 1.5"),
    "pow_tensor": X + backward("x.abs() ** x"),
    "rpow": X + backward("2 ** x"),
    "pow_fn": X + backward("torch.pow(x, 3)"),
    "neg": X + backward("-x"),
    "broadcast_col": X + "col = torch.tensor([[1.0], [2.0]], requires_grad=True)\n" + backward("x * col + col"),
    "broadcast_3d": X + "z = torch.ones(4, 1, 1, requires_grad=True)\n" + backward("z * x - x / (z + 1)"),
    # dtype promotion
    "int_times_float": "i = torch.tensor([1, 2, 3])\ny = i * 2.5\nprint(y)\n",
    "int_div_int": "i = torch.tensor([1, 2, 3])\nj = torch.tensor([2, 2, 2])\ny = i / j\nprint(y.dtype)\n",
    "int_plus_int": "i = torch.tensor([1, 2, 3])\ny = i + 1\nz = i * i\n",
    "f32_plus_f64_0d": V + "s = torch.tensor(2.0, dtype=torch.float64)\n" + backward("v + s"),
    "f32_times_f64": "a = torch.tensor([1.0, 2.0], requires_grad=True)\nb = torch.tensor([3.0, 4.0], dtype=torch.float64)\ny = a * b\ny.sum().backward()\n",
    "int_tensor_grad": V + "i = torch.tensor([1, 2, 3])\n" + backward("v * i"),
    "bool_mul": V + "m = torch.tensor([True, False, True])\n" + backward("v * m"),
    # unary
    "exp": X + backward("x.exp()"),
    "log": X + backward("x.abs().log()"),
    "sin": X + backward("torch.sin(x)"),
    "cos": X + backward("torch.cos(x)"),
    "tanh": X + backward("x.tanh()"),
    "sigmoid": X + backward("torch.sigmoid(x)"),
    "relu": X + backward("x.relu()"),
    "sqrt": X + backward("(x * x).sqrt()"),
    "abs": X + backward("x.abs()"),
    "reciprocal": X + backward("x.reciprocal()"),
    "clamp_both": X + backward("torch.clamp(x, 0, 1)"),
    "clamp_min": X + backward("x.clamp(min=0.0)"),
    "clamp_max": X + backward("x.clamp(max=0.5)"),
    "exp_int": "i = torch.tensor([1, 2])\ny = i.exp()\nz = i.sqrt()\n",
    # reductions
    "sum": X + backward("x.sum()"),
    "sum_dim": X + backward("x.sum(0)"),
    "sum_dim_keep": X + backward("x.sum(dim=1, keepdim=True)"),
    "sum_dims": X + backward("x.sum((0, 1))"),
    "sum_neg_dim": X + backward("x.sum(-1)"),
    "mean": X + backward("x.mean()"),
    "mean_dim": X + backward("x.mean(1)"),
    "mean_dim_keep": X + backward("x.mean(0, keepdim=True)"),
    "max_all": X + backward("x.max()"),
    "max_ties": "t = torch.tensor([1.0, 3.0, 3.0], requires_grad=True)\ny = t.max()\ny.backward()\n",
    "max_dim": X + "values, indices = x.max(1)\nvalues.sum().backward()\n",
    "max_dim_keep": X + "values, indices = x.max(0, keepdim=True)\nvalues.sum().backward()\n",
    "sum_int": "i = torch.tensor([[1, 2], [3, 4]])\ny = i.sum()\nz = i.sum(0)\n",
    # elementwise pairs
    "maximum": X + C + backward("torch.maximum(x, c)"),
    "minimum": X + C + backward("torch.minimum(x, c)"),
    "maximum_both": X + V + backward("torch.maximum(x, v * 2)"),
    "where": X + C + backward("torch.where(c > 0, x, c)"),
    "where_scalar": X + backward("torch.where(x > 0, x, 0.0)"),
    "where_both": X + V + backward("torch.where(x > 0, x, v)"),
    "comparisons": X + C + "a = x > c\nb = x < 0\nd = x >= c\ne = x <= 1\nf = x == x\ng = x != c\nprint(a, b, d, e, f, g)\n",
    "comparison_methods": X + C + "a = x.gt(c)\nb = x.lt(0)\nd = x.ge(c)\ne = x.le(1)\nf = x.eq(x)\ng = x.ne(c)\n",
    # shapes and views
    "t": X + backward("x.t()"),
    "T": X + backward("x.T"),
    "transpose": X + backward("x.transpose(0, 1)"),
    "reshape": X + backward("x.reshape(3, 2)"),
    "view": X + backward("x.view(-1)"),
    "unsqueeze": X + backward("x.unsqueeze(1)"),
    "squeeze": X + backward("x.unsqueeze(0).squeeze()"),
    "squeeze_dim": X + backward("x.unsqueeze(0).squeeze(0)"),
    "squeeze_dims": X + backward("x.unsqueeze(0).squeeze((0,))"),
    "permute": X + backward("x.permute(1, 0)"),
    "expand": V + backward("v.expand(2, 3)"),
    "select": X + backward("x[1]"),
    "slice": X + backward("x[:, 1:]"),
    "slice_neg": X + backward("x[:, -2:]"),
    "flatten": X + backward("x.flatten()"),
    "clone": X + backward("x.clone()"),
    "to_double": X + backward("x.to(torch.float64)"),
    # matrix products, as torch.matmul decomposes them
    "mm": X + W + backward("x @ w"),
    "mm_fn": X + W + backward("torch.mm(x, w)"),
    "addmm_beta_alpha": X + W + "b = torch.tensor([0.5, -1.0], requires_grad=True)\n"
                        + backward("torch.addmm(b, x, w, beta=0.5, alpha=2.0)"),
    "mv": X + V + backward("x @ v"),
    "dot": V + C + backward("v @ c"),
    "vec_mat": V + W + backward("v @ w"),
    "vec_mat_const_vec": C + W + backward("c @ w"),
    "vec_mat_const_mat": V + "m = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])\n" + backward("torch.matmul(v, m)"),
    "batch_mat": "b = torch.arange(12.0).reshape(2, 2, 3).requires_grad_()\n" + W + backward("b @ w"),
    "batch_vec": "b = torch.arange(12.0).reshape(2, 2, 3).requires_grad_()\n" + V + backward("b @ v"),
    "batch_4d_mat": "b = torch.arange(24.0).reshape(2, 2, 2, 3).requires_grad_()\n" + W + backward("b @ w"),
    "mat_batch": "b = torch.arange(12.0).reshape(2, 3, 2).requires_grad_()\n" + X + backward("x @ b"),
    "vec_batch": "b = torch.arange(12.0).reshape(2, 3, 2).requires_grad_()\n" + V + backward("v @ b"),
    "batch_batch": "a = torch.arange(12.0).reshape(2, 2, 3).requires_grad_()\nb = torch.arange(12.0).reshape(2, 3, 2).requires_grad_()\n" + backward("a @ b"),
    "batch_broadcast": "a = torch.arange(12.0).reshape(2, 1, 2, 3).requires_grad_()\nb = torch.arange(18.0).reshape(3, 3, 2).requires_grad_()\n" + backward("a @ b"),
    # activations
    "softmax": X + backward("torch.softmax(x, dim=1) * torch.tensor([1.0, 2.0, 3.0])"),
    "softmax_method": X + backward("x.softmax(0) * torch.tensor([[1.0], [2.0]])"),
    "log_softmax": X + backward("torch.log_softmax(x, 1) * torch.tensor([1.0, 2.0, 3.0])"),
    "F_softmax": X + backward("F.softmax(x, dim=-1)[:, 0]"),
    "F_log_softmax": X + backward("F.log_softmax(x, dim=0)[0]"),
    "F_relu_sigmoid_tanh": X + backward("F.relu(x) + F.sigmoid(x) + F.tanh(x)"),
    # losses
    "bce_logits": V + C.replace("2.0, -0.5, 0.25", "1.0, 0.0, 0.25") + backward("F.binary_cross_entropy_with_logits(v, c)"),
    "bce_logits_sum": V + C.replace("2.0, -0.5, 0.25", "1.0, 0.0, 0.25") + backward("F.binary_cross_entropy_with_logits(v, c, reduction='sum')"),
    "bce_logits_none": V + C.replace("2.0, -0.5, 0.25", "1.0, 0.0, 0.25") + backward("F.binary_cross_entropy_with_logits(v, c, reduction='none')"),
    "bce_logits_weight": V + C.replace("2.0, -0.5, 0.25", "1.0, 0.0, 0.25") + "wt = torch.tensor([0.5, 2.0, 1.0])\n" + backward("F.binary_cross_entropy_with_logits(v, c, weight=wt)"),
    "bce_logits_pos_weight": V + C.replace("2.0, -0.5, 0.25", "1.0, 0.0, 0.25") + "pw = torch.tensor([3.0, 1.0, 0.5])\n" + backward("F.binary_cross_entropy_with_logits(v, c, pos_weight=pw)"),
    "bce_logits_large": "z = torch.tensor([-120.0, 0.0, 90.0], requires_grad=True)\nt = torch.tensor([1.0, 0.5, 0.0])\n" + backward("F.binary_cross_entropy_with_logits(z, t)"),
    "bce": V + C.replace("2.0, -0.5, 0.25", "1.0, 0.0, 0.25") + backward("F.binary_cross_entropy(torch.sigmoid(v), c)"),
    "bce_weight_sum": V + C.replace("2.0, -0.5, 0.25", "1.0, 0.0, 0.25") + "wt = torch.tensor([0.5, 2.0, 1.0])\n" + backward("F.binary_cross_entropy(torch.sigmoid(v), c, weight=wt, reduction='sum')"),
    "mse": V + C + backward("F.mse_loss(v, c)"),
    "mse_sum": V + C + backward("F.mse_loss(v, c, reduction='sum')"),
    "mse_none": V + C + backward("F.mse_loss(v, c, reduction='none')"),
    "cross_entropy": X + "target = torch.tensor([2, 0])\n" + backward("F.cross_entropy(x, target)"),
    "cross_entropy_sum": X + "target = torch.tensor([2, 0])\n" + backward("F.cross_entropy(x, target, reduction='sum')"),
    "cross_entropy_1d": V + "target = torch.tensor(1)\n" + backward("F.cross_entropy(v, target)"),
    # linear, as F.linear records it
    "linear_2d_bias": X + "lw = torch.tensor([[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6]], requires_grad=True)\nlb = torch.tensor([0.01, -0.02], requires_grad=True)\n" + backward("F.linear(x, lw, lb)"),
    "linear_2d": X + "lw = torch.tensor([[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6]], requires_grad=True)\n" + backward("F.linear(x, lw)"),
    "linear_1d_bias": V + "lw = torch.tensor([[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6]], requires_grad=True)\nlb = torch.tensor([0.01, -0.02], requires_grad=True)\n" + backward("F.linear(v, lw, lb)"),
    "linear_1d": V + "lw = torch.tensor([[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6]], requires_grad=True)\n" + backward("F.linear(v, lw)"),
    "linear_3d_bias": "b = torch.arange(12.0).reshape(2, 2, 3).requires_grad_()\nlw = torch.tensor([[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6]], requires_grad=True)\nlb = torch.tensor([0.01, -0.02], requires_grad=True)\n" + backward("F.linear(b, lw, lb)"),
    "linear_frozen": C + "lw = torch.tensor([[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6]])\nlb = torch.tensor([0.01, -0.02], requires_grad=True)\n" + backward("F.linear(c.unsqueeze(0), lw, lb)"),
    # printing a grad_fn and a chain of them
    "print_grad_fn": X + "y = (x * 2).sum()\nprint(y.grad_fn, y.grad_fn.next_functions)\nprint(y)\n",
    "tutorial_chain": "x = torch.tensor(4.0, requires_grad=True)\ny = 2 * x * (torch.cos(x) ** 2)\nz = torch.sin(y)\nz.backward()\nprint(x, y, z, x.grad)\n",
}

BACKENDS = ("numpy", "torch")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_torch(name, backend):
    assert_same(CASES[name], backend)


def test_one_d_at_two_d_has_unsqueeze_only_when_the_vector_requires_grad():
    _, ours = assert_same(V + C + W + "a = v @ w\nb = c @ w\n")
    a_mm = ours["a"].grad_fn.next_functions[0][0]
    b_mm = ours["b"].grad_fn.next_functions[0][0]
    assert ours["a"].grad_fn.name() == "SqueezeBackward4" and a_mm.name() == "MmBackward0"
    assert a_mm.next_functions[0][0].name() == "UnsqueezeBackward0"
    assert b_mm.next_functions[0] == (None, 0)


def test_issue_variants_have_pytorchs_names():
    _, ours = assert_same(X + "a = x ** 2\nb = x ** x\nc = 2 ** x\nd = 2 - x\ne = 2 / x\nf = torch.clamp(x, 0, 1)\n"
                          "g = x.sum()\nh = x.sum(0)\ni = x.mean()\nj = x.mean(0)\nk = x.t()\nl = x.T\n")
    names = {key: ours[key].grad_fn.name() for key in "abcdefghijkl"}
    assert names == {"a": "PowBackward0", "b": "PowBackward1", "c": "PowBackward2", "d": "RsubBackward1",
                     "e": "MulBackward0", "f": "ClampBackward1", "g": "SumBackward0", "h": "SumBackward1",
                     "i": "MeanBackward0", "j": "MeanBackward1", "k": "TBackward0", "l": "PermuteBackward0"}
    assert ours["e"].grad_fn.next_functions[0][0].name() == "ReciprocalBackward0"


def test_comparisons_do_not_record_a_graph():
    _, ours = assert_same(X + "m = x > 0\n")
    assert ours["m"].grad_fn is None and not ours["m"].requires_grad
