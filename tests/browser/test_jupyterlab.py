"""The widget in a real JupyterLab 4: shown by a cell, stepped by clicks in the trace's order,
``step_index`` synced both ways, live after ``loss.backward()`` runs in the next cell, sized by
ipywidgets' own ``layout``, and no error on the page."""
from __future__ import annotations

import json
import re
import shutil

import pytest
from lab_server import KERNEL_IDLE, lab_with_notebook, run_cell

pytestmark = pytest.mark.browser

CELLS = [
    "import json, torch\n"
    "import gradviz as gv\n"
    "x = torch.tensor(2.0, requires_grad=True)\n"
    "w = torch.tensor(3.0, requires_grad=True)\n"
    "b = torch.tensor(1.0, requires_grad=True)\n"
    "z = x * w + b\n"
    "loss = z * x\n"
    "widget = gv.show(loss)\n"
    'print("ORDER", json.dumps([step["node"] for step in widget.trace]))\n'
    "widget",
    'print("STEP", widget.step_index)',
    "widget.reset()",
    "loss.backward()",
    'widget.layout.width = "640px"',
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 with a notebook that shows the widget; yields its URL."""
    pytest.importorskip("jupyterlab")
    pytest.importorskip("torch")
    if shutil.which("jupyter") is None:
        pytest.skip("jupyter is not installed")
    with lab_with_notebook(tmp_path_factory.mktemp("lab"), "lesson.ipynb", CELLS) as url:
        yield url


def output_text(page, marker: str) -> str:
    # case-sensitive: a plain string matches any case, so "ORDER" would find the widget's own text
    locator = page.locator(".jp-OutputArea-output", has_text=re.compile(re.escape(marker))).last
    locator.wait_for(timeout=120_000)
    return locator.inner_text()


def wait_for_status(page, shown: int, count: int) -> None:
    """Wait until the widget's status line says it shows step ``shown`` of ``count``."""
    page.wait_for_function(
        f"() => {{ const s = document.querySelector('.gv-root .gv-status');"
        f" return Boolean(s) && s.textContent === 'Step {shown} of {count}'; }}", timeout=120_000)


def current_ids(page) -> list:
    return page.eval_on_selector_all(".gv-root .gv-current", "els => els.map(e => e.getAttribute('data-node-id'))")


def test_widget_in_jupyterlab_steps_and_goes_live(browser, lab, artifacts):
    context = browser.new_context(viewport={"width": 1200, "height": 1000})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{lab}/lab/tree/lesson.ipynb")
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)

    page.add_style_tag(content=".Toastify { display: none !important; }")  # JupyterLab's news toast
    run_cell(page, 0)
    order = json.loads(output_text(page, "ORDER").split("ORDER", 1)[1])
    # Ready: the view drew the graph and holds the whole trace (a click before that was the flake).
    wait_for_status(page, 0, len(order))
    assert page.locator(".gv-root").count() == 1  # the text/html fallback is not drawn beside the live view
    names = page.eval_on_selector_all(".gv-root [data-node-id]", "els => els.map(e => e.getAttribute('data-name'))")
    assert {"x", "w", "b", "MulBackward0", "AddBackward0", "AccumulateGrad"} <= set(names)
    assert current_ids(page) == []

    seen = []
    for index in range(len(order)):
        page.click(".gv-root [data-action=next]")
        wait_for_status(page, index + 1, len(order))
        seen.append(current_ids(page))
        if index == 2:
            page.locator(".gv-root").screenshot(path=str(artifacts / "widget-mid-step.png"))
    assert seen == [[node] for node in order]

    run_cell(page, 1)  # browser -> Python: the kernel sees the step the learner clicked to
    assert output_text(page, "STEP").strip() == f"STEP {len(order)}"
    run_cell(page, 2)  # Python -> browser
    page.wait_for_function("document.querySelectorAll('.gv-root .gv-current').length === 0", timeout=60_000)

    x_node = "[data-name=x]"
    assert "grad: None" in page.text_content(f".gv-root {x_node}")
    run_cell(page, 3)  # loss.backward(): the widget follows without being shown again
    page.wait_for_function(
        f"document.querySelector('.gv-root {x_node}').textContent.includes('grad: 13.')", timeout=60_000)
    page.wait_for_function("document.querySelector('.gv-root .gv-note') && "
                           "document.querySelector('.gv-root .gv-note').textContent.includes('freed')",
                           timeout=60_000)
    assert page.locator(".gv-root .gv-freed").count() >= 1
    page.locator(".gv-root").screenshot(path=str(artifacts / "widget-live-after-backward.png"))

    run_cell(page, 4)  # `layout` is ipywidgets' own again: it sizes the view
    page.wait_for_function("Math.round(document.querySelector('.gv-root').getBoundingClientRect().width) <= 640",
                           timeout=60_000)

    page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=60_000)
    page.click(".gv-root [data-action=next]")
    page.click(".gv-root [data-action=next]")
    page.locator(".gv-root").screenshot(path=str(artifacts / "widget-dark.png"))
    assert errors == []  # e.g. no TypeError from a trait shadowing ipywidgets' layout
    context.close()
