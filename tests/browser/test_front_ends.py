"""The widget beyond JupyterLab: in Notebook 7 (drawn once, stepped, no page error), in marimo
(through ``mo.ui.anywidget``, when marimo is installed), and in a notebook saved with outputs
and converted by ``jupyter nbconvert --to html``, where the widget's ``text/html`` fallback draws
the graph and steps it with no kernel and no network."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest
from lab_server import KERNEL_IDLE, REPO, free_port, jupyterlab, run_cell

pytestmark = pytest.mark.browser

CELL = ("import json\n"
        "import gradviz as gv\n"
        "x = gv.tensor(2.0, requires_grad=True)\n"
        "w = gv.tensor(3.0, requires_grad=True)\n"
        "loss = (x * w + 1) * x\n"
        "widget = gv.show(loss)\n"
        'print("ORDER", json.dumps([step["node"] for step in widget.trace]))\n'
        "widget")


def checkout_first() -> dict:
    """The environment for a kernel that imports this checkout's gradviz (not an installed one)."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def notebook_with(cells: list):
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return notebook


def step_through(page, scope: str, order: list) -> None:
    """Click Next once per step; after each, the one current node is the trace's next node.
    Locators only (they reach into shadow roots, where marimo puts widgets)."""
    from playwright.sync_api import expect

    view = page.locator(scope).first
    for index, node in enumerate(order):
        view.locator("[data-action=next]").click()
        expect(view.locator(".gv-status")).to_have_text(f"Step {index + 1} of {len(order)}", timeout=60_000)
        current = view.locator(".gv-current")
        expect(current).to_have_count(1)
        assert current.get_attribute("data-node-id") == node


def test_widget_in_notebook_7_draws_once_and_steps(browser, tmp_path, artifacts):
    pytest.importorskip("notebook", minversion="7")
    if shutil.which("jupyter") is None:
        pytest.skip("jupyter is not installed")
    import nbformat

    nbformat.write(notebook_with(["1 + 1"]), tmp_path / "plain.ipynb")
    nbformat.write(notebook_with([CELL]), tmp_path / "front.ipynb")
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append((error.message, error.stack or "")))
    with jupyterlab(tmp_path, app="notebook") as url:
        # Notebook 7.6.5 itself throws on opening any notebook here ("Cannot read properties of
        # undefined (reading 'schema')": its shortcuts plugin reads the settings of a plugin it has
        # not loaded). Every page error must be Notebook's own: raised in its own bundle (each
        # frame of the stack in /static/notebook/), and one a notebook without gradviz raises too.
        page.goto(f"{url}/notebooks/plain.ipynb")
        page.wait_for_function(KERNEL_IDLE, timeout=120_000)
        run_cell(page, 0)
        baseline = {message for message, _ in errors}
        errors.clear()
        page.goto(f"{url}/notebooks/front.ipynb")
        page.wait_for_function(KERNEL_IDLE, timeout=120_000)
        run_cell(page, 0)
        text = page.locator(".jp-OutputArea-output", has_text="ORDER").first.inner_text()
        order = json.loads(text.split("ORDER", 1)[1])
        page.wait_for_function(f"document.querySelector('.gv-root .gv-status') && document.querySelector("
                               f"'.gv-root .gv-status').textContent === 'Step 0 of {len(order)}'", timeout=120_000)
        assert page.locator(".gv-root").count() == 1  # the widget view only, not the text/html fallback too
        assert page.locator(".gradviz-embed").count() == 0
        step_through(page, ".gv-root", order)
        page.locator(".gv-root").screenshot(path=str(artifacts / "notebook7-widget.png"))
    assert [message for message, _ in errors if message not in baseline] == []
    assert [stack for _, stack in errors if not notebooks_own(stack)] == []
    context.close()


def notebooks_own(stack: str) -> bool:
    """Whether an error's stack runs only through Notebook's own bundle (never the widget's module,
    which anywidget loads from a blob: URL, nor any other extension's)."""
    located = [line for line in stack.splitlines()  # "at async Promise.all (index 0)" has no place
               if line.strip().startswith("at ") and ("://" in line or "blob:" in line)]
    return bool(located) and all("/static/notebook/" in line for line in located)


