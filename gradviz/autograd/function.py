"""The base of every built-in op (``OpFunction``), and PyTorch's user-facing ``Function``.

An op is one class named as PyTorch names its node (``MulBackward0``)::

    class MulBackward0(OpFunction):
        inputs = ("self", "other")
        derivatives = {"self": ("grad * other", r"\\bar{y} \\cdot b"), ...}

        def forward(ctx, self, other):          # Tensors (or Python numbers) in, an array out
            ctx.save(self=self, other=other)
            return backend.mul(self._data, other._data)

        def backward(ctx, grad):                # an array in, one array per input out
            self, other = ctx.saved("self", "other")
            return grad * other, grad * self

``apply`` runs ``forward`` and, when grad mode is on and an input requires grad, makes the
class's instance the output's ``grad_fn`` (the instance is both PyTorch's ``ctx`` and its node).

``backward`` works on backend arrays (the fast path of every ``loss.backward()``). An op that can
also be differentiated twice declares ``backward_graph(ctx, grad)``: the same derivative written
with gradviz's own ops on Tensors, so that ``create_graph=True`` records the backward pass as an
ordinary graph with PyTorch's node names (``tests/test_higher_order.py`` checks both forms agree).

``Function`` (what users subclass, ``torch.autograd.Function``) lives in ``custom_function.py``
and is exported here under PyTorch's path, ``gradviz.autograd.function.Function``.
"""
from __future__ import annotations

import weakref

import numpy as np

from gradviz import _dtype
from gradviz.backends import numpy_backend
from gradviz._device import CPU
from gradviz.autograd.node import _EXPOSED, _sequence, RELEASED, SAVED_TENSOR_HOOKS, Node, SavedTensor, expose_saved
from gradviz.autograd.anomaly_mode import STATE as _ANOMALY, store_stack as _store_stack  # anomaly mode
from gradviz.grad_mode import _state as _grad_state, INFERENCE_SAVED, check_not_inference, ordering as _ordering
from gradviz.grad_mode import grad_off as _grad_off
from gradviz.grad_mode import inference_tensors as _inference_tensors
from gradviz.grad_mode import _inference_depth


class _NoRecord:
    """The ``ctx`` that forward gets when nothing is recorded: saving is a no-op."""

    needs_input_grad = ()

    def __setattr__(self, name, value):
        pass  # forward may note shapes on ctx; with nothing recorded they are not needed

    def save(ctx, /, **entries):
        pass

    def save_result(self, name: str = "result"):
        pass


_NO_RECORD = _NoRecord()
# -- forward-mode AD ---------------------------------------------------------------------------------------
# While a dual level is active (``forward_ad.dual_level``) this holds the function that runs an op on dual
# tensors (forward_ad._apply_dual: the op as usual, then its output's tangent); None otherwise, so ``apply``
# pays one list read per op. forward_ad sets it back to None while it runs the op itself.
_FORWARD_AD = [None]
# -- end forward-mode AD ----------------------------------------------------------------------------------
NO_EDGE = (None, 0)  # the edge of an input that needs no gradient (one shared tuple)
_NEEDS = {}  # needs_input_grad patterns, (True,), (True, False), ...: each kept once
_NOTHING_NEEDED = ()  # what _NEEDS_BY_KEY gives for inputs none of which needs a gradient
_NEEDS_BY_KEY = {}  # apply's key (a leading 1 bit, then one bit per input, first input first) -> its pattern
_FIRST_OF_TWO = _NEEDS.setdefault((True, False), (True, False))  # the patterns apply tests by identity
_SECOND_OF_TWO = _NEEDS.setdefault((False, True), (False, True))


def _needs_of(key: int) -> tuple:
    """The shared ``needs_input_grad`` tuple that apply's ``key`` names (``_NOTHING_NEEDED`` when no
    input needs a gradient), made and kept the first time that pattern is seen."""
    bits = bin(key)[3:]
    needs = tuple([bit == "1" for bit in bits])
    needs = _NOTHING_NEEDED if True not in needs else _NEEDS.setdefault(needs, needs)
    _NEEDS_BY_KEY[key] = needs
    return needs


