"""``torch.linalg``'s differentiable decompositions and what they compute: inverse, determinant,
``slogdet``, Cholesky, ``solve``, each one node named as PyTorch 2.13 names it.

PyTorch computes ``inv`` and ``solve`` through their ``_ex`` forms (LinalgInvExBackward0,
LinalgSolveExBackward0), and ``det``/``slogdet``/``solve`` from an LU factorization whose factors
the node keeps (``_saved_LU``, ``_saved_pivots``: LAPACK's ``getrf``, 1-based row swaps). The
derivatives, for a square ``A`` with inverse ``A⁻¹``:

* ``inv``:     ``Ā = -A⁻ᵀ Ȳ A⁻ᵀ``
* ``det``:     ``Ā = ȳ det(A) A⁻ᵀ`` (for a singular ``A``, the adjugate's transpose, from the SVD)
* ``slogdet``: ``Ā = ȳ A⁻ᵀ`` (the sign has no gradient)
* ``solve``:   ``B̄ = A⁻ᵀ X̄``, ``Ā = -B̄ Xᵀ``
* ``cholesky``: ``Ā = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹``, symmetrized, where ``Φ`` keeps the lower triangle and halves the diagonal

A matrix these cannot handle raises ``LinAlgError`` (PyTorch's ``torch.linalg.LinAlgError``, a
``RuntimeError``) with PyTorch's message.
"""
from __future__ import annotations

import warnings

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction, node_for_inputs, outputs_of
from gradviz.autograd.node import expose_saved
from gradviz.ops._util import meta, to_input
from gradviz.ops.return_types import _return_type
from gradviz.tensor import Tensor

LINALG_SLOGDET = _return_type("linalg_slogdet", ("sign", "logabsdet"))
SLOGDET = _return_type("slogdet", ("sign", "logabsdet"))


class LinAlgError(RuntimeError):
    """PyTorch's ``torch.linalg.LinAlgError``: a matrix the factorization cannot handle (singular, not
    positive-definite). A RuntimeError, so ``except RuntimeError`` catches it as in PyTorch."""


LinAlgError.__module__ = "gradviz.linalg"


def _mT(backend, array):
    return backend.permute(array, tuple(range(array.ndim - 2)) + (array.ndim - 1, array.ndim - 2))


def _check_square(name: str, A) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def _check_float(name: str, A) -> None:
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype.SCALAR_TYPE_NAMES[A.dtype.name]}")


def _first_failure(backend, info):
    """``(batch index, info)`` of the first matrix whose factorization failed, or None."""
    values = backend.to_numpy(info)
    flat = values.reshape(-1)
    for index, value in enumerate(flat):
        if value:
            return index, int(value)
    return None


def _lu(A, name: str, message, row_major_transposed: bool = False):
    """The LU factors of ``A``; ``message(info)`` is PyTorch's error for a zero pivot (None: no error).

    ``row_major_transposed``: det and slogdet factor the memory of ``A`` as LAPACK reads it, column
    by column, which for a row-major ``A`` is ``Aᵀ`` (the same determinant, with no copy), as PyTorch does.
    """
    backend = A._backend
    data = A._data
    if row_major_transposed and backend.is_contiguous(data):
        data = _mT(backend, data)
    lu, pivots, info = backend.lu_factor(data)
    failure = _first_failure(backend, info) if message is not None else None
    if failure is not None:
        index, value = failure
        prefix = f"(Batch element {index}): " if A.ndim > 2 else ""
        raise LinAlgError(f"{name}: {prefix}{message(value)}")
    return lu, pivots


def _tensor(array, backend):
    return Tensor._make(array, backend=backend)


class LinalgInvExBackward0(OpFunction):
    """``linalg.inv``: ``Ā = -A⁻ᵀ Ȳ A⁻ᵀ``, from the inverse it saved."""

    inputs = ("A",)
    derivatives = {"A": ("-at::matmul(inverse.mH(), at::matmul(grad, inverse.mH()))",
                         r"-A^{-\top}\,\bar{Y}\,A^{-\top}")}

    def forward(ctx, A):
        ctx.save_result("inverse")
        return _inverse_ex_array(A)[0]

    def backward(ctx, grad):
        backend = ctx.backend
        inverse_t = _mT(backend, ctx.saved("inverse"))
        return backend.neg(backend.matmul(inverse_t, backend.matmul(grad, inverse_t)))

    def backward_graph(ctx, grad):
        inverse_t = ctx.saved_graph("inverse").mT
        return -(inverse_t.matmul(grad.matmul(inverse_t)))


def _inverse_ex_array(A):
    """``linalg.inv_ex``'s arrays: the inverse and LAPACK's ``info`` (the 1-based index of the first zero pivot;
    None when every matrix was inverted). A singular matrix of a batch gets the identity's inverse in its place (the
    callers that let one through, ``cond``, overwrite it)."""
    backend = A._backend
    inverse = _inverse_or_none(backend, A._data)
    if inverse is not None:  # (an invertible matrix: no LU factorization to run here)
        return inverse, None
    _, _, info = backend.lu_factor(A._data)
    singular = backend.ne(info, 0)
    n = A.shape[-1]
    eye = backend.eye(n, n, _dtype.from_any(A.dtype), backend.device_of(A._data))
    mask = backend.reshape(singular, tuple(info.shape) + (1, 1))
    return backend.inv(backend.where(mask, eye, A._data)), info


LINALG_INV_EX = _return_type("linalg_inv_ex", ("inverse", "info"))


def inverse_ex(A, *, check_errors: bool = False, out=None):
    """``linalg.inv_ex``: ``(inverse, info)``, no error for a singular matrix unless ``check_errors``; one
    LinalgInvExBackward0, ``info`` an int32 tensor."""
    _check_square("linalg.inv_ex", A)
    _check_float("linalg.inv_ex", A)
    if check_errors:
        _lu(A, "linalg.inv_ex", lambda info: f"The diagonal element {info} is zero, the inversion could not be "
                                             "completed because the input matrix is singular.")
    inverse = LinalgInvExBackward0.apply(A)
    _, _, info = A._backend.lu_factor(A._data)
    return LINALG_INV_EX(inverse, _tensor(info, A._backend))


class LinalgDetBackward0(OpFunction):
    """``linalg.det``: ``Ā = ȳ det(A) A⁻ᵀ`` (the cofactor matrix). Like PyTorch, which solves with the
    saved LU factors, a matrix whose determinant is exactly 0 gets a zero gradient."""

    inputs = ("A",)
    derivatives = {"A": ("linalg_det_backward(grad, result, A, LU, pivots)", r"\bar{y}\,\det(A)\,A^{-\top}")}

    def forward(ctx, A):
        backend = A._backend
        lu, pivots = _lu(A, "linalg.det", None, row_major_transposed=True)
        ctx.save(A=A, LU=_tensor(lu, backend), pivots=_tensor(pivots, backend))
        ctx.save_result()
        return _det_from_lu(backend, lu, pivots)

    def backward(ctx, grad):
        backend = ctx.backend
        A, det = ctx.saved("A", "result")
        scale = backend.reshape(backend.mul(grad, det), tuple(grad.shape) + (1, 1))
        singular = backend.reshape(backend.eq(det, 0), tuple(det.shape) + (1, 1))
        safe = backend.where(singular, backend.eye(A.shape[-1], A.shape[-1], _dtype.from_any(A.dtype),
                                                   backend.device_of(A)), A)
        return backend.where(singular, 0.0, backend.mul(scale, _mT(backend, backend.inv(safe))))

    def backward_graph(ctx, grad):
        """Recorded as PyTorch records it: ``solve(Aᵀ, diag_embed(ḡ det A, expanded as the pivots)ᵀ)`` (a batch
        too). Where ``det A == 0`` PyTorch switches to the SVD: ``U diag(D) Vh`` with ``D`` the products of the
        other singular values times ``ḡ det(U) det(Vh)`` (the adjugate's transpose, finite there); a batch mixing
        both takes each formula on its own matrices and puts them back with ``index_put``, as PyTorch does."""
        A, det = ctx.saved_graph("A", "result")
        singular = ctx.backend.eq(det._data, 0)
        if bool(ctx.backend.to_numpy(singular).all()):
            return _det_singular_backward_graph(grad, A)
        if bool(ctx.backend.any(singular)):
            from gradviz.tensor import zeros_like

            mask = _tensor(singular, ctx.backend)
            regular = ~mask
            singular_part = _det_singular_backward_graph(grad[mask], A[mask])
            diagonal = _diag_embed((grad * det).unsqueeze(-1).expand(tuple(A.shape[:-1]))).mT
            regular_part = solve(A[regular].mT, diagonal[regular])
            regular_part = regular_part.view(tuple(regular_part.shape))
            return zeros_like(A).index_put((mask,), singular_part).index_put((regular,), regular_part)
        return _det_regular_backward_graph(grad, A, det)


def _det_regular_backward_graph(grad, A, det):
    diagonal = (grad * det).unsqueeze(-1).expand(tuple(A.shape[:-1]))
    return solve(A.mT, _diag_embed(diagonal).mT)


def _det_singular_backward_graph(grad, A):
    """PyTorch's singular branch of ``linalg_det_backward``, op for op: ``U, S, Vh = svd(A)``,
    ``α = det(U) det(Vh)``, ``D = prod_safe_zeros_backward(α ḡ, S)`` (the product of the other singular values,
    from two exclusive cumulative products), then ``(U * D.unsqueeze(-2)) @ Vh``."""
    from gradviz.ops.combine import cat
    from gradviz.ops.linalg import matmul
    from gradviz.ops.matrix import flip
    from gradviz.ops.shape import narrow
    from gradviz.ops.statistics import cumprod
    from gradviz.tensor import ones_like

    U, S, Vh = svd(A)
    alpha = det(U) * det(Vh)
    size = S.shape[-1]
    ones = ones_like(narrow(S, -1, 0, 1).detach())
    exclusive_normal = cumprod(cat((ones, narrow(S, -1, 0, size - 1)), -1), -1)
    exclusive_reverse = flip(cumprod(cat((ones, flip(narrow(S, -1, 1, size - 1), (-1,))), -1), -1), (-1,))
    D = (alpha * grad).unsqueeze(-1) * (exclusive_normal * exclusive_reverse)
    return matmul(U * D.unsqueeze(-2), Vh)


