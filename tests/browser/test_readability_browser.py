"""A graph a person can read from the moment it opens, in the exported page, light and dark:
node text at least 11 CSS px, no two visible text boxes overlapping at any step, module frames
that nest and cover no node, and side-by-side views that open fitted.

Graphs: the lessons' (lesson 02's derivative and classifier, a tensor used twice by one node, a
short unrolled RNN) and a torch MLP with nested module groups. Screenshots go to
``tests/artifacts/readability-<graph>-<scheme>.png``.
"""
from __future__ import annotations

import pytest

import gradviz as gv
from fixtures.shapes import unrolled_rnn
from gradviz.widget import export_html, to_html
from gradviz.widget.state import view_state

pytestmark = pytest.mark.browser

MIN_TEXT_PX = 11

# Every drawn <text> that shows: its rendered font size (computed size x the zoom on screen) and
# its box on the page.
VISIBLE_TEXT = """root => [...root.querySelectorAll('svg.gv-svg text')].flatMap(t => {
    const box = t.getBoundingClientRect();
    if (!t.textContent.trim() || box.width === 0 || getComputedStyle(t).display === 'none') return [];
    const zoom = t.getScreenCTM().a;
    return [{text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * zoom,
             box: [box.left, box.top, box.right, box.bottom]}];
})"""

BOXES = """root => Object.fromEntries([
    ...[...root.querySelectorAll('[data-node-id] .gv-box')].map(r => ['node:' + r.closest('[data-node-id]')
        .getAttribute('data-node-id'), r.getBoundingClientRect()]),
    ...[...root.querySelectorAll('.gv-frame')].map(r => ['frame:' + r.getAttribute('data-group-id'),
        r.getBoundingClientRect()]),
].map(([key, b]) => [key, [b.left, b.top, b.right, b.bottom]]))"""


def lesson02_derivative():
    x = gv.tensor(4.0, requires_grad=True)
    y = 2 * x * (gv.cos(x) ** 2)
    z = gv.sin(y)
    return z, {"x": x, "y": y, "z": z}, None


def lesson02_classifier():
    x, y = gv.tensor(6.7), gv.tensor(0.0)
    w = gv.tensor(1.0, requires_grad=True)
    b = gv.tensor(0.0, requires_grad=True)
    z = w * x + b
    y_pred = gv.sigmoid(z)
    prediction = gv.clamp(y_pred, 1e-8, 1 - 1e-8)
    loss = -(y * gv.log(prediction) + (1 - y) * gv.log(1 - prediction))
    return loss, {"x": x, "y": y, "w": w, "b": b, "z": z, "y_pred": y_pred, "loss": loss}, None


def used_twice():
    x = gv.tensor(3.0, requires_grad=True)
    z = x * 2
    out = z * z
    return out, {"x": x, "z": z, "out": out}, None


def short_rnn():
    h = unrolled_rnn(5)
    return h, {"h": h}, None


def torch_mlp():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(),
                                torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh()), torch.nn.Linear(4, 1))
    loss = model(torch.randn(5, 3)).pow(2).mean()
    return loss, {"loss": loss}, model


GRAPHS = {"lesson02-derivative": lesson02_derivative, "lesson02-classifier": lesson02_classifier,
          "used-twice": used_twice, "rnn-5-steps": short_rnn, "torch-mlp-modules": torch_mlp}


def intersect(a, b, slack=0.5) -> bool:
    return a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack


def overlapping_text(texts) -> list:
    return [(a["text"], b["text"]) for i, a in enumerate(texts) for b in texts[i + 1:] if intersect(a["box"], b["box"])]


@pytest.fixture(params=["light", "dark"])
def scheme_page(browser, request):
    context = browser.new_context(viewport={"width": 1000, "height": 900}, color_scheme=request.param)
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.scheme = request.param
    yield page
    context.close()


@pytest.mark.parametrize("name", GRAPHS)
def test_graphs_open_readable_and_no_text_overlaps_at_any_step(scheme_page, tmp_path, artifacts, name):
    page = scheme_page
    tensor, names, model = GRAPHS[name]()
    state = view_state(tensor, names, model)
    assert len(state["graph"]["nodes"]) <= 60
    path = export_html(tensor, tmp_path / f"{name}.html", names=names, model=model)
    page.goto(path.as_uri())
    page.wait_for_selector("[data-node-id]")
    root = page.locator(".gv-root")

    opening = root.evaluate(VISIBLE_TEXT)
    assert len(opening) >= len(state["graph"]["nodes"])
    too_small = [(t["text"], round(t["px"], 2)) for t in opening if t["px"] < MIN_TEXT_PX - 0.01]
    assert too_small == []
    page.screenshot(path=str(artifacts / f"readability-{name}-{page.scheme}.png"))

    for step in range(len(state["trace"])):
        page.click("[data-action=next]")
        texts = root.evaluate(VISIBLE_TEXT)
        assert overlapping_text(texts) == [], f"step {step + 1}"
        if step in (0, 2):
            page.screenshot(path=str(artifacts / f"readability-{name}-{page.scheme}-step{step + 1}.png"))
    assert page.errors == []