class SavedTensors(tuple):
    """A saved sequence of tensors and Nones (``IndexBackward0``'s ``indices``), each checked and
    freed like a single saved tensor."""

    __slots__ = ()

    @classmethod
    def of(cls, values) -> SavedTensors:
        return cls(SavedTensor(value) if isinstance(value, Tensor) else value for value in values)

    def unpack(self) -> tuple:
        return tuple(item.unpack() if type(item) is SavedTensor else item for item in self)

    def free(self) -> None:
        for item in self:
            if type(item) is SavedTensor:
                item.free()


class OpFunction(Node):
    """The base of gradviz's built-in ops (users subclass ``Function``, PyTorch's class)."""

    inputs: tuple = ()
    derivatives: dict = {}
    backend = numpy_backend  # the backend of the op's data; a node on another backend sets its own
    needs_input_grad: tuple = ()
    _result_name = None
    _constants = None  # inputs without grad: a number, or a weak reference to a tensor
    # Inputs that PyTorch saves, when given a Python number, as the 0-d tensor it wraps the number
    # in (``x * 2`` saves ``tensor(2)``). gradviz saves the number itself, which is all backward
    # needs, and makes that tensor only when ``_saved_<name>`` or a graph snapshot asks for it.
    wrapped_numbers: tuple = ()
    number_device = CPU  # where a wrapped number's tensor lives (an op on CUDA data sets its own)

    # -- used inside forward / backward ----------------------------------------------------
    def save(ctx, /, **entries) -> None:
        """Keep tensors (checked for in-place changes, freed after backward) or plain values."""
        saved = ctx._packed
        if saved is None:
            saved = ctx._packed = entries  # a fresh dict made for this call: kept as it is
        else:
            saved.update(entries)
        for name, value in entries.items():
            if name not in _EXPOSED:
                expose_saved(name)
            if type(value) is Tensor or (value is not None and isinstance(value, Tensor)):
                if _inference_tensors:  # empty unless inference_mode was used
                    check_not_inference(value, INFERENCE_SAVED)
                if SAVED_TENSOR_HOOKS:
                    saved[name] = SavedTensor(value)
                    continue
                entry = saved[name] = _new_object(SavedTensor)  # SavedTensor(value), written out (node.saved_input)
                entry.data = value._data
                version_counter = entry.version_counter = value._vc
                entry.saved_version = version_counter[0]
                entry.is_output = False
                entry._output_name = None
                entry.requires_grad = value._requires_grad
                entry.grad_fn_ref = value._grad_fn if value._base is None else value.grad_fn
                entry.tensor = value
                entry.hooks = None

    def save_result(self, name: str = "result") -> None:
        """Save the op's own output (known only after forward returns) under ``name``."""
        self._result_name = name
        if name not in _EXPOSED:
            expose_saved(name)

    def saved(self, *names):
        """The saved arrays (or values) for ``names``; raises if freed or modified in place."""
        saved = self._packed
        if saved is None:
            from gradviz.autograd.node import FREED_MESSAGE

            raise RuntimeError(FREED_MESSAGE)
        if len(names) == 1:  # the common call, ``ctx.saved("other")``: no list to build
            entry = saved[names[0]]
            if type(entry) is SavedTensor:
                # SavedTensor.unpack's answer when no unpack hook is set, the entry is not
                # freed and its tensor was not changed in place; else unpack itself (and its errors)
                data = entry.data
                if entry.hooks is None and data is not None and entry.version_counter[0] == entry.saved_version:
                    return data
                return entry.unpack()
            return entry.unpack() if type(entry) is SavedTensors else entry
        values = []
        for name in names:
            entry = saved[name]
            if type(entry) is SavedTensor or type(entry) is SavedTensors:
                entry = entry.unpack()
            values.append(entry)
        return values

    def saved_graph(self, *names):
        """The saved tensors for ``names`` as Tensors still joined to the graph (for ``backward_graph``):
        a saved input is the tensor itself, a saved output hangs from this node; numbers stay numbers."""
        values = []
        for name in names:
            entry = self._packed[name] if self._packed is not None else None
            if self._packed is None:
                from gradviz.autograd.node import FREED_MESSAGE

                raise RuntimeError(FREED_MESSAGE)
            if isinstance(entry, SavedTensor):
                data = entry.unpack()
                entry = entry.tensor if entry.tensor is not None else Tensor._make(
                    data, entry.is_output, self if entry.is_output else None, self.backend)
            values.append(entry)
        return values[0] if len(values) == 1 else values

    def backward_graph(self, grad):
        """``create_graph=True`` for an op that declares no recorded form: right only when nothing the
        formula reads requires grad (then the gradient has no graph, as in PyTorch); else a clear error."""
        if grad.requires_grad or self._any_saved_requires_grad():
            raise NotImplementedError(
                f"create_graph=True: gradviz cannot yet record the backward pass of {self.name()} (its derivative "
                "is computed on arrays only). Differentiate this graph once, or use ops whose backward is recorded.")
        results = self.backward(grad._data)
        results = results if type(results) is tuple else (results,)
        return tuple(None if r is None else Tensor._make(r, backend=self.backend) for r in results)

    def _any_saved_requires_grad(self) -> bool:
        for entry in (self._packed or {}).values():
            items = entry if type(entry) is SavedTensors else (entry,)
            if any(type(item) is SavedTensor and (item.requires_grad or item.is_output) for item in items):
                return True
        return False

    # -- saved Python numbers, shown as PyTorch's wrapped 0-d tensors ---------------------------
    def _is_wrapped_number(self, name: str, entry) -> bool:
        return name in self.wrapped_numbers and entry is not None and not isinstance(entry, SavedTensor)

    def _wrapped_tensor(self, number):
        """The 0-d tensor PyTorch wraps a Python number in: float64, int64 or bool."""
        kind = _dtype.scalar_category(number)
        dtype = {_dtype.BOOL: _dtype.bool, _dtype.INT: _dtype.int64, _dtype.FLOAT: _dtype.float64}[kind]
        return Tensor._make(self.backend.full((), number, dtype, self.number_device), backend=self.backend)

    def _unpack_saved(self, name: str):
        entry = self._packed[name]
        if self._is_wrapped_number(name, entry):
            return self._wrapped_tensor(entry)
        if type(entry) is SavedTensors:
            return tuple(_saved_tensor(item) if type(item) is SavedTensor else item for item in entry)
        return super()._unpack_saved(name)

    def saved_entries(self) -> tuple:
        return tuple((name, SavedTensor(self._wrapped_tensor(entry)) if self._is_wrapped_number(name, entry) else entry)
                     for name, entry in super().saved_entries())

    def _release_variables(self) -> None:
        packed = self._packed
        if packed:
            wrapped_numbers = self.wrapped_numbers
            if not wrapped_numbers:  # most ops: only the saved tensors change (no names needed)
                for entry in packed.values():
                    if type(entry) is SavedTensor:
                        entry.data = entry.tensor = entry.hooks = None
                    elif type(entry) is SavedTensors:
                        entry.free()
                return
            for name, entry in packed.items():
                if type(entry) is SavedTensor:  # runs for every saved entry after each backward
                    entry.data = entry.tensor = entry.hooks = None  # SavedTensor.free, written out
                elif type(entry) is SavedTensors:
                    entry.free()
                elif wrapped_numbers and entry is not None and name in wrapped_numbers:
                    packed[name] = RELEASED  # a saved number is freed like a saved tensor (same keys)

    # -- recording -----------------------------------------------------------------------------
    _arity = 0  # len(inputs), kept by __init_subclass__: apply reads it for every op

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._arity = len(cls.inputs)
        inherited = cls.apply
        if getattr(inherited, "__func__", None) is _general_apply or hasattr(inherited, "_lean"):  # not an
            # apply of its own: the lean apply for one or two graph inputs, the general one for any other number
            cls.apply = staticmethod(lean_apply(cls)) if cls._arity in (1, 2) else classmethod(_general_apply)
        # names an op may save straight into ``_packed`` (not through ``ctx.save``): its inputs, its
        # wrapped numbers, the outputs a multi-output op saves
        for name in (*cls.inputs, *cls.wrapped_numbers, *getattr(cls, "saved_outputs", ())):
            expose_saved(name)

    @classmethod
    def apply(cls, *args, **params):
        """Run forward; record a node when grad mode is on and a graph input requires grad.

        The first ``len(cls.inputs)`` positional arguments are the graph inputs (each gets an
        edge); later ones and keywords are parameters such as ``dim``. This is the one path every
        op takes (operators, functions, methods, nn modules), so it is written out as one loop:
        one pass over the inputs finds where each one's gradient goes (``gradient_edge``) and
        which need one, kept as the bits of one int (``key``: a leading 1, then a bit per input)
        that names the shared ``needs_input_grad`` tuple; only then is the node made. A view that
        requires grad takes the general path, ``_record`` (its grad_fn may have to be made, after
        the node, as PyTorch does).
        """
        if _FORWARD_AD[0] is not None:  # forward-mode AD: a dual level is active (autograd/forward_ad.py)
            return _FORWARD_AD[0](cls, args, params)
        if not _grad_off or _grad_state.enabled:  # is_grad_enabled() (read only when some thread has it off)
            edges = []
            key = 1
            for arg in args[:cls._arity]:
                if type(arg) is Tensor or isinstance(arg, Tensor):
                    if arg._base is not None:
                        if arg._requires_grad or arg._base._requires_grad:
                            # a view requires grad when its base does (even one made under no_grad)
                            graph_inputs = args[:cls._arity]
                            needs = tuple([isinstance(a, Tensor) and a.requires_grad for a in graph_inputs])
                            return cls._record(args, params, graph_inputs, _NEEDS.setdefault(needs, needs))
                    elif arg._requires_grad:  # gradient_edge(arg), written out for the two common cases
                        grad_fn = arg._grad_fn
                        if grad_fn is not None:  # an op's output
                            edges.append((grad_fn, arg._output_nr))
                        else:  # a leaf: its AccumulateGrad (one per leaf, held weakly by the tensor)
                            accumulator = arg._accumulator
                            accumulator = accumulator() if accumulator is not None else None
                            edges.append((accumulator if accumulator is not None else arg._grad_accumulator(), 0))
                        key += key + 1
                        continue
                edges.append(NO_EDGE)
                key += key
            needs = _NEEDS_BY_KEY.get(key)
            if needs is None:
                needs = _needs_of(key)
            if needs is not _NOTHING_NEEDED:
                node = _new_object(cls)
                node._sequence_nr = next(_sequence)  # Node.__init__, inlined: one node per recorded op
                node._next_functions = tuple(edges)
                node.needs_input_grad = needs
                if needs is _FIRST_OF_TWO:  # ``w * x``: an input without grad is kept (weakly, if a
                    other = args[1]        # tensor) for the graph view; the two binary cases written out
                    node._constants = (None, _weakref(other) if isinstance(other, Tensor) else other)
                    backend = args[0]._backend
                elif needs is _SECOND_OF_TWO:
                    other = args[0]
                    node._constants = (_weakref(other) if isinstance(other, Tensor) else other, None)
                    backend = args[1]._backend
                elif False in needs:
                    constants = []
                    for arg, need in zip(args, needs):
                        constants.append(None if need else _weakref(arg) if isinstance(arg, Tensor) else arg)
                    node._constants = tuple(constants)
                    backend = args[needs.index(True)]._backend
                else:
                    backend = args[0]._backend
                if backend is not numpy_backend:
                    node.backend = backend
                if _ordering:  # a create_graph backward pass runs (in some thread): its nodes get its order
                    order = _grad_state.backward_order
                    if order:
                        node._order = order
                    if _ANOMALY.enabled:  # anomaly mode puts a mark in ``ordering`` too (autograd/anomaly_mode.py)
                        _store_stack(node)
                out = _new_object(Tensor)  # Tensor._make, written out
                # (``**params`` only when there are any: unpacking an empty dict into the call costs more than the test)
                out._data = data = node.forward(*args, **params) if params else node.forward(*args)
                out._backend = backend
                out._requires_grad = True
                out._grad = None
                out._grad_fn = node
                out._vc = version_counter = [0]
                out._output_nr = 0
                out._accumulator = None
                out._retains_grad = False
                out._base = None
                out._leaf_hooks = None
                name = node._result_name
                if name is not None:
                    _save_output(node, name, out, data, version_counter)
                return out
        data = cls.forward(_NO_RECORD, *args, **params) if params else cls.forward(_NO_RECORD, *args)
        if _inference_depth[0]:  # inference_mode marks what it makes through Tensor._make
            return Tensor._make(data)
        out = _new_object(Tensor)  # Tensor._make(data), written out: every op under no_grad comes here
        out._data = data
        out._backend = numpy_backend if type(data) is _ndarray else _backend_of(data)
        out._requires_grad = False
        out._grad = None
        out._grad_fn = None
        out._vc = [0]
        out._output_nr = 0
        out._accumulator = None
        out._retains_grad = False
        out._base = None
        out._leaf_hooks = None
        return out

    @classmethod
    def _record(cls, args, params, graph_inputs, needs):
        """Run forward with a fresh node as ``ctx`` and make that node the output's ``grad_fn``."""
        node = cls.__new__(cls)
        node._sequence_nr = next(_sequence)  # Node.__init__, inlined: one node per recorded op
        # the edges come first, as in PyTorch: an input with no edge gets no gradient, so forward
        # need not save what that gradient would have needed
        edges = []
        constants = None  # filled only when an input needs no gradient
        backend = None
        for index, arg in enumerate(graph_inputs):
            if needs[index]:
                if backend is None:
                    backend = arg._backend
                if arg._base is None:  # gradient_edge(arg), written out for the two common cases
                    grad_fn = arg._grad_fn
                    if grad_fn is not None:  # an op's output
                        edges.append((grad_fn, arg._output_nr))
                        continue
                    accumulator = arg._accumulator  # a leaf whose AccumulateGrad is alive
                    accumulator = accumulator() if accumulator is not None else None
                    if accumulator is not None:
                        edges.append((accumulator, 0))
                        continue
                edge = gradient_edge(arg)
                edges.append(edge)
                if edge[0] is None:  # a view made under no_grad: it requires grad but has no path
                    needs = needs[:index] + (False,) + needs[index + 1:]
                continue
            edges.append(NO_EDGE)
            if constants is None:
                constants = [None] * len(graph_inputs)
            constants[index] = weakref.ref(arg) if isinstance(arg, Tensor) else arg
        if backend is not numpy_backend:
            node.backend = backend
        node._next_functions = tuple(edges)
        if constants is not None:
            node._constants = tuple(constants)
        node.needs_input_grad = needs
        if _ordering and _grad_state.backward_order:  # recorded by a create_graph backward pass (second order, ...)
            node._order = _grad_state.backward_order
        if _ANOMALY.enabled:  # anomaly mode: the forward traceback (autograd/anomaly_mode.py)
            _store_stack(node)
        out = Tensor._make(node.forward(*args, **params), True, node, backend)
        if node._result_name is not None:
            if node._packed is None:
                node._packed = {}
            node._packed[node._result_name] = SavedTensor(out, is_output=True)
        return out

    def forward(ctx, *args, **params):
        raise NotImplementedError


