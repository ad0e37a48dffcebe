"""One self-contained HTML file (or fragment) that draws a graph and steps it with no kernel.

The page carries the widget's state and the very same ES module the notebook uses, both as
JSON inside ``<script type="application/json">`` blocks; a few lines load the module from a
``blob:`` URL and run it against a tiny in-page model (``mount`` in ``gradviz.js``). Nothing is
fetched from any network.

JSON is made safe for a ``<script>`` block by escaping ``<``, ``>`` and ``&`` (and U+2028/9,
which ``ensure_ascii`` already does), so no label can close the block or open another tag.

The state comes from ``gradviz.widget.state``, as the widget's does; this module never imports
anywidget (a ``GraphWidget`` is recognised only if its module was loaded), so exporting works on
a numpy-only install.
"""
from __future__ import annotations

import html
import json
import pathlib
import sys
import uuid
from typing import Any

from gradviz._kinds import is_tensor
from gradviz.snapshot.names import names_from_frame
from gradviz.widget.state import ACCEPTED, check_options, state_of, view_state

_HERE = pathlib.Path(__file__).parent

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


def page_html(state: dict, title: str = "gradviz") -> str:
    return _PAGE.format(title=html.escape(title), fragment=fragment_html(state))


def export_html(tensor_or_widget: Any, path: str | pathlib.Path, names: dict | None = None,
                model: Any = None, title: str | None = None, **options) -> pathlib.Path:
    """Write ONE self-contained HTML file that draws the graph and steps it in any browser.

    Accepts a gradviz or torch tensor (labels from ``names``, else from the caller's variables;
    ``model`` names parameters and groups nodes by module) or a ``GraphWidget`` (its current
    state, step included). ``options``: ``show_saved``, ``speed``, ``height``, ``collapse``, ``predict``.
    Returns the path written.
    """
    if names is None and not _is_graph_widget(tensor_or_widget):
        names = names_from_frame(sys._getframe(1))
    state = _state_for(tensor_or_widget, names, model, options, "export_html")
    root = next((n for n in state["graph"]["nodes"] if n["id"] == state["graph"]["root"]), None)
    heading = title or f"gradviz: {root['label'] if root else 'graph'}"
    target = pathlib.Path(path)
    target.write_text(page_html(state, heading), encoding="utf-8")
    return target


def to_html(tensor_or_widget: Any, names: dict | None = None, model: Any = None, **options) -> str:
    """An HTML fragment (a ``<div>`` with its CSS, state and module) that draws and steps the graph
    in any page, with no kernel; accepts what ``export_html`` accepts."""
    if names is None and not _is_graph_widget(tensor_or_widget):
        names = names_from_frame(sys._getframe(1))
    return fragment_html(_state_for(tensor_or_widget, names, model, options, "to_html"))


def _state_for(tensor_or_widget: Any, names: dict | None, model: Any, options: dict, caller: str) -> dict:
    """The view state of a tensor, or a widget's current state, with ``options`` applied."""
    if _is_graph_widget(tensor_or_widget):
        check_options(options)
        return {**state_of(tensor_or_widget), **options}
    if is_tensor(tensor_or_widget):
        return view_state(tensor_or_widget, names, model, **options)
    raise TypeError(f"{caller}() expects {ACCEPTED} or a gradviz.GraphWidget, got "
                    f"{type(tensor_or_widget).__module__}.{type(tensor_or_widget).__qualname__}")


def _is_graph_widget(value: Any) -> bool:
    """A ``GraphWidget``, asked without importing anywidget (no widget exists unless it was loaded)."""
    module = sys.modules.get("gradviz.widget.widget")
    return module is not None and isinstance(value, module.GraphWidget)
