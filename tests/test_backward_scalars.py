"""Backward formulas and gradient sums on 0-d float tensors computed with numpy's scalar arithmetic
(the backward part of issue 12).

The formulas of exp, log, tanh, sigmoid, relu and sqrt, the engine's sum of two gradients meant for
one slot, and the accumulation into a scalar leaf's existing ``.grad`` compute on numpy scalars when
every operand is a 0-d float32/float64 array. These tests prove, over any values (NaN, infinities,
-0.0, subnormals, overflow included), that the bits are those of the backend's array formulas on
the same arrays and of PyTorch 2.13's kernels on the same inputs, and that numpy prints no warning.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradviz
from gradviz.autograd import engine
from gradviz.backends import numpy_backend as nb
from bits import same_bits  # noqa: E402  (tests/bits.py)

DTYPES = {"float32": np.float32, "float64": np.float64}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 3e38, -3e38, 1e-45, 20.0, -20.0]
SPECIAL_64 = SPECIAL + [1e308, -1e308, 5e-324, 400.0, -800.0]

# op -> (the gradviz function, the backend's array formula on (grad, saved value)); which value is
# saved ("result" or "self") is read from the node, as the formula reads it
OPS = {
    "exp": (gradviz.exp, lambda g, saved: nb.mul(g, saved)),
    "log": (gradviz.log, lambda g, saved: nb.div(g, saved)),
    "tanh": (gradviz.tanh, nb.tanh_backward),
    "sigmoid": (gradviz.sigmoid, nb.sigmoid_backward),
    "relu": (gradviz.relu, nb.relu_backward),
    "sqrt": (gradviz.sqrt, lambda g, saved: nb.div(g, nb.mul(saved, 2))),
}


def values(width):
    return st.one_of(st.sampled_from(SPECIAL if width == 32 else SPECIAL_64),
                     st.floats(width=width, allow_nan=True, allow_infinity=True))


def loud(function, *args):
    """Run with every RuntimeWarning an error: the scalar paths must stay as quiet as PyTorch."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return function(*args)


def quiet(function, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return function(*args)


def scalar_node(op, a):
    """The node ``op`` records on the 0-d array ``a``, and the array its formula reads."""
    y = quiet(OPS[op][0], gradviz.tensor(a, requires_grad=True))
    node = y.grad_fn
    saved = node.saved("result" if "result" in node._packed else "self")
    return node, saved


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(OPS)), st.data())
def test_scalar_formulas_match_the_array_formulas_bit_for_bit(dtype, op, data):
    width = 32 if dtype == "float32" else 64
    a = np.asarray(data.draw(values(width)), dtype=DTYPES[dtype])
    g = np.asarray(data.draw(values(width)), dtype=DTYPES[dtype])
    node, saved = scalar_node(op, a)
    assert type(saved) is np.ndarray and saved.shape == () and saved.dtype == a.dtype
    got = loud(node.backward, g)
    expected = quiet(OPS[op][1], g, saved)
    assert type(got) is np.ndarray and got.shape == ()
    assert same_bits(got, expected), (op, a, g, got, expected)


@pytest.mark.parametrize("op", sorted(OPS))
def test_other_dtypes_and_shapes_take_the_array_formulas(op):
    for a, g in ((np.asarray(0.5, np.float16), np.asarray(2.0, np.float16)),   # half: computed in float
                 (np.asarray([0.5], np.float32), np.asarray([2.0], np.float32)),  # a 1-element vector
                 (np.asarray(0.5, np.float64), np.asarray(2.0, np.float32))):    # mixed dtypes
        node, saved = scalar_node(op, a)
        got = node.backward(g)
        assert same_bits(got, OPS[op][1](g, saved))


def torch_formula(torch, op, g, saved):
    """PyTorch's own backward kernel for ``op`` on the same gradient and saved value."""
    aten = torch.ops.aten
    return {"exp": lambda: g * saved, "log": lambda: g.div(saved), "tanh": lambda: aten.tanh_backward(g, saved),
            "sigmoid": lambda: aten.sigmoid_backward(g, saved),
            "relu": lambda: aten.threshold_backward(g, saved, 0), "sqrt": lambda: g / (2 * saved)}[op]()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(OPS)), st.data())
