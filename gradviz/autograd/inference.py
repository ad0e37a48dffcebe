"""``torch.inference_mode``: ``no_grad``, and the tensors made inside are marked as inference tensors.

The mode's state and the checks that read it (``is_inference``, the errors for using an inference
tensor in autograd later) live in ``gradviz.grad_mode``, which knows nothing of Tensor; this module
switches the marking on and off, which needs Tensor.
"""
from __future__ import annotations

import functools
import weakref

from gradviz.grad_mode import _forget, _inference_depth, _set_enabled, inference_tensors, is_grad_enabled

class inference_mode:
    """``no_grad``, and the tensors made inside are inference tensors: autograd may not save them or
    change them in place later (PyTorch raises; ``clone()`` one to get a normal tensor).

    A context manager and a decorator, as in PyTorch; ``inference_mode(False)`` changes nothing. gradviz
    marks the tensors by making them through a marking ``Tensor._make`` while the mode is on, so the
    mode is process-wide here, not per thread as in PyTorch.
    """

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def __enter__(self):
        if not self.mode:
            return None
        self._previous = is_grad_enabled()
        _set_enabled(False)
        _inference_depth[0] += 1
        if _inference_depth[0] == 1:
            _start_marking()
        return None

    def __exit__(self, *exc_info):
        if not self.mode:
            return False
        _inference_depth[0] -= 1
        if _inference_depth[0] == 0:
            _stop_marking()
        _set_enabled(self._previous)
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
    from gradviz.tensor import Tensor  # the circle tensor <-> autograd: closed inside a function

    plain = Tensor.__dict__["_make"].__func__

    def make_for_inference(cls, *args, **kwargs):
        made = plain(cls, *args, **kwargs)
        key = id(made)
        inference_tensors[key] = weakref.ref(made, lambda ref, key=key: _forget(key, ref))
        return made

    make_for_inference.plain = plain
    Tensor._make = classmethod(make_for_inference)


def _stop_marking() -> None:
    from gradviz.tensor import Tensor

    Tensor._make = classmethod(Tensor.__dict__["_make"].__func__.plain)
