"""In-place ops and views: the new value goes into the tensor's memory, the history is rewritten.

A view (``x[0]``, ``x.t()``, ``x.view(6)`` ...) shares its base's memory and version counter, so
an in-place op on either is seen by both. PyTorch then rewrites autograd's history:

* in place on a tensor that is not a view: the op's node becomes the tensor's ``grad_fn``
  (``y.exp_()`` makes ExpBackward0 ``y``'s grad_fn);
* in place on a view: the *base* gets a ``CopySlices`` node, which runs the op's backward on the
  view's part of the gradient and passes the rest through untouched; the view itself gets a
  fresh grad_fn reading its part of the base's (``AsStridedBackward0``);
* any other view of a base changed in place gets that fresh ``AsStridedBackward0`` when its
  grad_fn is next looked at (``Tensor.grad_fn`` calls ``view_grad_fn``).

An op that needs its input's old value saves a copy of it (PyTorch's ``original_self``), since
the tensor's memory now holds the new value.
"""
from __future__ import annotations

import weakref

from gradviz import _dtype
from gradviz.autograd.function import OpFunction, gradient_edge
from gradviz.autograd.function import _FORWARD_AD  # forward-mode AD's flag (autograd/forward_ad.py)
from gradviz.autograd.node import FREED_MESSAGE, SavedTensor
from gradviz import grad_mode
from gradviz.grad_mode import _state as _grad_state
from gradviz.tensor import LEAF_IN_PLACE, VIEW_OF_LEAF_IN_PLACE, Tensor

NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use "
    "case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the "
    "inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside "
    "(if you want the inplace to be tracked)."
)
NO_GRAD_VIEW_OF_CHANGED_BASE = (
    "A view was created in no_grad mode and its base or another view of its base has been modified inplace with "
    "grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
    "code by moving both the view and the inplace either both inside the no_grad block (if you don't want the "
    "inplace to be tracked) or both outside (if you want the inplace to be tracked)."
)
OVERLAPPING_WRITE = (
    "unsupported operation: more than one element of the written-to tensor refers to a single memory location. "
    "Please clone() the tensor before performing the operation."
)


# -- checks, in PyTorch's order ----------------------------------------------------------------------
def records(tensor: Tensor, *others) -> bool:
    """Whether an in-place op on ``tensor`` with ``others`` is recorded (grad mode on, a grad needed)."""
    if _FORWARD_AD[0] is not None:  # forward-mode AD: a dual tensor takes apply_'s path, which moves its tangent
        from gradviz.autograd.forward_ad import _tangent_of

        if any(_tangent_of(value) is not None for value in (tensor, *others)):
            return True
    if not _grad_state.enabled:
        return False
    return tensor.requires_grad or any(isinstance(other, Tensor) and other.requires_grad for other in others)


def check_in_place(tensor: Tensor) -> None:
    """PyTorch's ``check_inplace``: a leaf that requires grad, or a view of one, may not change."""
    if tensor._base is not None:
        if tensor._grad_fn is not None and tensor._grad_fn._runs_user_code:  # a custom Function's view output
            from gradviz.autograd.custom_function import custom_view_in_place_message

            raise RuntimeError(custom_view_in_place_message(tensor))
        if tensor._view_no_grad:
            raise RuntimeError(NO_GRAD_VIEW)
        if tensor.requires_grad and tensor._base.grad_fn is None:
            raise RuntimeError(VIEW_OF_LEAF_IN_PLACE)
    if tensor.requires_grad and tensor.grad_fn is None:
        raise RuntimeError(LEAF_IN_PLACE)


def check_writable(tensor: Tensor) -> None:
    """An expanded view repeats elements in memory: writing to it is refused, as in PyTorch; so is writing
    to an inference tensor outside inference mode."""
    if grad_mode.inference_tensors:
        grad_mode.check_not_inference(tensor, grad_mode.INFERENCE_IN_PLACE)
    if tensor._backend.overlaps_itself(tensor._data):
        raise RuntimeError(OVERLAPPING_WRITE)


