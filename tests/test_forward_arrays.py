"""The forward of the raw-tensor lesson step's array ops on their leaner paths (``x @ W``, ``h + b`` and the
other binary operators, ``relu``, ``tanh``/``exp``, BCE with logits): the same bits, layouts, nodes, saved
entries, versions and errors as the computations they replace, no numpy warning, and torch's behaviour.

* ``MmBackward0.forward`` reads each array attribute once and multiplies with ``ndarray.dot`` under one
  inline silencing: ``np.dot``'s bits (silenced) in every float dtype and layout; torch's saved sizes and
  strides; an overflow warns of nothing.
* ``_binary_operands`` reads shapes and dtypes once and checks a broadcast inline; Add/Sub/Mul/Div test
  0-d-ness before calling ``_scalar_result``: the ufunc's bits and the same ``metas`` for arrays (broadcast
  either way, mixed dtypes), PyTorch's error for shapes that do not broadcast.
* ``tanh`` and ``exp`` of a float32/float64 array call the ufunc straight (``_on_float``): the backend's bits;
  ``relu`` of an array calls ``np.maximum`` unsilenced (it never warns, NaNs included).
* ``numpy_backend.mm`` (MmBackward0's and AddmmBackward0's product) is ``matmul``'s 2-D product.
* ``bce_with_logits_reduced`` computes ``-|x|`` with one ``copysign`` and the mean as a numpy scalar: the
  bits of the in-place kernel it replaces (NaN payloads included) and the general path's values (``softplus_neg``,
  ``sub``, ``mul``, ``add``, ``sum``, ``div``; only a NaN's sign can differ there, as it did before).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradviz as gv
from gradviz.backends import numpy_backend as nb
from gradviz.backends.quiet import silenced
from gradviz.ops.loss import _reduce

from test_backward_arrays import arrays, bits, layout  # noqa: E402  (random arrays with special values, layouts)

FLOATS = [np.float16, np.float32, np.float64]
LAYOUTS = ["C", "F", "T"]


def leaf(array, requires_grad):
    """A tensor sharing ``array`` (its layout kept), requiring grad or not."""
    return gv.from_numpy(array).requires_grad_(requires_grad)


def same(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.strides == expected.strides
    assert bits(got) == bits(expected)


# -- x @ W ------------------------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(st.sampled_from(FLOATS), st.integers(1, 7), st.integers(1, 7), st.integers(1, 7), st.sampled_from(LAYOUTS),
       st.sampled_from(LAYOUTS), st.booleans(), st.booleans(), st.booleans(), st.data())
def test_mm_forward_is_the_silenced_dot(dtype, n, m, p, layout_a, layout_b, needs_a, needs_b, grad_on, data):
    a = layout(arrays(dtype, (n, m), data), layout_a)
    b = layout(arrays(dtype, (m, p), data), layout_b)
    x, w = leaf(a, needs_a), leaf(b, needs_b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning must not leak (torch says nothing)
        with gv.set_grad_enabled(grad_on):
            out = x @ w
            method = x.mm(w)
    with np.errstate(all="ignore"):
        expected = np.dot(a, b)
    same(out._data, expected)
    same(method._data, expected)
    node = out.grad_fn
    if not (grad_on and (needs_a or needs_b)):
        assert node is None
        return
    assert node.name() == "MmBackward0" and node.needs_input_grad == (needs_a, needs_b)
    assert node.metas == (((n, m), a.dtype), ((m, p), b.dtype))
    assert node._saved_self_sym_sizes == (n, m) and node._saved_mat2_sym_sizes == (m, p)
    assert node._saved_self_sym_strides == (tuple(s // a.itemsize for s in a.strides) if needs_a else ())
    assert node._saved_mat2_sym_strides == (tuple(s // b.itemsize for s in b.strides) if needs_b else ())
    assert (node._saved_self is None) == (not needs_b) and (node._saved_mat2 is None) == (not needs_a)


def test_backend_matmul_keeps_numpys_warnings_off_and_its_other_shapes():
    big = np.full((2, 2), 3e38, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isinf(nb.matmul(big, big)).all()
        assert np.isinf(nb.matmul(big[0], big)).all()  # 1-D @ 2-D: np.matmul, still silenced
    old = np.seterr(all="raise")
    try:
        nb.matmul(big, big)  # the user's numpy state is left as it was
        assert np.geterr()["over"] == "raise"
    finally:
        np.seterr(**old)
    stacked = np.arange(24.0).reshape(2, 3, 4)
    same(nb.matmul(stacked, np.ones((4, 2))), np.matmul(stacked, np.ones((4, 2))))


# -- h + b and the other binary operators -----------------------------------------------------------------------
SHAPES = [((64, 16), (16,)), ((16,), (64, 16)), ((3, 1), (1, 4)), ((2, 3), (2, 3)), ((5,), ()), ((), (2, 2)),
          ((2, 1, 3), (4, 3)), ((4,), (3,)), ((2, 3), (3, 2))]
OPERATORS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b}
UFUNCS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide}


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(OPERATORS)), st.sampled_from(SHAPES), st.sampled_from(FLOATS),
       st.sampled_from(FLOATS), st.booleans(), st.booleans(), st.booleans(), st.data())
def test_binary_operators_on_arrays(op, shapes, dtype_a, dtype_b, needs_a, needs_b, grad_on, data):
    a, b = arrays(dtype_a, shapes[0], data), arrays(dtype_b, shapes[1], data)
    x, y = leaf(np.asarray(a), needs_a), leaf(np.asarray(b), needs_b)
    try:
        expected_shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        with pytest.raises(RuntimeError, match="The size of tensor a .* must match the size of tensor b"):
            OPERATORS[op](x, y)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with gv.set_grad_enabled(grad_on):
            out = OPERATORS[op](x, y)
    # PyTorch's promotion for two float tensors: a 0-d one beside a dimensioned one takes the latter's dtype
    common = b.dtype if a.ndim == 0 < b.ndim else a.dtype if b.ndim == 0 < a.ndim else np.result_type(a, b)
    with np.errstate(all="ignore"):
        expected = UFUNCS[op](np.asarray(a, common), np.asarray(b, common))
    assert out.shape == expected_shape
    assert bits(np.asarray(out._data, expected.dtype)) == bits(expected) and out._data.dtype == expected.dtype
    node = out.grad_fn
    if grad_on and (needs_a or needs_b):
        assert node.needs_input_grad == (needs_a, needs_b)
        assert node.metas == (a.shape, a.dtype, b.shape, b.dtype)
    else:
        assert node is None


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(OPERATORS)), st.sampled_from([np.float32, np.float64]), st.data())
def test_zero_d_operands_still_take_the_scalar_step(op, dtype, data):
    """The 0-d test moved into the ops' forward: 0-d tensors still get the scalar step's shared metas and bits."""
    from gradviz.ops.arithmetic import _METAS_32, _METAS_64

    a, b = arrays(dtype, (), data), arrays(dtype, (), data)
    x, y = leaf(np.asarray(a), True), leaf(np.asarray(b), False)
    out = OPERATORS[op](x, y)
    with np.errstate(all="ignore"):
        expected = np.asarray(UFUNCS[op](np.asarray(a), np.asarray(b)))
    assert bits(out._data) == bits(expected)
    assert out.grad_fn.metas is (_METAS_32 if dtype is np.float32 else _METAS_64)[0]
    number = OPERATORS[op](x, 0.5)
    assert number.grad_fn.metas is (_METAS_32 if dtype is np.float32 else _METAS_64)[1]


# -- relu, tanh, exp ----------------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(st.sampled_from(FLOATS + [np.int64]), st.sampled_from([(64, 16), (5,), (), (3, 4, 2)]),
       st.sampled_from(LAYOUTS), st.booleans(), st.data())
def test_unary_ops_on_arrays(dtype, shape, kind, needs, data):
    base = arrays(np.float64, shape, data)
    if dtype is np.int64:
        base = np.nan_to_num(base, posinf=7, neginf=-7).clip(-50, 50).astype(np.int64)
    with np.errstate(over="ignore"):
        base = base.astype(dtype)
    a = layout(base, kind) if base.ndim == 2 else np.asarray(base)
    x = leaf(a, needs and dtype is not np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exp's overflow: numpy's warning stays off
        results = {"tanh": gv.tanh(x), "exp": x.exp(), "relu": gv.relu(x)}
    floating = a if a.dtype.kind == "f" else a.astype(np.float32)
    with np.errstate(all="ignore"):
        expected = {"tanh": np.asarray(np.tanh(floating)), "exp": np.asarray(np.exp(floating)),
                    "relu": np.asarray(np.maximum(0, a))}  # (0 first: -0.0 stays -0.0, as torch's clamp_min)
    for name, out in results.items():
        same(out._data, expected[name])
        if x.requires_grad:
            assert out.grad_fn._saved_result._data.tobytes() == out._data.tobytes()
    if a.ndim and a.dtype.kind == "f":  # relu calls np.maximum unsilenced: it never raises, NaNs included
        old = np.seterr(all="raise")
        try:
            with_nan = a.copy()
            with_nan.reshape(-1)[0] = np.nan
            same(gv.relu(gv.from_numpy(with_nan))._data, np.maximum(0, with_nan))
        finally:
            np.seterr(**old)
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        gv.relu(gv.from_numpy(a > 0))


# -- BCE with logits ---------------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.sampled_from([np.float32, np.float64]), st.sampled_from([(64, 1), (5,), (3, 4), (2, 3, 2), (1,)]),
       st.sampled_from([1, 2]), st.sampled_from(LAYOUTS), st.data())
def test_bce_with_logits_reduced_matches_the_general_path(dtype, shape, reduction, kind, data):
    x = arrays(dtype, shape, data)
    x = layout(x, kind) if x.ndim == 2 else x
    t = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).uniform(0, 1, shape).astype(dtype)
    t = np.ascontiguousarray(t) if kind == "C" or t.ndim != 2 else np.asfortranarray(t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = nb.bce_with_logits_reduced(x, t, reduction)
    with silenced():
        general = _reduce(nb, nb.add(nb.mul(nb.sub(1.0, t), x), nb.softplus_neg(x)), reduction)
        same(got, _bce_in_place_before(x, t, reduction))  # the bits of the kernel it replaces, NaN payloads too
    assert got.dtype == general.dtype and got.shape == general.shape
    np.testing.assert_array_equal(got, general)  # the general path's value (a NaN's sign may differ there)


def _bce_in_place_before(x, t, reduction):
    """The kernel as it was before ``copysign`` and the scalar mean: its operations, written out."""
    softplus = np.negative(x)
    np.maximum(softplus, 0.0, out=softplus)
    tail = np.abs(x)
    np.negative(tail, out=tail)
    np.exp(tail, out=tail)
    np.log1p(tail, out=tail)
    np.add(softplus, tail, out=softplus)
    loss = np.subtract(1.0, t)
    np.multiply(loss, x, out=loss)
    np.add(loss, softplus, out=loss)
    total = np.add.reduce(loss, axis=None)
    return np.asarray(total if reduction == 2 else np.true_divide(total, max(loss.size, 1)))


def test_bce_with_logits_reduced_declines_what_it_does_not_cover():
    x = np.ones((4, 2), np.float32)
    assert nb.bce_with_logits_reduced(x, x.astype(np.float64), 1) is None  # mixed dtypes
    assert nb.bce_with_logits_reduced(x, x, 0) is None  # reduction 'none'
    assert nb.bce_with_logits_reduced(x.astype(np.float16), x.astype(np.float16), 1) is None
    assert nb.bce_with_logits_reduced(x[0, 0], x[0, 0], 1) is None  # 0-d
    assert nb.bce_with_logits_reduced(x, x[:, :1], 1) is None  # shapes differ


def test_bce_with_logits_of_mixed_dtypes_promotes_as_before():
    x = gv.tensor([[0.5, -2.0]], dtype=gv.float64, requires_grad=True)
    t = gv.tensor([[1.0, 0.0]])
    loss = gv.nn.functional.binary_cross_entropy_with_logits(x, t)
    with silenced():
        expected = _reduce(nb, nb.add(nb.mul(nb.sub(1.0, t._data.astype(np.float64)), x._data),
                                      nb.softplus_neg(x._data)), 1)
    same(loss._data, expected)


# -- against torch ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout_a,layout_b", [("C", "C"), ("F", "T"), ("T", "C")])
@pytest.mark.parametrize("needs", [(True, True), (False, True), (True, False)])
def test_mm_saved_entries_as_torch(torch, layout_a, layout_b, needs):
    rng = np.random.default_rng(1)
    a = layout(rng.standard_normal((4, 3)).astype(np.float32), layout_a)
    b = layout(rng.standard_normal((3, 5)).astype(np.float32), layout_b)
    seen = []
    for lib in (gv, torch):
        x, w = lib.from_numpy(a).requires_grad_(needs[0]), lib.from_numpy(b).requires_grad_(needs[1])
        out = x @ w
        node = out.grad_fn
        seen.append((node.name(), [None if fn is None else fn.name() for fn, _ in node.next_functions],
                     node._saved_self_sym_sizes, node._saved_self_sym_strides, node._saved_mat2_sym_sizes,
                     node._saved_mat2_sym_strides, node._saved_self is None, node._saved_mat2 is None,
                     out.detach().numpy().tobytes(), out._version))
    assert seen[0][:-2] == seen[1][:-2] and seen[0][-1] == seen[1][-1]
    np.testing.assert_allclose(np.frombuffer(seen[0][-2], np.float32), np.frombuffer(seen[1][-2], np.float32),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("snippet", [
    "lib.ones(3, 2, requires_grad=True) @ lib.ones(3, 2)",
    "lib.ones(3, 2, requires_grad=True) @ lib.ones(2, 2, dtype=lib.float64)",
    "lib.ones(4, 3, requires_grad=True) + lib.ones(4)",
    "lib.ones(2, 3, requires_grad=True) * lib.ones(3, 2)",
    "lib.relu(lib.ones(2, dtype=lib.bool))",
    "lib.nn.functional.binary_cross_entropy_with_logits(lib.ones(3, requires_grad=True), lib.ones(2))",
])
def test_errors_as_torch(torch, snippet):
    messages = []
    for lib in (gv, torch):
        with pytest.raises(Exception) as caught:
            eval(snippet, {"lib": lib})
        messages.append((type(caught.value), str(caught.value)))
    assert messages[0] == messages[1]


def test_bce_and_activations_as_torch(torch):
    rng = np.random.default_rng(2)
    x0 = (rng.standard_normal((64, 1)) * 30).astype(np.float32)
    t0 = (rng.uniform(size=(64, 1)) > 0.5).astype(np.float32)
    h0 = rng.standard_normal((64, 16)).astype(np.float32) * 3
    out = []
    for lib in (gv, torch):
        h = lib.tensor(h0, requires_grad=True)
        losses = [lib.nn.functional.binary_cross_entropy_with_logits(lib.tensor(x0), lib.tensor(t0), reduction=r)
                  for r in ("mean", "sum")]
        out.append(([float(loss) for loss in losses], lib.relu(h).detach().numpy(), lib.tanh(h).detach().numpy(),
                    lib.tanh(h).grad_fn.name(), lib.relu(h).grad_fn.name()))
    (gv_losses, gv_relu, gv_tanh, *gv_names), (losses, relu, tanh, *names) = out
    assert gv_names == names
    np.testing.assert_allclose(gv_losses, losses, rtol=1e-6)
    assert gv_relu.tobytes() == relu.tobytes()
    np.testing.assert_allclose(gv_tanh, tanh, rtol=2e-7, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (4,), (2, 2)])
def test_relu_keeps_negative_zero_as_torch(dtype, shape):
    """PyTorch's relu is clamp_min: -0.0 is not below 0, so it stays -0.0 (numpy's maximum(x, 0) gives +0.0)."""
    torch = pytest.importorskip("torch")
    values = np.resize(np.array([-0.0, 0.0, -1.5, np.nan], dtype), shape)
    ours = gv.relu(gv.tensor(values)).numpy()
    theirs = torch.relu(torch.tensor(values)).numpy()
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
    np.testing.assert_array_equal(ours, theirs)
