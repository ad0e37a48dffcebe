"""Every lesson runs headless, top to bottom, and reproduces the seed tutorials' results.

Each notebook is copied to a temporary folder and executed with nbclient (python3 kernel, 60 s
per cell), with this checkout first on the kernel's PYTHONPATH. The assertions read the
*executed outputs* (stdout, stderr, results, errors) of cells found by their id, never the
notebook's source. A second run fills in every exercise's prediction to prove that the
self-check cells accept right answers, and one wrong answer to prove they reject it.
"""
from __future__ import annotations

import ast
import json
import os
import pathlib
import re
import time

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = pathlib.Path(__file__).resolve().parents[1]
LESSONS = ROOT / "lessons"
STEMS = ["01_computational_graph", "02_chain_rule", "03_accumulation", "04_no_grad",
         "05_dynamic_graphs", "06_devices", "07_real_pytorch", "08_hooks_and_saved_tensors",
         "09_training_a_network", "10_custom_functions", "11_higher_order", "12_forward_mode",
         "13_mini_batches", "14_backprop_through_time", "15_convolutions", "16_attention"]
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
NO_GRAD_FN = "element 0 of tensors does not require grad and does not have a grad_fn"
CELL_TIMEOUT = 60

# The right answer for every exercise's prediction cell (used only by the self-check test).
ANSWERS = {
    "l01-ex2-prediction": "(gv.sigmoid(z) - y) / 3",
    "l02-ex1-prediction": "6.7924",
    "l02-ex2-prediction": "6.6918",
    "l02-ex3-prediction": "[[1/3, 2/3, 1.0], [2.5/3, 9.8/3, 5.7/3]]",
    "l03-ex1-prediction": "8.0",
    "l04-ex1-prediction": "4.8 + 4.8",
    "l04-ex2-prediction": "[False, False, True, True]",
    "l05-ex1-prediction": "[32.0, 32.0]",
    "l05-ex2-prediction": "6.0",
    "l06-ex1-prediction": "6.0",
    "l08-ex1-prediction": "2 * 12 * -0.1455",
    "l08-ex2-prediction": "40.0",
    "l09-ex1-prediction": "(gv.sigmoid(logits) - t).mean()",
    "l10-ex1-prediction": "1.5 * (5 * 2 ** 2 - 1)",
    "l10-ex2-prediction": "[0.75, 12.0]",
    "l11-ex1-prediction": "-0.8415",
    "l11-ex2-prediction": "[4.0, 2.0]",
    "l12-ex1-prediction": "[5.0, 7.0]",
    "l12-ex2-prediction": "[-1.0, 1.0]",
    "l12-ex3-prediction": "3",
    "l13-ex1-prediction": "7",
    "l13-ex2-prediction": "(2 * (prediction_b - yb)).mean()",
    "l15-ex1-prediction": "[2.0, 4.0, 3.0]",
    "l15-ex2-prediction": "[0.0, 1.0, 1.0, 0.0]",
    "l16-ex1-prediction": "weights.sum(0).unsqueeze(1).repeat(1, 2)",
    "l16-ex2-prediction": "[0.0, 0.0]",
}
PREDICTION_LINE = re.compile(r"^prediction = None\b.*$", re.MULTILINE)


def execute(stem: str, tmp_path: pathlib.Path, edit=None, extra_path: str | None = None):
    """Run a temp copy of a lesson; returns (notebook with outputs, seconds)."""
    notebook = nbformat.read(LESSONS / f"{stem}.ipynb", as_version=4)
    if edit is not None:
        edit(notebook)
    workdir = tmp_path / stem
    workdir.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, workdir / f"{stem}.ipynb")
    env = dict(os.environ)
    paths = [p for p in (extra_path, str(ROOT), env.get("PYTHONPATH")) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    client = nbclient.NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     allow_errors=True, resources={"metadata": {"path": str(workdir)}})
    started = time.perf_counter()
    client.execute(env=env)
    return notebook, time.perf_counter() - started


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("lessons")


_RUNS: dict = {}


@pytest.fixture(scope="session")
def executed(run_dir):
    """Execute each lesson once per session, on first use."""
    def get(stem: str):
        if stem not in _RUNS:
            _RUNS[stem] = execute(stem, run_dir)
        return _RUNS[stem][0]
    return get


def cell(notebook, cell_id: str):
    for candidate in notebook.cells:
        if candidate.get("id") == cell_id:
            return candidate
    raise AssertionError(f"no cell with id {cell_id!r} (see docs/LESSONS.md on cell ids)")


def text(notebook, cell_id: str) -> str:
    """Everything a reader sees from a cell except stderr: stdout, results and errors."""
    parts = []
    for output in cell(notebook, cell_id).outputs:
        if output.output_type == "stream" and output.name == "stdout":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            parts.append(output.get("data", {}).get("text/plain", "") + "\n")
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}\n")
    return "".join(parts)


def stderr(notebook, cell_id: str) -> str:
    return "".join(o.text for o in cell(notebook, cell_id).outputs
                   if o.output_type == "stream" and o.name == "stderr")


