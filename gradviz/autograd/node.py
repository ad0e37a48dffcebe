"""Graph nodes: the objects a tensor's ``grad_fn`` points to.

A node knows the nodes that produced its inputs (``next_functions``, in input order, with
``(None, 0)`` for inputs that do not require grad), the tensors it saved for backward, and the
hooks a user registered. Nodes are numbered in creation order (``_sequence_nr``): the engine runs
the newest ready node first, as PyTorch's does.
"""
from __future__ import annotations

import itertools
import re
import weakref

from gradviz.backends.quiet import as_users

_sequence = itertools.count()
ACCUMULATE_SEQUENCE_NR = 2**64 - 1  # PyTorch gives AccumulateGrad UINT64_MAX: it runs as soon as ready

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


class RemovableHandle:
    """Returned by ``register_hook``: ``handle.remove()`` takes the hook away again."""

    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self.id = next(self._ids)
        self._hooks = hooks

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.remove()


class SavedTensor:
    """An array saved for backward, with the version of its tensor at the time it was saved.

    Unpacking checks that the tensor was not modified in place since (PyTorch's version
    counter check) and that the graph was not freed by an earlier backward.
    """

    __slots__ = ("data", "version_counter", "saved_version", "is_output", "_output_name",
                 "requires_grad", "grad_fn_ref", "tensor", "hooks")

    def __init__(self, tensor, is_output: bool = False, output_name: str | None = None):
        # Saving happens once per op in every forward pass: keep it to plain attribute copies and
        # work out the texts that only an error message needs (description, output_name) lazily.
        self.data = tensor._data
        version_counter = self.version_counter = tensor._vc
        self.saved_version = version_counter[0]
        self.is_output = is_output
        self._output_name = output_name
        self.requires_grad = tensor._requires_grad
        grad_fn = tensor._grad_fn if tensor._base is None else tensor.grad_fn  # a view's may need making
        if is_output:  # a saved output must not keep its own node alive (that would be a cycle)
            self.grad_fn_ref = weakref.ref(grad_fn) if grad_fn is not None else None
            self.tensor = None
        else:  # an input is kept as PyTorch keeps it, until freed (and may keep its node alive)
            self.grad_fn_ref = grad_fn
            self.tensor = tensor
        # saved_tensors_hooks: (what pack_hook returned, unpack_hook), or None (one list read when none are set)
        if SAVED_TENSOR_HOOKS:
            self.hooks = (SAVED_TENSOR_HOOKS[-1][0](tensor), SAVED_TENSOR_HOOKS[-1][1])
        else:
            self.hooks = None

    @property
    def output_name(self) -> str | None:
        """The forward op that produced the saved tensor (``Mul`` for MulBackward0), if any.

        For a saved input PyTorch names the op that made the tensor *now*: after ``a.add_(1)``
        that is ``Add``, whatever made ``a`` when it was saved.
        """
        if self.tensor is not None:
            grad_fn = self.tensor.grad_fn
            return _forward_name(grad_fn) if grad_fn is not None else None
        if self._output_name is None:
            grad_fn = self.grad_fn_ref() if isinstance(self.grad_fn_ref, weakref.ref) else self.grad_fn_ref
            if grad_fn is not None:
                self._output_name = _forward_name(grad_fn)
        return self._output_name

    @property
    def description(self) -> tuple:
        """``(type string, shape)`` of the saved array, e.g. ``('torch.FloatTensor', (2, 3))``."""
        from gradviz.tensor import Tensor

        return (_type_string(Tensor._make(self.data)), tuple(self.data.shape))

    def unpack(self):
        if self.data is None:
            raise RuntimeError(FREED_MESSAGE)
        if self.hooks is not None:  # the user's unpack hook decides what comes back (no version check)
            packed, unpack_hook = self.hooks
            return as_users(unpack_hook, packed)._data  # under the user's numpy settings, also in a silenced pass
        if self.version_counter[0] != self.saved_version:
            raise RuntimeError(self._modified_message())
        return self.data

    def _modified_message(self) -> str:
        type_string, shape = self.description
        where = f"[{type_string} [{', '.join(str(s) for s in shape)}]]"
        producer = self.output_name
        if producer is not None:
            where += f", which is output 0 of {producer},"
        from gradviz.autograd.anomaly_mode import is_anomaly_enabled  # anomaly mode changes the hint

        hint = ("the backtrace further above shows the operation that failed to compute its gradient. The variable "
                "in question was changed in there or anywhere later. Good luck!") if is_anomaly_enabled() else (
            "enable anomaly detection to find the operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True, check_nan=False).")
        return (
            "one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: {where} is at version {self.version_counter[0]}; expected version "
            f"{self.saved_version} instead. Hint: {hint}"
        )

    def free(self) -> None:
        self.data = None
        self.tensor = None
        self.hooks = None

    @classmethod
    def released(cls) -> SavedTensor:
        """An entry already freed by backward: unpacking it raises PyTorch's error."""
        entry = cls.__new__(cls)
        entry.data, entry.version_counter, entry.saved_version = None, (0,), 0
        entry.is_output, entry._output_name, entry.requires_grad, entry.grad_fn_ref = False, None, False, None
        entry.tensor = entry.hooks = None
        return entry


