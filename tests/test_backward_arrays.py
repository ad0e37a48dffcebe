"""Backward formulas on arrays rewritten for speed: the same bits and layout as before, and as torch.

ReLU's backward is a select (PyTorch's ``threshold_backward``: the gradient where the output is not
<= 0, else 0). On large arrays it is done on the gradient's bits (``numpy_backend.relu_backward``)
instead of ``np.where``, whose loop branches on each element; these tests hold it to ``np.where``'s
bits and strides, and to torch's kernel, over any values (NaN, infinities, -0.0 included), in every
float dtype and in the layouts a gradient can come in.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gradviz.backends import numpy_backend as nb

DTYPES = [np.float16, np.float32, np.float64]
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, 3e38, -3e38, 65504.0, 5e-324]


def arrays(dtype, shape, data):
    """An array of ``shape`` mixing special values and random ones (about half of them <= 0)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    values = rng.standard_normal(shape)
    specials = data.draw(st.lists(st.tuples(st.integers(0, int(np.prod(shape)) - 1), st.sampled_from(SPECIAL)),
                                  max_size=20))
    flat = values.reshape(-1)
    for index, value in specials:
        flat[index] = value
    with np.errstate(over="ignore"):
        return values.astype(dtype)


def layout(array, kind):
    """The same values laid out as a gradient may arrive: C order, Fortran order, or a transposed view."""
    if kind == "C":
        return np.ascontiguousarray(array)
    if kind == "F":
        return np.asfortranarray(array)
    return np.ascontiguousarray(array.T).T  # a transposed view of a C array


def bits(array) -> bytes:
    return np.ascontiguousarray(array).tobytes()


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(DTYPES), st.sampled_from([(64, 16), (32, 40), (1024,), (40, 8, 4)]),
       st.sampled_from(["C", "F", "T"]), st.sampled_from(["C", "F", "T"]), st.data())
def test_relu_backward_on_bits_matches_the_select(dtype, shape, grad_layout, result_layout, data):
    grad = layout(arrays(dtype, shape, data), grad_layout)
    result = layout(np.maximum(arrays(dtype, shape, data), dtype(0)), result_layout)
    got = nb.relu_backward(grad, result)
    expected = np.where(result != 0, grad, 0)
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.strides == expected.strides
    assert bits(got) == bits(expected)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(DTYPES), st.data())
def test_relu_backward_on_bits_matches_torch(dtype, data):
    torch = pytest.importorskip("torch")
    grad = arrays(dtype, (64, 32), data)
    result = np.maximum(arrays(dtype, (64, 32), data), dtype(0))
    got = nb.relu_backward(grad, result)
    expected = torch.ops.aten.threshold_backward(torch.from_numpy(grad), torch.from_numpy(result), 0).numpy()
    assert got.dtype == expected.dtype
    # the gradient itself where it passes, +0.0 where it is masked (NaN payloads are not part of the contract)
    nan = np.isnan(got)
    assert (nan == np.isnan(expected)).all() and bits(np.where(nan, 0, got)) == bits(np.where(nan, 0, expected))
