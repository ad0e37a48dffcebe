"""``%load_ext gradviz``: tensors with a grad_fn display as the graph widget.

The widget view is added through IPython's mimebundle formatter, so a cell whose result is such
a tensor shows the widget while ``text/plain`` stays the tensor's own (PyTorch-style) repr. The
extension also registers the callback that keeps widgets live after each cell.
"""
from __future__ import annotations

import sys
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
    def bundle(tensor: Any, include=None, exclude=None):
        if getattr(tensor, "grad_fn", None) is None:
            return None
        from gradviz.widget.widget import GraphWidget

        widget = GraphWidget(tensor, names=tensors_in(ipython.user_ns))
        data, _ = widget._repr_mimebundle_()
        return {mime: value for mime, value in data.items() if mime != "text/plain"}  # text: the tensor's repr
    return bundle
