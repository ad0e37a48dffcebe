"""The caller's variables that hold tensors: where default labels come from.

``show(loss)`` labels ``x``, ``w``, ``b`` the way the learner named them, by looking for
variables that hold tensors in the caller's frame (or IPython's user namespace).
"""
from __future__ import annotations

import sys

from gradviz._kinds import is_tensor


def tensors_in(namespace: dict) -> dict:
    """``{name: tensor}`` for the public variables of ``namespace`` that hold tensors."""
    return {name: value for name, value in list(namespace.items())
            if not name.startswith("_") and is_tensor(value)}


def names_from_frame(frame) -> dict:
    """``{name: tensor}`` for the variables in ``frame`` (locals over globals) holding tensors."""
    if frame is None:
        return {}
    return {**tensors_in(frame.f_globals), **tensors_in(frame.f_locals)}


def caller_names(depth: int = 2) -> dict:
    """Names from the frame ``depth`` levels up, plus IPython's user namespace when present."""
    ipython = _ipython()
    found = tensors_in(ipython.user_ns) if ipython is not None else {}
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
