"""The update of a scalar parameter under ``no_grad`` (``p -= lr * p.grad``, ``p += t``, ``p *= t``,
``p /= t`` on 0-d float32/float64 tensors of one dtype) computes on numpy scalars (``Tensor._in_place``).

numpy's scalar arithmetic is the same IEEE operation as its ufunc on the two 0-d arrays (the path
before), so the bits are the same, special values included; these tests hold them to the ufunc and to
PyTorch 2.13, and check that the update stays in place (the same array, one version bump, seen through
views and by the base) and that anything else still takes the general path with PyTorch's errors.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradviz

from bits import same_bits

DTYPES = {"float32": (np.float32, 32), "float64": (np.float64, 64)}
UPDATES = {"isub": (operator.isub, np.subtract), "iadd": (operator.iadd, np.add),
           "imul": (operator.imul, np.multiply), "idiv": (operator.itruediv, np.true_divide)}


def _values(width):
    edges = [0.0, -0.0, 1e-45, -1e-45, 1.1e-38, 3.4e38, -3.4e38] if width == 32 else [5e-324, 2.2e-308, 1.7e308]
    return st.floats(width=width) | st.sampled_from(edges)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(UPDATES)), st.data())
def test_scalar_update_gives_the_ufuncs_bits_and_pytorchs(dtype, update, data):
    kind, width = DTYPES[dtype]
    a, b = data.draw(_values(width)), data.draw(_values(width))
    operation, ufunc = UPDATES[update]
    p = gradviz.tensor(np.asarray(a, kind), requires_grad=True)
    t = gradviz.tensor(np.asarray(b, kind))
    memory, version = p._data, p._version
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # quiet, as PyTorch
        with gradviz.no_grad():
            q = operation(p, t)
    assert q is p and p._data is memory and p._version == version + 1
    with np.errstate(all="ignore"):
        expected = ufunc(np.asarray(a, kind), np.asarray(b, kind))  # the 0-d ufunc the path replaced
    assert same_bits(p._data, np.asarray(expected, kind)), (a, b)
    assert type(p._data) is np.ndarray and p._data.shape == () and p._data.dtype == kind
    torch = pytest.importorskip("torch")
    theirs = torch.tensor(np.asarray(a, kind), requires_grad=True)
    with torch.no_grad():
        operation(theirs, torch.tensor(np.asarray(b, kind)))
    assert same_bits(p._data, theirs.detach().numpy()), (a, b)


def test_the_step_as_tutorials_write_it_matches_pytorch():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (gradviz, torch):
        w = lib.tensor(0.3, requires_grad=True)
        versions = []
        for x in (0.5, -1.25, 2.0):
            loss = (w * x - 1.0) ** 2
            loss.backward()
            with lib.no_grad():
                w -= 0.05 * w.grad
                w.grad = None
            versions.append(w._version)
        results.append((w.detach().numpy().tobytes(), versions))
    assert results[0] == results[1]


def test_a_view_is_updated_in_its_base():
    torch = pytest.importorskip("torch")
    seen = []
    for lib in (gradviz, torch):
        base = lib.tensor([1.5, -2.0, 0.25])
        view = base[1]
        with lib.no_grad():
            view -= lib.tensor(0.75)
            view *= lib.tensor(3.0)
        seen.append((base.numpy().tobytes(), view._version, base._version))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("other", ["vector", "other dtype", "alpha"])
def test_anything_else_takes_the_general_path(other):
    """A tensor of another shape (PyTorch's error), of another dtype, or an ``alpha``: not the scalar path,
    and PyTorch's answer."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (gradviz, torch):
        p = lib.tensor(np.float32(0.5), requires_grad=True)
        try:
            with lib.no_grad():
                if other == "vector":
                    p -= lib.tensor([1.0, 2.0])
                elif other == "other dtype":
                    p -= lib.tensor(np.float64(0.1))
                else:
                    p.sub_(lib.tensor(np.float32(0.1)), alpha=3)
            results.append((p.detach().numpy().tobytes(), p._version, str(p.dtype).split(".")[-1]))
        except RuntimeError as error:
            results.append(str(error))
    assert results[0] == results[1]
