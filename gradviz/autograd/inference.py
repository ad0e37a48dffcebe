"""``torch.inference_mode``: ``no_grad``, and the tensors made inside are marked as inference tensors.

The mode's state and the checks that read it (``is_inference``, the errors for using an inference
tensor in autograd later) live in ``gradviz.grad_mode``, which knows nothing of Tensor; this module
switches the marking on and off, which needs Tensor.
"""
from __future__ import annotations

import functools
import threading
import weakref

from gradviz.grad_mode import _forget, _inference_depth, _set_enabled, _state, inference_tensors, is_grad_enabled

_marking_lock = threading.Lock()


class inference_mode:
    """``no_grad``, and the tensors made inside are inference tensors: autograd may not save them or
    change them in place later (PyTorch raises; ``clone()`` one to get a normal tensor).

    A context manager and a decorator, as in PyTorch, and per thread as PyTorch's: another thread
    records as usual meanwhile. ``inference_mode(False)`` turns inference mode off inside and grad mode
    on, as PyTorch's does; ``enable_grad`` inside inference mode sets the grad mode ``is_grad_enabled``
    reports, but nothing records until inference mode ends. The tensors are marked by a marking
    ``Tensor._make``, installed while any thread is in inference mode, that marks only in such a thread.
    """

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def __enter__(self):
        state = _state
        self._previous = (is_grad_enabled(), state.inference)
        if self.mode and not state.inference:
            _start_marking()
        elif not self.mode and state.inference:
            _stop_marking()
        state.inference = self.mode
        _set_enabled(not self.mode)
        return None

    def __exit__(self, *exc_info):
        state = _state
        grad_mode, inference = self._previous
        if state.inference and not inference:
            _stop_marking()
        elif inference and not state.inference:
            _start_marking()
        state.inference = inference
        _set_enabled(grad_mode)
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with inference_mode(self.mode):
                return function(*args, **kwargs)

        return wrapper

    def clone(self):
        return inference_mode(self.mode)


def _start_marking() -> None:
    """One more thread in inference mode: the first installs the marking ``Tensor._make``."""
    from gradviz.tensor import Tensor  # the circle tensor <-> autograd: closed inside a function

    with _marking_lock:
        _inference_depth[0] += 1
        if _inference_depth[0] > 1:
            return
        plain = Tensor.__dict__["_make"].__func__

        def make_for_inference(cls, *args, **kwargs):
            made = plain(cls, *args, **kwargs)
            if _state.inference:  # only the threads in inference mode mark what they make
                key = id(made)
                inference_tensors[key] = weakref.ref(made, lambda ref, key=key: _forget(key, ref))
            return made

        make_for_inference.plain = plain
        Tensor._make = classmethod(make_for_inference)


def _stop_marking() -> None:
    from gradviz.tensor import Tensor

    with _marking_lock:
        _inference_depth[0] -= 1
        if _inference_depth[0] == 0:
            Tensor._make = classmethod(Tensor.__dict__["_make"].__func__.plain)
