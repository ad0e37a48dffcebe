"""More products: the fused ``beta * self + alpha * (product)`` ops, cross and vdot as their own
nodes, and the products PyTorch writes with other ops (kron, inner, tensordot, multi_dot).

``baddbmm``, ``addbmm``, ``addmv`` and ``addr`` each record one node, as ``addmm`` does; their
gradients are the product's, scaled by ``alpha``, and ``beta * grad`` for ``self``. ``kron``,
``inner``, ``tensordot``, ``linalg.multi_dot`` and ``chain_matmul`` have no node of their own:
they are written below with the same permutes, views and ``mm``s as PyTorch's C++, so the graph
shows the nodes torch's does.
"""
from __future__ import annotations

import warnings

from gradviz.autograd.function import OpFunction
from gradviz.ops import shape as shape_ops
from gradviz.ops._util import meta, promote, saved_dim, to_input, wrap_dim
from gradviz.ops.linalg import _transpose, dot, mm
from gradviz.tensor import Tensor


def _scaled(backend, value, factor):
    return value if factor == 1 else backend.mul(value, factor)


def _scaled_graph(value, factor):
    """PyTorch's ``maybe_multiply`` (and ``* alpha``): the tensor itself when the factor is 1, else a
    ``mul(Tensor, Scalar)``, MulBackward1."""
    from gradviz.ops.arithmetic import MulBackward1

    return value if factor == 1 else MulBackward1.apply(value, factor)


def _combine(backend, product, bias, alpha, beta):
    """``beta * self + alpha * product``; with ``beta == 0`` self is ignored (a NaN in it too), as in PyTorch."""
    product = _scaled(backend, product, alpha)
    if beta == 0:
        return product
    return backend.add(product, _scaled(backend, bias, beta))


class BaddbmmBackward0(OpFunction):
    """``beta * self + alpha * (batch1 @ batch2)``, one matrix product per batch entry."""

    inputs = ("self", "batch1", "batch2")
    derivatives = {"self": ("maybe_multiply(grad, beta)", r"\beta\,\bar{Y}"),
                   "batch1": ("grad.bmm(batch2.transpose(1, 2)) * alpha", r"\alpha\,\bar{Y} B^{\top}"),
                   "batch2": ("batch1.transpose(1, 2).bmm(grad) * alpha", r"\alpha\,A^{\top} \bar{Y}")}

    def forward(ctx, self, batch1, batch2, beta=1, alpha=1):
        needs = ctx.needs_input_grad
        ctx.save(alpha=alpha, batch1=batch1 if needs[2:3] == (True,) else None,
                 batch2=batch2 if needs[1:2] == (True,) else None, beta=beta)
        ctx.metas = (meta(self), meta(batch1), meta(batch2))
        a, b = promote(batch1, batch2)
        return _combine(self._backend, self._backend.matmul(a, b), self._data, alpha, beta)

    def backward(ctx, grad):
        backend, needs = ctx.backend, ctx.needs_input_grad
        alpha, beta = ctx.saved("alpha", "beta")
        scaled = _scaled(backend, grad, alpha)
        return (to_input(backend, _scaled(backend, grad, beta), ctx.metas[0]) if needs[0] else None,
                to_input(backend, backend.matmul(scaled, _transpose(backend, ctx.saved("batch2"))), ctx.metas[1])
                if needs[1] else None,
                to_input(backend, backend.matmul(_transpose(backend, ctx.saved("batch1")), scaled), ctx.metas[2])
                if needs[2] else None)

    def backward_graph(ctx, grad):
        from gradviz.ops._util import sum_to_tensor

        needs = ctx.needs_input_grad
        alpha, beta = ctx.saved("alpha", "beta")
        grad_self = sum_to_tensor(_scaled_graph(grad, beta), ctx.metas[0][0]) if needs[0] else None
        grad_batch1 = _scaled_graph(grad.bmm(ctx.saved_graph("batch2").transpose(1, 2)), alpha) if needs[1] else None
        grad_batch2 = _scaled_graph(ctx.saved_graph("batch1").transpose(1, 2).bmm(grad), alpha) if needs[2] else None
        return grad_self, grad_batch1, grad_batch2