def _det_from_lu(backend, lu, pivots):
    """``det A``: the product of U's diagonal, negated once per row swap (as PyTorch computes it)."""
    n = lu.shape[-1]
    diagonal = backend.diagonal(lu, 0, -2, -1)
    product = backend.prod(diagonal, -1, False)
    rows = backend.arange(1, n + 1, 1, _dtype.int32, backend.device_of(pivots))
    swaps = backend.sum(backend.astype(backend.ne(pivots, rows), _dtype.int64), -1, False)
    odd = backend.eq(backend.remainder(swaps, 2), 1)
    return backend.where(odd, backend.neg(product), product)


class LinalgSlogdetBackward0(OpFunction):
    """``linalg.slogdet``: two outputs, ``sign`` and ``logabsdet``; ``Ā = ȳ A⁻ᵀ`` from ``logabsdet``'s
    gradient (a real sign is constant: it sends none)."""

    inputs = ("A",)
    derivatives = {"A": ("slogdet_backward(grad_sign, grad_logabsdet, A, sign, LU, pivots)",
                         r"\bar{y}\,A^{-\top}")}

    @classmethod
    def apply(cls, A):
        record, node = node_for_inputs(cls, A)
        sign, logabsdet = arrays = cls.forward(node, A)
        outputs = outputs_of(node, record, arrays, A._backend)
        if record:
            from gradviz.autograd.node import SavedTensor

            node._packed["sign"] = SavedTensor(outputs[0], is_output=True)
            node.output_shape = tuple(sign.shape)
        return tuple(outputs)

    def forward(ctx, A):
        backend = A._backend
        lu, pivots = _lu(A, "linalg.slogdet", None, row_major_transposed=True)
        ctx.save(A=A, LU=_tensor(lu, backend), pivots=_tensor(pivots, backend))
        ctx.lu_of_transpose = backend.is_contiguous(A._data)
        sign = backend.sign(_det_from_lu(backend, lu, pivots))
        logabsdet = backend.sum(backend.log(backend.abs(backend.diagonal(lu, 0, -2, -1))), -1, False)
        return sign, logabsdet

    def backward(ctx, grad_sign, grad_logabsdet):
        backend = ctx.backend
        A = ctx.saved("A")
        if grad_logabsdet is None:
            return backend.full(tuple(A.shape), 0, _dtype.from_any(A.dtype), backend.device_of(A))
        # PyTorch solves with the saved LU factors: zero pivots give its inf and nan (and a matrix whose pivots
        # are not exactly zero, though numpy's inverse calls it singular, PyTorch's large finite values)
        inverse = None if _any_singular(ctx) else _inverse_or_none(backend, A)
        if inverse is None:
            return _lu_solve_singular(backend, grad_logabsdet, ctx.saved("LU"), ctx.saved("pivots"),
                                      ctx.lu_of_transpose, A)
        inverse_t = _mT(backend, inverse)
        return backend.mul(backend.reshape(grad_logabsdet, tuple(grad_logabsdet.shape) + (1, 1)), inverse_t)

    def backward_graph(ctx, grad_sign, grad_logabsdet):
        """Recorded as PyTorch records it: ``solve(Aᵀ, diag_embed(ḡ, expanded as the pivots)ᵀ)`` (a batch too)."""
        A = ctx.saved_graph("A")
        if grad_logabsdet is None:  # (a singular A: the solve raises PyTorch's LinAlgError, as in PyTorch)
            return OpFunction.backward_graph(ctx, grad_logabsdet)
        return solve(A.mT, _diag_embed(grad_logabsdet.unsqueeze(-1).expand(tuple(A.shape[:-1]))).mT)


def _inverse_or_none(backend, A):
    import numpy as np

    try:
        return backend.inv(A)
    except (np.linalg.LinAlgError, RuntimeError):
        return None


