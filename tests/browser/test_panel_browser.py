"""The chain-rule panel in a real browser: each op family's formula renders as MathML, in the
learner's names, with the step's numbers substituted, in light and dark themes.

Screenshots of the panel per family and theme go to tests/artifacts/panel-<family>-<theme>.png.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import gradviz as gv
import gradviz.nn.functional as F
from gradviz.widget import export_html

pytestmark = pytest.mark.browser

# what must never appear in a formula's first (symbolic) line: LaTeX or derivatives.yaml code
RAW_SYNTAX = re.compile(r"\\[a-z]+|[{}]|\bgrad\s*[*/]|\bself\b|\bresult\b|_backward|\.t\(\)|\.conj|sym_sizes")


def cos_program():
    x = gv.tensor(4.0, requires_grad=True)
    w = gv.tensor(2.0, requires_grad=True)
    y = x.cos()
    loss = y * w * 5.0307
    return loss, {"x": x, "w": w, "y": y, "loss": loss}


def broadcast_program():
    x = gv.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    b = gv.tensor([0.5, -1.0, 2.0], requires_grad=True)
    loss = (x * b).sum()
    return loss, {"x": x, "b": b, "loss": loss}


def linear_program():
    gv.manual_seed(0)
    x = gv.randn(4, 3)
    w = gv.randn(2, 3, requires_grad=True)
    bias = gv.zeros(2, requires_grad=True)
    h = F.linear(x, w, bias)
    loss = h.pow(2).mean()
    return loss, {"x": x, "w": w, "bias": bias, "h": h, "loss": loss}


def seed_loss_program():
    """The seeds' network: one layer and binary_cross_entropy_with_logits, no weight arguments."""
    x = gv.ones(5)
    y = gv.zeros(3)
    w = gv.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [0.7, -0.8, 0.9], [0.1, 0.2, 0.3], [-0.4, 0.5, 0.6]],
                  requires_grad=True)
    b = gv.tensor([0.1, 0.2, 0.3], requires_grad=True)
    z = gv.matmul(x, w) + b
    loss = F.binary_cross_entropy_with_logits(z, y)
    return loss, {"x": x, "y": y, "w": w, "b": b, "z": z, "loss": loss}


def softmax_program():
    logits = gv.tensor([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0]], requires_grad=True)
    loss = F.cross_entropy(logits, gv.tensor([1, 2]))
    return loss, {"logits": logits, "loss": loss}


def shape_program():
    x = gv.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    picked = x[gv.tensor([0, 2])].view(4)
    loss = gv.cat([picked, x[1]]).sum()
    return loss, {"x": x, "picked": picked, "loss": loss}


def inplace_program():
    x = gv.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = x * 1
    base[1:].mul_(3.0)
    loss = (base * base).sum()
    return loss, {"x": x, "base": base, "loss": loss}


def nan_program():
    x = gv.tensor([0.0, -1.0], requires_grad=True)
    with np.errstate(all="ignore"):
        loss = x.log().sum()
    return loss, {"x": x, "loss": loss}


def split_program():
    """Pieces used differently, the middle one not at all: its gradient counts as 0."""
    x = gv.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
    first, _, last = x.split(2)
    loss = (first * 3.0).sum() + last.sum() * 7.0
    return loss, {"x": x, "loss": loss}


def second_order_program():
    """A gradient recorded with create_graph=True, differentiated again: TanhBackwardBackward0."""
    x = gv.tensor([0.5, -1.0], requires_grad=True)
    w = gv.tensor([2.0, 3.0], requires_grad=True)
    gradient, = gv.autograd.grad((x.tanh() * w).sum(), x, create_graph=True)
    loss = (gradient * gradient).sum()
    return loss, {"x": x, "w": w, "gradient": gradient, "loss": loss}


# family -> (program, the op whose step is shown, a value the numbers line must contain)
FAMILIES = {
    "unary": (cos_program, "CosBackward0", f"{-np.sin(4.0):.4f}"),
    "broadcast": (broadcast_program, "MulBackward0", "∑"),
    "matrix": (linear_program, "AddmmBackward0", "·"),
    "loss": (seed_loss_program, "BinaryCrossEntropyWithLogitsBackward0", "σ"),
    "softmax": (softmax_program, "LogSoftmaxBackward0", "∑"),
    "indexing": (shape_program, "IndexBackward0", "x[indices]"),
    "inplace": (inplace_program, "torch::autograd::CopySlices", "view"),
    "accumulate": (cos_program, "torch::autograd::AccumulateGrad", "=0+"),
    "nan": (nan_program, "LogBackward0", "inf"),
    "pieces": (split_program, "SplitBackward0", "cat"),
    "second order": (second_order_program, "TanhBackwardBackward0", "ḡ"),
}


