"""Labels for tensors: which variable names hold the tensors of a graph.

``show(loss)`` labels ``x``, ``w``, ``b`` the way the learner named them, by looking for
variables that hold tensors in the caller's frame (or IPython's user namespace).
"""
from __future__ import annotations

import sys


def is_tensor_like(value) -> bool:
    from gradviz.tensor import Tensor

    if isinstance(value, Tensor):
        return True
    kind = type(value)
    return kind.__module__.startswith("torch") and kind.__name__ in ("Tensor", "Parameter")


def names_from_frame(frame) -> dict:
    """``{name: tensor}`` for the variables in ``frame`` (locals over globals) holding tensors."""
    found = {}
    if frame is None:
        return found
    for scope in (frame.f_globals, frame.f_locals):
        for name, value in list(scope.items()):
            if not name.startswith("_") and is_tensor_like(value):
                found[name] = value
    return found


def caller_names(depth: int = 2) -> dict:
    """Names from the frame ``depth`` levels up, plus IPython's user namespace when present."""
    found = {}
    ipython = _ipython()
    if ipython is not None:
        for name, value in list(ipython.user_ns.items()):
            if not name.startswith("_") and is_tensor_like(value):
                found[name] = value
    try:
        frame = sys._getframe(depth)
    except ValueError:
        frame = None
    found.update(names_from_frame(frame))
    return found


def _ipython():
    module = sys.modules.get("IPython")
    if module is None:
        return None
    try:
        return module.get_ipython()
    except Exception:  # noqa: BLE001 - no shell is the same as no IPython
        return None


def by_identity(names: dict | None) -> dict:
    """``{id(tensor): name}``; the first name wins when a tensor has several."""
    labels = {}
    for name, value in (names or {}).items():
        labels.setdefault(id(value), name)
    return labels
