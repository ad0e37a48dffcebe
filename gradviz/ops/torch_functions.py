"""The ``torch.*`` names of the API sweep: constants, dtype queries (``finfo``, ``iinfo``, ``promote_types``,
``can_cast``, ``result_type``), ``broadcast_shapes``, thread-count stubs, ``atleast_3d``, ``tril_indices``/
``triu_indices``, ``scalar_tensor``, the function forms of the new Tensor methods, and ``torch.relu_``-style
in-place function forms of methods gradviz has. ``torch_functions()`` gives them to ``gradviz/__init__.py``.
"""
from __future__ import annotations

import math

import numpy as np

from gradviz import _dtype

e, pi, inf, nan, newaxis = math.e, math.pi, math.inf, math.nan, None

_THREADS = {"intra": 1, "inter": 1}


def _resolve(type_=None):
    return _dtype.get_default_dtype() if type_ is None else _dtype.from_any(type_)


class finfo:
    """``torch.finfo(dtype)``: the limits of a floating-point dtype (the default dtype when none is given)."""

    def __init__(self, type=None):  # noqa: A002 - PyTorch's keyword
        d = _resolve(type)
        if not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = np.finfo(d.numpy)
        self.dtype = d.name
        self.bits = info.bits
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = float(info.resolution)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """``torch.iinfo(dtype)``: the limits of an integer dtype."""

    def __init__(self, type):  # noqa: A002
        d = _dtype.from_any(type)
        if d.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(np.uint8 if d is _dtype.bool else d.numpy)
        self.dtype = d.name
        self.bits = info.bits
        self.max = int(info.max) if d is not _dtype.bool else 1
        self.min = int(info.min)

    def __repr__(self) -> str:
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"


def promote_types(type1, type2):
    """The smallest dtype both fit in, by PyTorch's table (``uint8`` with ``int8`` is ``int16``)."""
    return _dtype._highest((_dtype.from_any(type1), _dtype.from_any(type2)))


def can_cast(from_, to) -> bool:
    """PyTorch's ``canCast``: never float to integer, never a non-bool to bool."""
    source, target = _dtype.from_any(from_), _dtype.from_any(to)
    if source.is_floating_point and not target.is_floating_point:
        return False
    return not (source is not _dtype.bool and target is _dtype.bool)


def result_type(tensor1, tensor2):
    """The dtype ``tensor1 op tensor2`` gives (each a tensor or a Python number)."""
    from gradviz.tensor import Tensor

    tensors = tuple(t for t in (tensor1, tensor2) if isinstance(t, Tensor))
    scalars = tuple(t for t in (tensor1, tensor2) if not isinstance(t, Tensor))
    return _dtype.result_type(tensors, scalars)


def broadcast_shapes(*shapes):
    """The shape that tensors of these shapes broadcast to, as a ``torch.Size``."""
    from gradviz.tensor import Size

    shapes = [(shape,) if isinstance(shape, int) else shape for shape in shapes]
    common = [1] * max((len(shape) for shape in shapes), default=0)
    for position, shape in enumerate(shapes):
        for index in range(-1, -1 - len(shape), -1):
            if common[index] == 1:
                if shape[index] < 0:
                    raise RuntimeError(f"Trying to create tensor with negative dimension ({shape[index]}): "
                                       f"({shape[index]})")
                common[index] = shape[index]
            elif shape[index] != 1 and common[index] != shape[index]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[index]} at {index}! "
                                   f"Mismatching argument at index {position} had {shape}; but expected shape "
                                   f"should be broadcastable to {common}")
    return Size(common)


def get_num_threads() -> int:
    return _THREADS["intra"]


def set_num_threads(count: int) -> None:
    """Recorded only: gradviz computes on one thread (numpy's own threads are numpy's business)."""
    if not isinstance(count, int) or count <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _THREADS["intra"] = count


def get_num_interop_threads() -> int:
    return _THREADS["inter"]


def set_num_interop_threads(count: int) -> None:
    if not isinstance(count, int) or count <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    _THREADS["inter"] = count


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims: 0-d ``reshape(1, 1, 1)``, 1-d ``unsqueeze(0).unsqueeze(-1)``, 2-d ``unsqueeze(-1)``."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        return tuple(atleast_3d(t) for t in tensors[0])
    if len(tensors) > 1:
        return tuple(atleast_3d(t) for t in tensors)
    tensor = tensors[0]
    if tensor.ndim == 0:
        return tensor.reshape(1, 1, 1)
    if tensor.ndim == 1:
        return tensor.unsqueeze(0).unsqueeze(-1)
    if tensor.ndim == 2:
        return tensor.unsqueeze(-1)
    return tensor


def _triangle_indices(lower: bool, row: int, col: int, offset: int, dtype, device):
    from gradviz.tensor import tensor as make

    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    rows, cols = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    return make(np.stack([rows, cols]).astype(np.int64), dtype=dtype or _dtype.int64, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    return _triangle_indices(True, row, col, offset, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    return _triangle_indices(False, row, col, offset, dtype, device)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad: bool = False):
    from gradviz.tensor import tensor as make

    return make(float(s) if not isinstance(s, bool) else s, dtype=dtype or _dtype.get_default_dtype(), device=device,
                requires_grad=requires_grad)


def detach(input):
    return input.detach()


# torch.relu_(x), torch.sigmoid_(x)...: the in-place function forms of in-place methods
IN_PLACE_FUNCTIONS = (
    "abs_", "acos_", "arccos_", "arcsin_", "arctan_", "asin_", "atan_", "ceil_", "clamp_", "clamp_max_", "clamp_min_",
    "clip_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_",
    "floor_", "frac_", "i0_", "index_put_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_",
    "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_",
    "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_", "asinh_", "acosh_", "atanh_", "arcsinh_", "arccosh_",
    "arctanh_")


def _in_place_function(name: str):
    def function(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = name
    function.__doc__ = f"``torch.{name}(input, ...)``: ``input.{name}(...)``."
    return function


def torch_functions() -> dict:
    from gradviz.ops import comparison, tensor_api
    from gradviz.tensor import Tensor

    functions = {
        "finfo": finfo, "iinfo": iinfo, "promote_types": promote_types, "can_cast": can_cast,
        "result_type": result_type, "broadcast_shapes": broadcast_shapes, "get_num_threads": get_num_threads,
        "set_num_threads": set_num_threads, "get_num_interop_threads": get_num_interop_threads,
        "set_num_interop_threads": set_num_interop_threads, "atleast_3d": atleast_3d, "tril_indices": tril_indices,
        "triu_indices": triu_indices, "scalar_tensor": scalar_tensor, "detach": detach,
        "asinh": tensor_api.asinh, "arcsinh": tensor_api.asinh, "acosh": tensor_api.acosh,
        "arccosh": tensor_api.acosh, "atanh": tensor_api.atanh, "arctanh": tensor_api.atanh,
        "ravel": tensor_api.ravel, "positive": tensor_api.positive, "select": tensor_api.select,
        "adjoint": tensor_api.adjoint, "signbit": tensor_api.signbit, "isposinf": tensor_api.isposinf,
        "isneginf": tensor_api.isneginf, "isreal": tensor_api.isreal, "is_nonzero": tensor_api.is_nonzero,
        "is_same_size": tensor_api.is_same_size, "is_signed": tensor_api.is_signed, "greater": comparison.gt,
        "greater_equal": comparison.ge, "less": comparison.lt, "less_equal": comparison.le,
        "not_equal": comparison.ne,
    }
    functions.update({name: _in_place_function(name) for name in IN_PLACE_FUNCTIONS if hasattr(Tensor, name)})
    return functions