def has_widget(notebook, cell_id: str) -> bool:
    return any(WIDGET_MIME in o.get("data", {}) for o in cell(notebook, cell_id).outputs)


def shipped_state(notebook, cell_id: str) -> dict:
    """The view state a widget output carries in its text/html fallback (what nbconvert shows)."""
    for output in cell(notebook, cell_id).outputs:
        page = output.get("data", {}).get("text/html", "")
        found = re.search(r'<script type="application/json" id="gradviz-[0-9a-f]+-state">(.*?)</script>', page)
        if found:
            return json.loads(found.group(1))
    raise AssertionError(f"{cell_id}: no widget output with a text/html fallback")


def has_image(notebook, cell_id: str) -> bool:
    return any("image/png" in o.get("data", {}) for o in cell(notebook, cell_id).outputs)


def errors(notebook) -> list:
    found = []
    for candidate in notebook.cells:
        for output in candidate.get("outputs", []):
            if output.output_type == "error":
                found.append(f"[{candidate.id}] {output.ename}: {output.evalue}")
    return found


def numbers(tensor_text: str) -> list:
    return [float(v) for v in re.findall(r"-?\d+\.\d*(?:e[-+]?\d+)?", tensor_text)]


# -- predict, then reveal, in the exercises ----------------------------------------------------------
PREDICT_VIEWS = {"01_computational_graph": ["l01-ex1-predict-view"],
                 "02_chain_rule": ["l02-show-z", "l02-show-loss"],
                 "03_accumulation": ["l03-ex1-predict-view"],
                 "05_dynamic_graphs": ["l05-used-twice"],
                 "08_hooks_and_saved_tensors": ["l08-ex1-view"],
                 "10_custom_functions": ["l10-ex1-view"],
                 "11_higher_order": ["l11-ex1-view"],
                 "12_forward_mode": ["l12-ex2-view"],
                 "13_mini_batches": ["l13-step"],
                 "15_convolutions": ["l15-view"],
                 "16_attention": ["l16-view"]}


@pytest.mark.parametrize("stem", sorted(PREDICT_VIEWS))
def test_exercise_graphs_ask_before_they_reveal(stem, executed):
    notebook = executed(stem)
    for cell_id in PREDICT_VIEWS[stem]:
        state = shipped_state(notebook, cell_id)
        assert has_widget(notebook, cell_id) and state["predict"] is True and state["trace"], cell_id
    if stem == "03_accumulation":  # the last step asks for x.grad after a second pass: 4 + 4
        last = shipped_state(notebook, "l03-ex1-predict-view")["trace"][-1]
        assert (last["grad_before"]["preview"], last["grad_after"]["preview"]) == ("4.", "8.")


# -- lesson 08: what the graph keeps ----------------------------------------------------------------
SECOND_TIME = "Trying to backward through the graph a second time"


def test_08_saved_tensors_are_shown_then_freed(executed):
    notebook = executed("08_hooks_and_saved_tensors")
    saved = text(notebook, "l08-saved")
    assert "saved exponent: 3" in saved and "saved self    : tensor(8., grad_fn=<PowBackward0>)" in saved
    assert has_widget(notebook, "l08-show-saved") and shipped_state(notebook, "l08-show-saved")["show_saved"] is True
    freed = text(notebook, "l08-freed")
    assert "x.grad = tensor(-1.7460)" in freed and f"RuntimeError: {SECOND_TIME}" in freed
    assert SECOND_TIME in text(notebook, "l08-second-time")
    assert "after two      : tensor(-3.4920)" in text(notebook, "l08-retain")


def test_08_retain_grad_and_hooks(executed):
    notebook = executed("08_hooks_and_saved_tensors")
    kept = text(notebook, "l08-retain-grad")
    assert "y.grad = tensor(-0.1455)" in kept and "x.grad = tensor(-1.7460)" in kept
    hooks = text(notebook, "l08-hooks")
    assert "gradient that reached y: [-0.1455]" in hooks and "x.grad, clipped        : tensor(-1.)" in hooks
    assert "the hook ran 1 time(s), and saw [4.0]" in text(notebook, "l08-ex2-check")


# -- lesson 09: a network trained end to end ---------------------------------------------------------
def test_09_trains_draws_and_shows_the_forgotten_zero_grad(executed):
    notebook = executed("09_training_a_network")
    assert "torch.Size([200, 2]) torch.Size([200])" in text(notebook, "l09-data")
    assert has_widget(notebook, "l09-show")
    start, end = map(float, re.search(r"loss: ([\d.]+) at the start, ([\d.]+) after 300 steps",
                                      text(notebook, "l09-train")).groups())
    assert end < 0.2 < start
    assert has_image(notebook, "l09-curve") and has_image(notebook, "l09-bug")
    assert has_image(notebook, "l09-boundary") and has_image(notebook, "l09-bug-boundary")
    accuracy = float(re.search(r"accuracy ([\d.]+)%", text(notebook, "l09-boundary")).group(1))
    assert accuracy > 90
    assert "loss went up at 0 steps with zero_()" in text(notebook, "l09-bug")
    assert "✅" in text(notebook, "l09-check")


