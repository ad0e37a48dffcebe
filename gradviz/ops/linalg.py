"""Matrix products, recorded with the nodes PyTorch's ``matmul`` decomposes into.

``matmul`` picks by the operands' dimensions, exactly as PyTorch does: 1-D @ 1-D is ``dot``,
2-D @ 1-D is ``mv``, 2-D @ 2-D is ``mm``, and 1-D @ 2-D is ``unsqueeze(0)``, ``mm``, then
``squeeze(0)`` (so the graph shows SqueezeBackward4 over MmBackward0). A batch on the left
folds into the rows of one ``mm``/``mv`` (ViewBackward0 in, UnsafeViewBackward0 out); a batch
only on the right is the transposed problem; batches on both sides are expanded to a common
batch and multiplied with ``bmm``. ``addmm`` is what ``F.linear`` records for a bias.
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.autograd.node import expose_saved, saved_input
from gradviz.backends import numpy_backend
from gradviz.grad_mode import inference_tensors as _inference_tensors
from gradviz.ops import shape as shape_ops
from gradviz.ops._util import meta, sum_to, to_input
from gradviz.tensor import Tensor


def _transpose(backend, array):
    return backend.permute(array, tuple(range(array.ndim - 2)) + (array.ndim - 1, array.ndim - 2))


def _column_major(sizes, strides) -> bool:
    """Whether a saved matrix was laid out column by column (PyTorch then computes its gradient transposed)."""
    return len(strides) == 2 and strides[0] == 1 and strides[1] == sizes[0]


def _mat1_grad_graph(grad, mat2, sizes, strides):
    """PyTorch's ``mm_mat1_backward``, recorded: ``grad @ mat2.t()`` (transposed for a column-major input)."""
    if _column_major(sizes, strides):
        return mat2.mm(grad.t()).t()
    return grad.mm(mat2.t())


def _mat2_grad_graph(grad, mat1, sizes, strides):
    """PyTorch's ``mm_mat2_backward``, recorded: ``mat1.t() @ grad`` (transposed for a column-major input)."""
    if _column_major(sizes, strides):
        return grad.t().mm(mat1).t()
    return mat1.t().mm(grad)


def mixed_dtypes(kind: str, first, second, bias=None) -> RuntimeError:
    """PyTorch's error for a product of tensors of two dtypes (it promotes nothing here): each kernel words it
    its own way. ``kind``: "mm" (a matrix product, also what matmul folds to), "mv", "dot", "bmm" (batched
    products, and what matmul broadcasts), "addmm" (``bias`` is its added tensor: checked against mat2 first)."""
    scalar, cpp = _dtype.SCALAR_TYPE_NAMES, _dtype.CPP_NAMES
    a, b = first.dtype.name, second.dtype.name
    if kind == "mm":
        return RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {cpp[a]} != {cpp[b]}")
    if kind == "mv":
        return RuntimeError(f"addmv input tensors must have the same dtype, but got {scalar[b]}, {scalar[a]}, and "
                            f"{scalar[b]}")
    if kind == "dot":
        return RuntimeError(f"dot : expected both vectors to have same dtype, but found {scalar[a]} and {scalar[b]}")
    if kind == "addmm":
        if bias is not None and bias.dtype is not second.dtype:
            return RuntimeError(f"self and mat2 must have the same dtype, but got {scalar[bias.dtype.name]} and "
                                f"{scalar[b]}")
        return RuntimeError(f"mat1 and mat2 must have the same dtype, but got {scalar[a]} and {scalar[b]}")
    return RuntimeError(f"expected scalar type {scalar[a]} but found {scalar[b]}")


