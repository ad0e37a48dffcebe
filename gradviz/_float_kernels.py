"""Float arithmetic rounded the way PyTorch's CPU kernels round it, so random numbers match to the bit.

numpy rounds after every operation. PyTorch's CPU kernels do not always: on x86 machines with AVX2
(nearly every x86 computer since 2013) ATen runs kernels compiled with fused multiply-add, where
``a * b + c`` is rounded once, and it draws ``randn`` of 16 or more float32 values with the
polynomial ``log``/``sin``/``cos`` of ``avx_mathfun.h`` (Cephes, vectorised), not with libm. The
last bits of the results depend on both. This module provides the pieces ``gradviz.random`` needs:

* :func:`fma32` and :func:`fma64`: ``a * b + c`` rounded once, with numpy (round to odd, then to nearest);
* :func:`cephes_log` and :func:`cephes_sincos`: the float32 ``log256_ps`` and ``sincos256_ps`` step by
  step, with the multiply-adds the compiler fused in PyTorch's build (found by experiment against it);
* :data:`KERNELS`: which of PyTorch's CPU kernels this machine runs (``'avx2'`` or ``'default'``).

Which kernels PyTorch uses is decided by the CPU (and the ``ATEN_CPU_CAPABILITY`` variable, which
lowers it); :func:`use_kernels` switches gradviz's choice, e.g. to compare with a torch that runs
its portable ``'default'`` kernels.
"""
from __future__ import annotations

import os
import platform

import numpy as np

KERNEL_NAMES = ("avx2", "default")


class Kernels:
    """How PyTorch's CPU kernels compute on this machine.

    ``fused``: ``a * b + c`` is rounded once (x86 with AVX2; ARM compilers fuse too).
    ``cephes_box_muller``: ``randn`` of 16+ float32 values uses avx_mathfun's log/sin/cos (x86 AVX2).
    """

    __slots__ = ("name", "fused", "cephes_box_muller")

    def __init__(self, name: str):
        if name not in KERNEL_NAMES:
            raise ValueError(f"unknown kernels {name!r}: choose one of {', '.join(KERNEL_NAMES)}")
        machine = platform.machine().lower()
        self.name = name
        self.fused = name == "avx2" or machine in ("arm64", "aarch64")
        self.cephes_box_muller = name == "avx2"

    def __repr__(self) -> str:
        return f"Kernels({self.name!r})"


def _detect() -> str:
    """``'avx2'`` where PyTorch would run its AVX2 (or AVX-512) kernels, else ``'default'``."""
    if os.environ.get("ATEN_CPU_CAPABILITY", "").lower() == "default":
        return "default"
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return "default"
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # numpy 1.x
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as features
        except ImportError:
            return "avx2"  # every x86-64 CPU of the last decade has it
    return "avx2" if features.get("AVX2") and features.get("FMA3") else "default"


KERNELS = Kernels(_detect())


def use_kernels(name: str) -> Kernels:
    """Compute random numbers as PyTorch's ``'avx2'`` or ``'default'`` CPU kernels do; returns the old choice."""
    global KERNELS
    previous, KERNELS = KERNELS, Kernels(name)
    return previous


# -- a * b + c, rounded once ---------------------------------------------------------------------
def _round_to_odd(value, error):
    """``value + error`` (``value`` its rounding to nearest) rounded to odd: the neighbour with an odd
    last bit when inexact. Rounding that to a narrower format rounds the exact sum correctly."""
    bits = value.view(np.int64 if value.dtype == np.float64 else np.int32)
    nudge = (error != 0) & ((bits & 1) == 0)
    if not nudge.any():
        return value
    return np.where(nudge, np.nextafter(value, np.copysign(np.inf, error).astype(value.dtype)), value)


def _two_sum(a, b):
    """``(s, e)`` with ``s = a + b`` rounded and ``s + e`` exactly ``a + b`` (Knuth)."""
    s = a + b
    b_virtual = s - a
    return s, (a - (s - b_virtual)) + (b - b_virtual)


def fma32(a, b, c) -> np.ndarray:
    """float32 ``a * b + c`` rounded once. The product of two floats is exact in a double, and so is
    the sum unless it needs more than 53 bits; then rounding twice (to double, then to float32) can
    differ from rounding once only where the double lands exactly halfway between two float32s.
    Those few get the exact sum rounded to odd first (round to odd, then to nearest, is exact)."""
    product = np.asarray(a, np.float32).astype(np.float64) * np.asarray(b, np.float32)
    addend = np.asarray(c, np.float32).astype(np.float64)
    total = product + addend
    shape = np.shape(total)
    total = np.atleast_1d(total)  # (an array even for scalars, to write into)
    halfway = (total.view(np.int64) & 0x1FFFFFFF) == 0x10000000  # the 29 bits a float32 drops: 100...0
    if halfway.any():
        product, addend = (np.broadcast_to(part, total.shape) for part in (product, addend))
        exact_sum, error = _two_sum(product[halfway], addend[halfway])
        total[halfway] = _round_to_odd(exact_sum, error)
    return total.astype(np.float32).reshape(shape)


