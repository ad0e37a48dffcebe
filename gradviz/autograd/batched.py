"""``autograd.grad(..., is_grads_batched=True)``.

PyTorch runs the backward pass once under its legacy vmap (``torch._vmap_internals``): each gradient carries
the batch as a leading dim, and each ATen op a formula calls goes through its batching rule. Under
``create_graph=True`` that shows in the graph of the result: a binary pointwise op lines an unbatched operand up
with a ``view`` (ViewBackward0 on every unbatched operand that requires grad, e.g. ``grad * x.cos()`` records
MulBackward0(grad, ViewBackward0(CosBackward0))); a unary op runs on the batched tensor as it is; an op with
no batching rule (``tanh_backward``, ``mse_loss_backward``...) falls back to a loop: the formula once per row,
the rows stacked (StackBackward0) and viewed back (ViewBackward0).

gradviz does the same for the nodes it has rules for (``RULES``, each written after the graph PyTorch 2.13
records, checked in ``tests/test_higher_order_batched.py``): under ``create_graph=True`` every node the pass
will run is looked at first, and when each has a rule the pass runs once, with each node's rule standing in
for its ``backward_graph``. Any other program (or a case a rule does not cover, found while it runs) takes
one pass per row and stacks the results: the same values, a different graph. Without ``create_graph``
only the values show, and the per-row pass gives them.
"""
from __future__ import annotations

from gradviz.autograd import engine


class NotBatchable(Exception):
    """A rule met a case it was not written for: the program takes the per-row passes."""


# -- lining operands up as the legacy vmap does ------------------------------------------------------------------
def _aligned(tensor, batched: bool, example_dim: int, batch_size: int):
    """``alignBatchDimsAtFront``: an unbatched operand is always viewed to ``(1, 1..., *shape)``; a batched
    one only when it has fewer example dims than the op's widest operand."""
    if batched:
        if tensor.ndim - 1 == example_dim:
            return tensor
        return tensor.view((batch_size,) + (1,) * (example_dim - tensor.ndim + 1) + tuple(tensor.shape[1:]))
    return tensor.view((1,) + (1,) * (example_dim - tensor.ndim) + tuple(tensor.shape))


def _pointwise(op, batched, other, batched_first: bool = True):
    """A binary pointwise op between the batched gradient and an unbatched tensor (a number passes as is)."""
    from gradviz.tensor import Tensor

    if not isinstance(other, Tensor):  # a wrapped number: a 0-d tensor with no history (nothing to view)
        if not isinstance(other, (int, float)):
            raise NotBatchable
        other = Tensor._make(batched._backend.full((), other, batched.dtype, batched.device), backend=batched._backend)
        return op(batched, other) if batched_first else op(other, batched)
    if other.ndim == 0:  # a 0-d unbatched operand is taken as it is (the rule's scalar case): no view
        return op(batched, other) if batched_first else op(other, batched)
    example_dim = max(batched.ndim - 1, other.ndim)
    left = _aligned(batched, True, example_dim, batched.shape[0])
    right = _aligned(other, False, example_dim, batched.shape[0])
    return op(left, right) if batched_first else op(right, left)


def _mul(a, b):
    return a * b


def _div(a, b):
    return a / b


def _summed_to(grad, shape):
    """``sum_to(grad, shape)`` on the batch: the new leading and the stretched dims summed, shifted past the
    batch dim (SumBackward1, keepdim), then a view where leading dims went, as ``validate_outputs`` does."""
    shape = tuple(shape)
    logical = tuple(grad.shape[1:])
    if logical == shape:
        return grad
    if not shape:
        raise NotBatchable  # (torch sums everything there: not written for a batch)
    lead = len(logical) - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, size in enumerate(shape) if size == 1 and logical[lead + i] != 1)
    summed = grad.sum(tuple(d + 1 for d in dims), keepdim=True) if dims else grad
    return summed.view((grad.shape[0],) + shape) if lead else summed


