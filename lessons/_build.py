"""Write the lesson notebooks (lessons/NN_*.ipynb) from the cells below: ``python lessons/_build.py``.

The notebooks are generated so that every lesson shares the same setup, helpers and style, and
so that they are committed without outputs. Edit the lessons here, then run this script.
Cells that the tests read by id carry an explicit ``id``; everything else gets a numbered one.
"""
from __future__ import annotations

import pathlib
import textwrap

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = pathlib.Path(__file__).parent

SETUP = """\
import gradviz as gv

gv.manual_seed(0)  # everyone in the room gets the same "random" numbers
print("gradviz", gv.__version__, "is ready")"""

HELPERS = '''\
# Helpers for this lesson: run this cell once; you don't need to read it.
import numpy as np


def check(prediction, answer, tol=1e-3):
    """Self-check for an exercise: compare your prediction with what autograd computed."""
    actual = answer.tolist() if hasattr(answer, "tolist") else answer
    if hasattr(prediction, "tolist"):  # a tensor you computed yourself
        prediction = prediction.tolist()
    if prediction is None:
        print("✏️  Put your prediction in the cell above (replace None), run it, then run this cell again.")
        return
    mine, theirs = np.ravel(np.asarray(prediction, dtype=float)), np.ravel(np.asarray(actual, dtype=float))
    assert mine.shape == theirs.shape and np.allclose(mine, theirs, atol=tol), (
        f"Not quite: you predicted {prediction}, autograd computed {actual}. "
        "Step through the graph above and look at the gradient arriving at each node.")
    print(f"✅ Correct! autograd agrees: {actual}")


def walk(tensor):
    """Print the backward pass as text, one line per node, in the order the engine runs them.

    Nothing changes: it is a dry run, so no .grad is written and the graph is not freed.
    """
    def show(array):
        if array is None:
            return "—"
        values = np.asarray(array, dtype=float)
        if values.size > 6:  # big tensors: shape and the first few numbers
            head = ", ".join(f"{v:.4f}" for v in values.ravel()[:3])
            return f"{'×'.join(map(str, values.shape))} [{head}, …]"
        return np.array2string(values, precision=4, separator=", ", max_line_width=10**6)

    for step in gv.autograd.backward_steps(tensor, dry_run=True):
        name = step.name.split("::")[-1]
        received = ", ".join(show(g) for g in step.grad_outputs)
        if step.is_accumulate:
            print(f"step {step.index}: {name:<38} .grad becomes {show(step.grad_after)}")
        else:
            sent = ", ".join(show(g) for g in step.grad_inputs)
            print(f"step {step.index}: {name:<38} receives {received}   sends on {sent}")'''


def md(text: str, id: str | None = None):
    return ("md", textwrap.dedent(text).strip("\n"), id)


def code(text: str, id: str | None = None):
    return ("code", textwrap.dedent(text).strip("\n"), id)


def exercise(number: int, question: str, hint: str | None = None):
    """The markdown that opens an exercise; the prediction cell follows it."""
    body = f"### ✏️ Exercise {number}: predict, then check\n\n{question}"
    if hint:
        body += f"\n\n<details><summary>Hint</summary>\n\n{hint}\n\n</details>"
    return md(body)


def prediction_cell(id: str):
    """The cell a student edits; the tests replace ``None`` to check the self-check itself."""
    return code("prediction = None  # ← replace None with your prediction, then run the check below", id=id)