def open_panel_at(page, tmp_path, program, op_name, theme="light"):
    """Export ``program``, step to the first step of ``op_name``; the panel's MathML facts."""
    loss, names = program()
    path = export_html(loss, tmp_path / f"{op_name.replace(':', '_')}-{theme}.html", names=names)
    page.emulate_media(color_scheme=theme)
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    steps = page.evaluate("""() => JSON.parse(document.querySelector('script[id$="-state"]').textContent)
        .trace.map((step) => step.name)""")
    index = steps.index(op_name)
    for _ in range(index + 1):
        page.click("[data-action=next]")
    return page.evaluate("""() => [...document.querySelectorAll('.gv-panel math')].map((math) => {
        const box = math.getBoundingClientRect();
        return { text: math.textContent, width: box.width, height: box.height,
                 primary: !math.textContent.trim().startsWith('=') };
    })""")


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_panel_renders_each_op_family_as_mathml_with_numbers(offline_page, tmp_path, artifacts, family, theme):
    page = offline_page
    program, op_name, expected = FAMILIES[family]
    maths = open_panel_at(page, tmp_path, program, op_name, theme)
    assert maths, f"{family}: no <math> in the panel"
    assert all(math["width"] > 0 and math["height"] > 0 for math in maths), maths
    for math in maths:
        if math["primary"]:
            assert not RAW_SYNTAX.search(math["text"]), f"{family}: raw syntax in {math['text']!r}"
    assert any(expected in math["text"] for math in maths), f"{family}: {expected!r} not in {maths}"
    assert page.errors == [] and page.blocked == []
    page.locator(".gv-panel").screenshot(path=str(artifacts / f"panel-{family}-{theme}.png"))


def test_formula_uses_the_learners_labels_and_the_step_numbers(offline_page, tmp_path):
    """At CosBackward0 with x = 4: ∂loss/∂x = ∂loss/∂y · (−sin x), then the numbers."""
    page = offline_page
    maths = open_panel_at(page, tmp_path, cos_program, "CosBackward0")
    first, numbers = maths[0]["text"], maths[1]["text"]
    assert first.replace(" ", "") == "∂loss∂x=∂loss∂y·−sin\u2061x".replace(" ", "") or "sin" in first
    assert "∂loss" in first and "∂y" in first and "∂x" in first
    arriving = 2.0 * 5.0307
    assert f"{arriving:.4f}".rstrip("0") in numbers and "sin" in numbers and "4." in numbers
    assert f"{-np.sin(4.0):.4f}" in numbers and f"{arriving * -np.sin(4.0):.4f}" in numbers


def test_copy_slices_shows_the_in_place_ops_step_on_the_view_in_numbers(offline_page, tmp_path):
    """``base[1:].mul_(3)``: 2, 12, 18 arrive; outside the view 2 passes, inside it 12, 18 times 3."""
    maths = open_panel_at(offline_page, tmp_path, inplace_program, "torch::autograd::CopySlices")
    numbers = next(math["text"] for math in maths if not math["primary"])
    compact = numbers.replace(" ", "")
    assert "outsidetheview;insideit,MulBackward0:" in compact, numbers
    assert "[12.,18.]" in compact and "·3" in compact and "=[36.,54.]" in compact, numbers
    assert compact.endswith("=[2.,36.,54.]3"), numbers  # what it sends, shape 3
    assert offline_page.errors == []


def test_notes_name_the_inputs_by_the_learners_labels(offline_page, tmp_path):
    """A note that names the input (``‖x‖ = √(Σ x²)``) uses the label the formula uses: w."""
    def program():
        w = gv.tensor([3.0, 4.0], requires_grad=True)
        loss = w.norm()
        return loss, {"w": w, "loss": loss}

    open_panel_at(offline_page, tmp_path, program, "LinalgVectorNormBackward0")
    hints = offline_page.locator(".gv-panel .gv-hint").all_text_contents()
    assert "‖w‖ = √(Σ w²), the output" in hints, hints
    assert not any("{" in hint or "x" in hint.split("the output")[0] for hint in hints), hints
    assert offline_page.errors == []


