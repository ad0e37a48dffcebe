"""gradviz.widget: traits, stepping from Python, live refresh, release, export and escaping.

Tests that need no torch use gradviz's own tensors (they run in the torch-blocked pass too); those
marked with the ``lib`` fixture run once on gradviz and once on torch, and the rest take the
``torch`` fixture because torch is their point.
"""
from __future__ import annotations

import gc
import json
import pathlib
import re
import weakref

import pytest

import gradviz as gv
from fixtures.widget_graphs import HOSTILE, lesson_graph, lesson_tensors

pytest.importorskip("anywidget")

from gradviz.widget import GraphWidget, export_html, live, show  # noqa: E402
from gradviz.widget.export import script_json  # noqa: E402
from gradviz.widget.ipython import WIDGET_MIME, load_ipython_extension, unload_ipython_extension  # noqa: E402
from gradviz.widget.state import FREED_NOTE, OPTIONS, REPLAY_NOTE, STATE_KEYS  # noqa: E402


@pytest.fixture(params=["gradviz", "torch"])
def lib(request):
    """The library a test's tensors come from: the widget must behave the same for both."""
    return gv if request.param == "gradviz" else pytest.importorskip("torch")


def lesson(lib=gv):
    """``loss = (x * w + b) * x``, with its names."""
    return lesson_tensors(lib=lib)


def leaf_grads(widget) -> dict:
    return {n["label"]: (n["grad"] or {}).get("preview") for n in widget.graph["nodes"] if n["kind"] == "leaf"}


# ---------------------------------------------------------------- traits from a prepared graph


def test_traits_from_a_prepared_graph_and_trace():
    graph, trace, _, _ = lesson_graph()
    widget = GraphWidget(graph=graph, trace=trace)
    assert widget.graph == graph.to_dict()
    assert widget.trace == trace
    assert set(widget.graph_layout["nodes"]) == {node.id for node in graph.nodes}
    assert widget.step_index == 0 and widget.current_step() is None
    state = widget.get_state()
    for name in ("graph", "graph_layout", "trace", "step_index", "show_saved", "speed", "height", "note", "_esm",
                 "_css"):
        assert name in state


def test_the_traits_are_the_view_state_and_layout_is_ipywidgets_own():
    import ipywidgets

    graph, trace, _, _ = lesson_graph()
    widget = GraphWidget(graph=graph, trace=trace)
    own = set(GraphWidget.class_own_traits(sync=True)) - {"_esm", "_css"}
    assert own == set(STATE_KEYS)  # the trait list is written once, in gradviz.widget.state
    assert {name: getattr(widget, name) for name in OPTIONS} == OPTIONS
    assert isinstance(widget.layout, ipywidgets.Layout)
    widget.layout.width = "100%"  # works as for any ipywidget
    assert widget.get_state()["layout"].startswith("IPY_MODEL_")


def test_esm_and_css_are_the_shipped_files():
    here = pathlib.Path(__file__).parents[1] / "gradviz" / "widget"
    esm, css = str(GraphWidget._esm), str(GraphWidget._css)
    assert esm == (here / "gradviz.js").read_text(encoding="utf-8")
    # text, not a Path: anywidget would tie every instance to the file's change signal (no widget
    # could be collected); ANYWIDGET_HMR=1 turns hot reload back on
    assert isinstance(GraphWidget._esm, str) and isinstance(GraphWidget._css, str)
    assert "export default" in esm and "render" in esm
    assert ".gv-current" in css and "--jp-" in css
    assert ".innerHTML" not in esm  # user text only ever goes through textContent
    assert len(esm) < 100_000  # copied into every widget and saved notebook: hand-written, no bundle


def test_step_back_reset_clamp_to_the_trace():
    graph, trace, _, _ = lesson_graph()
    widget = GraphWidget(graph=graph, trace=trace)
    assert widget.step() == 1
    assert widget.current_step()["node"] == trace[0]["node"]
    for _ in range(len(trace) + 3):
        widget.step()
    assert widget.step_index == len(trace)
    assert widget.back() == len(trace) - 1
    assert widget.reset() == 0
    assert widget.back() == 0
    widget.step_index = 99
    assert widget.step_index == len(trace)


def test_trace_carries_the_chain_rule_numbers():
    graph, trace, _, _ = lesson_graph()
    by_leaf = {graph.node(step["leaf"]).label: step for step in trace if step["leaf"]}
    x_step = by_leaf["x"]
    assert len(x_step["contributions"][0]) == 2  # x is used twice: two pieces are summed
    assert x_step["grad_before"] is None and x_step["grad_after"]["preview"] == "13."