# -------------------------------------------------------------------------------------------------
LESSON_01 = ("01_computational_graph", [
    md("""
    # Lesson 1 · The computational graph of a one-layer network

    Training a network means nudging its parameters in the direction that lowers the loss. To know
    which direction, we need the derivative of the loss with respect to every parameter. PyTorch
    (and gradviz, which behaves the same way) gets those derivatives by **recording every operation
    as a graph** while your code runs, then walking that graph backwards.

    In this lesson you will *see* that graph instead of only printing it.

    **🎯 Learning goals**
    - build a one-layer network and say which tensors are parameters, inputs and outputs;
    - read `grad_fn` and `next_functions`: the names PyTorch gives the nodes of the graph;
    - call `loss.backward()` and find the gradients in `.grad`;
    - step through the backward pass one node at a time in the graph widget.
    """),
    code(SETUP),
    code(HELPERS),
    md("""
    ## 1 · A network with one layer

    Five input features, three outputs: `z = x·w + b`, and a loss that says how far `z` is from the
    target `y`. Only `w` and `b` will be trained, so only they get `requires_grad=True`: that tells
    autograd "I will want the gradient of the loss with respect to these".
    """),
    code("""
    x = gv.ones(5)   # input
    y = gv.zeros(3)  # expected output
    w = gv.randn(5, 3, requires_grad=True)
    b = gv.randn(3, requires_grad=True)
    z = gv.matmul(x, w) + b
    loss = gv.nn.functional.binary_cross_entropy_with_logits(z, y)
    """, id="l01-network"),
    md("""
    `binary_cross_entropy_with_logits` squashes each entry of `z` through a sigmoid and measures how
    far it is from the target (0 here), averaged over the three outputs.

    ## 2 · Every result remembers how it was made

    Each tensor computed from tensors that require grad has a `grad_fn`: the node of the graph that
    knows how to send gradients backwards through the operation that produced it.
    """),
    code("""
    print(f"Gradient function for z = {z.grad_fn}")
    print(f"Gradient function for loss = {loss.grad_fn}")
    """, id="l01-grad-fn"),
    md("""
    `AddBackward0` sends gradients back through the `+ b`; `BinaryCrossEntropyWithLogitsBackward0`
    sends them back through the loss. The names are PyTorch's own: what you learn here is what you will read in PyTorch error messages.

    ## 3 · See the whole graph

    Printing shows one node at a time. The widget draws all of them, from the root `loss` to the
    parameters `w` and `b`, which is the way the **gradients** travel in the backward pass.
    """),
    code("""
    view = gv.show(loss)
    view
    """, id="l01-show"),
    md("""
    How to read it:
    - **leaves** are the tensors you created yourself (`w`, `b`);
    - an **AccumulateGrad** node sits above each leaf that requires grad: it is where the gradient
      is finally stored in `.grad`;
    - `x` and `y` don't require grad, so no gradient is sent to them at all;
    - the **root** is `loss`, the tensor we will call `backward()` on.

    Each node lists the nodes it sends gradients to in `next_functions`; `(None, 0)` marks an input
    that needs no gradient:
    """),
    code("""
    print(loss.grad_fn.next_functions)
    print(z.grad_fn.next_functions)
    """, id="l01-next-functions"),
    code("""
    for name, t in [("x", x), ("w", w), ("b", b), ("z", z), ("loss", loss)]:
        print(f"{name:>4}: is_leaf={t.is_leaf!s:<5}  requires_grad={t.requires_grad!s:<5}  grad_fn={t.grad_fn}")
    """, id="l01-leaves"),
    md("""
    ## 4 · Step the backward pass

    Press **▶ next** in the widget above (or use the → key) to run one node of the backward pass.
    The panel shows the gradient arriving at the node, its local derivative, and what it sends on.
    The same pass as text, in the exact order the engine runs the nodes:
    """),
    code("walk(loss)", id="l01-walk"),
    md("""
    You can also drive the widget from Python; `view.step()` is the same as pressing **next**:
    """),
    code("""
    view.reset()
    view.step()
    print("now at step", view.step_index, "of", len(view.trace), "→", view.current_step()["name"])
    """, id="l01-view-step"),
    exercise(1, """
    `x` is all ones, so `z[j] = w[0, j] + w[1, j] + … + w[4, j] + b[j]`. Every `w[i, j]` enters
    `z[j]` exactly the way `b[j]` does.

    **Predict:** after `loss.backward()`, how will each row of `w.grad` compare with `b.grad`?
    Decide first (say it out loud or write it down), then run section 5 and the self-check below it.
    """, hint="The local derivative of `x·w` with respect to `w[i, j]` is `x[i]`, and `x[i] = 1`."),
    md("""
    ## 5 · Run the backward pass for real

    `loss.backward()` runs every node you just stepped through and stores the results in the
    leaves' `.grad`. Look at the widget above after running this cell: the leaves now show their
    `.grad`.
    """),
    code("""
    loss.backward()
    print(w.grad)
    print(b.grad)
    """, id="l01-backward"),
    code("""
    # Self-check for exercise 1: every row of w.grad should equal b.grad
    rows_match = all(row == b.grad.tolist() for row in w.grad.tolist())
    assert rows_match, "Some row of w.grad differs from b.grad: look again at how x enters z."
    print("✅ Every row of w.grad equals b.grad, because every x[i] is 1.")
    """, id="l01-check-rows"),
    exercise(2, """
    For this loss, the gradient that reaches `z` is `(sigmoid(z) - y) / 3` (the `/ 3` is the mean
    over three outputs), and `z = … + b` passes it to `b` unchanged.

    **Predict** `b.grad` by computing `(gv.sigmoid(z) - y) / 3` yourself in the cell below
    (replace `None`), then run the check.
    """, hint="`prediction = (gv.sigmoid(z) - y) / 3` — but try to say *why* before you type it."),
    prediction_cell("l01-ex2-prediction"),
    code("check(prediction, b.grad)", id="l01-ex2-check"),
    md("""
    ## 6 · Turning gradients on later

    `requires_grad` doesn't have to be decided when a tensor is made. The in-place method
    `requires_grad_()` (note the trailing underscore: it changes the tensor itself) switches it on
    afterwards, for example for a bias you created with plain `zeros`:
    """),
    code("""
    bias = gv.zeros(3)
    print(bias.requires_grad)
    bias.requires_grad_(True)
    print(bias.requires_grad)
    """, id="l01-requires-grad-later"),
    md("""
    ## ✅ What you saw
    - the forward pass builds a graph of `grad_fn` nodes as a side effect of ordinary code;
    - leaves are your tensors; `AccumulateGrad` stores gradients in their `.grad`;
    - `backward()` walks the graph from the root down, applying the chain rule at each node.

    Next: **Lesson 2** works the chain rule out by hand and checks it against autograd.
    """),
])

