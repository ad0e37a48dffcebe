"""``torch.autograd.Function``: the class users subclass to write their own op.

As in PyTorch, a subclass declares two static methods, ``forward(ctx, *args)`` and
``backward(ctx, *grads)`` (or ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``),
and is called through ``MyOp.apply(*args)``. Each subclass gets a node class named after it,
``MyOpBackward``; one instance is made per call and is both the ``ctx`` that forward and backward
see and the output's ``grad_fn``, exactly PyTorch's arrangement (its ``BackwardCFunction``)::

    class MyReLU(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return grad * (x > 0).float()

The engine calls ``node.backward(*arrays)`` on the fast path and ``node.backward_graph(*tensors)``
under ``create_graph=True``; both run the user's ``backward`` on Tensors and check what it
returns with PyTorch's messages (count, position, shape).
"""
from __future__ import annotations

import functools

from gradviz.autograd.function import _FORWARD_AD  # forward-mode AD's flag (autograd/forward_ad.py)
from gradviz.autograd.anomaly_mode import STATE as _ANOMALY, store_stack as _store_stack  # anomaly mode
from gradviz.autograd.node import Node, SavedTensor
from gradviz.grad_mode import _state as _grad_state

ONCE_DIFFERENTIABLE_MESSAGE = "trying to differentiate twice a function that was marked with @once_differentiable"


class FunctionCtx:
    """What forward may tell backward: tensors to save, outputs changed in place or not differentiable."""

    _to_save = ()
    _dirty = ()
    _non_differentiable = ()
    materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors (or None) for backward; read them back with ``ctx.saved_tensors``."""
        for index, tensor in enumerate(tensors):
            if tensor is not None and not isinstance(tensor, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {index} is of type "
                                f"{type(tensor).__name__}")
        self._to_save = tensors

    def mark_dirty(self, *tensors) -> None:
        """Say that forward changed these inputs in place (and returns them)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Say that these outputs have no gradient (indices, masks): they will not require grad."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward receives None (not zeros) for an output no gradient reached."""
        self.materialize_grads = bool(value)

    # -- forward-mode AD (autograd/forward_ad.py) --
    _to_save_for_forward = ()

    def save_for_forward(self, *tensors) -> None:
        """Keep tensors (or None) for ``jvp``, which reads them back with ``ctx.saved_tensors``."""
        for index, tensor in enumerate(tensors):
            if tensor is not None and not isinstance(tensor, Tensor):
                raise TypeError(f"save_for_forward expects all arguments to be tensors; but got type "
                                f"{type(tensor)} at position {index}.")
        self._to_save_for_forward = tensors
    # -- end forward-mode AD


class BackwardCFunction(FunctionCtx, Node):
    """The node of one call of a user's Function (``MyReLUBackward``): also its ``ctx``."""

    _forward_cls = None
    _runs_user_code = True  # the engine runs its backward under the user's own numpy settings
    _saved = None  # SavedTensor records (or None), once forward has returned
    needs_input_grad = ()

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<torch.autograd.function.{type(self).__name__} object at {id(self):#x}>"

    # -- saved tensors --------------------------------------------------------------------------
    @property
    def saved_tensors(self) -> tuple:
        if self._saved is None:
            return tuple(self._to_save)  # read inside forward, before anything was packed
        return tuple(None if entry is None else _unpack(entry, self, number)
                     for entry, number in zip(self._saved, self._output_nrs_of_saved))

    saved_variables = saved_tensors

    def saved_entries(self) -> tuple:
        """For the graph snapshot: ``("saved_tensors[i]", SavedTensor)`` pairs."""
        return tuple((f"saved_tensors[{i}]", entry) for i, entry in enumerate(self._saved or ()) if entry is not None)

    def _release_variables(self) -> None:
        for entry in self._saved or ():
            if entry is not None:
                entry.free()

    # -- the engine's two entry points ------------------------------------------------------------
    def backward(self, *grad_arrays):
        """The fast path: arrays in, arrays out (grad mode is off, as the engine runs it)."""
        grads = tuple(None if g is None else Tensor._make(g) for g in grad_arrays)
        results = self._call_backward(grads)
        return tuple(None if r is None else r._data for r in results)

    def backward_graph(self, *grads):
        """``create_graph=True``: Tensors in, Tensors out, recorded like any other code."""
        return self._call_backward(grads)

    def _call_backward(self, grads) -> tuple:
        """Run the user's backward and check its answer as PyTorch's ``PyNode::apply`` does."""
        if self.materialize_grads:
            grads = tuple(_zeros(meta) if g is None else g for g, meta in zip(grads, self._output_meta))
        results = self._forward_cls.backward(self, *grads)
        results = results if isinstance(results, tuple) else (results,)
        expected = len(self._inputs_meta)
        if len(results) > expected and all(r is None for r in results[expected:]):
            results = results[:expected]
        if len(results) != expected:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {expected}, got {len(results)})")
        gradients = []
        for position, (result, meta) in enumerate(zip(results, self._inputs_meta)):
            if meta is None:  # a non-tensor argument
                if result is not None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                       f"{position + 1}, but the corresponding forward input was not a Variable")
                continue
            if result is not None and self._tensor_needs[len(gradients)]:
                result = _fit(result, meta, len(gradients), self.name())
            gradients.append(result)
        # as PyTorch's PyNode: a gradient for an input that needs none is kept (it goes nowhere, since that input
        # has no edge, but a post-hook sees it: a module's full backward hook gets it in grad_input)
        return tuple(gradients)


