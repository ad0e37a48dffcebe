"""Observing never disturbs: showing, refreshing and exporting a graph leave the user's state alone.

Programs with side-effecting hooks of every kind (counters, prints, an optimizer stepped inside a
post-accumulate-grad hook, ``retain_grad`` non-leaves, node and module hooks) are shown, refreshed
and exported; afterwards parameters, ``.grad`` (the same object, the same values), version counters
and hook call counts are exactly as before, and ``backward()`` still runs (nothing was freed). The
observed order and values are checked against torch's own engine, seen through torch's hooks.
"""
from __future__ import annotations

import pytest

import gradviz as gv
from gradviz.lessons import walk
from gradviz.snapshot import graph_of, observe_steps, trace_of

pytest.importorskip("anywidget")

from gradviz.widget import export_html, live, show, to_html  # noqa: E402


def state_of(tensors: dict) -> dict:
    """Everything a view could disturb: values, ``.grad`` (object and values) and versions."""
    state = {}
    for name, tensor in tensors.items():
        grad = tensor.grad if (tensor.is_leaf or tensor.retains_grad) else None
        state[name] = (tensor.detach().clone().tolist(), tensor._version, id(grad),
                       None if grad is None else (grad.tolist(), grad._version))
    return state


def observe_everything(loss, names: dict, tmp_path, model=None) -> None:
    """Every view a user has: show, refresh, the live refresh, export, a fragment, the snapshot, a walk."""
    widget = show(loss, names=names, model=model)
    widget.refresh()
    widget.refresh()
    live.refresh_all()  # what runs after every notebook cell
    export_html(loss, tmp_path / "page.html", names=names, model=model)
    export_html(widget, tmp_path / "widget.html")
    to_html(loss, names=names, model=model)
    trace_of(loss, graph_of(loss, names, model))
    list(observe_steps(loss))
    walk(loss)
    widget.close()


# ------------------------------------------------------------------ gradviz graphs

def gradviz_program(calls: list):
    x = gv.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = gv.tensor([0.5, -1.0, 2.0], requires_grad=True)
    w.grad = gv.tensor([0.25, 0.25, 0.25])
    hidden = x * w
    hidden.retain_grad()
    hidden.register_hook(lambda g: calls.append("tensor hook") or g * 2)
    x.register_hook(lambda g: print("x hook", g))
    squared = hidden * hidden
    squared.grad_fn.register_prehook(lambda grads: calls.append("pre-hook"))
    squared.grad_fn.register_hook(lambda grads_in, grads_out: calls.append("post-hook"))
    loss = squared.sum()
    return loss, {"x": x, "w": w, "hidden": hidden, "squared": squared, "loss": loss}


def test_gradviz_views_run_no_hook_and_change_nothing(tmp_path, capsys):
    calls = []
    loss, names = gradviz_program(calls)
    before = state_of(names)
    observe_everything(loss, names, tmp_path)
    assert calls == [] and "x hook" not in capsys.readouterr().out
    assert state_of(names) == before
    loss.backward()  # not freed by the views; the hooks run now, once each
    assert sorted(calls) == ["post-hook", "pre-hook", "tensor hook"]
    assert names["hidden"].grad is not None


def test_gradviz_trace_shows_the_formulas_own_gradients_when_hooks_would_change_them():
    calls = []
    loss, names = gradviz_program(calls)
    x, w = names["x"], names["w"]
    [x_step] = [step for step in observe_steps(loss) if step.is_accumulate and step.node.variable is x]
    expected = 2 * (x * w) * w  # d/dx sum((x w)^2), no hook doubling it
    assert x_step.grad_after.tolist() == expected.detach().tolist()


# ------------------------------------------------------------------ torch graphs

@pytest.fixture
def torch():
    return pytest.importorskip("torch")


class Counts(dict):
    def hit(self, name):
        self[name] = self.get(name, 0) + 1


