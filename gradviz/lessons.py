"""What the lesson notebooks share, imported once in each lesson's setup cell:
``from gradviz.lessons import check, walk``.

The lessons used to paste these helpers into every notebook; here they are written once, tested
(tests/test_lessons_helpers.py) and readable by a curious learner. This module sits at the top
layer beside ``gradviz.widget``: it may import anything in gradviz, and nothing in gradviz
imports it. matplotlib (for ``plot_losses``) is imported only when a plot is drawn.
"""
from __future__ import annotations

import html
import io
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

__all__ = ["check", "walk", "plot_losses", "plot_decision_boundary", "side_by_side"]

PROMPT = "✏️  Put your prediction in the cell above (replace None), run it, then run this cell again."


def check(prediction: Any, answer: Any, tol: float = 1e-3) -> None:
    """Self-check for an exercise: compare the learner's prediction with what autograd computed.

    ``prediction`` and ``answer`` may be numbers, (nested) lists or tensors. ``None`` (the
    prediction cell as the lesson ships it) prints how to answer instead of failing. A wrong or
    malformed answer raises an AssertionError that says what autograd computed and where to look.
    """
    actual = _plain(answer)
    if prediction is None:
        print(PROMPT)
        return
    prediction = _plain(prediction)
    try:
        mine = np.ravel(np.asarray(prediction, dtype=float))
        theirs = np.ravel(np.asarray(actual, dtype=float))
    except (TypeError, ValueError):
        raise AssertionError(f"Not quite: {prediction!r} is not a number or a list of numbers. "
                             f"autograd computed {actual}.") from None
    assert mine.shape == theirs.shape and np.allclose(mine, theirs, atol=tol), (
        f"Not quite: you predicted {prediction}, autograd computed {actual}. "
        "Step through the graph above and look at the gradient arriving at each node.")
    print(f"✅ Correct! autograd agrees: {actual}")


def _plain(value: Any) -> Any:
    """A tensor (gradviz or torch) as nested lists; anything else unchanged."""
    return value.tolist() if hasattr(value, "tolist") else value


def walk(tensor: Any) -> None:
    """Print the backward pass from ``tensor`` as text, in the order the engine runs the nodes:
    a line with the step and the node, then what arrived and what was sent on (or the ``.grad``).

    Nothing changes: it is a pure observation, so no hook runs, no ``.grad`` is written and the
    graph is not freed.
    """
    from gradviz.snapshot import observe_steps

    for step in observe_steps(tensor):
        print(f"step {step.index}: {step.name.split('::')[-1]}")
        if step.is_accumulate:
            print(f"    .grad becomes {_short(step.grad_after)}")
        else:
            received = ", ".join(_short(g) for g in step.grad_outputs)
            sent = ", ".join(_short(g) for g in step.grad_inputs)
            print(f"    receives {received}   sends on {sent}")


def _short(array: Any) -> str:
    """A gradient in a few characters: all of a small one, shape and first numbers of a big one."""
    if array is None:
        return "—"
    values = np.asarray(array.cpu() if hasattr(array, "cpu") else array, dtype=float)
    if values.size > 6:
        head = ", ".join(f"{v:.4f}" for v in values.ravel()[:3])
        return f"{'×'.join(map(str, values.shape))} [{head}, …]"
    return np.array2string(values, precision=4, separator=", ", max_line_width=10**6)


class Picture:
    """A PNG a notebook shows as an image, with a one-line text summary for text-only outputs."""

    def __init__(self, png: bytes, summary: str):
        self.png = png
        self.summary = summary

    def _repr_png_(self) -> bytes:
        return self.png

    def __repr__(self) -> str:
        return self.summary


