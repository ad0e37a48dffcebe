"""In a real JupyterLab 4, the kernel learns which widgets are on screen (gradviz.js reports each
view that appears and goes away) and releases a widget once its output is cleared and nothing
else holds it; until then it is kept and followed."""
from __future__ import annotations

import shutil

import pytest
from lab_server import lab_with_notebook, open_notebook
from test_jupyterlab import output_text, run_cell

pytestmark = pytest.mark.browser

REPORT = ("print('{marker}', len(live.tracked()), [w._views for w in live.tracked()], "
          "len([m for m in _instances.values() if type(m).__name__ == 'GraphWidget']))")
CELLS = [
    "import gradviz as gv\n"
    "from gradviz.widget import live\n"
    "from ipywidgets.widgets.widget import _instances\n"
    "x = gv.tensor(2.0, requires_grad=True)\n"
    "loss = x * x\n"
    "gv.show(loss)",  # held by the output history only
    REPORT.format(marker="SHOWN"),
    REPORT.format(marker="CLEARED"),
    REPORT.format(marker="AFTER"),
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    pytest.importorskip("jupyterlab")
    if shutil.which("jupyter") is None:
        pytest.skip("jupyter is not installed")
    with lab_with_notebook(tmp_path_factory.mktemp("lab-release"), "release.ipynb", CELLS) as url:
        yield url


def test_a_cleared_widget_is_released_and_a_shown_one_is_kept(browser, lab):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    open_notebook(page, f"{lab}/lab/tree/release.ipynb")

    run_cell(page, 0)
    page.wait_for_selector(".gv-root [data-node-id]", timeout=120_000)
    run_cell(page, 1)  # the view was reported: the widget is kept although no variable holds it
    assert output_text(page, "SHOWN").split() == ["SHOWN", "1", "[1]", "1"]

    page.evaluate("""async () => {
        const panel = window.jupyterapp.shell.currentWidget;
        panel.content.activeCellIndex = 0;
        await window.jupyterapp.commands.execute('notebook:clear-cell-output');
    }""")
    page.wait_for_function("document.querySelectorAll('.gv-root').length === 0", timeout=60_000)
    run_cell(page, 2)  # the view went away; this cell's end releases the widget
    assert output_text(page, "CLEARED").split()[:3] == ["CLEARED", "1", "[0]"]
    run_cell(page, 3)
    assert output_text(page, "AFTER").split() == ["AFTER", "0", "[]", "0"]
    assert errors == []
    context.close()
