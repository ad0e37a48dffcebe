"""The live refresh (gradviz/widget/live.py): a cell costs what changed, and widgets nobody shows
or holds are released.

A plain IPython shell stands in for the kernel; the front end's view reports are the messages
gradviz.js sends (``{"type": "gradviz-view", "open": ...}``), delivered as ipywidgets delivers them.
"""
from __future__ import annotations

import gc
import weakref

import pytest

import gradviz as gv
from fixtures.widget_graphs import lesson_tensors

pytest.importorskip("anywidget")
pytest.importorskip("IPython")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from ipywidgets.widgets import widget as ipywidgets_widget  # noqa: E402

from gradviz.widget import live, show  # noqa: E402
from gradviz.widget import state as state_module  # noqa: E402
from gradviz.widget.changes import EVERYTHING, GRADS, NOTHING  # noqa: E402
from gradviz.widget.ipython import WIDGET_MIME, load_ipython_extension, unload_ipython_extension  # noqa: E402


@pytest.fixture(params=["gradviz", "torch"])
def lib(request):
    return gv if request.param == "gradviz" else pytest.importorskip("torch")


@pytest.fixture
def shell():
    shell = InteractiveShell.instance()
    shell.run_cell("import gradviz as gv\nfrom gradviz.widget import show")
    yield shell
    live.unregister(shell)
    for widget in live.tracked():
        widget.close()


def view(widget, open_: bool) -> None:
    """What the front end sends when a view of ``widget`` appears or goes away."""
    widget._on_front_end_message(widget, {"type": "gradviz-view", "open": open_}, [])


def no_snapshot(monkeypatch):
    """Make any new snapshot (walk + trace) fail the test."""
    from gradviz.widget import widget as widget_module

    monkeypatch.setattr(widget_module, "take_snapshot", lambda *a, **k: pytest.fail("snapshot taken again"))


# ------------------------------------------------------------------ what a cell costs

def test_a_cell_that_changes_nothing_takes_no_snapshot(monkeypatch, lib):
    loss, names = lesson_tensors(lib=lib)
    widget = show(loss, names=names)
    no_snapshot(monkeypatch)
    assert widget.refresh_if_changed() == NOTHING
    live.refresh_all()
    assert widget.graph["nodes"]


def test_a_grad_change_updates_leaves_and_accumulation_without_a_trace_or_hook(monkeypatch, lib):
    loss, names = lesson_tensors(lib=lib)
    calls = []
    names["z"].register_hook(lambda g: calls.append(g))
    widget = show(loss, names=names)
    loss.backward(retain_graph=True)
    calls.clear()  # backward itself ran the hook, as it should
    with monkeypatch.context() as patch:
        no_snapshot(patch)
        assert widget.refresh_if_changed() == GRADS
    assert calls == []
    partial = (widget.graph, widget.trace, widget.graph_layout["text"])
    widget.refresh()  # a full snapshot must agree with the partial update
    assert (widget.graph, widget.trace, widget.graph_layout["text"]) == partial
    names["x"].grad.zero_()
    assert widget.refresh_if_changed() == GRADS
    x_id = next(n["id"] for n in widget.graph["nodes"] if n["label"] == "x")
    assert next(n for n in widget.graph["nodes"] if n["id"] == x_id)["grad"]["preview"] == "0."
    [x_step] = [e for e in widget.trace if e["leaf"] == x_id]
    assert x_step["grad_before"]["preview"] == "0." and x_step["grad_after"]["preview"] == "13."
    assert calls == []
    widget.close()


def test_values_or_a_freed_graph_take_a_new_snapshot(lib):
    loss, names = lesson_tensors(lib=lib)
    widget = show(loss, names=names)
    loss.backward()
    assert widget.refresh_if_changed() == EVERYTHING
    assert all(s["freed"] for n in widget.graph["nodes"] for s in n["saved"])
    with (gv if lib is gv else lib).no_grad():
        names["w"].add_(1)
    assert widget.refresh_if_changed() == EVERYTHING
    w_node = next(n for n in widget.graph["nodes"] if n["label"] == "w")
    assert w_node["value"]["preview"] == "4."
    widget.close()


# ------------------------------------------------------------------ release

def test_a_deleted_widget_is_released_and_collected(shell):
    shell.run_cell("x = gv.tensor(2.0, requires_grad=True)\nloss = x * x\nw = show(loss)")
    widget = shell.user_ns["w"]
    model_id = widget.model_id
    ref = weakref.ref(widget)
    del widget
    shell.run_cell("y = 1 + 1")
    assert ref() is not None and ref().tensor is not None  # still held by the user's w
    shell.run_cell("del w")
    gc.collect()
    assert ref() is None
    assert model_id not in ipywidgets_widget._instances


