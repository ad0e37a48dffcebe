"""The packed wire form of a big graph's traits (``gradviz/widget/wire.py``): unpacking a packed
state gives back exactly the plain state, for gradviz and torch graphs of several shapes; the
constants the front end unpacks with are the same as Python's; exports and the widget's buffers
pack only big graphs. (That a packed export steps in a browser exactly as a plain one does is
``tests/browser/test_export_browser.py::test_a_packed_export_steps_exactly_as_a_plain_one``.)"""
from __future__ import annotations

import json
import pathlib
import re

import pytest

import gradviz as gv
from fixtures import shapes
from gradviz.widget import wire
from gradviz.widget.export import GZIP_ENCODING, export_html, read_state, script_json
from gradviz.widget.state import view_state

JS = (pathlib.Path(wire.__file__).parent / "gradviz.js").read_text(encoding="utf-8")


def gradviz_graphs():
    x = gv.tensor([[1.0, -2.0, 3.0], [0.5, 0.0, 4.0]], requires_grad=True)
    w = gv.tensor([0.3, -0.7, 1.1], requires_grad=True)
    broadcast = ((x * w).tanh() + x.exp() * 2).sum()
    y = x.clone()
    y[0] = x[0] * w  # a view's step (CopySlices) carries the view's numbers
    return {"chain": shapes.chain(40), "fan-out": shapes.fan_out(30), "rnn": shapes.unrolled_rnn(12),
            "broadcast": broadcast, "copy-slices": (y * y).sum(), "non-scalar": x * w}


def torch_graphs():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    x = torch.randn(5, 3)
    return {"mlp": (model(x).sum(), model), "chain": (shapes.chain(30, lib=torch), None),
            "rnn": (shapes.unrolled_rnn(10, lib=torch), None)}


def plain_json(value):
    return json.loads(script_json(value))


def assert_round_trip(state: dict) -> None:
    packed = plain_json({**state, "graph": wire.pack_graph(state["graph"]),
                         "graph_layout": wire.pack_layout(state["graph_layout"]),
                         "trace": wire.pack_trace(state["trace"])})
    assert packed["graph"]["packed"] == 1 and packed["graph_layout"]["packed"] == 1
    if state["trace"]:
        assert packed["trace"]["packed"] == 1
    assert wire.unpack_state(packed) == plain_json(state)
    assert len(script_json(packed)) < len(script_json(state))


@pytest.mark.parametrize("name", sorted(gradviz_graphs()))
def test_packing_a_gradviz_state_round_trips(name):
    assert_round_trip(view_state(gradviz_graphs()[name], {}))


def test_packing_a_torch_state_round_trips():
    for output, model in torch_graphs().values():
        assert_round_trip(view_state(output, {}, model=model))


def all_graphs():
    return [(output, None) for output in gradviz_graphs().values()] + list(torch_graphs().values())


def test_a_state_built_packed_unpacks_to_the_plain_state(monkeypatch):
    monkeypatch.setattr(wire, "PACK_ABOVE", 0)  # every graph is built packed, straight from its Steps
    for output, model in all_graphs():
        packed = view_state(output, {}, model=model, packed=True)
        assert packed["graph"]["packed"] == 1 and packed["trace"]["packed"] == 1
        assert wire.unpack_state(plain_json(packed)) == plain_json(view_state(output, {}, model=model))


def test_each_distinct_summary_and_text_is_written_once():
    state = view_state(shapes.chain(300), {})
    trace = wire.pack_trace(state["trace"])
    keys = [json.dumps(summary, sort_keys=True) for summary in trace["summaries"]]
    assert len(keys) == len(set(keys))
    layout = wire.pack_layout(state["graph_layout"])
    texts = [json.dumps(lines) for lines in layout["texts"]]
    assert len(texts) == len(set(texts)) and len(texts) < 10  # 300 SinBackward0 boxes say the same


def test_a_trace_of_an_unknown_shape_is_shipped_plain():
    trace = view_state(shapes.chain(5), {})["trace"]
    odd = [dict(entry, extra=1) for entry in trace]
    assert wire.pack_trace(odd) is odd
    assert wire.pack_trace([dict(entry, index=entry["index"] + 1) for entry in trace])[0]["index"] == 1


def js_array(name: str) -> list:
    body = re.search(rf"const {name} = \[(.*?)\];", JS, re.S).group(1)
    return re.findall(r'"([^"]+)"', body)


