"""The note above a graph tells the truth: each claim is checked against what the engine does now
(the same call raises, or runs) and against what the controls step (the trace)."""
from __future__ import annotations

import pytest

import gradviz as gv
from gradviz.widget.state import (FREED_NOTE, FROM_ONES_NOTE, NON_SCALAR_NOTE, NOTHING_TO_STEP, REPLAY_NOTE,
                                  STALE_NOTE, take_snapshot)

pytest.importorskip("anywidget")

from gradviz.widget import show  # noqa: E402


@pytest.fixture(params=["gradviz", "torch"])
def lib(request):
    return gv if request.param == "gradviz" else pytest.importorskip("torch")


def raises(call) -> str | None:
    """The message ``call`` raises with, or None when it runs."""
    try:
        call()
    except RuntimeError as error:
        return str(error)
    return None


def test_after_backward_freed_the_graph_the_note_says_the_steps_are_a_replay(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    widget = show(loss, names={"x": x, "loss": loss})
    recorded = widget.trace
    loss.backward()
    widget.refresh()
    assert widget.note == f"{FREED_NOTE} {REPLAY_NOTE}"
    assert widget.trace == recorded and len(widget.trace) == 3  # the buttons step the replay
    assert "second time" in raises(loss.backward)  # "cannot run backward again" is true
    widget.close()


def test_a_graph_first_shown_after_it_was_freed_has_nothing_to_step(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    snapshot = take_snapshot(loss, {"loss": loss})
    assert snapshot.note == f"{FREED_NOTE} {NOTHING_TO_STEP}" and snapshot.trace == []
    assert "from before" not in snapshot.note and REPLAY_NOTE not in snapshot.note


def test_a_non_scalar_output_is_stepped_from_ones_and_says_so(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    snapshot = take_snapshot(y, {"x": x, "y": y})
    assert snapshot.note == f'{NON_SCALAR_NOTE.format(label="y")} {FROM_ONES_NOTE.format(label="y")}'
    assert "from before" not in snapshot.note and len(snapshot.trace) == 2
    message = raises(y.backward)
    assert message == "grad can be implicitly created only for scalar outputs" and message in snapshot.note
    y.backward(lib.ones_like(y))  # what the note says the steps are
    accumulate = snapshot.trace[-1]
    assert accumulate["grad_after"]["preview"] == "[2., 2.]"
    assert x.grad.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("make", ["no_grad", "detach", "plain"])
def test_tensors_without_a_graph_have_nothing_to_step(lib, make):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    if make == "no_grad":
        with lib.no_grad():
            y = x * 2
    elif make == "detach":
        y = (x * 2).detach()
    else:
        y = lib.tensor([1.0, 2.0])
    snapshot = take_snapshot(y, {"y": y})
    assert snapshot.trace == [] and snapshot.note.endswith(NOTHING_TO_STEP)
    assert "no grad_fn and does not require grad" in snapshot.note
    assert "does not require grad" in raises(lambda: y.sum().backward())


def test_a_saved_tensor_changed_in_place_quotes_the_engines_error(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    hidden = x * 1
    loss = (hidden * hidden).sum()
    widget = show(loss, names={"x": x, "loss": loss})
    with lib.no_grad():
        hidden.add_(1)
    widget.refresh()
    message = raises(loss.backward)
    assert "modified by an inplace operation" in message
    assert widget.note == f"{STALE_NOTE} {message} {REPLAY_NOTE}" and widget.trace
    widget.close()


def test_a_kept_graph_has_no_note_and_fresh_steps(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    widget = show(loss, names={"x": x, "loss": loss})
    loss.backward(retain_graph=True)
    widget.refresh()
    assert widget.note == ""
    accumulate = widget.trace[-1]
    assert accumulate["grad_before"]["preview"] == "[2., 4.]" and accumulate["grad_after"]["preview"] == "[4., 8.]"
    widget.close()


def test_a_freed_non_scalar_graph_shown_first_claims_no_steps(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.backward(lib.ones_like(y))
    snapshot = take_snapshot(y, {"y": y})
    assert snapshot.trace == []
    assert snapshot.note == f'{NON_SCALAR_NOTE.format(label="y")} {FREED_NOTE} {NOTHING_TO_STEP}'
    assert "steps shown" not in snapshot.note
