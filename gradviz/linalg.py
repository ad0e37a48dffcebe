"""``torch.linalg`` as gradviz has it: ``gv.linalg.inv(A)``, ``det``, ``slogdet``, ``cholesky``,
``solve``, ``solve_triangular``, ``cross``, ``multi_dot``, and the norms (``norm``, ``vector_norm``, ``matrix_norm``).

The nodes live in ``ops/decompositions.py`` (inverse, determinant, Cholesky, solve),
``ops/products.py`` (cross, multi_dot) and ``ops/reduction.py`` (the vector norm every norm here
is written with, as PyTorch writes them).
"""
from __future__ import annotations

import math

from gradviz.ops.decompositions import LinAlgError, cholesky, det, inv, slogdet, solve, solve_triangular
from gradviz.ops.products import linalg_cross as cross, multi_dot
from gradviz.ops.reduction import LinalgVectorNormBackward0

__all__ = ["LinAlgError", "cholesky", "cross", "det", "inv", "matrix_norm", "multi_dot", "norm", "slogdet", "solve",
           "solve_triangular", "vector_norm"]


def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None):
    """``(sum |x|^ord)^(1/ord)`` over all elements or along ``dim``: one LinalgVectorNormBackward0."""
    from gradviz.ops.reduction import norm as tensor_norm

    if isinstance(dim, int):
        dim = (dim,)
    return tensor_norm(x, ord, dim, keepdim, dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):
    """``'fro'`` (a vector 2-norm over both dims), 1 / -1 (the largest / smallest column sum of ``|A|``),
    inf / -inf (the same over rows), as PyTorch writes them: a vector norm, then ``amax``/``amin``."""
    from gradviz.ops.statistics import amax, amin

    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if dtype is not None:
        A = A.to(dtype)
    dim = tuple(d % A.ndim for d in dim)  # PyTorch saves the dims wrapped ('fro' as the int 2, 1 as 1.0)
    if ord == "fro":
        return LinalgVectorNormBackward0.apply(A, 2, dim, keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        summed, other = (dim[0] % A.ndim, dim[1] % A.ndim)
        if abs(ord) == math.inf:
            summed, other = other, summed
        if summed < other and not keepdim:
            other -= 1
        column_sums = LinalgVectorNormBackward0.apply(A, 1.0, (summed,), keepdim)
        return (amax if ord > 0 else amin)(column_sums, other, keepdim=keepdim)
    raise NotImplementedError(f"gradviz's matrix_norm computes ord='fro', 1, -1, inf and -inf; ord={ord!r} needs "
                              "singular values (an SVD), which gradviz does not differentiate yet")


def norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype=None):
    """``linalg.norm``: a vector norm (2 by default) of a vector or along one dim, a matrix norm (``'fro'``
    by default) of a matrix or along two dims."""
    if isinstance(ord, str) or (dim is not None and not isinstance(dim, int) and len(dim) == 2) or (
            dim is None and ord is not None and A.ndim == 2):
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    return vector_norm(A, 2.0 if ord is None else ord, dim, keepdim, dtype=dtype)
