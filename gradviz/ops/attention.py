"""Scaled dot-product attention, ``softmax(Q Kᵀ · scale + mask) V``, recorded as PyTorch 2.13 records it on the CPU.

PyTorch picks one of two paths, and so does ``F.scaled_dot_product_attention`` (``nn/attention.py``, which
decides; the nodes and the numpy kernels are here):

* the fused path (``_scaled_dot_product_flash_attention_for_cpu``): one node,
  ``ScaledDotProductFlashAttentionForCpuBackward0``, with edges to query, key and value. PyTorch takes it for
  4-D query/key/value of one floating dtype, the same batch size, the same head size in all three, a unit
  last stride, non-empty sequences, no dropout and a 2-D or 4-D mask (if any) that needs no gradient; a mask
  and ``is_causal`` are then applied together. The node saves
  what PyTorch's does: ``query``, ``key``, ``value``, ``output``, ``logsumexp`` (of each row of scores, laid
  out as PyTorch lays it out), ``attn_mask`` (a boolean mask converted to 0/-inf), ``dropout_p``,
  ``is_causal`` and ``scale``. Its gradient is computed here in numpy from those (the scores recomputed,
  ``P = exp(S - logsumexp)``); PyTorch has no derivative of that backward, so a second order records a
  ``NotImplemented`` node, as PyTorch's does.
* the math path (``_scaled_dot_product_attention_math``) for everything else: PyTorch's composite, node for
  node: ``q · √scale`` and ``kᵀ · √scale`` (MulBackward1), ``matmul``, the mask added in place
  (AddBackward0), ``_safe_softmax`` (SafeSoftmaxBackward0: a row with no key left gives zeros, not NaN),
  dropout (MulBackward0 by a mask drawn as ``F.dropout`` draws it), ``matmul`` with value.
"""
from __future__ import annotations

import math

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops.activation import SoftmaxBackward0, _softmax_of
from gradviz.ops.no_derivative import NotImplemented, without_derivative
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.tensor import Tensor, zeros_like


class SafeSoftmaxBackward0(SoftmaxBackward0):
    """``softmax`` along ``dim``, but a row whose every entry is ``-inf`` gives zeros (``_safe_softmax``)."""

    derivatives = {"self": ("_softmax_backward_data(grad, result, dim, self.scalar_type())",
                            r"y \odot (\bar{y} - \textstyle\sum_j \bar{y}_j y_j)")}

    def forward(ctx, self, dim):
        axis = ctx.axis = wrap_dim(dim, self.ndim)
        ctx.save(dim=saved_dim(dim))
        out = _softmax_of(self, axis, log=False)
        backend = self._backend
        masked = backend.all_along(backend.eq(self._data, float("-inf")), axis if self.ndim else None, keepdims=True)
        return backend.where(masked, backend.zeros_like(out), out) if backend.any(masked) else out


# -- the fused node --------------------------------------------------------------------------------------------------
def _compute_dtype(dtype):
    """Half precision is computed in float32, as PyTorch's CPU kernel accumulates it."""
    return np.float64 if dtype is _dtype.float64 else np.float32


def _scores(q, k, mask, scale: float, is_causal: bool):
    """``q kᵀ · scale``, the mask added and, if causal, ``-inf`` above the diagonal (top-left aligned)."""
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * q.dtype.type(scale)
    if mask is not None:
        scores = scores + mask.astype(scores.dtype)
    if is_causal:
        rows, columns = scores.shape[-2:]
        scores = np.where(np.tril(np.ones((rows, columns), bool)), scores, -np.inf)
    return scores


