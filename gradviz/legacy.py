"""PyTorch's legacy constructors: ``torch.Tensor(...)``, ``torch.FloatTensor(...)``, ``Variable(...)``.

Old tutorials (and micrograd's tests) still write them. They behave as in PyTorch 2.13:

* ``torch.Tensor([1, 2])`` copies data into a tensor of the default float dtype (``FloatTensor``
  and friends into their own dtype); ``torch.Tensor(2, 3)`` or ``torch.Tensor(torch.Size([2, 3]))``
  makes an uninitialized tensor of that size (zeros here); ``torch.Tensor(t)`` aliases ``t``.
* ``isinstance(t, torch.FloatTensor)`` is true for float32 CPU tensors.
* ``Variable(t, requires_grad=True)`` is a new leaf sharing ``t``'s memory; every tensor is a Variable.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from gradviz import _dtype
from gradviz.tensor import Size, Tensor, _infer_dtype, _resolve, full, tensor

_SIGNATURES = (
    " * (*, torch.device device = None)\n"
    "      didn't match because some of the keywords were incorrect: {keywords}\n"
    " * (torch.Storage storage)\n"
    " * (Tensor other)\n"
    " * (tuple of ints size, *, torch.device device = None)\n"
    " * (object data, *, torch.device device = None)\n"
)


def _type_name(value) -> str:
    """A value's type as PyTorch's argument parser names it (``list``, ``Tensor``, ``numpy.float64``)."""
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, _dtype.dtype):
        return "torch.dtype"
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _options(d: _dtype.dtype) -> str:
    return (f"TensorOptions(dtype={_dtype.CPP_NAMES[d.name]}, device=cpu, layout=Strided, requires_grad=false "
            "(default), pinned_memory=false (default), memory_format=(nullopt))")


def construct(dtype: _dtype.dtype | None, args: tuple, keywords: dict, device=None) -> Tensor:
    """What ``torch.Tensor(*args)`` (``dtype`` None: the default float) or ``torch.FloatTensor(*args)`` makes."""
    if keywords:
        got = ", ".join([_type_name(arg) for arg in args] + [f"{k}={_type_name(v)}" for k, v in keywords.items()])
        raise TypeError(f"new() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        + _SIGNATURES.format(keywords=" ".join(keywords)))
    target = dtype or _dtype.default_float
    if device is not None:
        _resolve(device, None)
    if not args:
        return full((0,), 0, dtype=target, device=device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if dtype is not None and other.dtype is not dtype:
            raise TypeError(f"expected {_options(dtype)} (got {_options(other.dtype)})")
        return Tensor._make(other._data, backend=other._backend, version=other._vc)
    if all(isinstance(arg, numbers.Integral) and not isinstance(arg, bool) for arg in args):
        return _uninitialized(tuple(int(arg) for arg in args), target, device)
    if len(args) == 1 and isinstance(args[0], Size):
        return _uninitialized(tuple(args[0]), target, device)
    if len(args) > 1:
        raise TypeError("new(): argument 'size' must be tuple of ints, but found element of type "
                        f"{_type_name(next(a for a in args if not isinstance(a, numbers.Integral)))} at pos "
                        f"{next(i for i, a in enumerate(args) if not isinstance(a, numbers.Integral))}")
    data = args[0]
    if not isinstance(data, (list, tuple, range, np.ndarray, str)):
        raise TypeError(f"new(): data must be a sequence (got {_type_name(data)})")
    if not isinstance(data, np.ndarray):
        _infer_dtype(data)  # PyTorch's "new(): invalid data type 'str'" for what is not numbers
    return tensor(data, dtype=target, device=device)


def _uninitialized(shape: tuple, dtype, device) -> Tensor:
    if any(size < 0 for size in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    return full(shape, 0, dtype=dtype, device=device)


class _LegacyType(type):
    """The metaclass of ``FloatTensor`` and friends: calling one makes a tensor of its dtype, and
    ``isinstance`` asks whether a tensor has that dtype on the CPU."""

    def __call__(cls, *args, device=None, **keywords):
        return construct(cls.dtype, args, keywords, device)

    def __instancecheck__(cls, value) -> bool:
        return isinstance(value, Tensor) and value.dtype is cls.dtype and value.device.type == "cpu"

    def __repr__(cls) -> str:
        return f"<class 'torch.{cls.__name__}'>"


def _legacy_type(name: str, dtype: _dtype.dtype) -> type:
    return _LegacyType(name, (), {"dtype": dtype, "is_cuda": False, "__module__": "torch",
                                  "__doc__": f"A legacy constructor: tensors of {dtype!r} on the CPU."})


FloatTensor = _legacy_type("FloatTensor", _dtype.float32)
DoubleTensor = _legacy_type("DoubleTensor", _dtype.float64)
HalfTensor = _legacy_type("HalfTensor", _dtype.float16)
LongTensor = _legacy_type("LongTensor", _dtype.int64)
IntTensor = _legacy_type("IntTensor", _dtype.int32)
ShortTensor = _legacy_type("ShortTensor", _dtype.int16)
CharTensor = _legacy_type("CharTensor", _dtype.int8)
ByteTensor = _legacy_type("ByteTensor", _dtype.uint8)
BoolTensor = _legacy_type("BoolTensor", _dtype.bool)


class _VariableType(type):
    def __instancecheck__(cls, value) -> bool:
        return isinstance(value, Tensor)


class Variable(metaclass=_VariableType):
    """``Variable(t, requires_grad=True)``: a new leaf sharing ``t``'s memory (Variables and Tensors
    merged in PyTorch 0.4; the name stays for old code)."""

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            return full((0,), 0, dtype=_dtype.default_float)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {_type_name(data)}")
        variable = data.detach()
        variable.requires_grad_(requires_grad)
        return variable


__all__ = ["BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor", "IntTensor",
           "LongTensor", "ShortTensor", "Variable", "construct"]