def check_castable(result_dtype, target_dtype) -> None:
    """An in-place result must fit the tensor's dtype (a float result cannot go into an int tensor)."""
    if _dtype.category(result_dtype) > _dtype.category(target_dtype):
        names = _dtype.SCALAR_TYPE_NAMES
        raise RuntimeError(f"result type {names[result_dtype.name]} can't be cast to the desired output type "
                           f"{names[target_dtype.name]}")


# -- the in-place driver ---------------------------------------------------------------------------------
def apply_(tensor: Tensor, function, *args, **params) -> Tensor:
    """Run the out-of-place ``function(tensor, *args)`` as its in-place variant on ``tensor``.

    The result is written into ``tensor``'s own memory (so its views and its base see it), the
    version counter moves on, and when the op was recorded its node becomes the history.
    """
    recorded = records(tensor, *args)
    if recorded and _grad_state.enabled:  # (a dual tensor under no_grad is written as freely as any tensor)
        check_in_place(tensor)
    check_writable(tensor)
    result = function(tensor, *args, **params)
    check_castable(result.dtype, tensor.dtype)
    node = result._grad_fn if recorded else None
    if node is not None:
        _keep_original_self(node, tensor)
    backend = tensor._backend
    values = result._data if result._data.dtype == tensor._data.dtype else backend.astype(result._data, tensor.dtype)
    backend.assign(tensor._data, values)
    tensor._vc[0] += 1
    if node is not None:
        rebase_history(tensor, node)
        _save_self_as_result(node, result, tensor)
    if _FORWARD_AD[0] is not None:  # forward-mode AD: the tensor takes the tangent of what was written
        from gradviz.autograd.forward_ad import after_in_place

        after_in_place(tensor, result)
    return tensor


def in_place(function, name: str):
    """The in-place Tensor method (``cos_``) of an out-of-place op (``cos``)."""

    def method(self, *args, **params):
        return apply_(self, function, *args, **params)

    method.__name__ = name
    method.__doc__ = f"``{name[:-1]}`` written into this tensor's memory (PyTorch's in-place ``{name}``)."
    return method


def _keep_original_self(node, tensor: Tensor) -> None:
    """The node saved ``self`` by reference; the memory is about to change, so save a copy instead.

    PyTorch saves ``original_self = self.clone()`` for in-place ops whose derivative reads the old
    value (``cos_``, ``mul_``, ``pow_``): the copy is version 0 of a new tensor, made by a
    CloneBackward0.
    """
    entry = (node._packed or {}).get("self")
    if not isinstance(entry, SavedTensor) or entry.data is not tensor._data:
        return
    from gradviz.ops.conversion import CloneBackward0

    original = Tensor._make(tensor._backend.copy(tensor._data), backend=tensor._backend)
    if tensor.requires_grad:
        clone = CloneBackward0()
        clone.backend = tensor._backend
        clone.needs_input_grad = (True,)
        clone._next_functions = (gradient_edge(tensor),)
        original._requires_grad, original._grad_fn = True, clone
    node._packed["self"] = SavedTensor(original)


def _save_self_as_result(node, result: Tensor, tensor: Tensor) -> None:
    """A node that saved its output (``exp_`` saves ``result``) now refers to the changed tensor."""
    for name, entry in (node._packed or {}).items():
        if isinstance(entry, SavedTensor) and entry.is_output and entry.data is result._data:
            saved = node._packed[name] = SavedTensor(tensor, is_output=True)
            saved.grad_fn_ref = weakref.ref(node)  # the op that made it, even when a view's grad_fn moved on


def rebase_history(tensor: Tensor, node) -> None:
    """Make ``node`` the history of ``tensor``, or, for a view, CopySlices the history of its base."""
    base = tensor._base
    if base is None:
        _set_history(tensor, node, 0)
        return
    _set_history(base, CopySlices.wrap(base, tensor, node), 0)
    tensor._attr_version = -1
    tensor.grad_fn  # noqa: B018 - PyTorch makes the view's new grad_fn right away (AsStridedBackward0)