def _lu_solve_singular(backend, grad, lu, pivots, lu_of_transpose, A):
    """``Ā = A⁻ᵀ diag(ḡ)`` as PyTorch's ``slogdet_backward`` computes it, ``linalg_lu_solve`` with the saved factors
    (of ``Aᵀ``, or of ``A`` solved with its adjoint for a non-contiguous ``A``), written as LAPACK's ``getrs``
    runs it, step by step, so that a zero pivot gives PyTorch's inf and nan in the same places."""
    import numpy as np

    lu, pivots, g = backend.to_numpy(lu), backend.to_numpy(pivots), backend.to_numpy(grad)
    n = lu.shape[-1]
    out = np.zeros(lu.shape, dtype=lu.dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for index in np.ndindex(*lu.shape[:-2]):
            m, b = lu[index], np.eye(n, dtype=lu.dtype) * g[index]
            if lu_of_transpose:  # P L U = Aᵀ: swap rows, L (unit) forwards, U backwards
                for k in range(n):
                    p = int(pivots[index + (k,)]) - 1
                    if p != k:
                        b[[k, p]] = b[[p, k]]
                for k in range(n):
                    b[k + 1:] -= np.multiply.outer(m[k + 1:, k], b[k])
                for k in range(n - 1, -1, -1):
                    b[k] = b[k] / m[k, k]
                    b[:k] -= np.multiply.outer(m[:k, k], b[k])
            else:  # P L U = A, solve Aᵀ X = B: Uᵀ forwards, Lᵀ (unit) backwards, then the swaps in reverse
                for k in range(n):
                    b[k] = (b[k] - m[:k, k] @ b[:k]) / m[k, k]
                for k in range(n - 1, -1, -1):
                    b[k] = b[k] - m[k + 1:, k] @ b[k + 1:]
                for k in range(n - 1, -1, -1):
                    p = int(pivots[index + (k,)]) - 1
                    if p != k:
                        b[[k, p]] = b[[p, k]]
            out[index] = b
    return backend.array(out, _dtype.from_any(A.dtype), backend.device_of(A))


def _any_singular(ctx) -> bool:
    """Whether a saved LU factorization has a zero on U's diagonal (a singular matrix in the batch)."""
    backend = ctx.backend
    lu = ctx.saved("LU")
    return bool(backend.any(backend.eq(backend.diagonal(lu, 0, -2, -1), 0)))


class LinalgCholeskyExBackward0(OpFunction):
    """``linalg.cholesky``: ``Ā = L⁻ᵀ Φ(Lᵀ L̄) L⁻¹``, symmetrized; ``Φ`` keeps the lower triangle, the
    diagonal halved."""

    inputs = ("self",)
    derivatives = {"self": ("cholesky_backward(grad, upper, L)", r"L^{-\top}\,\Phi(L^{\top}\bar{L})\,L^{-1}")}

    def forward(ctx, self, upper=False):
        factor = _cholesky(self, "linalg.cholesky")
        ctx.save(upper=upper)
        ctx.save_result("L")
        return _upper(self._backend, factor) if upper else factor

    def backward(ctx, grad):
        return _cholesky_backward(ctx.backend, grad, ctx.saved("L"), ctx.saved("upper"))

    def backward_graph(ctx, grad):
        return _cholesky_backward_graph(grad, ctx.saved_graph("L"), ctx.saved("upper"))


class CholeskyBackward0(LinalgCholeskyExBackward0):
    """The deprecated ``torch.cholesky``: the same derivative, saved as ``result``."""

    derivatives = {"self": ("cholesky_backward(grad, upper, result)", r"L^{-\top}\,\Phi(L^{\top}\bar{L})\,L^{-1}")}

    def forward(ctx, self, upper=False):
        factor = _cholesky(self, "linalg.cholesky")
        ctx.save(upper=upper)
        ctx.save_result("result")
        return _upper(self._backend, factor) if upper else factor

    def backward(ctx, grad):
        return _cholesky_backward(ctx.backend, grad, ctx.saved("result"), ctx.saved("upper"))

    def backward_graph(ctx, grad):
        return _cholesky_backward_graph(grad, ctx.saved_graph("result"), ctx.saved("upper"))


def _upper(backend, factor):
    """``Lᵀ``, laid out column by column as LAPACK writes an upper factor."""
    return _mT(backend, backend.contiguous(factor))


def _cholesky(A, name: str):
    backend = A._backend
    factor, failure = backend.cholesky(A._data)
    if factor is None:
        index, order = failure
        prefix = f"(Batch element {index}): " if A.ndim > 2 else ""
        raise LinAlgError(f"{name}: {prefix}The factorization could not be completed because the input is not "
                          f"positive-definite (the leading minor of order {order} is not positive-definite).")
    return factor


def _cholesky_backward(backend, grad, L, upper):
    if upper:
        L, grad = _mT(backend, L), _mT(backend, grad)
    n = L.shape[-1]
    phi = backend.tril(backend.matmul(_mT(backend, L), grad), 0)
    eye = backend.eye(n, n, _dtype.from_any(phi.dtype), backend.device_of(phi))
    phi = backend.sub(phi, backend.mul(backend.mul(phi, eye), 0.5))
    inverse = backend.inv(L)
    gradient = backend.matmul(_mT(backend, inverse), backend.matmul(phi, inverse))
    return backend.mul(backend.add(gradient, _mT(backend, gradient)), 0.5)


def _cholesky_backward_graph(grad, L, upper):
    """PyTorch's ``cholesky_backward``, op for op: ``Φ = tril(Lᴴ L̄)``, ``0.5 (Φ + tril(Φ, -1)ᴴ)``, then
    one triangular solve from each side."""
    from gradviz.ops.arithmetic import MulBackward1
    from gradviz.ops.linalg import matmul

    if upper:
        L, grad = L.mT, grad.mT
    phi = matmul(L.mT, grad).tril()
    phi = MulBackward1.apply(phi + phi.tril(-1).mT, 0.5)
    phi = solve_triangular(L.mT, phi, upper=True, left=True)
    return solve_triangular(L, phi, upper=False, left=False)


class LinalgSolveExBackward0(OpFunction):
    """``linalg.solve(A, B)``: ``X = A⁻¹ B``; ``B̄ = A⁻ᵀ X̄`` and ``Ā = -B̄ Xᵀ``."""

    inputs = ("A", "B")
    derivatives = {"A": ("-gB @ X.mH()", r"-\bar{B}\,X^{\top}"), "B": ("solve(A.mH(), grad)", r"A^{-\top}\,\bar{X}")}

    def forward(ctx, A, B, vector, left=True):
        backend = A._backend
        lu, pivots = _lu(A, "torch.linalg.solve", lambda info: "The solver failed because the input matrix is singular.")
        ctx.save(A=A, LU=_tensor(lu, backend), left=left, pivots=_tensor(pivots, backend))
        ctx.save_result()
        ctx.vector = vector
        ctx.metas = (meta(A), meta(B))
        b = backend.reshape(B._data, tuple(B.shape) + (1,)) if vector else B._data
        if b.dtype != A._data.dtype:
            b = backend.astype(b, A.dtype)
        a = A._data
        if not left:  # X A = B is Aᵀ Xᵀ = Bᵀ
            a, b = _mT(backend, a), _mT(backend, b)
        out = backend.solve(backend.expand(a, _solve_batch(A, b) + tuple(A.shape[-2:])),
                            backend.expand(b, _solve_batch(A, b) + tuple(b.shape[-2:])))
        if not left:
            return backend.contiguous(_mT(backend, out))
        if vector and out.ndim > 2:  # a batch of vectors comes back as PyTorch lays it out: its last two dims
            # (the last batch dim and the vector) column by column, so a later ``.view`` fails as in PyTorch
            columns = _mT(backend, backend.reshape(out, tuple(out.shape[:-1])))
            like = backend.full(tuple(columns.shape), 0, _dtype.from_any(columns.dtype), backend.device_of(columns))
            return _mT(backend, backend.copy_as(columns, like))  # (a size-1 dim's stride as PyTorch counts it)
        return backend.reshape(out, tuple(out.shape[:-1])) if vector else out

    def backward(ctx, grad):
        backend = ctx.backend
        A, X = ctx.saved("A", "result")
        if not ctx.saved("left"):  # X A = B: B̄ = X̄ A⁻ᵀ and Ā = -Xᵀ B̄
            batch = tuple(grad.shape[:-2])
            grad_B = _mT(backend, backend.solve(backend.expand(A, batch + tuple(A.shape[-2:])), _mT(backend, grad)))
            grad_A = backend.neg(backend.matmul(_mT(backend, X), grad_B))
            needs = ctx.needs_input_grad
            return (to_input(backend, grad_A, ctx.metas[0]) if needs[0] else None,
                    to_input(backend, grad_B, ctx.metas[1]) if needs[1] else None)
        if ctx.vector:
            grad, X = backend.reshape(grad, tuple(grad.shape) + (1,)), backend.reshape(X, tuple(X.shape) + (1,))
        A_t = _mT(backend, A)
        batch = tuple(grad.shape[:-2])
        grad_B = backend.solve(backend.expand(A_t, batch + tuple(A.shape[-2:])), grad)
        grad_A = backend.neg(backend.matmul(grad_B, _mT(backend, X)))
        if ctx.vector:
            grad_B = backend.reshape(grad_B, tuple(grad_B.shape[:-1]))
        needs = ctx.needs_input_grad
        return (to_input(backend, grad_A, ctx.metas[0]) if needs[0] else None,
                to_input(backend, grad_B, ctx.metas[1]) if needs[1] else None)

    def backward_graph(ctx, grad):
        """Recorded as PyTorch records it: ``B̄ = solve(Aᵀ, X̄)`` first, then ``Ā = -B̄ Xᵀ``; a vector ``B``
        is a column on the way (unsqueeze, squeeze); ``left=False``: ``B̄ = solve(Aᵀ, X̄, left=False)``,
        ``Ā = -Xᵀ B̄``. Where the batches broadcast, each gradient is then summed back to its input's shape
        (``sum(dims, keepdim=True)``, then a ``view`` when leading dims went), as ``validate_outputs`` does."""
        from gradviz.ops._util import sum_to_tensor
        from gradviz.ops.linalg import matmul

        A, X = ctx.saved_graph("A", "result")
        needs = ctx.needs_input_grad
        if not ctx.saved("left"):  # X A = B: B̄ = solve(Aᵀ, X̄, left=False), Ā = -Xᵀ B̄
            grad_B = solve(A.mT, grad, left=False)
            grad_A = -matmul(X.mT, grad_B) if needs[0] else None
        else:
            if ctx.vector:
                grad = grad.unsqueeze(-1)
            grad_B = solve(A.mT, grad)
            grad_A = None
            if needs[0]:
                grad_A = -matmul(grad_B, (X.unsqueeze(-1) if ctx.vector else X).mT)
            if ctx.vector:
                grad_B = grad_B.squeeze(-1)
        return (sum_to_tensor(grad_A, ctx.metas[0][0]) if needs[0] else None,
                sum_to_tensor(grad_B, ctx.metas[1][0]) if needs[1] else None)


class LinalgSolveTriangularBackward0(OpFunction):
    """``linalg.solve_triangular(A, B, upper=...)``: ``X = A⁻¹ B`` (``left=False``: ``X = B A⁻¹``) reading
    only one triangle of ``A``. ``B̄ = A⁻ᵀ X̄`` (``X̄ A⁻ᵀ``) and ``Ā = -B̄ Xᵀ`` (``-Xᵀ B̄``), kept to the
    same triangle (its diagonal left out when ``unitriangular``)."""

    inputs = ("self", "B")
    derivatives = {"self": ("linalg_solve_triangular_backward(grad, self, result, upper, left, unitriangular)",
                            r"-\bar{B}\,X^{\top}\ \text{(one triangle)}"),
                   "B": ("linalg_solve_triangular(self.mH(), grad, !upper, left, unitriangular)",
                         r"A^{-\top}\,\bar{X}")}

    def forward(ctx, self, B, upper, left, unitriangular):
        ctx.save(left=left, self=self, unitriangular=unitriangular, upper=upper)
        ctx.save_result()
        ctx.metas = (meta(self), meta(B))
        backend = self._backend
        b = B._data if B.dtype is self.dtype else backend.astype(B._data, self.dtype)
        return _triangular_solve(backend, self._data, b, upper, left, unitriangular)

    def backward(ctx, grad):
        backend = ctx.backend
        A, X = ctx.saved("self", "result")
        upper, left, unitriangular = ctx.saved("upper", "left", "unitriangular")
        grad_B = _triangular_solve(backend, _mT(backend, A), grad, not upper, left, unitriangular)
        needs = ctx.needs_input_grad
        grad_A = None
        if needs[0]:
            product = backend.neg(backend.matmul(grad_B, _mT(backend, X)) if left
                                  else backend.matmul(_mT(backend, X), grad_B))
            grad_A = backend.triu(product, int(unitriangular)) if upper else backend.tril(product, -int(unitriangular))
        return (to_input(backend, grad_A, ctx.metas[0]) if needs[0] else None,
                to_input(backend, grad_B, ctx.metas[1]) if needs[1] else None)

    def backward_graph(ctx, grad):
        """PyTorch's ``linalg_solve_triangular_backward``, op for op (for one matrix or matching batches)."""
        from gradviz.ops.linalg import matmul

        A, X = ctx.saved_graph("self", "result")
        upper, left, unitriangular = ctx.saved("upper", "left", "unitriangular")
        if tuple(A.shape[:-2]) != tuple(grad.shape[:-2]) or ctx.metas[1][0] != tuple(grad.shape):
            return OpFunction.backward_graph(ctx, grad)
        grad_B = solve_triangular(A.mT, grad, upper=not upper, left=left, unitriangular=unitriangular)
        grad_A = None
        if ctx.needs_input_grad[0]:
            X_t = X.mT
            grad_A = -matmul(grad_B, X_t) if left else -matmul(X_t, grad_B)
            grad_A = grad_A.triu(int(unitriangular)) if upper else grad_A.tril(-int(unitriangular))
        return grad_A, grad_B if ctx.needs_input_grad[1] else None


def _triangular_solve(backend, a, b, upper, left, unitriangular):
    a = backend.triu(a, 0) if upper else backend.tril(a, 0)
    if unitriangular:  # the diagonal is taken to be ones, whatever is stored there
        n = a.shape[-1]
        eye = backend.eye(n, n, _dtype.from_any(a.dtype), backend.device_of(a))
        a = backend.add(backend.mul(a, backend.sub(1.0, eye)), eye)
    if left:
        return backend.solve_triangular(a, b, upper)
    # X A = B is Aᵀ Xᵀ = Bᵀ; X is laid out column by column too, as LAPACK's result always is
    transposed = backend.solve_triangular(_mT(backend, a), _mT(backend, b), not upper)
    return _mT(backend, backend.contiguous(transposed))


def solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False, out=None):
    """``X`` with ``A X = B`` (``left=False``: ``X A = B``) for a triangular ``A``: only its upper (or
    lower) triangle is read."""
    _check_square("linalg.solve_triangular", A)
    _check_float("linalg.solve_triangular", A)
    rows = B.shape[-2] if left else B.shape[-1]
    if B.ndim < 2 or rows != A.shape[-1]:
        shape = "x".join(str(size) for size in B.shape[-2:])
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation {equation} "
                           f"({A.shape[-2]}x{A.shape[-1]} and {shape})")
    return LinalgSolveTriangularBackward0.apply(A, B, upper, left, unitriangular)


def _diag_embed(vector):
    from gradviz.ops.matrix import DiagEmbedBackward0

    return DiagEmbedBackward0.apply(vector, 0)


