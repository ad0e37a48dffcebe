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
from gradviz.ops.decompositions import matrix_norm  # (in ops: Tensor.norm('nuc') reaches it too)
from gradviz.ops.linalg import matrix_power
from gradviz.ops.products import linalg_cross as cross, multi_dot

__all__ = ["LinAlgError", "cholesky", "cond", "cross", "det", "eigh", "eigvalsh", "inv", "inv_ex", "lstsq", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_triangular", "svd", "svdvals",
           "vector_norm"]


def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None):
    """``(sum |x|^ord)^(1/ord)`` over all elements or along ``dim``: one LinalgVectorNormBackward0."""
    from gradviz.ops.reduction import norm as tensor_norm

    if isinstance(dim, int):
        dim = (dim,)
    return tensor_norm(x, ord, dim, keepdim, dtype)


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
# -- torch.linalg.vander (ops/shape_helpers.py) ----------------------------------------------------------------
from gradviz.ops.shape_helpers import linalg_vander as vander  # noqa: E402