def torch_program(torch, counts: Counts):
    """A small network trained with the optimizer-in-backward pattern, hooks of every kind."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)

    def step_in_backward(parameter):
        counts.hit("post-accumulate")
        optimizer.step()
        optimizer.zero_grad()

    for parameter in model.parameters():
        parameter.register_post_accumulate_grad_hook(step_in_backward)
    model[0].register_full_backward_hook(lambda module, grad_in, grad_out: counts.hit("module"))
    model[2].register_full_backward_pre_hook(lambda module, grad_out: counts.hit("module pre"))
    model.register_forward_hook(lambda module, args, out: counts.hit("forward"))
    x = torch.randn(5, 3, requires_grad=True)
    hidden = model[1](model[0](x))
    hidden.retain_grad()
    hidden.register_hook(lambda g: counts.hit("tensor hook") or g * 3)
    output = model[2](hidden)
    output.grad_fn.register_prehook(lambda grads: counts.hit("pre-hook"))
    output.grad_fn.register_hook(lambda grads_in, grads_out: counts.hit("post-hook"))
    loss = (output ** 2).mean()
    names = {"x": x, "hidden": hidden, "output": output, "loss": loss}
    tensors = {**names, **dict(model.named_parameters())}
    return loss, names, tensors, model


def test_torch_views_run_no_hook_step_no_optimizer_and_change_nothing(torch, tmp_path):
    counts = Counts()
    loss, names, tensors, model = torch_program(torch, counts)
    counts.clear()  # forward hooks ran while building the program
    hidden = names["hidden"]
    hidden.grad = torch.ones_like(hidden)  # a retained non-leaf that already holds a gradient
    before = state_of(tensors)
    observe_everything(loss, names, tmp_path, model=model)
    assert counts == {}
    assert state_of(tensors) == before
    loss.backward()  # nothing was freed; torch's own engine runs every hook now
    assert counts["post-accumulate"] == 4 and counts["tensor hook"] == 1
    assert counts["pre-hook"] == counts["post-hook"] == counts["module"] == counts["module pre"] == 1


def test_retained_non_leaf_grad_is_not_accumulated_by_views(torch, tmp_path):
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3
    b.retain_grad()
    loss = (b * b).sum()
    observe_everything(loss, {"a": a, "b": b}, tmp_path)
    assert b.grad is None and a.grad is None
    loss.backward()
    assert b.grad.tolist() == [6.0, 12.0]


def test_a_freed_torch_graph_is_reported_not_retried_through_the_engine(torch):
    counts = Counts()
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a.exp()
    b.register_hook(lambda g: counts.hit("tensor hook"))
    loss = b.sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        list(observe_steps(loss))
    assert counts == {"tensor hook": 1}


LOSSES = ("binary_cross_entropy_with_logits", "binary_cross_entropy", "smooth_l1_loss", "huber_loss", "mse_loss",
          "l1_loss")


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("library", ["gradviz", "torch"])
def test_a_graph_whose_backward_freed_its_loss_still_shows_and_exports(name, library, tmp_path):
    """The learner's usual order: ``loss.backward()``, then look at the graph. A loss's formula is
    specialised by the shapes of its saved tensors; once backward() freed them the panel gives
    PyTorch's formula alone, and the page still draws every node (it used to stop on a TypeError)."""
    lib = gv if library == "gradviz" else pytest.importorskip("torch")
    x = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    w = lib.tensor([[0.3], [-0.2], [0.1]], requires_grad=True)
    prediction = x @ w
    if name == "binary_cross_entropy":
        prediction = prediction.sigmoid()
    loss = getattr(lib.nn.functional, name)(prediction, lib.tensor([[1.0], [0.0]]))
    loss.backward()
    html = export_html(loss, tmp_path / "freed.html").read_text()
    assert "MmBackward0" in html and "Backward0" in html
    assert w.grad is not None and len(graph_of(loss).nodes) >= 3


def engine_steps(torch, make):
    """Steps of torch's real engine (``record_torch_backward``) on a fresh copy of a program."""
    from gradviz.interop.torch_steps import record_torch_backward

    return record_torch_backward(make()[0], retain_graph=True)


def torch_run_order(torch, loss) -> list:
    """Node names in the order torch's engine runs them, read from pre-hooks on every node."""
    from orders import torch_order

    return torch_order(loss)


def models(torch):
    """Programs whose graphs exercise the scheduler: fan-out, shared leaves, views, a custom
    Function, mixed dtypes (the engine casts), broadcasting (the engine sums to shape)."""
    from fixtures.torch_models import ResNet18

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 + x * 0

    def mlp():
        torch.manual_seed(1)
        x = torch.randn(8, 3)
        w1 = torch.randn(3, 5, requires_grad=True)
        b1 = torch.zeros(5, requires_grad=True)
        hidden = torch.tanh(x @ w1 + b1)
        return ((hidden * hidden).sum(1) + Double.apply(hidden).mean(1)).sum() + (w1 ** 2).sum(), [w1, b1]

    def mixed():
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        h = torch.tensor([0.5, 0.25], dtype=torch.float16, requires_grad=True)
        row = torch.tensor([[1.0], [2.0]], dtype=torch.float64, requires_grad=True)
        return ((a * h + row) * a[0]).sum(), [a, h, row]

    def resnet():
        torch.manual_seed(0)
        model = ResNet18()
        logits = model(torch.randn(2, 3, 32, 32))
        return torch.nn.functional.cross_entropy(logits, torch.tensor([1, 3])), list(model.parameters())

    return {"mlp": mlp, "mixed": mixed, "resnet": resnet}


