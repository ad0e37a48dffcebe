"""The raw-tensor lesson step (``x @ W + b``, relu, tanh, BCE with logits, ``p -= lr * p.grad``) on its
faster paths: the same bits, layouts, saved entries and errors as the general paths, and as torch.

* ``MmBackward0`` on the numpy backend computes both products in one backend call (``mm_grads``);
  held here to the general path (``matmul`` of a ``permute``d matrix, then ``to_input``) in every
  float dtype, mixed dtypes, and the layouts an input or a gradient can come in.
* ``sum_to`` sums a bias's gradient (one new leading dim) in one call: the general path's bits.
* ``BinaryCrossEntropyWithLogitsBackward0`` without weights computes its gradient in one call
  (``bce_with_logits_grad``): the general path's bits (``div``, ``sigmoid``, ``sub``, ``mul``), its
  entries written into ``_packed`` as ``ctx.save`` wrote them.
* ``copy_for_grad`` copies a leaf's first ``.grad`` with ``ndarray.copy(order="K")``: ``np.array``'s copy.
* The whole step against torch: losses and gradients, ``.grad`` strides, version counters, names.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradviz as gv
from gradviz.backends import numpy_backend as nb
from gradviz.backends.quiet import silenced
from gradviz.ops._util import meta, sum_to, to_input
from gradviz.ops.linalg import _transpose
from gradviz.ops.loss import _unreduce

from test_backward_arrays import arrays, layout as laid_out  # noqa: E402  (random arrays and their layouts)

FLOATS = [np.float16, np.float32, np.float64]


def same_array(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.strides == expected.strides
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()


# -- MmBackward0 ---------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(st.sampled_from(FLOATS), st.integers(1, 9), st.integers(1, 9), st.integers(1, 9),
       st.sampled_from("CFT"), st.sampled_from("CFT"), st.sampled_from("CFT"), st.booleans(), st.booleans(), st.data())
def test_mm_backward_matches_the_general_path(dtype, n, m, p, layout_a, layout_b, layout_grad, needs_a, needs_b, data):
    """(mm refuses two dtypes, as PyTorch does: tests/test_dtype_refusals.py)"""
    if not (needs_a or needs_b):
        needs_a = True
    a = laid_out(arrays(dtype, (n, m), data), layout_a)
    b = laid_out(arrays(dtype, (m, p), data), layout_b)
    A = gv.tensor(a, requires_grad=needs_a)
    B = gv.tensor(b, requires_grad=needs_b)
    out = A.mm(B)
    grad = laid_out(arrays(out._data.dtype, (n, p), data), layout_grad)
    node = out.grad_fn
    with silenced():  # as in a backward pass
        got = node.backward(grad)
        expected = (to_input(nb, nb.matmul(grad, _transpose(nb, B._data)), meta(A)) if needs_a else None,
                    to_input(nb, nb.matmul(_transpose(nb, A._data), grad), meta(B)) if needs_b else None)
    for g, e in zip(got, expected):
        assert (g is None) == (e is None)
        if g is not None:
            same_array(g, e)


def test_mm_backward_keeps_its_errors(torch):
    """A saved matrix changed in place, and a freed graph: torch's errors, from the fast path."""
    for lib in (gv, torch):
        a = lib.ones(3, 2, requires_grad=True)
        b = lib.ones(2, 4, requires_grad=True)
        with lib.no_grad():
            a_view = a * 1.0
        a_view.requires_grad_()
        out = a_view.mm(b)
        with lib.no_grad():
            a_view.add_(1.0)
        with pytest.raises(RuntimeError) as caught:
            out.sum().backward()
        message = str(caught.value)
        if lib is gv:
            gv_message = message
    assert gv_message == message
    messages = []
    for lib in (gv, torch):
        a = lib.ones(3, 2, requires_grad=True)
        out = a.mm(lib.ones(2, 4, requires_grad=True)).sum()
        out.backward(retain_graph=False)
        with pytest.raises(RuntimeError) as caught:
            out.backward()
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


# -- a bias's gradient ---------------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(st.sampled_from(FLOATS), st.integers(1, 70), st.integers(1, 20), st.sampled_from("CFT"), st.data())
def test_bias_sum_matches_the_general_path(dtype, rows, width, layout, data):
    grad = laid_out(arrays(dtype, (rows, width), data), layout)
    with silenced():
        got = sum_to(nb, grad, (width,))
        summed = nb.sum(grad, (0,), keepdims=True)  # the general path: keepdims, then the reshape
        expected = nb.reshape(summed, (width,))
    same_array(got, expected)


# -- BCE with logits ---------------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.sampled_from([np.float32, np.float64]), st.sampled_from([(64, 1), (5,), (3, 4), (2, 3, 2)]),
       st.sampled_from([1, 2]), st.data())
def test_bce_with_logits_grad_matches_the_general_path(dtype, shape, reduction, data):
    x = arrays(dtype, shape, data)
    t = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).uniform(0, 1, shape).astype(dtype)
    grad = np.asarray(arrays(dtype, (), data))
    with silenced():
        got = nb.bce_with_logits_grad(grad, x, t, reduction)
        expected = nb.mul(_unreduce(nb, grad, shape, reduction), nb.sub(nb.sigmoid(x), t))
    same_array(got, expected)