def _set_history(tensor: Tensor, node, output_nr: int) -> None:
    """Point ``tensor`` at ``node``; a ``retain_grad()`` hook moves along (other hooks stay behind)."""
    old = tensor._grad_fn
    tensor._grad_fn = node
    tensor._output_nr = output_nr
    tensor._requires_grad = True
    if tensor._retains_grad and old is not None and old._retain_grad_hooks:
        hook = old._retain_grad_hooks.pop(0, None)
        if hook is not None:
            if node._retain_grad_hooks is None:
                node._retain_grad_hooks = {}
            node._retain_grad_hooks[output_nr] = hook


def view_grad_fn(view: Tensor):
    """The grad_fn of a view whose memory changed in place since its grad_fn was made."""
    base = view._base
    if view._grad_fn is None and not base._requires_grad:
        return None
    if view._view_no_grad:
        raise RuntimeError(NO_GRAD_VIEW_OF_CHANGED_BASE)
    _set_history(view, AsStridedBackward0.of_view(view), 0)
    view._attr_version = view._vc[0]
    return view._grad_fn


# -- the two nodes ------------------------------------------------------------------------------------------
def _memory_length(*geometries) -> int:
    """How many elements of memory hold every element of these ``(sizes, strides, offset)`` views."""
    end = 0
    for sizes, strides, offset in geometries:
        if all(sizes):
            end = max(end, offset + sum((size - 1) * stride for size, stride in zip(sizes, strides)) + 1)
    return end


def _may_overlap(sizes, strides) -> bool:
    """PyTorch's ``_maybe_overlapping_memory``: with dims sorted by stride, each stride must pass the
    largest offset reachable in the dims below it (size-1 dims already left out)."""
    reach = 0
    for size, stride in sorted(zip(sizes, strides), key=lambda pair: pair[1]):
        if stride <= reach:
            return True
        reach += stride * (size - 1)
    return False