def _unpack(entry: SavedTensor, node, output_nr) -> Tensor:
    data = entry.unpack()  # raises PyTorch's errors once freed or modified in place
    if entry.tensor is not None:
        return entry.tensor  # a saved input: the tensor itself, so a recorded backward reaches its leaf
    tensor = Tensor._make(data, True, node if entry.is_output else None)
    tensor._output_nr = output_nr or 0  # a saved second output leads back to the node's second slot
    return tensor


def _zeros(meta):
    shape, dtype, backend, device = meta
    return Tensor._make(backend.full(shape, 0, dtype, device), backend=backend)


def _fit(grad, meta, index: int, name: str):
    """A gradient with the input's shape: summed over broadcast dims, or PyTorch's error."""
    shape = meta[0]
    if tuple(grad.shape) == shape:
        return grad
    if not _expandable(shape, tuple(grad.shape)):
        raise RuntimeError(f"Function {name} returned an invalid gradient at index {index} - got "
                           f"{list(grad.shape)} but expected shape compatible with {list(shape)}")
    from gradviz.ops._util import sum_to_tensor

    return sum_to_tensor(grad, shape)


def _expandable(shape: tuple, target: tuple) -> bool:
    if len(shape) > len(target):
        return False
    return all(size == other or size == 1 for size, other in zip(reversed(shape), reversed(target)))


def _meta(tensor) -> tuple:
    return tuple(tensor.shape), tensor.dtype, tensor._backend, tensor.device


class _FunctionMeta(type):
    """Gives each user subclass its own node class, named as PyTorch names it: ``<Name>Backward``."""

    def __init__(cls, name, bases, namespace):
        super().__init__(name, bases, namespace)
        if cls.__module__.startswith("gradviz.ops"):
            raise TypeError(f"{name}: built-in ops subclass gradviz.autograd.function.OpFunction, not Function")
        cls._backward_cls = type(f"{name}Backward", (BackwardCFunction,), {"_forward_cls": cls})


