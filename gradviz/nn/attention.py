"""Attention as PyTorch 2.13 writes it: ``F.scaled_dot_product_attention`` (which of PyTorch's two CPU paths it
takes, and the math path's composite; the fused node and its kernels are in ``ops/attention.py``), then
``F.multi_head_attention_forward`` and ``nn.MultiheadAttention``.

The multi-head function is PyTorch's composite, op for op, so the graph is PyTorch's node for node: the packed in-projection
(one ``linear`` for self-attention, split into three (or two) otherwise), the heads folded into the batch
(``view``/``transpose``), then either

* ``need_weights=True``: ``baddbmm(mask, q·√(1/E), kᵀ)`` (``bmm`` without a mask), ``softmax``, dropout, ``bmm`` with
  v, and the weights handed back (averaged over the heads unless ``average_attn_weights=False``), or
* ``need_weights=False``: ``F.scaled_dot_product_attention`` on ``(batch, heads, length, head size)`` views, which
  records PyTorch's one fused node where PyTorch's dispatcher takes it,

and ``out_proj`` as a ``linear`` on the rows. Boolean masks become float masks with ``-inf`` where True
(``_canonical_mask``). The module initialises as PyTorch's under the same seed: ``out_proj`` (a Linear, drawn
first), ``xavier_uniform_`` of the in-projection, zero biases, ``xavier_normal_`` of ``bias_k``/``bias_v``.

PyTorch's inference fast path (``_native_multi_head_attention``, taken in eval mode with no gradient wanted)
is not copied: the composite computes the same values (to float rounding).
"""
from __future__ import annotations

import math
import warnings

from gradviz import _dtype
from gradviz.nn import functional as F, init
from gradviz.nn.modules import Linear, Module, Parameter
from gradviz.ops.arithmetic import MulBackward1
from gradviz.ops.attention import SafeSoftmaxBackward0, ScaledDotProductFlashAttentionForCpuBackward0, _scale_of
from gradviz.ops.combine import cat
from gradviz.ops.linalg import bmm, matmul
from gradviz.ops.products import baddbmm
from gradviz.tensor import Tensor, empty, ones, zeros, zeros_like


# -- scaled dot-product attention: which of PyTorch's two paths, and its math composite --------------------------------
def _type_name(dtype) -> str:
    return _dtype.CPP_NAMES.get(dtype.name, dtype.name)


def _check(query, key, value, attn_mask, dropout_p, is_causal):
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError("Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{query.ndim} key.dim: {key.ndim} and value.dim: {value.ndim} instead.")
    if not (query.dtype is key.dtype is value.dtype):
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{_type_name(query.dtype)} key.dtype: {_type_name(key.dtype)} and value.dtype: "
                           f"{_type_name(value.dtype)} instead.")
    if attn_mask is not None and attn_mask.dtype is not _dtype.bool and attn_mask.dtype is not query.dtype:
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {_type_name(attn_mask.dtype)} and  query.dtype: "
                           f"{_type_name(query.dtype)} instead.")


def _takes_fused_path(query, key, value, attn_mask, dropout_p, enable_gqa) -> bool:
    """Whether PyTorch's CPU dispatcher picks the fused kernel (``use_flash_attention_cpp``'s checks, in order)."""
    tensors = (query, key, value)
    if dropout_p > 0.0 or any(t.ndim != 4 for t in tensors) or not query.dtype.is_floating_point:
        return False
    if not (query.shape[0] == key.shape[0] == value.shape[0]):
        return False
    heads, key_heads = query.shape[1], key.shape[1]
    if key.shape[1] != value.shape[1]:
        return False
    if heads != key_heads and not (enable_gqa and key_heads and heads % key_heads == 0):
        return False
    if attn_mask is not None and not _mask_fits(attn_mask, query, key):
        return False
    if not (query.shape[-1] == key.shape[-1] == value.shape[-1]):
        return False
    if query.shape[-2] == 0 or key.shape[-2] == 0:
        return False
    return all(t.shape[-1] == 1 or t.stride()[-1] == 1 for t in tensors)


def _mask_fits(mask, query, key) -> bool:
    """``check_attn_mask_shape``: a mask without grad, 2-D or 4-D, each dim its target's size or 1."""
    if mask.requires_grad:
        return False
    if mask.ndim < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    if mask.shape[-2] not in (query.shape[2], 1) or mask.shape[-1] not in (key.shape[2], 1):
        return False
    if mask.ndim == 2:
        return True
    return mask.ndim == 4 and mask.shape[0] in (1, query.shape[0]) and mask.shape[1] in (1, query.shape[1])