# -- lesson 10: a custom autograd.Function -----------------------------------------------------------
def test_10_relu_as_a_function_in_the_graph(executed):
    notebook = executed("10_custom_functions")
    assert text(notebook, "l10-relu") == "tensor([0.0000, 0.5000, 2.0000], grad_fn=<MyReLUBackward>)\n"
    printed = text(notebook, "l10-relu-backward")
    assert re.match(r"<torch\.autograd\.function\.MyReLUBackward object at 0x[0-9a-f]+>\n", printed)
    assert "x.grad = tensor([0., 1., 1.])" in printed
    relu = [node for node in shipped_state(notebook, "l10-show")["graph"]["nodes"] if node["name"] == "MyReLUBackward"]
    assert len(relu) == 1 and relu[0]["saved"][0]["value"]["preview"] == "[-1.5, 0.5, 2.]"
    assert "def backward(ctx, grad_output):" in relu[0]["code"] and "ctx.saved_tensors" in relu[0]["code"]


def test_10_gradient_checks_fit_and_the_bug_they_catch(executed):
    notebook = executed("10_custom_functions")
    assert "MyReLU passes: True" in text(notebook, "l10-gradcheck")
    assert "LegendreP3 passes: True" in text(notebook, "l10-legendre")
    fit = text(notebook, "l10-fit")
    start, end = map(float, re.search(r"loss: ([\d.]+) at the start, ([\d.]+) after 2000 steps", fit).groups())
    assert end < 10 < 400 < start
    assert "Result: y = -0.000 + -2.209 * P3(-0.000 + 0.255 x)" in fit  # as PyTorch's tutorial
    assert has_image(notebook, "l10-fit")
    caught = text(notebook, "l10-ex2-check")
    assert "backward : tensor([1.5000, 6.0000], dtype=torch.float64)" in caught
    assert "numerical: tensor([ 0.7500, 12.0000], dtype=torch.float64)" in caught
    assert "Cube passes: False" in caught


# -- lesson 11: higher-order gradients ----------------------------------------------------------------
def second_order_names(notebook, cell_id: str) -> set:
    return {node["name"] for node in shipped_state(notebook, cell_id)["graph"]["nodes"] if node["order"] == 2}


def test_11_the_graph_of_a_gradient_and_a_second_derivative(executed):
    notebook = executed("11_higher_order")
    assert text(notebook, "l11-grad") == "g = tensor(12., grad_fn=<MulBackward0>)\n"
    assert {"MulBackward0", "MulBackward1", "PowBackward0"} <= second_order_names(notebook, "l11-show-grad")
    assert text(notebook, "l11-second") == ("d²y/dx² by autograd: tensor(12.)\n"
                                            "d²y/dx² by hand    : 6·x = 12.0\n")
    many = text(notebook, "l11-second-many")
    assert "second derivative: tensor([-6.,  3., 18.])" in many and "6x by hand       : tensor([-6.,  3., 18.])" in many


def test_11_hessian_vector_product_two_ways_and_stepped(executed):
    notebook = executed("11_higher_order")
    assert "Hv = tensor([ 6., 14.])" in text(notebook, "l11-hvp")
    assert "tensor([[ 4.,  2.],\n        [ 2., 12.]])" in text(notebook, "l11-hvp")
    assert "Hv    = tensor([ 6., 14.])" in text(notebook, "l11-two-grads")
    state = shipped_state(notebook, "l11-show-hvp")
    assert second_order_names(notebook, "l11-show-hvp")
    assert state["trace"][-1]["grad_after"]["preview"] == "[6., 14.]"  # the second backward lands Hv on w


# -- lesson 12: forward mode and function transforms ----------------------------------------------------
def test_12_jvp_column_vjp_row_and_dual_numbers(executed):
    notebook = executed("12_forward_mode")
    printed = text(notebook, "l12-jvp-vjp")
    assert "Jv,  v = (1, 0) = tensor([3., 4., 0.])" in printed and "uᵀJ, u = (1,0,0) = tensor([3., 2.])" in printed
    assert text(notebook, "l12-dual") == ("tensor([2., 3.], tangent=tensor([1., 0.]))\n"
                                          "tensor([6., 4., 9.], tangent=tensor([3., 4., 0.]))\n"
                                          "primal : tensor([6., 4., 9.])\n"
                                          "tangent: tensor([3., 4., 0.])\n")
    passes = text(notebook, "l12-passes")
    assert "powers: J is (5, 1), forward mode 1 pass(es), reverse mode 5, same J: True" in passes
    assert "sum_of_squares: J is (1, 5), forward mode 5 pass(es), reverse mode 1, same J: True" in passes


def test_12_transforms_and_per_sample_gradients(executed):
    notebook = executed("12_forward_mode")
    jacobians = text(notebook, "l12-jacobians")
    assert jacobians.count("tensor([[3., 2.],\n        [4., 0.],\n        [0., 3.]])") == 2
    assert "the same: True" in jacobians
    transforms = text(notebook, "l12-transforms")
    assert "grad(g)(w)    = tensor([ 4., 13.])" in transforms
    assert "hessian(g)(w) = tensor([[ 4.,  2.],\n        [ 2., 12.]])" in transforms
    assert "grad(grad(sin))(1.0) = tensor(-0.8415)" in transforms
    per_sample = text(notebook, "l12-per-sample")
    assert "torch.Size([3, 1, 2])" in per_sample and "[[-1.,  1.]]])" in per_sample
    loop = text(notebook, "l12-loop")
    assert loop.count("matches vmap: True") == 3
    assert "example 0: weight.grad = tensor([[-3., -6.]]), bias.grad = tensor([-3.])" in loop