def assert_frames_nest_and_cover_no_node(page, groups) -> None:
    """On the page: no frame covers a node that is not its member, and frames that meet nest."""
    boxes = page.locator(".gv-root").evaluate(BOXES)
    by_id = {g["id"]: g for g in groups}
    for group in groups:
        frame = boxes[f"frame:{group['id']}"]
        for key, box in boxes.items():
            if key.startswith("node:") and key[5:] not in group["members"]:
                assert not intersect(frame, box), (group["label"], key)
            if key.startswith("frame:") and key != f"frame:{group['id']}" and intersect(frame, box):
                other = by_id[key[6:]]
                ancestors, parent = set(), group["parent"]
                while parent is not None:
                    ancestors.add(parent)
                    parent = by_id[parent]["parent"]
                other_ancestors, parent = set(), other["parent"]
                while parent is not None:
                    other_ancestors.add(parent)
                    parent = by_id[parent]["parent"]
                assert other["id"] in ancestors or group["id"] in other_ancestors, (group["label"], other["label"])
    assert overlapping_text(page.locator(".gv-root").evaluate(VISIBLE_TEXT)) == []


def test_module_frames_nest_and_cover_no_node(scheme_page, tmp_path, artifacts):
    page = scheme_page
    tensor, names, model = torch_mlp()
    state = view_state(tensor, names, model, collapse=False)
    groups = state["graph_layout"]["groups"]
    assert {g["label"] for g in groups} >= {"0", "2", "3"}
    path = export_html(tensor, tmp_path / "mlp.html", names=names, model=model, collapse=False)
    page.goto(path.as_uri())
    page.wait_for_selector(".gv-frame")
    assert_frames_nest_and_cover_no_node(page, groups)
    page.screenshot(path=str(artifacts / f"readability-mlp-frames-{page.scheme}.png"))


def test_module_frames_of_the_built_in_layout_nest_and_cover_no_node(scheme_page, tmp_path, artifacts, monkeypatch):
    """The layered layout (graphs past dot's budget), here asked for on a model small enough to
    read whole: two residual blocks whose last ReLU is drawn inside each block."""
    from gradviz.render import layout

    monkeypatch.setattr(layout, "choose_engine", lambda shape, modules=False: "layered")
    page = scheme_page
    gv.manual_seed(0)
    nn = gv.nn

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3))
            self.skip = nn.Linear(3, 3)

        def forward(self, x):
            return gv.relu(self.body(x) + self.skip(x))

    model = nn.Sequential(Residual(), Residual(), nn.Linear(3, 1))
    loss = model(gv.randn(4, 3)).pow(2).mean()
    state = view_state(loss, {"loss": loss}, model, collapse=False)
    assert state["graph_layout"]["engine"] == "layered"
    groups = state["graph_layout"]["groups"]
    relus = [node for node in state["graph"]["nodes"] if node["name"] == "ReluBackward0"]
    blocks = {g["label"]: g for g in groups if g["parent"] is None}
    assert all(any(node["id"] in blocks[b]["members"] for b in ("0", "1")) for node in relus)
    path = export_html(loss, tmp_path / "layered.html", names={"loss": loss}, model=model, collapse=False)
    page.goto(path.as_uri())
    page.wait_for_selector(".gv-frame")
    assert_frames_nest_and_cover_no_node(page, groups)
    page.screenshot(path=str(artifacts / f"readability-layered-frames-{page.scheme}.png"))
    page.click("[data-action=fit]")
    page.screenshot(path=str(artifacts / f"readability-layered-frames-{page.scheme}-fitted.png"))
    assert page.errors == []


SIDE_BY_SIDE = """<!doctype html><html><head><meta charset="utf-8"></head><body>
<div id="sides" style="display: none; gap: 12px">
  <div style="flex: 1 1 0; min-width: 0">{left}</div><div style="flex: 1 1 0; min-width: 0">{right}</div>
</div>
<script>setTimeout(() => {{ document.getElementById('sides').style.display = 'flex'; }}, 300);</script>
</body></html>"""

# Fitted as the opening rule fits: the drawing's width inside the stage, and its bottom (the
# output, where the backward pass starts) in view; a drawing too tall to read whole scrolls.
DRAWING_FITTED = """() => [...document.querySelectorAll('.gv-stage')].map(stage => {
    const s = stage.getBoundingClientRect();
    const d = stage.querySelector('.gv-viewport').getBoundingClientRect();
    return d.left >= s.left - 1 && d.right <= s.right + 1 && d.bottom <= s.bottom + 1 && d.bottom > s.top;
})"""


def test_side_by_side_views_open_fitted_even_when_drawn_before_they_had_a_width(scheme_page, tmp_path, artifacts):
    """Like gv.compare's two columns in JupyterLab: each view is drawn while its column has no
    width yet, and must fit once the columns get theirs, without a click on "Fit"."""
    page = scheme_page
    tensor, names, _ = lesson02_derivative()
    html = SIDE_BY_SIDE.format(left=to_html(tensor, names=names), right=to_html(tensor, names=names))
    path = tmp_path / "side-by-side.html"
    path.write_text(html, encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector("#sides[style*=flex] [data-node-id]")
    page.wait_for_function(f"() => ({DRAWING_FITTED})().every(Boolean)", timeout=5000)
    assert page.evaluate(DRAWING_FITTED) == [True, True]
    texts = page.evaluate(f"() => ({VISIBLE_TEXT})(document.body)")
    assert texts and min(t["px"] for t in texts) >= MIN_TEXT_PX - 0.01
    page.screenshot(path=str(artifacts / f"readability-side-by-side-{page.scheme}.png"))
    assert page.errors == []
