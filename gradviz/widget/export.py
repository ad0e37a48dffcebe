"""One self-contained HTML file (or fragment) that draws a graph and steps it with no kernel.

The page carries the widget's state and the very same ES module the notebook uses, both as
JSON inside ``<script type="application/json">`` blocks; a few lines load the module from a
``blob:`` URL and run it against a tiny in-page model (``mount`` in ``gradviz.js``). Nothing is
fetched from any network.

JSON is made safe for a ``<script>`` block by escaping ``<``, ``>`` and ``&`` (and U+2028/9,
which ``ensure_ascii`` already does), so no label can close the block or open another tag.

Sized for a blog: a state whose JSON is over ``COMPRESS_ABOVE`` bytes is shipped gzip-compressed
and base64-encoded (``data-encoding="gzip+base64"``), which shares every repeated string and
number (a 66,000-node graph's 46 MB of JSON becomes about 3 MB); the page inflates it with the
browser's own ``DecompressionStream`` (``readState`` in ``gradviz.js``), so nothing is fetched and
no library is shipped. Smaller states stay readable JSON. Building a big state makes millions of
small dicts and lists that hold no reference cycles, so the cyclic garbage collector is paused
for the whole export (``state.no_cyclic_gc``): it would otherwise rescan them again and again.
A big graph's state is built and shipped in the packed wire form (``gradviz.widget.wire``):
every repeated text and summary once, no default field, no per-step dict.

The state comes from ``gradviz.widget.state``, as the widget's does; this module never imports
anywidget (a ``GraphWidget`` is recognised only if its module was loaded), so exporting works on
a numpy-only install.
"""
from __future__ import annotations

import base64
import gzip
import html
import json
import os
import pathlib
import sys
import uuid
from typing import Any

from gradviz._kinds import is_tensor
from gradviz.snapshot.names import names_from_frame
from gradviz.widget.state import ACCEPTED, check_options, no_cyclic_gc, state_of, view_state
from gradviz.widget.wire import pack_state, unpack_state

_HERE = pathlib.Path(__file__).parent

COMPRESS_ABOVE = 256 * 1024
GZIP_LEVEL = 4
"""zlib's level 4 is the first of its "slow" strategy: on a big state's JSON it takes half the time of
level 6, and its file is a little smaller (a 100,003-node chain) or about a tenth bigger (the
2,000-layer torch model)."""
GZIP_ENCODING = "gzip+base64"

_LOADER = """<script type="module">
const id = "{id}";
const block = (suffix) => document.getElementById(id + suffix);
const url = URL.createObjectURL(new Blob([JSON.parse(block("-esm").textContent)], {{ type: "text/javascript" }}));
const gradviz = await import(url);
URL.revokeObjectURL(url);
const state = block("-state");
gradviz.mount(document.getElementById(id), await gradviz.readState(state.textContent, state.dataset.encoding));
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


def state_block(state: dict, element_id: str) -> str:
    """The ``<script>`` element carrying ``state``: JSON, or gzip+base64 when the JSON is big."""
    text = script_json(state)
    if len(text) <= COMPRESS_ABOVE:
        return f'<script type="application/json" id="{element_id}-state">{text}</script>'
    packed = base64.b64encode(gzip.compress(text.encode("ascii"), compresslevel=GZIP_LEVEL, mtime=0)).decode("ascii")
    return (f'<script type="application/octet-stream" id="{element_id}-state" '
            f'data-encoding="{GZIP_ENCODING}">{packed}</script>')


def read_state(block_text: str, encoding: str | None = None) -> dict:
    """The state a ``state_block`` carries, read back in Python and unpacked (what ``readState``
    and ``decodingModel`` do in the page)."""
    if encoding == GZIP_ENCODING:
        block_text = gzip.decompress(base64.b64decode(block_text)).decode("ascii")
    return unpack_state(json.loads(block_text))


def fragment_html(state: dict) -> str:
    """A ``<div>`` with its CSS, state, module and loader: paste into any page."""
    element_id = "gradviz-" + uuid.uuid4().hex[:12]
    css = (_HERE / "gradviz.css").read_text(encoding="utf-8")
    esm = (_HERE / "gradviz.js").read_text(encoding="utf-8")
    if "</style" in css.lower():
        raise ValueError("gradviz.css must not contain '</style'")
    with no_cyclic_gc():
        block = state_block(pack_state(state), element_id)
    return "\n".join([
        f"<style>{css}</style>",
        f'<div class="gradviz-embed" id="{element_id}"></div>',
        block,
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
    target = writable_path(path)
    if names is None and not _is_graph_widget(tensor_or_widget):
        names = names_from_frame(sys._getframe(1))
    with no_cyclic_gc():  # one pause for the whole export; the state is freed before it ends
        state = _state_for(tensor_or_widget, names, model, options, "export_html")
        heading = title or f"gradviz: {root_label(state['graph']) or 'graph'}"
        page = page_html(state, heading)
        del state
        target.write_text(page, encoding="utf-8")
    return target


def root_label(graph: dict) -> str | None:
    """The label of the graph's root node, in a plain or a packed graph (``wire``)."""
    for position, node in enumerate(graph["nodes"]):
        if node.get("id", f"n{position}") == graph["root"]:
            return node.get("label", node["name"])
    return None


def to_html(tensor_or_widget: Any, names: dict | None = None, model: Any = None, **options) -> str:
    """An HTML fragment (a ``<div>`` with its CSS, state and module) that draws and steps the graph
    in any page, with no kernel; accepts what ``export_html`` accepts."""
    if names is None and not _is_graph_widget(tensor_or_widget):
        names = names_from_frame(sys._getframe(1))
    with no_cyclic_gc():
        return fragment_html(_state_for(tensor_or_widget, names, model, options, "to_html"))


def writable_path(path: Any) -> pathlib.Path:
    """``path`` as a Path, checked before any work: a file name in a folder that exists and that
    this process may write to (a TypeError or ValueError naming ``path`` otherwise)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"export_html(): path= must be a file name (str or os.PathLike), got "
                        f"{type(path).__name__}")
    target = pathlib.Path(path)
    folder = target.parent if str(target.parent) else pathlib.Path(".")
    if target.is_dir():
        raise ValueError(f"export_html(): path= {str(target)!r} is a folder; give a file name, e.g. graph.html")
    if not folder.is_dir():
        raise ValueError(f"export_html(): path= {str(target)!r} is in a folder that does not exist ({str(folder)!r})")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ValueError(f"export_html(): path= {str(target)!r} cannot be written (no permission)")
    return target


def _state_for(tensor_or_widget: Any, names: dict | None, model: Any, options: dict, caller: str) -> dict:
    """The view state of a tensor, or a widget's current state, with ``options`` applied."""
    check_options(options, caller)
    if _is_graph_widget(tensor_or_widget):
        return {**state_of(tensor_or_widget), **options}
    if is_tensor(tensor_or_widget):
        return view_state(tensor_or_widget, names, model, packed=True, **options)
    raise TypeError(f"{caller}() expects {ACCEPTED} or a gradviz.GraphWidget, got "
                    f"{type(tensor_or_widget).__module__}.{type(tensor_or_widget).__qualname__}")


def _is_graph_widget(value: Any) -> bool:
    """A ``GraphWidget``, asked without importing anywidget (no widget exists unless it was loaded)."""
    module = sys.modules.get("gradviz.widget.widget")
    return module is not None and isinstance(value, module.GraphWidget)
