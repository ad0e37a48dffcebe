"""The exported HTML in a real browser with every network request blocked: it steps end to end,
in the trace's order, and hostile labels show as text and run nothing."""
from __future__ import annotations

import json

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


DRAWN_LINES = """els => Object.fromEntries(els.map(e => [e.getAttribute('data-node-id'),
    [...e.querySelectorAll('text.gv-text')].map(t => [t.textContent, t.getAttribute('class')])]))"""
TOOLTIPS = "els => Object.fromEntries(els.map(e => [e.getAttribute('data-node-id'), e.querySelector('title').textContent]))"


def test_nodes_draw_exactly_the_lines_python_shipped(offline_page, tmp_path, artifacts):
    page = offline_page
    label = "a_label_far_too_long_for_any_box_" + HOSTILE
    graph, trace, _, _ = lesson_graph(label)
    widget = GraphWidget(graph=graph, trace=trace)
    shipped = widget.graph_layout["text"]
    page.goto(export_html(widget, tmp_path / "text.html").as_uri())
    page.wait_for_selector("[data-node-id]")

    def expected(show_saved):
        return {node_id: [[line["text"], f"gv-text {line['cls']}"] for line in lines
                          if show_saved or line["cls"] != "gv-saved"] for node_id, lines in shipped.items()}

    assert page.eval_on_selector_all("[data-node-id]", DRAWN_LINES) == expected(False)
    x_id = next(node.id for node in graph.nodes if node.label == label)
    assert shipped[x_id][0]["title"] == label and shipped[x_id][0]["text"].endswith("\u2026")
    tooltips = page.eval_on_selector_all("[data-node-id]", TOOLTIPS)
    assert tooltips[x_id].split("\n")[0] == label  # the full text, where the box shows it cut
    page.click("[data-option=show_saved]")
    assert page.eval_on_selector_all("[data-node-id]", DRAWN_LINES) == expected(True)
    assert any(line["cls"] == "gv-saved" for lines in shipped.values() for line in lines)
    page.screenshot(path=str(artifacts / "export-shipped-text.png"))

    page.click("[data-action=end]")  # the steps fill .grad, within the room Python gave the line
    grad_line = next(line for line in shipped[x_id] if line["cls"] == "gv-grad")
    drawn = page.eval_on_selector_all("[data-node-id]", DRAWN_LINES)[x_id]
    assert ["grad: 13.", "gv-text gv-grad"] in drawn and grad_line["max"] >= len("grad: 13.")
    page.click("[data-action=reset]")
    assert page.eval_on_selector_all("[data-node-id]", DRAWN_LINES) == expected(True)
    assert page.errors == [] and page.blocked == []


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
    accumulation = page.text_content(".gv-panel math:last-of-type")
    assert "x.grad" in panel and accumulation.replace(" ", "") == "=0+13.=13."
    x_text = page.text_content(f"[data-node-id={trace[x_step]['leaf']}]")
    assert "grad: 13." in x_text
    assert page.locator("path.gv-edge-in").count() == 2  # both uses of x send a piece


PANEL_FROM_MODULE = """async ({shown, selection}) => {
    const read = (suffix) => JSON.parse(document.querySelector(`script[id$="${suffix}"]`).textContent);
    const url = URL.createObjectURL(new Blob([read("-esm")], { type: "text/javascript" }));
    const { chainRulePanel } = await import(url);
    const { graph, trace } = read("-state");
    const step = { shown, count: trace.length, entry: shown ? trace[shown - 1] : null };
    const before = JSON.stringify([step, graph]);
    const text = (elements) => elements.map((element) => element.textContent).join("");
    const first = text(chainRulePanel(step, graph, selection));
    const again = text(chainRulePanel(step, graph, selection));
    return { first, again, unchanged: before === JSON.stringify([step, graph]) };
}"""


