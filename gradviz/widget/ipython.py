"""``%load_ext gradviz``: tensors with a grad_fn display as the graph widget.

The widget view is added through IPython's mimebundle formatter, so a cell whose result is such
a tensor shows the widget while ``text/plain`` stays the tensor's own (PyTorch-style) repr.
Showing the same tensor again adds a view of the widget already made for it (no pile of widgets);
a widget nothing shows or holds any more is released by the live refresh, which the extension
registers too.
"""
from __future__ import annotations

import sys
import weakref
from typing import Any

from gradviz.snapshot.names import tensors_in
from gradviz.widget import live

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def load_ipython_extension(ipython) -> None:
    from gradviz.tensor import Tensor

    formatter = ipython.display_formatter.mimebundle_formatter
    bundle = _widget_bundle_for(ipython)
    formatter.for_type(Tensor, bundle)
    formatter.for_type_by_name("torch", "Tensor", bundle)  # no torch import until one is shown
    live.register(ipython)


def unload_ipython_extension(ipython) -> None:
    from gradviz.tensor import Tensor

    formatter = ipython.display_formatter.mimebundle_formatter
    formatter.type_printers.pop(Tensor, None)
    formatter.deferred_printers.pop(("torch", "Tensor"), None)
    torch = sys.modules.get("torch")
    if torch is not None:  # a deferred printer moves here once a torch tensor was shown
        formatter.type_printers.pop(torch.Tensor, None)
    live.unregister(ipython)


def _widget_bundle_for(ipython):
    shown: dict = {}  # id(tensor) -> (weakref to the tensor, weakref to its widget)

    def bundle(tensor: Any, include=None, exclude=None):
        if getattr(tensor, "grad_fn", None) is None:
            return None
        widget = _widget_shown_for(shown, tensor)
        if widget is None:
            from gradviz.widget.widget import GraphWidget

            widget = GraphWidget(tensor, names=tensors_in(ipython.user_ns))
            shown[id(tensor)] = (weakref.ref(tensor), weakref.ref(widget))
        else:
            widget.refresh_if_changed()
        data, _ = widget._repr_mimebundle_()  # marks it displayed; the view plus the no-kernel fallback
        return {mime: value for mime, value in data.items() if mime != "text/plain"}  # text: the tensor's repr
    return bundle


def _widget_shown_for(shown: dict, tensor: Any):
    """The open widget already made for ``tensor``, so that showing a tensor again adds a view of
    the same widget instead of a new widget each time; dead entries are dropped on the way."""
    for key, (tensor_ref, widget_ref) in list(shown.items()):
        if tensor_ref() is None or widget_ref() is None or widget_ref().tensor is None:
            del shown[key]
    entry = shown.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return None
    return entry[1]()
