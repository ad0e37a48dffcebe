"""A leaf's first ``.grad`` taken without a copy in the plain backward pass (``GraphTask._accumulate_owned``).

PyTorch's AccumulateGrad steals a gradient that nothing else refers to (``use_count() <= 1``) and that
obeys the leaf's layout contract; any other it copies. gradviz's unhooked loop does the same for an array
held by nothing but the formula's result tuple and the loop (``engine._HANDED_ON_REFS``): no other edge,
no view, no user's code. These tests hold that path to the copying one (the hooked loop, which a no-op
pre-hook on the loss forces) bit for bit, strides, dtype and version included, over random array graphs
in every float dtype and layout, and check that no ``.grad`` ever shares memory with another ``.grad``,
with a leaf, or with anything a user's Function keeps; and the gradients and strides against torch.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradviz as gv
from gradviz.autograd import engine

from test_backward_arrays import arrays, layout as laid_out  # noqa: E402  (random arrays and their layouts)

FLOATS = [np.float32, np.float64]


def same_array(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.strides == expected.strides
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()


def build(lib, start, x0, shape_ops, loss_kind):
    """A small array graph of the lesson's ops: ``x @ W + b``, an activation, W used again, a loss."""
    w, b, v = (lib.tensor(s.copy(order="K"), requires_grad=True) if isinstance(s, np.ndarray) else s for s in start)
    x = lib.tensor(x0)
    h = x @ w + b
    for op in shape_ops:
        if op == "relu":
            h = lib.relu(h)
        elif op == "tanh":
            h = lib.tanh(h)
        elif op == "twice":  # W used a second time: its two gradients are summed
            h = h + x @ w
        elif op == "scale":  # v's gradient: a product with a broadcast
            h = h * v
    if loss_kind == "mean":
        loss = h.mean()
    elif loss_kind == "sum":
        loss = (h * h).sum()
    else:
        loss = lib.nn.functional.binary_cross_entropy_with_logits(h, lib.ones_like(h))
    return [w, b, v], loss


def leaves_and_grads(params, hooked):
    arrays_seen = [p._data for p in params if p is not None] + [p.grad._data for p in params if p is not None
                                                                and p.grad is not None]
    for i, first in enumerate(arrays_seen):
        for second in arrays_seen[i + 1:]:
            assert not np.shares_memory(first, second)
    return [(p.grad._data, p.grad._version) if p.grad is not None else None for p in params]


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(FLOATS), st.integers(1, 7), st.integers(1, 6), st.integers(1, 5),
       st.sampled_from("CFT"), st.sampled_from("CFT"),
       st.lists(st.sampled_from(["relu", "tanh", "twice", "scale"]), max_size=4),
       st.sampled_from(["mean", "sum", "bce"]), st.booleans(), st.data())
def test_owned_first_grads_are_the_copied_ones(dtype, points, fan_in, fan_out, w_layout, x_layout, shape_ops,
                                               loss_kind, second_pass, data):
    start = [laid_out(arrays(dtype, (fan_in, fan_out), data), w_layout), arrays(dtype, (fan_out,), data),
             arrays(dtype, (fan_out,), data)]
    x0 = laid_out(arrays(dtype, (points, fan_in), data), x_layout)
    runs = []
    for hooked in (False, True):
        params, loss = build(gv, start, x0, shape_ops, loss_kind)
        if hooked:  # any user's hook takes the hooked loop, which copies every first .grad
            loss.grad_fn.register_prehook(lambda grads: None)
        loss.backward(retain_graph=second_pass)
        got = [leaves_and_grads(params, hooked)]
        if second_pass:  # the .grad now exists: added into in place
            loss.backward()
            got.append(leaves_and_grads(params, hooked))
        runs.append(got)
    for owned, copied in zip(*runs):
        for a, b in zip(owned, copied):
            assert (a is None) == (b is None)
            if a is not None:
                same_array(a[0], b[0])
                assert a[1] == b[1]