def test_scalar_formulas_match_torch_kernels_bit_for_bit(dtype, op, data):
    torch = pytest.importorskip("torch")
    width = 32 if dtype == "float32" else 64
    a = np.asarray(data.draw(values(width)), dtype=DTYPES[dtype])
    g = np.asarray(data.draw(values(width)), dtype=DTYPES[dtype])
    node, saved = scalar_node(op, a)
    got = loud(node.backward, g)
    expected = torch_formula(torch, op, torch.from_numpy(g.copy()), torch.from_numpy(saved.copy())).numpy()
    if op in ("tanh", "sigmoid"):
        # PyTorch's kernels for these contract ``1 - y * y`` into a fused multiply-add (tanh) and group
        # the product differently (sigmoid), as the array formulas do not: within a few ulps of grad
        close = np.isnan(got) and np.isnan(expected) or got == expected or (
            abs(float(got) - float(expected)) <= 4 * np.finfo(got.dtype).eps * abs(float(g)))
        assert got.dtype == expected.dtype and close, (op, a, g, got, expected)
    else:
        assert same_bits(got, expected), (op, a, g, got, expected)


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_scalar_backward_matches_torch(op, dtype):
    """The whole pass: a 0-d value through the op twice (two gradients summed), ``.grad`` against torch."""
    torch = pytest.importorskip("torch")
    for value in (0.7, 2.5, -1.25):
        grads = []
        for lib in (gradviz, torch):
            x = lib.tensor(value, dtype=getattr(lib, dtype), requires_grad=True)
            f = getattr(lib, op) if op != "relu" else lib.relu
            loss = f(x * 1.5) * 3.0 + f(x)
            loss.backward()
            grads.append(x.grad.detach().numpy() if lib is torch else x.grad._data)
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5 if dtype == "float32" else 1e-12)
        assert grads[0].dtype == grads[1].dtype


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.data())
def test_summed_gradients_match_the_array_sum_and_stay_quiet(dtype, data):
    width = 32 if dtype == "float32" else 64
    a = np.asarray(data.draw(values(width)), dtype=DTYPES[dtype])
    b = np.asarray(data.draw(values(width)), dtype=DTYPES[dtype])
    got = loud(engine._summed, a, b)
    assert type(got) is np.ndarray and same_bits(got, quiet(np.add, a, b))
    vectors = loud(engine._summed, a.reshape(1), b.reshape(1))  # the array path is quiet too
    assert same_bits(vectors, quiet(np.add, a.reshape(1), b.reshape(1)))


@pytest.mark.parametrize("shape", [(), (2,)])
def test_an_overflowing_sum_of_gradients_prints_nothing_as_in_torch(shape):
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (gradviz, torch):
        x = lib.ones(shape, requires_grad=True)
        y = (x * 3e38 + x * 3e38).sum()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y.backward()
        grads.append(np.asarray(x.grad.detach().numpy() if lib is torch else x.grad._data))
    assert same_bits(grads[0], grads[1]) and np.isinf(grads[0]).all()
    # the stepping engine sums through the same InputBuffer
    x = gradviz.ones(shape, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(gradviz.autograd.backward_steps((x * 3e38 + x * 3e38).sum(), run_hooks=False))
    assert np.isinf(x.grad._data).all()
    # autograd.grad and the dry run that a graph view takes send gradients on through send_on
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, = gradviz.autograd.grad((x * 3e38 + x * 3e38).sum(), x)
        list(gradviz.autograd.backward_steps((x * 3e38 + x * 3e38).sum(), dry_run=True, run_hooks=False))
    assert np.isinf(got._data).all()


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.data())
def test_accumulating_into_a_scalar_grad_matches_torch(dtype, data):
    torch = pytest.importorskip("torch")
    width = 32 if dtype == "float32" else 64
    first, second = data.draw(values(width)), data.draw(values(width))
    results = []
    for lib in (gradviz, torch):
        x = lib.tensor(1.0, dtype=getattr(lib, dtype), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            (x * first).backward()
            held = x.grad
            version = held._version
            (x * second).backward()
        assert x.grad is held  # accumulated in place, as AccumulateGrad does
        results.append((np.asarray(x.grad.detach().numpy() if lib is torch else x.grad._data).copy(),
                        x.grad._version - version))
    assert same_bits(results[0][0], results[1][0]) and results[0][1] == results[1][1]


def test_a_leaf_backward_and_a_retained_graph_accumulate_as_in_torch():
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (gradviz, torch):
        x = lib.tensor(2.0, requires_grad=True)
        x.backward()  # the root is the leaf's AccumulateGrad itself
        y = x.tanh()
        y.backward(retain_graph=True)
        y.backward()
        grads.append(float(x.grad))
    assert grads[0] == pytest.approx(grads[1], rel=1e-6)


# -- the binary nodes of a scalar graph: Pow (square, cube), Add and Sub with a tensor or a number ----------
# op -> (forward on (x, y) for either library, the array formulas on (g, x, y): one gradient per input,
# None where the input is a number). The array formulas are what the general path computes on arrays.
BINARY = {
    "x ** 2": (lambda x, y: x ** 2, lambda g, x, y: (nb.mul(g, nb.mul(x, 2.0)), None)),
    "x ** 3": (lambda x, y: x ** 3, lambda g, x, y: (nb.mul(g, nb.mul(nb.mul(x, x), 3.0)), None)),
    "x ** 2.0": (lambda x, y: x ** 2.0, lambda g, x, y: (nb.mul(g, nb.mul(x, 2.0)), None)),
    "x + y": (lambda x, y: x + y, lambda g, x, y: (g, g)),
    "x - y": (lambda x, y: x - y, lambda g, x, y: (g, nb.mul(g, -1))),
    "x + 1.5": (lambda x, y: x + 1.5, lambda g, x, y: (g, None)),
    "x - 1.5": (lambda x, y: x - 1.5, lambda g, x, y: (g, None)),
    "1.5 + x": (lambda x, y: 1.5 + x, lambda g, x, y: (g, None)),
}


def binary_outcome(lib, op, a, b, g):
    """The leaves' gradients (bits) after ``op`` on the 0-d ``a`` (and ``b``) with ``g`` sent back."""
    x = lib.tensor(a.copy(), requires_grad=True)
    y = lib.tensor(b.copy(), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the forward may overflow (numpy's scalar warning)
        out = BINARY[op][0](x, y)
    gradient = lib.tensor(g.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the backward pass prints nothing, as torch's
        out.backward(gradient)
    return [None if t.grad is None else np.asarray(t.grad.detach().numpy() if lib is not gradviz else t.grad._data)
            for t in (x, y)]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(BINARY)), st.data())
def test_binary_scalar_formulas_match_the_array_formulas_bit_for_bit(dtype, op, data):
    width = 32 if dtype == "float32" else 64
    a, b, g = (np.asarray(data.draw(values(width)), dtype=DTYPES[dtype]) for _ in range(3))
    x = gradviz.tensor(a, requires_grad=True)
    y = gradviz.tensor(b, requires_grad=True)
    node = quiet(BINARY[op][0], x, y).grad_fn
    got = loud(node.backward, g)
    got = got if type(got) is tuple else (got,)
    expected = quiet(BINARY[op][1], g, a, b)
    for have, want in zip(got, expected):
        assert (have is None) == (want is None)
        if want is not None:
            assert type(have) is np.ndarray and have.shape == () and same_bits(have, want), (op, a, b, g, have, want)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(BINARY)), st.data())