@pytest.mark.parametrize("save_state", [False, True], ids=["default", "widget-state-saved"])
def test_a_saved_notebook_opened_again_in_jupyterlab(browser, tmp_path, artifacts, save_state):
    """What the README says about a notebook saved and opened again before anything runs.

    By default JupyterLab saves no widget state: the output is a widget view whose model died with
    the kernel, and JupyterLab's own renderer says "Error displaying widget: model not found"
    (Run All draws it again). With its setting "Save Jupyter widget state in notebooks" on, the
    state, module included, is in the notebook: the graph draws and steps with no cell run."""
    pytest.importorskip("jupyterlab")
    import nbformat

    from lab_server import NOTEBOOK

    if save_state:
        settings = tmp_path / "config/lab/user-settings/@jupyter-widgets/jupyterlab-manager"
        settings.mkdir(parents=True)
        (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"saveState": True}))
    nbformat.write(notebook_with([CELL]), tmp_path / "saved.ipynb")
    page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(error.message))
    with jupyterlab(tmp_path) as url:
        page.goto(f"{url}/lab/tree/saved.ipynb")
        page.wait_for_function(KERNEL_IDLE, timeout=120_000)
        run_cell(page, 0)
        order = json.loads(page.locator(".jp-OutputArea-output", has_text="ORDER").first.inner_text().split("ORDER", 1)[1])
        page.wait_for_selector(".gv-root [data-node-id]")
        page.evaluate(f"async () => {{ await window.jupyterapp.commands.execute('docmanager:save'); "
                      f"await {NOTEBOOK}.sessionContext.shutdown(); }}")
        saved = nbformat.read(tmp_path / "saved.ipynb", as_version=4)
        assert ("widgets" in saved.metadata) == save_state
        page.goto(f"{url}/lab/tree/saved.ipynb")  # a fresh kernel: the cell has not run in it
        page.wait_for_function(KERNEL_IDLE, timeout=120_000)
        page.add_style_tag(content=".Toastify { display: none !important; }")
        output = page.locator(".jp-OutputArea-output").nth(1)
        if not save_state:
            from playwright.sync_api import expect

            expect(output).to_have_text("Error displaying widget: model not found", timeout=60_000)
        else:
            page.wait_for_selector(".gv-root [data-node-id]", timeout=60_000)
            step_through(page, ".gv-root", order)
            page.locator(".gv-root").screenshot(path=str(artifacts / "jupyterlab-saved-state-stepped.png"))
        assert page.evaluate(f"() => {NOTEBOOK}.content.widgets[0].model.executionCount") in (None, 1)
    assert errors == []


def test_nbconvert_html_steps_with_no_kernel_and_no_network(offline_page, tmp_path, artifacts):
    nbclient = pytest.importorskip("nbclient")
    exporters = pytest.importorskip("nbconvert.exporters")

    notebook = notebook_with([CELL, "loss.backward()\nprint(x.grad)"])
    # As JupyterLab saves a notebook by default: outputs kept, no widget state in the metadata.
    nbclient.NotebookClient(notebook, timeout=60, kernel_name="python3", store_widget_state=False,
                            resources={"metadata": {"path": str(tmp_path)}}).execute(env=checkout_first())
    order = json.loads(notebook.cells[0].outputs[0]["text"].split("ORDER", 1)[1])
    body, _ = exporters.HTMLExporter(template_name="lab").from_notebook_node(notebook)
    path = tmp_path / "converted.html"
    path.write_text(body, encoding="utf-8")

    page = offline_page
    page.goto(path.as_uri())
    page.wait_for_selector(".gradviz-embed .gv-root [data-node-id]")
    assert page.locator(".gv-root").count() == 1
    assert page.inner_text(".gv-status") == f"Step 0 of {len(order)}"
    step_through(page, ".gradviz-embed", order)
    page.screenshot(path=str(artifacts / "nbconvert-stepped.png"))
    assert page.errors == []
    assert all(not url.startswith("file:") for url in page.blocked)  # only CDN extras were refused


MARIMO_APP = textwrap.dedent("""
    import marimo

    app = marimo.App()


    @app.cell
    def _():
        import json
        import marimo as mo
        import gradviz as gv

        x = gv.tensor(2.0, requires_grad=True)
        w = gv.tensor(3.0, requires_grad=True)
        loss = (x * w + 1) * x
        widget = gv.show(loss, names={"x": x, "w": w})
        mo.vstack([mo.md("ORDER " + json.dumps([step["node"] for step in widget.trace])), mo.ui.anywidget(widget)])
        return
""")


def test_widget_in_marimo_steps(browser, tmp_path, artifacts):
    pytest.importorskip("marimo")
    (tmp_path / "app.py").write_text(MARIMO_APP)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "marimo", "run", "app.py", "--headless", "--no-token",
                               "-p", str(port)], cwd=tmp_path, env=checkout_first(),
                              stdout=subprocess.DEVNULL, stderr=open(tmp_path / "server.log", "w"))
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
                time.sleep(0.5)
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_selector(".gv-root [data-node-id]", timeout=120_000)
        order = json.loads(page.locator("text=ORDER").first.inner_text().split("ORDER", 1)[1])
        step_through(page, ".gv-root", order)
        page.locator(".gv-root").screenshot(path=str(artifacts / "marimo-widget.png"))
    finally:
        context.close()
        server.terminate()
        server.wait(timeout=20)
    assert errors == []
