"""Which dtypes PyTorch's CPU kernels accept for the binary ops whose numpy counterparts take more.

numpy computes ``hypot`` of two integer arrays (in float64), ``fmod`` of bools, or an integer remainder
by zero (0, with a warning); PyTorch promotes the operands to their common dtype first and refuses a
dtype its kernel has no loop for (``"hypot_cpu" not implemented for 'Long'``), or raises
``ZeroDivisionError`` for an integer division by zero. ``check_binary`` gives PyTorch's answer before
the op runs; ops of one tensor check their own input (``_dtype.not_implemented``).
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.tensor import Tensor


def common_dtype(input, other) -> _dtype.dtype:
    """The dtype PyTorch computes ``op(input, other)`` in (each a tensor or a Python number)."""
    operands = (input, other)
    return _dtype.result_type(tuple(v for v in operands if isinstance(v, Tensor)),
                              tuple(v for v in operands if not isinstance(v, Tensor)))


def check_binary(kernel: str, input, other, *, floating: bool = False, boolean: bool = True,
                 divides: bool = False) -> None:
    """PyTorch's error, if any, for ``kernel`` on ``input`` and ``other``: ``floating`` kernels exist for
    floating point only, ``boolean=False`` ones for everything but bool; a kernel that ``divides`` raises
    ``ZeroDivisionError`` for an integer divisor with a zero in it."""
    common = common_dtype(input, other)
    if (floating and not common.is_floating_point) or (not boolean and common is _dtype.bool):
        raise _dtype.not_implemented(kernel, common)
    if divides and not common.is_floating_point and _has_zero(other):
        raise RuntimeError("ZeroDivisionError")


def _has_zero(divisor) -> bool:
    if isinstance(divisor, Tensor):
        return bool((divisor == 0).any())
    return divisor == 0
