"""``linspace`` and ``arange`` with PyTorch's CPU rounding, bit for bit, in numpy.

PyTorch fills these tensors with kernels whose arithmetic the compiler fuses: ``start + step * i``
becomes one fused multiply-add (FMA), rounded once, on every CPU with FMA (x86 with AVX2 or
AVX-512, ARM64). numpy has no FMA ufunc, so ``fma`` below computes ``a * b + c`` exactly and
rounds once, from error-free transformations (Dekker's product, Knuth's sum, and Boldo and
Melquiond's rounding to odd).

* ``linspace`` (``RangeFactoriesKernel.cpp``) works in the target dtype from both ends:
  ``step = (end - start) / (steps - 1)``; the first half is ``start + step * i``, the second half
  ``end - step * (steps - 1 - i)``.
* ``arange`` works in double (the accumulate type of float and double on the CPU) and is
  vectorized: 8 floats or 4 doubles at a time (AVX2 width, which PyTorch also uses on AVX-512
  machines for this kernel). Each vector is ``base + k * step`` with ``base = start + step * i``
  at its first element; the tail that does not fill two vectors is computed one element at a time.
"""
from __future__ import annotations

import math

import numpy as np

SPLITTER = 134217729.0  # 2**27 + 1: splits a double into two halves of 26 bits (Veltkamp)
ARANGE_VECTOR = {np.dtype(np.float32): 8, np.dtype(np.float64): 4}


def _two_sum(a, b):
    """``a + b`` rounded, and the exact rounding error (Knuth)."""
    total = a + b
    b_part = total - a
    return total, (a - (total - b_part)) + (b - b_part)


def _split(a):
    high = SPLITTER * a
    high = high - (high - a)
    return high, a - high


def _two_product(a, b):
    """``a * b`` rounded, and the exact rounding error (Dekker)."""
    product = a * b
    a_high, a_low = _split(a)
    b_high, b_low = _split(b)
    return product, ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low


def _sum_rounded_to_odd(a, b):
    """``a + b`` rounded to odd: when inexact, the neighbour whose last bit is 1.

    Rounding to odd first and to nearest afterwards gives the correctly rounded result when the
    second format is at least two bits narrower (Boldo and Melquiond, 2008).
    """
    total, error = _two_sum(a, b)
    even = (total.view(np.int64) & 1) == 0
    nudge = (error != 0) & even
    if np.any(nudge):
        total = np.where(nudge, np.nextafter(total, np.where(error > 0, np.inf, -np.inf)), total)
    return total


def fma(a, b, c) -> np.ndarray:
    """``a * b + c`` in float64, rounded once (as the ``vfmadd`` instruction rounds)."""
    a, b, c = (np.asarray(v, dtype=np.float64) for v in (a, b, c))
    product, product_error = _two_product(a, b)
    total, total_error = _two_sum(c, product)
    return total + _sum_rounded_to_odd(total_error, product_error)


def fma32(a, b, c) -> np.ndarray:
    """``a * b + c`` for float32 values, rounded once to float32.

    The product of two floats is exact in a double; their sum rounded to odd in double, then to
    nearest in float, is the correctly rounded fused result.
    """
    a, b, c = (np.asarray(v, dtype=np.float32).astype(np.float64) for v in (a, b, c))
    return _sum_rounded_to_odd(c, a * b).astype(np.float32)


def linspace(start, end, steps: int, dtype: np.dtype) -> np.ndarray:
    """``steps`` values from ``start`` to ``end`` as PyTorch's CPU kernel computes them."""
    dtype = np.dtype(dtype)
    if steps == 0:
        return np.empty(0, dtype)
    if steps == 1:
        return np.full(1, start, dtype)
    if dtype.kind == "f":
        work = dtype.type
        first, last = work(start), work(end)
        step = work(work(last - first) / work(steps - 1))
        fused = fma32 if dtype == np.float32 else fma
    else:  # integer dtypes step in double and truncate
        work = np.float64
        first, last = work(int(start)), work(int(end))
        step = (last - first) / (steps - 1)
        fused = fma
    half = steps // 2
    index = np.arange(steps, dtype=np.float64)
    rising = fused(np.full(half, step), index[:half].astype(work), first)
    falling = fused(np.full(steps - half, -step), (steps - 1 - index[half:]).astype(work), last)
    return np.concatenate([rising, falling]).astype(dtype)


def arange_length(start, end, step) -> int:
    """The number of elements, with PyTorch's checks and messages."""
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if all(isinstance(v, int) for v in (start, end, step)):
        sign = 1 if step > 0 else -1
        return max(0, (end - start + step - sign) // step)
    return max(0, math.ceil((float(end) - float(start)) / float(step)))


def arange(start, end, step, dtype: np.dtype) -> np.ndarray:
    """``[start, end)`` by ``step`` as PyTorch's vectorized CPU kernel computes it."""
    dtype = np.dtype(dtype)
    count = arange_length(start, end, step)
    if dtype.kind != "f":
        return (int(start) + int(step) * np.arange(count, dtype=np.int64)).astype(dtype)
    width = ARANGE_VECTOR.get(dtype, 1)
    start, step = float(start), float(step)
    index = np.arange(count, dtype=np.float64)
    vectorized = (count // (2 * width)) * 2 * width  # whole pairs of vectors; the rest one by one
    lane = index[:vectorized] % width
    bases = fma(step, index[:vectorized] - lane, start).astype(dtype)  # each vector's first element
    head = fma(lane, step, bases.astype(np.float64))
    tail = fma(step, index[vectorized:], start)
    return np.concatenate([head, tail]).astype(dtype)
