"""0-d float ops computed with numpy's scalar arithmetic (the recording fast path of issue 12).

``+ - * /`` on 0-d float32/float64 tensors (with a 0-d tensor of the same dtype or a Python number)
and ``x ** 2`` / ``x ** 3`` compute with numpy scalars instead of ufuncs on 0-d arrays. These tests
prove, over any values (NaN, infinities, -0.0, subnormals, overflow included), that the bits are
those of the array path, and of PyTorch 2.13 itself; and that the graph is the one PyTorch records.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradviz
from gradviz.backends import numpy_backend
from bits import same_bits  # noqa: E402  (tests/bits.py)

DTYPES = {"float32": np.float32, "float64": np.float64}
OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}
BACKEND_OPS = {"add": numpy_backend.add, "sub": numpy_backend.sub, "mul": numpy_backend.mul,
               "div": numpy_backend.div}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3e38, -3e38, 1e-45]  # each one a float32 too
SPECIAL_64 = SPECIAL + [1e308, -1e308, 5e-324]


def values(width):
    return st.one_of(st.sampled_from(SPECIAL if width == 32 else SPECIAL_64),
                     st.floats(width=width, allow_nan=True, allow_infinity=True))


def numbers():
    """What a learner puts beside a tensor: a Python float (any, even past float32's range) or int."""
    return st.one_of(st.sampled_from(SPECIAL_64), st.floats(), st.integers(-2**53, 2**53))


def quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return function(*args, **kwargs)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(OPS)), st.data())
def test_scalar_path_matches_the_array_path_bit_for_bit(dtype, op, data):
    width = 32 if dtype == "float32" else 64
    x, y = data.draw(values(width)), data.draw(values(width))
    a, b = np.asarray(x, dtype=DTYPES[dtype]), np.asarray(y, dtype=DTYPES[dtype])
    expected = quiet(BACKEND_OPS[op], a, b)
    got = quiet(lambda: gradviz.tensor(a, requires_grad=True).__getattribute__("_data"))  # sanity: a 0-d array
    assert got.shape == ()
    result = quiet(OPS[op], gradviz.tensor(a, requires_grad=True), gradviz.tensor(b))
    assert type(result._data) is np.ndarray and same_bits(result._data, expected)
    result = quiet(OPS[op], gradviz.tensor(a), gradviz.tensor(b))  # no recording: the same path
    assert type(result._data) is np.ndarray and same_bits(result._data, expected)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(OPS)), st.data())
def test_scalar_path_with_a_python_number_matches_the_array_path(dtype, op, data):
    width = 32 if dtype == "float32" else 64
    x, number = data.draw(values(width)), data.draw(numbers())
    a = np.asarray(x, dtype=DTYPES[dtype])
    expected = quiet(BACKEND_OPS[op], a, float(number))
    result = quiet(OPS[op], gradviz.tensor(a, requires_grad=True), number)
    assert type(result._data) is np.ndarray and same_bits(result._data, expected)
    if op in ("add", "mul"):  # the reflected operators take the same path
        reflected = quiet(OPS[op], number, gradviz.tensor(a, requires_grad=True))
        assert same_bits(reflected._data, expected)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from([2, 3, 2.0, 3.0]), st.data())
def test_square_and_cube_match_the_array_path(dtype, exponent, data):
    x = data.draw(values(32 if dtype == "float32" else 64))
    a = np.asarray(x, dtype=DTYPES[dtype])
    expected = quiet(numpy_backend.pow, a, exponent)
    result = quiet(lambda: gradviz.tensor(a, requires_grad=True) ** exponent)
    assert result.grad_fn.name() == "PowBackward0"
    assert same_bits(result._data, expected)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(OPS) + ["pow2", "pow3"]), st.data())
