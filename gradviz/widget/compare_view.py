"""``gv.compare`` in a notebook: the gradviz graph and the PyTorch graph side by side, each a
``GraphWidget`` that steps its own backward pass, with the report under them.

The verdict is computed by ``gradviz.interop.compare``; this module adds only the display. The
report is plain text from ``Comparison.report()``; it holds user labels, so it is escaped before
it goes into HTML.
"""
from __future__ import annotations

import dataclasses
import html
from typing import Any

from gradviz.interop import compare as interop_compare
from gradviz.snapshot.names import caller_names
from gradviz.snapshot.trace import trace_to_dict

_BOX_STYLE = ("margin: 6px 0; padding: 6px 10px; border: 1px solid var(--jp-border-color1, #c7ccd1); "
              "border-radius: 6px; color: var(--jp-ui-font-color0, inherit);")
_REPORT_STYLE = ("margin: 4px 0 0; white-space: pre-wrap; font-size: 12px; "
                 "font-family: var(--jp-code-font-family, ui-monospace, monospace);")
_TITLE_STYLE = ("margin: 2px 0 4px; font-weight: 600; "
                "font-family: var(--jp-ui-font-family, system-ui, sans-serif);")


class Comparison(interop_compare.Comparison):
    """The verdict of ``gv.compare``, which also draws itself: ``show()`` or a cell's result."""

    def show(self, **options):
        """The two graphs side by side (gradviz left, PyTorch right), the report under them.

        Returns an ipywidgets box; ``options`` go to both ``GraphWidget``s (e.g. ``height=360``).
        """
        return comparison_view(self, **options)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """A cell ending in ``gv.compare(...)`` shows ``show()``; text-only front ends get the report."""
        return comparison_bundle(self)


def compare(gv_tensor: Any, torch_tensor: Any, *, names: dict | None = None,
            rtol: float = 1e-5, atol: float = 1e-6) -> Comparison:
    """``gv.compare``: ``gradviz.interop.compare.compare`` (see there), as a displayable Comparison."""
    if names is None:
        names = caller_names(depth=2)
    result = interop_compare.compare(gv_tensor, torch_tensor, names=names, rtol=rtol, atol=atol)
    return Comparison(**{field.name: getattr(result, field.name) for field in dataclasses.fields(result)})


def report_html(comparison) -> str:
    """The verdict and the text report as HTML, every character of the report escaped."""
    verdict = ("gradviz and PyTorch agree: same names, values and step order" if comparison.agree
               else "gradviz and PyTorch differ (details below)")
    return (f'<div class="gv-compare-report" style="{_BOX_STYLE}">'
            f'<div style="{_TITLE_STYLE}">{"✅" if comparison.agree else "❌"} {html.escape(verdict)}</div>'
            f'<pre style="{_REPORT_STYLE}">{html.escape(comparison.report())}</pre></div>')


def graph_widgets(comparison, **options) -> list:
    """``[gradviz GraphWidget, torch GraphWidget]``, each with its own recorded backward steps."""
    from gradviz.widget.widget import GraphWidget

    widgets = []
    for graph, steps in ((comparison.gradviz_graph, comparison.gradviz_steps),
                         (comparison.torch_graph, comparison.torch_steps)):
        trace = trace_to_dict(steps, graph) if steps else []
        widgets.append(GraphWidget(graph=graph, trace=trace, **{"height": 360, **options}))
    return widgets


def comparison_view(comparison, **options):
    """An ipywidgets ``VBox``: the two graphs in an ``HBox`` (titled), the report under them."""
    import ipywidgets

    columns = []
    for title, widget in zip(["gradviz", "PyTorch"], graph_widgets(comparison, **options)):
        heading = ipywidgets.HTML(f'<div style="{_TITLE_STYLE}">{html.escape(title)}</div>')
        columns.append(ipywidgets.VBox([heading, widget],
                                       layout=ipywidgets.Layout(flex="1 1 0", min_width="0")))
    sides = ipywidgets.HBox(columns, layout=ipywidgets.Layout(width="100%", grid_gap="12px"))
    report = ipywidgets.HTML(report_html(comparison))
    return ipywidgets.VBox([sides, report], layout=ipywidgets.Layout(width="100%"))


def comparison_bundle(comparison) -> dict:
    """The mime bundle a notebook shows: the side-by-side widget where widgets render, the HTML
    report where only HTML does (nbconvert, GitHub), and the text report everywhere else."""
    bundle = {}
    try:
        view = comparison_view(comparison)
    except ImportError:  # no ipywidgets / anywidget: the report alone
        view = None
    if view is not None:
        widget_bundle = view._repr_mimebundle_()
        bundle.update(widget_bundle[0] if isinstance(widget_bundle, tuple) else widget_bundle or {})
    bundle["text/html"] = report_html(comparison)
    bundle["text/plain"] = comparison.report()
    return bundle