def _saved_tensor(entry: SavedTensor) -> Tensor:
    """A saved tensor as ``_saved_<name>`` shows it (raises once freed or changed in place)."""
    return Tensor._make(entry.unpack(), requires_grad=entry.requires_grad, grad_fn=entry.grad_fn_ref)


def gradient_edge(tensor) -> tuple:
    """Where a gradient for ``tensor`` must go: its grad_fn, or its leaf's AccumulateGrad."""
    grad_fn = tensor._grad_fn if tensor._base is None else tensor.grad_fn  # a view's may need making
    if grad_fn is not None:
        return (grad_fn, tensor._output_nr)
    if not tensor._requires_grad:  # a view made under no_grad requires grad through its base, but has no path
        return NO_EDGE
    return (tensor._grad_accumulator(), 0)


def _save_output(node, name, out, data, version_counter) -> None:
    """Save an op's output ``out`` under ``name`` (``SavedTensor(out, is_output=True)``, written out unless
    saved-tensor hooks are set), as the last entry of the node's ``_packed``."""
    if SAVED_TENSOR_HOOKS:
        saved = SavedTensor(out, is_output=True)
    else:
        saved = _new_object(SavedTensor)
        saved.data = data
        saved.version_counter = version_counter
        saved.saved_version = 0
        saved.is_output = True
        saved._output_name = None
        saved.requires_grad = True
        saved.grad_fn_ref = _weakref(node)  # a saved output must not keep its node alive
        saved.tensor = None
        saved.hooks = None
    if node._packed is None:
        node._packed = {name: saved}
    else:
        node._packed[name] = saved


