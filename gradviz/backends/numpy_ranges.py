"""``linspace`` and ``arange`` with PyTorch's CPU rounding, bit for bit, in numpy.

PyTorch fills these tensors with kernels whose arithmetic the compiler fuses: ``start + step * i``
becomes one fused multiply-add (FMA), rounded once, on every CPU with FMA (x86 with AVX2 or
AVX-512, ARM64). numpy has no FMA ufunc, so ``gradviz._float_kernels`` (``fma32``, ``fma64``)
computes ``a * b + c`` exactly and rounds once, from error-free transformations (Dekker's
product, Knuth's sum, and Boldo and Melquiond's rounding to odd).

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

from gradviz._float_kernels import fma32, fma64

ARANGE_VECTOR = {np.dtype(np.float32): 8, np.dtype(np.float64): 4}


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
        fused = fma32 if dtype == np.float32 else fma64
    else:  # integer dtypes step in double and truncate
        work = np.float64
        first, last = work(int(start)), work(int(end))
        step = (last - first) / (steps - 1)
        fused = fma64
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
    bases = fma64(step, index[:vectorized] - lane, start).astype(dtype)  # each vector's first element
    head = fma64(lane, step, bases.astype(np.float64))
    tail = fma64(step, index[vectorized:], start)
    return np.concatenate([head, tail]).astype(dtype)