# -------------------------------------------------------------------------------------------------
LESSON_02 = ("02_chain_rule", [
    md("""
    # Lesson 2 · The chain rule, by hand and by autograd

    Autograd is not magic: each node knows one small derivative, and the engine multiplies them
    together along the graph. That is the **chain rule**. In this lesson you compute gradients by
    hand, then let autograd do it and compare, node by node.

    **🎯 Learning goals**
    - break a formula into the nodes autograd records (`MulBackward0`, `SinBackward0`, …);
    - apply the chain rule by hand to a scalar formula and to a tiny classifier;
    - know why `.grad` of an intermediate (non-leaf) tensor is `None`, and how to keep it;
    - see how a `mean()` spreads the gradient over every element.
    """),
    code(SETUP),
    code(HELPERS),
    md("""
    ## 1 · A formula with a few steps

    Take `y = 2·x·cos²(x)` and `z = sin(y)`, at `x = 4`. Only `x` is a leaf we care about.
    """),
    code("""
    x = gv.tensor(4.0, requires_grad=True)

    y = 2 * x * (gv.cos(x) ** 2)  # a product: the product rule will be needed

    z = gv.sin(y)
    """),
    code("x", id="l02-x"),
    code("y", id="l02-y"),
    code("z", id="l02-z"),
    md("""
    The graph: `x → 2·x·cos(x)² → y → sin → z`. The printed `grad_fn` only names the *last*
    operation of each tensor; the widget shows all of them, including the `PowBackward0` and
    `CosBackward0` hidden inside `y`:
    """),
    code("""
    view = gv.show(z)
    view
    """, id="l02-show-z"),
    exercise(1, """
    By the chain rule, `dz/dx = cos(y) · dy/dx`, and by the product rule
    `dy/dx = 2·cos²(x) − 4·x·cos(x)·sin(x)`.

    **Predict `x.grad`** (a number; use `math` or a calculator), then run the check, which calls
    `z.backward()`. Step through the widget to see each factor arrive.
    """, hint="`import math; y = 2*4*math.cos(4)**2; prediction = math.cos(y) * (2*math.cos(4)**2 - 4*4*math.cos(4)*math.sin(4))`"),
    prediction_cell("l02-ex1-prediction"),
    code("""
    z.backward()
    check(prediction, x.grad)
    """),
    code("x.grad", id="l02-x-grad"),
    md("""
    ### Only leaves keep their `.grad`

    `y` is an intermediate result, not a leaf. To save memory, the engine passes gradients through
    it without storing them, and PyTorch warns you if you ask (the warning appears below the cell):
    """),
    code("print(y.grad)", id="l02-nonleaf-grad"),
    md("""
    If you really want an intermediate gradient, ask for it *before* calling `backward()` with
    `retain_grad()`:
    """),
    code("""
    x = gv.tensor(4.0, requires_grad=True)
    y = 2 * x * (gv.cos(x) ** 2)
    y.retain_grad()
    z = gv.sin(y)
    z.backward()
    print("dz/dy =", y.grad, "   dz/dx =", x.grad)
    """, id="l02-retain-grad"),
    md("""
    ## 2 · A tiny classifier, differentiated by hand

    One input `x = 6.7` with label `y = 0`; a weight `w = 1` and bias `b = 0`. The prediction is
    `sigmoid(w·x + b)` and the loss is the binary cross-entropy, written out by hand. `clamp` keeps
    the prediction away from exactly 0 or 1, where `log` would be infinite.
    """),
    code("""
    # Inputs
    x = gv.tensor(6.7)  # input feature
    y = gv.tensor(0.0)  # true label (binary)

    w = gv.tensor(1.0)  # weight
    b = gv.tensor(0.0)  # bias
    """),
    code("""
    def binary_cross_entropy_loss(prediction, target):
        epsilon = 1e-8  # keeps log() away from log(0)
        prediction = gv.clamp(prediction, epsilon, 1 - epsilon)
        return -(target * gv.log(prediction) + (1 - target) * gv.log(1 - prediction))
    """),
    code("""
    # Forward pass
    z = w * x + b             # weighted sum (the linear part)
    y_pred = gv.sigmoid(z)    # predicted probability

    loss = binary_cross_entropy_loss(y_pred, y)
    loss
    """, id="l02-manual-loss"),
    md("""
    Now the chain rule, one factor per node, from the loss down to `w` and `b`:

    $$\\frac{\\partial L}{\\partial w} = \\frac{\\partial L}{\\partial \\hat y}\\cdot
      \\frac{\\partial \\hat y}{\\partial z}\\cdot\\frac{\\partial z}{\\partial w}$$

    - `dL/dŷ = (ŷ − y) / (ŷ·(1 − ŷ))` (derivative of the cross-entropy)
    - `dŷ/dz = ŷ·(1 − ŷ)` (derivative of the sigmoid)
    - `dz/dw = x` and `dz/db = 1`
    """),
    code("""
    dloss_dy_pred = (y_pred - y) / (y_pred * (1 - y_pred))
    dy_pred_dz = y_pred * (1 - y_pred)
    dz_dw = x
    dz_db = 1

    dL_dw = dloss_dy_pred * dy_pred_dz * dz_dw
    dL_db = dloss_dy_pred * dy_pred_dz * dz_db
    """),
    code("""
    print(f"Manual gradient of loss w.r.t. weight (dw): {dL_dw}")
    print(f"Manual gradient of loss w.r.t. bias (db): {dL_db}")
    """, id="l02-manual-grads"),
    md("""
    Notice that the two middle factors cancel: `dL/dz = ŷ − y`. That's why sigmoid and
    cross-entropy are so often fused into one operation (as in Lesson 1).

    ## 3 · The same classifier, differentiated by autograd

    Same numbers, but now `w` and `b` require grad, so every operation is recorded:
    """),
    code("""
    x = gv.tensor(6.7)
    y = gv.tensor(0.0)

    w = gv.tensor(1.0, requires_grad=True)
    b = gv.tensor(0.0, requires_grad=True)
    """),
    code("""
    # Forward pass
    z = w * x + b
    z
    """, id="l02-auto-z"),
    code("""
    y_pred = gv.sigmoid(z)
    y_pred
    """, id="l02-auto-ypred"),
    code("""
    loss = binary_cross_entropy_loss(y_pred, y)
    loss
    """, id="l02-auto-loss"),
    md("""
    The outermost operation of our hand-written loss is the minus sign, so `loss.grad_fn` is
    `NegBackward0`. The widget shows everything under it: the `clamp`, both `log`s, and the `1 − …`
    (`RsubBackward1`). Step through and watch `ŷ − y ≈ 0.9988` appear when the gradient passes
    `SigmoidBackward0`.
    """),
    code("""
    view = gv.show(loss)
    view
    """, id="l02-show-loss"),
    exercise(2, """
    Using `dL/dz = ŷ − y` from above, **predict `w.grad`** (a number) before running `backward()`.
    """, hint="`dz/dw = x = 6.7`, and `ŷ − y ≈ 0.99877`."),
    prediction_cell("l02-ex2-prediction"),
    code("""
    loss.backward()
    check(prediction, w.grad)
    """),
    code("""
    print(w.grad)
    print(b.grad)
    """, id="l02-auto-grads"),
    md("""
    Autograd agrees with the hand computation: `6.6918` and `0.9988`.

    ## 4 · Many numbers at once

    Gradients work element by element on whole tensors. Here `y` is the mean of the squares of six
    numbers:
    """),
    code("""
    x = gv.tensor([[1.0, 2.0, 3.0], [2.5, 9.8, 5.7]], requires_grad=True)
    x
    """, id="l02-matrix-x"),
    code("""
    y = (x**2).mean()
    y
    """, id="l02-matrix-y"),
    exercise(3, """
    `y = (x₁² + … + x₆²) / 6`, so each `dy/dxᵢ = 2·xᵢ / 6 = xᵢ / 3`.
    **Predict `x.grad`** as a nested list (2 rows of 3), then run the check.
    """, hint="`prediction = [[1/3, 2/3, 3/3], [2.5/3, 9.8/3, 5.7/3]]`"),
    prediction_cell("l02-ex3-prediction"),
    code("""
    y.backward()
    check(prediction, x.grad)
    """),
    code("x.grad", id="l02-matrix-grad"),
    md("""
    ## ✅ What you saw
    - autograd's answer is the chain rule, one local derivative per node;
    - only leaves keep `.grad` (use `retain_grad()` for the others);
    - a `mean` divides the gradient evenly among all elements.

    Next: **Lesson 3**: what happens when you call `backward()` more than once.
    """),
])