def _same_shapes(ctx, grads):
    """A binary op's gradients as its inputs need them (its ``metas`` are flat: shape, dtype, shape, dtype):
    summed back to a broadcast input's shape; a dtype that differs takes the per-row passes."""
    metas = ctx.metas
    if metas is None or len(metas) != 4:
        raise NotBatchable
    out = []
    for grad, shape, dtype in zip(grads, metas[0::2], metas[1::2]):
        if grad is not None and dtype is not None and grad._data.dtype != dtype:
            raise NotBatchable
        out.append(None if grad is None else _summed_to(grad, shape))
    return tuple(out)


# -- the rules: one per node class, each the graph PyTorch records under vmap -----------------------------------
def _add(ctx, grad):
    if ctx.saved("alpha") != 1:
        raise NotBatchable
    needs = ctx.needs_input_grad
    return _same_shapes(ctx, (grad if needs[0] else None, grad if needs[1] else None))


def _sub(ctx, grad):
    if ctx.saved("alpha") != 1:
        raise NotBatchable
    needs = ctx.needs_input_grad
    other = -grad if needs[1] else None
    return _same_shapes(ctx, (grad if needs[0] else None, other))


def _mul_rule(ctx, grad):
    other, this = ctx.saved_graph("other", "self")
    needs = ctx.needs_input_grad
    grad_other = _pointwise(_mul, grad, this) if needs[1] else None  # the second input's first, as PyTorch
    grad_self = _pointwise(_mul, grad, other) if needs[0] else None
    return _same_shapes(ctx, (grad_self, grad_other))


def _div_rule(ctx, grad):
    other = ctx.saved_graph("other")
    needs = ctx.needs_input_grad
    grad_other = None
    if needs[1]:  # -grad * ((self / other) / other): the right operand first, as C++ evaluates it
        factor = (ctx.saved_graph("self") / other) / other
        grad_other = _pointwise(_mul, -grad, factor)
    grad_self = _pointwise(_div, grad, other) if needs[0] else None
    return _same_shapes(ctx, (grad_self, grad_other))


def _mul_number(ctx, grad):
    """``grad * number``: under vmap PyTorch's ``mul`` takes the number as a wrapped 0-d tensor, so the node
    is a MulBackward0 with no edge for it (outside vmap it is MulBackward1)."""
    from gradviz.ops.arithmetic import MulBackward0
    from gradviz.tensor import Tensor

    number = Tensor._make(ctx.backend.full((), ctx.saved("other"), grad.dtype, grad.device), backend=ctx.backend)
    return MulBackward0.apply(grad, number)


def _neg(ctx, grad):
    return -grad


def _sin(ctx, grad):
    return _pointwise(_mul, grad, ctx.saved_graph("self").cos())


def _cos(ctx, grad):
    return _pointwise(_mul, grad, -ctx.saved_graph("self").sin())


def _times_result(ctx, grad):  # exp: grad * result
    return _pointwise(_mul, grad, ctx.saved_graph("result"))


def _log(ctx, grad):
    return _pointwise(_div, grad, ctx.saved_graph("self"))


def _pow(ctx, grad):
    from gradviz.ops.arithmetic import _scalar_mul

    self, exponent = ctx.saved_graph("self", "exponent")
    if exponent == 0 or not isinstance(exponent, (int, float)):
        raise NotBatchable
    exponent = float(exponent)
    return _pointwise(_mul, grad, _scalar_mul(self.pow(exponent - 1), exponent))


def _sqrt(ctx, grad):
    from gradviz.ops.arithmetic import MulBackward1

    return _pointwise(_div, grad, MulBackward1.apply(ctx.saved_graph("result"), 2))


def _abs(ctx, grad):
    from gradviz.ops.double_backward import SgnBackward0

    return _pointwise(_mul, grad, SgnBackward0.apply(ctx.saved_graph("self")))


def _relu(ctx, grad):
    from gradviz.ops.double_backward import ThresholdBackwardBackward0

    return _pointwise(lambda g, r: ThresholdBackwardBackward0.apply(g, r, 0), grad, ctx.saved_graph("result"))


