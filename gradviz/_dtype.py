"""Dtypes with PyTorch's names and its type-promotion rules for the common cases.

Each dtype prints as ``torch.float32`` so that ``print(x.dtype)`` reads as it does in PyTorch.
"""
from __future__ import annotations

import builtins

import numpy as np


class dtype:
    """A tensor element type: PyTorch's name and the numpy type that stores it."""

    __slots__ = ("name", "numpy", "is_floating_point", "is_signed", "itemsize", "_rank")

    def __init__(self, name: str, numpy_type, category: int, rank: int):
        self.name = name
        self.numpy = np.dtype(numpy_type)
        self.is_floating_point = category == FLOAT
        self.is_signed = name != "uint8" and name != "bool"
        self.itemsize = self.numpy.itemsize
        self._rank = (category, rank)

    @property
    def is_complex(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


BOOL, INT, FLOAT = 0, 1, 2

bool = dtype("bool", np.bool_, BOOL, 0)  # noqa: A001 - PyTorch's name
uint8 = dtype("uint8", np.uint8, INT, 0)
int8 = dtype("int8", np.int8, INT, 1)
int16 = dtype("int16", np.int16, INT, 2)
int32 = dtype("int32", np.int32, INT, 3)
int64 = dtype("int64", np.int64, INT, 4)
float16 = dtype("float16", np.float16, FLOAT, 1)
float32 = dtype("float32", np.float32, FLOAT, 2)
float64 = dtype("float64", np.float64, FLOAT, 3)

ALL = (bool, uint8, int8, int16, int32, int64, float16, float32, float64)
_BY_NUMPY = {d.numpy: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update(half=float16, float=float32, double=float64, long=int64, int=int32, short=int16)

default_float = float32

# How PyTorch's messages name dtypes: ATen's scalar types ("Float") and C++ type names ("float")
SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
                     "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int", "int32": "int",
             "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}


def from_type_string(text: str) -> dtype:
    """The dtype of a legacy type name: ``'torch.FloatTensor'`` is float32."""
    by_scalar_type = {name: _BY_NAME[key] for key, name in SCALAR_TYPE_NAMES.items()}
    name = text.rsplit(".", 1)[-1]
    if not name.endswith("Tensor") or name[:-len("Tensor")] not in by_scalar_type:
        raise ValueError(f"invalid type: '{text}'")
    return by_scalar_type[name[:-len("Tensor")]]


def set_default_dtype(d) -> None:
    """Make ``d`` the dtype of new float tensors (``torch.tensor([1.5])``, ``zeros``, ``int * 2.5``)."""
    global default_float
    if not isinstance(d, dtype) and not str(d).startswith("torch."):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    d = from_any(d)
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    default_float = d


def get_default_dtype() -> dtype:
    return default_float


def _by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy(numpy_dtype) -> dtype:
    found = _BY_NUMPY.get(numpy_dtype)  # an array's own dtype: one dict lookup, no np.dtype() call
    if found is not None:
        return found
    try:
        return _BY_NUMPY[np.dtype(numpy_dtype)]
    except KeyError:
        raise TypeError(f"can't convert np.ndarray of type {np.dtype(numpy_dtype)}. The only supported "
                        "types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool.") from None


def from_any(value) -> dtype:
    """A gradviz dtype from a gradviz dtype, a torch dtype, a numpy dtype or a name."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, np.dtype):
        return from_numpy(value)  # the common case, without formatting the dtype as text
    text = str(value)
    if text.startswith("torch."):
        return _BY_NAME[text[len("torch."):]]
    if text in _BY_NAME:
        return _BY_NAME[text]
    return from_numpy(value)


def not_implemented(kernel: str, d: dtype) -> NotImplementedError:
    """PyTorch's error for a kernel that has no loop for ``d`` (``"abs_cpu" not implemented for 'Bool'``)."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{SCALAR_TYPE_NAMES[d.name]}'")


def category(d: dtype) -> int:
    return d._rank[0]


def scalar_category(value) -> int:
    if isinstance(value, (builtins.bool, np.bool_)):
        return BOOL
    if isinstance(value, (int, np.integer)):
        return INT
    return FLOAT


def _highest(dtypes) -> dtype:
    """The dtype that all of ``dtypes`` promote to (PyTorch's table): the highest category wins, then the
    widest type in it; ``uint8`` with ``int8`` is ``int16`` (neither holds the other's values)."""
    result = max(dtypes, key=lambda d: d._rank)
    if result is int8 and uint8 in dtypes:
        return int16
    return result


def _for_category(cat: int) -> dtype:
    return {BOOL: bool, INT: int64, FLOAT: default_float}[cat]


def result_type(tensors: tuple, scalars: tuple = ()) -> dtype:
    """PyTorch's promotion: dimensioned tensors, then 0-d tensors, then Python scalars.

    A lower priority operand only matters when its category (bool < int < float) is higher
    than everything above it: ``int_tensor * 2.5`` is float32, ``float32_tensor * 2.5`` stays
    float32, ``float32 vector + float64 0-d tensor`` stays float32.
    """
    dims = [t.dtype for t in tensors if t.ndim > 0]
    zeros = [t.dtype for t in tensors if t.ndim == 0]
    result = _highest(dims) if dims else None
    if zeros:
        top = _highest(zeros)
        if result is None:
            result = top
        elif category(top) > category(result):
            result = _highest([d for d in zeros if category(d) == category(top)])
    if scalars:
        cat = max(scalar_category(s) for s in scalars)
        if result is None:
            result = _for_category(cat)
        elif cat > category(result):
            result = _for_category(cat)
    return result