# -------------------------------------------------------------------------------------------------
LESSON_03 = ("03_accumulation", [
    md("""
    # Lesson 3 · Gradients add up: accumulation, `zero_()` and `retain_graph`

    `backward()` does not *set* `.grad`: it **adds** to it. That is deliberate (it lets gradients
    from several losses or several mini-batches be summed), but it is also the source of one of
    the most common bugs in PyTorch training loops.

    Keep the widget below on screen: the cells after it call `backward()` again and again, and the
    widget updates by itself to show `.grad` growing.

    **🎯 Learning goals**
    - watch `.grad` accumulate over repeated `backward()` calls and reset it with `zero_()`;
    - know why a second `backward()` needs `retain_graph=True`, and read the error without it;
    - find and fix the forgotten `optimizer.zero_grad()` in a training loop.
    """),
    code(SETUP),
    code(HELPERS),
    md("## 1 · One small graph, kept on screen"),
    code("""
    x = gv.tensor(2.0, requires_grad=True)
    x
    """, id="l03-x"),
    code("""
    y = x ** 2
    y
    """, id="l03-y"),
    code("""
    view = gv.show(y)
    view
    """, id="l03-show"),
    md("""
    `dy/dx = 2x = 4`. Run `backward()` once. We pass `retain_graph=True` so that the graph can be
    used again below (more on that in section 2). Watch the `.grad` of `x` in the widget above.
    """),
    code("""
    y.backward(retain_graph=True)
    x.grad
    """, id="l03-first-backward"),
    exercise(1, """
    Run `backward()` on the *same* `y` a second time. **Predict `x.grad`** after it.
    """, hint="`backward()` adds the new gradient to what is already in `.grad`."),
    prediction_cell("l03-ex1-prediction"),
    code("""
    y.backward(retain_graph=True)
    check(prediction, x.grad)
    x.grad
    """, id="l03-second-backward"),
    md("""
    And a third time. Step through the widget: at the `AccumulateGrad` node the panel shows
    `.grad` *before* and *after*, so you can see the addition happen.
    """),
    code("""
    y.backward(retain_graph=True)
    x.grad
    """, id="l03-third-backward"),
    md("""
    The widget is just data synced with your browser, so we can also ask it what it is showing
    for the leaf `x` right now:
    """),
    code("""
    [node["grad"]["preview"] for node in view.graph["nodes"] if node["kind"] == "leaf"]
    """, id="l03-widget-grad"),
    md("""
    To start again from zero, clear the gradient **in place** with `zero_()` (trailing underscore
    = changes the tensor itself). The widget follows:
    """),
    code("x.grad.zero_()", id="l03-zero"),
    code("""
    [node["grad"]["preview"] for node in view.graph["nodes"] if node["kind"] == "leaf"]
    """, id="l03-widget-zero"),
    md("""
    The same thing in its shortest form: a fresh `x`, one `backward()`, then `zero_()`:
    """),
    code("""
    # clearing grad
    x = gv.tensor(2.0, requires_grad=True)
    y = x ** 2
    y.backward()
    print(x.grad)
    print(x.grad.zero_())
    """, id="l03-clear-grad"),
    md("""
    ## 2 · Why `retain_graph=True`?

    To compute a gradient, a node needs values from the forward pass (`PowBackward0` needs `x`
    to compute `2·x`). These **saved tensors** can be large, so `backward()` frees them as soon as it
    is done, unless you pass `retain_graph=True`. A second `backward()` through a freed graph fails:
    """),
    code("""
    x = gv.tensor(3.0, requires_grad=True)
    y = x ** 2
    y.backward()  # no retain_graph: the saved tensors are freed here
    print("first backward: x.grad =", x.grad)
    try:
        y.backward()
    except RuntimeError as error:
        print("second backward failed:", error)
    """, id="l03-retain-error"),
    md("""
    Drawn after that first `backward()` with `show_saved=True`, the widget marks the saved tensors
    as freed: the graph is still there, but it can't be run again.
    """),
    code("gv.show(y, show_saved=True)", id="l03-show-freed"),
    md("""
    In practice you rarely need `retain_graph=True`: each training step runs a **new** forward
    pass, which builds a new graph (Lesson 5).

    ## 3 · The forgotten `zero_grad()`

    A training loop fits `w` and `b` so that `w·x + b` matches `2·x + 1`. The optimizer's `step()`
    moves each parameter against its `.grad`; `zero_grad()` clears the gradients first.
    """),
    code("""
    def train(clear_gradients, steps=20):
        inputs = gv.linspace(-1, 1, 8)
        targets = 2 * inputs + 1
        w = gv.zeros(1, requires_grad=True)
        b = gv.zeros(1, requires_grad=True)
        optimizer = gv.optim.SGD([w, b], lr=0.2)
        losses = []
        for step in range(steps):
            if clear_gradients:
                optimizer.zero_grad()
            loss = ((w * inputs + b - targets) ** 2).mean()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses, w, b
    """),
    code("""
    losses, w, b = train(clear_gradients=True)
    print("loss per step:", " ".join(f"{value:.3f}" for value in losses))
    print(f"final loss with zero_grad(): {losses[-1]:.4f}   w = {w.item():.3f}, b = {b.item():.3f}")
    """, id="l03-train-good"),
    exercise(2, """
    Now the same loop **without** `optimizer.zero_grad()`. Will the loss still go down steadily?
    Think about what `.grad` holds at step 10. (No number to type: run the next cell and compare.)
    """),
    code("""
    losses_bug, w_bug, b_bug = train(clear_gradients=False)
    print("loss per step:", " ".join(f"{value:.3f}" for value in losses_bug))
    print(f"final loss without zero_grad(): {losses_bug[-1]:.4f}   w = {w_bug.item():.3f}, b = {b_bug.item():.3f}")
    """, id="l03-train-bug"),
    md("""
    Without `zero_grad()`, `.grad` at step *k* is the **sum** of all gradients so far, so every
    update also repeats the old ones: the parameters overshoot and the loss bounces instead of
    settling. The fix is one line at the top of every step:

    ```python
    optimizer.zero_grad()   # clear last step's gradients
    loss = ...              # new forward pass: a new graph
    loss.backward()         # gradients of THIS step only
    optimizer.step()
    ```
    """),
    code("""
    assert losses[-1] < 0.01 < losses_bug[-1], "Expected the loop with zero_grad() to fit much better."
    print("✅ With zero_grad() the loss ends near 0; without it, it keeps bouncing.")
    """, id="l03-train-check"),
    md("""
    ## ✅ What you saw
    - `backward()` **adds** into `.grad`; `x.grad.zero_()` / `optimizer.zero_grad()` reset it;
    - the graph's saved tensors are freed by `backward()` unless `retain_graph=True`;
    - forgetting `zero_grad()` silently sums gradients across steps.

    Next: **Lesson 4**: turning gradient tracking off.
    """),
])