class Function(FunctionCtx, metaclass=_FunctionMeta):
    """PyTorch's ``torch.autograd.Function``: subclass it with static ``forward`` and ``backward``."""

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward without recording inside it, then record one node for the whole call."""
        if _FORWARD_AD[0] is not None:  # forward-mode AD: forward as usual, then the user's jvp (forward_ad.py)
            from gradviz.autograd.forward_ad import apply_custom

            return apply_custom(cls, args, kwargs)
        return cls._apply_with(cls._backward_cls(), args, kwargs)

    @classmethod
    def _apply_with(cls, node, args, kwargs):
        """``apply`` with its node (the ``ctx``) made by the caller."""
        is_tensor = [isinstance(arg, Tensor) for arg in args]
        needs = tuple(t and arg.requires_grad for t, arg in zip(is_tensor, args))
        record = _grad_state.enabled and any(needs)
        node.needs_input_grad = needs
        previous = _grad_state.enabled
        _grad_state.enabled = False
        try:
            if cls.setup_context is Function.setup_context:
                output = cls.forward(node, *args, **kwargs)
            else:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, output)
        finally:
            _grad_state.enabled = previous
        if not record:
            return output
        return _record(node, args, is_tensor, needs, output)


def _record(node, args, is_tensor, needs, output):
    """Make ``node`` the grad_fn of forward's tensor outputs (PyTorch's ``_wrap_outputs``)."""
    from gradviz.autograd.function import NO_EDGE, gradient_edge

    node._next_functions = tuple(gradient_edge(arg) if need else NO_EDGE
                                 for arg, tensor, need in zip(args, is_tensor, needs) if tensor)
    node._tensor_needs = tuple(need for need, tensor in zip(needs, is_tensor) if tensor)
    node._inputs_meta = tuple(_meta(arg) if tensor else None for arg, tensor in zip(args, is_tensor))
    order = _grad_state.backward_order
    if order:
        node._order = order
    if _ANOMALY.enabled:  # anomaly mode: the forward traceback (autograd/anomaly_mode.py)
        _store_stack(node)
    single = not isinstance(output, tuple)
    outputs = (output,) if single else output
    dirty = node._dirty
    for tensor in dirty:
        if tensor.is_leaf and tensor.requires_grad:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
    wrapped, metas = [], []
    for value in outputs:
        if not isinstance(value, Tensor):
            wrapped.append(value)
            continue
        output_nr = len(metas)
        metas.append(_meta(value))
        if any(value is d for d in node._non_differentiable):
            wrapped.append(value)
            continue
        if any(value is arg for arg in args) and not any(value is d for d in dirty):
            value = _alias(value)  # an input returned as is: PyTorch returns a view of it
        value._grad_fn, value._requires_grad, value._output_nr = node, True, output_nr  # a dirty input is rebased
        if any(value is d for d in dirty):
            value._vc[0] += 1  # PyTorch counts marking it dirty as one more change
        wrapped.append(value)
    node._num_outputs = len(metas)
    node._output_meta = tuple(metas)
    node._saved = tuple(None if t is None else SavedTensor(t, is_output=any(t is o for o in wrapped))
                        for t in node._to_save)
    node._output_nrs_of_saved = tuple(next((o._output_nr for o in wrapped if t is not None and t is o), None)
                                   for t in node._to_save)
    node._to_save = ()
    return wrapped[0] if single else tuple(wrapped)


def custom_view_in_place_message(view) -> str:
    """PyTorch's error for changing in place a view that a custom Function returned (an input returned as is)."""
    return (f"Output {view._output_nr} of {view._grad_fn._forward_cls.__name__} is a view and is being modified "
            "inplace. This view was created inside a custom Function (or because an input was returned as-is) and "
            "the autograd logic to handle view+inplace would override the custom backward associated with the "
            "custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by "
            "cloning the output of the custom Function.")


def _alias(tensor) -> Tensor:
    """A new tensor on the same memory, whose base is ``tensor`` (PyTorch returns a view)."""
    alias = Tensor._make(tensor._data, backend=tensor._backend, version=tensor._vc)
    alias._base = tensor if tensor._base is None else tensor._base
    alias._attr_version = tensor._vc[0]
    alias._view_no_grad = False
    return alias


class _DelayedError(Node):
    """PyTorch's ``Error`` node: what a ``@once_differentiable`` backward's outputs hang from when
    the backward pass is recorded; differentiating through it raises."""

    def __init__(self, leaves):
        super().__init__()
        self._next_functions = tuple((leaf._grad_accumulator(), 0) for leaf in leaves)
        self._num_outputs = len(leaves)

    def name(self) -> str:
        return "torch::autograd::Error"

    def __repr__(self) -> str:
        return f"<Error object at {id(self):#x}>"

    def backward(self, *grads):
        raise RuntimeError(ONCE_DIFFERENTIABLE_MESSAGE)

    backward_graph = backward


def once_differentiable(backward):
    """Run ``backward`` without recording; under ``create_graph`` its results can't be differentiated again."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        previous = _grad_state.enabled
        _grad_state.enabled = False
        try:
            outputs = backward(ctx, *grads)
        finally:
            _grad_state.enabled = previous
        if not previous or not any(isinstance(g, Tensor) and g.requires_grad for g in grads):
            return outputs
        single = not isinstance(outputs, tuple)
        outputs = (outputs,) if single else outputs
        leaves = [None if out is None else Tensor._make(out._data, True, backend=out._backend) for out in outputs]
        error = _DelayedError([leaf for leaf in leaves if leaf is not None])
        results, slot = [], 0
        for leaf in leaves:
            if leaf is None:
                results.append(None)
                continue
            results.append(Tensor._make(leaf._data, True, error, leaf._backend))
            results[-1]._output_nr = slot
            slot += 1
        return results[0] if single else tuple(results)

    return wrapper


from gradviz.tensor import Tensor  # noqa: E402  (tensor.py imports the ops that import this package)