class AddbmmBackward0(OpFunction):
    """``beta * self + alpha * sum_b (batch1[b] @ batch2[b])``: the batch of products summed."""

    inputs = ("self", "batch1", "batch2")
    derivatives = {"self": ("maybe_multiply(grad, beta)", r"\beta\,\bar{Y}"),
                   "batch1": ("grad.expand(b, n, p).bmm(batch2.transpose(1, 2)) * alpha",
                              r"\alpha\,\bar{Y} B_b^{\top}"),
                   "batch2": ("batch1.transpose(1, 2).bmm(grad.expand(b, n, p)) * alpha",
                              r"\alpha\,A_b^{\top} \bar{Y}")}

    def forward(ctx, self, batch1, batch2, beta=1, alpha=1):
        needs = ctx.needs_input_grad
        ctx.save(alpha=alpha, batch1=batch1 if needs[2:3] == (True,) else None,
                 batch1_sym_argsize_0=batch1.shape[0], batch1_sym_argsize_1=batch1.shape[1],
                 batch2=batch2 if needs[1:2] == (True,) else None, batch2_sym_argsize_2=batch2.shape[2], beta=beta)
        ctx.metas = (meta(self), meta(batch1), meta(batch2))
        backend = self._backend
        a, b = promote(batch1, batch2)
        return _combine(backend, backend.sum(backend.matmul(a, b), 0, keepdims=False), self._data, alpha, beta)

    def backward(ctx, grad):
        backend, needs = ctx.backend, ctx.needs_input_grad
        alpha, beta = ctx.saved("alpha", "beta")
        batch = ctx.saved("batch1_sym_argsize_0")
        spread = backend.expand(backend.reshape(_scaled(backend, grad, alpha), (1,) + tuple(grad.shape)),
                                (batch,) + tuple(grad.shape))
        return (to_input(backend, _scaled(backend, grad, beta), ctx.metas[0]) if needs[0] else None,
                to_input(backend, backend.matmul(spread, _transpose(backend, ctx.saved("batch2"))), ctx.metas[1])
                if needs[1] else None,
                to_input(backend, backend.matmul(_transpose(backend, ctx.saved("batch1")), spread), ctx.metas[2])
                if needs[2] else None)

    def backward_graph(ctx, grad):
        from gradviz.ops._util import sum_to_tensor

        needs = ctx.needs_input_grad
        alpha, beta = ctx.saved("alpha", "beta")
        sizes = ctx.saved("batch1_sym_argsize_0", "batch1_sym_argsize_1", "batch2_sym_argsize_2")
        grad_self = sum_to_tensor(_scaled_graph(grad, beta), ctx.metas[0][0]) if needs[0] else None
        grad_batch1 = grad_batch2 = None
        if needs[1]:
            spread = grad.unsqueeze(0).expand(*sizes)
            grad_batch1 = _scaled_graph(spread.bmm(ctx.saved_graph("batch2").transpose(1, 2)), alpha)
        if needs[2]:
            spread = grad.unsqueeze(0).expand(*sizes)
            grad_batch2 = _scaled_graph(ctx.saved_graph("batch1").transpose(1, 2).bmm(spread), alpha)
        return grad_self, grad_batch1, grad_batch2