class MmBackward0(OpFunction):
    inputs = ("self", "mat2")
    derivatives = {"self": ("grad.mm(mat2.t())", r"\bar{Y} B^{\top}"),
                   "mat2": ("self.t().mm(grad)", r"A^{\top} \bar{Y}")}

    def forward(ctx, self, mat2):
        a, b = self._data, mat2._data
        # each array attribute read once (``shape``, ``dtype`` are getset descriptors: a fresh tuple, a call each)
        a_shape, b_shape = a.shape, b.shape
        if a_shape[1] != b_shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({self.shape[0]}x{self.shape[1]} "
                               f"and {mat2.shape[0]}x{mat2.shape[1]})")
        a_dtype, b_dtype = a.dtype, b.dtype
        needs = ctx.needs_input_grad
        if needs:  # recording (the no-op ctx's tuple is empty); a node's is (self's, mat2's)
            needs_self, needs_mat2 = needs
            if _inference_tensors:  # ctx.save checks that no inference tensor is saved
                ctx.save(mat2=mat2 if needs_self else None, self=self if needs_mat2 else None,
                         mat2_sym_sizes=tuple(b_shape), mat2_sym_strides=mat2._backend.strides(b) if needs_mat2 else (),
                         self_sym_sizes=tuple(a_shape), self_sym_strides=self._backend.strides(a) if needs_self else ())
            else:  # ctx.save(...) above, written out: the same entries in the same order (sizes_and_strides inlined)
                ctx._packed = {"mat2": saved_input(mat2) if needs_self else None,
                               "self": saved_input(self) if needs_mat2 else None,
                               "mat2_sym_sizes": tuple(b_shape),
                               "mat2_sym_strides": mat2._backend.strides(b) if needs_mat2 else (),
                               "self_sym_sizes": tuple(a_shape),
                               "self_sym_strides": self._backend.strides(a) if needs_self else ()}
            ctx.metas = ((a_shape, a_dtype), (b_shape, b_dtype))  # meta() of each, both being tensors
        if a_dtype is not b_dtype and a_dtype != b_dtype:
            raise mixed_dtypes("mm", self, mat2)
        backend = self._backend
        return numpy_backend.mm(a, b) if backend is numpy_backend else backend.matmul(a, b)

    def backward(ctx, grad):
        backend = ctx.backend
        needs_self, needs_mat2 = ctx.needs_input_grad
        if backend is numpy_backend:  # the two products below in one backend call (one silencing, no permute calls)
            grad_self, grad_mat2 = numpy_backend.mm_grads(grad, ctx.saved("mat2") if needs_self else None,
                                                          ctx.saved("self") if needs_mat2 else None)
            # each product already has its input's shape; one of another dtype (a gradient the engine was given
            # in another dtype) is cast back (to_input)
            (_, self_dtype), (_, mat2_dtype) = ctx.metas
            if grad_self is not None and grad_self.dtype is not self_dtype:
                grad_self = to_input(backend, grad_self, ctx.metas[0])
            if grad_mat2 is not None and grad_mat2.dtype is not mat2_dtype:
                grad_mat2 = to_input(backend, grad_mat2, ctx.metas[1])
            return grad_self, grad_mat2
        grad_self = grad_mat2 = None
        if needs_self:
            grad_self = to_input(backend, backend.matmul(grad, _transpose(backend, ctx.saved("mat2"))), ctx.metas[0])
        if needs_mat2:
            grad_mat2 = to_input(backend, backend.matmul(_transpose(backend, ctx.saved("self")), grad), ctx.metas[1])
        return grad_self, grad_mat2

    def backward_graph(ctx, grad):
        needs = ctx.needs_input_grad
        grad_self = grad_mat2 = None
        if needs[1]:  # PyTorch's generated code records mat2's gradient first
            grad_mat2 = _mat2_grad_graph(grad, ctx.saved_graph("self"), *ctx.saved("mat2_sym_sizes", "mat2_sym_strides"))
        if needs[0]:
            grad_self = _mat1_grad_graph(grad, ctx.saved_graph("mat2"), *ctx.saved("self_sym_sizes", "self_sym_strides"))
        return grad_self, grad_mat2


for _name in ("mat2_sym_sizes", "mat2_sym_strides", "self_sym_sizes", "self_sym_strides", "alpha", "beta", "mat1",
              "mat1_sym_sizes", "mat1_sym_strides"):
    expose_saved(_name)  # MmBackward0 and AddmmBackward0 write these straight into _packed: their _saved_<name> properties

