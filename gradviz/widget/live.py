"""Keep widgets on screen in step with their tensors after every notebook cell.

Widgets that follow a tensor are held in a ``WeakSet`` (never a strong reference: closing and
dropping a widget frees its graph). When IPython is running, one ``post_run_cell`` callback
refreshes them all, so ``loss.backward()``, ``x.grad.zero_()`` or ``optimizer.step()`` in a
later cell shows up in the widget without displaying it again.
"""
from __future__ import annotations

import warnings
import weakref

_widgets: "weakref.WeakSet" = weakref.WeakSet()
_registered_with: "weakref.ref | None" = None


def track(widget) -> None:
    """Follow ``widget``'s tensor after each cell (when running under IPython)."""
    _widgets.add(widget)
    register(_current_ipython())


def untrack(widget) -> None:
    _widgets.discard(widget)


def tracked() -> list:
    return list(_widgets)


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
    """Refresh every live widget; one failing widget never stops the others or the cell."""
    for widget in list(_widgets):
        if getattr(widget, "comm", None) is None and widget.tensor is None:
            continue
        try:
            widget.refresh()
        except Exception as error:  # a display aid must never break the user's notebook
            warnings.warn(f"gradviz could not refresh a graph widget: {error!r}", RuntimeWarning,
                          stacklevel=2)


def _current_ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()