def _split(x):
    """Veltkamp's split of a double into two halves of 26 bits, so products of halves are exact."""
    scaled = x * 134217729.0  # 2**27 + 1
    high = scaled - (scaled - x)
    return high, x - high


def fma64(a, b, c) -> np.ndarray:
    """float64 ``a * b + c`` rounded once: the exact product as two doubles (Dekker), the exact sum of
    the parts, and the small remainder rounded to odd before the one final rounding (Boldo and Melquiond)."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    product = a * b
    a_high, a_low = _split(a)
    b_high, b_low = np.broadcast_arrays(*_split(b))
    product_error = ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low
    total, total_error = _two_sum(product, c)             # a*b + c = total + total_error + product_error
    rest, rest_error = _two_sum(total_error, product_error)
    return total + _round_to_odd(rest, rest_error)       # the small part rounded to odd, then one rounding


def multiply_add(a, b, c, dtype) -> np.ndarray:
    """``a * b + c`` in ``dtype`` as the kernels compute it: fused where :data:`KERNELS` fuse."""
    if KERNELS.fused:
        return fma64(a, b, c) if dtype == np.float64 else fma32(a, b, c)
    return (np.asarray(a, dtype) * dtype.type(b) + dtype.type(c)).astype(dtype)


# -- avx_mathfun's log and sincos, float32 -----------------------------------------------------------
_F = np.float32
_LOG_POLYNOMIAL = tuple(_F(v) for v in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                                        1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                                        3.3333331174e-1))
_LOG_Q1, _LOG_Q2 = _F(-2.12194440e-4), _F(0.693359375)  # ln 2 in two parts
_SQRT_HALF = _F(0.707106781186547524)
_MIN_NORMAL = np.array([0x00800000], np.int32).view(np.float32)[0]
_FOUR_OVER_PI = _F(1.27323954473516)
_PI_OVER_4_PARTS = (_F(-0.78515625), _F(-2.4187564849853515625e-4), _F(-3.77489497744594108e-8))
_COS_POLYNOMIAL = (_F(2.443315711809948e-5), _F(-1.388731625493765e-3), _F(4.166664568298827e-2))
_SIN_POLYNOMIAL = (_F(-1.9515295891e-4), _F(8.3321608736e-3), _F(-1.6666654611e-1))


def cephes_log(x) -> np.ndarray:
    """Natural log of positive float32 values as ``log256_ps`` computes it.

    ``x = m 2^e`` with ``m`` in [0.5, 1) (or [sqrt(1/2), sqrt 2) after one adjustment), then
    ``log x = (m - 1) + P(m - 1) + e ln 2`` with Cephes' degree-9 polynomial.
    """
    x = np.maximum(np.asarray(x, np.float32), _MIN_NORMAL)
    bits = x.view(np.int32)
    exponent = ((bits >> 23) - 0x7F).astype(np.float32) + _F(1)
    mantissa = ((bits & ~0x7F800000) | _F(0.5).view(np.int32)).view(np.float32)
    small = mantissa < _SQRT_HALF
    m = (mantissa - _F(1)) + np.where(small, mantissa, _F(0))
    exponent = exponent - np.where(small, _F(1), _F(0))
    z = m * m
    y = np.full_like(m, _LOG_POLYNOMIAL[0])
    for coefficient in _LOG_POLYNOMIAL[1:]:
        y = fma32(y, m, coefficient)
    y = y * m
    y = fma32(y, z, exponent * _LOG_Q1)
    y = fma32(-z, _F(0.5), y)
    return fma32(exponent, _LOG_Q2, m + y)


def cephes_sincos(x) -> tuple:
    """``(sin x, cos x)`` of float32 values as ``sincos256_ps`` computes them: reduce by multiples
    of pi/4 (pi/4 in three parts, so the reduction stays exact), then one of two short polynomials."""
    x = np.asarray(x, np.float32)
    sin_negative = np.signbit(x)
    x = np.abs(x)
    octant = (x * _FOUR_OVER_PI).astype(np.int32)  # truncation, as cvttps
    octant = (octant + 1) & ~1
    y = octant.astype(np.float32)
    sin_negative = sin_negative ^ ((octant & 4) != 0)
    cos_negative = ((~(octant - 2)) & 4) != 0
    use_sin_polynomial = (octant & 2) == 0
    for part in _PI_OVER_4_PARTS:
        x = fma32(y, part, x)
    z = x * x
    cos_poly = np.full_like(x, _COS_POLYNOMIAL[0])
    for coefficient in _COS_POLYNOMIAL[1:]:
        cos_poly = fma32(cos_poly, z, coefficient)
    cos_poly = fma32(cos_poly * z, z, -(z * _F(0.5))) + _F(1)
    sin_poly = np.full_like(x, _SIN_POLYNOMIAL[0])
    for coefficient in _SIN_POLYNOMIAL[1:]:
        sin_poly = fma32(sin_poly, z, coefficient)
    sin_poly = fma32(sin_poly * z, x, x)
    sine = np.where(use_sin_polynomial, sin_poly, cos_poly)
    cosine = np.where(use_sin_polynomial, cos_poly, sin_poly)
    return np.where(sin_negative, -sine, sine), np.where(cos_negative, -cosine, cosine)
