"""Turning graph recording on and off: ``no_grad``, ``enable_grad``, ``set_grad_enabled``.

As in PyTorch the switch is thread-local, and each one works both as a context manager and as
a decorator.
"""
from __future__ import annotations

import functools
import threading

class _State(threading.local):
    enabled = True  # every thread starts with grad mode on (a class default: no AttributeError to catch)
    # While a create_graph backward pass runs a node of order k, the nodes it records get order k + 1
    # (1 is the forward pass); 0 when no such pass runs. The graph snapshot shows it.
    backward_order = 0


_state = _State()


def is_grad_enabled() -> bool:
    return _state.enabled


def _set_enabled(mode: bool) -> None:
    _state.enabled = bool(mode)


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