class AsStridedBackward0(OpFunction):
    """A view read from its base's memory: the base's gradient is zero except where the view lies.

    PyTorch gives this node to a view whose base (or another view of the base) changed in place:
    ``size``, ``stride`` and ``storage_offset`` say which elements of the base's memory the view reads.
    """

    inputs = ("self",)
    derivatives = {"self": ("as_strided_backward(grad, TensorGeometry(self), size, stride, storage_offset)",
                            r"\bar{y}\ \mathrm{at\ the\ view's\ elements},\ 0\ \mathrm{elsewhere}")}

    @classmethod
    def of_view(cls, view: Tensor) -> AsStridedBackward0:
        base = view._base
        backend = base._backend
        node = cls()
        node.backend = backend
        node.needs_input_grad = (True,)
        node._next_functions = (gradient_edge(base),)
        sizes, strides, offset = backend.geometry(view._data, base._data)
        node.save(size=sizes, stride=strides, storage_offset=offset)
        node.base_geometry = (tuple(base._data.shape), backend.strides(base._data), 0)
        return node

    def forward(ctx, self, sizes, strides, offset, memory=None, saved_offset=0):
        """``self.as_strided(sizes, strides, offset)`` called as an op (CopySlices' recorded backward does).
        ``memory``: the base whose storage a view ``self`` reads (``offset`` counts from that storage's start,
        and ``self``'s own place in it is its geometry); ``saved_offset``: the offset as given (None when not)."""
        backend = self._backend
        ctx.save(size=tuple(sizes), stride=tuple(strides), storage_offset=offset if saved_offset == 0 else saved_offset)
        if memory is None:
            ctx.base_geometry = (tuple(self._data.shape), backend.strides(self._data), 0)
            return backend.as_strided(self._data, sizes, strides, offset)
        ctx.base_geometry = backend.geometry(self._data, memory._data)
        return backend.as_strided(memory._data, sizes, strides, offset)

    def backward(ctx, grad):
        backend = ctx.backend
        view_geometry = ctx.saved("size", "stride", "storage_offset")
        if view_geometry[2] is None:  # not given: the input's own offset
            view_geometry = (view_geometry[0], view_geometry[1], ctx.base_geometry[2])
        memory = backend.full((_memory_length(ctx.base_geometry, view_geometry),), 0, _dtype.from_any(grad.dtype),
                              backend.device_of(grad))
        backend.index_add(memory, backend.strided_indices(*view_geometry, grad), grad)
        read = backend.strided_indices(*ctx.base_geometry, grad)
        sizes, strides, _ = ctx.base_geometry
        kept = [(size, stride) for size, stride in zip(sizes, strides) if size != 1]
        if _may_overlap([size for size, _ in kept], [stride for _, stride in kept]):
            # an input that reads a position more than once (a view of an expanded tensor): each read gets
            # its share, as PyTorch divides the storage by the count
            count = backend.full(tuple(memory.shape), 0, _dtype.from_any(grad.dtype), backend.device_of(grad))
            backend.index_add(count, read, backend.full(tuple(read.shape), 1, _dtype.from_any(grad.dtype),
                                                        backend.device_of(grad)))
            memory = backend.div(memory, count)
        return backend.getitem(memory, read)

    def backward_graph(ctx, grad):
        """PyTorch's ``as_strided_backward`` where neither geometry overlaps itself: size-1 dims of the view
        squeezed out of ``grad`` and expanded (stride 0) ones summed, last dim first; ``grad`` copied into a
        zero storage through the view's geometry (a CopySlices), which is read back as the input
        (AsStridedBackward0). Where the view reads a position more than once its gradients are added there
        (``index_add_``); where the input does, the storage is divided by how often (``div_``), as PyTorch."""
        sizes, strides, offset = ctx.saved("size", "stride", "storage_offset")
        base_sizes, base_strides, base_offset = ctx.base_geometry
        if offset is None:  # not given: the input's own offset
            offset = base_offset
        shared = min(offset, base_offset)  # as PyTorch, the storage starts where either geometry does
        offset, base_offset = offset - shared, base_offset - shared
        backend = ctx.backend
        if 0 in sizes or 0 in base_sizes:  # nothing was read: zeros, with no graph
            return Tensor._make(backend.full(base_sizes, 0, grad.dtype, grad.device), backend=backend)
        out_sizes, out_strides = [], []
        for dim in reversed(range(len(sizes))):
            if sizes[dim] == 1:
                grad = grad.squeeze(dim)
            elif strides[dim] == 0:
                grad = grad.sum(dim, keepdim=False)
            else:
                out_sizes.insert(0, sizes[dim])
                out_strides.insert(0, strides[dim])
        kept = [(size, stride) for size, stride in zip(base_sizes, base_strides) if size != 1]
        kept_sizes, kept_strides = [size for size, _ in kept], [stride for _, stride in kept]
        out_overlaps, input_overlaps = _may_overlap(out_sizes, out_strides), _may_overlap(kept_sizes, kept_strides)
        length = max(_memory_length((out_sizes, out_strides, offset)),
                     _memory_length((base_sizes, base_strides, base_offset)))
        storage = Tensor._make(backend.full((length,), 0, grad.dtype, grad.device), backend=backend)
        if out_overlaps or input_overlaps:  # every storage position's number, to add into it by index
            positions = Tensor._make(backend.array(list(range(length)), _dtype.int64, grad.device), backend=backend)
        if out_overlaps:  # a position read more than once gets the sum of those gradients
            storage.index_add_(0, as_strided(positions, out_sizes, out_strides, offset).reshape(-1), grad.reshape(-1))
        else:
            as_strided(storage, out_sizes, out_strides, offset).copy_(grad)
        if input_overlaps:  # divided by the number of times the input reads each position (nan where none)
            count = Tensor._make(backend.full((length,), 0, grad.dtype, grad.device), backend=backend)
            read = as_strided(positions, kept_sizes, kept_strides, base_offset).reshape(-1)
            count.index_add_(0, read, Tensor._make(backend.full((1,), 1, grad.dtype, grad.device),
                                                   backend=backend).expand_as(read))
            storage.div_(count)
        return as_strided(storage, base_sizes, base_strides, base_offset)


