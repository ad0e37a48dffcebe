"""Scaled dot-product attention and multi-head attention against PyTorch 2.13.

Every snippet runs in both libraries (``parity.assert_same``): values, gradients of the inputs and of every
parameter bound to a name, the whole ``grad_fn`` graph (names, edges, ``_saved_*`` values) and the printed
text. Which path PyTorch takes (its fused CPU node or the math composite) is not written down: the graph
comparison finds out. Gradients are also checked against central differences, and hypothesis draws shapes,
heads and masks.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

import gradviz as gv  # noqa: E402
import gradviz.nn.functional as F  # noqa: E402
from parity import assert_graph, assert_same, assert_same_error, assert_values, run_both  # noqa: E402


def qkv(q, k, v, dtype="torch.float32", grad=True):
    """Lines making seeded query, key and value of the given shapes."""
    return "".join(f"torch.manual_seed({seed})\n{name} = torch.randn({shape}, dtype={dtype}, requires_grad={grad})\n"
                   for seed, (name, shape) in enumerate((("q", q), ("k", k), ("v", v))))


def backward(call: str) -> str:
    return (f"y = {call}\ntorch.manual_seed(9)\nweights = torch.randn(y.shape, dtype=y.dtype)\n"
            "(y * weights).sum().backward(retain_graph=True)\n")


SDPA_CASES = {
    # the fused CPU node
    "fused": qkv("(2, 3, 4, 5)", "(2, 3, 6, 5)", "(2, 3, 6, 5)") + backward("F.scaled_dot_product_attention(q, k, v)"),
    "fused_float64": qkv("(2, 3, 4, 5)", "(2, 3, 6, 5)", "(2, 3, 6, 5)", "torch.float64")
    + backward("F.scaled_dot_product_attention(q, k, v)"),
    "fused_causal": qkv("(1, 2, 5, 4)", "(1, 2, 5, 4)", "(1, 2, 5, 4)") + backward(
        "F.scaled_dot_product_attention(q, k, v, is_causal=True)"),
    "fused_causal_longer_query": qkv("(1, 2, 6, 4)", "(1, 2, 3, 4)", "(1, 2, 3, 4)") + backward(
        "F.scaled_dot_product_attention(q, k, v, is_causal=True)"),
    "fused_float_mask": qkv("(2, 3, 4, 5)", "(2, 3, 6, 5)", "(2, 3, 6, 5)")
    + "m = torch.linspace(-2, 2, 24).reshape(4, 6)\n" + backward("F.scaled_dot_product_attention(q, k, v, attn_mask=m)"),
    "fused_bool_mask": qkv("(2, 3, 4, 5)", "(2, 3, 6, 5)", "(2, 3, 6, 5)")
    + "m = torch.tensor([[True, False, True, True, False, True]] * 4)\n"
    + backward("F.scaled_dot_product_attention(q, k, v, attn_mask=m)"),
    "fused_full_mask": qkv("(2, 1, 3, 4)", "(2, 1, 3, 4)", "(2, 1, 3, 4)")
    + "m = torch.linspace(-1, 1, 18).reshape(2, 1, 3, 3)\n"
    + backward("F.scaled_dot_product_attention(q, k, v, attn_mask=m)"),
    "fused_mask_and_causal": qkv("(1, 1, 3, 4)", "(1, 1, 3, 4)", "(1, 1, 3, 4)")
    + "m = torch.linspace(-1, 1, 9).reshape(3, 3)\n"
    + backward("F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=True)"),
    "fused_fully_masked_rows": qkv("(2, 2, 4, 5)", "(2, 2, 6, 5)", "(2, 2, 6, 5)")
    + "m = torch.tensor([[True, False] * 3, [False] * 6, [False, True] * 3, [False] * 6])\n"
    + backward("F.scaled_dot_product_attention(q, k, v, attn_mask=m)"),
    "fused_scale": qkv("(1, 2, 3, 4)", "(1, 2, 3, 4)", "(1, 2, 3, 4)") + backward(
        "F.scaled_dot_product_attention(q, k, v, scale=-0.3)"),
    "fused_gqa": qkv("(2, 4, 3, 5)", "(2, 2, 4, 5)", "(2, 2, 4, 5)") + backward(
        "F.scaled_dot_product_attention(q, k, v, enable_gqa=True)"),
    "fused_transposed_query": qkv("(2, 4, 3, 5)", "(2, 3, 6, 5)", "(2, 3, 6, 5)") + backward(
        "F.scaled_dot_product_attention(q.transpose(1, 2), k, v)") + "print(y.stride(), y.grad_fn._saved_logsumexp.stride())\n",
    "fused_some_inputs": qkv("(1, 2, 3, 4)", "(1, 2, 3, 4)", "(1, 2, 3, 4)") + backward(
        "F.scaled_dot_product_attention(q.detach(), k, v)"),
    # PyTorch's math composite
    "math_3d": qkv("(3, 4, 5)", "(3, 6, 5)", "(3, 6, 7)") + backward("F.scaled_dot_product_attention(q, k, v)"),
    "math_2d_causal": qkv("(4, 5)", "(6, 5)", "(6, 5)") + backward(
        "F.scaled_dot_product_attention(q, k, v, is_causal=True)"),
    "math_value_size": qkv("(2, 3, 4, 5)", "(2, 3, 6, 5)", "(2, 3, 6, 7)") + backward(
        "F.scaled_dot_product_attention(q, k, v, scale=0.25)"),
    "math_bool_mask": qkv("(3, 4, 5)", "(3, 6, 5)", "(3, 6, 5)")
    + "m = torch.tensor([[True, False, True, True, False, True]] * 4)\n"
    + backward("F.scaled_dot_product_attention(q, k, v, attn_mask=m)"),
    "math_fully_masked_row": qkv("(3, 2, 5)", "(3, 3, 5)", "(3, 3, 5)")
    + "m = torch.tensor([[False, False, False], [True, False, True]])\n"
    + backward("F.scaled_dot_product_attention(q, k, v, attn_mask=m)"),
    "math_mask_with_grad": qkv("(2, 3, 4, 5)", "(2, 3, 6, 5)", "(2, 3, 6, 5)")
    + "m = torch.linspace(-2, 2, 24).reshape(4, 6).requires_grad_()\n"
    + backward("F.scaled_dot_product_attention(q, k, v, attn_mask=m)"),
    "math_broadcast_batch": qkv("(2, 3, 4, 5)", "(1, 3, 6, 5)", "(1, 3, 6, 5)") + backward(
        "F.scaled_dot_product_attention(q, k, v)"),
    "math_gqa": qkv("(2, 4, 3, 5)", "(2, 2, 4, 5)", "(2, 2, 4, 7)") + backward(
        "F.scaled_dot_product_attention(q, k, v, enable_gqa=True)"),
    "math_dropout": qkv("(2, 3, 4, 5)", "(2, 3, 6, 5)", "(2, 3, 6, 5)") + "torch.manual_seed(5)\n" + backward(
        "F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)"),
    "math_gqa_mixed_heads": qkv("(1, 4, 3, 5)", "(1, 2, 4, 5)", "(1, 4, 4, 5)") + backward(
        "F.scaled_dot_product_attention(q, k, v, enable_gqa=True)"),
    "math_3d_mask_on_4d": qkv("(2, 2, 3, 4)", "(2, 2, 3, 4)", "(2, 2, 3, 4)")
    + "m = torch.linspace(-1, 1, 18).reshape(2, 3, 3)\n" + backward("F.scaled_dot_product_attention(q, k, v, attn_mask=m)"),
    "math_half": qkv("(2, 3, 4)", "(2, 3, 4)", "(2, 3, 4)", "torch.float16")
    + "m = torch.tensor([[True, False, True]] * 3)\n" + backward("F.scaled_dot_product_attention(q, k, v, attn_mask=m)"),
    "empty_query": qkv("(1, 2, 0, 3)", "(1, 2, 4, 3)", "(1, 2, 4, 3)") + backward(
        "F.scaled_dot_product_attention(q, k, v)"),
    "empty_keys": qkv("(1, 2, 3, 3)", "(1, 2, 0, 3)", "(1, 2, 0, 5)") + backward(
        "F.scaled_dot_product_attention(q, k, v)"),
    "no_grad": qkv("(2, 3, 4, 5)", "(2, 3, 6, 5)", "(2, 3, 6, 5)")
    + "with torch.no_grad():\n    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)\nprint(y.grad_fn)\n",
}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(SDPA_CASES))
def test_scaled_dot_product_attention_as_torch(name, backend):
    assert_same(SDPA_CASES[name], backend)


def test_half_precision_on_the_fused_path():
    """float16 is computed in float32 with PyTorch's roundings to half (the weights before they meet v, and in the
    backward P and dS): outputs agree bit for bit here, gradients to about an ulp (the summation order differs)."""
    code = qkv("(1, 2, 3, 4)", "(1, 2, 3, 4)", "(1, 2, 3, 4)", "torch.float16") + backward(
        "F.scaled_dot_product_attention(q, k, v)")
    (scope_t, _), (scope_g, _) = run_both(code)
    assert_graph(scope_t["y"].grad_fn, scope_g["y"].grad_fn)  # saved values too: output and logsumexp (float32)
    assert_values(scope_t["y"].detach(), scope_g["y"].detach(), "y", rtol=0, atol=0)
    for name in "qkv":
        assert_values(scope_t[name].grad, scope_g[name].grad, f"{name}.grad", rtol=2e-3, atol=1e-4)


def test_which_path_torch_takes_is_recorded():
    """The two node names a learner sees, for the record: PyTorch's fused CPU node for plain 4-D inputs, its
    math composite (ending in a matmul) for 3-D ones."""
    scope = {}
    for dims, name in ((4, "ScaledDotProductFlashAttentionForCpuBackward0"), (3, "UnsafeViewBackward0")):
        q = gv.randn(*(2,) * (dims - 2), 3, 4, requires_grad=True)
        scope[dims] = F.scaled_dot_product_attention(q, q, q).grad_fn.name()
        assert scope[dims] == name


SDPA_ERRORS = {
    "one_dim": "q = torch.ones(5)\nF.scaled_dot_product_attention(q, q, q)\n",
    "dtypes": "q = torch.ones(1, 1, 2, 3)\nF.scaled_dot_product_attention(q, q.double(), q)\n",
    "mask_dtype": "q = torch.ones(1, 1, 2, 3)\nF.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(2, 2).double())\n",
    "gqa_indivisible": "q = torch.ones(1, 3, 2, 3)\nk = torch.ones(1, 2, 2, 3)\n"
                       "F.scaled_dot_product_attention(q, k, k, enable_gqa=True)\n",
    "heads_without_gqa": "q = torch.ones(1, 4, 2, 3)\nk = torch.ones(1, 2, 2, 3)\nF.scaled_dot_product_attention(q, k, k)\n",
    "head_sizes": "q = torch.ones(1, 2, 2, 3)\nk = torch.ones(1, 2, 2, 4)\nF.scaled_dot_product_attention(q, k, k)\n",
    "mask_shape": "q = torch.ones(1, 2, 2, 3)\nF.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(3, 3))\n",
    "one_dim_mask": "q = torch.ones(1, 2, 2, 3)\nF.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(2))\n",
    "integers": "q = torch.ones(1, 2, 2, 3, dtype=torch.long)\nF.scaled_dot_product_attention(q, q, q)\n",
    "negative_dropout": "q = torch.ones(1, 2, 2, 3)\nF.scaled_dot_product_attention(q, q, q, dropout_p=-0.5)\n",
    "dropout_above_one": "q = torch.ones(1, 2, 2, 3)\nF.scaled_dot_product_attention(q, q, q, dropout_p=1.5)\n",
    "mask_and_causal": "q = torch.ones(1, 2, 3)\nF.scaled_dot_product_attention(q, q, q, torch.ones(2, 2), is_causal=True)\n",
}


@pytest.mark.parametrize("name", sorted(SDPA_ERRORS))
def test_scaled_dot_product_attention_errors_as_torch(name):
    assert_same_error(SDPA_ERRORS[name])


def test_the_fused_node_has_no_second_derivative_as_in_torch():
    code = (qkv("(1, 2, 3, 4)", "(1, 2, 3, 4)", "(1, 2, 3, 4)", "torch.float64")
            + "y = F.scaled_dot_product_attention(q, k, v)\n"
            + "g, = torch.autograd.grad(y.sum(), q, create_graph=True)\nprint(type(g.grad_fn).__name__)\n"
            + "g.sum().backward()\n")
    assert_same_error(code)


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 2), heads=st.sampled_from([(1, 1), (2, 2), (4, 2), (3, 1)]), length=st.integers(1, 5),
       source=st.integers(1, 5), size=st.integers(1, 6), value_size=st.sampled_from([None, 3]), dims=st.sampled_from([3, 4]),
       mask=st.sampled_from([None, "bool", "float", "causal"]), seed=st.integers(0, 2**16))
def test_hypothesis_shapes_heads_masks(batch, heads, length, source, size, value_size, dims, mask, seed):
    rng = np.random.default_rng(seed)
    gqa = heads[0] != heads[1]
    lead = (batch, heads[0]) if dims == 4 else (batch * heads[0],)
    lead_kv = (batch, heads[1]) if dims == 4 else (batch * heads[0],)
    arrays = [rng.standard_normal(lead + (length, size)), rng.standard_normal(lead_kv + (source, size)),
              rng.standard_normal(lead_kv + (source, value_size or size))]
    mask_array = None
    if mask == "bool":
        mask_array = rng.random((length, source)) < 0.7
    elif mask == "float":
        mask_array = rng.standard_normal((length, source))
    causal = mask == "causal"
    grad = None
    results = []
    for lib in (torch, gv):
        inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
        attn_mask = None if mask_array is None else lib.tensor(mask_array)
        out = lib.nn.functional.scaled_dot_product_attention(*inputs, attn_mask=attn_mask, is_causal=causal,
                                                             enable_gqa=gqa and dims == 4)
        if grad is None:
            grad = rng.standard_normal(tuple(out.shape))
        out.backward(lib.tensor(grad))
        results.append((out, inputs))
    (out_t, inputs_t), (out_g, inputs_g) = results
    assert_values(out_t.detach(), out_g.detach(), "output", rtol=1e-10, atol=1e-12)
    assert_graph(out_t.grad_fn, out_g.grad_fn)
    for name, a, b in zip("qkv", inputs_t, inputs_g):
        assert_values(a.grad, b.grad, f"{name}.grad", rtol=1e-9, atol=1e-11)


# -- multi-head attention -----------------------------------------------------------------------------------------
def mha(options: str, call: str, shapes: list, dtype="torch.float32") -> str:
    """Lines making a seeded MultiheadAttention and inputs, calling it, and backward from both outputs."""
    names = "xyz"[:len(shapes)]
    lines = "".join(f"torch.manual_seed({10 + i})\n{n} = torch.randn{s}.to({dtype}).requires_grad_()\n"
                    for i, (n, s) in enumerate(zip(names, shapes)))
    return ("torch.manual_seed(0)\n" f"m = torch.nn.MultiheadAttention({options}).to({dtype})\nprint(m)\n"
            "print([(n, tuple(p.shape)) for n, p in m.named_parameters()])\n" + lines
            + f"torch.manual_seed(3)\nout, weights = m({call})\n"
            "torch.manual_seed(4)\nloss = (out * torch.randn(out.shape, dtype=out.dtype)).sum()\n"
            "loss = loss if weights is None else loss + (weights * weights).sum()\nloss.backward()\n"
            "params = [p for n, p in m.named_parameters()]\ngrads = [p.grad for p in params]\n")


MHA_CASES = {
    "self_weights": mha("8, 2", "x, x, x", [(5, 3, 8)]),
    "self_no_weights": mha("8, 2", "x, x, x, need_weights=False", [(5, 3, 8)]),
    "batch_first_cross": mha("8, 2, batch_first=True", "x, y, y, need_weights=False", [(3, 5, 8), (3, 4, 8)]),
    "batch_first_three": mha("8, 4, batch_first=True, bias=False", "x, y, z, average_attn_weights=False",
                             [(3, 5, 8), (3, 4, 8), (3, 4, 8)]),
    "kdim_vdim_bias_kv_zero_attn": mha("8, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True",
                                       "x, y, z, key_padding_mask=torch.tensor([[False, False, True, False]] * 3)",
                                       [(5, 3, 8), (4, 3, 3), (4, 3, 5)]),
    "causal_no_weights": mha("8, 2", "x, x, x, attn_mask=torch.ones(5, 5, dtype=torch.bool).triu(1), is_causal=True, "
                                     "need_weights=False", [(5, 3, 8)]),
    "unbatched_mask": mha("8, 2", "x, x, x, attn_mask=torch.ones(5, 5, dtype=torch.bool).triu(1)", [(5, 8)]),
    "float_3d_mask": mha("6, 3", "x, x, x, attn_mask=torch.linspace(-1, 1, 75).reshape(3, 5, 5)", [(5, 1, 6)]),
    "padding_dropout_no_weights": mha("8, 2, dropout=0.3", "x, x, x, key_padding_mask=torch.tensor([[False, False, "
                                      "True, False, False]] * 3), need_weights=False", [(5, 3, 8)]),
    "dropout_weights": mha("8, 2, dropout=0.3", "x, x, x", [(5, 3, 8)]),
    "float64_eval": mha("8, 2, dropout=0.3", "x, x, x", [(5, 3, 8)], "torch.float64").replace(
        "print(m)\n", "print(m)\nm.eval()\n"),
}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(MHA_CASES))
def test_multihead_attention_as_torch(name, backend):
    assert_same(MHA_CASES[name], backend)


def test_multi_head_attention_forward_as_torch():
    code = ("torch.set_default_dtype(torch.float64)\ntorch.manual_seed(0)\nw = torch.randn(12, 4, requires_grad=True)\n"
            "b = torch.randn(12, requires_grad=True)\n"
            "ow = torch.randn(4, 4, requires_grad=True)\nx = torch.randn(3, 2, 4, requires_grad=True)\n"
            "out, weights = F.multi_head_attention_forward(x, x, x, 4, 2, w, b, None, None, False, 0.0, ow, None, "
            "key_padding_mask=torch.tensor([[False, False, True], [False, False, False]]))\n"
            "(out.sum() + weights.pow(2).sum()).backward()\ntorch.set_default_dtype(torch.float32)\n")
    try:
        assert_same(code)
    finally:
        torch.set_default_dtype(torch.float32)
        gv.set_default_dtype(gv.float32)


def test_multi_head_attention_forward_with_static_keys_as_torch():
    code = ("torch.set_default_dtype(torch.float64)\ntorch.manual_seed(0)\nw = torch.randn(12, 4, requires_grad=True)\n"
            "ow = torch.randn(4, 4, requires_grad=True)\nx = torch.randn(3, 2, 4, requires_grad=True)\n"
            "sk = torch.randn(4, 5, 2, requires_grad=True)\nsv = torch.randn(4, 5, 2, requires_grad=True)\n"
            "out, weights = F.multi_head_attention_forward(x, x, x, 4, 2, w, None, None, None, True, 0.0, ow, None, "
            "static_k=sk, static_v=sv)\n(out.sum() + weights.pow(2).sum()).backward()\n"
            "torch.set_default_dtype(torch.float32)\n")
    try:
        assert_same(code)
        assert_same_error(code.replace("torch.randn(4, 5, 2, requires_grad=True)\nsv", "torch.randn(3, 5, 2)\nsv"))
    finally:
        torch.set_default_dtype(torch.float32)
        gv.set_default_dtype(gv.float32)


MHA_ERRORS = {
    "heads_do_not_divide": "torch.nn.MultiheadAttention(6, 4)\n",
    "no_heads": "torch.nn.MultiheadAttention(6, 0)\n",
    "four_dim_query": "m = torch.nn.MultiheadAttention(4, 2)\nx = torch.ones(1, 2, 3, 4)\nm(x, x, x)\n",
    "mask_shape": "m = torch.nn.MultiheadAttention(4, 2)\nx = torch.ones(3, 2, 4)\nm(x, x, x, attn_mask=torch.zeros(2, 3))\n",
    "int_mask": "m = torch.nn.MultiheadAttention(4, 2)\nx = torch.ones(3, 2, 4)\nm(x, x, x, attn_mask=torch.zeros(3, 3, dtype=torch.long))\n",
    "causal_without_mask": "m = torch.nn.MultiheadAttention(4, 2)\nx = torch.ones(3, 2, 4)\nm(x, x, x, is_causal=True)\n",
}


@pytest.mark.parametrize("name", sorted(MHA_ERRORS))
def test_multihead_attention_errors_as_torch(name):
    assert_same_error(MHA_ERRORS[name])


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask and attn_mask")
@settings(max_examples=20, deadline=None)
@given(heads=st.integers(1, 3), head_dim=st.integers(1, 3), length=st.integers(1, 4), source=st.integers(1, 4),
       batch=st.integers(1, 2), batch_first=st.booleans(), need_weights=st.booleans(), self_attention=st.booleans(),
       mask=st.sampled_from([None, "bool", "float"]), padding=st.booleans(), seed=st.integers(0, 2**16))
def test_hypothesis_multihead_attention(heads, head_dim, length, source, batch, batch_first, need_weights,
                                        self_attention, mask, padding, seed):
    rng = np.random.default_rng(seed)
    embed = heads * head_dim
    source = length if self_attention else source
    shape = lambda n: (batch, n, embed) if batch_first else (n, batch, embed)  # noqa: E731
    arrays = [rng.standard_normal(shape(length)), rng.standard_normal(shape(source))]
    mask_array = None if mask is None else (rng.random((length, source)) < 0.3 if mask == "bool"
                                            else rng.standard_normal((length, source)))
    padding_array = None
    if padding:
        padding_array = np.zeros((batch, source), bool)
        padding_array[:, -1] = source > 1  # never every key of a row
    results = []
    for lib in (torch, gv):
        lib.manual_seed(0)
        module = lib.nn.MultiheadAttention(embed, heads, batch_first=batch_first, dtype=lib.float64)
        query = lib.tensor(arrays[0], requires_grad=True)
        key = query if self_attention else lib.tensor(arrays[1], requires_grad=True)
        out, weights = module(query, key, key, need_weights=need_weights,
                              attn_mask=None if mask_array is None else lib.tensor(mask_array),
                              key_padding_mask=None if padding_array is None else lib.tensor(padding_array))
        loss = (out * lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))).sum()
        (loss if weights is None else loss + (weights * weights).sum()).backward()
        results.append((out, weights, query, key, list(module.parameters())))
    (out_t, weights_t, *rest_t), (out_g, weights_g, *rest_g) = results
    assert_values(out_t.detach(), out_g.detach(), "out", rtol=1e-10, atol=1e-12)
    assert_graph(out_t.grad_fn, out_g.grad_fn)
    if weights_t is not None:
        assert_values(weights_t.detach(), weights_g.detach(), "weights", rtol=1e-10, atol=1e-12)
    for tensor_t, tensor_g in zip([rest_t[0], rest_t[1]] + rest_t[2], [rest_g[0], rest_g[1]] + rest_g[2]):
        assert_values(tensor_t.grad, tensor_g.grad, "grad", rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("make", ["torch.randn(2, 3, 2).transpose(1, 2)", "torch.randn(2, 2, 2, 3)", "torch.randn(3)",
                                  "torch.randn(4, 3).t().t()", "torch.randn(3, 2, 2).permute(2, 1, 0)"])
def test_linear_flattens_only_contiguous_inputs_as_torch(make):
    """``F.linear`` with a bias: PyTorch flattens a contiguous input around addmm (ViewBackward0s) and records
    ``matmul(input, wᵀ).add_(bias)`` for any other (a batch-first key transposed by multi-head attention)."""
    assert_same(f"torch.manual_seed(0)\nx = {make}.requires_grad_()\nw = torch.randn(2, 3, requires_grad=True)\n"
                "b = torch.randn(2, requires_grad=True)\n" + backward("F.linear(x, w, b)"))


def test_mismatched_mask_types_warn_as_torch():
    messages = []
    for lib in (torch, gv):
        module = lib.nn.MultiheadAttention(4, 2)
        x = lib.ones(3, 2, 4)
        with pytest.warns(UserWarning) as record:
            module(x, x, x, key_padding_mask=lib.zeros(2, 3, dtype=lib.bool), attn_mask=lib.zeros(3, 3))
        messages.append([str(w.message) for w in record])
    assert messages[0] == messages[1] and messages[0]