def test_a_widget_shown_as_a_result_without_a_front_end_is_released(shell):
    shell.run_cell("x = gv.tensor(2.0, requires_grad=True)\nloss = x * x")
    shell.run_cell("show(loss)")  # the output history holds it, nothing else does
    released = shell.user_ns["_"]
    assert released.comm is None and released.graph == {} and released.tensor is None
    assert live.tracked() == []


def test_with_a_front_end_a_widget_lives_while_a_view_is_on_screen(shell, monkeypatch):
    monkeypatch.setattr(shell, "kernel", object(), raising=False)  # a kernel a front end draws in
    shell.run_cell("x = gv.tensor(2.0, requires_grad=True)\nloss = x * x")
    shell.run_cell("show(loss)")
    widget = weakref.ref(live.tracked()[0])  # the test must not hold it
    shell.run_cell("y = 1")
    assert widget().comm is not None  # handed to the front end, no view reported yet
    view(widget(), True)
    shell.run_cell("loss.backward(retain_graph=True)")
    leaf = next(n for n in widget().graph["nodes"] if n["kind"] == "leaf")
    assert leaf["grad"]["preview"] == "4."  # on screen: kept up to date
    view(widget(), False)  # the output was cleared
    shell.run_cell("y = 2")
    assert widget().comm is None and live.tracked() == []


def test_many_shown_then_deleted_widgets_are_all_released(shell):
    before = set(ipywidgets_widget._instances)
    shell.run_cell("x = gv.tensor(2.0, requires_grad=True)\nloss = x * x")
    for _ in range(20):
        shell.run_cell("w = show(loss)\nw")
    shell.run_cell("del w")
    assert live.tracked() == []
    assert set(ipywidgets_widget._instances) <= before


def test_the_machinery_count_is_every_holder_there_is(lib):
    """What GraphWidget.__init__ measures equals a heap scan of the widget's holders, made while
    nothing but the widget machinery holds it (this test's own variable is not a heap object)."""
    import types

    loss, names = lesson_tensors(lib=lib)
    widget = show(loss, names=names)
    count = 0
    for holder in gc.get_referrers(widget):  # plain loops: a comprehension's closure would hold widget
        if not isinstance(holder, types.FrameType):
            for item in gc.get_referents(holder):
                count += item is widget
    assert widget._machinery_references == count
    widget.close()


def test_user_references_count_only_the_users(lib):
    loss, names = lesson_tensors(lib=lib)
    widget = show(loss, names=names)
    assert live.user_references(widget) == 0  # the test's own variable is the caller's
    held = [widget]
    assert live.user_references(widget) == 1
    del held
    widget.close()


# ------------------------------------------------------------------ %load_ext gradviz

def test_load_ext_shows_one_widget_per_tensor(shell):
    load_ipython_extension(shell)
    try:
        shell.run_cell("x = gv.tensor(2.0, requires_grad=True)\nloss = x * x")
        shell.run_cell("hold = []")
        first = shell.display_formatter.format(shell.user_ns["loss"])[0][WIDGET_MIME]["model_id"]
        shell.user_ns["hold"].extend(live.tracked())
        again = shell.display_formatter.format(shell.user_ns["loss"])[0][WIDGET_MIME]["model_id"]
        assert again == first and len(live.tracked()) == 1
        shell.run_cell("other = x * 3")
        shell.display_formatter.format(shell.user_ns["other"])
        assert len(live.tracked()) == 2
        shell.run_cell("hold.clear()")  # nothing shows or holds either widget now
        assert live.tracked() == []
    finally:
        unload_ipython_extension(shell)


def test_state_module_is_not_touched_by_a_refresh_of_nothing(monkeypatch):
    loss, names = lesson_tensors()
    widget = show(loss, names=names)
    monkeypatch.setattr(state_module, "graph_of", lambda *a, **k: pytest.fail("walked again"))
    for _ in range(3):
        live.refresh_all()
    widget.close()


def test_a_widget_that_fails_to_refresh_warns_and_the_others_still_refresh(monkeypatch):
    first_loss, first_names = lesson_tensors()
    second_loss, second_names = lesson_tensors()
    broken, working = show(first_loss, names=first_names), show(second_loss, names=second_names)
    monkeypatch.setattr(broken, "refresh_if_changed", lambda: 1 / 0)
    second_loss.backward(retain_graph=True)
    with pytest.warns(RuntimeWarning, match="could not refresh a graph widget: ZeroDivisionError"):
        live.refresh_all()
    x = next(n for n in working.graph["nodes"] if n["label"] == "x")
    assert x["grad"]["preview"] == "13."
    broken.close()
    working.close()
