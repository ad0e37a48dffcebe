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
from gradviz.backends import numpy_backend
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
        values = numpy_backend.lerp(start, stop, w.astype(start.dtype, copy=False))  # PyTorch's kernel
        return backend.array(values, self.dtype, backend.device_of(self._data))

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

    def backward_graph(ctx, grad):
        """The same formulas recorded (``torch.lerp`` with a tensor weight, differentiated twice)."""
        from gradviz.ops._util import sum_to_tensor
        from gradviz.ops.double_backward import _one_minus

        needs = ctx.needs_input_grad
        shapes = [m[0] for m in ctx.metas]
        weight = ctx.saved_graph("weight")
        grad_self = sum_to_tensor(grad * _one_minus(weight), shapes[0]) if needs[0] else None
        grad_end = sum_to_tensor(grad * weight, shapes[1]) if needs[1] else None
        grad_weight = None
        if needs[2]:
            start, stop = ctx.saved_graph("self", "end")
            grad_weight = sum_to_tensor(grad * (stop - start), shapes[2])
        return grad_self, grad_end, grad_weight


# -- quantile, nanquantile ------------------------------------------------------------------------------------
def _quantile(name: str, input, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool):
    """ATen's ``quantile_compute`` (its checks name ``quantile()`` for ``nanquantile`` too)."""
    from gradviz.ops.inplace import apply_
    from gradviz.ops.reduction import any as tensor_any, sum as tensor_sum
    from gradviz.ops.composites import broadcast_tensors
    from gradviz.ops.indexing import masked_fill
    from gradviz.tensor import full_like, tensor as make_tensor

    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not isinstance(q, Tensor):
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        q = make_tensor(q, dtype=input.dtype)
    if interpolation not in _MODES:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but got "
                           f"{interpolation}")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q.dtype is not input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
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
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
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


# -- cov, corrcoef ------------------------------------------------------------------------------------------------
def _check_weights(name: str, weights, observations: int, integral: bool) -> None:
    kind = "fweights" if integral else "aweights"
    if weights.ndim > 1:
        raise RuntimeError(f"cov(): expected {kind} to have one or fewer dimensions but got {kind} with {weights.ndim} "
                           "dimensions")
    wanted_ok = (not weights.dtype.is_floating_point and weights.dtype is not _dtype.bool) if integral \
        else weights.dtype.is_floating_point
    if not wanted_ok:
        label = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {kind} to have {label} dtype but got {kind} with "
                           f"{_dtype.SCALAR_TYPE_NAMES[weights.dtype.name]} dtype")
    if weights.numel() != observations:
        raise RuntimeError(f"cov(): expected {kind} to have the same numel as there are observations in the input but "
                           f"got {weights.numel()} != {observations}")
    values = np.asarray(weights._backend.to_numpy(weights._data))
    if observations and values.min() < 0:
        raise RuntimeError(f"cov(): {kind} cannot be negative")


def cov(input, *, correction: int = 1, fweights=None, aweights=None):
    """The covariance matrix of the rows of ``input`` (variables × observations), as ATen computes it: the
    (weighted) mean subtracted, ``mm`` with the transpose, divided by the normalization, squeezed."""
    import warnings

    from gradviz.ops.shape import squeeze
    from gradviz.ops.reduction import sum as tensor_sum
    from gradviz.tensor import tensor as make_tensor

    if not isinstance(input, Tensor):
        raise TypeError(f"cov(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {input.ndim} "
                           "dimensions")
    if input.dtype is _dtype.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    data = input.view(1, -1) if input.ndim < 2 else input
    observations = data.shape[1]
    weights = None
    if fweights is not None:
        _check_weights("cov", fweights, observations, integral=True)
        weights = fweights
    if aweights is not None:
        _check_weights("cov", aweights, observations, integral=False)
        weights = aweights if weights is None else weights * aweights
    weight_sum = tensor_sum(weights) if weights is not None else make_tensor(observations, dtype=_dtype.int64)
    if weights is not None and not bool(weight_sum.ne(0)):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    average = tensor_sum(data * weights if weights is not None else data, 1) / weight_sum
    if weights is not None and aweights is not None and correction != 0:
        norm_factor = weight_sum - correction * tensor_sum(weights * aweights) / weight_sum
    else:
        norm_factor = weight_sum - correction
    if bool(norm_factor.le(0)):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations. (Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/"
                      "Correlation.cpp:123.)", UserWarning, stacklevel=2)
        norm_factor.zero_()
    centred = data - average.unsqueeze(1)
    product = centred.mm((centred * weights if weights is not None else centred).t())
    return squeeze(_true_divide(product, norm_factor))


def _true_divide(a, b):
    from gradviz.ops.arithmetic import div

    return div(a, b)