# -------------------------------------------------------------------------------------------------
LESSON_04 = ("04_no_grad", [
    md("""
    # Lesson 4 · Turning tracking off: `requires_grad_(False)`, `detach()`, `no_grad()`

    Recording the graph costs time and memory. When you only want predictions from a trained
    model, or want some parameters to stay fixed while others train, you switch tracking off.

    **🎯 Learning goals**
    - stop tracking in three ways and tell them apart;
    - recognise the error "element 0 of tensors does not require grad and does not have a grad_fn";
    - freeze part of a network for fine-tuning and see which parameters still get `.grad`;
    - know that only floating-point tensors can require gradients.
    """),
    code(SETUP),
    code(HELPERS),
    md("""
    ## 1 · The one-layer network again

    With tracking on, `z` requires grad. `detach()` gives a tensor with the same values but cut
    off from the graph; inside `with gv.no_grad():` nothing is recorded at all.
    """),
    code("""
    x = gv.ones(5)
    w = gv.randn(5, 3, requires_grad=True)
    b = gv.randn(3, requires_grad=True)

    z = gv.matmul(x, w) + b
    print(z.requires_grad)

    z_det = z.detach()
    print(z_det.requires_grad)

    with gv.no_grad():
        z = gv.matmul(x, w) + b
    print(z.requires_grad)
    """, id="l04-three-flags"),
    md("""
    A tensor with no graph has nothing to draw: the widget says so instead of failing.
    """),
    code("gv.show(z_det)", id="l04-show-detached"),
    md("""
    ## 2 · Three ways, one error

    We start from a tracked computation each time and then cut it in a different place.

    ### Way 1: `requires_grad_(False)` on the leaf
    """),
    code("""
    x = gv.tensor(2.0, requires_grad=True)
    y = x ** 2
    y.backward()
    x.grad
    """, id="l04-way1-grad"),
    code("""
    x.requires_grad_(False)  # in place: x itself stops requiring grad
    """, id="l04-way1-off"),
    code("""
    y = x ** 2
    y
    """, id="l04-way1-y"),
    code("""
    try:
        y.backward()
    except RuntimeError as error:
        print(error)
    """, id="l04-way1-error"),
    md("""
    The message says: the tensor you called `backward()` on (element 0 of the list of outputs)
    was not produced by any recorded operation, so there is no graph to walk.

    ### Way 2: `detach()` a copy
    """),
    code("""
    x = gv.tensor(2.0, requires_grad=True)
    y = x ** 2
    y.backward()
    x.grad
    """),
    code("""
    z = x.detach()  # same value, no history; x itself still requires grad
    z
    """, id="l04-way2-detach"),
    code("""
    y = z ** 2
    print(y)
    try:
        y.backward()
    except RuntimeError as error:
        print(error)
    """, id="l04-way2-error"),
    md("""
    ### Way 3: `with gv.no_grad():`, the usual choice at prediction time

    After training, predictions don't need a graph. Inside the block, every result has
    `requires_grad=False`, and `backward()` fails the same way:
    """),
    code("""
    # A "trained" parameter
    x = gv.tensor(2.4, requires_grad=True)
    y = x ** 2
    y.backward()
    print(x.grad)

    # Prediction time
    with gv.no_grad():
        y = x + 10  # inside this block nothing is recorded
        try:
            y.backward()
        except RuntimeError as error:
            print(error)
    """, id="l04-way3-no-grad"),
    exercise(1, """
    After the block above, `x` is unchanged and still requires grad. Outside `no_grad`, we compute
    `y = x ** 2` again and call `backward()`. **Predict `x.grad`** afterwards.
    """, hint="`.grad` already holds `4.8` from before, and `backward()` adds."),
    prediction_cell("l04-ex1-prediction"),
    code("""
    y = x ** 2
    y.backward()
    check(prediction, x.grad)
    """),
    md("""
    ## 3 · Only floating-point tensors can require gradients

    Gradients are about small changes, and integers can't change a little. Asking for gradients
    on an integer tensor is an error. Write `1.0` instead of `1`:
    """),
    code("""
    try:
        counts = gv.tensor([1, 2], requires_grad=True)  # integers
    except RuntimeError as error:
        print(error)

    values = gv.tensor([1.0, 2.0], requires_grad=True)  # floats: fine
    print(values)
    """, id="l04-dtype-error"),
    md("""
    ## 4 · Frozen parameters: fine-tuning

    A common recipe: take a network that was already trained (the *backbone*), freeze it, and
    train only a new last layer (the *head*). Freezing is just `requires_grad_(False)` on the
    backbone's parameters.
    """),
    code("""
    backbone = gv.nn.Linear(4, 8)  # pretend this one is pretrained
    head = gv.nn.Linear(8, 1)      # the new layer we want to train

    for parameter in backbone.parameters():
        parameter.requires_grad_(False)

    inputs = gv.randn(16, 4)
    targets = gv.randn(16, 1)
    loss = ((head(gv.relu(backbone(inputs))) - targets) ** 2).mean()
    """, id="l04-freeze"),
    md("""
    In the graph, the frozen backbone has **no `AccumulateGrad` nodes**: no gradient is computed
    for it, which is exactly where fine-tuning saves time.
    """),
    code("""
    view = gv.show(loss)
    view
    """, id="l04-show-frozen"),
    exercise(2, """
    Which of `backbone.weight`, `backbone.bias`, `head.weight`, `head.bias` will have a `.grad`
    after `loss.backward()`? **Predict** by writing a list of four `True`/`False` values.
    """, hint="Only parameters that require grad get an `AccumulateGrad` node."),
    prediction_cell("l04-ex2-prediction"),
    code("""
    loss.backward()
    has_grad = [p.grad is not None for p in (backbone.weight, backbone.bias, head.weight, head.bias)]
    print("has .grad:", has_grad)
    check(prediction, has_grad)
    """, id="l04-frozen-grads"),
    md("""
    ## ✅ What you saw
    | way | what it does | typical use |
    | --- | --- | --- |
    | `t.requires_grad_(False)` | the tensor itself stops requiring grad | freezing parameters |
    | `t.detach()` | a new tensor, same data, no history | using a value without differentiating through it |
    | `with no_grad():` | nothing inside the block is recorded | predictions, parameter updates |

    Next: **Lesson 5**: the graph is rebuilt on every forward pass, so Python control flow just works.
    """),
])