def _float_mask(mask, dtype):
    """A boolean mask as the 0/-inf float mask PyTorch adds (``convert_boolean_attn_mask``); a float one as is."""
    if mask is None or mask.dtype is not _dtype.bool:
        return mask
    backend = mask._backend
    data = backend.where(mask._data, backend.full((), 0.0, dtype), backend.full((), float("-inf"), dtype))
    return Tensor._make(data, backend=backend)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                                 scale=None, enable_gqa: bool = False):
    """``softmax(query keyᵀ · scale + attn_mask) value`` (``scale`` defaults to ``1/√E``); see the module's notes
    for the node(s) recorded."""
    _check(query, key, value, attn_mask, dropout_p, is_causal)
    if query.numel() == 0 or key.numel() == 0 or value.numel() == 0:
        return _empty_attention(query, key, value)
    if _takes_fused_path(query, key, value, attn_mask, dropout_p, enable_gqa):
        if dropout_p != 0.0:  # a negative probability gets this far: the kernel's own check
            raise RuntimeError("scaled_dot_product_attention_flash_attention: Currently do not support dropout > 0")
        mask = _float_mask(attn_mask, query.dtype)
        return ScaledDotProductFlashAttentionForCpuBackward0.apply(query, key, value, mask, is_causal, scale)
    return _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _empty_attention(query, key, value):
    """An empty input: zeros of the output's shape, joined to the inputs by ``(Σq + Σk + Σv)·0`` as PyTorch
    joins them (so each input still gets a gradient, of zeros)."""
    shape = tuple(query.shape[:-1]) + (value.shape[-1],)
    joined = MulBackward1.apply(query.sum() + key.sum() + value.sum(), 0)
    return zeros(shape, dtype=query.dtype, device=query.device) + joined


def _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """PyTorch's composite (``_scaled_dot_product_attention_math``), node for node."""
    if is_causal and attn_mask is not None:  # (the fused kernel applies both)
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if not query.dtype.is_floating_point:  # what the first matmul says of the float-scaled query and the key
        raise RuntimeError(f"expected scalar type {_dtype.SCALAR_TYPE_NAMES[_dtype.get_default_dtype().name]} but "
                           f"found {_dtype.SCALAR_TYPE_NAMES[key.dtype.name]}")
    half = query.dtype is _dtype.float16
    if half:  # PyTorch's CPU math path computes half precision in float32 and rounds the result once
        query, key, value = (t.to(_dtype.float32) for t in (query, key, value))
    negative = scale is not None and scale < 0
    factor = math.sqrt(_scale_of(abs(scale) if negative else scale, query.shape[-1]))
    query = MulBackward1.apply(query, -factor if negative else factor)
    if is_causal:
        rows, columns = query.shape[-2], key.shape[-2]
        attn_mask = ones((rows, columns), dtype=_dtype.bool, device=query.device).tril()
    attn_mask = _float_mask(attn_mask, query.dtype)
    if enable_gqa:
        key, value = _repeat_for_groups(query, key, value)
    scores = matmul(query, MulBackward1.apply(key.transpose(-2, -1), factor))
    if attn_mask is not None:
        scores.add_(attn_mask)
    weights = SafeSoftmaxBackward0.apply(scores, -1)
    if dropout_p > 0.0:
        if dropout_p > 1.0:  # ATen's dropout raises RuntimeError where F.dropout raises ValueError
            raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
        weights = F.dropout(weights, dropout_p, True)
    out = matmul(weights, value)
    return out.to(_dtype.float16) if half else out


def _repeat_for_groups(query, key, value):
    """Grouped-query attention: key and value heads repeated to the query's (``repeat_interleave`` on dim -3)."""
    heads, key_heads, value_heads = query.shape[-3], key.shape[-3], value.shape[-3]
    if heads == key_heads == value_heads:
        return key, value
    if heads % key_heads or heads % value_heads:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
    return key.repeat_interleave(heads // key_heads, -3), value.repeat_interleave(heads // value_heads, -3)


def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _canonical_mask(mask, mask_name: str, other_type, other_name: str, target_type, check_other: bool = True):
    """A boolean mask as a float mask of ``target_type`` (``-inf`` where True); a float mask as it is."""
    if mask is None:
        return None
    mask_dtype = mask.dtype
    if mask_dtype is not _dtype.bool and not mask_dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask_dtype is not other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.")
    if mask_dtype is _dtype.bool:
        mask = zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads: int) -> bool:
    """Whether the input is batched (3-D) or not (2-D), with PyTorch's assertions on the other shapes."""
    if query.dim() == 3:
        if not (key.dim() == 3 and value.dim() == 3):
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if not (key.dim() == 2 and value.dim() == 2):
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"{attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query tensor")