# ---------------------------------------------------------------- from live tensors


def test_show_labels_from_the_callers_variables(lib):
    loss, names = lesson(lib)
    x, w, b = names["x"], names["w"], names["b"]  # noqa: F841 - found by show() in this frame
    widget = show(loss)
    labels = {n["label"] for n in widget.graph["nodes"] if n["kind"] == "leaf"}
    assert labels == {"x", "w", "b"}
    assert [s["name"] for s in widget.trace][0] == "MulBackward0"
    widget.close()


def test_show_rejects_non_tensors_naming_what_is_accepted():
    with pytest.raises(TypeError, match="gradviz.Tensor or a torch.Tensor"):
        show([1.0, 2.0])
    with pytest.raises(TypeError, match="GraphWidget"):
        export_html("loss", "out.html")


def test_a_tensor_without_a_graph_is_one_node_with_a_note(lib):
    widget = show(lib.tensor(3.0), names={})
    assert len(widget.graph["nodes"]) == 1
    assert widget.trace == []
    assert "grad" in widget.note
    widget.close()


def test_trace_is_a_dry_run(lib):
    loss, names = lesson(lib)
    widget = show(loss, names=names)
    assert all(t.grad is None for t in (names["x"], names["w"], names["b"]))
    assert len(widget.trace) == 6
    widget.close()


def test_refresh_after_backward_shows_grads_and_freed_tensors_keeping_layout(monkeypatch, lib):
    loss, names = lesson(lib)
    widget = show(loss, names=names)
    layout = widget.graph_layout
    trace = widget.trace
    from gradviz.widget import widget as widget_module

    monkeypatch.setattr(widget_module, "compute_layout", lambda graph: pytest.fail("layout recomputed"))
    loss.backward()
    widget.refresh()
    assert leaf_grads(widget) == {"x": "13.", "w": "4.", "b": "2."}
    assert widget.graph_layout["nodes"] is layout["nodes"]  # positions kept, text re-cut
    x_id = next(n["id"] for n in widget.graph["nodes"] if n["label"] == "x")
    assert "grad: 13." in [line["text"] for line in widget.graph_layout["text"][x_id]]
    freed = [s["freed"] for n in widget.graph["nodes"] for s in n["saved"]]
    assert freed and all(freed)
    assert widget.note == f"{FREED_NOTE} {REPLAY_NOTE}" and widget.trace == trace
    names["x"].grad.zero_()
    widget.refresh()
    assert leaf_grads(widget)["x"] == "0."
    widget.close()


def test_refresh_all_follows_an_optimizer_step(lib):
    loss, names = lesson(lib)
    widget = show(loss, names=names)
    loss.backward(retain_graph=True)
    lib.optim.SGD([names["x"], names["w"], names["b"]], lr=0.1).step()
    live.refresh_all()
    values = {n["label"]: n["value"]["preview"] for n in widget.graph["nodes"] if n["kind"] == "leaf"}
    assert values["x"] == "0.7"  # 2 - 0.1 * 13
    assert "inplace" in widget.note  # the step changed tensors that backward saved
    widget.close()


def test_closing_and_dropping_the_widget_releases_the_graph(lib):
    loss, names = lesson(lib)
    widget = show(loss, names=names)
    graph_ref = weakref.ref(loss)
    assert widget in live.tracked()
    del loss, names
    widget.close()
    del widget
    gc.collect()
    assert graph_ref() is None
    assert not any(w.tensor is not None for w in live.tracked())


def test_ipython_post_run_cell_refreshes_live_widgets(lib):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell(f"import {lib.__name__} as lib\nfrom gradviz.widget import show\n"
                       "x = lib.tensor(2.0, requires_grad=True)\nloss = x * x\nwidget = show(loss)")
        widget = shell.user_ns["widget"]
        assert leaf_grads(widget) == {"x": None}
        shell.run_cell("loss.backward()")
        assert leaf_grads(widget) == {"x": "4."}
        widget.close()
    finally:
        live.unregister(shell)


def test_mimebundle_carries_the_widget_view_and_a_stepping_html_fallback(lib):
    loss, names = lesson(lib)
    widget = GraphWidget(loss, names=names)
    bundle, _ = widget._repr_mimebundle_()
    assert bundle[WIDGET_MIME]["model_id"] == widget.model_id
    fallback = bundle["text/html"]
    state = re.search(r'<script type="application/json" id="(gradviz-[0-9a-f]+)-state">(.*?)</script>', fallback)
    assert state and f'id="{state.group(1)}"' in fallback and "gradviz.mount" in fallback
    shipped = json.loads(state.group(2))
    assert [step["node"] for step in shipped["trace"]] == [step["node"] for step in widget.trace]
    widget.close()