def test_12_what_the_widget_draws(executed):
    notebook = executed("12_forward_mode")
    assert text(notebook, "l12-show-forward").startswith(
        "tensor([6., 4., 9.], tangent=tensor([3., 4., 0.]))   grad_fn: None\n")
    forward = shipped_state(notebook, "l12-show-forward")
    assert len(forward["graph"]["nodes"]) == 1 and forward["trace"] == []  # one box, nothing to step
    assert text(notebook, "l12-show-grad").startswith("tensor(0.5403, grad_fn=<MulBackward0>)\n")
    assert {"MulBackward0", "CosBackward0"} <= second_order_names(notebook, "l12-show-grad")
    assert shipped_state(notebook, "l12-show-grad")["trace"][-1]["grad_after"]["preview"] == "-0.8415"


# -- lesson 13: mini-batches, epochs and checkpoints -------------------------------------------------------
def test_13_loader_batches_and_shuffling(executed):
    notebook = executed("13_mini_batches")
    assert "100 examples; item 0 is (tensor([-2.]), tensor([" in text(notebook, "l13-data")
    assert "one batch: (16, 1) (16, 1)" in text(notebook, "l13-data")
    assert "batch sizes in one epoch: [16, 16, 16, 16, 16, 16, 4]" in text(notebook, "l13-ex1-check")
    batches = [ast.literal_eval(line.split(" ", 2)[2]) for line in text(notebook, "l13-shuffle").splitlines()]
    assert [sorted(sum(epoch, [])) for epoch in batches] == [list(range(10))] * 2  # every index once per epoch
    assert [len(b) for b in batches[0]] == [4, 4, 2] and batches[0] != batches[1]  # in a new order each epoch
    step = shipped_state(notebook, "l13-step")
    assert step["predict"] is True and {"MseLossBackward0", "AddmmBackward0"} <= {
        node["name"] for node in step["graph"]["nodes"]}


def test_13_training_validation_and_checkpoint(executed):
    notebook = executed("13_mini_batches")
    trained = text(notebook, "l13-train")
    assert "70 steps in 10 epochs" in trained
    weight, bias = map(float, re.search(r"learned y = (\S+) x \+ (\S+)", trained).groups())
    assert abs(weight - 2) < 0.2 and abs(bias - 1) < 0.2
    assert has_image(notebook, "l13-curves")
    split = text(notebook, "l13-split")
    assert "80 for training, 20 for validation" in split and float(re.search(r"validation loss (\S+)", split)[1]) < 0.2
    saved = text(notebook, "l13-save").splitlines()
    assert "<All keys matched successfully>" in saved
    loaded, trained = (line.split(":", 1)[1] for line in saved if line.startswith(("after loading", "the trained")))
    assert loaded == trained  # the loaded model predicts what the trained one does
    assert "✅ With mini-batches" in text(notebook, "l13-checks")


# -- the notebooks on disk (tests/test_lessons_lint.py checks how they are written) ---------------------
def test_every_lesson_exists():
    assert sorted(p.stem for p in LESSONS.glob("[0-9][0-9]_*.ipynb")) == STEMS


def test_every_lesson_states_goals_and_has_a_self_checked_exercise():
    for stem in STEMS:
        notebook = nbformat.read(LESSONS / f"{stem}.ipynb", as_version=4)
        markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
        assert "Learning goals" in markdown, stem
        if stem != "07_real_pytorch":
            assert "Exercise 1" in markdown, stem


# -- every lesson runs -----------------------------------------------------------------------------
@pytest.mark.parametrize("stem", STEMS)
def test_lesson_runs_top_to_bottom_without_errors(stem, executed):
    notebook = executed(stem)
    assert errors(notebook) == []
    seconds = _RUNS[stem][1]
    assert seconds < 60, f"{stem} took {seconds:.1f} s"
    print(f"{stem}: {seconds:.1f} s")


