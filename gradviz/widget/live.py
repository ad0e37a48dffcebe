"""Keep the widgets that matter in step with their tensors after every notebook cell, and let
go of the rest.

After each cell (IPython's ``post_run_cell``) every followed widget is in one of three states:

* **on screen** (the front end reported a view: ``render()`` in gradviz.js sends
  ``{"type": "gradviz-view", "open": true}`` and, in its cleanup, ``open: false``; or it was
  just handed to a connected front end that has not reported yet) or **referenced** (the user's
  code still holds it): it is brought up to date with ``refresh_if_changed()``, which costs a few
  reads per leaf when nothing moved, and never runs a trace or a hook for a ``.grad`` change;
* **neither**: the user deleted it, or its output was cleared and nothing holds it. It is
  released (``GraphWidget.release()``: the comm is closed, so ipywidgets' registry lets go, and
  the drawing is dropped), so it can be collected and no later cell pays for it.

Who holds a widget: ipywidgets keeps every widget in its registry (``ipywidgets.widgets.widget.
_instances``, filled when the comm opens) and its comm keeps a bound method; anywidget keeps
closures over it; IPython's output history (``Out``, ``_``, ``_12``) keeps a cell's result. None
of those is the user's, so "referenced" means: more references than those. The references the
widget machinery holds are counted once, as the widget is made (``track``), and IPython's history
is counted each cell; what remains of ``sys.getrefcount`` is the user's.

Widgets are followed through weak references only: following one never keeps it alive.
"""
from __future__ import annotations

import sys
import warnings
import weakref

_followed: dict = {}  # id(widget) -> weakref to it
_registered_with: "weakref.ref | None" = None

# The references that exist only while a function looks at a widget: the caller's variable,
# this module's parameter, and the argument of sys.getrefcount itself.
_TRANSIENT = 3


def track(widget, machinery: int) -> None:
    """Follow ``widget``'s tensor after each cell (when running under IPython).

    ``machinery``: the references ipywidgets, anywidget and traitlets hold to the widget, measured
    by ``GraphWidget.__init__`` as ``sys.getrefcount`` at its end less at its start (the same
    frames hold the widget at both points, so only what the machinery added remains).
    """
    widget._machinery_references = machinery
    key = id(widget)
    _followed[key] = weakref.ref(widget, lambda _, key=key: _followed.pop(key, None))
    register(_current_ipython())


def untrack(widget) -> None:
    _followed.pop(id(widget), None)


def tracked() -> list:
    return [widget for widget in (ref() for ref in list(_followed.values())) if widget is not None]


def register(ipython) -> None:
    """Add the ``post_run_cell`` callback to ``ipython`` once (no-op outside IPython)."""
    global _registered_with
    if ipython is None:
        return
    if _registered_with is not None and _registered_with() is ipython:
        return
    ipython.events.register("post_run_cell", refresh_all)
    _registered_with = weakref.ref(ipython)


def unregister(ipython) -> None:
    global _registered_with
    if ipython is None:
        return
    try:
        ipython.events.unregister("post_run_cell", refresh_all)
    except ValueError:
        pass
    _registered_with = None


def refresh_all(result=None) -> None:
    """After a cell: bring widgets on screen or referenced up to date, release the others.

    One failing widget never stops the others or the cell.
    """
    ipython = _current_ipython()
    history = _history_references(ipython, result)
    front_end = _has_front_end(ipython)
    for ref in list(_followed.values()):
        widget = ref()
        if widget is None or widget.tensor is None:
            continue
        awaiting_view = widget._displayed and not widget._ever_viewed and front_end
        if widget._views > 0 or awaiting_view or user_references(widget, history) > 0:
            refresh_one(widget)
        else:
            _quietly(widget.release, "release")


def refresh_one(widget) -> None:
    """``widget.refresh_if_changed()``, a failure turned into a warning."""
    _quietly(widget.refresh_if_changed, "refresh")


def _quietly(action, what: str) -> None:
    """Run ``action``; a display aid must never break the user's notebook, so a failure is a warning."""
    try:
        action()
    except Exception as error:
        warnings.warn(f"gradviz could not {what} a graph widget: {error!r}", RuntimeWarning, stacklevel=3)


def user_references(widget, history: dict | None = None) -> int:
    """How many references to ``widget`` belong to the user's code: all of them, less those the
    widget machinery holds, IPython's output history and the caller's own variable."""
    machinery = getattr(widget, "_machinery_references", 0)
    from_history = (history or {}).get(id(widget), 0)
    return sys.getrefcount(widget) - _TRANSIENT - machinery - from_history


def _history_references(ipython, result=None) -> dict:
    """``{id(value): count}`` of the references IPython's output history holds: ``Out[n]``; the
    ``_``, ``__``, ``___`` and ``_n`` variables, which it writes into the user namespace and its
    hidden twin; the display hook's own ``_``, ``__``, ``___``; and the cell's ``ExecutionResult``
    (``result``, handed to ``post_run_cell``)."""
    counts: dict = {}

    def count(value) -> None:
        counts[id(value)] = counts.get(id(value), 0) + 1

    if result is not None and hasattr(result, "result"):
        count(result.result)
    if ipython is None:
        return counts
    for namespace in (ipython.user_ns, getattr(ipython, "user_ns_hidden", {})):
        for key, value in list(namespace.items()):
            if key.startswith("_") and (key in _LAST_RESULTS or key[1:].isdigit()):
                count(value)
    out = ipython.user_ns.get("Out")
    if isinstance(out, dict):
        for value in list(out.values()):
            count(value)
    displayhook = getattr(ipython, "displayhook", None)
    for name in _LAST_RESULTS:
        if name in getattr(displayhook, "__dict__", {}):
            count(displayhook.__dict__[name])
    return counts


_LAST_RESULTS = ("_", "__", "___")


def _has_front_end(ipython) -> bool:
    """A kernel that a front end may draw widgets in (a plain IPython shell draws none)."""
    return ipython is not None and getattr(ipython, "kernel", None) is not None


def _current_ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()
