"""Memory: saved arrays are released by backward (unless retain_graph), graphs die with their
last reference, and long chains neither recurse nor crash. No timings here (see benchmarks/)."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import gradviz as gv


def saved_arrays(root) -> list:
    """Weak references to every array saved by any node reachable from ``root``."""
    references, seen, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for _, entry in node.saved_entries():
            data = getattr(entry, "data", None)
            if isinstance(data, np.ndarray):
                references.append(weakref.ref(data))
        stack.extend(next_node for next_node, _ in node.next_functions)
    return references


def build(x, w):
    """A small graph whose intermediate arrays are held only by saved tensors."""
    return ((x * w).exp() * w).tanh().sum()


def test_saved_arrays_are_released_by_backward():
    x = gv.randn(4, 3, requires_grad=True)
    w = gv.randn(4, 3, requires_grad=True)
    loss = build(x, w)
    references = saved_arrays(loss.grad_fn)
    intermediate = [r for r in references if r() is not x._data and r() is not w._data]
    assert len(intermediate) >= 2 and all(r() is not None for r in intermediate)
    loss.backward()
    gc.collect()
    assert all(r() is None for r in intermediate)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()


def test_retain_graph_keeps_saved_arrays_until_the_last_backward():
    x = gv.randn(4, 3, requires_grad=True)
    w = gv.randn(4, 3, requires_grad=True)
    loss = build(x, w)
    intermediate = [r for r in saved_arrays(loss.grad_fn) if r() is not x._data and r() is not w._data]
    loss.backward(retain_graph=True)
    gc.collect()
    assert all(r() is not None for r in intermediate)
    first = x.grad.detach().numpy().copy()
    loss.backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), 2 * first, rtol=1e-6)
    gc.collect()
    assert all(r() is None for r in intermediate)


def test_graph_is_freed_by_reference_counting_alone():
    """No reference cycles: a training step's graph dies when its loss does, even with gc off."""
    model = gv.nn.Sequential(gv.nn.Linear(2, 4), gv.nn.ReLU(), gv.nn.Linear(4, 1))
    optimizer = gv.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = gv.randn(8, 2), gv.rand(8, 1)
    enabled = gc.isenabled()
    gc.disable()
    try:
        loss = gv.nn.functional.binary_cross_entropy_with_logits(model(x), y)
        node = weakref.ref(loss.grad_fn)
        arrays = saved_arrays(loss.grad_fn)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        del loss
        assert node() is None
        assert all(r() is None or r() is x._data or r() is y._data or any(r() is p._data for p in model.parameters())
                   for r in arrays)
    finally:
        if enabled:
            gc.enable()


def test_saved_tensor_of_parameter_does_not_keep_graph_after_step():
    model = gv.nn.Linear(3, 1)
    optimizer = gv.optim.SGD(model.parameters(), lr=0.1)
    references = []
    for _ in range(3):
        loss = model(gv.ones(2, 3)).sum()
        references.append(weakref.ref(loss.grad_fn))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    del loss
    assert all(r() is None for r in references)


def test_hundred_thousand_op_chain_builds_backwards_and_deletes():
    x = gv.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(50_000):
        y = y * 1.00001
        y = y + 0.0001
    y.backward()
    assert x.grad.item() == pytest.approx(1.00001 ** 50_000, rel=1e-3)
    node = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert node() is None


def test_long_chain_steps_and_graph_snapshot_are_iterative():
    x = gv.tensor(0.5, requires_grad=True)
    y = x
    for _ in range(5_000):
        y = y.tanh()
    steps = list(gv.autograd.backward_steps(y, retain_graph=True))
    assert len(steps) == 5_001 and steps[-1].name == "torch::autograd::AccumulateGrad"
