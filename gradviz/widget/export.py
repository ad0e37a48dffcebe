"""One self-contained HTML file (or fragment) that draws a graph and steps it with no kernel.

The page carries the widget's state and the very same ES module the notebook uses, both as
JSON inside ``<script type="application/json">`` blocks; a few lines load the module from a
``blob:`` URL and run it against a tiny in-page model (``mount`` in ``gradviz.js``). Nothing is
fetched from any network.

JSON is made safe for a ``<script>`` block by escaping ``<``, ``>`` and ``&`` (and U+2028/9,
which ``ensure_ascii`` already does), so no label can close the block or open another tag.
"""
from __future__ import annotations

import html
import json
import pathlib
import sys
import uuid
from typing import Any

from gradviz.render.layout import compute_layout

_HERE = pathlib.Path(__file__).parent

STATE_TRAITS = ("graph", "graph_layout", "trace", "step_index", "show_saved", "speed", "height", "note", "collapse")
OPTIONS = {"show_saved": False, "speed": 1.0, "height": 480, "collapse": "auto"}  # and their defaults

_LOADER = """<script type="module">
const id = "{id}";
const read = (suffix) => JSON.parse(document.getElementById(id + suffix).textContent);
const url = URL.createObjectURL(new Blob([read("-esm")], {{ type: "text/javascript" }}));
const gradviz = await import(url);
URL.revokeObjectURL(url);
gradviz.mount(document.getElementById(id), read("-state"));
</script>"""

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ margin: 16px; font-family: system-ui, sans-serif; background: Canvas; color: CanvasText; }}
:root {{ color-scheme: light dark; }}
</style>
</head>
<body>
{fragment}
</body>
</html>
"""


def script_json(value: Any) -> str:
    """JSON that can sit inside a ``<script>`` element without ending it early."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def widget_state(widget) -> dict:
    """The trait values the front end reads."""
    return {name: getattr(widget, name) for name in STATE_TRAITS}


def tensor_state(tensor: Any, names: dict | None, model: Any = None, **options) -> dict:
    """The same state for a tensor, without creating a live widget; ``options`` as in ``OPTIONS``."""
    from gradviz.widget.widget import snapshot_state

    check_options(options)
    graph, steps, note = snapshot_state(tensor, names, model=model)
    return {"graph": graph.to_dict(), "graph_layout": compute_layout(graph), "trace": steps,
            "step_index": 0, "note": note, **OPTIONS, **options}


def check_options(options: dict) -> None:
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; accepted: {sorted(OPTIONS)}")


def fragment_html(state: dict) -> str:
    """A ``<div>`` with its CSS, state, module and loader: paste into any page."""
    element_id = "gradviz-" + uuid.uuid4().hex[:12]
    css = (_HERE / "gradviz.css").read_text(encoding="utf-8")
    esm = (_HERE / "gradviz.js").read_text(encoding="utf-8")
    if "</style" in css.lower():
        raise ValueError("gradviz.css must not contain '</style'")
    return "\n".join([
        f"<style>{css}</style>",
        f'<div class="gradviz-embed" id="{element_id}"></div>',
        f'<script type="application/json" id="{element_id}-state">{script_json(state)}</script>',
        f'<script type="application/json" id="{element_id}-esm">{script_json(esm)}</script>',
        _LOADER.format(id=element_id),
    ])


def widget_fragment(widget) -> str:
    return fragment_html(widget_state(widget))


def page_html(state: dict, title: str = "gradviz") -> str:
    return _PAGE.format(title=html.escape(title), fragment=fragment_html(state))


def export_html(tensor_or_widget: Any, path: str | pathlib.Path, names: dict | None = None,
                model: Any = None, title: str | None = None, **options) -> pathlib.Path:
    """Write ONE self-contained HTML file that draws the graph and steps it in any browser.

    Accepts a gradviz or torch tensor (labels from ``names``, else from the caller's variables;
    ``model`` names parameters and groups nodes by module) or a ``GraphWidget`` (its current
    state, step included). ``options``: ``show_saved``, ``speed``, ``height``, ``collapse``.
    Returns the path written.
    """
    from gradviz.widget.widget import ACCEPTED, GraphWidget, check_tensor, names_in

    if isinstance(tensor_or_widget, GraphWidget):
        check_options(options)
        state = {**widget_state(tensor_or_widget), **options}
    else:
        try:
            check_tensor(tensor_or_widget, "export_html")
        except TypeError:
            raise TypeError(f"export_html() expects {ACCEPTED} or a gradviz.GraphWidget, got "
                            f"{type(tensor_or_widget).__module__}."
                            f"{type(tensor_or_widget).__qualname__}") from None
        if names is None:
            names = names_in(sys._getframe(1))
        state = tensor_state(tensor_or_widget, names, model, **options)
    root = next((n for n in state["graph"]["nodes"] if n["id"] == state["graph"]["root"]), None)
    heading = title or f"gradviz: {root['label'] if root else 'graph'}"
    target = pathlib.Path(path)
    target.write_text(page_html(state, heading), encoding="utf-8")
    return target