# -------------------------------------------------------------------------------------------------
LESSON_05 = ("05_dynamic_graphs", [
    md("""
    # Lesson 5 · Dynamic graphs and control flow

    Autograd keeps a **directed acyclic graph** (DAG): the leaves are the tensors you made, the
    root is the output, and every node is a recorded operation. In the forward pass, each
    operation computes its result *and* adds its node to the graph. In the backward pass, the
    engine starts at the root, computes gradients node by node, accumulates them into the leaves'
    `.grad`, and follows the chain rule all the way down.

    The key word is *dynamic*: the graph is built while your Python code runs, from scratch, on
    every forward pass. So `if`, `for` and `while` can change it every time.

    **🎯 Learning goals**
    - see that each forward pass builds a new graph, and `backward()` consumes it;
    - see `if` and `while` produce different graphs for different inputs;
    - see how a tensor used twice gets its gradients summed.
    """),
    code(SETUP),
    code(HELPERS),
    md("""
    ## 1 · A new graph on every forward pass
    """),
    code("""
    w = gv.tensor(1.5, requires_grad=True)

    first = (w * 3) ** 2
    first.backward()          # consumes the first graph
    second = (w * 3) ** 2     # the same code builds a brand-new graph

    print("same grad_fn object?", first.grad_fn is second.grad_fn)
    second.backward()         # works without retain_graph: it is a different graph
    print("w.grad after two forward + backward passes:", w.grad)
    """, id="l05-new-graph"),
    md("""
    ## 2 · `if`: the branch taken is the branch recorded
    """),
    code("""
    def activation(t):
        if t.item() > 0:
            return t * t      # recorded as MulBackward0
        else:
            return -t         # recorded as NegBackward0

    positive = gv.tensor(3.0, requires_grad=True)
    negative = gv.tensor(-3.0, requires_grad=True)
    print("positive input →", activation(positive).grad_fn)
    print("negative input →", activation(negative).grad_fn)
    """, id="l05-if"),
    md("""
    ## 3 · `while`: the input decides how long the graph is
    """),
    code("""
    def double_until_big(t):
        result = t * 2
        while result.abs().sum().item() < 100:
            result = result * 2
        return result

    def count_nodes(grad_fn):
        # Walk next_functions from the root, the way the engine does, counting nodes.
        seen, stack = set(), [grad_fn]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend(next_node for next_node, _ in node.next_functions)
        return len(seen)

    small = gv.tensor([1.0, 3.0], requires_grad=True)
    large = gv.tensor([10.0, 30.0], requires_grad=True)
    out_small = double_until_big(small).sum()
    out_large = double_until_big(large).sum()
    print("nodes for small input:", count_nodes(out_small.grad_fn))
    print("nodes for large input:", count_nodes(out_large.grad_fn))
    """, id="l05-while"),
    code("""
    view = gv.show(out_small)
    view
    """, id="l05-show-loop"),
    exercise(1, """
    The small input went through the loop several times: `out = 2·2·…·2·small` summed.
    **Predict `small.grad`** (a list of two numbers). Count the `MulBackward0` nodes in the widget.
    """, hint="There are five doublings in total for `[1, 3]`: `4 → 8 → … → 128`."),
    prediction_cell("l05-ex1-prediction"),
    code("""
    out_small.backward()
    check(prediction, small.grad)
    """),
    code("""
    out_large.backward()
    print("small.grad =", small.grad, "   large.grad =", large.grad)
    """, id="l05-loop-grads"),
    md("""
    ## 4 · A tensor used twice

    In `y = x * x`, `MulBackward0` has **two** edges to the same leaf. The gradient arrives along
    both and the two contributions are added: the product rule, done by the graph. Step to the
    `AccumulateGrad` node in the widget and the panel lists both contributions.
    """),
    code("""
    x = gv.tensor(3.0, requires_grad=True)
    y = x * x
    print(y.grad_fn.next_functions)
    view = gv.show(y)
    view
    """, id="l05-used-twice"),
    exercise(2, """
    Each edge brings `x = 3` (the *other* factor). **Predict `x.grad`**.
    """),
    prediction_cell("l05-ex2-prediction"),
    code("""
    walk(y)
    y.backward()
    check(prediction, x.grad)
    """, id="l05-used-twice-check"),
    md("""
    ## ✅ What you saw
    - the graph is built as the code runs and freed by `backward()`; the next forward builds a new one;
    - `if` and loops simply record whatever actually ran;
    - gradients along several paths to the same tensor are summed.

    Next: **Lesson 6**: the same code on a GPU.
    """),
])

