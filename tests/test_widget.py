"""gradviz.widget: traits, stepping from Python, live refresh, release, export and escaping."""
from __future__ import annotations

import gc
import json
import pathlib
import re
import sys
import weakref

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from fixtures.widget_graphs import HOSTILE, lesson_graph  # noqa: E402

torch = pytest.importorskip("torch")

from gradviz.widget import GraphWidget, export_html, live, show  # noqa: E402
from gradviz.widget.export import script_json  # noqa: E402
from gradviz.widget.ipython import WIDGET_MIME, load_ipython_extension, unload_ipython_extension  # noqa: E402
from gradviz.widget.widget import FREED_NOTE  # noqa: E402


def lesson():
    """``loss = (x * w + b) * x`` in torch, with its names."""
    x = torch.tensor(2.0, requires_grad=True)
    w = torch.tensor(3.0, requires_grad=True)
    b = torch.tensor(1.0, requires_grad=True)
    z = x * w + b
    loss = z * x
    return loss, {"x": x, "w": w, "b": b, "z": z, "loss": loss}


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
    for name in ("graph", "graph_layout", "trace", "step_index", "show_saved", "speed", "height", "note", "_esm", "_css"):
        assert name in state


def test_esm_and_css_are_the_shipped_files():
    here = pathlib.Path(__file__).parents[1] / "gradviz" / "widget"
    assert GraphWidget._esm == (here / "gradviz.js").read_text(encoding="utf-8")
    assert "export default" in GraphWidget._esm and "render" in GraphWidget._esm
    assert ".gv-current" in GraphWidget._css and "--jp-" in GraphWidget._css
    assert ".innerHTML" not in GraphWidget._esm  # user text only ever goes through textContent
    assert len(GraphWidget._esm) < 60_000  # copied into every widget and saved notebook


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


def test_show_labels_from_the_callers_variables():
    loss, names = lesson()
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


def test_a_tensor_without_a_graph_is_one_node_with_a_note():
    widget = show(torch.tensor(3.0), names={})
    assert len(widget.graph["nodes"]) == 1
    assert widget.trace == []
    assert "grad" in widget.note
    widget.close()


def test_trace_is_a_dry_run():
    loss, names = lesson()
    widget = show(loss, names=names)
    assert all(t.grad is None for t in (names["x"], names["w"], names["b"]))
    assert len(widget.trace) == 6
    widget.close()


def test_refresh_after_backward_shows_grads_and_freed_tensors_keeping_layout(monkeypatch):
    loss, names = lesson()
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
    assert widget.note == FREED_NOTE and widget.trace == trace
    names["x"].grad.zero_()
    widget.refresh()
    assert leaf_grads(widget)["x"] == "0."
    widget.close()


def test_refresh_all_follows_an_optimizer_step():
    loss, names = lesson()
    widget = show(loss, names=names)
    loss.backward(retain_graph=True)
    torch.optim.SGD([names["x"], names["w"], names["b"]], lr=0.1).step()
    live.refresh_all()
    values = {n["label"]: n["value"]["preview"] for n in widget.graph["nodes"] if n["kind"] == "leaf"}
    assert values["x"] == "0.7"  # 2 - 0.1 * 13
    assert "inplace" in widget.note  # the step changed tensors that backward saved
    widget.close()


def test_closing_and_dropping_the_widget_releases_the_graph():
    loss, names = lesson()
    widget = show(loss, names=names)
    graph_ref = weakref.ref(loss)
    assert widget in live.tracked()
    del loss, names
    widget.close()
    del widget
    gc.collect()
    assert graph_ref() is None
    assert not any(w.tensor is not None for w in live.tracked())


def test_ipython_post_run_cell_refreshes_live_widgets():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("import torch\nfrom gradviz.widget import show\n"
                       "x = torch.tensor(2.0, requires_grad=True)\nloss = x * x\nwidget = show(loss)")
        widget = shell.user_ns["widget"]
        assert leaf_grads(widget) == {"x": None}
        shell.run_cell("loss.backward()")
        assert leaf_grads(widget) == {"x": "4."}
        widget.close()
    finally:
        live.unregister(shell)


def test_load_ext_shows_tensors_with_a_grad_fn_as_the_widget():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    load_ipython_extension(shell)
    try:
        loss, names = lesson()
        data, _ = shell.display_formatter.format(loss)
        assert WIDGET_MIME in data
        assert data["text/plain"] == repr(loss)  # text stays PyTorch's repr
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


def test_export_html_from_a_tensor_uses_the_callers_names(tmp_path):
    loss, names = lesson()
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
    assert models and models[0]["trace"] == trace and models[0]["_esm"] == GraphWidget._esm


# ---------------------------------------------------------------- model= and module groups


class TwoLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4)
        self.fc2 = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def two_layer_loss():
    torch.manual_seed(0)
    model = TwoLayer()
    return model(torch.randn(2, 3)).sum(), model


def test_model_labels_parameters_and_groups_in_show_widget_and_export(tmp_path):
    loss, model = two_layer_loss()
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
    import gradviz as gv

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


def compare_pair(label="a"):
    import gradviz as gv

    def build(module):
        a = module.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = module.tensor([0.5, -1.0, 2.0], requires_grad=True)
        return (a * b + a * a).sum(), a, b

    loss_gv, _, _ = build(gv)
    loss_torch, a, b = build(torch)
    return gv.compare(loss_gv, loss_torch, names={label: a, "b": b})


def test_comparison_shows_both_graphs_side_by_side_with_the_report_under():
    import ipywidgets

    comparison = compare_pair()
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


def test_comparison_displays_itself_and_escapes_the_report():
    comparison = compare_pair(label=HOSTILE)
    bundle = comparison._repr_mimebundle_()
    assert WIDGET_MIME in bundle
    assert bundle["text/plain"] == comparison.report()
    assert HOSTILE not in bundle["text/html"] and "<img" not in bundle["text/html"]
    report = comparison.show().children[1].value
    assert "&lt;img src=x" in report or "agree" in report  # the label is escaped wherever it shows
    assert "<script>" not in report