# -- lesson 01: the one-layer network ---------------------------------------------------------------
def test_01_one_layer_network(executed):
    notebook = executed("01_computational_graph")
    grad_fns = text(notebook, "l01-grad-fn")
    assert re.search(r"^Gradient function for z = <AddBackward0 object at 0x[0-9a-f]+>$", grad_fns, re.M)
    assert re.search(r"^Gradient function for loss = <BinaryCrossEntropyWithLogitsBackward0 object at "
                     r"0x[0-9a-f]+>$", grad_fns, re.M)
    next_functions = text(notebook, "l01-next-functions").splitlines()
    assert next_functions[0].startswith("((<AddBackward0 object at")
    assert "SqueezeBackward4" in next_functions[1] and "AccumulateGrad" in next_functions[1]

    printed = text(notebook, "l01-backward")
    w_text, b_text = printed.split("\ntensor(", 1)
    w_grad, b_grad = numbers(w_text), numbers(b_text)
    assert w_text.startswith("tensor([[") and len(w_grad) == 15 and len(b_grad) == 3
    assert [w_grad[i:i + 3] for i in range(0, 15, 3)] == [b_grad] * 5  # x is ones: rows equal b.grad
    assert "✅" in text(notebook, "l01-check-rows")
    assert text(notebook, "l01-requires-grad-later") == "False\nTrue\n"
    walked = text(notebook, "l01-walk")
    assert walked.startswith("step 0: BinaryCrossEntropyWithLogitsBackward0")
    assert walked.count("AccumulateGrad") == 2
    assert "→ BinaryCrossEntropyWithLogitsBackward0" in text(notebook, "l01-view-step")
    assert has_widget(notebook, "l01-show")


# -- lesson 02: the chain rule ------------------------------------------------------------------------
def test_02_sin_cos_example_and_non_leaf_warning(executed):
    notebook = executed("02_chain_rule")
    assert text(notebook, "l02-x") == "tensor(4., requires_grad=True)\n"
    assert text(notebook, "l02-y") == "tensor(3.4180, grad_fn=<MulBackward0>)\n"
    assert text(notebook, "l02-z") == "tensor(-0.2729, grad_fn=<SinBackward0>)\n"
    assert text(notebook, "l02-x-grad") == "tensor(6.7924)\n"
    assert text(notebook, "l02-nonleaf-grad") == "None\n"
    warning = stderr(notebook, "l02-nonleaf-grad")
    assert "UserWarning: The .grad attribute of a Tensor that is not a leaf Tensor is being accessed" in warning
    assert ".retain_grad()" in warning
    assert "dz/dx = tensor(6.7924)" in text(notebook, "l02-retain-grad")
    assert has_widget(notebook, "l02-show-z")


def test_02_manual_chain_rule_matches_autograd(executed):
    notebook = executed("02_chain_rule")
    assert text(notebook, "l02-manual-loss") == "tensor(6.7012)\n"
    manual = text(notebook, "l02-manual-grads")
    assert "(dw): 6.6917" in manual and "(db): 0.9987" in manual
    dw, db = (float(v) for v in re.findall(r": (\d+\.\d+)$", manual, re.M))
    assert round(dw, 4) == 6.6918 and round(db, 4) == 0.9988
    assert text(notebook, "l02-auto-z") == "tensor(6.7000, grad_fn=<AddBackward0>)\n"
    assert text(notebook, "l02-auto-ypred") == "tensor(0.9988, grad_fn=<SigmoidBackward0>)\n"
    assert text(notebook, "l02-auto-loss") == "tensor(6.7012, grad_fn=<NegBackward0>)\n"
    assert text(notebook, "l02-auto-grads") == "tensor(6.6918)\ntensor(0.9988)\n"
    assert has_widget(notebook, "l02-show-loss")


def test_02_mean_of_squares(executed):
    notebook = executed("02_chain_rule")
    assert text(notebook, "l02-matrix-x") == ("tensor([[1.0000, 2.0000, 3.0000],\n"
                                              "        [2.5000, 9.8000, 5.7000]], requires_grad=True)\n")
    assert text(notebook, "l02-matrix-y") == "tensor(24.7967, grad_fn=<MeanBackward0>)\n"
    assert text(notebook, "l02-matrix-grad") == ("tensor([[0.3333, 0.6667, 1.0000],\n"
                                                 "        [0.8333, 3.2667, 1.9000]])\n")


# -- lesson 03: accumulation ----------------------------------------------------------------------
def test_03_accumulation_zero_and_live_widget(executed):
    notebook = executed("03_accumulation")
    assert text(notebook, "l03-x") == "tensor(2., requires_grad=True)\n"
    assert text(notebook, "l03-y") == "tensor(4., grad_fn=<PowBackward0>)\n"
    assert has_widget(notebook, "l03-show")
    assert text(notebook, "l03-first-backward") == "tensor(4.)\n"
    assert text(notebook, "l03-second-backward").endswith("tensor(8.)\n")
    assert text(notebook, "l03-third-backward") == "tensor(12.)\n"
    # the widget displayed earlier followed the later cells by itself
    assert text(notebook, "l03-widget-grad") == "['12.']\n"
    assert text(notebook, "l03-zero") == "tensor(0.)\n"
    assert text(notebook, "l03-widget-zero") == "['0.']\n"
    assert text(notebook, "l03-clear-grad") == "tensor(4.)\ntensor(0.)\n"


def test_03_retain_graph_error(executed):
    notebook = executed("03_accumulation")
    printed = text(notebook, "l03-retain-error")
    assert "first backward: x.grad = tensor(6.)" in printed
    assert ("second backward failed: Trying to backward through the graph a second time (or directly "
            "access saved tensors after they have already been freed).") in printed
    assert "Specify retain_graph=True" in printed
    assert has_widget(notebook, "l03-show-freed")