def _solve_batch(A, b) -> tuple:
    from gradviz.ops._util import broadcast_shapes

    return broadcast_shapes(tuple(A.shape[:-2]), tuple(b.shape[:-2]))


# -- the functions ---------------------------------------------------------------------------------------
def inv(A, *, out=None):
    _check_square("linalg.inv", A)
    _check_float("linalg.inv", A)
    _lu(A, "linalg.inv", lambda info: f"The diagonal element {info} is zero, the inversion could not be completed "
                                      "because the input matrix is singular.")
    return LinalgInvExBackward0.apply(A)


def det(A, *, out=None):
    _check_square("linalg.det", A)
    _check_float("linalg.det", A)
    return LinalgDetBackward0.apply(A)


def slogdet(A, *, out=None):
    _check_square("linalg.slogdet", A)
    _check_float("linalg.slogdet", A)
    return LINALG_SLOGDET(*LinalgSlogdetBackward0.apply(A))


def torch_slogdet(A):
    """``torch.slogdet``: the same pair, under PyTorch's older name (``torch.return_types.slogdet``)."""
    _check_square("linalg.slogdet", A)
    _check_float("linalg.slogdet", A)
    return SLOGDET(*LinalgSlogdetBackward0.apply(A))


def logdet(A):
    """``log det A``: PyTorch's ``where(sign == -1, nan, logabsdet)`` over ``slogdet``."""
    from gradviz.ops.comparison import where

    _check_square("logdet", A)
    _check_float("logdet", A)
    sign, logabsdet = LinalgSlogdetBackward0.apply(A)
    return where(sign == -1.0, float("nan"), logabsdet)


def cholesky(A, *, upper: bool = False, out=None):
    _check_square("linalg.cholesky", A)
    _check_float("linalg.cholesky", A)
    return LinalgCholeskyExBackward0.apply(A, upper=upper)


def deprecated_cholesky(A, upper: bool = False, *, out=None):
    """The deprecated ``torch.cholesky`` (PyTorch warns and records CholeskyBackward0)."""
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\nand"
                  "\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
                  "This transform will produce equivalent results for all valid (symmetric positive definite) inputs.",
                  UserWarning, stacklevel=2)
    _check_square("cholesky", A)
    _check_float("cholesky", A)
    return CholeskyBackward0.apply(A, upper=upper)


def solve(A, B, *, left: bool = True, out=None):
    """``X`` with ``A @ X = B`` (``left=False``: ``X @ A = B``); a ``B`` with one dim fewer than ``A`` (and
    matching batch) is a vector."""
    _check_square("linalg.solve", A)
    _check_float("linalg.solve", A)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rows = B.shape[-1] if vector else B.shape[-2]
    columns = 1 if vector else B.shape[-1]
    if (rows if left else columns) != A.shape[-1]:  # X A = B (left=False) reads B's columns
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {'AX' if left else 'XA'} = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {rows}x{columns})")
    return LinalgSolveExBackward0.apply(A, B, vector, left)


# -- SVD, symmetric eigendecomposition, QR, pseudo-inverse -----------------------------------------------
# One node each, with several outputs (``output_nr`` 0, 1, 2): the outputs PyTorch saves are saved as
# outputs. LAPACK fixes each singular vector or eigenvector only up to its sign; numpy and PyTorch
# call the same drivers (gesdd, syevd, geqrf), so the signs agree on most inputs but not all, and a
# loss that reads the vectors themselves (not ``U diag(S) Vh``, ``|U|``, ``V Vᵀ``) depends on that choice.
LINALG_SVD = _return_type("linalg_svd", ("U", "S", "Vh"))
SVD = _return_type("svd", ("U", "S", "V"))
LINALG_EIGH = _return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
LINALG_QR = _return_type("linalg_qr", ("Q", "R"))


def _several_outputs():
    from gradviz.ops.summaries import _TwoResults

    return _TwoResults


class _Factorization(_several_outputs()):
    """A decomposition of one matrix (or batch) into several outputs of one node."""

    inputs = ("A",)


def _skew(backend, X):
    return backend.sub(X, _mT(backend, X))


def _unit_diagonal(backend, E):
    """``E`` with ones on its diagonal (the denominators there are never used)."""
    n = E.shape[-1]
    eye = backend.eye(n, n, _dtype.from_any(E.dtype), backend.device_of(E))
    return backend.add(backend.mul(E, backend.sub(1.0, eye)), eye)


def _diag_embed_array(backend, vector):
    n = vector.shape[-1]
    eye = backend.eye(n, n, _dtype.from_any(vector.dtype), backend.device_of(vector))
    return backend.mul(backend.reshape(vector, tuple(vector.shape) + (1,)), eye)


def _column(backend, vector):
    return backend.reshape(vector, tuple(vector.shape) + (1,))


def _row(backend, vector):
    return backend.reshape(vector, tuple(vector.shape[:-1]) + (1, vector.shape[-1]))


def _narrow_last(backend, array, size):
    return backend.getitem(array, (Ellipsis, slice(0, size)))


def _narrow_rows(backend, array, size):
    return backend.getitem(array, (Ellipsis, slice(0, size), slice(None)))


class LinalgSvdBackward0(_Factorization):
    """``linalg.svd``: ``A = U diag(S) Vh``. With ``E_ij = s_j² - s_i²``,
    ``Ā = U [(skew(UᵀŪ) S + S skew(VᵀV̄)) / E + diag(S̄)] Vh`` (``skew(X) = X - Xᵀ``), plus the parts of
    ``Ū``, ``V̄`` outside the square ``k x k`` core for a non-square ``A``. Undefined for repeated
    singular values when ``U`` or ``Vh`` is used (PyTorch's formula then divides by zero too)."""

    saved_outputs = {"U": 0, "S": 1, "Vh": 2}
    derivatives = {"A": ("svd_backward(grad_U, grad_S, grad_Vh, full_matrices ? U.narrow(-1, 0, S.size(-1)) : U, S, "
                         "full_matrices ? Vh.narrow(-2, 0, S.size(-1)) : Vh)",
                         r"U\left[\frac{\mathrm{skew}(U^{\top}\bar U)S + S\,\mathrm{skew}(V^{\top}\bar V)}{E}"
                         r" + \mathrm{diag}(\bar S)\right]V^{\top}")}

    def forward(ctx, A, full_matrices):
        U, S, Vh = A._backend.svd(A._data, full_matrices)
        ctx.save(full_matrices=full_matrices, S_sym_argsize_minus_1=S.shape[-1])
        return U, S, Vh

    def backward(ctx, grad_U, grad_S, grad_Vh):
        return _svd_backward(ctx.backend, grad_U, grad_S, grad_Vh, *ctx.saved("U", "S", "Vh"))


def _svd_backward(backend, gU, gS, gVh, U, S, Vh):
    """PyTorch's ``svd_backward`` for real matrices, on arrays."""
    if gU is None and gS is None and gVh is None:
        return None
    k = S.shape[-1]
    m, n = U.shape[-2], Vh.shape[-1]
    U, Vh = _narrow_last(backend, U, k), _narrow_rows(backend, Vh, k)
    if gU is not None:
        gU = _narrow_last(backend, gU, k)
    if gVh is not None:
        gVh = _narrow_rows(backend, gVh, k)
    if gU is None and gVh is None:  # only S is used: no division, defined for repeated values too
        return backend.matmul(U, backend.mul(_column(backend, gS), Vh))
    V, gV = _mT(backend, Vh), None if gVh is None else _mT(backend, gVh)
    S2 = backend.mul(S, S)
    E = _unit_diagonal(backend, backend.sub(_row(backend, S2), _column(backend, S2)))
    core = None
    if gU is not None:
        UhgU = backend.matmul(_mT(backend, U), gU)
        core = backend.mul(_skew(backend, UhgU), _row(backend, S))
    if gV is not None:
        VhgV = backend.matmul(_mT(backend, V), gV)
        part = backend.mul(_column(backend, S), _skew(backend, VhgV))
        core = part if core is None else backend.add(core, part)
    gA = backend.div(core, E)
    if gS is not None:
        gA = backend.add(gA, _diag_embed_array(backend, gS))
    if m > k and gU is not None:  # the part of Ū outside U's columns: (I - U Uᵀ) Ū S⁻¹ Vh
        gA = backend.matmul(U, gA)
        gU_over_S = backend.div(gU, _row(backend, S))
        gA = backend.sub(backend.add(gA, gU_over_S), backend.matmul(U, backend.matmul(_mT(backend, U), gU_over_S)))
        return backend.matmul(gA, Vh)
    if n > k and gV is not None:  # the part of V̄ outside V's columns: U S⁻¹ V̄ᵀ (I - V Vᵀ)
        gA = backend.matmul(gA, Vh)
        over_S = backend.div(gVh, _column(backend, S))
        gA = backend.sub(backend.add(gA, over_S), backend.matmul(backend.matmul(over_S, V), Vh))
        return backend.matmul(U, gA)
    return backend.matmul(U, backend.matmul(gA, Vh))


class LinalgEighBackward0(_Factorization):
    """``linalg.eigh``: ``A = V diag(L) Vᵀ`` for a symmetric ``A`` (one triangle read). With
    ``E_ij = l_j - l_i``, ``Ā = V [½ skew(Vᵀ V̄) / E + diag(L̄)] Vᵀ`` (``skew(X) = X - Xᵀ``)."""

    saved_outputs = {"eigenvalues": 0, "eigenvectors": 1}
    derivatives = {"A": ("linalg_eig_backward(grad_eigenvalues, grad_eigenvectors, eigenvalues, eigenvectors, "
                         "/*is_hermitian=*/true)", r"V\left[\frac{\mathrm{skew}(V^{\top}\bar V)}{2E} + \mathrm{diag}(\bar L)\right]V^{\top}")}

    def forward(ctx, A, upper):
        values, vectors = A._backend.eigh(A._data, upper)
        ctx.save()
        return values, vectors

    def backward(ctx, grad_values, grad_vectors):
        return _eigh_backward(ctx.backend, grad_values, grad_vectors, *ctx.saved("eigenvalues", "eigenvectors"))


