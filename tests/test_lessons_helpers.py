"""gradviz.lessons, the helpers every lesson imports: called directly, as a lesson calls them."""
from __future__ import annotations

import pytest

import gradviz as gv
from gradviz.lessons import PROMPT, check, plot_decision_boundary, plot_losses, side_by_side, walk


# -- check ----------------------------------------------------------------------------------------
def test_check_accepts_the_right_answer(capsys):
    x = gv.tensor(3.0, requires_grad=True)
    (x * x).backward()
    check(6.0, x.grad)
    check(6.0004, x.grad)  # within the tolerance a hand calculation needs
    assert capsys.readouterr().out == "✅ Correct! autograd agrees: 6.0\n" * 2


def test_check_compares_lists_and_tensors_elementwise(capsys):
    x = gv.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (x ** 2).mean().backward()
    check([[0.5, 1.0], [1.5, 2.0]], x.grad)
    check(x / 2, x.grad)  # a tensor the learner computed
    check([False, True], [False, True])
    assert capsys.readouterr().out.count("✅ Correct!") == 3


def test_check_says_what_autograd_computed_when_wrong():
    x = gv.tensor(3.0, requires_grad=True)
    (x * x).backward()
    with pytest.raises(AssertionError, match=r"^Not quite: you predicted 9.0, autograd computed 6.0\. Step through"):
        check(9.0, x.grad)
    with pytest.raises(AssertionError, match="you predicted \\[6.0, 6.0\\], autograd computed 6.0"):
        check([6.0, 6.0], x.grad)  # the right number, the wrong shape


def test_check_explains_an_answer_that_is_not_a_number():
    with pytest.raises(AssertionError, match="'six' is not a number or a list of numbers. autograd computed 6.0"):
        check("six", gv.tensor(6.0))


def test_check_asks_for_a_prediction_while_it_is_none(capsys):
    check(None, gv.tensor(6.0))
    assert capsys.readouterr().out == PROMPT + "\n"
    assert "replace None" in PROMPT


# -- walk -----------------------------------------------------------------------------------------
def test_walk_prints_the_backward_pass_in_engine_order_and_changes_nothing(capsys):
    x = gv.tensor(2.0, requires_grad=True)
    w = gv.tensor(3.0, requires_grad=True)
    loss = (x * w).sin()
    walk(loss)
    lines = capsys.readouterr().out.splitlines()
    expected = [step.name.split("::")[-1] for step in gv.autograd.backward_steps(loss, dry_run=True)]
    assert [line.split()[2] for line in lines[::2]] == expected == ["SinBackward0", "MulBackward0",
                                                                   "AccumulateGrad", "AccumulateGrad"]
    assert lines[0] == "step 0: SinBackward0" and lines[1].startswith("    receives 1.   sends on ")
    assert lines[5].startswith("    .grad becomes ")
    assert x.grad is None and w.grad is None  # a dry run
    loss.backward()  # and the graph was not freed
    assert x.grad is not None


def test_walk_shortens_big_gradients_to_shape_and_first_numbers(capsys):
    w = gv.ones(4, 5, requires_grad=True)
    walk((w * 2).sum())
    printed = capsys.readouterr().out
    assert "4×5 [2.0000, 2.0000, 2.0000, …]" in printed


# -- plot_losses and side_by_side ---------------------------------------------------------------------
def test_plot_losses_draws_a_png_with_a_text_summary():
    pytest.importorskip("matplotlib")
    picture = plot_losses({"with zero_grad()": [2.5, 1.0, 0.25], "without": [2.5, 3.0, 1.5]})
    assert picture._repr_png_().startswith(b"\x89PNG")
    assert repr(picture) == ("<loss curve: with zero_grad(): 3 steps, loss 2.5 → 0.25; "
                             "without: 3 steps, loss 2.5 → 1.5>")


def test_plot_losses_names_its_axes_and_takes_a_log_scale():
    pytest.importorskip("matplotlib")
    from unittest import mock

    from matplotlib.axes import Axes

    with mock.patch.object(Axes, "set_yscale", autospec=True) as scale, \
            mock.patch.object(Axes, "set", autospec=True, wraps=Axes.set) as named:
        picture = plot_losses({"|dL/dh_t|": [1.0, 0.1, 0.001]}, title="shrinking", xlabel="time step t",
                              ylabel="|dL/dh_t|", log=True)
    assert scale.call_args.args[1] == "log"
    assert named.call_args.kwargs == {"title": "shrinking", "xlabel": "time step t", "ylabel": "|dL/dh_t|"}
    assert repr(picture) == "<loss curve: |dL/dh_t|: 3 steps, |dL/dh_t| 1 → 0.001>"


def test_plot_decision_boundary_draws_the_plane_and_counts_right_predictions():
    pytest.importorskip("matplotlib")
    points = gv.tensor([[-1.0, 0.0], [-0.5, 1.0], [1.0, 0.0], [0.5, -1.0]])
    labels = gv.tensor([0.0, 0.0, 1.0, 0.0])
    seen = []

    def right_half(grid):  # class 1 wherever x1 > 0
        seen.append(grid.dtype)
        return gv.sigmoid(gv.tensor(grid[:, 0] * 10))

    picture = plot_decision_boundary(right_half, points, labels)
    assert picture.png.startswith(b"\x89PNG")
    assert repr(picture) == "<decision boundary: 4 points, accuracy 75.0%>"  # (0.5, -1) is on the wrong side
    assert set(map(str, seen)) == {"float32"}


def test_side_by_side_marks_each_row_in_text_and_html():
    table = side_by_side(["same", "<b>ours</b>"], ["same", "theirs"], titles=("gradviz", "PyTorch"))
    lines = repr(table).splitlines()
    assert lines[0].split() == ["gradviz", "PyTorch", "same?"]
    assert lines[1].endswith("✓") and lines[2].endswith("≠")
    rendered = table._repr_html_()
    assert rendered.count("<tr>") == 3 and "&lt;b&gt;ours&lt;/b&gt;" in rendered and "<b>" not in rendered


def test_lessons_module_is_top_layer_only():
    """Nothing in gradviz imports gradviz.lessons (it sits on top, like the widget)."""
    import pathlib

    package = pathlib.Path(gv.__file__).parent
    importers = [path.name for path in package.rglob("*.py")
                 if path.name != "lessons.py" and "gradviz.lessons" in path.read_text()]
    assert importers == []