def test_binary_scalar_backward_matches_torch_bit_for_bit(dtype, op, data):
    torch = pytest.importorskip("torch")
    width = 32 if dtype == "float32" else 64
    a, b, g = (np.asarray(data.draw(values(width)), dtype=DTYPES[dtype]) for _ in range(3))
    mine, theirs = binary_outcome(gradviz, op, a, b, g), binary_outcome(torch, op, a, b, g)
    for have, want in zip(mine, theirs):
        assert (have is None) == (want is None)
        if want is not None:
            assert same_bits(have, want), (op, a, b, g, have, want)


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_nodes_off_the_scalar_path_keep_their_errors_and_formulas(op):
    torch = pytest.importorskip("torch")
    outcomes = []
    for lib in (gradviz, torch):
        x = lib.tensor(1.5, requires_grad=True)
        y = lib.tensor(-0.5, requires_grad=True)
        out = BINARY[op][0](x, y)
        found = []
        out.backward(lib.tensor(2.0, dtype=lib.float64) if lib is gradviz else lib.tensor(2.0),
                     retain_graph=True)  # gradviz: a float64 gradient takes the array path
        found.append([None if t.grad is None else float(t.grad) for t in (x, y)])
        with lib.no_grad():
            x.add_(1.0)  # modified in place: a node that saved x must refuse
        try:
            out.backward()
            found.append([None if t.grad is None else float(t.grad) for t in (x, y)])
        except RuntimeError as error:
            found.append(str(error).split(":")[0])
        try:
            out.backward()
        except RuntimeError as error:
            found.append(str(error).split(":")[0])
        outcomes.append(found)
    assert outcomes[0][1:] == outcomes[1][1:]
    np.testing.assert_allclose(np.asarray(outcomes[0][0], dtype=float), np.asarray(outcomes[1][0], dtype=float))


# -- gradients that wait for others: summed as numpy scalars until the last one arrives -----------------------
def fan_in_grads(lib, dtype, constants, hooked=False):
    """``x`` used once per constant (``x * c``, all added up): x's AccumulateGrad receives each constant
    as a gradient and sums them. ``hooked``: gradviz's hooked loop (every sum a 0-d array) instead."""
    x = lib.tensor(np.asarray(1.0, dtype=dtype), requires_grad=True)
    w = lib.tensor(np.asarray(1.0, dtype=dtype), requires_grad=True)
    terms = [(x * w) * float(c) for c in constants]  # x * w is used by every term: its node sums too
    loss = terms[0]
    for term in terms[1:]:
        loss = loss + term
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        if hooked:
            task = engine.GraphTask([engine.gradient_edge(loss)], engine.make_grads([loss], [None]), keep_graph=False)
            task.hooked = True
            task.execute()
        else:
            loss.backward()
    return [np.asarray(t.grad.detach().numpy() if lib is not gradviz else t.grad._data) for t in (x, w)]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.data())
def test_gradients_summed_while_waiting_match_the_array_sums_and_torch(dtype, data):
    width = 32 if dtype == "float32" else 64
    constants = data.draw(st.lists(values(width), min_size=2, max_size=6))
    unhooked = fan_in_grads(gradviz, DTYPES[dtype], constants)
    hooked = fan_in_grads(gradviz, DTYPES[dtype], constants, hooked=True)
    for a, b in zip(unhooked, hooked):
        assert type(a) is np.ndarray and a.shape == () and same_bits(a, b)
    torch = pytest.importorskip("torch")
    for a, b in zip(unhooked, fan_in_grads(torch, DTYPES[dtype], constants)):
        assert same_bits(a, b), (constants, a, b)