def _eigh_backward(backend, grad_values, grad_vectors, L, V):
    """PyTorch's ``linalg_eig_backward`` for a symmetric matrix, on arrays."""
    if grad_values is None and grad_vectors is None:
        return None
    if grad_vectors is None:
        inner = _diag_embed_array(backend, grad_values)
    else:  # Vᵀ V̄ projected onto the skew-symmetric matrices (its diagonal is then 0), over E
        E = _unit_diagonal(backend, backend.sub(_row(backend, L), _column(backend, L)))
        inner = backend.div(backend.mul(_skew(backend, backend.matmul(_mT(backend, V), grad_vectors)), 0.5), E)
        if grad_values is not None:
            inner = backend.add(inner, _diag_embed_array(backend, grad_values))
    return backend.matmul(V, backend.matmul(inner, _mT(backend, V)))


class LinalgQrBackward0(_Factorization):
    """``linalg.qr``: ``A = Q R``. For ``m >= n``, with ``M = R R̄ᵀ - Q̄ᵀ Q``,
    ``Ā = (Q̄ + Q copyltu(M)) R⁻ᵀ`` (``copyltu`` mirrors the strict lower triangle up); for ``m < n`` the
    square left block takes that formula and the rest ``Q R̄₂``."""

    saved_outputs = {"Q": 0, "R": 1}
    derivatives = {"A": ("linalg_qr_backward(grad_Q, grad_R, Q, R, mode)",
                         r"(\bar Q + Q\,\mathrm{copyltu}(R\bar R^{\top} - \bar Q^{\top} Q))\,R^{-\top}")}

    def forward(ctx, A, mode):
        Q, R = A._backend.qr(A._data, mode == "complete")
        ctx.save(mode=mode)
        if mode == "r":  # Q is not returned: PyTorch gives an empty tensor in its place
            Q = A._backend.full((0,), 0, _dtype.from_any(A.dtype), A._backend.device_of(A._data))
        return Q, R

    def backward(ctx, grad_Q, grad_R):
        backend = ctx.backend
        mode = ctx.saved("mode")
        if mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                               "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
        Q, R = ctx.saved("Q", "R")
        m, n = Q.shape[-2], R.shape[-1]
        if mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if grad_Q is None and grad_R is None:
            return None
        dtype, device = _dtype.from_any(R.dtype), backend.device_of(R)
        if grad_Q is None:
            grad_Q = backend.full(tuple(Q.shape), 0, dtype, device)
        if grad_R is None:
            grad_R = backend.full(tuple(R.shape), 0, dtype, device)
        if m >= n:
            return _qr_square_backward(backend, grad_Q, grad_R, Q, R)
        # A = [X | Y] with X = Q U square: X's gradient sees Q̄ + Y R̄₂ᵀ, Y's is Q R̄₂
        U, V = backend.getitem(R, (Ellipsis, slice(0, m))), backend.getitem(R, (Ellipsis, slice(m, None)))
        grad_U, grad_V = backend.getitem(grad_R, (Ellipsis, slice(0, m))), backend.getitem(grad_R, (Ellipsis, slice(m, None)))
        Y = backend.matmul(Q, V)
        grad_X = _qr_square_backward(backend, backend.add(grad_Q, backend.matmul(Y, _mT(backend, grad_V))), grad_U, Q, U)
        return backend.concatenate((grad_X, backend.matmul(Q, grad_V)), -1)


def _qr_square_backward(backend, grad_Q, grad_R, Q, R):
    M = backend.sub(backend.matmul(R, _mT(backend, grad_R)), backend.matmul(_mT(backend, grad_Q), Q))
    lower = backend.tril(M, -1)
    n = M.shape[-1]
    eye = backend.eye(n, n, _dtype.from_any(M.dtype), backend.device_of(M))
    copyltu = backend.add(backend.add(lower, _mT(backend, lower)), backend.mul(M, eye))
    b = backend.add(grad_Q, backend.matmul(Q, copyltu))
    # Ā = b R⁻ᵀ, that is Āᵀ = R⁻¹ bᵀ: one triangular solve
    return _mT(backend, backend.solve_triangular(R, _mT(backend, b), True))


class LinalgPinvBackward0(OpFunction):
    """``linalg.pinv``: the Moore-Penrose pseudo-inverse ``A⁺`` (from the SVD, or ``eigh`` when
    ``hermitian``); ``Ā = -(A⁺ Ȳᵀ A⁺)ᵀ + (I - A A⁺)ᵀ Ȳᵀ... `` as PyTorch's ``pinv_backward`` writes it."""

    inputs = ("self",)
    derivatives = {"self": ("pinv_backward(grad, result, self)",
                            r"-A^{+\top}\bar Y^{\top\!\top} A^{+\top} + (I - AA^{+})^{\top}\bar Y^{\top}A^{+}A^{+\top}"
                            r" + A^{+\top}A^{+}\bar Y^{\top}(I - A^{+}A)^{\top}")}

    def forward(ctx, self, atol, rtol, hermitian):
        ctx.save(self=self)
        ctx.save_result()
        return _pinv_array(self, atol, rtol, hermitian)

    def backward(ctx, grad):
        return _pinv_backward(ctx.backend, grad, *ctx.saved("result", "self"))


def _pinv_backward(backend, grad, pinvA, A):
    """PyTorch's ``pinv_backward``, on arrays (written for the smaller of the two dimensions)."""
    m, n = A.shape[-2], A.shape[-1]
    pinvAh, gradh = _mT(backend, pinvA), _mT(backend, grad)
    mm = backend.matmul
    if m <= n:
        K = mm(gradh, pinvA)
        KpinvAh = mm(K, pinvAh)
        out = backend.add(backend.neg(_mT(backend, mm(pinvA, K))), KpinvAh)
        out = backend.sub(out, mm(mm(A, pinvA), KpinvAh))
        return backend.add(out, mm(mm(pinvAh, pinvA), backend.sub(gradh, mm(K, A))))
    K = mm(pinvA, gradh)
    pinvAhK = mm(pinvAh, K)
    out = backend.neg(_mT(backend, mm(K, pinvA)))
    out = backend.add(out, mm(mm(backend.sub(gradh, mm(A, K)), pinvA), pinvAh))
    return backend.sub(backend.add(out, pinvAhK), mm(mm(pinvAhK, pinvA), A))


_EPSILON = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def _tolerance(backend, largest, atol, rtol, shape, dtype):
    """PyTorch's cut-off for "zero" singular values: ``max(atol, rtol * σ_max)``; by default ``rtol`` is
    ``eps * max(m, n)`` (0 when only ``atol`` is given and positive)."""
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else _EPSILON[dtype.name] * max(shape[-2], shape[-1])
    atol = 0.0 if atol is None else atol
    return backend.maximum(backend.mul(largest, rtol), atol)


def _pinv_array(A, atol, rtol, hermitian):
    backend = A._backend
    data = A._data
    if hermitian:
        values, vectors = backend.eigh(data, False)
        magnitude = backend.abs(values)
        largest = backend.amax(magnitude, -1, True)
        keep = backend.gt(magnitude, _tolerance(backend, largest, atol, rtol, A.shape, A.dtype))
        inverse = backend.where(keep, backend.div(1.0, backend.where(keep, values, 1.0)), 0.0)
        return backend.matmul(backend.mul(vectors, _row(backend, inverse)), _mT(backend, vectors))
    U, S, Vh = backend.svd(data, False)
    largest = backend.amax(S, -1, True) if S.shape[-1] else S
    keep = backend.gt(S, _tolerance(backend, largest, atol, rtol, A.shape, A.dtype))
    inverse = backend.where(keep, backend.div(1.0, backend.where(keep, S, 1.0)), 0.0)
    return backend.matmul(backend.mul(_mT(backend, Vh), _row(backend, inverse)), _mT(backend, U))


# -- their functions ---------------------------------------------------------------------------------------
def _check_matrix(name: str, A) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")


def svd(A, full_matrices: bool = True, *, driver=None, out=None):
    """``U, S, Vh`` with ``A = U diag(S) Vh``, ``S`` descending (one LinalgSvdBackward0, three outputs)."""
    _check_matrix("linalg.svd", A)
    _check_float("linalg.svd", A)
    return LINALG_SVD(*LinalgSvdBackward0.apply(A, full_matrices))


def svdvals(A, *, driver=None, out=None):
    """The singular values only: PyTorch still computes (and saves) the vectors when ``A`` requires grad."""
    _check_matrix("linalg.svd", A)
    _check_float("linalg.svd", A)
    return LinalgSvdBackward0.apply(A, False)[1]


def torch_svd(input, some: bool = True, compute_uv: bool = True, *, out=None):
    """The older ``torch.svd``: ``V`` (not ``Vh``, a transpose of it), reduced unless ``some=False``;
    ``compute_uv=False`` gives zero ``U`` (m x m) and ``V`` (n x n)."""
    from gradviz.ops.shape import transpose

    if input.ndim < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has {input.ndim} dimensions instead")
    _check_float("linalg.svd", input)
    if not compute_uv:
        S = svdvals(input)
        backend, dtype = input._backend, _dtype.from_any(input.dtype)
        device = backend.device_of(input._data)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        zeros = [_tensor(backend.full(batch + (size, size), 0, dtype, device), backend) for size in (m, n)]
        return SVD(zeros[0], S, zeros[1])
    U, S, Vh = LinalgSvdBackward0.apply(input, not some)
    return SVD(U, S, transpose(Vh, -2, -1))


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A, UPLO: str = "L", *, out=None):
    """``eigenvalues`` (ascending) and ``eigenvectors`` of a symmetric ``A``, read from its lower (or
    ``UPLO='U'``: upper) triangle."""
    _check_square("linalg.eigh", A)
    _check_uplo(UPLO)
    _check_eigh_dtype(A)
    return LINALG_EIGH(*LinalgEighBackward0.apply(A, UPLO == "U"))