def test_the_lesson_step_takes_every_first_grad_without_a_copy(monkeypatch):
    """The raw-tensor lesson step's six leaves each take the array their formula made (the path this file
    holds to the copying one); the loop's count of references is the interpreter's own."""
    taken = []
    owned = engine.GraphTask._accumulate_owned

    def spy(task, node, grad):
        taken.append(grad)
        return owned(task, node, grad)

    monkeypatch.setattr(engine.GraphTask, "_accumulate_owned", spy)
    rng = np.random.default_rng(0)
    params = [gv.tensor(rng.uniform(-1, 1, shape).astype(np.float32), requires_grad=True)
              for shape in ((2, 16), (16,), (16, 16), (16,), (16, 1), (1,))]
    w1, b1, w2, b2, w3, b3 = params
    x = gv.tensor(rng.standard_normal((64, 2)).astype(np.float32))
    hidden = gv.tanh(gv.relu(x @ w1 + b1) @ w2 + b2)
    loss = gv.nn.functional.binary_cross_entropy_with_logits(hidden @ w3 + b3, gv.ones(64, 1))
    loss.backward()
    assert len(taken) == 6
    assert sorted(id(p.grad._data) for p in params) == sorted(id(g) for g in taken)


def test_one_gradient_sent_to_two_leaves_is_copied():
    """``a + b``: AddBackward0 hands one array to both leaves; neither takes it, as in PyTorch (use_count 2)."""
    a = gv.ones(3, 4, requires_grad=True)
    b = gv.ones(3, 4, requires_grad=True)
    ((a + b) * 2.0).sum().backward()
    assert not np.shares_memory(a.grad._data, b.grad._data)
    a.grad._data[0, 0] = 7.0
    assert b.grad._data[0, 0] == 2.0


def test_a_gradient_sent_to_a_leaf_and_a_node_is_copied():
    """The array one edge gives a leaf is the one another edge gives a node: the leaf's ``.grad`` owns a copy."""
    a = gv.ones(3, 4, requires_grad=True)
    c = gv.ones(3, 4, requires_grad=True)
    mid = c * 3.0
    (a + mid).tanh().sum().backward()
    y = np.tanh(np.full((3, 4), 4.0, np.float32))
    local = np.ones((3, 4), np.float32) * (1 - y * y)
    assert np.array_equal(a.grad._data, local) and np.array_equal(c.grad._data, local * np.float32(3.0))
    assert not np.shares_memory(a.grad._data, c.grad._data)


def test_a_gradient_a_users_function_keeps_is_copied():
    """A user's Function that returns an array it also keeps: the leaf's ``.grad`` never aliases it."""
    kept = {}

    class Keep(gv.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):
            kept["grad"] = result = grad * 2.0
            return result

    x = gv.ones(2, 3, requires_grad=True)
    Keep.apply(x).sum().backward()
    assert not np.shares_memory(x.grad._data, kept["grad"]._data)
    assert np.array_equal(x.grad._data, np.full((2, 3), 2.0, np.float32))


def test_a_view_gradient_is_copied():
    """A gradient that is a view (of the starting gradient, of a sum's broadcast) is never taken as it is."""
    a = gv.ones(4, requires_grad=True)
    a.sum().backward()
    assert a.grad._data.base is None and a.grad._data.flags.writeable
    b = gv.ones(2, 3, requires_grad=True)
    b.reshape(6).sum().backward()
    assert b.grad._data.base is None and b.grad._data.flags.writeable and b.grad.stride() == (3, 1)


@pytest.mark.parametrize("w_layout", ["C", "F", "T"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_first_grads_as_torch(torch, w_layout, dtype):
    """Gradients, ``.grad`` strides and versions against torch, for leaves in each layout."""
    rng = np.random.default_rng(1)
    w0 = laid_out(rng.standard_normal((3, 5)).astype(dtype), w_layout)
    b0 = rng.standard_normal(5).astype(dtype)
    v0 = rng.standard_normal(5).astype(dtype)
    x0 = rng.standard_normal((7, 3)).astype(dtype)
    results = []
    for lib in (gv, torch):
        to = (lambda a: lib.from_numpy(a.copy(order="K")))
        w, b, v = (to(s).requires_grad_() for s in (w0, b0, v0))
        h = lib.tanh(lib.relu(to(x0) @ w + b) * v)
        lib.nn.functional.binary_cross_entropy_with_logits(h, lib.ones_like(h)).backward()
        results.append([(p.grad.numpy().copy(), p.grad.stride(), p.grad._version) for p in (w, b, v)])
    for (mine, my_stride, my_version), (theirs, stride, version) in zip(*results):
        assert my_stride == stride and my_version == version
        np.testing.assert_allclose(mine, theirs, rtol=1e-5 if dtype is np.float32 else 1e-12, atol=1e-7)