SAVED_TENSOR_HOOKS: list = []  # (pack_hook, unpack_hook) pairs, innermost last (autograd.graph.saved_tensors_hooks)
RELEASED = SavedTensor.released()  # what a saved Python number becomes after backward (see Function)
_new_object = object.__new__


def saved_input(tensor) -> SavedTensor:
    """``SavedTensor(tensor)`` for an op's input, made without calling ``__init__`` (a class call
    costs more than the slot copies themselves; every op of a forward pass saves one or two).
    Recording writes the same copies out inline; with saved-tensor hooks set, the constructor runs."""
    if SAVED_TENSOR_HOOKS:
        return SavedTensor(tensor)
    saved = _new_object(SavedTensor)
    saved.data = tensor._data
    version_counter = saved.version_counter = tensor._vc
    saved.saved_version = version_counter[0]
    saved.is_output = False
    saved._output_name = None
    saved.requires_grad = tensor._requires_grad
    saved.grad_fn_ref = tensor._grad_fn if tensor._base is None else tensor.grad_fn  # a view's may need making
    saved.tensor = tensor
    saved.hooks = None
    return saved


def _forward_name(grad_fn) -> str:
    """PyTorch names the op that produced a modified tensor without "Backward": ``Mul`` for
    MulBackward0, but ``Clamp1`` for ClampBackward1 (only a 0 goes with it)."""
    return re.sub(r"Backward(\d*)$", lambda match: "" if match.group(1) == "0" else match.group(1), grad_fn.name())


def _type_string(tensor) -> str:
    names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
             "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor",
             "uint8": "ByteTensor", "bool": "BoolTensor"}
    prefix = "torch.cuda." if tensor.device.type == "cuda" else "torch."
    return prefix + names[tensor.dtype.name]


class Node:
    """Base of every node: ``name()``, ``next_functions``, hooks, metadata, saved tensors."""

    _num_outputs = 1
    # Defaults shared by every node until one sets its own (most nodes never do): a node is made
    # for every recorded op, so its constructor sets only what each one needs.
    _next_functions = ()
    _packed = None  # name -> SavedTensor or a plain value (int, float, tuple)
    # The user's hooks live in four tables (``_hooks``, ``_pre_hooks``, ``_tensor_pre_hooks``,
    # ``_retain_grad_hooks``: properties, below the class), and setting any of them sets ``_hooked``,
    # so that the engine reads one attribute per node to learn that a node has none (the common case)
    # instead of four. ``_hooked`` is never cleared: it means "may have hooks" (a removed hook leaves
    # an empty table), and the engine looks at the tables themselves only when it is set.
    _hooked = False
    _held_hooks = None
    _held_pre_hooks = None
    _held_tensor_pre_hooks = None
    _held_retain_grad_hooks = None
    _metadata = None
    _is_accumulate = False  # a class flag the engine reads for every node (cheaper than isinstance)
    _saves_tensors = True  # False on a class that saves numbers only: the plain backward skips its _release_variables
    _runs_user_code = False  # True for a user's Function: its backward is the user's code (engine.py)
    _order = 1  # 1: recorded by the forward pass; 2: by a backward pass with create_graph=True; ...

    def __init__(self, sequence_nr: int | None = None):
        self._sequence_nr = next(_sequence) if sequence_nr is None else sequence_nr

    def scalar_backward(self, grad):
        """The plain backward's scalar form (the engine's ``_unhooked_loop`` alone calls it): ``grad`` is a
        0-d float32/float64 gradient given as a numpy scalar, in a pass whose numpy warnings are off. A node
        whose formula can compute on it returns its gradients as ``backward`` would (a tuple), 0-d ones as
        numpy scalars, bit for bit what ``backward`` gives on the 0-d array; None (here, for every other
        node) sends the engine to ``backward`` with the 0-d array."""
        return None

    # -- what PyTorch's Node exposes -------------------------------------------------------
    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self) -> tuple:
        return self._next_functions

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def register_hook(self, hook) -> RemovableHandle:
        """``hook(grad_inputs, grad_outputs)`` runs after the node; it may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = {}
        handle = RemovableHandle(self._hooks)
        self._hooks[handle.id] = hook
        return handle

    def register_prehook(self, hook) -> RemovableHandle:
        """``hook(grad_outputs)`` runs before the node; it may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = hook
        return handle

    def _register_tensor_pre_hook(self, output_nr: int, hook) -> RemovableHandle:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        hooks = self._tensor_pre_hooks.setdefault(output_nr, {})
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    # -- saved tensors ----------------------------------------------------------------------
    def _unpack_saved(self, name: str):
        """The saved entry ``name`` as PyTorch's ``_saved_<name>`` shows it (a Tensor or a value)."""
        entry = self._packed[name]
        if isinstance(entry, SavedTensor):
            from gradviz.tensor import Tensor

            data = entry.unpack()
            grad_fn = entry.grad_fn_ref() if isinstance(entry.grad_fn_ref, weakref.ref) else entry.grad_fn_ref
            return Tensor._make(data, requires_grad=entry.requires_grad, grad_fn=grad_fn)
        return entry

    def saved_names(self) -> tuple:
        return tuple(self._packed) if self._packed else ()

    def saved_entries(self) -> tuple:
        """``(name, SavedTensor or value)`` pairs, for the graph snapshot."""
        return tuple(self._packed.items()) if self._packed else ()

    def _release_variables(self) -> None:
        if self._packed:
            for entry in self._packed.values():
                if isinstance(entry, SavedTensor):
                    entry.free()

    # ``_saved_<name>`` (PyTorch's attributes for what a node saved) is a property of Node for every name
    # any node saves (``expose_saved`` adds one the first time a name is saved), not a ``__getattr__``: a
    # class with ``__getattr__`` opts every attribute read of its instances out of Python's specialized
    # fast reads, and the engine reads several node attributes per node.
    def __dir__(self):
        own = {f"_saved_{name}" for name in self.saved_names()}
        return sorted({name for name in super().__dir__() if name not in _EXPOSED_ATTRIBUTES} | own)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"

    # -- what subclasses provide --------------------------------------------------------------
    def backward(self, grad_output):
        """Gradients for each input (aligned with ``next_functions``), from the output's gradient."""
        raise NotImplementedError