def test_a_huge_graph_gets_a_short_fallback_not_a_page(monkeypatch):
    from gradviz.widget import widget as widget_module

    x = gv.tensor(2.0, requires_grad=True)
    widget = GraphWidget((x * 3).sin(), names={"x": x})
    monkeypatch.setattr(widget_module, "FALLBACK_MAX_NODES", len(widget.graph["nodes"]) - 1)
    fallback = widget._repr_mimebundle_()[0]["text/html"]
    assert "gradviz-embed" not in fallback and "gv.export_html" in fallback and len(fallback) < 300
    widget.close()


def test_load_ext_shows_tensors_with_a_grad_fn_as_the_widget(lib):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    load_ipython_extension(shell)
    try:
        loss, names = lesson(lib)
        data, _ = shell.display_formatter.format(loss)
        assert WIDGET_MIME in data
        assert data["text/plain"] == repr(loss)  # text stays PyTorch's repr
        assert 'class="gradviz-embed"' in data["text/html"]  # the no-kernel fallback rides along
        leaf_data, _ = shell.display_formatter.format(names["x"])
        assert WIDGET_MIME not in leaf_data
    finally:
        unload_ipython_extension(shell)
    assert WIDGET_MIME not in shell.display_formatter.format(loss)[0]
    for widget in live.tracked():
        widget.close()


# ---------------------------------------------------------------- export and escaping


def test_script_json_cannot_close_a_script_block():
    value = {"label": "</script><script>alert(1)</script>&\u2028\u2029"}
    text = script_json(value)
    assert "<" not in text and ">" not in text and "&" not in text
    assert "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == value


def test_export_html_is_one_self_contained_file(tmp_path):
    graph, trace, _, _ = lesson_graph()
    path = export_html(GraphWidget(graph=graph, trace=trace), tmp_path / "graph.html")
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # no network, no CDN
    assert "<link" not in page
    assert page.lower().count("</script") == page.lower().count("<script")
    assert "MulBackward0" in page


def test_export_escapes_hostile_labels(tmp_path):
    graph, trace, _, _ = lesson_graph(label_x=HOSTILE)
    page = export_html(GraphWidget(graph=graph, trace=trace), tmp_path / "hostile.html").read_text()
    assert HOSTILE not in page
    assert "<img" not in page
    assert page.lower().count("</script") == 3  # only the page's own three script blocks


def test_export_html_from_a_tensor_uses_the_callers_names(tmp_path, lib):
    loss, names = lesson(lib)
    x = names["x"]  # noqa: F841 - found by export_html() in this frame
    page = export_html(loss, tmp_path / "t.html").read_text()
    state = json.loads(re.search(r'-state">(.*?)</script>', page).group(1))
    assert "x" in {n["label"] for n in state["graph"]["nodes"]}
    assert len(state["trace"]) == 6


def test_to_html_is_an_embeddable_fragment():
    graph, trace, _, _ = lesson_graph()
    fragment = GraphWidget(graph=graph, trace=trace).to_html()
    assert "<html" not in fragment and "<head" not in fragment
    assert 'class="gradviz-embed"' in fragment


def test_standard_widget_embedding_carries_the_state(tmp_path):
    from ipywidgets.embed import embed_minimal_html

    graph, trace, _, _ = lesson_graph()
    widget = GraphWidget(graph=graph, trace=trace)
    embed_minimal_html(tmp_path / "embed.html", views=[widget], title="gradviz")
    page = (tmp_path / "embed.html").read_text()
    state = json.loads(re.search(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>',
                                 page, re.S).group(1))
    models = [m["state"] for m in state["state"].values() if "trace" in m["state"]]
    assert models and models[0]["trace"] == trace and models[0]["_esm"] == str(GraphWidget._esm)


# ---------------------------------------------------------------- model= and module groups


