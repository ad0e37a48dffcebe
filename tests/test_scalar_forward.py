"""The forward pass of 0-d float ops on Python floats and on numpy scalars (issue 12).

``+ - * /`` on two 0-d float32/float64 tensors of one dtype (or a float64 tensor and a Python number)
and ``x ** 2`` (and a float64's ``x ** 3``) compute on Python floats: a float32's result computed in
double and rounded once to float32. That is exact for a product (it fits in 53 bits); for a sum or a
quotient it rounds twice, which the theorem for a wider format of at least 2p + 2 bits makes
innocuous. These tests aim at the cases that would break it (results next to a float32 rounding
midpoint, subnormal results, results at the edge of float32's range) and compare bits with the array
path (the backend's ufuncs on 0-d arrays) and with PyTorch 2.13. ``tanh`` and ``exp`` of a 0-d tensor
call their ufunc on the numpy scalar; the bits are those of the ufunc on the 0-d array. None of these
may warn where the array path does not, nor touch the user's own ``np.seterr``.
"""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradviz
from gradviz.backends import numpy_backend
from bits import same_bits  # noqa: E402  (tests/bits.py)

OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}
BACKEND_OPS = {"add": numpy_backend.add, "sub": numpy_backend.sub, "mul": numpy_backend.mul,
               "div": numpy_backend.div}
DTYPES = {"float32": np.float32, "float64": np.float64}
UINT = {"float32": np.uint32, "float64": np.uint64}


def quiet(function, *args):
    with np.errstate(all="ignore"):
        return function(*args)


def any_bits(dtype):
    """Any value of the dtype, drawn as its bits: subnormals, signed zeros, infinities and NaNs included."""
    bits = 32 if dtype == "float32" else 64
    return st.integers(0, 2**bits - 1).map(lambda n: np.array(n, dtype=UINT[dtype]).view(DTYPES[dtype])[()])


@st.composite
def near_midpoints(draw, dtype):
    """``(x, y)`` whose sum, difference or quotient lands next to a rounding midpoint of ``dtype``: ``y``'s
    exponent is a few places below ``x``'s last bit (a sum), or ``x`` is ``y`` times a midpoint, rounded
    (a quotient); the significands are any, so that the exact result can sit just off the midpoint."""
    mantissa = 24 if dtype == "float32" else 53
    kind = DTYPES[dtype]
    low = -149 if dtype == "float32" else -1074
    sign = draw(st.sampled_from([1.0, -1.0]))

    def value(significand, exponent):
        return kind(sign * math.ldexp(significand, exponent)) if exponent > low - 60 else kind(0.0)

    x_sig = draw(st.integers(2**(mantissa - 1), 2**mantissa - 1))
    x_exp = draw(st.integers(low + 10, 100))
    y_sig = draw(st.integers(2**(mantissa - 1), 2**mantissa - 1))
    if draw(st.booleans()):  # a sum: y's leading bit d places below x's last one
        y_exp = x_exp - mantissa - draw(st.integers(-2, 8))
        y = value(y_sig, y_exp) * kind(draw(st.sampled_from([1.0, -1.0])))
        return value(x_sig, x_exp), y
    # a quotient: x = y * (a midpoint of the grid), rounded
    midpoint = math.ldexp(2 * x_sig + 1, draw(st.integers(-60, 60)) - mantissa)
    y = value(y_sig, draw(st.integers(low + 30, 60)))
    with np.errstate(all="ignore"):
        return kind(float(y) * midpoint), y


@st.composite
def subnormal_results(draw):
    """float32 operands whose product, sum or quotient is a float32 subnormal (or close to one)."""
    x = math.ldexp(draw(st.integers(1, 2**24 - 1)), draw(st.integers(-149, -100)))
    y = math.ldexp(draw(st.integers(1, 2**24 - 1)), draw(st.integers(-30, 10)))
    return np.float32(x * draw(st.sampled_from([1.0, -1.0]))), np.float32(y * draw(st.sampled_from([1.0, -1.0])))


def check_against_the_array_path(op, dtype, x, y):
    a, b = np.asarray(x, dtype=DTYPES[dtype]), np.asarray(y, dtype=DTYPES[dtype])
    expected = quiet(BACKEND_OPS[op], a, b)
    for requires_grad in (True, False):  # recorded, and not (the same forward)
        result = quiet(OPS[op], gradviz.tensor(a, requires_grad=requires_grad), gradviz.tensor(b))
        assert type(result._data) is np.ndarray and result._data.shape == ()
        assert same_bits(result._data, expected), (op, dtype, x, y, result._data, expected)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(OPS)), st.data())
def test_two_tensors_match_the_array_path_near_rounding_midpoints(dtype, op, data):
    x, y = data.draw(near_midpoints(dtype))
    check_against_the_array_path(op, dtype, x, y)
    check_against_the_array_path(op, dtype, y, x)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(OPS)), st.data())
def test_two_tensors_match_the_array_path_for_any_bits(dtype, op, data):
    check_against_the_array_path(op, dtype, data.draw(any_bits(dtype)), data.draw(any_bits(dtype)))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(OPS)), subnormal_results())
def test_subnormal_float32_results_match_the_array_path(op, operands):
    x, y = operands
    check_against_the_array_path(op, "float32", x, y)
    check_against_the_array_path(op, "float32", y, x)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("op", sorted(OPS))
