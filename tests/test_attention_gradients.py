"""Attention's gradients against central differences (float64), with no torch needed: the fused node (masks,
causal, scale, grouped heads) once, the math path (3-D inputs) to second order, as PyTorch differentiates it;
multi-head attention through its input and every weight."""
from __future__ import annotations

import numpy as np
import pytest

import gradviz as gv
import gradviz.nn.functional as F


def _inputs(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [gv.tensor(rng.standard_normal(shape), requires_grad=True) for shape in shapes]


@pytest.mark.parametrize("options", [{}, {"is_causal": True}, {"scale": 0.3}, {"enable_gqa": True}, {"mask": True}])
@pytest.mark.parametrize("dims", [4, 3])
def test_gradients_match_central_differences(options, dims):
    options = dict(options)
    heads = (4, 2) if options.get("enable_gqa") else (2, 2)
    lead = (1,) if dims == 4 else ()
    q, k, v = _inputs(lead + (heads[0], 3, 4), lead + (heads[1], 3, 4), lead + (heads[1], 3, 4))
    if options.pop("mask", False):
        options["attn_mask"] = gv.tensor([[0.0, -0.5, 1.0], [0.3, 0.0, -1.0], [0.0, 0.0, 0.0]], dtype=gv.float64)
    function = lambda a, b, c: F.scaled_dot_product_attention(a, b, c, **options)  # noqa: E731
    assert gv.autograd.gradcheck(function, (q, k, v))
    if dims == 3:  # the math path is ordinary ops: PyTorch differentiates it twice, so does gradviz
        assert gv.autograd.gradgradcheck(function, (q, k, v))


@pytest.mark.parametrize("need_weights", [True, False])
def test_multi_head_attention_gradients_match_central_differences(need_weights):
    """Through the input and every weight; with ``need_weights`` (ordinary ops only) to second order too."""
    x, w, b, out_w, out_b = _inputs((3, 2, 4), (12, 4), (12,), (4, 4), (4,), seed=1)
    mask = gv.tensor([[False, True, False], [False, False, True], [False, False, False]])

    def attention(x, w, b, out_w, out_b):
        out, weights = F.multi_head_attention_forward(x, x, x, 4, 2, w, b, None, None, False, 0.0, out_w, out_b,
                                                      need_weights=need_weights, attn_mask=mask)
        return out if weights is None else out * 0.5 + weights.sum()

    assert gv.autograd.gradcheck(attention, (x, w, b, out_w, out_b))
    if need_weights:
        assert gv.autograd.gradgradcheck(attention, (x, w, b, out_w, out_b))