def test_the_front_end_unpacks_with_the_same_fields():
    assert tuple(js_array("SUMMARY_KEYS")) == wire.SUMMARY_KEYS
    assert tuple(js_array("STEP_FIELDS")) == wire.STEP_FIELDS
    body = re.search(r"const NODE_DEFAULTS = \{(.*?)\};", JS, re.S).group(1)
    defaults = dict(re.findall(r"(\w+): ([^,\s]+)", body))
    assert {key: json.loads(value) for key, value in defaults.items()} == wire.NODE_DEFAULTS


def exported_state_text(path) -> tuple:
    page = path.read_text(encoding="utf-8")
    block = re.search(r'<script type="application/(?:json|octet-stream)" id="[^"]*-state"'
                      r'(?: data-encoding="([^"]+)")?>([^<]*)</script>', page)
    return block.group(2), block.group(1)


def test_exports_pack_only_big_graphs(tmp_path):
    small = shapes.chain(wire.PACK_ABOVE - 10)
    text, encoding = exported_state_text(export_html(small, tmp_path / "small.html", names={}))
    assert encoding is None and '"packed"' not in text  # small exports stay readable

    big = shapes.chain(wire.PACK_ABOVE + 10)
    text, encoding = exported_state_text(export_html(big, tmp_path / "big.html", names={}))
    raw = json.loads(text) if encoding is None else None
    assert raw is None or raw["graph"]["packed"] == 1
    assert read_state(text, encoding) == plain_json(view_state(big, {}))


def test_a_big_export_reads_back_as_the_plain_state(tmp_path):
    output = shapes.fan_out(400)
    text, encoding = exported_state_text(export_html(output, tmp_path / "fan.html", names={}))
    assert encoding == GZIP_ENCODING
    assert read_state(text, encoding) == plain_json(view_state(output, {}))


def test_the_widget_sends_big_traits_packed_and_keeps_them_plain_in_python():
    pytest.importorskip("anywidget")
    from gradviz.widget.widget import _json_buffer

    widget = gv.GraphWidget(shapes.chain(wire.PACK_ABOVE + 5), names={})
    try:
        for name in ("graph", "graph_layout", "trace"):
            value = getattr(widget, name)
            sent = json.loads(_json_buffer(value, widget))
            assert wire.is_packed(sent)
            unpacked = {"graph": wire.unpack_graph, "graph_layout": wire.unpack_layout, "trace": wire.unpack_trace}[name]
            assert unpacked(sent) == plain_json(value)
        assert isinstance(widget.trace, list) and "nodes" in widget.graph
        assert widget.trace == plain_json(view_state(widget.tensor, {}))["trace"]  # unpacked from the packed one
        small = gv.GraphWidget(shapes.chain(3), names={})
        assert json.loads(_json_buffer(small.graph, small)) == plain_json(small.graph)
        small.close()
    finally:
        widget.close()


def test_after_a_grad_only_update_the_widget_sends_what_python_holds():
    pytest.importorskip("anywidget")
    from gradviz.widget.changes import GRADS
    from gradviz.widget.widget import _json_buffer

    output = shapes.fan_out(wire.PACK_ABOVE)
    widget = gv.GraphWidget(output, names={})
    try:
        output.backward(retain_graph=True)
        assert widget.refresh_if_changed() == GRADS  # .grad moved: updated in place, no new trace
        for name, unpack in (("graph", wire.unpack_graph), ("trace", wire.unpack_trace)):
            value = getattr(widget, name)
            assert unpack(json.loads(_json_buffer(value, widget))) == plain_json(value)
        assert any("grad: None" not in line["text"] for lines in widget.graph_layout["text"].values()
                   for line in lines if line["cls"] == "gv-grad")
    finally:
        widget.close()


def test_a_packed_export_escapes_every_user_string(tmp_path):
    from fixtures.widget_graphs import HOSTILE

    x = gv.tensor(0.5, requires_grad=True)
    output = x
    for _ in range(wire.PACK_ABOVE):
        output = output.sin()
    text, encoding = exported_state_text(export_html(output, tmp_path / "hostile.html", names={HOSTILE: x}))
    assert encoding is None and json.loads(text)["graph"]["packed"] == 1  # packed, and still plain JSON
    assert "<" not in text and ">" not in text and "&" not in text
    state = read_state(text, encoding)
    assert HOSTILE in [node["label"] for node in state["graph"]["nodes"]]
    assert state == plain_json(view_state(output, {HOSTILE: x}))