class AddmvBackward0(OpFunction):
    """``beta * self + alpha * (mat @ vec)``."""

    inputs = ("self", "mat", "vec")
    derivatives = {"self": ("maybe_multiply(grad, beta)", r"\beta\,\bar{y}"),
                   "mat": ("grad.ger(vec) * alpha", r"\alpha\,\bar{y}\,v^{\top}"),
                   "vec": ("mat.t().mv(grad) * alpha", r"\alpha\,A^{\top}\bar{y}")}

    def forward(ctx, self, mat, vec, beta=1, alpha=1):
        needs = ctx.needs_input_grad
        ctx.save(alpha=alpha, beta=beta, mat=mat if needs[2:3] == (True,) else None,
                 vec=vec if needs[1:2] == (True,) else None)
        ctx.metas = (meta(self), meta(mat), meta(vec))
        a, b = promote(mat, vec)
        return _combine(self._backend, self._backend.matmul(a, b), self._data, alpha, beta)

    def backward(ctx, grad):
        backend, needs = ctx.backend, ctx.needs_input_grad
        alpha, beta = ctx.saved("alpha", "beta")
        scaled = _scaled(backend, grad, alpha)
        grad_mat = grad_vec = None
        if needs[1]:
            vec = ctx.saved("vec")
            grad_mat = to_input(backend, backend.mul(backend.reshape(scaled, (-1, 1)), backend.reshape(vec, (1, -1))),
                                ctx.metas[1])
        if needs[2]:
            grad_vec = to_input(backend, backend.matmul(_transpose(backend, ctx.saved("mat")), scaled), ctx.metas[2])
        return (to_input(backend, _scaled(backend, grad, beta), ctx.metas[0]) if needs[0] else None,
                grad_mat, grad_vec)

    def backward_graph(ctx, grad):
        from gradviz.ops._util import sum_to_tensor
        from gradviz.ops.composites import outer

        needs = ctx.needs_input_grad
        alpha, beta = ctx.saved("alpha", "beta")
        grad_self = sum_to_tensor(_scaled_graph(grad, beta), ctx.metas[0][0]) if needs[0] else None
        grad_mat = _scaled_graph(outer(grad, ctx.saved_graph("vec")), alpha) if needs[1] else None
        grad_vec = _scaled_graph(ctx.saved_graph("mat").t().mv(grad), alpha) if needs[2] else None
        return grad_self, grad_mat, grad_vec


class AddrBackward0(OpFunction):
    """``beta * self + alpha * outer(vec1, vec2)``."""

    inputs = ("self", "vec1", "vec2")
    derivatives = {"self": ("maybe_multiply(grad, beta)", r"\beta\,\bar{Y}"),
                   "vec1": ("grad.mv(vec2) * alpha", r"\alpha\,\bar{Y} v_2"),
                   "vec2": ("grad.t().mv(vec1) * alpha", r"\alpha\,\bar{Y}^{\top} v_1")}

    def forward(ctx, self, vec1, vec2, beta=1, alpha=1):
        needs = ctx.needs_input_grad
        ctx.save(alpha=alpha, beta=beta, vec1=vec1 if needs[2:3] == (True,) else None,
                 vec2=vec2 if needs[1:2] == (True,) else None)
        ctx.metas = (meta(self), meta(vec1), meta(vec2))
        backend = self._backend
        a, b = promote(vec1, vec2)
        product = backend.mul(backend.reshape(a, (-1, 1)), backend.reshape(b, (1, -1)))
        return _combine(backend, product, self._data, alpha, beta)

    def backward(ctx, grad):
        backend, needs = ctx.backend, ctx.needs_input_grad
        alpha, beta = ctx.saved("alpha", "beta")
        scaled = _scaled(backend, grad, alpha)
        return (to_input(backend, _scaled(backend, grad, beta), ctx.metas[0]) if needs[0] else None,
                to_input(backend, backend.matmul(scaled, ctx.saved("vec2")), ctx.metas[1]) if needs[1] else None,
                to_input(backend, backend.matmul(_transpose(backend, scaled), ctx.saved("vec1")), ctx.metas[2])
                if needs[2] else None)

    def backward_graph(ctx, grad):
        from gradviz.ops._util import sum_to_tensor

        needs = ctx.needs_input_grad
        alpha, beta = ctx.saved("alpha", "beta")
        grad_self = sum_to_tensor(_scaled_graph(grad, beta), ctx.metas[0][0]) if needs[0] else None
        grad_vec1 = _scaled_graph(grad.mv(ctx.saved_graph("vec2")), alpha) if needs[1] else None
        grad_vec2 = _scaled_graph(grad.t().mv(ctx.saved_graph("vec1")), alpha) if needs[2] else None
        return grad_self, grad_vec1, grad_vec2