# -- the lean apply of ops with one or two graph inputs -----------------------------------------------------
_MISSING = object()  # an argument not given (apply's inputs are positional-or-missing here)
_ONE = _NEEDS.setdefault((True,), (True,))  # the needs_input_grad patterns of one and two inputs
_BOTH = _NEEDS.setdefault((True, True), (True, True))


def lean_apply(cls, checked=None):
    """The ``apply`` of an op with one or two graph inputs (nearly every op a learner writes), which
    ``__init_subclass__`` gives such a class (as a static method: ``cls`` is held here, so no bound method
    is made per call): the general apply's pass over the inputs written out for one or two (no slice, loop,
    edge list or key), giving the same edges, needs, constants, node and output. Anything else (forward AD,
    an input that is a view requiring grad, graph inputs given by keyword) takes the general apply.

    With ``checked`` (a binary operator's checked function, as ``ops._operator`` makes it) it is that
    operator itself (``Tensor.__mul__``): a Tensor or Python number on the other side comes straight here,
    anything else goes to ``checked`` and its errors, and no Python call is spent in between."""
    binary = cls._arity == 2

    def apply(first=_MISSING, second=_MISSING, *args, **params):
        if checked is not None and type(second) is not Tensor and type(second) is not float and type(second) is not int:
            return checked(first, second, *args, **params)
        if _FORWARD_AD[0] is not None or first is _MISSING or (binary and second is _MISSING):
            return _general_apply(cls, *(arg for arg in (first, second) if arg is not _MISSING), *args, **params)
        if not _grad_off or _grad_state.enabled:  # is_grad_enabled() (read only when some thread has it off)
            # where each input's gradient goes (gradient_edge, written out): None for no gradient
            if type(first) is Tensor or isinstance(first, Tensor):
                if first._base is not None:
                    if first._requires_grad or first._base._requires_grad:  # a view that requires grad
                        return _general_apply(cls, first, second, *args, **params) if second is not _MISSING \
                            else _general_apply(cls, first, *args, **params)
                    edge = None
                elif first._requires_grad:
                    grad_fn = first._grad_fn
                    if grad_fn is not None:  # an op's output
                        edge = (grad_fn, first._output_nr)
                    else:  # a leaf: its AccumulateGrad (one per leaf, held weakly by the tensor)
                        accumulator = first._accumulator
                        accumulator = accumulator() if accumulator is not None else None
                        edge = (accumulator if accumulator is not None else first._grad_accumulator(), 0)
                else:
                    edge = None
            else:
                edge = None
            if binary:
                if type(second) is Tensor or isinstance(second, Tensor):
                    if second._base is not None:
                        if second._requires_grad or second._base._requires_grad:
                            return _general_apply(cls, first, second, *args, **params)
                        other_edge = None
                    elif second._requires_grad:
                        grad_fn = second._grad_fn
                        if grad_fn is not None:
                            other_edge = (grad_fn, second._output_nr)
                        else:
                            accumulator = second._accumulator
                            accumulator = accumulator() if accumulator is not None else None
                            other_edge = (accumulator if accumulator is not None else second._grad_accumulator(), 0)
                    else:
                        other_edge = None
                else:
                    other_edge = None
                if edge is not None:
                    node = _new_object(cls)
                    if other_edge is not None:
                        node._next_functions = (edge, other_edge)
                        node.needs_input_grad = _BOTH
                    else:
                        node._next_functions = (edge, NO_EDGE)
                        node.needs_input_grad = _FIRST_OF_TWO
                        node._constants = (None, _weakref(second) if isinstance(second, Tensor) else second)
                    backend = first._backend
                elif other_edge is not None:
                    node = _new_object(cls)
                    node._next_functions = (NO_EDGE, other_edge)
                    node.needs_input_grad = _SECOND_OF_TWO
                    node._constants = (_weakref(first) if isinstance(first, Tensor) else first, None)
                    backend = second._backend
                else:
                    node = None
            elif edge is not None:
                node = _new_object(cls)
                node._next_functions = (edge,)
                node.needs_input_grad = _ONE
                backend = first._backend
            else:
                node = None
            if node is not None:
                node._sequence_nr = next(_sequence)
                if backend is not numpy_backend:
                    node.backend = backend
                if _ordering:  # a create_graph backward pass runs (in some thread): its nodes get its order
                    order = _grad_state.backward_order
                    if order:
                        node._order = order
                    if _ANOMALY.enabled:
                        _store_stack(node)
                out = _new_object(Tensor)  # Tensor._make, written out
                if args or params:
                    data = node.forward(first, second, *args, **params) if second is not _MISSING else \
                        node.forward(first, **params)
                else:
                    data = node.forward(first, second) if second is not _MISSING else node.forward(first)
                out._data = data
                out._backend = backend
                out._requires_grad = True
                out._grad = None
                out._grad_fn = node
                out._vc = version_counter = [0]
                out._output_nr = 0
                out._accumulator = None
                out._retains_grad = False
                out._base = None
                out._leaf_hooks = None
                name = node._result_name
                if name is not None:
                    _save_output(node, name, out, data, version_counter)
                return out
        if args or params:
            data = cls.forward(_NO_RECORD, first, second, *args, **params) if second is not _MISSING else \
                cls.forward(_NO_RECORD, first, **params)
        else:
            data = cls.forward(_NO_RECORD, first, second) if second is not _MISSING else cls.forward(_NO_RECORD, first)
        if _inference_depth[0]:
            return Tensor._make(data)
        out = _new_object(Tensor)
        out._data = data
        out._backend = numpy_backend if type(data) is _ndarray else _backend_of(data)
        out._requires_grad = False
        out._grad = None
        out._grad_fn = None
        out._vc = [0]
        out._output_nr = 0
        out._accumulator = None
        out._retains_grad = False
        out._base = None
        out._leaf_hooks = None
        return out
    apply._lean = True  # (forward_ad.py tells OpFunction's applies from an op's own by this)
    return apply