def _in_projection_packed(q, k, v, w, b=None):
    """q, k and v projected by the packed ``(3E, E)`` weight: one ``linear`` when all three are one tensor
    (self-attention), one for q and one for k and v when only those two are, else three."""
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = F.linear(q, w, b)
            # (..., 3, E) brought to the front as PyTorch does it, then made contiguous: proj[0], [1], [2]
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        q_proj = F.linear(q, w_q, b_q)
        kv_proj = F.linear(k, w_kv, b_kv)
        kv_proj = kv_proj.unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return q_proj, kv_proj[0], kv_proj[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return F.linear(q, w_q, b_q), F.linear(k, w_k, b_k), F.linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    """q, k and v projected by three separate weights (``kdim``/``vdim`` differ from ``embed_dim``)."""
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    checks = ((w_q, (Eq, Eq), "query"), (w_k, (Eq, Ek), "key"), (w_v, (Eq, Ev), "value"))
    for weight, shape, name in checks:
        if tuple(weight.shape) != shape:
            raise AssertionError(f"expecting {name} weights shape of {shape}, but got {weight.shape}")
    for bias, name in ((b_q, "query"), (b_k, "key"), (b_v, "value")):
        if bias is not None and tuple(bias.shape) != (Eq,):
            raise AssertionError(f"expecting {name} bias shape of {(Eq,)}, but got {bias.shape}")
    return F.linear(q, w_q, b_q), F.linear(k, w_k, b_k), F.linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn: bool, dropout_p: float, out_proj_weight,
                                 out_proj_bias, training: bool = True, key_padding_mask=None, need_weights: bool = True,
                                 attn_mask=None, use_separate_proj_weight: bool = False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
                                 average_attn_weights: bool = True, is_causal: bool = False):
    """Attention of ``query`` (L, N, E) over ``key``/``value`` (S, N, ·) with ``num_heads`` heads, sequence first
    (or unbatched: (L, E)); returns ``(output, weights or None)``. PyTorch's composite, op for op."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                       query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
                           "`generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the fused kernel makes the causal mask itself
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False  # the merged mask is not causal any more
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key." if static_k is not None
                                 else "bias cannot be added to static value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))

    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else \
        _static(static_k, "static_k", bsz * num_heads, head_dim)
    v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else \
        _static(static_v, "static_v", bsz * num_heads, head_dim)

    if add_zero_attn:
        zero_attn_shape = (bsz * num_heads, 1, head_dim)
        k = cat([k, zeros(zero_attn_shape, dtype=k.dtype, device=k.device)], dim=1)
        v = cat([v, zeros(zero_attn_shape, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    src_len = k.size(1)

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{key_padding_mask.shape}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(
            bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        _, _, E = q.shape
        q_scaled = q * math.sqrt(1.0 / float(E))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        if attn_mask is not None:
            weights = baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            weights = bmm(q_scaled, k.transpose(-2, -1))
        weights = F.softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        attn_output = bmm(weights, v)
        attn_output = attn_output.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        attn_output = F.linear(attn_output, out_proj_weight, out_proj_bias)
        attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            attn_output, weights = attn_output.squeeze(1), weights.squeeze(0)
        return attn_output, weights

    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    attn_output = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    attn_output = attn_output.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    attn_output = F.linear(attn_output, out_proj_weight, out_proj_bias)
    attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
    if not is_batched:
        attn_output = attn_output.squeeze(1)
    return attn_output, None


def _static(tensor, name: str, batch_heads: int, head_dim: int):
    """A precomputed key or value, ``(N·heads, S, head_dim)``, used in place of the projected one."""
    if tensor.size(0) != batch_heads:
        raise AssertionError(f"expecting {name}.size(0) of {batch_heads}, but got {tensor.size(0)}")
    if tensor.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {tensor.size(2)}")
    return tensor


class NonDynamicallyQuantizableLinear(Linear):
    """The Linear PyTorch gives ``MultiheadAttention.out_proj`` (a Linear under another name, for quantization)."""


class MultiheadAttention(Module):
    """Attention with ``num_heads`` heads over ``embed_dim`` features (PyTorch's ``nn.MultiheadAttention``)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None, batch_first: bool = False,
                 device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        options = dict(device=device, dtype=dtype)
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **options))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **options))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **options))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **options))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty((3 * embed_dim,), **options))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **options)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), **options))
            self.bias_v = Parameter(empty((1, 1, embed_dim), **options))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        is_batched = query.dim() == 3
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                           query.dtype)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if self.batch_first and is_batched:
            # transposed once per distinct tensor, so that "query is key is value" still holds after
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        attn_output, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=separate, q_proj_weight=self.q_proj_weight if separate else None,
            k_proj_weight=self.k_proj_weight if separate else None, v_proj_weight=self.v_proj_weight if separate else None,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            return attn_output.transpose(1, 0), weights
        return attn_output, weights