class LinalgCrossBackward0(OpFunction):
    """The cross product of 3-vectors along ``dim``: ``self × other``."""

    inputs = ("self", "other")
    derivatives = {"self": ("linalg_cross(other, grad, dim)", r"b \times \bar{y}"),
                   "other": ("linalg_cross(grad, self, dim)", r"\bar{y} \times a")}

    def forward(ctx, self, other, dim):
        needs = ctx.needs_input_grad
        ctx.save(dim=saved_dim(dim), other=other if needs[:1] == (True,) else None,
                 self=self if needs[1:] == (True,) else None)
        ctx.dim = dim
        ctx.metas = (meta(self), meta(other))
        a, b = promote(self, other)
        backend = self._backend
        shape = tuple(max(x, y) for x, y in zip(self.shape, other.shape))
        ctx.axis = axis = wrap_dim(dim, len(shape))  # (ctx keeps nothing when nothing is recorded)
        return backend.cross(backend.expand(a, shape), backend.expand(b, shape), axis)

    def backward(ctx, grad):
        backend, needs = ctx.backend, ctx.needs_input_grad
        grad_self = grad_other = None
        if needs[0]:
            other = ctx.saved("other")
            grad_self = to_input(backend, backend.cross(backend.expand(other, grad.shape), grad, ctx.axis),
                                 ctx.metas[0])
        if needs[1]:
            self = ctx.saved("self")
            grad_other = to_input(backend, backend.cross(grad, backend.expand(self, grad.shape), ctx.axis),
                                  ctx.metas[1])
        return grad_self, grad_other

    def backward_graph(ctx, grad):
        from gradviz.ops._util import sum_to_tensor

        needs = ctx.needs_input_grad
        grad_self = grad_other = None
        if needs[0]:
            grad_self = sum_to_tensor(linalg_cross(ctx.saved_graph("other"), grad, dim=ctx.dim), ctx.metas[0][0])
        if needs[1]:
            grad_other = sum_to_tensor(linalg_cross(grad, ctx.saved_graph("self"), dim=ctx.dim), ctx.metas[1][0])
        return grad_self, grad_other


class VdotBackward0(OpFunction):
    """``sum(conj(self) * other)`` of two vectors; for real numbers, ``dot``."""

    inputs = ("self", "other")
    derivatives = {"self": ("grad * other", r"\bar{y}\, b"), "other": ("grad * self", r"\bar{y}\, a")}

    def forward(ctx, self, other):
        ctx.save(other=other if ctx.needs_input_grad[:1] == (True,) else None,
                 self=self if ctx.needs_input_grad[1:] == (True,) else None)
        a, b = promote(self, other)
        return self._backend.matmul(a, b)

    def backward(ctx, grad):
        backend = ctx.backend
        return (backend.mul(grad, ctx.saved("other")) if ctx.needs_input_grad[0] else None,
                backend.mul(grad, ctx.saved("self")) if ctx.needs_input_grad[1] else None)

    def backward_graph(ctx, grad):
        return (grad * ctx.saved_graph("other") if ctx.needs_input_grad[0] else None,
                grad * ctx.saved_graph("self") if ctx.needs_input_grad[1] else None)