def corrcoef(input):
    """Pearson's correlation coefficients of the rows: ``cov`` divided by the standard deviations (rows, then
    columns), clipped to [-1, 1]; a single variable gives ``c / c``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"corrcoef(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    deviations = c.diagonal().sqrt()
    c = c / deviations.view(-1, 1)
    c = c / deviations.view(1, -1)
    return c.clip(-1, 1)


# -- trapezoid, trapz, cumulative_trapezoid -------------------------------------------------------------------------
def _slices(y, dim: int, given_dim: int):
    """ATen's ``y.slice(dim, 0, -1)`` and ``y.slice(dim, 1)`` (an end not given is saved as None)."""
    from gradviz.ops.shape import slice_along

    size = y.shape[dim]
    left = slice_along(y, dim, 0, max(size - 1, 0), 1, given=(0, -1), given_dim=given_dim)
    right = slice_along(y, dim, min(1, size), size, 1, given=(1, None), given_dim=given_dim)
    return left, right


def _spacing(name: str, y, x, dim: int):
    """``x``'s differences along ``dim``, ``x`` viewed so that they broadcast against ``y``'s."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        sizes = [1] * y.ndim
        sizes[dim] = x.shape[0]
        viewed = x.view(sizes)
    elif x.ndim < y.ndim:
        viewed = x.view([1] * (y.ndim - x.ndim) + list(x.shape))
    else:
        viewed = x
    left, right = _slices(viewed, dim, dim)
    return right - left


def _check_real_dx(name: str, dx) -> None:
    if isinstance(dx, bool) or isinstance(dx, complex):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")


def trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The trapezoidal rule along ``dim``: with spacing ``dx`` (1 by default), ``(sum(y) - (y₀ + yₙ)/2) · dx``;
    with sample points ``x``, ``sum(Δx · (y[:-1] + y[1:])) / 2``."""
    from gradviz.ops.reduction import sum as tensor_sum
    from gradviz.ops.shape import select

    if not isinstance(y, Tensor):
        raise TypeError(f"trapezoid(): argument 'y' (position 1) must be Tensor, not {type(y).__name__}")
    if isinstance(x, Tensor):
        axis = wrap_dim(dim, y.ndim)
        if y.shape[axis] == 0:
            return _zeros_except(y, axis)
        if y.dtype is _dtype.bool or x.dtype is _dtype.bool:
            raise RuntimeError("trapezoid: received a bool input for `x` or `y`, but bool is not supported")
        left, right = _slices(y, axis, axis)
        return _over_number(tensor_sum((left + right) * _spacing("trapezoid", y, x, axis), axis), 2.0)
    spacing = 1 if dx is None else dx
    axis = wrap_dim(dim, y.ndim)
    if y.shape[axis] == 0:
        return _zeros_except(y, axis)
    if y.dtype is _dtype.bool:
        raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
    _check_real_dx("trapezoid", spacing)
    ends = select(y, axis, 0, given=0, given_dim=dim) + select(y, axis, y.shape[axis] - 1, given=-1, given_dim=dim)
    return _times_number(tensor_sum(y, dim) - _times_number(ends, 0.5), float(spacing))


def _times_number(tensor, number: float):
    """``tensor * number`` as C++ writes it (a Scalar: MulBackward1); an integer tensor, which never needs a
    gradient, takes the ordinary product and its promotion to the default float dtype."""
    from gradviz.ops.arithmetic import MulBackward1

    return MulBackward1.apply(tensor, number) if tensor.dtype.is_floating_point else tensor * number


def _over_number(tensor, number: float):
    """``tensor / number`` as C++ writes it (DivBackward1)."""
    from gradviz.ops.arithmetic import DivBackward1

    return DivBackward1.apply(tensor, number) if tensor.dtype.is_floating_point else tensor / number


def trapz(y, x=None, *, dx=None, dim: int = -1):
    """``trapezoid``'s older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


def _zeros_except(y, dim: int):
    from gradviz.tensor import zeros

    return zeros(tuple(size for i, size in enumerate(y.shape) if i != dim), dtype=y.dtype)


def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The running trapezoidal sums along ``dim`` (one fewer than the samples)."""
    from gradviz.ops.statistics import cumsum

    if not isinstance(y, Tensor):
        raise TypeError(f"cumulative_trapezoid(): argument 'y' (position 1) must be Tensor, not {type(y).__name__}")
    if isinstance(x, Tensor):
        axis = wrap_dim(dim, y.ndim)
        if y.dtype is _dtype.bool or x.dtype is _dtype.bool:
            raise RuntimeError("cumulative_trapezoid: received a bool input for `x` or `y`, but bool is not supported")
        spacing = _spacing("cumulative_trapezoid", y, x, axis)
        left, right = _slices(y, axis, axis)
        return _over_number(cumsum((left + right) * spacing, axis), 2.0)
    if y.dtype is _dtype.bool:
        raise RuntimeError("cumulative_trapezoid: received a bool input for `y`, but bool is not supported")
    spacing = 1 if dx is None else dx
    _check_real_dx("cumulative_trapezoid", spacing)
    left, right = _slices(y, wrap_dim(dim, y.ndim), dim)
    return cumsum(_times_number(left + right, float(spacing) / 2.0), dim)


