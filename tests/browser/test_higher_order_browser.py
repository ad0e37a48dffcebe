"""The graph of a gradient and a custom Function's node, in a real browser (exported HTML, offline):
second-order nodes are marked and explained by a legend, the second backward steps like any other,
and a user's backward source shows as text, never as markup."""
from __future__ import annotations

import math

import pytest

import gradviz as gv

pytestmark = pytest.mark.browser


class Cube(gv.autograd.Function):
    """x ** 3 with a hand-written backward whose source carries markup (it must show as text)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        # <img src=x onerror="window.__pwned = 1"></pre><script>window.__pwned = 1</script>
        return grad * 3 * x ** 2


def test_second_order_nodes_are_marked_and_the_second_backward_steps(offline_page, tmp_path):
    page = offline_page
    x = gv.tensor([1.5, -0.5], requires_grad=True)
    g, = gv.autograd.grad((x.sin() * x).sum(), x, create_graph=True)
    second = g.sum()
    page.goto(gv.export_html(second, tmp_path / "second.html").as_uri())
    page.wait_for_selector("[data-node-id]")
    marked = page.eval_on_selector_all(".gv-higher-order", "els => els.map(e => e.getAttribute('data-name'))")
    graph = gv.graph(second)
    assert sorted(marked) == sorted(n.name for n in graph.nodes if n.order > 1) and marked
    assert "SinBackward0" not in marked and "CosBackward0" in marked
    assert page.is_visible(".gv-legend") and "create_graph=True" in page.inner_text(".gv-legend")
    steps = len(list(gv.autograd.backward_steps(second, retain_graph=True, dry_run=True)))
    for _ in range(steps):
        page.click("[data-action=next]")
    assert page.inner_text(".gv-status") == f"Step {steps} of {steps}"
    assert page.errors == [] and page.blocked == []


def test_a_forward_graph_shows_no_legend(offline_page, tmp_path):
    page = offline_page
    x = gv.tensor([1.5, -0.5], requires_grad=True)
    page.goto(gv.export_html((x * x).sum(), tmp_path / "first.html").as_uri())
    page.wait_for_selector("[data-node-id]")
    assert page.locator(".gv-higher-order").count() == 0 and not page.is_visible(".gv-legend")


def test_a_custom_function_shows_its_backward_source_as_text(offline_page, tmp_path):
    page = offline_page
    x = gv.tensor([1.5, -0.5], requires_grad=True)
    y = Cube.apply(x).sum()
    page.goto(gv.export_html(y, tmp_path / "custom.html").as_uri())
    page.wait_for_selector("[data-name=CubeBackward]")
    page.click("[data-action=next]")
    page.click("[data-action=next]")
    code = page.inner_text(".gv-panel .gv-code")
    assert "return grad * 3 * x ** 2" in code and "<script>" in code
    assert page.evaluate("window.__pwned") is None
    assert page.locator(".gv-panel img").count() == 0 and page.errors == []


def test_predict_asks_at_a_custom_function_node_and_names_formula_inputs(offline_page, tmp_path):
    """Predict mode (tests/browser/test_predict_browser.py) at a custom Function's node, which has no
    formula: it still asks, with the input numbered, and checks the answer against the trace."""
    x = gv.tensor(1.0, requires_grad=True)
    y = gv.tensor(2.0, requires_grad=True)
    loss = Cube.apply(x * y).sin()
    path = gv.export_html(loss, tmp_path / "custom.html", names={"x": x, "y": y}, predict=True)
    page = offline_page
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    page.click("[data-action=next]")  # SinBackward0: a built-in node, its input named by its formula
    assert "SinBackward0 sends to CubeBackward (for x\u2032)" in page.inner_text(".gv-predict-prompt")  # x is taken
    page.click("[data-predict-action=reveal]")
    page.click("[data-action=next]")  # the custom node: no formula, so its input is numbered
    assert "CubeBackward sends to MulBackward0 (for input 0)" in page.inner_text(".gv-predict-prompt")
    page.fill("[data-predict-input]", f"{math.cos(8) * 12:.3f}")  # cos(x³) at x·y = 2, times 3·2²
    page.click("[data-predict-action=check]")
    element = page.locator(".gv-predict-verdict")
    cls, text = element.get_attribute("class"), element.inner_text()
    assert "gv-right" in cls and "\u00D7 12 =" in text
    assert page.errors == []