def _sigmoid(ctx, grad):
    from gradviz.ops.double_backward import SigmoidBackwardBackward0

    return _pointwise(SigmoidBackwardBackward0.apply, grad, ctx.saved_graph("result"))


def _expanded(grad, shape, reduced_dims, keepdim):
    """``sum``'s and ``mean``'s backward on a batched gradient: the reduced dims put back past the batch dim
    (UnsqueezeBackward0 each), a view where the ranks still differ (a full reduction: the batch alone), then
    the expand (ExpandBackward0); recorded only where the gradient has a graph, as in PyTorch."""
    batch_size = grad.shape[0]
    if not keepdim:
        for dim in sorted(reduced_dims):
            grad = grad.unsqueeze(dim + 1)
    if grad.ndim - 1 != len(shape):
        grad = grad.view((batch_size,) + (1,) * (len(shape) - grad.ndim + 1) + tuple(grad.shape[1:]))
    return grad.expand((batch_size,) + tuple(shape))


def _sum_all(ctx, grad):
    return _expanded(grad, ctx.saved("self_sym_sizes"), (), True)


def _sum_dims(ctx, grad):
    keepdim, shape = ctx.saved("keepdim", "self_sym_sizes")
    return _expanded(grad, shape, ctx.dims if ctx.dims is not None else range(len(shape)), keepdim)


def _mean_all(ctx, grad):
    from gradviz.ops.arithmetic import DivBackward1

    shape, count = ctx.saved("self_sym_sizes", "self_sym_numel")
    return DivBackward1.apply(_expanded(grad, shape, (), True), count)


def _mean_dims(ctx, grad):
    keepdim, shape = ctx.saved("keepdim", "self_sym_sizes")
    dims = ctx.dims if ctx.dims is not None else tuple(range(len(shape)))
    count = 1
    for dim in dims:
        count *= shape[dim]
    from gradviz.ops.arithmetic import DivBackward1

    return DivBackward1.apply(_expanded(grad, shape, dims, keepdim), count)


def _looped(original):
    """PyTorch's vmap fallback for an op with no batching rule: the formula once per row, its results
    stacked and viewed back to the batch (StackBackward0, then ViewBackward0)."""
    def rule(ctx, grad):
        from gradviz.ops import stack

        if grad.requires_grad:  # the loop's slices are recorded: an expand to the same shape, then a select each
            grad = grad.expand(tuple(grad.shape))
        rows = [original(ctx, grad[row]) for row in range(grad.shape[0])]
        rows = [r if type(r) is tuple else (r,) for r in rows]
        results = []
        for column in zip(*rows):
            if column[0] is None:
                results.append(None)
                continue
            stacked = stack(list(column))
            results.append(stacked.view(tuple(stacked.shape)))
        return results[0] if len(results) == 1 else tuple(results)

    return rule


def _batched_t(grad):
    """``t()`` of a batched matrix: its two logical dims swapped (TransposeBackward0, as PyTorch's rule)."""
    return grad.transpose(1, 2)


def _t(ctx, grad):
    return _batched_t(grad)


def _transpose(ctx, grad):
    logical = grad.ndim - 1
    dim0, dim1 = (d % logical for d in ctx.dims)
    return grad.transpose(dim0 + 1, dim1 + 1)


def _mm(ctx, grad):
    """``mm``'s batching rule is ``matmul`` with the batched operand (PyTorch folds it: a view, mm, an unsafe
    view), on ``mm_mat1_backward``/``mm_mat2_backward`` with their column-major choices."""
    from gradviz.ops.linalg import _column_major, matmul

    needs = ctx.needs_input_grad
    grad_self = grad_mat2 = None
    if needs[1]:  # mat2's gradient first, as PyTorch's generated code
        mat1 = ctx.saved_graph("self")
        if _column_major(*ctx.saved("mat2_sym_sizes", "mat2_sym_strides")):
            grad_mat2 = _batched_t(matmul(_batched_t(grad), mat1))
        else:
            grad_mat2 = matmul(mat1.t(), grad)
    if needs[0]:
        mat2 = ctx.saved_graph("mat2")
        if _column_major(*ctx.saved("self_sym_sizes", "self_sym_strides")):
            grad_self = _batched_t(matmul(mat2, _batched_t(grad)))
        else:
            grad_self = matmul(grad, mat2.t())
    return grad_self, grad_mat2


