"""Module hooks against torch 2.13: full backward hooks and pre-hooks (their BackwardHookFunctionBackward
nodes in the graph, what they see, what they may replace, their errors and warnings), the old
``register_backward_hook``, and forward hooks with ``with_kwargs``, ``always_call`` and ``prepend``.
The same lines run in both libraries; calls, values, graph names, grads, errors and warnings are compared."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradviz as gv

WEIGHTS = np.random.default_rng(0).standard_normal((24,)).astype(np.float32)


def linear(lib, n_in=3, n_out=2):
    layer = lib.nn.Linear(n_in, n_out)
    with lib.no_grad():
        layer.weight.copy_(lib.tensor(WEIGHTS[:n_in * n_out].reshape(n_out, n_in).tolist()))
        layer.bias.copy_(lib.tensor(WEIGHTS[-n_out:].tolist()))
    return layer


def inputs(lib, requires_grad=True):
    return lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], requires_grad=requires_grad)


def shown(value):
    """A hook argument as compared: tensors as rounded lists, tuples item by item."""
    if isinstance(value, tuple):
        return tuple(shown(v) for v in value)
    if value is None:
        return None
    return np.round(np.asarray(value.detach().tolist(), dtype=np.float64), 5).tolist()


def graph_names(tensor) -> list:
    """Node names in a depth-first walk from ``tensor.grad_fn`` (each node once)."""
    names, seen, stack = [], set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.name())
        stack.extend(next_node for next_node, _ in reversed(node.next_functions))
    return names


def run(program, lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, error = program(lib), None
        except Exception as exception:  # the error is part of what is compared
            result, error = None, (type(exception).__name__, str(exception))
    return result, error, [(w.category.__name__, str(w.message), w.filename == __file__) for w in caught]


def both(program, torch):
    ours, theirs = run(program, gv), run(program, torch)
    assert ours == theirs
    return ours


# -- full backward hooks ------------------------------------------------------------------------------------------
def full_hooks(lib):
    layer = linear(lib)
    calls = []
    layer.register_full_backward_pre_hook(lambda m, grad_output: calls.append(("pre", type(m).__name__,
                                                                              shown(grad_output))))
    layer.register_full_backward_hook(lambda m, grad_input, grad_output: calls.append(
        ("full", shown(grad_input), shown(grad_output))))
    x = inputs(lib)
    y = layer(x)
    names = graph_names(y)
    (y * y).sum().backward()
    return names, calls, shown(x.grad), shown(layer.weight.grad), y.grad_fn.name(), repr(y.grad_fn).split(" object")[0]


def test_full_hooks_see_torchs_gradients_and_sit_in_the_graph(torch):
    result, error, _ = both(full_hooks, torch)
    assert error is None
    assert result[0][:2] == ["BackwardHookFunctionBackward", "AddmmBackward0"]
    assert result[0].count("BackwardHookFunctionBackward") == 2
    assert [call[0] for call in result[1]] == ["pre", "full"]


def replacing(lib):
    layer = linear(lib)
    layer.register_full_backward_pre_hook(lambda m, grad_output: (grad_output[0] * 10,))
    layer.register_full_backward_hook(lambda m, grad_input, grad_output: (grad_input[0] + 1,))
    seen = []
    layer.register_full_backward_hook(lambda m, grad_input, grad_output: seen.append(shown(grad_input)))
    x = inputs(lib)
    layer(x).sum().backward()
    return shown(x.grad), shown(layer.bias.grad), seen


def test_hooks_may_replace_grad_output_and_grad_input(torch):
    result, error, _ = both(replacing, torch)
    assert error is None and result[1] == [20.0, 20.0]  # the pre-hook's gradient reaches the parameters


def wrong_counts(lib):
    outcomes = []
    for register, hook in (("register_full_backward_pre_hook", lambda m, g: (g[0], g[0])),
                           ("register_full_backward_hook", lambda m, gi, go: (gi[0], gi[0]))):
        layer = linear(lib)
        getattr(layer, register)(hook)
        try:
            layer(inputs(lib)).sum().backward()
        except RuntimeError as error:
            outcomes.append(str(error))
    return outcomes


def test_a_hook_returning_the_wrong_number_of_gradients(torch):
    result, error, _ = both(wrong_counts, torch)
    assert result == ["Backward pre hook returned an invalid number of grad_output, got 2, but expected 1",
                      "Backward hook returned an invalid number of grad_input, got 2, but expected 1"]


def in_place_on_output(lib):
    layer = linear(lib)
    layer.register_full_backward_hook(lambda m, gi, go: None)
    y = layer(inputs(lib))
    messages = []
    for change in (lambda: y.add_(1), lambda: y.relu_(), lambda: y.mul_(2)):
        try:
            change()
        except RuntimeError as error:
            messages.append(str(error))
    return messages


def test_in_place_on_a_hooked_output_raises_torchs_error(torch):
    result, error, _ = both(in_place_on_output, torch)
    assert len(result) == 3 and result[0].startswith("Output 0 of BackwardHookFunction is a view")


def no_input_needs_grad(lib):
    layer = linear(lib)
    calls = []
    layer.register_full_backward_hook(lambda m, gi, go: calls.append((shown(gi), shown(go))))
    layer(inputs(lib, requires_grad=False)).sum().backward()
    return calls, shown(layer.weight.grad)


def test_no_input_requiring_grad_fires_with_none_and_warns(torch):
    result, error, caught = both(no_input_needs_grad, torch)
    assert result[0][0][0] == (None,)
    assert caught[0][0] == "UserWarning" and caught[0][1].startswith("Full backward hook is firing")
    assert caught[0][2]  # attributed to the user's backward() line, in this file


def no_input_hook_returning(lib):
    layer = linear(lib)
    layer.register_full_backward_hook(lambda m, gi, go: (go[0],))
    layer(inputs(lib, requires_grad=False)).sum().backward()


def test_no_input_requiring_grad_hook_must_return_none(torch):
    result, error, _ = both(no_input_hook_returning, torch)
    assert error == ("RuntimeError", "Backward hook for Modules where no input requires gradient should always "
                                     "return None or None for all gradients.")


class TwoInTwoOut:
    @staticmethod
    def make(lib):
        class Pair(lib.nn.Module):
            def forward(self, a, scale, b):
                return a * b * scale, a + b

        return Pair()


def two_in_two_out(lib):
    module = TwoInTwoOut.make(lib)
    calls = []
    module.register_full_backward_pre_hook(lambda m, go: calls.append(("pre", shown(go))))
    module.register_full_backward_hook(lambda m, gi, go: calls.append(("full", shown(gi), shown(go))))
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, -1.0])
    product, total = module(a, 2.0, b)
    names = graph_names(product), graph_names(total)
    product.sum().backward()  # the second output gets no gradient
    return names, calls, shown(a.grad)


def test_several_inputs_and_outputs_with_a_number_and_a_constant(torch):
    result, error, _ = both(two_in_two_out, torch)
    assert error is None and result[1][1][1] == ([6.0, -2.0], None, [0.0, 0.0])  # b needs none: zeros, as in torch


def sequential(lib):
    model = lib.nn.Sequential(linear(lib), lib.nn.Tanh(), linear(lib, 2, 2))
    calls = []
    for index, layer in enumerate(model):
        layer.register_full_backward_pre_hook(lambda m, go, index=index: calls.append(("pre", index)))
        layer.register_full_backward_hook(lambda m, gi, go, index=index: calls.append(("full", index, shown(gi))))
    model.register_full_backward_hook(lambda m, gi, go: calls.append(("model", shown(gi))))
    x = inputs(lib)
    y = model(x)
    names = graph_names(y)
    y.pow(2).sum().backward()
    return names, calls, shown(x.grad)


def test_hooks_on_a_sequential_and_its_layers_run_in_torchs_order(torch):
    result, error, _ = both(sequential, torch)
    assert error is None and result[1][0] == ("pre", 2)


def removed(lib):
    layer = linear(lib)
    calls = []
    handle = layer.register_full_backward_hook(lambda m, gi, go: calls.append("full"))
    pre = layer.register_full_backward_pre_hook(lambda m, go: calls.append("pre"))
    layer(inputs(lib)).sum().backward()
    handle.remove()
    pre.remove()
    y = layer(inputs(lib))
    y.sum().backward()
    return calls, y.grad_fn.name()


def test_removed_hooks_leave_the_graph(torch):
    assert both(removed, torch)[0] == (["pre", "full"], "AddmmBackward0")


def prepend_order(lib):
    layer = linear(lib)
    calls = []
    layer.register_full_backward_hook(lambda m, gi, go: calls.append("first"))
    layer.register_full_backward_hook(lambda m, gi, go: calls.append("prepended"), prepend=True)
    layer(inputs(lib)).sum().backward()
    return calls


def test_prepend(torch):
    assert both(prepend_order, torch)[0] == ["prepended", "first"]


# -- the old register_backward_hook ---------------------------------------------------------------------------------
def old_hook(lib):
    layer = linear(lib)
    calls = []
    layer.register_backward_hook(lambda m, gi, go: calls.append((shown(gi), shown(go))))
    y = layer(inputs(lib))
    y.sum().backward()
    errors = []
    for register in ("register_full_backward_hook", "register_backward_hook"):
        try:
            getattr(layer, register)(lambda m, gi, go: None)
        except RuntimeError as error:
            errors.append(str(error))
    relu = lib.nn.ReLU()
    relu.register_backward_hook(lambda m, gi, go: calls.append(("relu", shown(gi))))
    hidden = inputs(lib) * 1
    relu(hidden).sum().backward()  # one node whose input is the module's input: no warning
    return calls, errors, y.grad_fn.name()


def test_old_backward_hook_is_a_post_hook_on_the_output_node(torch):
    result, error, caught = both(old_hook, torch)
    assert error is None and result[2] == "AddmmBackward0" and len(result[0][0][0]) == 3
    assert result[1] == ["Cannot use both regular backward hooks and full backward hooks on a single Module. Please "
                         "use only one of them."]
    assert [c[0] for c in caught] == ["FutureWarning"]


# -- forward hooks ------------------------------------------------------------------------------------------------
def forward_hooks(lib):
    layer = linear(lib)
    calls = []

    def pre_with_kwargs(module, args, kwargs):
        calls.append(("pre kwargs", sorted(kwargs)))
        return (args[0] * 2,), kwargs

    layer.register_forward_pre_hook(pre_with_kwargs, with_kwargs=True)
    layer.register_forward_pre_hook(lambda m, args: calls.append("pre first"), prepend=True)
    layer.register_forward_hook(lambda m, args, kwargs, out: calls.append(("kwargs", sorted(kwargs))) or out + 1,
                                with_kwargs=True)
    layer.register_forward_hook(lambda m, args, out: calls.append("plain"))
    layer.register_forward_hook(lambda m, args, out: calls.append("prepended"), prepend=True)
    y = layer(inputs(lib))
    return calls, shown(y)


def test_forward_hooks_with_kwargs_and_prepend(torch):
    result, error, _ = both(forward_hooks, torch)
    assert error is None and result[0][0] == "pre first"


def always_call(lib):
    class Failing(lib.nn.Module):
        def forward(self, x):
            raise ValueError("forward failed")

    module = Failing()
    calls = []
    module.register_forward_hook(lambda m, args, out: calls.append(("always", out)), always_call=True)
    module.register_forward_hook(lambda m, args, out: calls.append("not called"))

    def failing_hook(m, args, out):
        raise KeyError("hook failed")

    module.register_forward_hook(failing_hook, always_call=True)
    try:
        module(lib.ones(2))
    except ValueError as error:
        calls.append(str(error))
    return calls


def test_always_call_hooks_run_when_forward_raises(torch):
    result, error, caught = both(always_call, torch)
    assert result == [("always", None), "forward failed"]
    assert caught[0][1] == ("module forward hook with ``always_call=True`` raised an exception that was silenced as another "
                            "error was raised in forward: 'hook failed'")


def bad_pre_hook_return(lib):
    layer = linear(lib)
    layer.register_forward_pre_hook(lambda m, args, kwargs: args, with_kwargs=True)
    layer(inputs(lib))


def test_a_with_kwargs_pre_hook_must_return_args_and_kwargs(torch):
    result, error, _ = both(bad_pre_hook_return, torch)
    assert error[0] == "RuntimeError" and error[1].startswith("forward pre-hook must return None or a tuple")


# -- observing never calls them -------------------------------------------------------------------------------------
def test_showing_and_exporting_call_no_hook_of_the_new_kinds(tmp_path, capsys):
    pytest.importorskip("anywidget")
    from gradviz.snapshot import graph_of, observe_steps, trace_of
    from gradviz.widget import export_html, show

    calls = []
    model = gv.nn.Sequential(linear(gv), gv.nn.Tanh(), linear(gv, 2, 2))
    optimizer = gv.optim.SGD(model.parameters(), lr=0.1)

    def step_in_backward(parameter):
        calls.append("post-accumulate")
        optimizer.step()

    for parameter in model.parameters():
        parameter.register_post_accumulate_grad_hook(step_in_backward)
    model[0].register_full_backward_hook(lambda m, gi, go: calls.append("full") or (gi[0] * 2,))
    model[2].register_full_backward_pre_hook(lambda m, go: calls.append("pre") or (go[0] * 3,))
    model[1].register_backward_hook(lambda m, gi, go: calls.append("old"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with gv.autograd.detect_anomaly():
            x = inputs(gv)
            loss = model(x).pow(2).sum()
    before = [p.detach().tolist() for p in model.parameters()]
    widget = show(loss, model=model)
    widget.refresh()
    export_html(loss, tmp_path / "page.html", model=model)
    trace_of(loss, graph_of(loss, {"loss": loss}, model))
    list(observe_steps(loss))
    widget.close()
    assert calls == [] and [p.detach().tolist() for p in model.parameters()] == before
    assert x.grad is None and all(p.grad is None for p in model.parameters())
    loss.backward()
    assert sorted(set(calls)) == ["full", "old", "post-accumulate", "pre"] and calls.count("post-accumulate") == 4
