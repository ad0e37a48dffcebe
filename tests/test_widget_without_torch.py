"""The widget on gradviz's own tensors: everything a torch-free classroom needs.

This file imports no torch, so it also runs in the suite's torch-blocked pass.
"""
import re

import pytest

import gradviz as gv

pytest.importorskip("anywidget")

from gradviz.widget import GraphWidget, export_html, show  # noqa: E402


def lesson():
    x = gv.tensor(2.0, requires_grad=True)
    w = gv.tensor(3.0, requires_grad=True)
    b = gv.tensor(1.0, requires_grad=True)
    loss = (x * w + b) * x
    return x, w, b, loss


def test_show_draws_the_graph_with_names_and_pytorch_node_names():
    x, w, b, loss = lesson()
    widget = show(loss)
    labels = {node["label"] for node in widget.graph["nodes"]}
    names = [node["name"] for node in widget.graph["nodes"] if node["kind"] == "function"]
    assert {"x", "w", "b", "loss"} <= labels
    assert sorted(names) == ["AddBackward0", "MulBackward0", "MulBackward0"]
    assert len(widget.graph_layout["nodes"]) == len(widget.graph["nodes"])


def test_the_trace_follows_backward_steps_and_changes_no_grad():
    x, w, b, loss = lesson()
    widget = show(loss)
    expected = [step.name for step in gv.autograd.backward_steps(loss, retain_graph=True, dry_run=True)]
    assert [entry["name"] for entry in widget.trace] == expected
    assert x.grad is None and w.grad is None
    widget.step()
    widget.step()
    assert widget.step_index == 2 and widget.current_step()["name"] == expected[1]
    widget.reset()
    assert widget.current_step() is None


def test_refresh_after_backward_shows_the_new_grads_and_freed_tensors():
    x, w, b, loss = lesson()
    widget = show(loss)
    loss.backward()
    widget.refresh()
    leaf = next(node for node in widget.graph["nodes"] if node["label"] == "x")
    assert leaf["grad"]["preview"] == "13."  # d/dx (x*w + b)*x = 2xw + b
    assert any(saved["freed"] for node in widget.graph["nodes"] for saved in node["saved"])
    assert widget.note  # says why the backward pass cannot be stepped again


def test_export_html_is_self_contained_and_escapes_labels(tmp_path):
    x, w, b, loss = lesson()
    hostile = "<img src=x onerror=alert(1)></script>"
    path = export_html(loss, tmp_path / "post.html", names={hostile: x, "loss": loss})
    html = path.read_text(encoding="utf-8")
    assert "<img src=x" not in html  # the label is JSON data with < escaped, never markup
    assert html.count("</script>") == html.count("<script")  # no script block closed early
    assert not re.search(r"""(src|href)=["']https?://""", html)


def test_non_tensors_get_a_type_error_naming_what_is_accepted():
    with pytest.raises(TypeError, match="gradviz.Tensor or a torch.Tensor"):
        show([1.0, 2.0])
    with pytest.raises(TypeError):
        GraphWidget()


def test_a_tensor_without_a_graph_is_one_node_with_a_note():
    widget = show(gv.ones(3))
    assert len(widget.graph["nodes"]) == 1 and widget.trace == []
    assert "grad_fn" in widget.note