class AddmmBackward0(OpFunction):
    """``beta * self + alpha * (mat1 @ mat2)``: one node for a linear layer with a bias."""

    inputs = ("self", "mat1", "mat2")
    derivatives = {"self": ("maybe_multiply(grad, beta.conj())", r"\beta\,\bar{Y}"),
                   "mat1": ("grad.mm(mat2.t()) * alpha", r"\alpha\,\bar{Y} B^{\top}"),
                   "mat2": ("mat1.t().mm(grad) * alpha", r"\alpha\,A^{\top} \bar{Y}")}

    def forward(ctx, self, mat1, mat2, beta=1, alpha=1):
        a, b = mat1._data, mat2._data
        if a.shape[1] != b.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x{mat1.shape[1]} "
                               f"and {mat2.shape[0]}x{mat2.shape[1]})")
        if a.dtype != b.dtype or (isinstance(self, Tensor) and self._data.dtype != b.dtype):
            raise mixed_dtypes("addmm", mat1, mat2, self)
        needs = ctx.needs_input_grad
        if needs:  # recording (the no-op ctx's tuple is empty); a node's is (self's, mat1's, mat2's)
            needs_mat1, needs_mat2 = needs[1], needs[2]
            if _inference_tensors:  # ctx.save checks that no inference tensor is saved
                ctx.save(alpha=alpha, beta=beta, mat1=mat1 if needs_mat2 else None,
                         mat1_sym_sizes=tuple(a.shape), mat1_sym_strides=mat1._backend.strides(a) if needs_mat1 else (),
                         mat2=mat2 if needs_mat1 else None, mat2_sym_sizes=tuple(b.shape),
                         mat2_sym_strides=mat2._backend.strides(b) if needs_mat2 else ())
            else:  # ctx.save(...) above, written out: the same entries in the same order (sizes_and_strides inlined)
                ctx._packed = {"alpha": alpha, "beta": beta, "mat1": saved_input(mat1) if needs_mat2 else None,
                               "mat1_sym_sizes": tuple(a.shape),
                               "mat1_sym_strides": mat1._backend.strides(a) if needs_mat1 else (),
                               "mat2": saved_input(mat2) if needs_mat1 else None,
                               "mat2_sym_sizes": tuple(b.shape),
                               "mat2_sym_strides": mat2._backend.strides(b) if needs_mat2 else ()}
            ctx.metas = (meta(self), (a.shape, a.dtype), (b.shape, b.dtype))  # meta() of each
        backend = mat1._backend
        # one dtype: mixed ones raised above
        product = numpy_backend.mm(a, b) if backend is numpy_backend else backend.matmul(a, b)
        bias = self._data
        return backend.add(product if alpha == 1 else backend.mul(product, alpha),
                           bias if beta == 1 else backend.mul(bias, beta))

    def backward(ctx, grad):
        backend = ctx.backend
        needs = ctx.needs_input_grad
        alpha, beta = ctx.saved("alpha", "beta")
        scaled = grad if alpha == 1 else backend.mul(grad, alpha)  # alpha and beta scale the gradients too
        return (to_input(backend, grad if beta == 1 else backend.mul(grad, beta), ctx.metas[0]) if needs[0] else None,
                to_input(backend, backend.matmul(scaled, _transpose(backend, ctx.saved("mat2"))), ctx.metas[1])
                if needs[1] else None,
                to_input(backend, backend.matmul(_transpose(backend, ctx.saved("mat1")), scaled), ctx.metas[2])
                if needs[2] else None)

    def backward_graph(ctx, grad):
        from gradviz.ops._util import sum_to_tensor

        needs = ctx.needs_input_grad
        if ctx.saved("alpha") != 1 or ctx.saved("beta") != 1:
            return OpFunction.backward_graph(ctx, grad)
        grad_mat1 = grad_mat2 = None
        if needs[1]:
            grad_mat1 = _mat1_grad_graph(grad, ctx.saved_graph("mat2"), *ctx.saved("mat1_sym_sizes", "mat1_sym_strides"))
        if needs[2]:
            grad_mat2 = _mat2_grad_graph(grad, ctx.saved_graph("mat1"), *ctx.saved("mat2_sym_sizes", "mat2_sym_strides"))
        return sum_to_tensor(grad, ctx.metas[0][0]) if needs[0] else None, grad_mat1, grad_mat2


class BmmBackward0(OpFunction):
    """A batch of matrix products, one per leading index."""

    inputs = ("self", "mat2")
    derivatives = {"self": ("grad.bmm(mat2.transpose(1, 2).conj())", r"\bar{Y} B^{\top}"),
                   "mat2": ("self.transpose(1, 2).conj().bmm(grad)", r"A^{\top} \bar{Y}")}

    def forward(ctx, self, mat2):
        if self._data.dtype != mat2._data.dtype:
            raise mixed_dtypes("bmm", self, mat2)
        ctx.save(mat2=mat2 if ctx.needs_input_grad[:1] == (True,) else None,
                 self=self if ctx.needs_input_grad[1:] == (True,) else None)
        return self._backend.matmul(self._data, mat2._data)  # one dtype: mixed ones raised above

    def backward(ctx, grad):
        backend = ctx.backend
        return (backend.matmul(grad, _transpose(backend, ctx.saved("mat2"))) if ctx.needs_input_grad[0] else None,
                backend.matmul(_transpose(backend, ctx.saved("self")), grad) if ctx.needs_input_grad[1] else None)

    def backward_graph(ctx, grad):
        """Recorded as PyTorch records it: ``mat2``'s gradient first, then ``self``'s."""
        needs = ctx.needs_input_grad
        grad_mat2 = ctx.saved_graph("self").transpose(1, 2).bmm(grad) if needs[1] else None
        return grad.bmm(ctx.saved_graph("mat2").transpose(1, 2)) if needs[0] else None, grad_mat2