def test_results_at_the_edge_of_the_range(dtype, op):
    """Just inside and just past the largest finite value (numpy's cast would warn past it), zeros of
    both signs, a division by zero: the same bits as the array path."""
    kind = DTYPES[dtype]
    top = np.finfo(kind).max
    below = np.nextafter(top, kind(0))
    tiny = np.finfo(kind).smallest_subnormal
    values = [top, below, -top, kind(0.0), kind(-0.0), tiny, -tiny, kind(2.0), kind(0.5), kind(1.0),
              np.nextafter(kind(1.0), kind(2.0)), kind(np.inf), kind(np.nan)]
    for x in values:
        for y in values:
            check_against_the_array_path(op, dtype, x, y)


@settings(max_examples=300, deadline=None)
@given(any_bits("float64"), st.one_of(st.floats(), st.integers(-2**60, 2**60)), st.sampled_from(sorted(OPS)))
def test_a_float64_tensor_with_a_python_number_matches_the_array_path(x, number, op):
    a = np.asarray(x)
    expected = quiet(BACKEND_OPS[op], a, float(number))
    result = quiet(OPS[op], gradviz.tensor(a, requires_grad=True), number)
    assert same_bits(result._data, expected)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from([2, 3, 2.0, 3.0]), st.data())
def test_square_and_cube_match_the_array_path_for_any_bits(dtype, exponent, data):
    a = np.asarray(data.draw(any_bits(dtype)), dtype=DTYPES[dtype])
    expected = quiet(numpy_backend.pow, a, exponent)
    for requires_grad in (True, False):
        result = quiet(operator.pow, gradviz.tensor(a, requires_grad=requires_grad), exponent)
        assert same_bits(result._data, expected)


UNARY = {"tanh": numpy_backend.tanh, "exp": numpy_backend.exp}


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(UNARY)), st.data())
def test_unary_ops_on_the_numpy_scalar_match_the_array_path(dtype, name, data):
    a = np.asarray(data.draw(any_bits(dtype)), dtype=DTYPES[dtype])
    expected = quiet(UNARY[name], a)
    as_vector = quiet(UNARY[name], a.reshape(1))  # the ufunc's loop over a one-element array, too
    for requires_grad in (True, False):
        result = quiet(getattr(gradviz.tensor(a, requires_grad=requires_grad), name))
        assert type(result._data) is np.ndarray and result._data.shape == ()
        assert same_bits(result._data, expected) and same_bits(result._data.reshape(1), as_vector)
        if requires_grad:
            assert result.grad_fn.name() == f"{name.capitalize()}Backward0"


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(OPS) + ["pow2", "pow3", "tanh", "exp"]), st.data())
def test_forward_matches_torch_bit_for_bit(dtype, op, data):
    torch = pytest.importorskip("torch")
    if op in OPS and data.draw(st.booleans()):
        x, y = data.draw(near_midpoints(dtype))
    else:
        x, y = data.draw(any_bits(dtype)), data.draw(any_bits(dtype))
    results = []
    for lib in (torch, gradviz):
        a = lib.tensor(float(x), dtype=getattr(lib, dtype), requires_grad=True)
        b = lib.tensor(float(y), dtype=getattr(lib, dtype))
        if op in OPS:
            out = quiet(OPS[op], a, b)
        elif op in ("pow2", "pow3"):
            out = quiet(operator.pow, a, 2 if op == "pow2" else 3)
        else:
            out = quiet(getattr(a, op))
        results.append((out.grad_fn.name(), np.asarray(out.detach().numpy())))
    (torch_name, torch_value), (name, value) = results
    assert name == torch_name
    if op in ("tanh", "exp") and not same_bits(value, torch_value):
        # numpy's tanh and exp are not PyTorch's kernels: a float32 result may be an ulp off (as it was
        # before these paths; the bits are the array path's, tested above), never more than two
        assert np.isfinite(value) and np.isfinite(torch_value)
        assert abs(float(value) - float(torch_value)) <= 2 * np.spacing(np.abs(torch_value)), (op, dtype, x, value)
        return
    assert same_bits(value, torch_value), (op, dtype, x, y, value, torch_value)


def test_no_warning_and_the_users_numpy_state_kept():
    """Overflow, division by zero, inf - inf, exp's overflow: silent as in PyTorch, even under the user's
    ``np.seterr(all="raise")``, which stays as the user set it."""
    edge = [np.float32(3e38), np.float32(0.0), np.float32(np.inf), np.float32(-np.inf), np.float32(np.nan),
            np.float32(1e-45)]
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        before = np.geterr()
        for kind in (np.float32, np.float64):
            for x in edge:
                for y in edge:
                    a = gradviz.tensor(kind(x), requires_grad=True)
                    for op in OPS.values():
                        op(a, gradviz.tensor(kind(y)))
                        op(a, float(y))
                    a ** 2, a ** 3, a.tanh(), a.exp(), (a * 100.0).exp()
        assert np.geterr() == before


def test_integer_and_mixed_tensors_keep_their_path(torch):
    """Integer 0-d tensors, an integer with a float, and int / int: the general path, PyTorch's dtypes."""
    from parity import assert_same

    assert_same(
        "i = torch.tensor(7)\n"
        "j = torch.tensor(2)\n"
        "f = torch.tensor(0.5, requires_grad=True)\n"
        "d = torch.tensor(0.25, dtype=torch.float64, requires_grad=True)\n"
        "r = [i * j, i + j, i - j, i / j, i ** 2, i ** 3, i * 2.5, i + 1, f * i, d * f, d + 1, d * 3, d / 0.5,\n"
        "     f * 3, f / 4, f ** 2, f ** 3, d ** 3, f.tanh(), d.exp(), i.exp()]\n"
        "y = sum(x.sum() for x in r[8:] if x.requires_grad)\n"
        "y.backward()\n")
