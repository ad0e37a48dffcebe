"""``torch.linalg`` as gradviz has it: ``gv.linalg.inv(A)``, ``det``, ``slogdet``, ``cholesky``,
``solve``, ``solve_triangular``, ``cross``, ``multi_dot``, the norms (``norm``, ``vector_norm``, ``matrix_norm``),
the SVD (``svd``, ``svdvals``) and what PyTorch builds on it (``pinv``, ``matrix_rank``, ``cond``, the
nuclear and spectral norms), ``eigh``/``eigvalsh``, ``qr`` and ``matrix_power``.

The nodes live in ``ops/decompositions.py`` (inverse, determinant, Cholesky, solve, SVD, eigh, QR, pinv),
``ops/products.py`` (cross, multi_dot) and ``ops/reduction.py`` (the vector norm every norm here
is written with, as PyTorch writes them).
"""
from __future__ import annotations

import math

from gradviz.tensor import Tensor
from gradviz.ops.decompositions import (LinAlgError, cholesky, det, eigh, eigvalsh, inv, lstsq, matrix_exp, pinv, qr,
                                        slogdet, solve, solve_triangular, svd, svdvals)
from gradviz.ops.decompositions import inverse_ex as inv_ex
from gradviz.ops.linalg import matrix_power
from gradviz.ops.products import linalg_cross as cross, multi_dot
from gradviz.ops.reduction import LinalgVectorNormBackward0

__all__ = ["LinAlgError", "cholesky", "cond", "cross", "det", "eigh", "eigvalsh", "inv", "inv_ex", "lstsq", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_triangular", "svd", "svdvals",
           "vector_norm"]


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

    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if len(dim) != 2:
        raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got " + " ".join(str(d) for d in dim))
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
    if ord in ("nuc", 2, -2):
        return _singular_value_norm(A, ord, dim, keepdim)
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def _singular_value_norm(A, ord, dim, keepdim):
    """``'nuc'`` (the sum of the singular values), 2 / -2 (the largest / smallest), as PyTorch writes them:
    the two dims moved last (a permute, recorded even when it moves nothing), ``svdvals``, then
    ``sum``/``amax``/``amin`` over the last dim; ``keepdim`` puts the two dims back (unsqueeze, permute)."""
    from gradviz.ops.reduction import sum as tensor_sum
    from gradviz.ops.shape import permute, unsqueeze
    from gradviz.ops.statistics import amax, amin

    others = [d for d in range(A.ndim) if d not in dim]
    order = tuple(others) + tuple(dim)
    values = svdvals(permute(A, order))
    if ord == "nuc":
        result = tensor_sum(values, -1, keepdim)
    else:
        result = (amax if ord == 2 else amin)(values, -1, keepdim=keepdim)
    if keepdim:
        reverse = [0] * len(order)
        for position, d in enumerate(order):
            reverse[d] = position
        result = permute(unsqueeze(result, -1), tuple(reverse))
    return result


def norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype=None):
    """``linalg.norm``: a vector norm (2 by default) of a vector or along one dim, a matrix norm (``'fro'``
    by default) of a matrix or along two dims."""
    if isinstance(ord, str) or (dim is not None and not isinstance(dim, int) and len(dim) == 2) or (
            dim is None and ord is not None and A.ndim == 2):
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    return vector_norm(A, 2.0 if ord is None else ord, dim, keepdim, dtype=dtype)


def matrix_rank(A, *, atol=None, rtol=None, hermitian: bool = False, out=None):
    """How many singular values (``hermitian``: absolute eigenvalues) exceed ``max(atol, rtol * largest)``
    (``rtol`` is ``eps * max(m, n)`` by default): an int64 tensor, with no graph."""
    from gradviz.grad_mode import no_grad
    from gradviz.ops.reduction import sum as tensor_sum
    from gradviz.ops.decompositions import _tolerance

    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    with no_grad():
        values = eigvalsh(A).abs() if hermitian else svdvals(A)
        backend = values._backend
        largest = backend.amax(values._data, -1, True) if values.shape[-1] else values._data
        cutoff = _tolerance(backend, largest, atol, rtol, A.shape, A.dtype)
        return tensor_sum(Tensor._make(backend.gt(values._data, cutoff), backend=backend), -1)


def cond(A, p=None, *, out=None):
    """The condition number. For the 2-norm (``p=None`` or 2: the largest singular value over the smallest;
    -2: the reverse) as PyTorch writes it: two narrows of ``svdvals``, a division, a squeeze; ``'nuc'``: the sum
    of the singular values times the sum of their reciprocals."""
    from gradviz.ops.reduction import sum as tensor_sum
    from gradviz.ops.shape import narrow, squeeze

    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if p not in (None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if p not in (None, 2, -2) and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if p == "nuc":
        values = svdvals(A)
        return tensor_sum(values, -1) * tensor_sum(values.reciprocal(), -1)
    if p not in (None, 2, -2):
        return _cond_from_inverse(A, p)
    values = svdvals(A)
    k = values.shape[-1]
    largest, smallest = narrow(values, -1, 0, 1), narrow(values, -1, k - 1, 1)
    ratio = largest / smallest if p != -2 else smallest / largest
    return squeeze(ratio, -1)


def _cond_from_inverse(A, p):
    """``'fro'``, 1, -1, inf, -inf as PyTorch writes them: ``linalg.inv_ex``, the inverse of a singular matrix
    filled with inf in place (``masked_fill_``), the two matrix norms multiplied, then ``nan_to_num_(inf, inf,
    -inf)`` (0 * inf). The in-place fill modifies the inverse LinalgInvExBackward0 saved, so a backward through
    it raises PyTorch's "modified by an inplace operation" error, as PyTorch 2.13 does."""
    from gradviz.ops.elementwise import nan_to_num
    from gradviz.ops.inplace import apply_

    inverse, info = inv_ex(A)
    inverse.masked_fill_(info.unsqueeze(-1).unsqueeze(-1) > 0, math.inf)
    result = matrix_norm(A, p) * matrix_norm(inverse, p)
    return apply_(result, nan_to_num, math.inf, math.inf, -math.inf)