def _repeat_heads(array, heads: int):
    """Key or value repeated along the head dim to ``heads`` heads (grouped-query attention)."""
    return array if array.shape[-3] == heads else np.repeat(array, heads // array.shape[-3], axis=-3)


def _sum_groups(grad, heads: int):
    """The gradient of ``_repeat_heads`` back to ``heads`` heads: each group's repeats summed into its one head."""
    if grad.shape[-3] == heads:
        return grad
    return grad.reshape(grad.shape[:-3] + (heads, grad.shape[-3] // heads) + grad.shape[-2:]).sum(axis=-3)


def _scale_of(scale, head_size: int) -> float:
    return scale if scale is not None else 1.0 / math.sqrt(head_size)


def _to_numpy(backend, data, dtype):
    """Backend data as a numpy array of ``dtype`` (the kernels below are numpy's, as convolution's are)."""
    return np.asarray(backend.to_numpy(data), dtype=dtype)


def _swap_last(backend, data):
    """``data`` with its last two dims swapped (a view)."""
    axes = list(range(data.ndim))
    axes[-2:] = axes[-1], axes[-2]
    return backend.permute(data, tuple(axes))


def _from_numpy(array, dtype, backend, device, like=None):
    """A numpy result as ``backend`` data of ``dtype``; laid out in memory as the tensor ``like`` is, when given
    (PyTorch's ``empty_like``: a dense tensor's strides exactly, size-1 dims' too)."""
    array = np.ascontiguousarray(array, dtype.numpy)
    data = array if backend.name == "numpy" else backend.array(array, dtype, device)
    if like is None:
        return data
    laid_out = zeros_like(like, dtype=dtype)._data
    backend.assign(laid_out, data)
    return laid_out


def attention_forward(q, k, v, mask, scale: float, is_causal: bool, half: bool = False):
    """(output, logsumexp) of ``softmax(q kᵀ · scale + mask) v`` in the compute dtype; a row with no key
    left (all masked) has output 0 and logsumexp 0, as PyTorch's kernel leaves them. With ``half``, the unnormalised weights are rounded
    to float16 before they meet v and the sum divides after, as PyTorch's kernel does for half inputs."""
    heads = q.shape[-3]
    scores = _scores(q, _repeat_heads(k, heads), mask, scale, is_causal)
    peak = scores.max(axis=-1, keepdims=True)
    peak = np.where(np.isneginf(peak), 0, peak)
    weights = np.exp(scores - peak)
    total = weights.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        logsumexp = np.where(total > 0, peak + np.log(total), 0)[..., 0]
        if half:
            out = np.matmul(weights.astype(np.float16).astype(q.dtype), _repeat_heads(v, heads)) / total
            return np.where(total > 0, out, 0), logsumexp
        probabilities = np.where(total > 0, weights / total, 0)
    return np.matmul(probabilities, _repeat_heads(v, heads)), logsumexp


def attention_backward(grad, q, k, v, output, logsumexp, mask, scale: float, is_causal: bool, half: bool = False):
    """(dq, dk, dv) of ``softmax(q kᵀ · scale + mask) v``: with ``P = exp(S - logsumexp)``,
    ``dV = Pᵀ dO``, ``dS = P ⊙ (dO Vᵀ - rowsum(dO ⊙ O))``, ``dQ = dS K · scale``, ``dK = dSᵀ Q · scale``.
    With ``half``, P and dS are rounded to float16 before their products, as PyTorch's kernel does."""
    rounded = (lambda a: a.astype(np.float16).astype(a.dtype)) if half else (lambda a: a)
    heads = q.shape[-3]
    keys, values = _repeat_heads(k, heads), _repeat_heads(v, heads)
    scores = _scores(q, keys, mask, scale, is_causal)
    probabilities = np.exp(scores - logsumexp[..., None])  # 0 wherever the score is -inf
    grad_value = np.matmul(np.swapaxes(rounded(probabilities), -1, -2), grad)
    grad_weights = np.matmul(grad, np.swapaxes(values, -1, -2))
    grad_scores = rounded(probabilities * (grad_weights - (grad * output).sum(axis=-1, keepdims=True)))
    factor = q.dtype.type(scale)
    grad_query = np.matmul(grad_scores, keys) * factor
    grad_key = np.matmul(np.swapaxes(grad_scores, -1, -2), q) * factor
    return grad_query, _sum_groups(grad_key, k.shape[-3]), _sum_groups(grad_value, v.shape[-3])


class ScaledDotProductFlashAttentionForCpuBackward0(OpFunction):
    _result_name = "output"  # saves its output (ctx.save_result(), declared once for the class)
    inputs = ("query", "key", "value")
    derivatives = {
        "query": ("_scaled_dot_product_flash_attention_for_cpu_backward(grad, query, key, value, output, logsumexp, "
                  "dropout_p, is_causal, attn_mask, scale)[0]", r"\mathrm{d}S\,K\cdot s"),
        "key": ("..._backward(...)[1]", r"\mathrm{d}S^{\top} Q\cdot s"),
        "value": ("..._backward(...)[2]", r"P^{\top}\bar{y}"),
    }

    def forward(ctx, query, key, value, attn_mask, is_causal, scale):
        backend, compute = query._backend, _compute_dtype(query.dtype)
        q, k, v = (_to_numpy(backend, t._data, compute) for t in (query, key, value))
        mask = None if attn_mask is None else _to_numpy(backend, attn_mask._data, compute)
        out, logsumexp = attention_forward(q, k, v, mask, _scale_of(scale, q.shape[-1]), is_causal,
                                            half=query.dtype is _dtype.float16)
        # PyTorch's kernel writes logsumexp as (batch, query, head) and hands it back transposed
        lse_dtype = _dtype.float64 if query.dtype is _dtype.float64 else _dtype.float32
        lse = _from_numpy(np.swapaxes(logsumexp, -1, -2), lse_dtype, backend, query.device)
        ctx.save(attn_mask=attn_mask, dropout_p=0.0, is_causal=bool(is_causal), key=key,
                 logsumexp=Tensor._make(_swap_last(backend, lse), backend=backend),
                 query=query, scale=scale, value=value)
        ctx.dtype, ctx.device = query.dtype, query.device
        return _from_numpy(out, query.dtype, backend, query.device, like=query)  # the query's layout, as PyTorch's

    def backward(ctx, grad):
        query, key, value, output, logsumexp, mask = ctx.saved("query", "key", "value", "output", "logsumexp",
                                                               "attn_mask")
        backend, compute = ctx.backend, _compute_dtype(ctx.dtype)
        q, k, v, o, g, lse = (_to_numpy(backend, a, compute) for a in (query, key, value, output, grad, logsumexp))
        mask = None if mask is None else _to_numpy(backend, mask, compute)
        grads = attention_backward(g, q, k, v, o, lse, mask, _scale_of(ctx.saved("scale"), q.shape[-1]),
                                   ctx.saved("is_causal"), half=ctx.dtype is _dtype.float16)
        return tuple(_from_numpy(gradient, ctx.dtype, backend, ctx.device) if needed else None
                     for gradient, needed in zip(grads, ctx.needs_input_grad))

    def backward_graph(ctx, grad):
        """PyTorch has no derivative of this backward: the gradients hang from a ``NotImplemented`` node."""
        grads = ctx.backward(grad._data)
        inputs = (grad,) + tuple(ctx.saved_graph("query", "key", "value", "output"))
        return tuple(None if gradient is None else
                     without_derivative(NotImplemented, gradient, inputs,
                                        "_scaled_dot_product_flash_attention_for_cpu_backward")
                     for gradient in grads)
