"""numpy's floating-point warnings, silenced where PyTorch prints nothing.

``log(0)``, ``1 / 0``, ``inf - inf`` or an overflowing ``exp`` give ``-inf``, ``inf`` or ``nan`` in
PyTorch without a word; numpy gives the same numbers but also prints a ``RuntimeWarning`` ("divide by
zero encountered in log"), which a learner would take for gradviz's own complaint. The numpy
backend's warn-prone functions are therefore wrapped in ``silent``, and a formula that calls numpy
directly runs inside ``silenced()``.

The cost matters (these functions run for every op of a scalar graph): ``np.errstate`` builds a
dict and a context object per call (about 2 µs). numpy 2 keeps its error state in one context
variable, so ``silent`` sets that variable to a state made once at import ("ignore" everywhere) and
resets it afterwards: two C calls (about 0.3 µs), and the user's own numpy settings outside gradviz's
calls are never touched. Where numpy does not expose that variable (an older or newer layout), the
wrapper falls back to ``np.errstate``.

Where no user code can run between the formulas (the unhooked loop of a plain ``backward()``), the
engine sets that variable once for the whole pass; the hot formulas then test ``_get() is _IGNORE``
(one C call) and skip their own set and reset, which cost about ten times as much. A thread or a
context of its own keeps its own value, so that test is never wrong. The user's code that can still
run inside such a pass (a saved-tensor unpack hook, called when a formula reads a saved tensor) runs
through ``as_users``, under the user's own state, which the pass keeps in a second variable
(``silence_pass``).
"""
from __future__ import annotations

import functools

import numpy as np

try:  # numpy >= 2.0: the error state is a ContextVar holding an "extobj" capsule
    from numpy._core._ufunc_config import _extobj_contextvar as _state
except ImportError:  # pragma: no cover - depends on numpy's private layout
    _state = None

if _state is not None:
    with np.errstate(all="ignore"):
        _IGNORE = _state.get()
    _set, _reset, _get = _state.set, _state.reset, _state.get

    def silent(fn):
        """``fn`` with numpy's floating-point warnings off while it runs."""

        @functools.wraps(fn)
        def quiet(*args, **kwargs):
            if _get() is _IGNORE:  # already off (a backward pass silenced once): nothing to set
                return fn(*args, **kwargs)
            token = _set(_IGNORE)
            try:
                return fn(*args, **kwargs)
            finally:
                _reset(token)

        return quiet

    from contextvars import ContextVar

    # the user's numpy state while a whole pass runs silenced (``silence_pass``); unset otherwise
    _users_state = ContextVar("gradviz_users_numpy_state", default=None)

    def silence_pass(users):
        """Silence a whole pass: numpy's warnings off, and ``users`` (the state they were in, given by
        the caller, who read ``_get()``) kept for ``as_users``. Returns the tokens ``end_pass`` takes."""
        return _set(_IGNORE), _users_state.set(users)

    def end_pass(tokens) -> None:
        _users_state.reset(tokens[1])
        _reset(tokens[0])

    def as_users(fn, argument):
        """``fn(argument)``, the user's code, under the user's numpy state when it is called inside a pass
        silenced as a whole (there numpy's warnings are off for gradviz's formulas, not for the user)."""
        users = _users_state.get()
        if users is None or _get() is not _IGNORE:
            return fn(argument)
        token = _set(users)
        try:
            return fn(argument)
        finally:
            _reset(token)

    class silenced:
        """A context manager: numpy's floating-point warnings off inside (one ContextVar set)."""

        __slots__ = ("_token",)

        def __enter__(self):
            self._token = _set(_IGNORE)
            return None

        def __exit__(self, *exc_info):
            _reset(self._token)
            return False

else:  # pragma: no cover - the portable, slower form
    _IGNORE = None

    def _set(_ignore):
        """Enter an ``np.errstate`` (the token ``_reset`` leaves)."""
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def _reset(state):
        state.__exit__(None, None, None)

    _NEVER = object()

    def _get():
        """Never ``_IGNORE``: without the variable, every formula sets its own errstate."""
        return _NEVER

    def silent(fn):
        """``fn`` with numpy's floating-point warnings off while it runs."""

        @functools.wraps(fn)
        def quiet(*args, **kwargs):
            with np.errstate(all="ignore"):
                return fn(*args, **kwargs)

        return quiet

    def silenced():
        return np.errstate(all="ignore")

    def silence_pass(users):  # never called: without the variable, no pass is silenced as a whole
        raise NotImplementedError

    end_pass = silence_pass

    def as_users(fn, argument):
        return fn(argument)