def plot_losses(curves: Mapping[str, Sequence[float]], title: str = "Loss per training step", *,
                xlabel: str = "training step", ylabel: str = "loss", log: bool = False) -> Picture:
    """A loss curve per entry of ``curves`` (``{"label": [loss at step 1, 2, ...]}``) on one plot.
    ``xlabel``/``ylabel`` name the axes when the curve is not a loss per step; ``log`` puts the values on a
    logarithmic axis (a quantity that shrinks by orders of magnitude).

    Returned as a ``Picture``: a cell that ends with it shows the plot. The figure is drawn with
    matplotlib's object API (no pyplot state, no GUI backend) on a white background, which reads
    the same in JupyterLab's light and dark themes.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(7.5, 3.2), dpi=100, layout="constrained")
    axes = figure.add_subplot()
    for label, losses in curves.items():
        axes.plot(range(1, len(losses) + 1), list(losses), marker="o", markersize=3, linewidth=1.6, label=label)
    axes.set(title=title, xlabel=xlabel, ylabel=ylabel)
    if log:
        axes.set_yscale("log")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.grid(alpha=0.3)
    if len(curves) > 1:
        axes.legend()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    summary = "; ".join(f"{label}: {len(losses)} steps, {ylabel} {losses[0]:.4g} → {losses[-1]:.4g}"
                        for label, losses in curves.items() if len(losses))
    return Picture(buffer.getvalue(), f"<loss curve: {summary}>")


def plot_decision_boundary(probability: Callable[[np.ndarray], Any], points: Any, labels: Any,
                           title: str = "What the network predicts", resolution: int = 150) -> Picture:
    """The plane around ``points`` coloured by ``probability`` (a function from an ``(n, 2)``
    float32 array of positions to ``n`` probabilities of class 1, e.g. a network's sigmoid), the
    decision boundary (probability 0.5) as a black line, and the data on top, marked by ``labels``
    (0 or 1). Returned as a ``Picture``, like ``plot_losses``; the summary gives the accuracy."""
    from matplotlib.figure import Figure

    points, labels = np.asarray(_plain(points), dtype=float), np.asarray(_plain(labels), dtype=float).ravel()
    low, high = points.min(axis=0) - 0.5, points.max(axis=0) + 0.5
    xs, ys = np.linspace(low[0], high[0], resolution), np.linspace(low[1], high[1], resolution)
    grid = np.stack(np.meshgrid(xs, ys), axis=-1).reshape(-1, 2).astype(np.float32)
    surface = np.asarray(_plain(probability(grid)), dtype=float).reshape(resolution, resolution)
    figure = Figure(figsize=(5.2, 4.2), dpi=100, layout="constrained")
    axes = figure.add_subplot()
    filled = axes.contourf(xs, ys, surface, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.55)
    axes.contour(xs, ys, surface, levels=[0.5], colors="black", linewidths=1.5)
    for label, marker, color in ((0, "o", "#2166ac"), (1, "s", "#b2182b")):
        chosen = labels == label
        axes.scatter(points[chosen, 0], points[chosen, 1], s=14, marker=marker, color=color,
                     edgecolor="white", linewidth=0.5, label=f"class {label}")
    figure.colorbar(filled, ax=axes, label="predicted probability of class 1")
    axes.set(title=title, xlabel="$x_1$", ylabel="$x_2$")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)  # off the data
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    predicted = np.asarray(_plain(probability(points.astype(np.float32))), dtype=float).ravel() > 0.5
    accuracy = float(np.mean(predicted == (labels > 0.5)))
    return Picture(buffer.getvalue(), f"<decision boundary: {len(labels)} points, accuracy {accuracy:.1%}>")


class SideBySide:
    """Two lists of printed lines compared row by row, with ✓ where a row is the same on both sides.

    A notebook shows an HTML table whose long lines wrap inside their own column, so the mark
    always stays in its column; plain text (``repr``) is one row per line, the mark last.
    """

    def __init__(self, left: Iterable[str], right: Iterable[str], titles: tuple = ("left", "right")):
        self.rows = [(ours, theirs, "✓" if ours == theirs else "≠") for ours, theirs in zip(left, right)]
        self.titles = titles

    def __repr__(self) -> str:
        left = max([len(self.titles[0])] + [len(row[0]) for row in self.rows]) + 2
        right = max([len(self.titles[1])] + [len(row[1]) for row in self.rows]) + 2
        lines = [f"{self.titles[0]:<{left}}{self.titles[1]:<{right}}same?"]
        lines += [f"{ours:<{left}}{theirs:<{right}}{mark}" for ours, theirs, mark in self.rows]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        cell = "padding: 2px 8px; vertical-align: top; text-align: left; white-space: pre-wrap;"
        code = "font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 13px);"
        head = "".join(f'<th style="{cell}">{html.escape(title)}</th>' for title in (*self.titles, "same?"))
        body = "".join(
            f'<tr><td style="{cell}{code}">{html.escape(ours)}</td><td style="{cell}{code}">{html.escape(theirs)}'
            f'</td><td style="{cell}text-align: center;" title="{"same" if mark == "✓" else "different"}">'
            f"{mark}</td></tr>" for ours, theirs, mark in self.rows)
        return (f'<table class="gv-side-by-side" style="table-layout: fixed; width: 100%; border-collapse: collapse;">'
                f'<colgroup><col style="width: 47%"><col style="width: 47%"><col style="width: 6%"></colgroup>'
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def side_by_side(left: Iterable[str], right: Iterable[str], titles: tuple = ("left", "right")) -> SideBySide:
    """Lines printed by two programs (e.g. the same code on gradviz and on PyTorch), row by row."""
    return SideBySide(left, right, titles)
