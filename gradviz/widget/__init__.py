"""The JupyterLab widget, the HTML export and the IPython extension."""
from __future__ import annotations

import sys
from typing import Any

from gradviz.widget.export import export_html
from gradviz.widget.ipython import load_ipython_extension, unload_ipython_extension
from gradviz.widget.widget import GraphWidget, check_tensor, names_in


def show(tensor: Any, names: dict | None = None, model: Any = None, **options) -> GraphWidget:
    """A ``GraphWidget`` for ``tensor``'s autograd graph (display it as a cell's result).

    ``names`` labels tensors, ``{"w": w, "b": b}``; when omitted, the variables of the calling
    code (or the notebook) that hold tensors supply the labels. ``model``, an ``nn.Module``,
    labels its parameters (``fc1.weight``) and groups a torch graph's nodes by module.
    ``options`` set the widget's traits, e.g. ``show_saved=True``, ``speed=2``, ``height=600``,
    ``collapse=False``.
    """
    check_tensor(tensor, "show")
    if names is None:
        names = names_in(sys._getframe(1))
    return GraphWidget(tensor, names=names, model=model, **options)


__all__ = ["GraphWidget", "show", "export_html", "load_ipython_extension", "unload_ipython_extension"]