def test_bce_with_logits_grad_declines_what_it_does_not_cover():
    x = np.ones((4, 2), np.float32)
    grad = np.asarray(np.float32(1.0))
    assert nb.bce_with_logits_grad(grad, x, x.astype(np.float64), 1) is None  # mixed dtypes
    assert nb.bce_with_logits_grad(np.ones((4, 2), np.float32), x, x, 0) is None  # reduction 'none'
    assert nb.bce_with_logits_grad(grad, x.T, x.T, 1) is None  # not row-major
    assert nb.bce_with_logits_grad(grad, x.astype(np.float16), x.astype(np.float16), 1) is None


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [None, "weight", "pos_weight"])
def test_bce_with_logits_node_as_torch(torch, reduction, weighted):
    """Saved entries, names and gradients of the loss node, with and without weights, against torch."""
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((6, 2)).astype(np.float32) * 4
    t0 = (rng.uniform(size=(6, 2)) > 0.5).astype(np.float32)
    w0 = rng.uniform(0.5, 2.0, (2,)).astype(np.float32)
    results = []
    for lib in (gv, torch):
        x = lib.tensor(x0, requires_grad=True)
        kwargs = {} if weighted is None else {weighted: lib.tensor(w0)}
        loss = lib.nn.functional.binary_cross_entropy_with_logits(x, lib.tensor(t0), reduction=reduction, **kwargs)
        node = loss.grad_fn
        saved = (node.name(), node._saved_reduction, node._saved_weight is None, node._saved_pos_weight is None,
                 node._saved_self.detach().numpy().tobytes(), node._saved_target.detach().numpy().tobytes())
        loss.backward(lib.ones_like(loss))
        results.append((saved, loss.detach().numpy(), x.grad.numpy(), x.grad.stride()))
    (gv_saved, gv_loss, gv_grad, gv_strides), (saved, loss, grad, strides) = results
    assert gv_saved == saved and gv_strides == strides
    np.testing.assert_allclose(gv_loss, loss, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gv_grad, grad, rtol=1e-6, atol=1e-8)


# -- the whole step against torch -----------------------------------------------------------------------------
def raw_step(lib, params, x, y, lr=0.1):
    w1, b1, w2, b2, w3, b3 = params
    hidden = lib.relu(x @ w1 + b1)
    hidden = lib.tanh(hidden @ w2 + b2)
    loss = lib.nn.functional.binary_cross_entropy_with_logits(hidden @ w3 + b3, y)
    names = [loss.grad_fn.name()] + [fn.name() for fn, _ in loss.grad_fn.next_functions if fn is not None]
    loss.backward()
    grads = [(p.grad.numpy().copy(), p.grad.stride()) for p in params]
    with lib.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None
    return float(loss.detach()), names, grads, [p._version for p in params]


@pytest.mark.parametrize("sizes,points", [((2, 16, 16, 1), 64), ((3, 5, 4, 1), 7)])
def test_raw_steps_as_torch(torch, sizes, points):
    rng = np.random.default_rng(0)
    shapes = [s for fan_in, fan_out in zip(sizes[:-1], sizes[1:]) for s in ((fan_in, fan_out), (fan_out,))]
    start = [rng.uniform(-0.5, 0.5, shape).astype(np.float32) for shape in shapes]
    x0 = rng.standard_normal((points, sizes[0])).astype(np.float32)
    y0 = (x0[:, :1] > 0).astype(np.float32)
    runs = []
    for lib in (gv, torch):
        params = [lib.tensor(p.copy(), requires_grad=True) for p in start]
        x, y = lib.tensor(x0), lib.tensor(y0)
        runs.append([raw_step(lib, params, x, y) for _ in range(5)] + [[p.detach().numpy() for p in params]])
    for (gv_loss, gv_names, gv_grads, gv_versions), (loss, names, grads, versions) in zip(runs[0][:-1], runs[1][:-1]):
        assert gv_names == names and gv_versions == versions
        assert abs(gv_loss - loss) <= 1e-6 * max(1.0, abs(loss))
        for (gv_grad, gv_stride), (grad, stride) in zip(gv_grads, grads):
            assert gv_stride == stride
            np.testing.assert_allclose(gv_grad, grad, rtol=1e-4, atol=1e-6)
    for gv_param, param in zip(runs[0][-1], runs[1][-1]):
        np.testing.assert_allclose(gv_param, param, rtol=1e-4, atol=1e-6)


# -- a leaf's first .grad ------------------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(st.sampled_from(FLOATS), st.integers(1, 6), st.integers(1, 6), st.sampled_from(["C", "F", "T", "gaps", "row"]),
       st.data())
def test_first_grad_copy_is_numpys_plain_copy(dtype, rows, cols, kind, data):
    """``copy_for_grad`` copies a gradient laid out like its leaf with ``ndarray.copy(order="K")`` where it used
    ``np.array(value, copy=True)``: the same layout and bits, in any layout (then checked against the leaf's)."""
    base = arrays(dtype, (rows * 2, cols * 2), data)
    value = {"C": lambda: np.ascontiguousarray(base[:rows, :cols]), "F": lambda: np.asfortranarray(base[:rows, :cols]),
             "T": lambda: laid_out(base[:rows, :cols], "T"), "gaps": lambda: base[::2, ::2],
             "row": lambda: base[:1, :cols]}[kind]()
    same_array(value.copy(order="K"), np.array(value, copy=True))
    for like in (value, np.array(value, copy=True)):
        got = nb.copy_for_grad(value, like)
        assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(value).tobytes()
        assert not np.shares_memory(got, value)