def test_03_forgotten_zero_grad(executed):
    notebook = executed("03_accumulation")
    good = float(re.search(r"final loss with zero_grad\(\): (\d+\.\d+)", text(notebook, "l03-train-good"))[1])
    bad = float(re.search(r"final loss without zero_grad\(\): (\d+\.\d+)", text(notebook, "l03-train-bug"))[1])
    assert good < 0.01 < 0.1 < bad
    assert "✅" in text(notebook, "l03-train-check")
    # the losses are drawn as curves, not printed as lists of numbers
    assert has_image(notebook, "l03-train-good") and has_image(notebook, "l03-train-bug")
    assert "<loss curve: with zero_grad(): 20 steps" in text(notebook, "l03-train-good")
    assert "without zero_grad(): 20 steps" in text(notebook, "l03-train-bug")


# -- lesson 04: no_grad, detach, requires_grad_(False) ------------------------------------------------
def test_04_three_ways_to_stop_tracking(executed):
    notebook = executed("04_no_grad")
    assert text(notebook, "l04-three-flags") == "True\nFalse\nFalse\n"
    assert has_widget(notebook, "l04-show-detached")
    assert text(notebook, "l04-way1-grad") == "tensor(4.)\n"
    assert text(notebook, "l04-way1-off") == "tensor(2.)\n"
    assert text(notebook, "l04-way1-y") == "tensor(4.)\n"
    assert text(notebook, "l04-way1-error") == NO_GRAD_FN + "\n"
    assert text(notebook, "l04-way2-detach") == "tensor(2.)\n"
    assert text(notebook, "l04-way2-error") == "tensor(4.)\n" + NO_GRAD_FN + "\n"
    assert text(notebook, "l04-way3-no-grad") == "tensor(4.8000)\n" + NO_GRAD_FN + "\n"


def test_04_dtype_error_and_frozen_parameters(executed):
    notebook = executed("04_no_grad")
    assert text(notebook, "l04-dtype-error") == ("Only Tensors of floating point and complex dtype can require "
                                                 "gradients\ntensor([1., 2.], requires_grad=True)\n")
    assert text(notebook, "l04-frozen-grads").startswith("has .grad: [False, False, True, True]\n")
    assert has_widget(notebook, "l04-show-unfrozen") and has_widget(notebook, "l04-show-frozen")
    # once frozen, the backbone's output is a plain tensor: nothing of the backbone is recorded
    assert text(notebook, "l04-freeze") == "features.requires_grad = False    features.grad_fn = None\n"


# -- lesson 05: dynamic graphs ------------------------------------------------------------------------
def test_05_dynamic_graphs(executed):
    notebook = executed("05_dynamic_graphs")
    assert text(notebook, "l05-new-graph") == ("same grad_fn object? False\n"
                                               "w.grad after two forward + backward passes: tensor(54.)\n")
    branches = text(notebook, "l05-if")
    assert "positive input → <MulBackward0" in branches and "negative input → <NegBackward0" in branches
    assert text(notebook, "l05-while") == "nodes for small input: 7\nnodes for large input: 4\n"
    assert text(notebook, "l05-loop-grads") == "small.grad = tensor([32., 32.])    large.grad = tensor([4., 4.])\n"
    used_twice = text(notebook, "l05-used-twice").splitlines()[0]
    assert used_twice.count("AccumulateGrad") == 2
    assert "AccumulateGrad" in text(notebook, "l05-used-twice-check")
    assert has_widget(notebook, "l05-show-loop") and has_widget(notebook, "l05-used-twice")


# -- lesson 06: devices -----------------------------------------------------------------------------
def test_06_devices(executed):
    notebook = executed("06_devices")
    device = text(notebook, "l06-device").split()[-1]
    assert device in ("cpu", "cuda")
    suffix = ", device='cuda:0'" if device == "cuda" else ""
    assert text(notebook, "l06-x") == f"tensor(3.{suffix}, requires_grad=True)\n"
    assert text(notebook, "l06-y") == f"tensor(9.{suffix}, grad_fn=<PowBackward0>)\n"
    assert text(notebook, "l06-x-grad") == f"tensor(6.{suffix})\n"
    assert text(notebook, "l06-x-grad-again") == f"tensor(12.{suffix})\n"
    assert text(notebook, "l06-move").endswith("→ tensor(14.)\n")
    assert has_widget(notebook, "l06-show")


# -- lesson 07: the drop-in -----------------------------------------------------------------------------
def test_07_seed_code_runs_with_import_gradviz_as_torch(executed):
    notebook = executed("07_real_pytorch")
    grad_fns = text(notebook, "l07-seed-grad-fn")
    assert "Gradient function for z = <AddBackward0 object at" in grad_fns
    assert "Gradient function for loss = <BinaryCrossEntropyWithLogitsBackward0 object at" in grad_fns
    assert text(notebook, "l07-seed-backward").startswith("tensor([[")
    assert text(notebook, "l07-seed-no-grad") == "True\nFalse\n"
    assert text(notebook, "l07-seed-detach") == "False\n"


