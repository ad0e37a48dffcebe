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

from gradviz import _dtype
from gradviz.autograd.function import _NO_RECORD, OpFunction, gradient_edge
from gradviz.grad_mode import _state as _grad_state
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
        return A._backend.inv(A._data)

    def backward(ctx, grad):
        backend = ctx.backend
        inverse_t = _mT(backend, ctx.saved("inverse"))
        return backend.neg(backend.matmul(inverse_t, backend.matmul(grad, inverse_t)))

    def backward_graph(ctx, grad):
        inverse_t = ctx.saved_graph("inverse").mT
        return -(inverse_t.matmul(grad.matmul(inverse_t)))


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
        too). A singular matrix (PyTorch switches to an SVD formula there) is not recorded."""
        A, det = ctx.saved_graph("A", "result")
        if _any_singular(ctx):
            return OpFunction.backward_graph(ctx, grad)
        diagonal = (grad * det).unsqueeze(-1).expand(tuple(A.shape[:-1]))
        return solve(A.mT, _diag_embed(diagonal).mT)


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
        record = _grad_state.enabled and A.requires_grad
        node = cls() if record else _NO_RECORD
        if record:
            node.backend = A._backend
            edge = gradient_edge(A)
            node._next_functions = (edge,)
            node.needs_input_grad = (edge[0] is not None,)
            if _grad_state.backward_order:
                node._order = _grad_state.backward_order
        sign, logabsdet = cls.forward(node, A)
        outputs = []
        for output_nr, array in enumerate((sign, logabsdet)):
            out = Tensor._make(array, record, node if record else None, A._backend)
            out._output_nr = output_nr
            outputs.append(out)
        if record:
            node._num_outputs = 2
            from gradviz.autograd.node import SavedTensor

            node._packed["sign"] = SavedTensor(outputs[0], is_output=True)
            node.output_shape = tuple(sign.shape)
        return tuple(outputs)

    def forward(ctx, A):
        backend = A._backend
        lu, pivots = _lu(A, "linalg.slogdet", None, row_major_transposed=True)
        ctx.save(A=A, LU=_tensor(lu, backend), pivots=_tensor(pivots, backend))
        sign = backend.sign(_det_from_lu(backend, lu, pivots))
        logabsdet = backend.sum(backend.log(backend.abs(backend.diagonal(lu, 0, -2, -1))), -1, False)
        return sign, logabsdet

    def backward(ctx, grad_sign, grad_logabsdet):
        backend = ctx.backend
        A = ctx.saved("A")
        if grad_logabsdet is None:
            return backend.full(tuple(A.shape), 0, _dtype.from_any(A.dtype), backend.device_of(A))
        inverse_t = _mT(backend, backend.inv(A))
        return backend.mul(backend.reshape(grad_logabsdet, tuple(grad_logabsdet.shape) + (1, 1)), inverse_t)

    def backward_graph(ctx, grad_sign, grad_logabsdet):
        """Recorded as PyTorch records it: ``solve(Aᵀ, diag_embed(ḡ, expanded as the pivots)ᵀ)`` (a batch too)."""
        A = ctx.saved_graph("A")
        if grad_logabsdet is None or _any_singular(ctx):
            return OpFunction.backward_graph(ctx, grad_logabsdet)
        return solve(A.mT, _diag_embed(grad_logabsdet.unsqueeze(-1).expand(tuple(A.shape[:-1]))).mT)


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

    def forward(ctx, A, B, vector):
        backend = A._backend
        lu, pivots = _lu(A, "torch.linalg.solve", lambda info: "The solver failed because the input matrix is singular.")
        ctx.save(A=A, LU=_tensor(lu, backend), left=True, pivots=_tensor(pivots, backend))
        ctx.save_result()
        ctx.vector = vector
        ctx.metas = (meta(A), meta(B))
        b = backend.reshape(B._data, tuple(B.shape) + (1,)) if vector else B._data
        if b.dtype != A._data.dtype:
            b = backend.astype(b, A.dtype)
        out = backend.solve(backend.expand(A._data, _solve_batch(A, b) + tuple(A.shape[-2:])),
                            backend.expand(b, _solve_batch(A, b) + tuple(b.shape[-2:])))
        return backend.reshape(out, tuple(out.shape[:-1])) if vector else out

    def backward(ctx, grad):
        backend = ctx.backend
        A, X = ctx.saved("A", "result")
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
        """Recorded as PyTorch records it (for one matrix or matching batches): ``B̄ = solve(Aᵀ, X̄)``
        first, then ``Ā = -B̄ Xᵀ``; a vector ``B`` is a column on the way (unsqueeze, squeeze)."""
        from gradviz.ops.linalg import matmul

        A, X = ctx.saved_graph("A", "result")
        if ctx.metas[0][0][:-2] != tuple(grad.shape[:-1 if ctx.vector else -2]):
            return OpFunction.backward_graph(ctx, grad)
        if ctx.vector:
            grad = grad.unsqueeze(-1)
        grad_B = solve(A.mT, grad)
        needs = ctx.needs_input_grad
        grad_A = None
        if needs[0]:
            grad_A = -matmul(grad_B, (X.unsqueeze(-1) if ctx.vector else X).mT)
        if ctx.vector:
            grad_B = grad_B.squeeze(-1)
        return grad_A, grad_B if needs[1] else None


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
    """``X`` with ``A @ X = B``; a ``B`` with one dim fewer than ``A`` (and matching batch) is a vector."""
    _check_square("linalg.solve", A)
    _check_float("linalg.solve", A)
    if not left:
        raise NotImplementedError("gradviz's linalg.solve solves A X = B only (left=True); transpose both sides "
                                  "for X A = B")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rows = B.shape[-1] if vector else B.shape[-2]
    if rows != A.shape[-1]:
        columns = 1 if vector else B.shape[-1]
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {rows}x{columns})")
    return LinalgSolveExBackward0.apply(A, B, vector)