def test_chain_rule_panel_is_a_pure_function_of_step_graph_and_selection(offline_page, tmp_path):
    page = offline_page
    graph, trace = open_export(page, tmp_path)
    for shown in range(len(trace) + 1):
        if shown:
            page.click("[data-action=next]")
        result = page.evaluate(PANEL_FROM_MODULE, {"shown": shown, "selection": None})
        assert result["first"] == result["again"] == page.text_content(".gv-panel") and result["unchanged"]
    w_id = next(node.id for node in graph.nodes if node.label == "w")
    page.click(f"[data-node-id={w_id}]")
    result = page.evaluate(PANEL_FROM_MODULE, {"shown": len(trace), "selection": w_id})
    assert result["first"] == page.text_content(".gv-panel") and "kind: leaf" in result["first"]
    assert page.errors == []


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


def test_a_compressed_export_draws_and_steps_like_any_other(offline_page, tmp_path):
    from fixtures.shapes import chain

    page = offline_page
    output = chain(3000)
    path = export_html(output, tmp_path / "chain.html", names={}, collapse=False)
    assert 'data-encoding="gzip+base64"' in path.read_text()
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    assert page.inner_text(".gv-status") == "Step 0 of 3001"
    for index in range(3):
        page.click("[data-action=next]")
    assert page.inner_text(".gv-status") == "Step 3 of 3001"
    assert page.locator(".gv-current").count() == 1 and page.locator(".gv-done").count() == 2
    page.click("[data-action=end]")
    assert page.inner_text(".gv-status") == "Step 3001 of 3001"
    assert page.blocked == [] and page.errors == []


PAGE_STATE = """() => ({
  status: document.querySelector('.gv-status').innerText,
  current: [...document.querySelectorAll('.gv-current')].map(e => e.getAttribute('data-node-id')),
  grads: [...document.querySelectorAll('text.gv-grad')].map(t => t.textContent),
  panel: document.querySelector('.gv-panel').innerText,
  nodes: [...document.querySelectorAll('[data-node-id]')].map(e => [e.getAttribute('data-node-id'),
    [...e.querySelectorAll('text.gv-text')].map(t => t.textContent)]),
})"""


def walk_export(page, path, steps: int) -> list:
    """What the page shows before the pass, after each of the first ``steps`` steps, and at the end."""
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    seen = [page.evaluate(PAGE_STATE)]
    for _ in range(steps):
        page.click("[data-action=next]")
        seen.append(page.evaluate(PAGE_STATE))
    page.click("[data-action=end]")
    seen.append(page.evaluate(PAGE_STATE))
    assert page.blocked == [] and page.errors == []
    return seen


def packed_on_the_wire(path) -> bool:
    import base64
    import gzip
    import re

    block = re.search(r'id="[^"]*-state"(?: data-encoding="([^"]+)")?>([^<]*)</script>', path.read_text())
    text = block.group(2) if block.group(1) is None else gzip.decompress(base64.b64decode(block.group(2))).decode()
    return json.loads(text)["graph"].get("packed") == 1


def test_a_packed_export_steps_exactly_as_a_plain_one(offline_page, tmp_path, monkeypatch):
    from fixtures.shapes import fan_out, unrolled_rnn
    from gradviz.widget import wire

    for output in (fan_out(100), unrolled_rnn(70)):  # over PACK_ABOVE nodes: shipped packed
        packed = export_html(output, tmp_path / "packed.html", names={}, collapse=False)
        with monkeypatch.context() as patch:
            patch.setattr(wire, "PACK_ABOVE", 10 ** 9)
            plain = export_html(output, tmp_path / "plain.html", names={}, collapse=False)
        assert packed_on_the_wire(packed) and not packed_on_the_wire(plain)
        shown = walk_export(offline_page, packed, 12)
        assert shown == walk_export(offline_page, plain, 12)
        assert any(state["grads"] != shown[0]["grads"] for state in shown)  # the .grad texts did change
