"""AddBackward0 with a broadcast bias (``x @ W + b``) on its fast path (``arithmetic._bias_grad``,
``numpy_backend.sum_leading``): the same arrays as ``_binary_grads`` (``sum_to`` through the backend's
``sum``), bits, dtype and strides, in every float dtype and gradient layout; every other add declines it;
and the gradients against torch."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradviz as gv
from gradviz.backends import numpy_backend as nb
from gradviz.backends.quiet import silenced
from gradviz.ops.arithmetic import _bias_grad, _binary_grads

from test_backward_arrays import arrays, layout as laid_out  # noqa: E402  (random arrays and their layouts)

FLOATS = [np.float16, np.float32, np.float64]


def same_array(got, expected):
    assert type(got) is type(expected) is np.ndarray
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.strides == expected.strides
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(FLOATS), st.sampled_from([(64, 16), (1, 5), (7, 1), (3, 4, 2), (0, 3), (2, 0)]),
       st.sampled_from("CFT"), st.booleans(), st.data())
def test_bias_gradient_matches_the_general_path(dtype, shape, grad_layout, silenced_pass, data):
    x = gv.tensor(arrays(dtype, shape, data) if 0 not in shape else np.zeros(shape, dtype), requires_grad=True)
    b = gv.tensor(arrays(dtype, shape[1:], data) if 0 not in shape else np.zeros(shape[1:], dtype), requires_grad=True)
    node = (x + b).grad_fn
    raw = arrays(dtype, shape, data) if 0 not in shape else np.zeros(shape, dtype)
    grad = laid_out(raw, grad_layout) if len(shape) == 2 else raw
    if silenced_pass:  # inside a plain backward pass numpy's warnings are already off
        with silenced():
            got = node.backward(grad)
            expected = _binary_grads(node, grad, grad)
    else:  # called alone: it silences itself (an overflowing float16 sum says nothing)
        with np.errstate(all="raise"):
            got = node.backward(grad)
        with silenced():
            expected = _binary_grads(node, grad, grad)
    assert got[0] is grad
    same_array(got[1], expected[1])


@pytest.mark.parametrize("case", ["same shape", "scalar", "bias first", "stretched", "mixed dtypes", "alpha",
                                  "one needs", "middle dim"])
def test_other_adds_decline_the_bias_path(case):
    """Adds that are not ``x + b`` with a bias of x's last dims, in one dtype, with both gradients wanted:
    ``_bias_grad`` gives None (the general path runs), and the node's answer is the general path's."""
    x = gv.ones(4, 3, requires_grad=True)
    other = {"same shape": lambda: gv.ones(4, 3, requires_grad=True), "scalar": lambda: gv.ones((), requires_grad=True),
             "bias first": lambda: gv.ones(3, requires_grad=True), "stretched": lambda: gv.ones(1, 3, requires_grad=True),
             "mixed dtypes": lambda: gv.ones(3, dtype=gv.float64, requires_grad=True),
             "alpha": lambda: gv.ones(3, requires_grad=True), "one needs": lambda: gv.ones(3),
             "middle dim": lambda: gv.ones(4, 1, requires_grad=True)}[case]()
    if case == "bias first":
        out = other + x
    elif case == "alpha":
        out = gv.add(x, other, alpha=2)
    else:
        out = x + other
    node = out.grad_fn
    grad = np.arange(12, dtype=out._data.dtype).reshape(4, 3)
    with silenced():
        if case not in ("alpha", "one needs"):
            assert _bias_grad(node, grad) is None
        got = node.backward(grad)
    assert len(got) == 2


def test_sum_leading_is_the_backends_sum():
    grad = np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    same_array(nb.sum_leading(grad), nb.sum(grad, (0,), keepdims=False))
    with np.errstate(all="raise"):  # silenced on its own: float16 overflow gives inf, no warning
        assert nb.sum_leading(np.full((3, 2), 60000, np.float16))[0] == np.inf


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bias_gradients_as_torch(torch, dtype):
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((9, 4)).astype(dtype)
    w0 = rng.standard_normal((4, 6)).astype(dtype)
    b0 = rng.standard_normal(6).astype(dtype)
    results = []
    for lib in (gv, torch):
        w, b = lib.tensor(w0, requires_grad=True), lib.tensor(b0, requires_grad=True)
        out = lib.tanh(lib.tensor(x0) @ w + b)
        names = (out.grad_fn.next_functions[0][0].name(),
                 [fn.name() for fn, _ in out.grad_fn.next_functions[0][0].next_functions])
        (out * out).sum().backward()
        results.append((names, w.grad.numpy().copy(), b.grad.numpy().copy(), b.grad.stride(), b.grad._version))
    (gv_names, gv_w, gv_b, gv_stride, gv_version), (names, w, b, stride, version) = results
    assert gv_names == names and gv_stride == stride and gv_version == version
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(gv_w, w, rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(gv_b, b, rtol=tolerance, atol=tolerance)