class CopySlices(OpFunction):
    """The history of a base after an in-place op on one of its views (``b[0] = 5``, ``b[:2].mul_(3)``).

    It wraps the op's node: backward hands the op's backward the view's part of the gradient and
    writes the gradient for the view's old value back in its place; the rest of the base's
    gradient passes through unchanged. Its inputs are the base's old history, then the op's other
    inputs (``next_functions`` as PyTorch builds them).
    """

    inputs = ("self", "other")
    derivatives = {"self": ("result = grad.clone(); result[view] = fn.backward(grad[view])[0]",
                            r"\bar{y}\ \mathrm{outside\ the\ view};\ \mathrm{the\ op's\ gradient\ inside}"),
                   "other": ("fn.backward(grad[view])[i]", r"\mathrm{the\ op's\ gradient\ for\ its\ other\ inputs}")}
    qualified_name = "torch::autograd::CopySlices"

    def name(self) -> str:
        return self.qualified_name

    @classmethod
    def wrap(cls, base: Tensor, view: Tensor, fn) -> CopySlices:
        backend = base._backend
        node = cls()
        node.backend = backend
        node.fn = fn
        node.needs_input_grad = (base.requires_grad,) + tuple(fn.needs_input_grad[1:])
        node._next_functions = (gradient_edge(base) if base.requires_grad else (None, 0),) + fn._next_functions[1:]
        node.base_geometry = (tuple(base._data.shape), backend.strides(base._data), 0)
        node.view_geometry = backend.geometry(view._data, base._data)
        return node

    def backward(ctx, grad):
        if ctx.fn is None:
            raise RuntimeError(FREED_MESSAGE)
        backend = ctx.backend
        base_positions = backend.strided_indices(*ctx.base_geometry, grad)
        view_positions = backend.strided_indices(*ctx.view_geometry, grad)
        memory = backend.full((_memory_length(ctx.base_geometry, ctx.view_geometry),), 0,
                              _dtype.from_any(grad.dtype), backend.device_of(grad))
        backend.assign(memory, grad, base_positions)
        grads = ctx.fn.backward(backend.getitem(memory, view_positions))
        grads = grads if isinstance(grads, tuple) else (grads,)
        if grads[0] is None:
            return (None,) + grads[1:]
        backend.assign(memory, grads[0], view_positions)
        return (backend.getitem(memory, base_positions),) + grads[1:]

    def backward_graph(ctx, grad):
        """PyTorch's ``CopySlices::apply`` with grad mode on: ``grad`` copied into a new tensor laid out as
        the base (CopyBackwards), the view read from it (AsStridedBackward0), a contiguous clone of that
        handed to the op's recorded backward, whose gradient for the view is copied back into it (a
        CopySlices of its own). The op's other inputs get its other gradients."""
        if ctx.fn is None:
            raise RuntimeError(FREED_MESSAGE)
        from gradviz.ops.conversion import CONTIGUOUS_FORMAT, clone

        backend = ctx.backend
        memory = backend.full((_memory_length(ctx.base_geometry, ctx.view_geometry),), 0, grad.dtype, grad.device)
        result = Tensor._make(backend.as_strided(memory, *ctx.base_geometry), backend=backend)
        result.copy_(grad)
        grad_slice = as_strided(result, *ctx.view_geometry)
        grads = ctx.fn.backward_graph(clone(grad_slice, memory_format=CONTIGUOUS_FORMAT))
        grads = grads if isinstance(grads, tuple) else (grads,)
        if grads[0] is None:
            return (None,) + grads[1:]
        grad_slice.copy_(grads[0])
        return (result,) + grads[1:]

    def _release_variables(self) -> None:
        """Let go of the op's node, as PyTorch does (its saved tensors go with it, unless a graph recorded
        by ``create_graph=True`` still holds that node: its saved output's grad_fn)."""
        self.fn = None


def as_strided(input: Tensor, sizes, strides, storage_offset: int) -> Tensor:
    """The view of ``input``'s memory with ``sizes`` and ``strides`` from ``storage_offset`` (AsStridedBackward0)."""
    from gradviz.ops.shape import _view_of

    return _view_of(AsStridedBackward0.apply(input, sizes, strides, storage_offset), input)
