"""The two loops of a plain ``backward()`` give the same gradients, and the cheap in-place updates
write PyTorch's numbers.

A graph with no user hook runs ``GraphTask._execute_unhooked`` (bare gradients, ``heapq``,
AccumulateGrad run as soon as ready); one with a hook anywhere runs ``_execute_hooked`` (the
libstdc++ heap, whose ties hooks can see). A no-op hook switches one graph from the first to the
second, so the same program can be run both ways and compared bit for bit, and against torch.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradviz
from gradviz.autograd.engine import GraphTask, make_grads
from gradviz.autograd.function import gradient_edge

from programs import random_programs, run_program


def _task(loss) -> GraphTask:
    return GraphTask([gradient_edge(loss)], make_grads([loss], [None]), keep_graph=True)


def _graph():
    x = gradviz.tensor([1.0, -2.0, 0.5], requires_grad=True)
    w = gradviz.tensor(0.75, requires_grad=True)
    hidden = (x * w).tanh()
    return x, w, hidden, (hidden * hidden + x).sum()


# -- which loop a graph takes ---------------------------------------------------------------------------
def test_a_graph_without_hooks_takes_the_unhooked_loop():
    assert _task(_graph()[-1]).hooked is False


@pytest.mark.parametrize("hook", ["tensor hook", "leaf hook", "retain_grad", "node hook", "node prehook"])
def test_any_hook_in_the_graph_takes_the_hooked_loop(hook):
    x, w, hidden, loss = _graph()
    if hook == "tensor hook":
        hidden.register_hook(lambda grad: None)
    elif hook == "leaf hook":
        w.register_hook(lambda grad: None)
    elif hook == "retain_grad":
        hidden.retain_grad()
    elif hook == "node hook":
        hidden.grad_fn.register_hook(lambda grad_inputs, grad_outputs: None)
    else:
        hidden.grad_fn.register_prehook(lambda grad_outputs: None)
    assert _task(loss).hooked is True


def test_a_leaf_hook_made_before_its_accumulator_is_seen():
    w = gradviz.tensor(2.0, requires_grad=True)
    w.register_hook(lambda grad: grad * 3)
    loss = w * w
    assert _task(loss).hooked is True
    loss.backward()
    assert w.grad.item() == 12.0


# -- the same gradients either way -----------------------------------------------------------------------
def _leaves(lib, seed):
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.uniform(-1, 1, (3,)).astype(np.float32), requires_grad=True)
    y = lib.tensor(rng.uniform(-1, 1, (3,)).astype(np.float32), requires_grad=True)
    return x, y


@settings(max_examples=40, deadline=None)
@given(program=random_programs(), seed=st.integers(0, 2**16))
def test_unhooked_and_hooked_loops_give_identical_gradients(program, seed):
    grads = []
    for hooked in (False, True):
        x, y = _leaves(gradviz, seed)
        loss = run_program(gradviz, program, x, y)
        if hooked:  # a hook that changes nothing, on the root: the whole pass takes the hooked loop
            loss.grad_fn.register_prehook(lambda grad_outputs: None)
        loss.backward()
        grads.append([None if t.grad is None else t.grad.numpy().copy() for t in (x, y)])
    for plain, with_hook in zip(*grads):
        if plain is None:
            assert with_hook is None
        else:
            np.testing.assert_array_equal(plain, with_hook)


@settings(max_examples=30, deadline=None)
@given(program=random_programs(), seed=st.integers(0, 2**16))
def test_unhooked_loop_matches_torch(program, seed):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, gradviz):
        x, y = _leaves(lib, seed)
        run_program(lib, program, x, y).backward()
        results.append([None if t.grad is None else t.grad.detach().numpy() for t in (x, y)])
    for expected, actual in zip(*results):
        if expected is None:
            assert actual is None
        else:
            np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def _scalar_network_grads(lib, hooked=False):
    """A micrograd-style network of 0-d tensors: many AccumulateGrads ready at once, gradients summed
    from several uses, the shape the unhooked loop is written for."""
    rng = np.random.default_rng(3)
    weights = [[lib.tensor(float(v), requires_grad=True) for v in rng.uniform(-1, 1, 3)] for _ in range(3)]
    inputs = [lib.tensor(float(v)) for v in rng.uniform(-1, 1, 3)]
    total = lib.tensor(0.0)
    for row in weights:
        neuron = row[0] * inputs[0]
        for w, v in zip(row[1:], inputs[1:]):
            neuron = neuron + w * v
        total = total + neuron.tanh() * row[0]  # row[0] used twice: its gradients are summed
    loss = total ** 2
    if hooked:
        loss.grad_fn.register_prehook(lambda grad_outputs: None)
    loss.backward()
    return [w.grad.item() for row in weights for w in row]


def test_scalar_network_same_either_way_and_as_torch():
    assert _scalar_network_grads(gradviz) == _scalar_network_grads(gradviz, hooked=True)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(_scalar_network_grads(gradviz), _scalar_network_grads(torch), rtol=1e-6)


def test_several_roots_a_custom_function_and_a_cut_path_match_torch():
    """GraphRoot (two tensors at once), a custom Function with two outputs (an InputBuffer of two
    slots in the unhooked loop) whose backward returns None for one input (an undefined gradient
    flows on)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, gradviz):
        class Split(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 2, a * 3

            @staticmethod
            def backward(ctx, grad_first, grad_second):
                return grad_first * 2 + grad_second * 3, None

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([0.5, 0.25], requires_grad=True)
        first, second = Split.apply(a * b, b)
        lib.autograd.backward([(first * first).sum(), second.sum()])
        results.append((a.grad.tolist(), b.grad.tolist()))
    assert results[0] == results[1]


def test_retain_graph_twice_and_the_freed_error_as_before():
    x = gradviz.tensor(1.5, requires_grad=True)
    loss = (x * x).exp()
    loss.backward(retain_graph=True)
    once = x.grad.item()
    loss.backward()
    assert x.grad.item() == 2 * once
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


def test_modified_saved_tensor_still_raises_in_the_unhooked_loop():
    x = gradviz.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    loss = (y * y).sum()
    with gradviz.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


# -- in-place updates under no_grad --------------------------------------------------------------------------
UPDATES = ["p -= lr * g", "p += lr * g", "p *= g", "p /= g", "p -= 0.1", "p *= 0.3", "p /= 3.0",
           "p.sub_(g, alpha=0.2)", "p.add_(g, alpha=-1.5)"]


def _update(lib, update, shape, dtype, grad_mode):
    """Run ``update`` on a parameter-like tensor; its bytes, dtype name and version increase."""
    rng = np.random.default_rng(7)
    p = lib.tensor(rng.uniform(0.5, 2, shape).astype(dtype), requires_grad=not grad_mode)
    g = lib.tensor(rng.uniform(0.5, 2, shape).astype(dtype))
    lr = lib.tensor(np.array(0.01, dtype=dtype))
    before, identity = p._version, id(p)
    scope = {"p": p, "g": g, "lr": lr}
    with lib.set_grad_enabled(grad_mode):
        exec(update, scope)
    assert scope["p"] is p and id(p) == identity
    return p.detach().numpy().copy(), str(p.dtype).split(".")[-1], p._version - before


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape", [(), (3,)])
@pytest.mark.parametrize("update", UPDATES)
def test_in_place_updates_under_no_grad(update, shape, dtype):
    """The no_grad shortcut (a parameter's update) writes the same bits as the general path (grad
    mode on, nothing requiring grad: the backend's ufunc with out=), and torch's numbers."""
    fast = _update(gradviz, update, shape, dtype, grad_mode=False)
    general = _update(gradviz, update, shape, dtype, grad_mode=True)
    assert fast[0].tobytes() == general[0].tobytes() and fast[1:] == general[1:] == (dtype, 1)
    torch = pytest.importorskip("torch")
    expected = _update(torch, update, shape, dtype, grad_mode=False)
    assert expected[1:] == fast[1:]
    # torch rounds p + alpha * g once (fused) and multiplies float16 by the double 0.3 in float32:
    # gradviz, before and after this shortcut alike, can differ from it in the last bit there
    np.testing.assert_allclose(fast[0], expected[0], rtol=1e-3 if dtype == "float16" else 1e-6)


def test_in_place_update_of_a_view_changes_its_base():
    base = gradviz.tensor([1.0, 2.0, 3.0])
    view = base[1]
    view -= 0.5
    view *= gradviz.tensor(4.0)
    assert base.tolist() == [1.0, 6.0, 3.0]
    assert base._version == 2 and view._version == 2


def test_in_place_operator_with_an_unsupported_operand_is_a_type_error():
    p = gradviz.tensor(1.0)
    with pytest.raises(TypeError):
        p -= "a"


def test_leaves_as_roots_match_torch():
    """A leaf as the one root (its AccumulateGrad is the first node popped) and leaves among several
    roots (GraphRoot sends to their AccumulateGrads, which run as soon as they are ready)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (torch, gradviz):
        x = lib.tensor(2.0, requires_grad=True)
        x.backward()
        y = lib.tensor([1.0, 2.0], requires_grad=True)
        lib.autograd.backward([x, (y * 3).sum(), y], [lib.tensor(5.0), None, lib.tensor([1.0, 1.0])])
        results.append((x.grad.item(), y.grad.tolist()))
    assert results[0] == results[1] == (6.0, [4.0, 4.0])


@pytest.mark.parametrize("update", ["t += 1.0", "t -= other", "t.mul_(2.0)"])
def test_no_grad_update_of_an_inference_tensor_is_refused_as_in_torch(update):
    """The no_grad shortcut used to skip this check for a float or same-dtype operand."""
    pytest.importorskip("torch")
    from parity import assert_same_error

    assert_same_error(f"""
with torch.inference_mode():
    t = torch.ones(2)
    other = torch.ones(2)
with torch.no_grad():
    {update}
""")


@pytest.mark.parametrize("shape", [(), (1,)], ids=["0-d", "1-d"])
def test_no_grad_update_that_overflows_warns_nothing_as_in_torch(shape):
    """``p += 3e38`` on a float32 parameter: inf, and no numpy RuntimeWarning (torch prints nothing) on
    the 0-d shortcut as on the array path."""
    import warnings

    p = gradviz.full(shape, 3e38, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with gradviz.no_grad():
            p += 3e38
            p *= 10.0
    assert np.isinf(p.detach().numpy()).all()
