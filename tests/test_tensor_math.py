"""The wider tensor API (more math, reductions, orderings, matrices, ``inference_mode``) against PyTorch 2.13.

Each case is a few lines a tutorial might write; ``assert_same`` runs them in torch and in gradviz
and compares every tensor left behind (values, dtype, grads, the grad_fn graph with its saved
values) and the printed text, on the numpy backend and on the torch backend. Second-order cases
record the gradient with ``create_graph=True`` and compare its graph too.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

X = "x = torch.tensor([[0.5, -1.5, 2.0], [1.2, 0.3, -0.7]], requires_grad=True)\n"
Y = "y = torch.tensor([[0.4, 0.8, -1.1], [1.0, 2.0, 0.3]], requires_grad=True)\n"
P = "p = torch.tensor([[0.25, 0.5, 0.75], [0.1, 0.9, 0.4]], requires_grad=True)\n"  # inside (0, 1)
V = "v = torch.tensor([0.4, -0.8, 1.1], requires_grad=True)\n"
I = "i = torch.tensor([[3, -2, 0], [1, 5, -4]])\n"


def backward(expression: str) -> str:
    """``y = expression``, then backward from a weighted sum (each element's gradient differs), and print."""
    return (f"out = {expression}\n"
            "if out.requires_grad:\n"
            "    (out * torch.arange(1.0, out.numel() + 1.0).reshape(out.shape)).sum().backward()\n"
            "print(out)\n")


MATH = {
    "log1p": X + backward("(x * x).log1p()"),
    "expm1": X + backward("x.expm1()"),
    "log2": X + backward("torch.log2(x.abs())"),
    "log10": X + backward("x.abs().log10()"),
    "rsqrt": X + backward("(x * x + 0.5).rsqrt()"),
    "erf": X + backward("torch.erf(x)"),
    "asin": P + backward("p.asin()"),
    "acos": P + backward("torch.acos(p)"),
    "atan": X + backward("x.atan()"),
    "arctan_alias": X + backward("torch.arctan(x)"),
    "sinh": X + backward("x.sinh()"),
    "cosh": X + backward("torch.cosh(x)"),
    "atan2": X + Y + backward("torch.atan2(x, y)"),
    "atan2_broadcast": X + V + backward("x.atan2(v)"),
    "floor": X + backward("x.floor() * x"),
    "ceil": X + backward("torch.ceil(x)"),
    "trunc": X + backward("x.trunc()"),
    "round": "x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.7, 2.2], requires_grad=True)\n" + backward("x.round()"),
    "round_decimals": X + backward("torch.round(x * 1.234, decimals=1)"),
    "sign": X + backward("x.sign() * x"),
    "frac": X + backward("x.frac()"),
    "int_rounding": I + "a = i.floor()\nb = i.sign()\nc = i.round()\nd = i.ceil()\nprint(a, b, c, d)\n",
    "int_to_float": I + "a = i.log1p()\nb = i.erf()\nc = torch.atan2(i, i)\nd = i.rsqrt()\nprint(a.dtype, c.dtype)\n",
    "clamp_min": X + backward("x.clamp_min(0.25)"),
    "clamp_max": X + backward("torch.clamp_max(x, 0)"),
    "remainder_number": X + backward("x % 0.7"),
    "remainder_tensor": X + Y + backward("x.remainder(y)"),
    "fmod_number": X + backward("torch.fmod(x, 0.7)"),
    "fmod_tensor": X + Y + backward("x.fmod(y)"),
    "int_remainder": I + "a = i % 3\nb = i.fmod(3)\nprint(a, b)\n",
    "lerp": X + Y + backward("x.lerp(y, 0.3)"),
    "lerp_fn": X + Y + backward("torch.lerp(x, y, 0.75)"),
    "addcmul": X + Y + V + backward("x.addcmul(y, v, value=0.5)"),
    "addcmul_fn": X + Y + backward("torch.addcmul(x, y, x)"),
    "hypot": X + Y + backward("x.hypot(y)"),
    "nan_to_num": "x = torch.tensor([1.0, float('nan'), float('inf'), -float('inf')], requires_grad=True)\n"
                  + backward("x.nan_to_num()"),
    "nan_to_num_values": "x = torch.tensor([1.0, float('nan'), float('inf'), -float('inf')], requires_grad=True)\n"
                         + backward("torch.nan_to_num(x, nan=0.5, posinf=9.0, neginf=-9.0)"),
    "isnan_isinf_isfinite": "x = torch.tensor([1.0, float('nan'), float('inf'), -float('inf')])\n"
                            "a = x.isnan()\nb = torch.isinf(x)\nc = x.isfinite()\nprint(a, b, c)\n",
    "in_place": X + "z = x * 1\nz.log1p_()\nz.floor_()\nw = x * 2\nw.clamp_min_(0.5)\nw.sinh_()\n"
                "(z.sum() + w.sum()).backward()\n",
}

T = "t = torch.tensor([[[0.5, -1.5, 2.0, 0.1], [1.2, 0.3, -0.7, 0.9], [0.2, 1.1, -0.4, 0.6]], "\
    "[[1.5, 0.5, -2.0, 0.3], [-1.2, 0.8, 0.7, 1.9], [0.6, -1.3, 0.4, 0.2]]], requires_grad=True)\n"
REDUCTIONS = {
    "min": X + backward("x.min()"),
    "min_ties": "t = torch.tensor([3.0, 1.0, 1.0], requires_grad=True)\n" + backward("t.min()"),
    "min_dim": X + "values, indices = x.min(1)\nvalues.sum().backward()\nprint(x.min(1))\n",
    "min_dim_keep": X + "values, indices = torch.min(x, -2, keepdim=True)\n(values * 2).sum().backward()\n",
    "min_dim_kw": X + "m = x.min(dim=0)\nvalues = m.values\nindices = m.indices\nvalues.sum().backward()\n",
    "min_tensor": X + Y + backward("torch.min(x, y)"),
    "amax": T + backward("t.amax(1)"),
    "amax_all": X + backward("x.amax()"),
    "amax_dims_keep": T + backward("torch.amax(t, (0, -1), keepdim=True)"),
    "amin": T + backward("t.amin(-1)"),
    "amax_ties": "t = torch.tensor([[3.0, 1.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)\n" + backward("t.amax(1)"),
    "var": X + backward("x.var()"),
    "var_dim": T + backward("t.var(1)"),
    "var_unbiased_false": X + backward("x.var(unbiased=False)"),
    "var_dim_keep_correction": T + backward("t.var((0, 2), keepdim=True, correction=0)"),
    "var_positional": X + backward("torch.var(x, 1, True, True)"),
    "std": X + backward("x.std()"),
    "std_dim": T + backward("t.std(-1)"),
    "std_correction": T + backward("torch.std(t, dim=1, correction=2)"),
    "std_vector_dim": V + backward("v.std(0)"),
    "prod": X + backward("x.prod()"),
    "prod_dim": T + backward("t.prod(1)"),
    "prod_dim_keep": T + backward("t.prod(-1, keepdim=True)"),
    "prod_zero": "t = torch.tensor([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5]], requires_grad=True)\n" + backward("t.prod(1)"),
    "prod_all_zero": "t = torch.tensor([2.0, 0.0, 3.0], requires_grad=True)\n" + backward("t.prod()"),
    "prod_int": I + "a = i.prod()\nb = i.prod(0)\nprint(a, b)\n",
    "cumsum": X + backward("x.cumsum(1)"),
    "cumsum_neg_dim": T + backward("torch.cumsum(t, -2)"),
    "cumsum_int": I + "a = i.cumsum(0)\nprint(a)\n",
    "cumprod": X + backward("x.cumprod(1)"),
    "cumprod_zero": "t = torch.tensor([2.0, 0.0, 3.0, 0.5], requires_grad=True)\n" + backward("t.cumprod(0)"),
    "logsumexp": X + backward("x.logsumexp(1)"),
    "logsumexp_dims_keep": T + backward("torch.logsumexp(t, (0, 2), keepdim=True)"),
    "logsumexp_large": "t = torch.tensor([[1000.0, 1000.0], [-1000.0, 5.0]], requires_grad=True)\n"
                       + backward("t.logsumexp(-1)"),
}
LAYOUT = {
    "flip": X + backward("x.flip(0)"),
    "flip_dims": T + backward("torch.flip(t, (0, -1))"),
    "fliplr": X + backward("x.fliplr()"),
    "roll": X + backward("x.roll(1, 1)"),
    "roll_flat": X + backward("torch.roll(x, 2)"),
    "roll_dims": T + backward("t.roll((1, -1), (0, 2))"),
    "tril": X + backward("x.tril()"),
    "triu": T + backward("t.triu(1)"),
    "tril_neg": X + backward("torch.tril(x, -1)"),
    "diag_vector": V + backward("torch.diag(v)"),
    "diag_vector_offset": V + backward("v.diag(1)"),
    "diag_matrix": X + backward("x.diag()"),
    "diagonal": X + backward("x.diagonal()"),
    "diagonal_dims": T + backward("t.diagonal(1, 1, 2)"),
    "trace": X + backward("x.trace()"),
    "outer": V + "w = torch.tensor([1.5, -0.5], requires_grad=True)\n" + backward("torch.outer(v, w)"),
    "outer_method": V + backward("v.outer(v)"),
}

ORDERING = {
    "sort": X + "s = x.sort()\nvalues, indices = s\n(values * torch.tensor([1.0, 2.0, 3.0])).sum().backward()\nprint(s)\n",
    "sort_dim_descending": T + "values, indices = torch.sort(t, 1, descending=True)\n"
                           "(values * torch.arange(24.0).reshape(2, 3, 4)).sum().backward()\n",
    "sort_stable": "t = torch.tensor([2.0, 1.0, 2.0, 1.0, 0.5], requires_grad=True)\n"
                   "values, indices = t.sort(stable=True)\n(values * torch.arange(5.0)).sum().backward()\n",
    "sort_descending_ties": "t = torch.tensor([2.0, 1.0, 2.0, 1.0, 0.5])\nvalues, indices = t.sort(descending=True, "
                            "stable=True)\n",
    "argsort": T + "a = t.argsort()\nb = torch.argsort(t, dim=0, descending=True)\nprint(a, b)\n",
    "msort": X + backward("x.msort()"),
    "topk": X + "top = x.topk(2)\nvalues, indices = top\n(values * torch.tensor([1.0, 2.0])).sum().backward()\n"
                "print(top)\n",
    "topk_smallest_dim0": T + "values, indices = torch.topk(t, 2, dim=1, largest=False)\n"
                          "(values * torch.arange(16.0).reshape(2, 2, 4)).sum().backward()\n",
}
NEW = {
    "type_as": X + "i = torch.tensor([1, 2, 3])\na = i.type_as(x)\nb = x.type_as(i)\nc = x.type_as(x)\n"
               "d = x.type_as(torch.zeros(1, dtype=torch.float64))\nd.sum().backward()\n",
    "new_factories": X + "a = x.new_zeros(2, 3)\nb = x.new_ones((4,))\nc = x.new_full((2, 2), 7.0)\n"
                     "d = x.new_tensor([1, 2])\ne = x.new_empty(3).zero_()\nf = x.new_zeros(2, dtype=torch.int64)\n"
                     "g = x.new_ones(size=(1, 2), requires_grad=True)\nprint(a, b, c, d, e, f, g)\n",
}

A = "a = torch.tensor([[0.5, -1.5, 2.0], [1.2, 0.3, -0.7]], requires_grad=True)\n"
B = "b = torch.tensor([[0.4, 0.8], [-1.1, 1.0], [2.0, 0.3]], requires_grad=True)\n"
BATCH = ("p = torch.arange(12.0).reshape(2, 2, 3).requires_grad_()\n"
         "q = (torch.arange(12.0).reshape(2, 3, 2) * 0.5).requires_grad_()\n")
EINSUM = {
    "einsum_matmul": A + B + backward("torch.einsum('ij,jk->ik', a, b)"),
    "einsum_matmul_transposed": A + backward("torch.einsum('ij,kj->ik', a, a)"),
    "einsum_batch_matmul": BATCH + backward("torch.einsum('bij,bjk->bik', p, q)"),
    "einsum_outer": V + "w = torch.tensor([1.5, -0.5], requires_grad=True)\n" + backward("torch.einsum('i,j->ij', v, w)"),
    "einsum_dot": V + backward("torch.einsum('i,i->', v, v * 2)"),
    "einsum_trace": "s = torch.arange(9.0).reshape(3, 3).requires_grad_()\n" + backward("torch.einsum('ii->', s)"),
    "einsum_diagonal": "s = torch.arange(9.0).reshape(3, 3).requires_grad_()\n" + backward("torch.einsum('ii->i', s)"),
    "einsum_sum": A + backward("torch.einsum('ij->j', a)"),
    "einsum_sum_all": A + backward("torch.einsum('ij->', a)"),
    "einsum_transpose": A + backward("torch.einsum('ij->ji', a)"),
    "einsum_matrix_vector": A + V + backward("torch.einsum('ij,j->i', a, v)"),
    "einsum_elementwise_sum": A + backward("torch.einsum('ij,ij->', a, a)"),
    "einsum_implicit": A + B + backward("torch.einsum('ij,jk', a, b)"),
    "einsum_list": A + B + backward("torch.einsum('ik,kj->ij', [a, b])"),
    "einsum_three": A + B + V + backward("torch.einsum('i,ij,jk->k', v, a.t(), b.t())"),
    "einsum_batch_vector": BATCH + V + backward("torch.einsum('bik,k->bi', p, v)"),
    "einsum_first_only": A + B + backward("torch.einsum('ij,jk->k', a, b)"),
    "einsum_bilinear": "l = torch.tensor([[0.5, -1.0, 2.0]], requires_grad=True)\n" + BATCH
                       + "r = torch.tensor([[1.0, 0.5]], requires_grad=True)\n"
                       + backward("torch.einsum('bn,anm,bm->ba', l, q, r)"),
    "einsum_alone_in_second": A + T + backward("torch.einsum('ij,ajkl->ia', a, t.reshape(1, 3, 2, 4))"),
    "einsum_uppercase": A + B + backward("torch.einsum('Ij,jK->IK', a, b)"),
    "einsum_repeated_and_other": "s = torch.arange(9.0).reshape(3, 3).requires_grad_()\n" + V
                                 + backward("torch.einsum('ii,i->i', s, v)"),
}

MORE = {
    "repeat_interleave": X + backward("x.repeat_interleave(2)"),
    "repeat_interleave_dim": X + backward("torch.repeat_interleave(x, 3, dim=1)"),
    "repeat_interleave_dim0": X + backward("x.repeat_interleave(2, 0)"),
    "repeat_interleave_tensor": X + backward("x.repeat_interleave(torch.tensor([1, 2]), dim=0)"),
    "tile": X + backward("x.tile((2,))"),
    "tile_more_dims": X + backward("torch.tile(x, (2, 1, 2))"),
    "broadcast_to": X + backward("torch.broadcast_to(x, (2, 2, 3))"),
    "broadcast_to_method": V + backward("v.broadcast_to(2, 3)"),
    "movedim": T + backward("t.movedim(0, -1)"),
    "moveaxis_several": T + backward("torch.moveaxis(t, (0, 1), (2, 0))"),
    "swapaxes": T + backward("t.swapaxes(0, 2)"),
    "unflatten": X + backward("x.unflatten(1, (3, 1))"),
    "exp2": X + backward("x.exp2()"),
    "sgn": X + backward("x.sgn() * x"),
    "masked_select": X + backward("x.masked_select(x > 0)"),
    "masked_select_broadcast": X + backward("torch.masked_select(x, torch.tensor([True, False, True]))"),
    "nonzero": X + "a = (x > 0).nonzero()\nb = torch.nonzero(x > 0, as_tuple=True)\nc = torch.argwhere(x < 0)\n"
                   "d = torch.count_nonzero(x > 0)\ne = (x > 0).count_nonzero(dim=1)\nprint(a, b, c, d, e)\n",
    "isclose": X + "a = torch.isclose(x, x + 1e-7)\nb = x.isclose(x * 1.1)\n"
                   "c = torch.isclose(torch.tensor([float('nan'), 1.0]), torch.tensor([float('nan'), 1.0]), equal_nan=True)\n"
                   "print(a, b, c)\n",
    "aliases": X + Y + backward("torch.subtract(x, y) + x.multiply(y) - torch.divide(x, y + 3) + x.negative() + "
                                "torch.absolute(x)"),
    "functions": X + "print(torch.numel(x), torch.is_floating_point(x), torch.empty_like(x).shape)\n",
    "meshgrid_ij": V + "w = torch.tensor([1.5, -0.5], requires_grad=True)\ngx, gy = torch.meshgrid(v, w, indexing='ij')\n"
                   "(gx * gy * torch.arange(6.0).reshape(3, 2)).sum().backward()\n",
    "meshgrid_xy": V + "w = torch.tensor([1.5, -0.5], requires_grad=True)\ngx, gy = torch.meshgrid(v, w, indexing='xy')\n"
                   "(gx * gy * torch.arange(6.0).reshape(2, 3)).sum().backward()\n",
    "meshgrid_default": V + "w = torch.tensor([1.5, -0.5])\ngrids = torch.meshgrid([v, w])\n",
    "broadcast_tensors": X + V + "a, b = torch.broadcast_tensors(x, v)\n(a * b).sum().backward()\n",
    "stacks": V + X + "a = torch.vstack([v, v * 2])\nb = torch.hstack([v, v])\nc = torch.hstack([x, x])\n"
                      "d = torch.column_stack([v, v])\ne = torch.atleast_2d(v)\n(a.sum() + b.sum() + c.sum() + d.sum()).backward()\n",
    "diff": X + backward("torch.diff(x)"),
    "scatter_src": X + Y + backward("x.scatter(1, torch.tensor([[0, 1, 2], [2, 0, 1]]), y)"),
    "scatter_smaller_index": X + Y + backward("torch.scatter(x, 0, torch.tensor([[1, 0]]), y[:1, :2])"),
    "scatter_value": X + backward("x.scatter(1, torch.tensor([[2], [0]]), 2.0)"),
    "one_hot_in_place": "labels = torch.tensor([2, 0, 1])\nhot = torch.zeros(3, 4).scatter_(1, labels.unsqueeze(1), 1)\n"
                        "print(hot)\n",
    "scatter_add": X + Y + backward("x.scatter_add(1, torch.tensor([[0, 0, 2], [1, 1, 1]]), y)"),
    "scatter_add_in_place": X + Y + "z = x * 1\nz.scatter_add_(0, torch.tensor([[1, 0, 1]]), y[:1])\nz.sum().backward()\n",
    "index_add": X + Y + backward("x.index_add(0, torch.tensor([1, 0]), y)"),
    "index_add_alpha_repeat": X + Y + backward("torch.index_add(x, 1, torch.tensor([2, 2, 0]), y, alpha=2)"),
    "diff_dim0_twice": X + backward("x.diff(n=1, dim=0) + 0") + "second = torch.diff(x[0], n=2)\n",
}

CASES = {**MATH, **REDUCTIONS, **LAYOUT, **ORDERING, **NEW, **EINSUM, **MORE}
BACKENDS = ("numpy", "torch")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_torch(name, backend):
    assert_same(CASES[name], backend)


def second_order(expression: str) -> str:
    """The gradient of ``expression`` recorded with ``create_graph=True``, then differentiated again."""
    return (X + Y + f"out = {expression}\n"
            "g, = torch.autograd.grad(out, x, create_graph=True)\n"
            "print(g)\n"
            "(g * torch.arange(1.0, g.numel() + 1.0).reshape(g.shape)).sum().backward()\n")


SECOND_ORDER = {
    "log1p": "(x * x).log1p().sum()",
    "expm1": "(x.expm1() * y).sum()",
    "log2_log10": "((x * x + 1).log2() + (x * x + 1).log10()).sum()",
    "rsqrt": "((x * x + 1).rsqrt() * y).sum()",
    "erf": "(x.erf() * x).sum()",
    "asin_acos": "((x * 0.3).asin() * y + (x * 0.3).acos() * x).sum()",
    "atan": "(x.atan() * x).sum()",
    "sinh_cosh": "(x.sinh() * y + x.cosh() * x).sum()",
    "atan2": "(torch.atan2(x, y) * x).sum()",
    "rounding": "(x.floor() * x + x.frac() * x * x + x.sign() * x).sum()",
    "clamp_min_max": "(x.clamp_min(0.25) ** 2 + x.clamp_max(0.0) ** 3).sum()",
    "lerp": "(x.lerp(y, 0.3) ** 2).sum()",
    "addcmul": "(torch.addcmul(y, x, x, value=0.5) * x).sum()",
    "hypot": "(x.hypot(y) * x).sum()",
    "min_all_and_dim": "x.min() ** 2 + (x.min(1)[0] ** 3).sum()",
    "amax_amin": "(x.amax(1) ** 2).sum() + (x.amin(0, keepdim=True) * x).sum()",
    "var_std": "x.var() * y.sum() + (x.std(1) ** 2).sum() + (x.var(0, keepdim=True) * x).sum()",
    "prod": "x.prod() + (x.prod(1) ** 2).sum() + (x.prod(0, keepdim=True) * y).sum()",
    "logsumexp": "(x.logsumexp(1) ** 2).sum()",
    "cumsum": "(x.cumsum(1) ** 2).sum()",
    "layout": "(x.flip(1) * x).sum() + (x.roll(1, 0) ** 2).sum() + (x.tril() ** 3).sum() + (x.triu(1) * x).sum()",
    "diag_outer": "(x[0].diag() ** 2).sum() + (torch.outer(x[1], x[0]) ** 2).sum()",
    "sort_topk": "(x.sort(1)[0] ** 2 * y).sum() + (x.topk(2, 0)[0] ** 3).sum()",
    "einsum": "(torch.einsum('ij,kj->ik', x, y) ** 2).sum() + torch.einsum('ij,ij->', x, x) ** 2",
    "scatter": "(x.scatter(1, torch.tensor([[2, 0], [1, 2]]), (y * x)[:, :2]) ** 2).sum() + (x.scatter(0, torch.tensor([[1, 0, 1]]), 0.5) ** 3).sum()",
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order_graph_matches_torch(name):
    assert_same(second_order(SECOND_ORDER[name]))


ERRORS = {
    "frac_int": I + "i.frac()\n",
    "round_decimals_int": I + "i.round(decimals=1)\n",
    "atan2_number": X + "torch.atan2(x, 2.0)\n",
    "leaf_in_place": X + "x.floor_()\n",
    "einsum_sizes": X + Y + "torch.einsum('ij,jk->ik', x, y)\n",
    "masked_select_not_bool": X + "x.masked_select(torch.tensor([1, 0, 1]))\n",
    "outer_matrix": X + V + "torch.outer(x, v)\n",
    "scatter_float_index": X + Y + "x.scatter(1, torch.tensor([[0.0]]), y)\n",
    "scatter_src_larger_than_index": X + Y + backward("torch.scatter(x, 0, torch.tensor([[1, 0]]), y)"),
    "topk_too_many": X + "x.topk(4)\n",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    assert_same_error(ERRORS[name])


INFERENCE = (
    "with torch.inference_mode():\n"
    "    made = torch.ones(2, 3)\n"
    "    doubled = made * 2\n"
    "    print(torch.is_inference_mode_enabled(), torch.is_grad_enabled(), made.is_inference(), doubled.is_inference())\n"
    "w = torch.ones(3, requires_grad=True)\n"
)


def test_inference_mode_matches_torch():
    assert_same(INFERENCE + "print(torch.is_inference_mode_enabled(), made.is_inference(), torch.ones(1).is_inference())\n"
                "copy = made.clone()\nprint(copy.is_inference(), made[0].is_inference())\n"
                "total = (copy * w).sum()\ntotal.backward()\nplain = made + w\n"
                "with torch.inference_mode(False):\n    print(torch.is_inference_mode_enabled(), torch.ones(1).is_inference())\n")


def test_inference_mode_as_a_decorator_matches_torch():
    assert_same("w = torch.ones(3, requires_grad=True)\n"
                "@torch.inference_mode()\ndef predict(x):\n    return x * 2\n"
                "out = predict(w)\nprint(out.requires_grad, out.is_inference(), torch.is_grad_enabled())\n")


@pytest.mark.parametrize("line", ["made.requires_grad_()", "made.requires_grad = True", "made.add_(1)", "made[0] = 3.",
                                  "made._version", "(made * w).sum().backward()", "made.t().mul_(2)"])
def test_inference_tensors_in_autograd_raise_torchs_errors(line):
    assert_same_error(INFERENCE + line + "\n")


def test_inference_mode_marks_nothing_once_left_even_after_an_error():
    import gradviz

    with pytest.raises(ValueError):
        with gradviz.inference_mode():
            with gradviz.inference_mode():
                raise ValueError("inside")
    assert not gradviz.is_inference_mode_enabled() and gradviz.is_grad_enabled()
    assert not gradviz.ones(2).is_inference()
