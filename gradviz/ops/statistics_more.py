"""Statistics learners meet: ``quantile``/``nanquantile`` (every interpolation mode), ``cov``, ``corrcoef``,
``trapezoid``/``trapz``, ``cumulative_trapezoid``, ``histogram``.

All but ``histogram`` are PyTorch's composites, written here with the same ops in the same order so the graph
shows PyTorch's nodes: ``quantile`` sorts (``SortBackward0``), gathers the values below and above each rank
(``GatherBackward0``) and interpolates between them in place (``LerpBackward1``, a tensor weight), then
squeezes in place (``SqueezeBackward4``); ``cov`` centres with a mean, multiplies by the transpose
(``MmBackward0``) and divides by the normalization; ``corrcoef`` divides by the standard deviations and
clamps to [-1, 1]; ``trapezoid`` is ``(sum(y) - (y[0] + y[-1]) / 2) · dx``, or ``sum(dx · (y[1:] + y[:-1])) / 2``
with sample points. ``histogram`` has no derivative: PyTorch's ``NotImplemented`` node.
"""
from __future__ import annotations

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import meta, to_input, wrap_dim
from gradviz.tensor import Tensor

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


# -- lerp with a tensor weight (what quantile interpolates with) -------------------------------------------------
class LerpBackward1(OpFunction):
    """``self + weight · (end - self)`` with a tensor ``weight``. ``self`` and ``end`` are saved only when the
    weight needs a gradient (``end - self``), as PyTorch saves them."""

    inputs = ("self", "end", "weight")
    derivatives = {"self": ("grad * (1 - weight)", r"\bar{y}\,(1 - w)"), "end": ("grad * weight", r"\bar{y}\,w"),
                   "weight": ("grad * (end - self)", r"\bar{y}\,(e - s)")}

    def forward(ctx, self, end, weight):
        needs = ctx.needs_input_grad
        weight_needed = len(needs) == 3 and needs[2]
        ctx.save(end=end if weight_needed else None, self=self if weight_needed else None, weight=weight)
        ctx.metas = (meta(self), meta(end), meta(weight))
        backend = self._backend
        start, stop, w = (np.asarray(backend.to_numpy(t._data)) for t in (self, end, weight))
        with np.errstate(all="ignore"):  # PyTorch's kernel: the two forms that are exact at each end
            values = np.where(np.abs(w) < 0.5, start + w * (stop - start), stop - (stop - start) * (1 - w))
        return backend.array(values.astype(start.dtype), self.dtype, backend.device_of(self._data))

    def backward(ctx, grad):
        backend = ctx.backend
        needs = ctx.needs_input_grad
        weight = np.asarray(backend.to_numpy(ctx.saved("weight")))
        values = np.asarray(backend.to_numpy(grad))
        dtype = _dtype.from_any(grad.dtype)

        def made(array):
            return backend.array(np.asarray(array, dtype=values.dtype), dtype, backend.device_of(grad))

        grads = [made(values * (1 - weight)) if needs[0] else None, made(values * weight) if needs[1] else None,
                 None]
        if needs[2]:
            start, stop = (np.asarray(backend.to_numpy(v)) for v in ctx.saved("self", "end"))
            grads[2] = made(values * (stop - start))
        return tuple(None if g is None else to_input(backend, g, m) for g, m in zip(grads, ctx.metas))


# -- quantile, nanquantile ------------------------------------------------------------------------------------
def _quantile(name: str, input, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool):
    from gradviz.ops.inplace import apply_
    from gradviz.ops.reduction import any as tensor_any, sum as tensor_sum
    from gradviz.ops.composites import broadcast_tensors
    from gradviz.ops.indexing import masked_fill
    from gradviz.tensor import full_like, tensor as make_tensor

    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not isinstance(q, Tensor):
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        q = make_tensor(q, dtype=input.dtype)
    if interpolation not in _MODES:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, but got "
                           f"{interpolation}")
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if q.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if input.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if q.dtype is not input.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    # the output's shape: q's size, then the input's with ``dim`` reduced
    if dim is not None and input.ndim > 0:
        wrapped = wrap_dim(dim, input.ndim)
        out_shape = list(input.shape)
        if keepdim:
            out_shape[wrapped] = 1
        else:
            del out_shape[wrapped]
    else:
        wrapped = wrap_dim(dim, max(input.ndim, 1)) if dim is not None else None
        out_shape = [1] * input.ndim if keepdim else []
    if q.ndim > 0:
        out_shape.insert(0, q.numel())
    q_values = np.asarray(q._backend.to_numpy(q._data))
    if not bool(np.all((q_values >= 0) & (q_values <= 1))):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    # sorted along the reduced dim, moved last
    if dim is None:
        sorted_values = input.flatten().sort().values
    elif wrapped == input.ndim - 1:
        sorted_values = input.sort().values
    else:
        sorted_values = input.unsqueeze(-1).transpose(wrapped, -1).sort().values
    if q.ndim == 0:
        out_shape.insert(0, q.numel())
    in_shape = out_shape[1:] + [sorted_values.shape[-1]]  # (*, n): one row per output element
    sorted_values = sorted_values.view(in_shape)
    # the rank of each quantile among the sorted values
    last_index = sorted_values.shape[-1] - 1
    if ignore_nan:  # ranks among the values that are not NaN (rank 0 where all are: the quantile is NaN)
        counts = tensor_sum(sorted_values.isnan().logical_not_(), -1, True)
        ranks = q * (counts - 1)
        ranks.masked_fill_(ranks < 0, 0)
    else:  # a NaN sorts last: its row's rank is the last index, so the quantile is NaN
        scaled, has_nan = broadcast_tensors(q * last_index, tensor_any(sorted_values.isnan(), -1, True))
        ranks = masked_fill(scaled, has_nan, last_index)
    if interpolation == "lower":
        ranks.floor_()
    elif interpolation == "higher":
        ranks.ceil_()
    elif interpolation == "nearest":
        ranks.round_()
    ranks_below = ranks.to(_dtype.int64)
    values_below = sorted_values.gather(-1, ranks_below)
    if interpolation in ("linear", "midpoint"):
        weights = full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - ranks_below
        ranks_above = ranks.ceil_().to(_dtype.int64)
        values_above = sorted_values.gather(-1, ranks_above)
        apply_(values_below, LerpBackward1.apply, values_above, weights)
    if q.ndim == 0:
        return values_below.squeeze_(-1)
    return values_below.unsqueeze_(0).transpose_(0, -1).squeeze_(-1)


def quantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear", out=None):
    """The ``q``-th quantiles of ``input`` (all of it, or along ``dim``): between the sorted values below and
    above each rank ``q · (n - 1)``, by ``interpolation``. A NaN among the values makes the quantile NaN."""
    result = _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)
    return result if out is None else _write_out("quantile", result, out)


def nanquantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear", out=None):
    """``quantile`` over the values that are not NaN (NaN where all are)."""
    result = _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)
    return result if out is None else _write_out("nanquantile", result, out)


def _write_out(name: str, result, out):
    from gradviz.ops.arithmetic import write_out

    return write_out(name, result, out)


def tensor_methods() -> dict:
    return {"quantile": quantile, "nanquantile": nanquantile}


def torch_functions() -> dict:
    return {"quantile": quantile, "nanquantile": nanquantile}