_general_apply = OpFunction.apply.__func__

from gradviz.tensor import Tensor, _backend_of  # noqa: E402  (tensor.py imports the ops that import this module)


# -- the node of an op with several outputs, whose own ``apply`` makes them (split, std_mean, slogdet, ...) ----------
def node_for_inputs(cls, *inputs) -> tuple:
    """``(record, node)``: a ``cls`` node with one edge per input (none for a ``None`` input or one that
    needs no gradient) when grad mode is on and an input requires grad; else ``(False, _NO_RECORD)``,
    whose attributes are dropped. The node works on the first input's backend."""
    if not (_grad_state.enabled and any(t is not None and t.requires_grad for t in inputs)):
        return False, _NO_RECORD
    node = cls()
    node.backend = next(t for t in inputs if t is not None)._backend
    edges = tuple(gradient_edge(t) if t is not None and t.requires_grad else NO_EDGE for t in inputs)
    node._next_functions = edges
    node.needs_input_grad = tuple(edge[0] is not None for edge in edges)
    if _grad_state.backward_order:
        node._order = _grad_state.backward_order
    return True, node


def outputs_of(node, record: bool, arrays, backend) -> list:
    """The op's outputs, made from ``arrays`` (output ``0, 1, ...``) and joined to ``node`` when
    recording, which then counts them."""
    outputs = []
    for output_nr, array in enumerate(arrays):
        output = Tensor._make(array, record, node if record else None, backend)
        output._output_nr = output_nr
        outputs.append(output)
    if record:
        node._num_outputs = len(outputs)
    return outputs

_new_object = object.__new__
_weakref = weakref.ref
_ndarray = np.ndarray
from gradviz.autograd.custom_function import Function, FunctionCtx, once_differentiable  # noqa: E402,F401