@pytest.mark.parametrize("program", ["mlp", "mixed", "resnet"])
def test_observed_order_and_values_equal_torchs_own_engine(torch, program):
    make = models(torch)[program]
    loss, params = make()
    observed = list(observe_steps(loss))
    assert all(p.grad is None for p in params)
    assert [step.name for step in observed] == torch_run_order(torch, make()[0])
    recorded = engine_steps(torch, make)
    assert len(observed) == len(recorded)
    for mine, theirs in zip(observed, recorded):
        assert mine.name == theirs.name
        for field in ("grad_outputs", "grad_inputs"):
            for a, b in zip(getattr(mine, field), getattr(theirs, field)):
                assert (a is None) == (b is None)
                if a is not None:
                    assert a.dtype == b.dtype and a.shape == b.shape
                    assert torch.allclose(a, b, rtol=1e-5, atol=1e-6)
        if mine.is_accumulate:
            assert torch.allclose(mine.grad_after, theirs.grad_after, rtol=1e-5, atol=1e-6)
    loss.backward()  # the observed graph was not freed


def test_observing_checks_the_starting_gradient_as_backward_does(torch):
    vector = torch.randn(3, requires_grad=True) * 2
    for call, tensor in ((lambda t: t.backward(), vector),
                         (lambda t: t.backward(torch.ones(2)), vector),
                         (lambda t: t.backward(), torch.randn(1))):
        with pytest.raises(RuntimeError) as expected:
            call(tensor)
        with pytest.raises(RuntimeError) as observed:
            list(observe_steps(tensor, *([torch.ones(2)] if "Mismatch" in str(expected.value) else [])))
        assert str(observed.value) == str(expected.value)


def test_run_hooks_false_on_torch_needs_a_dry_run(torch):
    loss = (torch.randn(2, requires_grad=True) * 2).sum()
    with pytest.raises(ValueError, match="dry_run=True"):
        list(gv.autograd.backward_steps(loss, run_hooks=False))


def test_a_function_with_non_tensor_inputs_sends_what_torchs_engine_sends(torch):
    from gradviz.interop.torch_steps import record_torch_backward

    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, flag, b, scale):
            return a * b * scale

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None, grad * 3, None

    def make():
        return Scaled.apply(torch.ones(2), True, torch.ones(2, requires_grad=True), 2.0).sum()

    observed = [(s.name, s.grad_inputs) for s in observe_steps(make())]
    recorded = [(s.name, s.grad_inputs) for s in record_torch_backward(make())]
    assert [name for name, _ in observed] == [name for name, _ in recorded]
    for (_, mine), (_, theirs) in zip(observed, recorded):
        assert [None if g is None else g.tolist() for g in mine] == [None if g is None else g.tolist() for g in theirs]


def test_a_reentrant_checkpoint_is_shown_but_not_stepped(torch, tmp_path):
    from torch.utils.checkpoint import checkpoint

    from gradviz.snapshot import CannotObserve

    calls = []
    layer = torch.nn.Linear(3, 3)
    layer.weight.register_hook(lambda g: calls.append("hook"))
    x = torch.randn(2, 3, requires_grad=True)
    loss = checkpoint(lambda t: layer(t).tanh(), x, use_reentrant=True).sum()
    with pytest.raises(CannotObserve, match="use_reentrant=False"):
        list(observe_steps(loss))
    widget = show(loss, names={"x": x})
    assert widget.trace == [] and "use_reentrant=False" in widget.note and "nothing to step" in widget.note
    export_html(loss, tmp_path / "page.html", names={"x": x})
    assert layer.weight.grad is None and x.grad is None and calls == []
    widget.close()


def test_showing_log_of_zero_and_division_by_zero_prints_no_numpy_warning(torch):
    """The trace runs each step under ``np.errstate`` (only then): no RuntimeWarning reaches the
    notebook, the values stay the inf and nan torch computes, and numpy's settings are untouched."""
    import warnings

    import numpy as np

    def program(lib):
        x = lib.tensor([0.0, -1.0, 2.0], requires_grad=True)
        d = lib.tensor([0.0, 0.0, 1.0], requires_grad=True)
        with np.errstate(all="ignore"):  # the forward pass is the user's own code
            loss = x.log().sum() + (x / d).sum()
        return loss, {"x": x, "d": d, "loss": loss}

    before = np.geterr()
    loss, names = program(gv)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = trace_of(loss, graph_of(loss, names))
        to_html(loss, names=names)
    assert np.geterr() == before
    sent = {step["name"]: step["grad_inputs"] for step in trace}
    assert [g["preview"] for g in sent["LogBackward0"]] == ["[inf, -1., 0.5]"]  # 1/x at 0, -1, 2
    their_loss, their_names = program(torch)
    their_loss.backward()
    with np.errstate(all="ignore"):
        loss.backward()
    for name in ("x", "d"):  # nan and inf where torch has them
        np.testing.assert_array_equal(names[name].grad.numpy(), their_names[name].grad.numpy())
