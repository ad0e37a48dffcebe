"""The JupyterLab widget, the HTML export and the IPython extension.

Importing this package needs no anywidget: ``export_html`` and ``to_html`` work on a numpy-only
install, and ``GraphWidget`` (with ``show``) loads anywidget only when first used.
"""
from __future__ import annotations

import sys
from typing import Any

from gradviz.snapshot.names import names_from_frame
from gradviz.widget.export import export_html, to_html
from gradviz.widget.ipython import load_ipython_extension, unload_ipython_extension
from gradviz.widget.state import check_options, check_tensor, no_cyclic_gc


def show(tensor: Any, names: dict | None = None, model: Any = None, **options):
    """A ``GraphWidget`` for ``tensor``'s autograd graph (display it as a cell's result).

    ``names`` labels tensors, ``{"w": w, "b": b}``; when omitted, the variables of the calling
    code (or the notebook) that hold tensors supply the labels. ``model``, an ``nn.Module``,
    labels its parameters (``fc1.weight``) and groups the graph's nodes by module.
    ``options`` set the widget's traits, e.g. ``show_saved=True``, ``speed=2``, ``height=600``,
    ``collapse=False``, ``predict=True`` (for exercises: predict each step's gradient before
    it is shown). Needs anywidget (``pip install "gradviz-lab[widget]"``).
    """
    check_tensor(tensor, "show")
    check_options(options, "show")
    if names is None:
        names = names_from_frame(sys._getframe(1))
    from gradviz.widget.widget import GraphWidget

    with no_cyclic_gc():
        return GraphWidget(tensor, names=names, model=model, **options)


def __getattr__(name: str):
    """``GraphWidget`` is imported on first use, so that this package does not need anywidget."""
    if name == "GraphWidget":
        from gradviz.widget.widget import GraphWidget

        globals()[name] = GraphWidget
        return GraphWidget
    raise AttributeError(f"module 'gradviz.widget' has no attribute '{name}'")


__all__ = ["GraphWidget", "show", "export_html", "to_html", "load_ipython_extension", "unload_ipython_extension"]