def test_scalar_ops_match_torch_bit_for_bit(dtype, op, data):
    torch = pytest.importorskip("torch")
    width = 32 if dtype == "float32" else 64
    x = data.draw(values(width))
    other = data.draw(st.one_of(values(width), numbers().map(float))) if op in OPS else None
    tensor_other = op in OPS and data.draw(st.booleans())
    results = []
    for lib in (torch, gradviz):
        lib_dtype = getattr(lib, dtype)
        a = lib.tensor(x, dtype=lib_dtype, requires_grad=True)
        if op in OPS:
            b = quiet(lib.tensor, other, dtype=lib_dtype) if tensor_other else other  # may overflow to inf (numpy warns)
            b = b.requires_grad_() if tensor_other else b
            out = quiet(OPS[op], a, b)
        else:
            out = quiet(lambda: a ** (2 if op == "pow2" else 3))
        grads = quiet(lambda: lib.autograd.grad(out, [a] + ([b] if tensor_other else []), allow_unused=True))
        results.append((out.grad_fn.name(), np.asarray(out.detach().numpy()),
                        [np.asarray(g.numpy()) for g in grads]))
    (torch_name, torch_value, torch_grads), (name, value, grads) = results
    assert name == torch_name
    assert same_bits(value, torch_value)
    for got, expected in zip(grads, torch_grads):
        assert same_bits(got, expected)


def test_scalar_path_records_what_torch_records(torch):
    """Names, edges, saved tensors (their versions checked) and printed text, on the scalar path."""
    from parity import assert_same

    assert_same(
        "a = torch.tensor(1.5, requires_grad=True)\n"
        "b = torch.tensor(-0.25, requires_grad=True)\n"
        "c = torch.tensor(2.0)\n"
        "y = ((a * b + c) / b - a * 0.5) ** 2 + 1.0 - a ** 3 / (2 * b)\n"
        "z = y * c\n"
        "z.backward()\n")
    assert_same(
        "a = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)\n"
        "b = torch.tensor(3.0, dtype=torch.float64)\n"
        "y = a * b\n"
        "b.add_(1)\n"
        "e = None\n"
        "try:\n"
        "    y.backward()\n"
        "except RuntimeError as error:\n"
        "    e = str(error)\n")


def test_mixed_dtypes_and_shapes_leave_the_scalar_path(torch):
    """A float16 or integer 0-d tensor, two dtypes, or a 1-element vector: the general path, as before."""
    from parity import assert_same

    assert_same(
        "a = torch.tensor(1.5, requires_grad=True)\n"
        "h = torch.tensor(0.1, dtype=torch.float16, requires_grad=True)\n"
        "d = torch.tensor(0.1, dtype=torch.float64)\n"
        "i = torch.tensor(3)\n"
        "v = torch.tensor([2.0], requires_grad=True)\n"
        "y = (a * d + a * i + a * v + h * h + h ** 2 + i * 2 + i / 2).sum()\n"
        "y.backward()\n")


@pytest.mark.parametrize("pattern", [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)])
def test_needs_input_grad_follows_the_inputs(pattern):
    """apply names each requires-grad pattern by one int key: every pattern of a 3-input op gets its
    own shared tuple, and no node when nothing needs a gradient."""
    inputs = [gradviz.tensor([1.0, 2.0], requires_grad=bool(flag)) for flag in pattern]
    out = gradviz.addcmul(*inputs, value=0.5)
    if not any(pattern):
        assert out.grad_fn is None
        return
    assert out.grad_fn.needs_input_grad == tuple(bool(flag) for flag in pattern)
    again = gradviz.addcmul(*inputs, value=0.5)
    assert again.grad_fn.needs_input_grad is out.grad_fn.needs_input_grad
    assert [edge[0] is None for edge in out.grad_fn.next_functions] == [not flag for flag in pattern]


def test_needs_input_grad_patterns_match_torch(torch):
    from parity import assert_same

    assert_same("a = torch.tensor([1.0, 2.0], requires_grad=True)\n"
                "b = torch.tensor([3.0, -1.0])\n"
                "c = torch.tensor([0.5, 0.25], requires_grad=True)\n"
                "y = torch.addcmul(a, b, c, value=2) + torch.addcmul(b, a, b) + torch.addcmul(b, b, c)\n"
                "y.sum().backward()\n")
