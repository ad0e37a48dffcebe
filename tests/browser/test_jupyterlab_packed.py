"""A big graph's widget in a real JupyterLab 4: its traits arrive packed (``gradviz/widget/wire.py``)
and the front end unpacks them, so it draws, steps in the trace's order and follows a later
``backward()`` (a ``.grad``-only update laid over the packed traits) as a small one does."""
from __future__ import annotations

import json
import re
import shutil

import pytest
from lab_server import KERNEL_IDLE, lab_with_notebook, run_cell

pytestmark = pytest.mark.browser

CELLS = [
    "import json\n"
    "import gradviz as gv\n"
    "from gradviz.widget import wire\n"
    "from gradviz.widget.widget import _json_buffer\n"
    "x = gv.tensor(1.5, requires_grad=True)\n"
    "total = x * 0.0\n"
    "for i in range(100):\n"
    "    total = total + x * float(i)\n"
    "widget = gv.show(total, names={'x': x, 'total': total}, collapse=False)\n"
    "packed = all(wire.is_packed(json.loads(_json_buffer(getattr(widget, name), widget)))\n"
    "             for name in ('graph', 'graph_layout', 'trace'))\n"
    'print("ORDER", json.dumps({"packed": packed, "nodes": len(widget.graph["nodes"]),\n'
    '                           "order": [step["node"] for step in widget.trace]}))\n'
    "widget",
    "total.backward(retain_graph=True)",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    pytest.importorskip("jupyterlab")
    if shutil.which("jupyter") is None:
        pytest.skip("jupyter is not installed")
    with lab_with_notebook(tmp_path_factory.mktemp("lab"), "big.ipynb", CELLS) as url:
        yield url


def test_a_packed_widget_steps_and_goes_live_in_jupyterlab(browser, lab, artifacts):
    context = browser.new_context(viewport={"width": 1200, "height": 1000})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{lab}/lab/tree/big.ipynb")
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    page.add_style_tag(content=".Toastify { display: none !important; }")

    run_cell(page, 0)
    locator = page.locator(".jp-OutputArea-output", has_text=re.compile("ORDER")).last
    locator.wait_for(timeout=120_000)
    shown = json.loads(locator.inner_text().split("ORDER", 1)[1])
    order = shown["order"]
    assert shown["packed"] and shown["nodes"] > 250
    page.wait_for_function(
        "() => { const s = document.querySelector('.gv-root .gv-status');"
        f" return Boolean(s) && s.textContent === 'Step 0 of {len(order)}'; }}", timeout=120_000)
    assert page.locator(".gv-root [data-node-id]").count() == shown["nodes"]

    seen = []
    for _ in range(6):
        page.click(".gv-root [data-action=next]")
        seen.append(page.eval_on_selector_all(".gv-root .gv-current",
                                              "els => els.map(e => e.getAttribute('data-node-id'))"))
    assert seen == [[node] for node in order[:6]]

    assert "grad: None" in page.text_content(".gv-root [data-name=x]")
    run_cell(page, 1)  # .grad moves: sent as grad_updates, laid over the packed traits
    page.wait_for_function(
        "document.querySelector('.gv-root [data-name=x]').textContent.includes('grad: 4950.')", timeout=60_000)
    page.locator(".gv-root").screenshot(path=str(artifacts / "widget-packed-live.png"))
    assert errors == []
