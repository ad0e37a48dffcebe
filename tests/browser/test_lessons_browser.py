"""Every lesson, run top to bottom in a real JupyterLab 4 at a classroom laptop's 1366×768, in the
light and the dark theme: no page errors, no error outputs, every widget drawn, and screenshots
for a person to read.

The lessons are copied to a temporary root (``lessons/NN_*.ipynb``, the path Binder and
scripts/lab.sh use), so JupyterLab's autosave never writes outputs into the checkout. Each lesson
runs once ("Run All"); then the notebook is scrolled a screen at a time and each screen is saved
as ``tests/artifacts/lessons/<lesson>-<theme>-<NN>.png``, first in JupyterLab Light, then in
JupyterLab Dark.
"""
from __future__ import annotations

import pathlib
import shutil

import pytest
from lab_server import KERNEL_IDLE, NOTEBOOK, jupyterlab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = pathlib.Path(__file__).parents[2]
LESSONS = sorted((REPO / "lessons").glob("[0-9][0-9]_*.ipynb"))
VIEWPORT = {"width": 1366, "height": 768}
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
RUN_TIMEOUT_MS = 240_000

RUN_ALL = "() => { void window.jupyterapp.commands.execute('notebook:run-all-cells'); }"
ALL_RUN = f"""() => {{  // every code cell ran, or one failed (Run All stops there)
    const cells = {NOTEBOOK}.content.widgets.filter(cell => cell.model.type === 'code');
    const failed = cells.some(cell => cell.model.outputs.toJSON().some(o => o.output_type === 'error'));
    return failed || cells.every(cell => cell.model.executionCount !== null);
}}"""
RESULTS = f"""() => {{
    const cells = {NOTEBOOK}.content.widgets.filter(cell => cell.model.type === 'code');
    const outputs = cells.map(cell => cell.model.outputs.toJSON()).flat();
    return {{
        errors: outputs.filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue),
        widgets: outputs.filter(o => o.data && o.data['{WIDGET_MIME}']).length,
    }};
}}"""
SCROLLER = f"{NOTEBOOK}.content.node.querySelector('.jp-WindowedPanel-outer')"
CONTENT_BOTTOM = f"""(() => {{
    const scroller = {SCROLLER};
    const last = {NOTEBOOK}.content.widgets.at(-1).node;
    return last.getBoundingClientRect().bottom - scroller.getBoundingClientRect().top + scroller.scrollTop;
}})()"""


@pytest.fixture(scope="module")
def lessons_lab(tmp_path_factory):
    """JupyterLab rooted at a copy of the lessons; yields its URL."""
    pytest.importorskip("jupyterlab")
    root = tmp_path_factory.mktemp("lessons-lab")
    shutil.copytree(REPO / "lessons", root / "lessons", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    with jupyterlab(root) as url:
        yield url


def set_theme(page, theme: str) -> None:
    page.evaluate(f"window.jupyterapp.commands.execute('apputils:change-theme', {{theme: '{THEMES[theme]}'}})")
    page.wait_for_function(f"document.body.dataset.jpThemeLight === '{str(theme == 'light').lower()}'",
                           timeout=60_000)
    page.wait_for_timeout(500)  # the theme's CSS variables settle


def screenshot_screens(page, folder: pathlib.Path, name: str) -> list:
    """Scroll the notebook a screen at a time (with a little overlap); save each screen."""
    paths = []
    height = page.evaluate(f"{SCROLLER}.clientHeight")
    step = max(200, int(height * 0.85))
    top = 0
    while True:
        page.evaluate(f"{SCROLLER}.scrollTop = {top}")
        page.wait_for_timeout(350)  # outputs scrolled into view finish drawing
        path = folder / f"{name}-{len(paths):02d}.png"
        page.screenshot(path=str(path))
        paths.append(path)
        if top + height >= page.evaluate(CONTENT_BOTTOM) or len(paths) >= 60:
            return paths
        top += step


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda path: path.stem)
def test_lesson_reads_in_jupyterlab_light_and_dark(lesson, browser, lessons_lab, artifacts):
    folder = artifacts / "lessons"
    folder.mkdir(exist_ok=True)
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page_errors = []
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    # a workspace of its own, so JupyterLab does not reopen (and restart kernels for) earlier lessons
    page.goto(f"{lessons_lab}/lab/workspaces/{lesson.stem}/tree/lessons/{lesson.name}")
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    page.add_style_tag(content=".Toastify { display: none !important; }")  # JupyterLab's news toast
    set_theme(page, "light")

    page.evaluate(RUN_ALL)
    page.wait_for_function(ALL_RUN, timeout=RUN_TIMEOUT_MS)
    page.wait_for_function(KERNEL_IDLE, timeout=RUN_TIMEOUT_MS)
    result = page.evaluate(RESULTS)
    assert result["errors"] == [], result["errors"]
    if result["widgets"]:
        page.wait_for_selector(".gv-root svg [data-node-id]", timeout=60_000)

    shots = {theme: None for theme in THEMES}
    for theme in THEMES:
        set_theme(page, theme)
        shots[theme] = screenshot_screens(page, folder, f"{lesson.stem}-{theme}")
    drawn = page.locator(".gv-root").count()
    page.evaluate(f"{NOTEBOOK}.sessionContext.shutdown()")
    context.close()

    assert page_errors == []
    assert drawn >= min(result["widgets"], 1)
    assert len(shots["light"]) == len(shots["dark"]) >= 2
    print(f"{lesson.stem}: {result['widgets']} widgets, {len(shots['light'])} screens per theme")
