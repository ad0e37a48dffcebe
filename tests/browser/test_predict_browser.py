"""Predict, then reveal (``predict=True``), in an exported page with no kernel and no network:
Next asks for the step's gradient first; a right answer is confirmed, a wrong one answered with
the chain rule's numbers from the trace; either way the step is then shown."""
from __future__ import annotations

import math

import pytest

import gradviz as gv
from gradviz.widget import export_html

pytestmark = pytest.mark.browser


def verdict(page) -> tuple:
    element = page.locator(".gv-predict-verdict")
    return element.get_attribute("class"), element.inner_text()


def status(page) -> str:
    return page.inner_text(".gv-status")


def test_predict_then_reveal_right_and_wrong(offline_page, tmp_path, artifacts):
    a = gv.tensor(2.0, requires_grad=True)
    b = gv.tensor(3.0, requires_grad=True)
    loss = (a * b).sin()
    path = export_html(loss, tmp_path / "predict.html", names={"a": a, "b": b}, predict=True)
    page = offline_page
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    count = int(status(page).split(" of ")[1])

    page.click("[data-action=next]")  # asks first: nothing is shown yet
    assert status(page) == f"Step 0 of {count}"
    assert "SinBackward0" in page.inner_text(".gv-predict-prompt")
    page.keyboard.press("ArrowRight")  # typing goes to the box; Next again keeps the question
    page.click("[data-action=next]")
    assert status(page) == f"Step 0 of {count}"

    cos6 = math.cos(6.0)
    page.fill("[data-predict-input]", f"{cos6:.3f}")  # right, to 3 decimals
    page.click("[data-predict-action=check]")
    cls, text = verdict(page)
    assert "gv-right" in cls and "Right" in text and f"{cos6:.4f}" in text
    assert status(page) == f"Step 1 of {count}"  # revealed
    assert page.locator(".gv-current").get_attribute("data-name") == "SinBackward0"
    page.screenshot(path=str(artifacts / "predict-right.png"))

    page.click("[data-action=next]")  # MulBackward0: sends cos(6) * b to a
    assert "MulBackward0" in page.inner_text(".gv-predict-prompt")
    page.fill("[data-predict-input]", f"{cos6:.4f}")  # wrong: forgot the local derivative
    page.keyboard.press("Enter")
    cls, text = verdict(page)
    assert "gv-wrong" in cls and "Not quite" in text and f"you said {cos6:.4f}" in text
    sent = cos6 * 3.0
    assert f"{cos6:.4f} \u00D7 3 = {sent:.4f}" in text  # upstream x local derivative = sent, in numbers
    assert status(page) == f"Step 2 of {count}"
    page.screenshot(path=str(artifacts / "predict-wrong.png"))

    page.click("[data-action=next]")  # an AccumulateGrad: the leaf's .grad
    assert ".grad after this step" in page.inner_text(".gv-predict-prompt")
    page.click("[data-predict-action=reveal]")
    cls, text = verdict(page)
    assert "gv-shown" in cls and "None, so it becomes the arriving gradient" in text and ".." not in text
    assert status(page) == f"Step 3 of {count}"

    page.click("[data-action=prev]")  # going back puts the box away
    assert page.locator(".gv-predict").is_hidden()
    assert page.errors == [] and page.blocked == []


def test_a_hostile_answer_shows_as_text(offline_page, tmp_path):
    x = gv.tensor(2.0, requires_grad=True)
    path = export_html(x * x, tmp_path / "hostile.html", names={"x": x}, predict=True)
    page = offline_page
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    page.click("[data-action=next]")
    page.fill("[data-predict-input]", "1 <img src=x onerror=alert(1)>")
    page.click("[data-predict-action=check]")
    assert "<img src=x onerror=alert(1)>" in verdict(page)[1]
    assert page.locator(".gv-predict img").count() == 0
    assert page.errors == []


def test_the_question_names_the_input_as_the_panel_does(offline_page, tmp_path):
    """Not PyTorch's argument name (``self``): the learner's label, as in ∂loss/∂z."""
    a = gv.tensor(2.0, requires_grad=True)
    b = gv.tensor(3.0, requires_grad=True)
    z = a * b
    loss = z.sin()
    path = export_html(loss, tmp_path / "named.html", names={"a": a, "b": b, "z": z}, predict=True)
    page = offline_page
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    page.click("[data-action=next]")
    prompt = page.inner_text(".gv-predict-prompt")
    assert "(for z)" in prompt and "self" not in prompt, prompt
    assert page.errors == []