def _mv(ctx, grad):
    """``mv``: the matrix's ``grad.ger(vec)`` has no batching rule (PyTorch's loop: one ``outer`` per row,
    stacked and viewed back); the vector's ``self.t().mv(grad)`` is ``matmul(self.t(), grad[..., None])``,
    squeezed back."""
    from gradviz.ops import stack

    needs = ctx.needs_input_grad
    grad_self = grad_vec = None
    if needs[0]:
        vec = ctx.saved_graph("vec")
        sliced = grad.expand(tuple(grad.shape)) if grad.requires_grad else grad  # (the loop's recorded slices)
        rows = stack([sliced[row].reshape(-1, 1) * vec for row in range(grad.shape[0])])
        grad_self = rows.view(tuple(rows.shape))
    if needs[1]:  # matmul(self.t(), grad[..., None]) as PyTorch folds it: its result (B, m, 1) is contiguous
        # already, so no clone follows the transpose (gradviz's matmul always copies there)
        from gradviz.ops import shape as shape_ops
        from gradviz.ops.linalg import _fold, mm

        matrix = ctx.saved_graph("self").t()
        flipped = shape_ops.transpose(grad.unsqueeze(-1), -2, -1)
        rows = _fold(flipped, (-1, flipped.shape[-1]))
        out = shape_ops.unsafe_view(mm(rows, shape_ops.t(matrix)), tuple(flipped.shape[:-1]) + (matrix.shape[0],))
        grad_vec = shape_ops.transpose(out, -2, -1).squeeze(-1)
    return grad_self, grad_vec


def _reshape_back(ctx, grad):
    """view and reshape: ``grad.reshape(self.sizes())`` on the batch (a view of the physical tensor)."""
    return grad.reshape((grad.shape[0],) + tuple(ctx.saved("self_sym_sizes")))


def _squeezed_back(ctx, grad):
    """``unsqueeze_to(grad, dims, self.sizes())`` on the batch: each squeezed size-1 dim put back, lowest
    first, past the batch dim (UnsqueezeBackward0 each)."""
    from gradviz.ops.shape import _given_dims
    from gradviz.ops._util import wrap_dim

    sizes = tuple(ctx.saved("self_sym_sizes"))
    saved = ctx._packed.get("dim") if ctx._packed is not None else None
    dims = range(len(sizes)) if saved is None else _given_dims(saved)
    for d in sorted(wrap_dim(d, len(sizes)) for d in dims):
        if sizes[d] == 1:
            grad = grad.unsqueeze(d + 1)
    return grad


def _unsqueeze(ctx, grad):
    from gradviz.ops.shape import _given_dims

    dim = _given_dims(ctx.saved("dim"))[0]
    return grad.squeeze(dim + 1 if dim >= 0 else dim)


def _expand(ctx, grad):
    return _summed_to(grad, ctx.saved("self_sym_sizes"))


def _dot(ctx, grad):
    needs = ctx.needs_input_grad
    return (_pointwise(_mul, grad, ctx.saved_graph("tensor")) if needs[0] else None,
            _pointwise(_mul, grad, ctx.saved_graph("self")) if needs[1] else None)