def test_07_compares_with_real_torch(executed):
    pytest.importorskip("torch")
    notebook = executed("07_real_pytorch")
    assert "is installed: we can compare" in text(notebook, "l07-torch-available")
    rows = text(notebook, "l07-side-by-side").splitlines()[1:]
    grad_fn_rows = [row for row in rows if "Gradient function" in row]
    assert len(grad_fn_rows) == 2 and all(row.endswith("✓") for row in grad_fn_rows)
    flag_rows = [row for row in rows if row.split()[0] in ("True", "False")]
    assert len(flag_rows) == 3 and all(row.endswith("✓") for row in flag_rows)
    report = text(notebook, "l07-compare")
    for aspect in ("names", "values", "step order"):
        assert re.search(rf"^  {aspect} +agree$", report, re.M), report
    assert has_widget(notebook, "l07-show-torch")
    assert has_widget(notebook, "l07-compare-view")
    assert "✅ The same gradients" in text(notebook, "l07-same-grads")


def test_07_skips_the_torch_part_without_torch(tmp_path):
    """A `torch` that cannot be imported (as on Binder) makes the lesson skip, not fail."""
    shadow = tmp_path / "no_torch"
    (shadow / "torch").mkdir(parents=True)
    (shadow / "torch" / "__init__.py").write_text("raise ImportError(\"No module named 'torch'\")\n")
    notebook, _ = execute("07_real_pytorch", tmp_path, extra_path=str(shadow))
    assert errors(notebook) == []
    assert "PyTorch is not installed here" in text(notebook, "l07-torch-available")
    assert text(notebook, "l07-compare") == "Skipped: PyTorch is not installed.\n"
    assert "Gradient function for z = <AddBackward0" in text(notebook, "l07-side-by-side")


# -- the exercises' self-checks -------------------------------------------------------------------------
def _fill_predictions(answers: dict):
    def edit(notebook):
        for candidate in notebook.cells:
            if candidate.get("id") in answers:
                candidate.source = PREDICTION_LINE.sub(f"prediction = {answers[candidate.id]}", candidate.source)
    return edit


def test_unanswered_exercises_ask_for_a_prediction(executed):
    notebook = executed("02_chain_rule")
    outputs = "".join(text(notebook, c.id) for c in notebook.cells if c.cell_type == "code")
    assert outputs.count("✏️  Put your prediction in the cell above") == 3


@pytest.mark.parametrize("stem", sorted({key[1:3] + "_" for key in ANSWERS}))
def test_self_checks_accept_right_predictions(stem, tmp_path):
    stem = next(s for s in STEMS if s.startswith(stem))
    notebook, _ = execute(stem, tmp_path, edit=_fill_predictions(ANSWERS))
    assert errors(notebook) == []
    prefix = "l" + stem[:2] + "-"
    expected = sum(1 for key in ANSWERS if key.startswith(prefix))
    outputs = "".join(text(notebook, c.id) for c in notebook.cells if c.cell_type == "code")
    assert outputs.count("✅ Correct! autograd agrees") == expected
    assert "Put your prediction" not in outputs


def test_self_check_rejects_a_wrong_prediction_kindly(tmp_path):
    notebook, _ = execute("06_devices", tmp_path, edit=_fill_predictions({"l06-ex1-prediction": "9.0"}))
    found = errors(notebook)
    assert len(found) == 1 and "AssertionError: Not quite: you predicted 9.0, autograd computed 6.0" in found[0]


# -- lesson 15: convolution, one kernel at every position ------------------------------------------------------
def test_15_convolution_by_hand_and_its_kernel_gradient(executed):
    notebook = executed("15_convolutions")
    conv = text(notebook, "l15-conv").splitlines()
    assert conv[0].startswith("F.conv1d: tensor([-1.5000, -1.0000,  7.0000, -1.5000], grad_fn=<ViewBackward0>)")
    assert conv[1].startswith("by hand : tensor([-1.5000, -1.0000,  7.0000, -1.5000], grad_fn=<StackBackward0>)")
    step = shipped_state(notebook, "l15-view")
    names = [node["name"] for node in step["graph"]["nodes"]]
    assert "ConvolutionBackward0" in names and step["trace"], names
    assert "by hand, w.grad = tensor([2., 4., 3.])" in text(notebook, "l15-by-hand")
    hand = shipped_state(notebook, "l15-by-hand-view")
    assert has_widget(notebook, "l15-by-hand-view") and len(hand["trace"]) > 5  # a multiply and a sum per position
    pooled = text(notebook, "l15-pool")
    assert "pooled = tensor([[[-1.,  7.]]], grad_fn=<SqueezeBackward1>)" in pooled


def test_15_a_tiny_cnn_learns_the_bump(executed):
    notebook = executed("15_convolutions")
    trained = text(notebook, "l15-train")
    first, last, accuracy = re.search(r"loss (\d\.\d+) -> (\d\.\d+); accuracy on new signals (\d+)%", trained).groups()
    assert float(first) > 0.5 and float(last) < 0.05 and int(accuracy) >= 95, trained
    assert has_image(notebook, "l15-curves")
    kernels = [numbers(line) for line in text(notebook, "l15-kernels").splitlines()]
    assert len(kernels) == 4 and all(len(row) == 3 for row in kernels)
    assert any(row[1] > row[0] > 0.3 and row[1] > row[2] > 0.3 for row in kernels), kernels  # a bump-shaped kernel
    assert "✅ One kernel, every position" in text(notebook, "l15-checks")