class MvBackward0(OpFunction):
    inputs = ("self", "vec")
    derivatives = {"self": ("grad.ger(vec.conj())", r"\bar{y}\, v^{\top}"),
                   "vec": ("self.conj().t().mv(grad)", r"A^{\top} \bar{y}")}

    def forward(ctx, self, vec):
        if self.shape[1] != vec.shape[0]:
            raise RuntimeError(f"size mismatch, got input ({self.shape[0]}), mat ({self.shape[0]}x{self.shape[1]}), "
                               f"vec ({vec.shape[0]})")
        if self._data.dtype != vec._data.dtype:
            raise mixed_dtypes("mv", self, vec)
        ctx.save(self=self if ctx.needs_input_grad[1:] == (True,) else None,
                 vec=vec if ctx.needs_input_grad[:1] == (True,) else None)
        ctx.metas = (meta(self), meta(vec))
        return self._backend.matmul(self._data, vec._data)  # one dtype: mixed ones raised above

    def backward(ctx, grad):
        backend = ctx.backend
        grad_self = grad_vec = None
        if ctx.needs_input_grad[0]:
            vec = ctx.saved("vec")
            grad_self = to_input(backend, backend.mul(backend.reshape(grad, (-1, 1)), backend.reshape(vec, (1, -1))),
                                 ctx.metas[0])
        if ctx.needs_input_grad[1]:
            grad_vec = to_input(backend, backend.matmul(_transpose(backend, ctx.saved("self")), grad), ctx.metas[1])
        return grad_self, grad_vec

    def backward_graph(ctx, grad):
        needs = ctx.needs_input_grad
        grad_self = grad.reshape(-1, 1) * ctx.saved_graph("vec") if needs[0] else None  # grad.ger(vec)
        grad_vec = ctx.saved_graph("self").t().mv(grad) if needs[1] else None
        return grad_self, grad_vec


class DotBackward0(OpFunction):
    inputs = ("self", "tensor")
    derivatives = {"self": ("grad * tensor.conj()", r"\bar{y}\, b"), "tensor": ("grad * self.conj()", r"\bar{y}\, a")}

    def forward(ctx, self, tensor):
        if self._data.dtype != tensor._data.dtype:  # checked before the sizes, as PyTorch's dot does
            raise mixed_dtypes("dot", self, tensor)
        if self.shape[0] != tensor.shape[0]:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{self.shape[0]}] and src [{tensor.shape[0]}] to have "
                f"the same number of elements, but got {self.shape[0]} and {tensor.shape[0]} elements respectively")
        ctx.save(self=self if ctx.needs_input_grad[1:] == (True,) else None,
                 tensor=tensor if ctx.needs_input_grad[:1] == (True,) else None)
        return self._backend.matmul(self._data, tensor._data)  # one dtype: mixed ones raised above

    def backward(ctx, grad):
        backend = ctx.backend
        return (backend.mul(grad, ctx.saved("tensor")) if ctx.needs_input_grad[0] else None,
                backend.mul(grad, ctx.saved("self")) if ctx.needs_input_grad[1] else None)

    def backward_graph(ctx, grad):
        return (grad * ctx.saved_graph("tensor") if ctx.needs_input_grad[0] else None,
                grad * ctx.saved_graph("self") if ctx.needs_input_grad[1] else None)


def mm(input, mat2):
    if input._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return MmBackward0.apply(input, mat2)


def mv(input, vec):
    return MvBackward0.apply(input, vec)


def dot(input, tensor):
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    return DotBackward0.apply(input, tensor)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    return AddmmBackward0.apply(input, mat1, mat2, beta=beta, alpha=alpha)