def _check_batches(batch1, batch2, summed: bool = False) -> None:
    if batch1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if summed:  # addbmm checks as bmm does
        if batch1.shape[0] != batch2.shape[0]:
            raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {batch1.shape[0]} and "
                               f"{batch2.shape[0]}")
        if batch1.shape[2] != batch2.shape[1]:
            raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x{batch1.shape[2]} and "
                               f"{batch2.shape[1]}x{batch2.shape[2]})")
    expected = [batch1.shape[0], batch1.shape[2]]
    if list(batch2.shape[:2]) != expected:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: {expected} but got: "
                           f"{list(batch2.shape[:2])}.")


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    _check_batches(batch1, batch2)
    return BaddbmmBackward0.apply(input, batch1, batch2, beta=beta, alpha=alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    _check_batches(batch1, batch2, summed=True)
    return AddbmmBackward0.apply(input, batch1, batch2, beta=beta, alpha=alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    if mat.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0] if input.ndim else 1}), mat "
                           f"({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    return AddmvBackward0.apply(input, mat, vec, beta=beta, alpha=alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    if vec1.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return AddrBackward0.apply(input, vec1, vec2, beta=beta, alpha=alpha)


def linalg_cross(input, other, *, dim=-1):
    """``torch.linalg.cross``: the cross product along ``dim`` (of size 3), broadcasting the rest."""
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    from gradviz.ops._util import broadcast_shapes

    shape = broadcast_shapes(tuple(input.shape), tuple(other.shape))
    axis = wrap_dim(dim, len(shape))
    if shape[axis] != 3:  # PyTorch checks the broadcast operands
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[axis]} and "
                           f"{other.shape[axis]}")
    return LinalgCrossBackward0.apply(input, other, dim)


def cross(input, other, dim=None):
    """``torch.cross``: without ``dim``, the first dim of size 3 (PyTorch warns that this default is deprecated)."""
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        dim = next((d for d, size in enumerate(input.shape) if size == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim)


def vdot(input, other):
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{other.shape[0]}] to have "
            f"the same number of elements, but got {input.shape[0]} and {other.shape[0]} elements respectively")
    return VdotBackward0.apply(input, other)


# -- products PyTorch writes with other ops -------------------------------------------------------------
def kron(input, other):
    """Every product ``a[i] * b[j]`` laid out in blocks: each operand viewed with interleaved dims of
    size 1, one ``mul``, then one view to the blocked shape (PyTorch's ``kron``)."""
    ndim = max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (ndim - other.ndim) + tuple(other.shape)
    a_view, b_view, out_shape = [], [], []
    for a_size, b_size in zip(a_shape, b_shape):
        a_view += [a_size, 1]
        b_view += [1, b_size]
        out_shape.append(a_size * b_size)
    product = shape_ops.unsafe_view(input, tuple(a_view)) * shape_ops.unsafe_view(other, tuple(b_view))
    return shape_ops.unsafe_view(product, tuple(out_shape))