# -------------------------------------------------------------------------------------------------
LESSON_06 = ("06_devices", [
    md("""
    # Lesson 6 · Devices: the same graph on CPU or GPU

    Tensors live on a **device**: the CPU, or a GPU (`"cuda"`). Autograd doesn't care where: the
    graph, the `grad_fn` names and the gradients are the same; only the place the numbers are
    computed changes. The usual pattern picks the GPU when there is one, and falls back to the
    CPU otherwise (a Binder classroom has no GPU, so you will most likely see `cpu` here).

    gradviz computes with numpy on the CPU, and hands tensors on a GPU to PyTorch, so using
    `"cuda"` needs PyTorch and a GPU.

    **🎯 Learning goals**
    - choose a device with `gv.cuda.is_available()` and create tensors on it;
    - see that the graph and the gradients don't depend on the device;
    - move tensors between devices with `.to(device)` and `.cpu()`.
    """),
    code(SETUP),
    code(HELPERS),
    code("""
    device = "cuda" if gv.cuda.is_available() else "cpu"
    print("using", device)
    """, id="l06-device"),
    code("""
    x = gv.tensor(3.0, requires_grad=True, device=device)  # we want gradients with respect to x
    x  # a scalar
    """, id="l06-x"),
    code("""
    y = x**2
    y
    """, id="l06-y"),
    code("""
    view = gv.show(y)
    view
    """, id="l06-show"),
    exercise(1, "`y = x²` at `x = 3`. **Predict `x.grad`** after `y.backward()`."),
    prediction_cell("l06-ex1-prediction"),
    code("""
    y.backward(retain_graph=True)  # keep the graph: we use it again below
    check(prediction, x.grad)
    """),
    code("""
    x.grad  # on the same device as x
    """, id="l06-x-grad"),
    md("""
    Because we kept the graph, we can call `backward()` again, and (Lesson 3) the new gradient is
    **added** to the old one:
    """),
    code("""
    y.backward()
    x.grad
    """, id="l06-x-grad-again"),
    md("""
    ## Moving tensors

    All tensors in one operation must be on the same device. `.to(device)` returns a copy on the
    device you name; `.cpu()` brings a result back, for example to print or plot it.
    """),
    code("""
    inputs = gv.tensor([1.0, 2.0, 3.0]).to(device)
    w = gv.tensor(0.5, requires_grad=True, device=device)
    loss = ((w * inputs) ** 2).sum()
    loss.backward()
    print("w.grad on", w.grad.device, "→", w.grad.cpu())
    """, id="l06-move"),
    md("""
    ## ✅ What you saw
    - `device = "cuda" if gv.cuda.is_available() else "cpu"` picks a device once, at the top;
    - `requires_grad`, `grad_fn` and `.grad` work the same on every device;
    - `.to(device)` and `.cpu()` move tensors.

    Next: **Lesson 7**: the very same code in real PyTorch.
    """),
])

# -------------------------------------------------------------------------------------------------
SEED_PROGRAM = '''\
SEED_PROGRAM = """
x = torch.ones(5)  # input tensor
y = torch.zeros(3)  # expected output
w = torch.randn(5, 3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
z = torch.matmul(x, w)+b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)

print(f"Gradient function for z = {z.grad_fn}")
print(f"Gradient function for loss = {loss.grad_fn}")

loss.backward()
print(w.grad)
print(b.grad)

z = torch.matmul(x, w)+b
print(z.requires_grad)

with torch.no_grad():
    z = torch.matmul(x, w)+b
print(z.requires_grad)

z = torch.matmul(x, w)+b
z_det = z.detach()
print(z_det.requires_grad)
"""'''