def eigvalsh(A, UPLO: str = "L", *, out=None):
    _check_square("linalg.eigh", A)
    _check_uplo(UPLO)
    _check_eigh_dtype(A)
    return LinalgEighBackward0.apply(A, UPLO == "U")[0]


def _check_eigh_dtype(A):
    if not A.dtype.is_floating_point:
        raise _dtype.not_implemented("linalg_eigh_cpu", A.dtype)


def qr(A, mode: str = "reduced", *, out=None):
    """``Q, R`` with ``A = Q R``: ``mode='reduced'`` (k = min(m, n) columns of Q), ``'complete'`` (square
    Q) or ``'r'`` (R only; Q is empty, and the result cannot be differentiated)."""
    _check_matrix("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    _check_float("linalg.qr", A)
    return LINALG_QR(*LinalgQrBackward0.apply(A, mode))


def pinv(A, *, atol=None, rtol=None, hermitian: bool = False, out=None):
    """The pseudo-inverse: singular values (or ``hermitian``: eigenvalues) at most
    ``max(atol, rtol * largest)`` count as zero."""
    if A.ndim < 2 or not A.dtype.is_floating_point:
        kind = _dtype.SCALAR_TYPE_NAMES[A.dtype.name]
        raise RuntimeError(f"linalg.pinv({kind}{{{list(A.shape)}}}): expected a tensor with 2 or more dimensions of "
                           "float, double, cfloat or cdouble types")
    return LinalgPinvBackward0.apply(A, atol, rtol, hermitian)


# -- least squares -----------------------------------------------------------------------------------------
LINALG_LSTSQ = _return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


expose_saved("solution")  # written into the node's saved entries directly (below), past ``ctx.save``


class LinalgLstsqBackward0(OpFunction):
    """``linalg.lstsq(A, B)``: ``X`` minimizing ``‖A X - B‖``, as ``X = A⁺ B``; PyTorch's gradients are those
    of ``A⁺ B``: ``B̄ = A⁺ᵀ X̄`` and ``Ā = pinv_backward(X̄ Bᵀ, A⁺, A)``. Two outputs (``solution`` and
    ``residuals``, ``‖A X - B‖²`` per column, whose gradients at the optimum are ``2 R Xᵀ`` and ``-2 R`` with
    ``R = A X - B``)."""

    inputs = ("self", "b")
    derivatives = {"self": ("linalg_lstsq_backward(grads[0], self, b, grad_input_mask)[0]",
                            r"\mathrm{pinv\_backward}(\bar X B^{\top}, A^{+}, A)"),
                   "b": ("linalg_lstsq_backward(grads[0], self, b, grad_input_mask)[1]", r"A^{+\top}\bar X")}

    @classmethod
    def apply(cls, A, B, vector, driver, rcond=None):
        record, node = node_for_inputs(cls, A, B)
        solution, residuals, rank, singular_values = cls.forward(node, A, B, vector, driver, rcond)
        outputs = outputs_of(node, record, (solution, residuals), A._backend)
        if record:
            from gradviz.autograd.node import SavedTensor

            node._packed["solution"] = SavedTensor(outputs[0], is_output=True)
        return LINALG_LSTSQ(outputs[0], outputs[1], _tensor(rank, A._backend), _tensor(singular_values, A._backend))

    def forward(ctx, A, B, vector, driver, rcond=None):
        backend = A._backend
        ctx.save(b=B, self=A)
        ctx.vector = vector
        ctx.metas = (meta(A), meta(B))
        a, b = A._data, B._data
        if vector:
            b = backend.reshape(b, tuple(b.shape) + (1,))
        m, n = A.shape[-2], A.shape[-1]
        dtype, device = _dtype.from_any(A.dtype), backend.device_of(a)
        empty = backend.full((0,), 0, dtype, device)
        if driver == "gels":  # QR (LQ for a wide A) and a triangular solve: no rank, a zero pivot raises
            solution, residuals = _gels(A, b)
            if vector:
                solution = backend.reshape(solution, tuple(solution.shape[:-1]))
            return solution, empty if residuals is None else residuals, backend.full((0,), 0, _dtype.int64, device), empty
        if driver == "gelsy":  # a QR with the columns in their order, its rank from the leading blocks
            solution, rank = _gelsy(A, b, rcond)
            if vector:
                solution = backend.reshape(solution, tuple(solution.shape[:-1]))
            return solution, empty, rank, empty
        # singular values at most rcond σ_max count as zero (rcond None: eps max(m, n), pinv's default)
        pinv = _pinv_array(A, None, rcond, False)
        solution = backend.matmul(pinv, b)
        U, S, Vh = backend.svd(a, False)
        largest = backend.amax(S, -1, True) if S.shape[-1] else S
        full_rank_count = backend.sum(backend.astype(backend.gt(S, _tolerance(backend, largest, None, rcond, A.shape,
                                                                                A.dtype)), _dtype.int64), -1, False)
        rank = full_rank_count
        singular_values = S if driver in ("gelsd", "gelss") else empty
        residuals = empty
        full_rank = bool(backend.to_numpy(backend.eq(full_rank_count, min(m, n))).all())
        if m > n and driver != "gelsy" and full_rank:
            difference = backend.sub(backend.matmul(a, solution), b)
            residuals = backend.sum(backend.mul(difference, difference), -2, False)  # a vector B keeps its column
        if vector:
            solution = backend.reshape(solution, tuple(solution.shape[:-1]))
        return solution, residuals, rank, singular_values

    def backward(ctx, grad_solution, grad_residuals=None):
        backend = ctx.backend
        needs = ctx.needs_input_grad
        grad_A, grad_B = _lstsq_backward(backend, grad_solution, grad_residuals, *ctx.saved("self", "b", "solution"),
                                         ctx.vector, needs)
        return (to_input(backend, grad_A, ctx.metas[0]) if needs[0] and grad_A is not None else None,
                to_input(backend, grad_B, ctx.metas[1]) if needs[1] and grad_B is not None else None)


def _gels(A, b):
    """LAPACK's ``gels`` as PyTorch calls it: ``A = Q R`` and ``X = R⁻¹ Qᵀ B`` for a tall or square ``A``
    (residuals: the squared rows ``n:`` of ``Qᵀ B``, as PyTorch reads them from LAPACK's output), ``A = L Qᵀ``
    and the minimum-norm ``X = Q L⁻¹ B`` for a wide one. It never looks at the rank: a triangular factor
    with an exact zero on its diagonal raises PyTorch's LinAlgError (``trtrs``'s ``info``, the first zero,
    counted from 1), and a merely tiny one gives the huge solution LAPACK gives (its digits are rounding)."""
    backend = A._backend
    m, n = A.shape[-2], A.shape[-1]
    batch = _solve_batch(A, b)
    a = backend.expand(A._data, batch + (m, n))
    b = backend.expand(b, batch + tuple(b.shape[-2:]))
    if b.dtype != a.dtype:
        b = backend.astype(b, A.dtype)
    tall = m >= n
    # an all-zero A: LAPACK returns a zero solution (and zero residuals) before factoring anything
    zero = np.asarray(backend.to_numpy(a) == 0).reshape((-1, m * n)).all(-1) if m * n else np.zeros(1, bool)
    if zero.any():
        mask = backend.array(zero.reshape(batch + (1, 1)), _dtype.bool, backend.device_of(a))
        a = backend.where(mask, backend.eye(m, n, _dtype.from_any(a.dtype), backend.device_of(a)), a)
    Q, R = backend.qr(a if tall else _mT(backend, a), tall and m > n)
    k = min(m, n)
    diagonal = np.diagonal(backend.to_numpy(R)[..., :k, :k], axis1=-2, axis2=-1).reshape(-1, k)
    for index, row in enumerate(diagonal):
        zeros = np.flatnonzero(row == 0)
        if zeros.size:
            prefix = f"(Batch element {index}): " if len(batch) else ""
            raise LinAlgError(f"torch.linalg.lstsq: {prefix}The least squares solution could not be computed because "
                              f"the input matrix does not have full rank (error code: {zeros[0] + 1}).")
    residuals = None
    if not tall:  # A = Rᵀ Qᵀ: solve the lower triangle Rᵀ, then Q Y
        solution = backend.matmul(Q, backend.solve_triangular(_mT(backend, R), b, False))
    else:
        projected = backend.matmul(_mT(backend, Q), b)  # Qᵀ B, all m rows when A is tall
        solution = backend.solve_triangular(R[..., :n, :], projected[..., :n, :], True)
        if m > n:
            rest = projected[..., n:, :]
            residuals = backend.sum(backend.mul(rest, rest), -2, False)
    if zero.any():
        solution = backend.where(mask, 0.0, solution)
        residuals = None if residuals is None else backend.where(backend.reshape(mask, batch + (1,)), 0.0, residuals)
    return solution, residuals


def _gelsy(A, b, rcond):
    """LAPACK's ``gelsy`` as PyTorch 2.13 calls it. PyTorch hands it a pivot array made with ``at::empty``
    (never set); its entries are non-zero in practice, which tells ``geqp3`` to keep every column in place,
    so the factorization is a plain ``A = Q R``. The rank is then ``gelsy``'s: grown one column at a time
    while the leading block's smallest singular value stays above ``rcond`` times its largest (LAPACK
    estimates both incrementally; a zero ``R₁₁`` gives rank 0), and the solution is the minimum-norm one of
    ``[R₁₁ R₁₂] X = (Qᵀ B)[:rank]`` (``tzrzf``'s complete orthogonal factorization). For a full-rank ``A``
    that is the least-squares solution; for a rank-deficient one it depends on the order of the columns (a
    zero first column gives rank 0), as PyTorch's does when its pivot array holds no zero."""
    backend = A._backend
    m, n = A.shape[-2], A.shape[-1]
    batch = _solve_batch(A, b)
    dtype, device = _dtype.from_any(A.dtype), backend.device_of(A._data)
    a = np.asarray(backend.to_numpy(backend.expand(A._data, batch + (m, n))))
    rhs = np.asarray(backend.to_numpy(backend.expand(b, batch + tuple(b.shape[-2:])))).astype(a.dtype)
    if rcond is None:
        rcond = _EPSILON[A.dtype.name] * max(m, n)
    flat_a, flat_b = a.reshape((-1, m, n)), rhs.reshape((-1,) + rhs.shape[-2:])
    solutions = np.zeros((flat_a.shape[0], n, rhs.shape[-1]), dtype=a.dtype)
    for index, (matrix, right) in enumerate(zip(flat_a, flat_b)):
        Q, R, rank = _gelsy_factor(matrix, rcond)
        if rank:
            solutions[index] = np.linalg.pinv(R[:rank]) @ (Q.T @ right)[:rank]
    solution = backend.array(solutions.reshape(batch + (n, rhs.shape[-1])), dtype, device)
    # the rank has A's own batch shape (PyTorch's, also where B's batch broadcasts it)
    own = np.asarray(backend.to_numpy(A._data))
    ranks = [_gelsy_factor(matrix, rcond)[2] for matrix in own.reshape((-1, m, n))]
    return solution, backend.array(np.array(ranks, dtype=np.int64).reshape(own.shape[:-2]), _dtype.int64, device)


def _gelsy_factor(matrix, rcond):
    """``A = Q R`` with the columns in place, and the rank ``gelsy`` reads from ``R``."""
    Q, R = np.linalg.qr(matrix)
    k = min(matrix.shape)
    rank = 0 if k == 0 or R[0, 0] == 0 else 1
    while 0 < rank < k:
        values = np.linalg.svd(R[:rank + 1, :rank + 1], compute_uv=False)
        if values[0] * rcond > values[-1]:
            break
        rank += 1
    return Q, R, rank


def _lstsq_backward(backend, grad_solution, grad_residuals, A, B, X, vector, needs):
    """PyTorch's ``linalg_lstsq_backward`` on arrays, and the residuals' part: ``(Ā, B̄)`` (None where not needed)."""
    if grad_residuals is not None and grad_residuals.shape[-1] == 0:
        grad_residuals = None  # empty residuals (gelsy, or a square or wide A) send nothing
    if grad_solution is None and grad_residuals is None:
        return None, None
    if vector:
        B, X = _column(backend, B), _column(backend, X)
        grad_solution = None if grad_solution is None else _column(backend, grad_solution)
    grad_A = grad_B = None
    if grad_solution is not None:
        pinv = _pinv_array(Tensor._make(A, backend=backend), None, None, False)
        if needs[0]:
            grad_A = _pinv_backward(backend, backend.matmul(grad_solution, _mT(backend, B)), pinv, A)
        if needs[1]:
            grad_B = backend.matmul(_mT(backend, pinv), grad_solution)
    if grad_residuals is not None:  # r_j = ‖A x_j - b_j‖² at the optimum: 2 R_j x_jᵀ for A, -2 R_j for B
        weighted = backend.mul(backend.sub(backend.matmul(A, X), B), backend.mul(_row(backend, grad_residuals), 2.0))
        if needs[0]:
            part = backend.matmul(weighted, _mT(backend, X))
            grad_A = part if grad_A is None else backend.add(grad_A, part)
        if needs[1]:
            grad_B = backend.neg(weighted) if grad_B is None else backend.sub(grad_B, weighted)
    if grad_B is not None and vector:
        grad_B = backend.reshape(grad_B, tuple(grad_B.shape[:-1]))
    return grad_A, grad_B


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of ``A X = B`` (with PyTorch's ``residuals``, ``rank`` and
    ``singular_values`` as each driver fills them). ``gelsd`` and ``gelss`` solve through the pseudo-inverse
    with singular values at most ``rcond σ_max`` taken as zero (the minimum-norm solution of the effective
    rank); ``gelsy`` and ``gels`` are the QR solves PyTorch gets from LAPACK (see ``_gelsy`` and ``_gels``)."""
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {_dtype.SCALAR_TYPE_NAMES[A.dtype.name]} and other's dtype "
                           f"{_dtype.SCALAR_TYPE_NAMES[B.dtype.name]}")
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.ndim == A.ndim - 1
    if (B.shape[-1] if vector else B.shape[-2]) != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    _check_float("torch.linalg.lstsq", A)
    return LinalgLstsqBackward0.apply(A, B, vector, driver, rcond)


# -- the matrix exponential --------------------------------------------------------------------------------
# Padé's [13/13] approximant with scaling and squaring (Higham, 2005): exp(A) = (exp(A / 2^s))^(2^s), with
# s chosen so that ‖A / 2^s‖₁ ≤ 5.37; PyTorch uses a Taylor polynomial of its own: the same values to
# rounding. The derivative, from the exponential of the block matrix [[Aᵀ, Ȳ], [0, Aᵀ]]: its top-right block.
_PADE_13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
            10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)


def _matrix_exp_array(backend, a):
    import math

    n = a.shape[-1]
    dtype, device = _dtype.from_any(a.dtype), backend.device_of(a)
    eye = backend.broadcast_to(backend.eye(n, n, dtype, device), tuple(a.shape))
    norm = float(backend.to_numpy(backend.amax(backend.sum(backend.abs(a), -2, False), -1, False)).max()) if a.size else 0.0
    squarings = max(0, math.ceil(math.log2(norm / 5.371920351148152))) if norm > 5.371920351148152 else 0
    a = backend.mul(a, 2.0 ** -squarings)
    b = _PADE_13
    a2 = backend.matmul(a, a)
    a4 = backend.matmul(a2, a2)
    a6 = backend.matmul(a4, a2)

    def combination(c6, c4, c2, c0):
        return backend.add(backend.add(backend.add(backend.mul(a6, c6), backend.mul(a4, c4)), backend.mul(a2, c2)),
                           backend.mul(eye, c0))

    u = backend.matmul(a, backend.add(backend.matmul(a6, backend.add(backend.add(
        backend.mul(a6, b[13]), backend.mul(a4, b[11])), backend.mul(a2, b[9]))), combination(b[7], b[5], b[3], b[1])))
    v = backend.add(backend.matmul(a6, backend.add(backend.add(backend.mul(a6, b[12]), backend.mul(a4, b[10])),
                                                   backend.mul(a2, b[8]))), combination(b[6], b[4], b[2], b[0]))
    result = backend.solve(backend.sub(v, u), backend.add(v, u))
    for _ in range(squarings):
        result = backend.matmul(result, result)
    return result


class LinalgMatrixExpBackward0(OpFunction):
    """``linalg.matrix_exp``: ``Ā`` is the top-right block of ``exp([[Aᵀ, Ȳ], [0, Aᵀ]])``."""

    inputs = ("self",)
    derivatives = {"self": ("linalg_matrix_exp_differential(self, grad, /*adjoint*/ true)",
                            r"\left[\exp\begin{pmatrix}A^{\top} & \bar Y\\ 0 & A^{\top}\end{pmatrix}\right]_{12}")}

    def forward(ctx, self):
        ctx.save(self=self)
        return _matrix_exp_array(self._backend, self._data)

    def backward(ctx, grad):
        return _matrix_exp_backward(ctx.backend, ctx.saved("self"), grad)


def _matrix_exp_backward(backend, A, grad):
    n = A.shape[-1]
    A_t = _mT(backend, A)
    grad = backend.astype(grad, _dtype.from_any(A.dtype)) if grad.dtype != A.dtype else grad
    zeros = backend.full(tuple(A.shape), 0, _dtype.from_any(A.dtype), backend.device_of(A))
    top = backend.concatenate((A_t, backend.broadcast_to(grad, tuple(A.shape))), -1)
    bottom = backend.concatenate((zeros, A_t), -1)
    block = _matrix_exp_array(backend, backend.concatenate((top, bottom), -2))
    return backend.getitem(block, (Ellipsis, slice(0, n), slice(n, None)))


def matrix_exp(A):
    """``exp(A) = Σ Aᵏ / k!`` of a square matrix (or batch)."""
    _check_square("linalg.matrix_exp", A)
    _check_float("linalg.matrix_exp", A)
    return LinalgMatrixExpBackward0.apply(A)


# -- recorded backward forms (create_graph=True) of the SVD family -------------------------------------------
# PyTorch writes svd_backward, linalg_eig_backward, linalg_qr_backward, pinv_backward, linalg_lstsq_backward and
# linalg_matrix_exp_differential with ATen ops, so their gradients have a graph and can be differentiated again.
# These are the same formulas as the array forms above, written with Tensor ops (values to rounding).
def _constant(backend, array):
    return Tensor._make(array, backend=backend)


def _ones_on_diagonal(backend, E):
    """``E`` with its diagonal filled with ones in place, as PyTorch does (``E.diagonal().fill_(1)``: a
    CopySlices; those entries are never read)."""
    E.diagonal(0, -2, -1).fill_(1.0)
    return E


def _outputs_graph(ctx, *names):
    """The saved outputs ``names`` joined to the graph as the outputs they are (each its own ``output_nr``)."""
    values = ctx.saved_graph(*names)
    values = values if len(names) > 1 else (values,)
    for name, value in zip(names, values):
        if value.grad_fn is ctx:
            value._output_nr = type(ctx).saved_outputs[name]
    return values


def _svd_backward_graph(ctx, gU, gS, gVh, U, S, Vh):
    """``svd_backward`` with Tensor ops; with ``full_matrices`` the node narrows ``U``, ``Vh`` and their
    gradients to ``k = min(m, n)`` first (recorded even where that keeps everything), as PyTorch's does."""
    from gradviz.ops.linalg import matmul
    from gradviz.ops.shape import narrow

    if gU is None and gS is None and gVh is None:
        return None
    k = S.shape[-1]
    if ctx.saved("full_matrices"):
        gU = None if gU is None else narrow(gU, -1, 0, k)
        gVh = None if gVh is None else narrow(gVh, -2, 0, k)
        U, Vh = narrow(U, -1, 0, k), narrow(Vh, -2, 0, k)
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:  # svdvals: U diag(gS) Vh
        return matmul(U, gS.unsqueeze(-1) * Vh) if m >= n else matmul(U * gS.unsqueeze(-2), Vh)
    S2 = S * S
    column = S2.unsqueeze(-1)  # C++ evaluates the right operand of `-` first: its node is recorded first
    E = _ones_on_diagonal(ctx.backend, S2.unsqueeze(-2) - column)
    UhgU = None if gU is None else matmul(U.mT, gU)
    VhgV = None if gVh is None else matmul(Vh, gVh.mT)
    UhgU = None if UhgU is None else UhgU - UhgU.mT
    VhgV = None if VhgV is None else VhgV - VhgV.mT
    if UhgU is not None and VhgV is not None:
        gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    elif UhgU is not None:
        gA = (UhgU / E) * S.unsqueeze(-2)
    else:
        gA = S.unsqueeze(-1) * (VhgV / E)
    if gS is not None:
        gA = gA + _diag_embed(gS)
    if m > k and gU is not None:
        gA = matmul(U, gA)
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - matmul(U, matmul(U.mT, gUSinv))
        return matmul(gA, Vh)
    if n > k and gVh is not None:
        gA = matmul(gA, Vh)
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - matmul(matmul(SinvgVh, Vh.mT), Vh)
        return matmul(U, gA)
    return matmul(U, matmul(gA, Vh)) if m >= n else matmul(matmul(U, gA), Vh)


def _svd_backward_graph_node(ctx, grad_U, grad_S, grad_Vh):
    return _svd_backward_graph(ctx, grad_U, grad_S, grad_Vh, *_outputs_graph(ctx, "U", "S", "Vh"))


LinalgSvdBackward0.backward_graph = _svd_backward_graph_node


def _eigh_backward_graph(ctx, gL, gV):
    """``linalg_eig_backward`` for a symmetric matrix, op for op: ``½ skew(Vᵀ V̄)`` divided in place by
    ``E``, ``L̄`` copied onto its diagonal (CopySlices), then ``V (·) Vᵀ``."""
    from gradviz.ops.arithmetic import MulBackward1
    from gradviz.ops.linalg import matmul

    if gL is None and gV is None:
        return None
    L, V = _outputs_graph(ctx, "eigenvalues", "eigenvectors")
    if gV is None:
        return matmul(V * gL.unsqueeze(-2), V.mT)
    VhgV = matmul(V.mT, gV)
    VhgV = MulBackward1.apply(VhgV - VhgV.mT, 0.5)
    column = L.unsqueeze(-1)  # the right operand of `-` first, as C++ evaluates it
    E = _ones_on_diagonal(ctx.backend, L.unsqueeze(-2) - column)
    gA = VhgV.div_(E)
    if gL is not None:
        gA.diagonal(0, -2, -1).copy_(gL)
    return matmul(V, matmul(gA, V.mT))


LinalgEighBackward0.backward_graph = _eigh_backward_graph


def _qr_backward_graph(ctx, grad_Q, grad_R):
    """``linalg_qr_backward`` with Tensor ops (mode='r' and a tall mode='complete' raise PyTorch's errors)."""
    from gradviz.ops.combine import cat
    from gradviz.ops.linalg import matmul
    from gradviz.ops.shape import narrow

    mode = ctx.saved("mode")
    Q, R = _outputs_graph(ctx, "Q", "R")
    if mode == "r" or (mode == "complete" and Q.shape[-2] > R.shape[-1]):
        return ctx.backward(None if grad_Q is None else grad_Q._data, None if grad_R is None else grad_R._data)
    if grad_Q is None and grad_R is None:
        return None
    m, n = Q.shape[-2], R.shape[-1]
    gA = _qr_gA(grad_Q, grad_R, Q, R)
    if m >= n:
        return _qr_square_backward_graph(gA, grad_Q, Q, R)
    # wide, as PyTorch: Q trilImInvAdjSkew(-gA) solved against R's square block, then [· | 0] + Q R̄
    negated = -gA
    gA = matmul(Q, (negated - negated.mT).tril())
    gA = solve_triangular(narrow(R, -1, 0, m).mT, gA, upper=False, left=False)
    backend = ctx.backend
    zeros = _constant(backend, backend.full(tuple(gA.shape[:-1]) + (n - m,), 0, _dtype.from_any(gA.dtype),
                                            backend.device_of(gA._data)))
    gA = cat((gA, zeros), -1)
    return gA + matmul(Q, grad_R) if grad_R is not None else gA


def _qr_gA(gQ, gR, Q, R):
    """``gA = gR Rᵀ - Qᵀ gQ``, either part absent when its gradient is (PyTorch's ``linalg_qr_backward``)."""
    from gradviz.ops.linalg import matmul

    if gQ is None:
        return matmul(gR, R.mT)
    if gR is None:
        return -matmul(Q.mT, gQ)
    return matmul(gR, R.mT) - matmul(Q.mT, gQ)


def _qr_square_backward_graph(gA, gQ, Q, R):
    """``m >= n``, op for op as PyTorch: ``Q syminvadj(triu(gA)) (+ gQ)``, then a triangular solve from the
    right by ``Rᵀ``."""
    from gradviz.ops.linalg import matmul

    sym = gA.triu()
    sym = sym + sym.mT
    sym.diagonal(0, -2, -1).mul_(0.5)
    gA = matmul(Q, sym)
    if gQ is not None:
        gA = gA + gQ
    return solve_triangular(R.mT, gA, upper=False, left=False)


LinalgQrBackward0.backward_graph = _qr_backward_graph


def _pinv_backward_graph_formula(grad, pinvA, A):
    """PyTorch's ``pinv_backward`` with Tensor ops."""
    from gradviz.ops.linalg import matmul as mm

    m, n = A.shape[-2], A.shape[-1]
    pinvAh, gradh = pinvA.mT, grad.mT
    if m <= n:
        K = mm(gradh, pinvA)
        KpinvAh = mm(K, pinvAh)
        return (-(mm(pinvA, K)).mT + KpinvAh - mm(mm(A, pinvA), KpinvAh)
                + mm(mm(pinvAh, pinvA), gradh - mm(K, A)))
    K = mm(pinvA, gradh)
    pinvAhK = mm(pinvAh, K)
    return (-(mm(K, pinvA)).mT + mm(mm(gradh - mm(A, K), pinvA), pinvAh) + pinvAhK
            - mm(mm(pinvAhK, pinvA), A))


def _pinv_backward_graph(ctx, grad):
    pinvA, A = ctx.saved_graph("result", "self")
    return _pinv_backward_graph_formula(grad, pinvA, A)


LinalgPinvBackward0.backward_graph = _pinv_backward_graph


def _lstsq_backward_graph(ctx, grad_solution, grad_residuals=None):
    from gradviz.ops.linalg import matmul

    A, B, X = ctx.saved_graph("self", "b", "solution")
    needs = ctx.needs_input_grad
    if grad_residuals is not None and grad_residuals.shape[-1] == 0:
        grad_residuals = None
    if grad_solution is None and grad_residuals is None:
        return None, None
    if ctx.vector:
        B, X = B.unsqueeze(-1), X.unsqueeze(-1)
        grad_solution = None if grad_solution is None else grad_solution.unsqueeze(-1)
    grad_A = grad_B = None
    if grad_solution is not None:
        pinvA = pinv(A)
        if needs[0]:
            grad_A = _pinv_backward_graph_formula(matmul(grad_solution, B.mT), pinvA, A)
        if needs[1]:
            grad_B = matmul(pinvA.mT, grad_solution)
    if grad_residuals is not None:  # as PyTorch: 2 (r̄ (A X - B)) Xᵀ for A, (-2 r̄) (A X - B) for B
        from gradviz.ops.arithmetic import MulBackward1

        column = grad_residuals.unsqueeze(-2)
        if needs[0]:
            part = MulBackward1.apply(matmul(column * (matmul(A, X) - B), X.mT), 2.0)
            grad_A = part if grad_A is None else grad_A + part
        if needs[1]:
            part = MulBackward1.apply(column, -2.0) * (matmul(A, X) - B)
            grad_B = part if grad_B is None else grad_B + part
    if grad_B is not None and ctx.vector:
        grad_B = grad_B.squeeze(-1)
    return grad_A if needs[0] else None, grad_B if needs[1] else None


LinalgLstsqBackward0.backward_graph = _lstsq_backward_graph


def _matrix_exp_backward_graph(ctx, grad):
    """``linalg_matrix_exp_differential(A, grad, adjoint=true)``: ``matrix_exp([[Aᵀ, Ȳ], [0, Aᵀ]])``'s top-right
    block, recorded (cat, matrix_exp, narrow), so it can be differentiated again."""
    from gradviz.ops.shape import narrow

    A = ctx.saved_graph("self")
    n = A.shape[-1]
    size = tuple(A.shape[:-2]) + (2 * n, 2 * n)
    block = _constant(ctx.backend, ctx.backend.full(size, 0, _dtype.from_any(A.dtype), ctx.backend.device_of(A._data)))
    A_t = A.mT
    narrow(narrow(block, -2, 0, n), -1, 0, n).copy_(A_t)
    narrow(narrow(block, -2, n, n), -1, n, n).copy_(A_t)
    narrow(narrow(block, -2, 0, n), -1, n, n).copy_(grad)
    return narrow(narrow(matrix_exp(block), -2, 0, n), -1, n, n)


LinalgMatrixExpBackward0.backward_graph = _matrix_exp_backward_graph


# -- matrix norms (``linalg.matrix_norm``; ``Tensor.norm('nuc')`` and ``linalg.norm`` call it too) --------------
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):
    """``'fro'`` (a vector 2-norm over both dims), 1 / -1 (the largest / smallest column sum of ``|A|``),
    inf / -inf (the same over rows), as PyTorch writes them: a vector norm, then ``amax``/``amin``."""
    import math

    from gradviz.ops.reduction import LinalgVectorNormBackward0
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