def tensordot(a, b, dims=2, out=None):
    """Sum over the paired dims: permute each operand (summed dims last in ``a``, first in ``b``),
    fold each to a matrix, one ``mm``, then view to the free dims of both."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    elif isinstance(dims, Tensor):
        return tensordot(a, b, dims.tolist())
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    summed = 1
    for da, db in zip(dims_a, dims_b):
        size_a, size_b = a.shape[da], b.shape[db]
        if size_b == 1:  # a dim broadcast against the other is summed right away (PyTorch's order of checks)
            a = a.sum(da, keepdim=True)
        elif size_a == 1:
            b = b.sum(db, keepdim=True)
        elif size_a != size_b:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {size_a} in dim {da} "
                               f"and second has size {size_b} in dim {db}")
        else:
            summed *= size_a
    wrapped_a = [wrap_dim(d, a.ndim) for d in dims_a]
    wrapped_b = [wrap_dim(d, b.ndim) for d in dims_b]
    free_a = [d for d in range(a.ndim) if d not in wrapped_a]
    free_b = [d for d in range(b.ndim) if d not in wrapped_b]
    rows = cols = 1
    for d in free_a:
        rows *= a.shape[d]
    for d in free_b:
        cols *= b.shape[d]
    out_shape = tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b)
    # the summed dims are permuted as given (negative ones too: PermuteBackward0 saves them so)
    left = shape_ops.permute(a, *(free_a + dims_a))
    right = shape_ops.permute(b, *(dims_b + free_b))
    if rows == 1 and cols == 1:  # one number out: a dot of the flattened operands, if both flatten as views
        backend = left._backend
        if backend.can_view(left._data, (summed,)) and backend.can_view(right._data, (summed,)):
            left = left if left.ndim == 1 else shape_ops.reshape(left, (summed,))
            right = right if right.ndim == 1 else shape_ops.reshape(right, (summed,))
            return shape_ops.view(dot(left, right), out_shape)
        return shape_ops.view((left.squeeze() * right.squeeze()).sum(), out_shape)  # else no copy: multiply, sum
    left = shape_ops.reshape(left, (rows, summed))
    right = shape_ops.reshape(right, (summed, cols))
    return shape_ops.view(mm(left, right), out_shape)


def inner(input, other):
    """``sum(input[..., k] * other[..., k])`` for each pair of rows: ``dot`` for vectors, else ``tensordot`` on the last dims."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def _chain_order(shapes) -> list:
    """The cheapest order to multiply a chain of matrices (the classic dynamic programme PyTorch runs)."""
    count = len(shapes)
    sizes = [shapes[0][0]] + [shape[1] for shape in shapes]
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                total = cost[i][k] + cost[k + 1][j] + sizes[i] * sizes[k + 1] * sizes[j + 1]
                if cost[i][j] is None or total < cost[i][j]:
                    cost[i][j], split[i][j] = total, k
    return split


def multi_dot(tensors, *, out=None):
    """``linalg.multi_dot``: a chain of ``mm``s in the cheapest order; a 1-D first (last) operand is a
    row (column), unsqueezed, and the result is viewed back to the shape the 1-D ends ask for."""
    tensors = list(tensors)
    count = len(tensors)
    if count < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {count}")
    first_1d, last_1d = tensors[0].ndim == 1, tensors[-1].ndim == 1
    for index, tensor in enumerate(tensors):
        expected = 1 if (index == 0 and first_1d) or (index == count - 1 and last_1d) else 2
        if tensor.ndim != expected and not (index in (0, count - 1) and tensor.ndim in (1, 2)):
            raise RuntimeError(f"multi_dot(): tensor {index} must be 2D but got {tensor.ndim}D")
    out_shape = ((tensors[0].shape[0],) if not first_1d else ()) + ((tensors[-1].shape[1],) if not last_1d else ())
    if first_1d:
        tensors[0] = shape_ops.unsqueeze(tensors[0], 0)
    if last_1d:
        tensors[-1] = shape_ops.unsqueeze(tensors[-1], -1)
    for index in range(count - 1):
        if tensors[index].shape[1] != tensors[index + 1].shape[0]:
            a, b = tensors[index], tensors[index + 1]
            raise RuntimeError(f"multi_dot(): tensors {index} and {index + 1} with shapes "
                               f"{list(a.shape)} and {list(b.shape)} cannot be multiplied")
    if count == 2:
        result = mm(tensors[0], tensors[1])
    elif count == 3:  # PyTorch compares the two orders directly
        a, b, c = (tuple(t.shape) for t in tensors)
        cost_ab_c = a[0] * a[1] * b[1] + a[0] * b[1] * c[1]
        cost_a_bc = b[0] * b[1] * c[1] + a[0] * a[1] * c[1]
        result = (mm(mm(tensors[0], tensors[1]), tensors[2]) if cost_ab_c < cost_a_bc
                  else mm(tensors[0], mm(tensors[1], tensors[2])))
    else:
        split = _chain_order([tuple(t.shape) for t in tensors])

        def product(i, j):
            return tensors[i] if i == j else mm(product(i, split[i][j]), product(split[i][j] + 1, j))

        result = product(0, count - 1)
    return shape_ops.view(result, out_shape)


def chain_matmul(*matrices, out=None):
    """The deprecated ``torch.chain_matmul``: ``multi_dot`` of its arguments (2-D only)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)