def two_layer_loss(lib):
    """The same two-layer network in either library: fc1, relu, fc2."""

    class TwoLayer(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(3, 4)
            self.fc2 = lib.nn.Linear(4, 1)

        def forward(self, x):
            return self.fc2(lib.relu(self.fc1(x)))

    lib.manual_seed(0)
    model = TwoLayer()
    return model(lib.randn(2, 3)).sum(), model


def test_model_labels_parameters_and_groups_in_show_widget_and_export(tmp_path, lib):
    loss, model = two_layer_loss(lib)
    for widget in (show(loss, model=model), GraphWidget(loss, {}, model=model)):
        labels = {n["label"] for n in widget.graph["nodes"] if n["kind"] == "leaf"}
        assert labels == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
        assert {g["label"] for g in widget.graph_layout["groups"]} == {"fc1", "fc2"}
        assert widget.collapse == "auto"
    page = export_html(loss, tmp_path / "model.html", model=model, collapse=True).read_text()
    state = json.loads(re.search(r'-state">(.*?)</script>', page).group(1))
    assert "fc1.weight" in {n["label"] for n in state["graph"]["nodes"]}
    assert state["collapse"] is True and {g["label"] for g in state["graph_layout"]["groups"]} == {"fc1", "fc2"}
    with pytest.raises(TypeError, match="unknown option"):
        export_html(loss, tmp_path / "bad.html", model=model, colapse=True)


def test_model_names_gradviz_parameters_too():
    gv.manual_seed(0)
    model = gv.nn.Sequential(gv.nn.Linear(3, 2), gv.nn.ReLU(), gv.nn.Linear(2, 1))
    loss = model(gv.randn(4, 3)).sum()
    widget = show(loss, model=model)
    labels = {n["label"] for n in widget.graph["nodes"] if n["kind"] == "leaf"}
    assert labels == {"0.weight", "0.bias", "2.weight", "2.bias"}


def test_collapse_accepts_auto_true_false_only():
    graph, trace, _, _ = lesson_graph()
    for value in ("auto", True, False):
        assert GraphWidget(graph=graph, trace=trace, collapse=value).collapse == value
    with pytest.raises(Exception):
        GraphWidget(graph=graph, trace=trace, collapse="sometimes")


# ---------------------------------------------------------------- compare side by side


def compare_pair(torch, label="a"):
    def build(module):
        a = module.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = module.tensor([0.5, -1.0, 2.0], requires_grad=True)
        return (a * b + a * a).sum(), a, b

    loss_gv, _, _ = build(gv)
    loss_torch, a, b = build(torch)
    return gv.compare(loss_gv, loss_torch, names={label: a, "b": b})


def test_comparison_shows_both_graphs_side_by_side_with_the_report_under(torch):
    import ipywidgets

    comparison = compare_pair(torch)
    view = comparison.show()
    sides, report = view.children
    assert isinstance(sides, ipywidgets.HBox) and isinstance(report, ipywidgets.HTML)
    left, right = (column.children[1] for column in sides.children)
    assert isinstance(left, GraphWidget) and isinstance(right, GraphWidget)
    assert left.graph["source"] == "gradviz" and right.graph["source"] == "torch"
    assert [s["name"] for s in left.trace] == [s["name"] for s in right.trace]
    leaf_labels = lambda widget: sorted(n["label"] for n in widget.graph["nodes"] if n["kind"] == "leaf")  # noqa: E731
    assert leaf_labels(left) == leaf_labels(right) == ["a", "b"]  # gradviz leaves take torch's labels
    assert "agree" in report.value and "step order" in report.value
    assert str(comparison) == comparison.report()  # print() still gives the text report


def test_comparison_displays_itself_and_escapes_the_report(torch):
    comparison = compare_pair(torch, label=HOSTILE)
    bundle = comparison._repr_mimebundle_()
    assert WIDGET_MIME in bundle
    assert bundle["text/plain"] == comparison.report()
    assert HOSTILE not in bundle["text/html"] and "<img" not in bundle["text/html"]
    report = comparison.show().children[1].value
    assert "&lt;img src=x" in report or "agree" in report  # the label is escaped wherever it shows
    assert "<script>" not in report


# ---------------------------------------------------------------- big exports


def test_a_big_export_is_compressed_and_reads_back_as_the_same_state(tmp_path):
    from fixtures.shapes import chain
    from gradviz.widget.export import COMPRESS_ABOVE, GZIP_ENCODING, read_state
    from gradviz.widget.state import view_state

    output = chain(3000)
    state = view_state(output, {})
    assert len(script_json(state)) > COMPRESS_ABOVE
    page = export_html(output, tmp_path / "chain.html", names={}).read_text()
    block = re.search(r'<script type="application/octet-stream" id="[^"]*-state" data-encoding="([^"]+)">([^<]*)</script>',
                      page)
    assert block and block.group(1) == GZIP_ENCODING
    assert read_state(block.group(2), block.group(1)) == json.loads(script_json(state))
    assert len(page) < len(script_json(state)) / 5