# False until some node of this process is given a hook table: till then no node can hold a hook, and the
# engine's dependency walk (engine._dependencies_and_hooks) reads no node's ``_hooked`` flag
hook_tables_made = False


def _hook_table(name: str, doc: str) -> property:
    """A node's hook table ``name`` as a property: stored under ``_held<name>``; setting it (the only way a
    table is made, here, in tensor.py and in ops/inplace.py) also sets the node's ``_hooked`` flag."""
    held = f"_held{name}"

    def get(node):
        return getattr(node, held)

    def put(node, table):
        global hook_tables_made
        setattr(node, held, table)
        node._hooked = True
        hook_tables_made = True

    return property(get, put, doc=doc)


Node._hooks = _hook_table("_hooks", "``register_hook`` hooks: id -> hook(grad_inputs, grad_outputs).")
Node._pre_hooks = _hook_table("_pre_hooks", "``register_prehook`` hooks: id -> hook(grad_outputs).")
Node._tensor_pre_hooks = _hook_table("_tensor_pre_hooks", "output_nr -> {id: hook}: hooks registered on tensors.")
Node._retain_grad_hooks = _hook_table("_retain_grad_hooks",
                                      "output_nr -> hook: retain_grad(), run after the other tensor hooks.")


def has_user_hooks(node) -> bool:
    """Whether ``node`` holds a hook of the user's now (its tables, read only when ``_hooked`` is set)."""
    return node._hooked and bool(node._tensor_pre_hooks or node._retain_grad_hooks or node._pre_hooks
                                 or node._hooks)


_EXPOSED: set = set()  # the saved names that have a ``_saved_<name>`` property on Node
_EXPOSED_ATTRIBUTES: set = set()  # those properties' names


def expose_saved(name: str) -> None:
    """Give nodes a ``_saved_<name>`` attribute: the entry ``name`` as PyTorch shows it, on a node that
    saved one (an AttributeError on any other, as for a name no node saves). Made once per name."""
    if name in _EXPOSED:
        return
    attribute = f"_saved_{name}"

    def saved(node):
        packed = node._packed
        if packed and name in packed:
            return node._unpack_saved(name)
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{attribute}'")

    saved.__name__ = attribute
    setattr(Node, attribute, property(saved, doc=f"The saved entry ``{name}`` (PyTorch's ``{attribute}``)."))
    _EXPOSED_ATTRIBUTES.add(attribute)
    _EXPOSED.add(name)


for _name in ("result", "self", "other", "alpha", "exponent", "sign"):  # names saved without ``ctx.save``
    expose_saved(_name)


class AccumulateGrad(Node):
    """The sink for a leaf tensor: adds the arriving gradient into ``variable.grad``."""

    derivatives = {"variable": ("variable.grad += grad", r"\mathrm{grad} \mathrel{+}= \bar{y}")}
    _sequence_nr = ACCUMULATE_SEQUENCE_NR  # the same for every AccumulateGrad, so a class attribute
    _is_accumulate = True

    def __init__(self, variable):  # Tensor._grad_accumulator makes one without this call: keep the two alike
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"


class GraphRoot(Node):
    """Feeds the starting gradients when backward starts from several tensors at once."""

    def __init__(self, edges, gradients):
        super().__init__()
        self._next_functions = tuple(edges)
        self._gradients = tuple(gradients)
        self._num_outputs = 0

    def backward(self):  # no gradient arrives at the root: it sends the starting ones
        return self._gradients

    backward_graph = backward  # with create_graph the starting gradients are Tensors already