# -- lesson 14: backpropagation through time (an RNN cell unrolled, shared weights, vanishing gradients) ----------
ANSWERS.update({"l14-ex1-prediction": "3",
                "l14-ex2-prediction": "W_steps[0].grad + W_steps[1].grad + W_steps[2].grad"})


def test_14_the_unrolled_cell_and_the_way_back_to_h0(executed):
    notebook = executed("14_backprop_through_time")
    assert "RNNCell(1, 2) [('weight_ih', (2, 1)), ('weight_hh', (2, 2))" in text(notebook, "l14-unroll")
    assert "h3 = tensor([[" in text(notebook, "l14-unroll")
    view = shipped_state(notebook, "l14-ex1-view")
    assert has_widget(notebook, "l14-ex1-view") and view["predict"] is True and view["trace"]
    names = [node["name"] for node in view["graph"]["nodes"]]
    assert names.count("TanhBackward0") == 3 and names.count("AddmmBackward0") == 6  # one block of nodes per step
    path = text(notebook, "l14-ex1-check").splitlines()[-1].split(" → ")
    assert path[0] == "SumBackward0" and path[-1] == "h0" and path.count("TanhBackward0") == 3
    assert path[1:-1] == ["TanhBackward0", "AddBackward0", "AddmmBackward0"] * 3


def test_14_the_shared_weight_gets_the_sum_of_the_steps(executed):
    notebook = executed("14_backprop_through_time")
    copies = text(notebook, "l14-copies")
    steps = [numbers(part) for part in copies.split("step ")[1:]]
    assert [len(step) for step in steps] == [4, 4, 4] and steps[0] == [0.0] * 4  # step 1 multiplied h0 = 0
    assert "h0.grad = tensor([[" in text(notebook, "l14-ex2-check")


def test_14_vanishing_gradients_and_nn_rnn(executed):
    notebook = executed("14_backprop_through_time")
    norms = [float(line.split("= ")[1]) for line in text(notebook, "l14-vanishing").splitlines()]
    assert len(norms) == 7 and norms == sorted(norms, reverse=True) and norms[-1] < 1e-3 * norms[0]
    assert has_image(notebook, "l14-vanishing-plot")
    shown = text(notebook, "l14-nn-rnn")
    assert "output: (3, 1, 2)  h_n: (1, 1, 2)" in shown and "same hidden states as the loop: True" in shown
    names = {node["name"] for node in shipped_state(notebook, "l14-nn-rnn")["graph"]["nodes"]}
    assert {"UnbindBackward0", "StackBackward0", "AddmmBackward0", "TanhBackward0"} <= names
    assert "✅ Unrolled, an RNN is an ordinary graph" in text(notebook, "l14-checks")
    assert errors(notebook) == []


def test_14_self_checks_accept_right_predictions(tmp_path):
    answers = {key: value for key, value in ANSWERS.items() if key.startswith("l14-")}
    notebook, _ = execute("14_backprop_through_time", tmp_path, edit=_fill_predictions(answers))
    outputs = "".join(text(notebook, c.id) for c in notebook.cells if c.cell_type == "code")
    assert errors(notebook) == [] and outputs.count("✅ Correct! autograd agrees") == 2


# -- lesson 16: attention ----------------------------------------------------------------------------------------
def test_16_attention_by_hand_and_fused(executed):
    notebook = executed("16_attention")
    by_hand = text(notebook, "l16-by-hand")
    assert "[0.3333, 0.3333, 0.3333]], grad_fn=<SoftmaxBackward0>)" in by_hand  # token 2 scores every key alike
    assert "[3.0000, 4.0000]], grad_fn=<MmBackward0>)" in by_hand
    assert "same as by hand: True" in text(notebook, "l16-fused")
    fused = shipped_state(notebook, "l16-fused-view")
    names = [node["name"] for node in fused["graph"]["nodes"]]
    assert "ScaledDotProductFlashAttentionForCpuBackward0" in names and fused["trace"], names
    rows = text(notebook, "l16-fused-grads").split("q.grad fused  :")
    assert numbers(rows[0]) == numbers(rows[1]) and len(numbers(rows[1])) == 6


def test_16_causal_mask_and_multi_head_attention(executed):
    notebook = executed("16_attention")
    assert "causal out = tensor([[1.0000, 2.0000]," in text(notebook, "l16-causal")  # token 0 sees only itself
    assert "every query's gradient: tensor([[ 0.0000,  0.0000]," in text(notebook, "l16-ex2-check")
    mha = text(notebook, "l16-mha")
    assert "(out_proj): NonDynamicallyQuantizableLinear(in_features=4, out_features=4, bias=True)" in mha
    assert "{'in_proj_weight': (12, 4), 'in_proj_bias': (12,), 'out_proj.weight': (4, 4), 'out_proj.bias': (4,)}" in mha
    assert has_widget(notebook, "l16-mha")
    assert "✅ Attention is a softmax-weighted average" in text(notebook, "l16-checks")