# -- histogram ---------------------------------------------------------------------------------------------------
def histogram(input, bins, *, range=None, weight=None, density: bool = False, out=None):  # noqa: A002
    """``(hist, bin_edges)``: ``bins`` equal bins over ``range`` (the input's min to max by default) or the given
    edges; each element counts in the bin whose edges hold it (the last bin includes its right edge), NaN and
    elements outside count nowhere; ``weight`` counts each element as its weight, ``density`` divides by the
    total and the bin widths. PyTorch defines no derivative: both outputs hang from one ``NotImplemented`` node."""
    from gradviz.ops import return_types
    from gradviz.ops.no_derivative import NotImplemented, without_derivative
    from gradviz.tensor import linspace

    if not isinstance(input, Tensor):
        raise TypeError(f"histogram(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise _dtype.not_implemented("histogramdd", input.dtype)
    backend = input._backend
    values = np.asarray(backend.to_numpy(input._data)).reshape(-1)
    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise RuntimeError("torch.histogramdd: bins tensor should have one dimension, but got "
                               f"{bins.ndim} dimensions in the bins tensor for dimension 0")
        if bins.dtype is not input.dtype:
            raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have the same dtype, but got "
                               f"input with dtype {_dtype.CPP_NAMES[input.dtype.name]} and bins for dimension 0 with "
                               f"dtype {_dtype.CPP_NAMES[bins.dtype.name]}")
        edges = np.asarray(bins._backend.to_numpy(bins._data))
    else:
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
        if range is not None:
            low, high = float(range[0]), float(range[1])
        elif values.size:
            low, high = float(values.min()), float(values.max())
        else:  # no elements: PyTorch's default range
            low, high = 0.0, 1.0
        if not (np.isfinite(low) and np.isfinite(high)):
            raise RuntimeError(f"torch.histogramdd: dimension 0's range [{_number(low)}, {_number(high)}] is not finite")
        if low > high:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_number(low)} max "
                               f"{_number(high)} for dimension 0")
        if low == high:  # an empty range widened, as numpy does
            low, high = low - 0.5, high + 0.5
        edges = np.asarray(linspace(low, high, bins + 1, dtype=input.dtype).numpy())
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the input "
                           f"tensor excluding its innermost dimension, but got input with shape [{values.size}, 1] and "
                           f"weight with shape {list(weight.shape)}")
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                           f"have the same dtype, but got input({_dtype.CPP_NAMES[input.dtype.name]}), and "
                           f"weight({_dtype.CPP_NAMES[weight.dtype.name]})")
    counts = np.zeros(max(edges.size - 1, 0), dtype=values.dtype)
    if edges.size > 1:
        inside = (values >= edges[0]) & (values <= edges[-1])  # NaN is inside nothing
        positions = np.minimum(np.searchsorted(edges, values[inside], side="right") - 1, counts.size - 1)
        amounts = (np.asarray(weight._backend.to_numpy(weight._data)).reshape(-1)[inside] if weight is not None
                   else np.ones(positions.size, dtype=values.dtype))
        np.add.at(counts, positions, amounts.astype(values.dtype))
    if density:
        with np.errstate(all="ignore"):
            counts = (counts / counts.sum(dtype=counts.dtype)) / np.diff(edges)
        counts = counts.astype(values.dtype)
    device = backend.device_of(input._data)
    hist_data = backend.array(counts, input.dtype, device)
    edges_data = backend.array(np.array(edges, dtype=values.dtype), input.dtype, device)
    hist = without_derivative(NotImplemented, hist_data, (input,), "histogram")
    bin_edges = Tensor._make(edges_data, hist.requires_grad, hist._grad_fn, backend)
    bin_edges._output_nr = 1  # the second output of the same node, as in PyTorch
    if out is not None:
        from gradviz.ops.arithmetic import write_out

        return return_types.histogram(write_out("histogram", hist, out[0]), write_out("histogram", bin_edges, out[1]))
    return return_types.histogram(hist, bin_edges)


def _number(value: float) -> str:
    """A double as C++'s ``<<`` prints it (``2``, ``0.5``, ``inf``, ``nan``)."""
    if value != value:
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:g}"


def tensor_methods() -> dict:
    return {"quantile": quantile, "nanquantile": nanquantile, "cov": cov, "corrcoef": corrcoef, "histogram": histogram}


def torch_functions() -> dict:
    return {"quantile": quantile, "nanquantile": nanquantile, "cov": cov, "corrcoef": corrcoef, "trapezoid": trapezoid,
            "trapz": trapz, "cumulative_trapezoid": cumulative_trapezoid, "histogram": histogram}
