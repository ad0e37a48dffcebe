"""Turning graph recording on and off: ``no_grad``, ``enable_grad``, ``set_grad_enabled``.

As in PyTorch the switch is thread-local, and each one works both as a context manager and as
a decorator.
"""
from __future__ import annotations

import functools
import threading

class _State(threading.local):
    # Whether ops record: grad mode on and inference mode off. Every op reads this one attribute, so it
    # is kept up to date by whoever changes either mode (every thread starts with both at their defaults;
    # class defaults: no AttributeError to catch).
    enabled = True
    # The user's grad mode, which ``is_grad_enabled()`` reports while inference mode is on (``enable_grad``
    # inside ``inference_mode`` turns it on, and still nothing records, as in PyTorch).
    grad_mode = True
    inference = False  # inference mode, per thread as in PyTorch
    _backward_order = 0

    def __setattr__(self, name, value):
        # keeps ``grad_off``: a thread whose ``enabled`` is False is in it (writes are rare: a mode switch, a
        # backward pass; reads, one per op, are not slowed)
        _local_setattr(self, name, value)
        if name == "enabled":
            if value:
                grad_off.discard(_get_ident())
            else:
                grad_off.add(_get_ident())

    @property
    def backward_order(self) -> int:
        """While a create_graph backward pass runs a node of order k, the nodes it records get order
        k + 1 (1 is the forward pass); 0 when no such pass runs. The graph snapshot shows it."""
        return self._backward_order

    @backward_order.setter
    def backward_order(self, order: int) -> None:
        self._backward_order = order
        if order:  # ``ordering`` lets every op skip this thread-local read while no such pass runs
            ordering.add(threading.get_ident())
        else:
            ordering.discard(threading.get_ident())


# The threads whose ``enabled`` is False (a thread that ended so leaves its id behind, which only means a
# thread-local read more). Empty while every thread records, as in a training loop's forward pass: an op
# tests this set and reads the thread-local ``enabled`` (a slower read) only when it is not empty.
grad_off: set = set()
_local_setattr = threading.local.__setattr__
_get_ident = threading.get_ident
# The threads now running a create_graph backward pass (a nonzero ``backward_order``): empty almost
# always, so recording an op tests this set and reads the thread-local order only when it is not empty.
ordering: set = set()
_state = _State()


def is_grad_enabled() -> bool:
    state = _state
    # outside inference mode the grad mode is what records (the engine sets ``enabled`` while it runs nodes)
    return state.grad_mode if state.inference else state.enabled


def _set_enabled(mode: bool) -> None:
    state = _state
    state.grad_mode = mode = bool(mode)
    state.enabled = mode and not state.inference


class _GradModeSwitch:
    """Base for the context managers: remember the mode on entry, restore it on exit."""

    mode = True

    def __enter__(self):
        self._previous = is_grad_enabled()
        _set_enabled(self.mode)
        return None

    def __exit__(self, *exc_info):
        _set_enabled(self._previous)
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return function(*args, **kwargs)

        return wrapper


class no_grad(_GradModeSwitch):
    """Record nothing inside: results do not require grad (prediction, parameter updates)."""

    mode = False


class enable_grad(_GradModeSwitch):
    """Record again, e.g. inside a function that is called under ``no_grad``."""

    mode = True


class set_grad_enabled(_GradModeSwitch):
    """Set recording to ``mode``; takes effect at once, like PyTorch's, and undoes on exit."""

    def __init__(self, mode: bool):
        self._previous = is_grad_enabled()
        self.mode = bool(mode)
        _set_enabled(self.mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc_info):
        _set_enabled(self._previous)
        return False

    def __call__(self, function):
        _set_enabled(self._previous)

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(self.mode):
                return function(*args, **kwargs)

        return wrapper


# -- inference mode: no_grad, and the tensors made inside are marked as made for inference ---------------
INFERENCE_SAVED = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode "
                   "in computation tracked by autograd. To work around this, you can make a clone to get a normal "
                   "tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.")
INFERENCE_IN_PLACE = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to "
                      "get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
                      "more details.")
INFERENCE_REQUIRES_GRAD = "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
INFERENCE_VERSION = "Inference tensors do not track version counter."

# The tensors made in inference mode, by id (a weak reference tells a live one from a reused id). Empty
# unless inference mode was used, so the checks that read it cost one test of an empty dict.
inference_tensors: dict = {}
# How many threads are in inference mode now: while any is, ``Tensor._make`` is the marking one (which marks
# only in such a thread). A fast path that makes tensors without ``Tensor._make`` checks this first.
_inference_depth = [0]


def is_inference_mode_enabled() -> bool:
    return _state.inference


def is_inference(tensor) -> bool:
    """Whether ``tensor`` was made in inference mode (a view of such a tensor is one too)."""
    if not inference_tensors:
        return False
    reference = inference_tensors.get(id(tensor))
    if reference is not None and reference() is tensor:
        return True
    base = getattr(tensor, "_base", None)
    return base is not None and is_inference(base)


def _forget(key: int, reference) -> None:
    if inference_tensors.get(key) is reference:  # not a newer tensor that reuses the id
        del inference_tensors[key]


def check_not_inference(tensor, message: str) -> None:
    """Raise PyTorch's error when an inference tensor is used as ``message`` says, outside inference mode."""
    if inference_tensors and not _state.inference and is_inference(tensor):
        raise RuntimeError(message)
