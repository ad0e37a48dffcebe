"""Matrix products, recorded with the nodes PyTorch's ``matmul`` decomposes into.

``matmul`` picks by the operands' dimensions, exactly as PyTorch does: 1-D @ 1-D is ``dot``,
2-D @ 1-D is ``mv``, 2-D @ 2-D is ``mm``, and 1-D @ 2-D is ``unsqueeze(0)``, ``mm``, then
``squeeze(0)`` (so the graph shows SqueezeBackward4 over MmBackward0). Higher dimensions fold
the batch into the rows of one ``mm``.
"""
from __future__ import annotations

from gradviz.autograd.function import Function
from gradviz.ops import shape as shape_ops
from gradviz.ops._util import promote


def _transpose(backend, array):
    return backend.permute(array, tuple(range(array.ndim - 2)) + (array.ndim - 1, array.ndim - 2))


class MmBackward0(Function):
    inputs = ("self", "mat2")
    derivatives = {"self": ("grad.mm(mat2.t())", r"\bar{Y} B^{\top}"),
                   "mat2": ("self.t().mm(grad)", r"A^{\top} \bar{Y}")}

    def forward(ctx, self, mat2):
        if self.shape[1] != mat2.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({self.shape[0]}x{self.shape[1]} "
                               f"and {mat2.shape[0]}x{mat2.shape[1]})")
        ctx.save(self=self if ctx.needs_input_grad[1:] == (True,) else None,
                 mat2=mat2 if ctx.needs_input_grad[:1] == (True,) else None)
        a, b = promote(self, mat2)
        return self._backend.matmul(a, b)

    def backward(ctx, grad):
        backend = ctx.backend
        grad_self = grad_mat2 = None
        if ctx.needs_input_grad[0]:
            grad_self = backend.matmul(grad, _transpose(backend, ctx.saved("mat2")))
        if ctx.needs_input_grad[1]:
            grad_mat2 = backend.matmul(_transpose(backend, ctx.saved("self")), grad)
        return grad_self, grad_mat2


class MvBackward0(Function):
    inputs = ("self", "vec")
    derivatives = {"self": ("grad.ger(vec.conj())", r"\bar{y}\, v^{\top}"),
                   "vec": ("self.conj().t().mv(grad)", r"A^{\top} \bar{y}")}

    def forward(ctx, self, vec):
        if self.shape[1] != vec.shape[0]:
            raise RuntimeError(f"size mismatch, got input ({self.shape[0]}), mat ({self.shape[0]}x{self.shape[1]}), "
                               f"vec ({vec.shape[0]})")
        ctx.save(self=self if ctx.needs_input_grad[1:] == (True,) else None,
                 vec=vec if ctx.needs_input_grad[:1] == (True,) else None)
        a, b = promote(self, vec)
        return self._backend.matmul(a, b)

    def backward(ctx, grad):
        backend = ctx.backend
        grad_self = grad_vec = None
        if ctx.needs_input_grad[0]:
            vec = ctx.saved("vec")
            grad_self = backend.mul(backend.reshape(grad, (-1, 1)), backend.reshape(vec, (1, -1)))
        if ctx.needs_input_grad[1]:
            grad_vec = backend.matmul(_transpose(backend, ctx.saved("self")), grad)
        return grad_self, grad_vec


class DotBackward0(Function):
    inputs = ("self", "tensor")
    derivatives = {"self": ("grad * tensor.conj()", r"\bar{y}\, b"), "tensor": ("grad * self.conj()", r"\bar{y}\, a")}

    def forward(ctx, self, tensor):
        if self.shape[0] != tensor.shape[0]:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{self.shape[0]}] and src [{tensor.shape[0]}] to have "
                f"the same number of elements, but got {self.shape[0]} and {tensor.shape[0]} elements respectively")
        ctx.save(self=self if ctx.needs_input_grad[1:] == (True,) else None,
                 tensor=tensor if ctx.needs_input_grad[:1] == (True,) else None)
        a, b = promote(self, tensor)
        return self._backend.matmul(a, b)

    def backward(ctx, grad):
        backend = ctx.backend
        return (backend.mul(grad, ctx.saved("tensor")) if ctx.needs_input_grad[0] else None,
                backend.mul(grad, ctx.saved("self")) if ctx.needs_input_grad[1] else None)


def mm(input, mat2):
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return MmBackward0.apply(input, mat2)


def mv(input, vec):
    return MvBackward0.apply(input, vec)


def dot(input, tensor):
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    return DotBackward0.apply(input, tensor)


def matmul(input, other):
    a_dim, b_dim = input.ndim, other.ndim
    if a_dim == 0 or b_dim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a_dim}D and {b_dim}D")
    if a_dim == 1 and b_dim == 1:
        return dot(input, other)
    if a_dim == 2 and b_dim == 1:
        return mv(input, other)
    if a_dim == 1 and b_dim == 2:
        return shape_ops.squeeze(mm(shape_ops.unsqueeze(input, 0), other), (0,))
    if a_dim == 2 and b_dim == 2:
        return mm(input, other)
    if a_dim >= 3 and b_dim <= 2:
        rows = shape_ops.reshape(input, (-1, input.shape[-1]))
        matrix = other if b_dim == 2 else shape_ops.unsqueeze(other, 1)
        out = mm(rows, matrix)
        out_shape = tuple(input.shape[:-1]) + ((other.shape[-1],) if b_dim == 2 else ())
        return shape_ops.reshape(out, out_shape)
    raise NotImplementedError(
        f"gradviz's matmul supports 1-D and 2-D operands and N-D @ 2-D; got {a_dim}D @ {b_dim}D")