def test_seed_loss_shows_no_weight_terms_and_divides_by_n(offline_page, tmp_path):
    maths = open_panel_at(offline_page, tmp_path, seed_loss_program, "BinaryCrossEntropyWithLogitsBackward0")
    first = maths[0]["text"]
    assert "weight" not in first and "pos_weight" not in first
    assert "σ" in first and "3" in first  # (σ(z) − y) / 3: reduction='mean' over 3 elements
    assert "∂z" in first and "y" in first


def test_split_joins_the_pieces_gradients_with_zero_for_an_unused_piece(offline_page, tmp_path):
    page = offline_page
    maths = open_panel_at(page, tmp_path, split_program, "SplitBackward0")
    first, numbers = maths[0]["text"], maths[1]["text"]
    assert "∂L∂z₁" in first.replace(" ", "") or "∂loss∂z₁" in first.replace(" ", "")
    assert "cat" in first and "along dim 0" in first
    numbers = numbers.replace(" ", "")
    assert "[3.,3.]" in numbers and ",0," in numbers and "[7.]" in numbers and "[3.,3.,0.,0.,7.]" in numbers
    arriving = page.locator(".gv-panel .gv-section").first.inner_text()
    assert "∂L/∂z₂" in arriving and "counts as 0" in arriving
    assert page.errors == []


def test_second_order_node_says_it_was_recorded_by_a_backward_pass(offline_page, tmp_path):
    page = offline_page
    maths = open_panel_at(page, tmp_path, second_order_program, "TanhBackwardBackward0")
    primary = [math["text"].replace(" ", "") for math in maths if math["primary"]]
    assert any("(1−y2)" in text for text in primary) and any("(−2·ḡ·y)" in text for text in primary), primary
    assert "recorded by a backward pass (create_graph=True)" in page.locator(".gv-panel").inner_text()
    assert page.errors == []


MARKUP_LABELS = [r"\frac{a}{b}", "<mi>w</mi>", "</math><img src=x onerror=alert(1)>", "$$x$$"]


@pytest.mark.parametrize("label", MARKUP_LABELS)
def test_markup_in_a_label_shows_as_text_inside_the_formula(offline_page, tmp_path, artifacts, label):
    page = offline_page
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    def program():
        loss, names = cos_program()
        names = {label if key == "x" else key: value for key, value in names.items()}
        return loss, names

    maths = open_panel_at(page, tmp_path, program, "CosBackward0")
    assert label in maths[0]["text"]
    injected = page.evaluate("""() => document.querySelectorAll(
        '.gv-panel img, .gv-panel script, .gv-panel math math, .gv-panel mi mi').length""")
    assert injected == 0 and dialogs == [] and page.errors == []
    if label == MARKUP_LABELS[0]:
        page.locator(".gv-panel").screenshot(path=str(artifacts / "panel-markup-label.png"))


def test_all_values_of_a_small_tensor_on_demand(offline_page, tmp_path):
    def program():
        x = gv.arange(20.0).reshape(4, 5).requires_grad_()
        loss = (x.sin() * 2).sum()
        return loss, {"x": x, "loss": loss}

    page = offline_page
    open_panel_at(page, tmp_path, program, "SinBackward0")
    details = page.locator(".gv-panel details.gv-more").first
    details.locator("summary").click()
    text = details.inner_text()
    assert "local derivative (4, 5) = " in text and "sent (4, 5) = " in text and text.count(",") >= 2 * 19
    assert "derivatives.yaml: self: grad * self.cos().conj()" in text
    assert page.errors == []


def torch_program():
    """A torch network: its nodes are read under the same names, so they get the same formulas."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    x, y = torch.randn(5, 3), torch.rand(5, 1)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x), y)
    return loss, {"loss": loss}


@pytest.mark.parametrize("op_name, expected", [("TanhBackward0", "tanh"),
                                                ("BinaryCrossEntropyWithLogitsBackward0", "σ"),
                                                ("AddmmBackward0", "⊤")])
def test_torch_graph_panel_shows_the_same_formulas(offline_page, tmp_path, artifacts, op_name, expected):
    maths = open_panel_at(offline_page, tmp_path, torch_program, op_name)
    assert maths and all(math["width"] > 0 for math in maths)
    primary = [math["text"] for math in maths if math["primary"]]
    assert any(expected in text for text in primary) and not any(RAW_SYNTAX.search(text) for text in primary)
    assert not any("tensor(" in text for text in primary)  # unnamed tensors keep their letter
    assert len(maths) >= 2 and maths[1]["text"].startswith("=")  # the numbers line
    assert offline_page.errors == []
    offline_page.locator(".gv-panel").screenshot(path=str(artifacts / f"panel-torch-{op_name}.png"))