LESSON_07 = ("07_real_pytorch", [
    md("""
    # Lesson 7 · The same code in real PyTorch

    gradviz is built to behave like PyTorch: the same function names, the same `grad_fn` names,
    the same printed tensors, the same errors. So a PyTorch tutorial runs unchanged if you write
    `import gradviz as torch` at the top. In this lesson we take a typical tutorial program, run it
    on gradviz, then (if PyTorch is installed) run the very same lines on PyTorch and compare.

    **🎯 Learning goals**
    - run PyTorch tutorial code on gradviz with a one-line change;
    - compare gradviz's outputs and graph with PyTorch's, line by line and node by node;
    - show and step a *real* PyTorch graph in the widget.

    PyTorch is optional: without it, the comparison part of this lesson is skipped.
    """),
    md("## 1 · A PyTorch tutorial, run on gradviz"),
    code("""
    import gradviz as torch
    """, id="l07-import"),
    code("""
    # example: a simple one-layer network
    x = torch.ones(5)  # input tensor
    y = torch.zeros(3)  # expected output
    w = torch.randn(5, 3, requires_grad=True)  # we need the gradient of the loss, so requires_grad
    b = torch.randn(3, requires_grad=True)
    z = torch.matmul(x, w)+b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    """, id="l07-seed-network"),
    code("""
    print(f"Gradient function for z = {z.grad_fn}")
    print(f"Gradient function for loss = {loss.grad_fn}")
    """, id="l07-seed-grad-fn"),
    code("""
    # this computes the derivatives of the loss function
    loss.backward()
    print(w.grad)
    print(b.grad)
    """, id="l07-seed-backward"),
    code("""
    # stop tracking with a no_grad() block
    z = torch.matmul(x, w)+b
    print(z.requires_grad)

    with torch.no_grad():
        z = torch.matmul(x, w)+b
    print(z.requires_grad)
    """, id="l07-seed-no-grad"),
    code("""
    # detach() also works
    z = torch.matmul(x, w)+b
    z_det = z.detach()
    print(z_det.requires_grad)
    """, id="l07-seed-detach"),
    md("""
    Nothing in those cells mentions gradviz except the import. 

    ## 2 · Is PyTorch here?
    """),
    code("""
    import gradviz as gv

    try:
        import importlib
        real_torch = importlib.import_module("torch")
        print("PyTorch", real_torch.__version__, "is installed: we can compare.")
    except ImportError:
        real_torch = None
        print("PyTorch is not installed here, so the comparison below is skipped.")
        print("To try it: pip install torch==2.13.0 (the CPU build is enough), then restart the kernel.")
    """, id="l07-torch-available"),
    md("""
    ## 3 · The same program, line by line

    Here is the tutorial again as one piece of text. We run that text twice, once with `torch`
    meaning gradviz and once meaning PyTorch, and put the printed lines side by side. Memory
    addresses (`object at 0x…`) always differ, so we hide them.
    """),
    code(SEED_PROGRAM),
    code("""
    import contextlib
    import io
    import re


    def run_program(library, seed=0):
        \"\"\"Run SEED_PROGRAM with `torch` bound to `library`; return its printed lines.\"\"\"
        library.manual_seed(seed)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(SEED_PROGRAM, {"torch": library})
        return [re.sub(r" at 0x[0-9a-fA-F]+", " at 0x…", line) for line in printed.getvalue().splitlines()]


    gradviz_lines = run_program(gv)
    if real_torch is None:
        print("\\n".join(gradviz_lines))
    else:
        torch_lines = run_program(real_torch)
        left, right = max(map(len, gradviz_lines)) + 2, max(map(len, torch_lines)) + 2
        print(f"{'gradviz':<{left}}{'PyTorch':<{right}}same?")
        for ours, theirs in zip(gradviz_lines, torch_lines):
            print(f"{ours:<{left}}{theirs:<{right}}{'✓' if ours == theirs else '≠'}")
    """, id="l07-side-by-side"),
    md("""
    The `grad_fn` lines and the `True`/`False` lines are identical. The numbers differ (`≠`) for
    one reason only: `randn` draws different random numbers in the two libraries. To compare the
    numbers too, we give both libraries the *same* starting `w` and `b`.

    ## 4 · Same numbers, same graph, same order

    `gv.compare` takes the gradviz result and the PyTorch result of the same computation and checks
    three things: the graphs have the same nodes with the same names, every value and gradient
    agrees, and the backward pass visits the nodes in the same order.
    """),
    code("""
    if real_torch is None:
        print("Skipped: PyTorch is not installed.")
    else:
        F_gv, F_torch = gv.nn.functional, real_torch.nn.functional
        w_start = gv.randn(5, 3).tolist()
        b_start = gv.randn(3).tolist()

        w_gv = gv.tensor(w_start, requires_grad=True)
        b_gv = gv.tensor(b_start, requires_grad=True)
        loss_gv = F_gv.binary_cross_entropy_with_logits(gv.matmul(gv.ones(5), w_gv) + b_gv, gv.zeros(3))

        w_torch = real_torch.tensor(w_start, requires_grad=True)
        b_torch = real_torch.tensor(b_start, requires_grad=True)
        loss_torch = F_torch.binary_cross_entropy_with_logits(
            real_torch.matmul(real_torch.ones(5), w_torch) + b_torch, real_torch.zeros(3))

        comparison = gv.compare(loss_gv, loss_torch, names={"w": w_torch, "b": b_torch})
        print(comparison.report())
    """, id="l07-compare"),
    md("""
    In a notebook the comparison also shows itself: the gradviz graph on the left, PyTorch's on the
    right, each with its own step buttons, and the report under them. Step both and watch the same
    node light up on each side.
    """),
    code("""
    if real_torch is None:
        print("Skipped: PyTorch is not installed.")
    else:
        display(comparison)
    """, id="l07-compare-view"),
    md("""
    ## 5 · A real PyTorch graph in the widget

    The widget draws PyTorch's own graph just as well: these nodes are PyTorch's `grad_fn` objects,
    and stepping shows the gradients PyTorch computes.
    """),
    code("""
    if real_torch is None:
        print("Skipped: PyTorch is not installed.")
    else:
        view = gv.show(loss_torch, names={"w": w_torch, "b": b_torch})
        display(view)
    """, id="l07-show-torch"),
    code("""
    if real_torch is not None:
        loss_gv.backward()
        loss_torch.backward()
        same = all(abs(a - c) < 1e-5 for a, c in zip(b_gv.grad.tolist(), b_torch.grad.tolist()))
        assert same, "gradviz and PyTorch computed different gradients for b."
        print("b.grad (gradviz):", b_gv.grad)
        print("b.grad (PyTorch):", b_torch.grad)
        print("✅ The same gradients, to float32 precision.")
    """, id="l07-same-grads"),
    md("""
    ## ✅ What you saw
    - `import gradviz as torch` runs a PyTorch tutorial unchanged;
    - the printed `grad_fn`s and flags match PyTorch's exactly, and with the same inputs so do the
      values, gradients and backward order;
    - the widget shows real PyTorch graphs too.

    That's the end of the lessons. Try the widget on your own code: `gv.show(loss)` works on any
    gradviz or PyTorch tensor that has a `grad_fn`.
    """),
])

LESSONS = [LESSON_01, LESSON_02, LESSON_03, LESSON_04, LESSON_05, LESSON_06, LESSON_07]


def build_notebook(stem: str, cells: list) -> nbformat.NotebookNode:
    prefix = stem.split("_")[0]
    notebook = new_notebook()
    notebook.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
        "language_info": {"name": "python"},
    }
    seen = set()
    for index, (kind, source, cell_id) in enumerate(cells):
        cell = new_markdown_cell(source) if kind == "md" else new_code_cell(source)
        cell.id = cell_id or f"l{prefix}-{index:02d}"
        if cell.id in seen:
            raise ValueError(f"duplicate cell id {cell.id} in {stem}")
        seen.add(cell.id)
        notebook.cells.append(cell)
    nbformat.validate(notebook)
    return notebook


def main() -> None:
    for stem, cells in LESSONS:
        path = HERE / f"{stem}.ipynb"
        nbformat.write(build_notebook(stem, cells), path)
        print("wrote", path.relative_to(HERE.parent))


if __name__ == "__main__":
    main()