RULES = {
    "ViewBackward0": _reshape_back, "ReshapeAliasBackward0": _reshape_back, "UnsafeViewBackward0": _reshape_back,
    "SqueezeBackward0": _squeezed_back, "SqueezeBackward1": _squeezed_back, "UnsqueezeBackward0": _unsqueeze, "ExpandBackward0": _expand,
    "DotBackward0": _dot,
    "MmBackward0": _mm, "MvBackward0": _mv, "TBackward0": _t, "TransposeBackward0": _transpose,
    "AddBackward0": _add, "SubBackward0": _sub, "MulBackward0": _mul_rule, "DivBackward0": _div_rule,
    "NegBackward0": _neg, "SinBackward0": _sin, "CosBackward0": _cos, "ExpBackward0": _times_result,
    "LogBackward0": _log, "SqrtBackward0": _sqrt, "AbsBackward0": _abs, "PowBackward0": _pow, "ReluBackward0": _relu, "SigmoidBackward0": _sigmoid,
    "MulBackward1": _mul_number,
    "SumBackward0": _sum_all, "SumBackward1": _sum_dims, "MeanBackward0": _mean_all, "MeanBackward1": _mean_dims,
}
LOOPED = ("TanhBackward0", "MseLossBackward0")  # no batching rule in PyTorch: its fallback loop
AS_IS = ("DivBackward1", "AddBackward1", "RsubBackward1", "CloneBackward0")  # their recorded form is already batch-safe


# -- the pass ------------------------------------------------------------------------------------------------------
def _nodes_on_the_way(outputs, inputs) -> set:
    """The nodes a pass from ``outputs`` to ``inputs`` runs: those with a path to an input's edge (walked
    without recursion: a graph may be a long chain)."""
    from gradviz.autograd.function import gradient_edge

    edges = [gradient_edge(t) for t in inputs]
    targets = {(id(node), number) for node, number in edges}
    stops = {id(node) for node, _ in edges}
    reaches: dict = {}  # id(node) -> whether it has a path to an input's edge
    nodes: dict = {}
    for output in outputs:
        root = output.grad_fn
        if root is None or id(root) in stops or id(root) in reaches:
            continue
        stack = [(root, iter(root.next_functions))]
        reaches[id(root)] = False
        nodes[id(root)] = root
        while stack:
            node, children = stack[-1]
            for child, number in children:
                if child is None:
                    continue
                if (id(child), number) in targets:
                    reaches[id(node)] = True
                if id(child) in stops:
                    continue
                if id(child) not in reaches:
                    reaches[id(child)] = False
                    nodes[id(child)] = child
                    stack.append((child, iter(child.next_functions)))
                    break
                if reaches[id(child)]:
                    reaches[id(node)] = True
            else:
                stack.pop()
                if stack and reaches[id(node)]:
                    reaches[id(stack[-1][0])] = True
    return {nodes[key] for key, found in reaches.items() if found}


def vmapped_pass(outputs, inputs, rows, retain_graph):
    """One ``create_graph`` pass with the gradients batched, or None where a node has no rule (the caller
    then runs one pass per row). Results are the batched gradients (None for an unused input)."""
    if not all(t.requires_grad for t in list(outputs) + list(inputs)):
        return None  # the per-row passes raise PyTorch's errors
    nodes = _nodes_on_the_way(outputs, inputs)
    classes = {type(node) for node in nodes}
    if not classes or any(not cls.__module__.startswith("gradviz.ops.") or
                          (cls.__name__ not in RULES and cls.__name__ not in LOOPED + AS_IS) for cls in classes):
        return None
    classes = {cls for cls in classes if cls.__name__ not in AS_IS}
    missing = object()
    patched = {}
    for cls in classes:
        patched[cls] = cls.__dict__.get("backward_graph", missing)
        name = cls.__name__
        cls.backward_graph = RULES[name] if name in RULES else _looped(cls.backward_graph)
    try:
        from gradviz.autograd.function import gradient_edge

        # the engine's ``grad`` checks each gradient's shape against its output's: the task is made here
        task = engine.GraphTask([gradient_edge(t) for t in outputs], list(rows), keep_graph=True, create_graph=True)
        task.init_to_execute([gradient_edge(t) for t in inputs], accumulate_grad=False)
        task.execute()
        results = list(task.captured_vars)
    except NotBatchable:
        return None
    finally:
        for cls, original in patched.items():
            if original is missing:
                delattr(cls, "backward_graph")
            else:
                cls.backward_graph = original
    if retain_graph is False:  # the graph was kept for a fallback that did not come: free it now
        for node in nodes:
            node._release_variables()
    return results
