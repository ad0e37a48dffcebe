"""The exported HTML in a real browser with every network request blocked: it steps end to end,
in the trace's order, and hostile labels show as text and run nothing."""
from __future__ import annotations

import pytest

from fixtures.widget_graphs import HOSTILE, lesson_graph
from gradviz.widget import GraphWidget, export_html

pytestmark = pytest.mark.browser


def current_ids(page) -> list:
    return page.eval_on_selector_all(".gv-current", "els => els.map(e => e.getAttribute('data-node-id'))")


def open_export(page, tmp_path, label_x="x", name="graph.html"):
    graph, trace, _, _ = lesson_graph(label_x)
    path = export_html(GraphWidget(graph=graph, trace=trace), tmp_path / name)
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    return graph, trace


def test_export_steps_end_to_end_offline(offline_page, tmp_path, artifacts):
    page = offline_page
    graph, trace = open_export(page, tmp_path)
    assert page.locator("[data-node-id]").count() == len(graph.nodes)
    names = page.eval_on_selector_all("[data-node-id]", "els => els.map(e => e.getAttribute('data-name'))")
    assert "MulBackward0" in names and "AccumulateGrad" in names and "x" in names
    assert current_ids(page) == []
    assert page.inner_text(".gv-status") == f"Step 0 of {len(trace)}"

    order = []
    for index in range(len(trace)):
        page.click("[data-action=next]")
        order.append(current_ids(page))
        assert page.inner_text(".gv-status") == f"Step {index + 1} of {len(trace)}"
        assert page.locator(".gv-done").count() == index
        if index == 3:
            page.screenshot(path=str(artifacts / "export-mid-step.png"))
    assert order == [[step["node"]] for step in trace]

    page.click("[data-action=prev]")
    assert current_ids(page) == [trace[-2]["node"]]
    page.click("[data-action=reset]")
    assert current_ids(page) == [] and page.locator(".gv-done").count() == 0
    page.click("[data-action=end]")
    assert current_ids(page) == [trace[-1]["node"]]
    assert page.blocked == [] and page.errors == []


def test_keyboard_and_play(offline_page, tmp_path):
    page = offline_page
    _, trace = open_export(page, tmp_path)
    page.focus(".gv-root")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert current_ids(page) == [trace[1]["node"]]
    page.keyboard.press("ArrowLeft")
    assert current_ids(page) == [trace[0]["node"]]
    page.keyboard.press("End")
    assert current_ids(page) == [trace[-1]["node"]]
    page.keyboard.press("Home")
    assert current_ids(page) == []
    page.select_option("[data-option=speed]", "8")
    page.click("[data-action=play]")
    page.wait_for_function(f"document.querySelector('.gv-status').textContent === 'Step {len(trace)} of {len(trace)}'",
                           timeout=20_000)
    assert page.get_attribute("[data-action=play]", "aria-label") == "Play"  # stopped at the end


def test_chain_rule_panel_shows_sums_and_accumulation(offline_page, tmp_path):
    page = offline_page
    graph, trace = open_export(page, tmp_path)
    x_step = next(i for i, step in enumerate(trace) if step["leaf"] and graph.node(step["leaf"]).label == "x")
    for _ in range(x_step + 1):
        page.click("[data-action=next]")
    panel = page.inner_text(".gv-panel")
    assert "2 contributions summed" in panel
    assert "before: None" in panel and "after:  13." in panel
    x_text = page.text_content(f"[data-node-id={trace[x_step]['leaf']}]")
    assert "grad: 13." in x_text
    assert page.locator("path.gv-edge-in").count() == 2  # both uses of x send a piece


def test_hostile_label_shows_as_text_and_runs_nothing(offline_page, tmp_path, artifacts):
    page = offline_page
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    open_export(page, tmp_path, label_x=HOSTILE, name="hostile.html")
    for _ in range(6):
        page.click("[data-action=next]")
    names = page.eval_on_selector_all("[data-node-id]", "els => els.map(e => e.getAttribute('data-name'))")
    assert HOSTILE in names
    assert page.locator(".gv-root img").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert "<img src=x" in page.text_content(".gv-svg")  # drawn as text in the node
    assert dialogs == [] and page.errors == []
    page.screenshot(path=str(artifacts / "export-hostile-label.png"))


def test_fragment_embeds_twice_in_one_page(offline_page, tmp_path):
    graph, trace, _, _ = lesson_graph()
    widget = GraphWidget(graph=graph, trace=trace)
    path = tmp_path / "post.html"
    path.write_text(f"<!doctype html><meta charset=utf-8><h1>Blog post</h1>{widget.to_html()}<p>text</p>"
                    f"{widget.to_html()}")
    page = offline_page
    page.goto(path.as_uri())
    page.wait_for_function("document.querySelectorAll('.gv-root').length === 2")
    page.locator("[data-action=next]").first.click()
    assert page.locator(".gv-current").count() == 1
    assert page.errors == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_theme_screenshots(browser, tmp_path, artifacts, scheme):
    context = browser.new_context(viewport={"width": 1000, "height": 860}, color_scheme=scheme)
    page = context.new_page()
    graph, trace, _, _ = lesson_graph()
    path = export_html(GraphWidget(graph=graph, trace=trace, show_saved=True), tmp_path / "theme.html")
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    for _ in range(3):
        page.click("[data-action=next]")
    background = page.evaluate("getComputedStyle(document.querySelector('.gv-root')).backgroundColor")
    assert (background == "rgb(255, 255, 255)") == (scheme == "light")
    page.screenshot(path=str(artifacts / f"export-{scheme}.png"))
    context.close()