def bmm(input, mat2):
    """One matrix product per batch entry: ``(b, n, m) @ (b, m, p)`` is ``(b, n, p)``."""
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    expected = [input.shape[0], input.shape[2]]
    if list(mat2.shape[:2]) != expected:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: {expected} but got: "
                           f"{list(mat2.shape[:2])}.")
    return BmmBackward0.apply(input, mat2)


def _fold(tensor, shape):
    """Reshape as PyTorch's matmul does: a view when the layout allows, else copy then view."""
    if tensor._backend.can_view(tensor._data, shape):
        return shape_ops.reshape(tensor, shape)
    return shape_ops.unsafe_view(shape_ops.contiguous_copy(tensor), shape)


def _broadcast_batch(a_batch, b_batch) -> tuple:
    from gradviz.ops._util import broadcast_shapes

    return broadcast_shapes(tuple(a_batch), tuple(b_batch))


def matmul(input, other, *, out=None):
    if out is not None:
        from gradviz.ops.arithmetic import write_out

        return write_out("matmul", matmul(input, other), out)
    if not isinstance(other, Tensor) or not isinstance(input, Tensor):
        from gradviz.ops.arithmetic import check_operands

        check_operands("matmul", input, other)
    a_dim, b_dim = input._data.ndim, other._data.ndim
    if a_dim == 2 and b_dim == 2:  # the common case first, straight to the node (mm's own checks hold)
        return MmBackward0.apply(input, other)
    if a_dim == 0 or b_dim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a_dim}D and {b_dim}D")
    if a_dim == 1 and b_dim == 1:
        return dot(input, other)
    if a_dim == 2 and b_dim == 1:
        return mv(input, other)
    if a_dim == 1 and b_dim == 2:
        return shape_ops.squeeze_dims(mm(shape_ops.unsqueeze(input, 0), other), 0)
    if input.dtype is not other.dtype and (b_dim >= 3 or not input._backend.can_view(input._data, (-1, input.shape[-1]))):
        raise mixed_dtypes("bmm", input, other)  # PyTorch folds only what it can view: the rest is a batched product
    if a_dim >= 3 and b_dim <= 2:
        rows = _fold(input, (-1, input.shape[-1]))
        out = mm(rows, other) if b_dim == 2 else mv(rows, other)
        out_shape = tuple(input.shape[:-1]) + ((other.shape[-1],) if b_dim == 2 else ())
        return shape_ops.unsafe_view(out, out_shape)
    if a_dim <= 2 and b_dim >= 3:
        # a @ b = (b^T @ a^T)^T: the batch is on the right, so move it to the left
        flipped = shape_ops.transpose(other, -2, -1)
        rows = _fold(flipped, (-1, flipped.shape[-1]))
        if a_dim == 1:
            return shape_ops.unsafe_view(mv(rows, input), tuple(flipped.shape[:-1]))
        out = shape_ops.unsafe_view(mm(rows, shape_ops.t(input)), tuple(flipped.shape[:-1]) + (input.shape[0],))
        return shape_ops.contiguous_copy(shape_ops.transpose(out, -2, -1))
    batch = _broadcast_batch(input.shape[:-2], other.shape[:-2])
    count = 1
    for size in batch:
        count *= size
    left = shape_ops.expand(input, batch + tuple(input.shape[-2:]))
    right = shape_ops.expand(other, batch + tuple(other.shape[-2:]))
    left = _fold(left, (count,) + tuple(input.shape[-2:]))
    right = _fold(right, (count,) + tuple(other.shape[-2:]))
    return shape_ops.unsafe_view(bmm(left, right), batch + (input.shape[-2], other.shape[-1]))


def matrix_power(A, n: int, *, out=None):
    """``A`` times itself ``n`` times, as PyTorch multiplies: ``n = 0`` copies the identity into a clone,
    a negative ``n`` inverts first, 2 and 3 multiply in order, larger ``n`` by binary powering."""
    from gradviz.ops.conversion import clone
    from gradviz.ops.decompositions import _check_square, inv

    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    _check_square("linalg.matrix_power", A)
    if n == 0:
        from gradviz.tensor import eye

        identity = eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(tuple(A.shape))
        return clone(A).copy_(identity)
    if n < 0:
        A, n = inv(A), -n
    if n == 1:
        return clone(A)
    if n == 2:
        return matmul(A, A)
    if n == 3:
        return matmul(matmul(A, A), A)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = A if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    return result
