"""``x //= 2`` is torch's in-place ``floor_divide_``; float ``floor_divide`` by 0; ``logsumexp`` without
``dim``: the same lines in torch 2.13 and gradviz."""
from __future__ import annotations

import pytest

import gradviz as gv


def outcome(function):
    try:
        return function()
    except Exception as error:  # the error is what is compared
        return type(error).__name__, str(error)


def in_place(lib):
    x = lib.tensor([5.0, 7.0, -3.0])
    before, view = id(x), x[:2]
    x //= 2
    y = lib.tensor([5, 7, -3])
    y //= lib.tensor([2, -2, 2])
    z = lib.tensor([9.0, 4.0])
    returned = z.floor_divide_(4)
    return (str(x), id(x) == before, x._version, str(view), str(y), y.dtype == lib.int64,
            str(z), returned is z, z._version)


def test_floor_divide_in_place_writes_the_same_tensor(torch):
    assert in_place(gv) == in_place(torch)
    assert in_place(gv)[1:3] == (True, 1)


def recorded(lib):
    w = lib.tensor([5.0, 7.0], requires_grad=True) * 1
    w //= 2
    leaf = lib.tensor([5.0], requires_grad=True)
    return (str(w), w.grad_fn.name() if hasattr(w.grad_fn, "name") else type(w.grad_fn).__name__,
            outcome(lambda: leaf.floor_divide_(2)), outcome(lambda: w.sum().backward()))


def test_floor_divide_in_place_under_grad(torch):
    assert recorded(gv) == recorded(torch)


def by_zero(lib):
    return str(lib.floor_divide(lib.tensor([1.0, -1.0, 0.0, 2.5]), 0)), str(lib.tensor([3.0, -3.0]) // 0.0)


def test_float_floor_divide_by_zero(torch):
    assert by_zero(gv) == by_zero(torch) == ("tensor([inf, -inf, nan, inf])", "tensor([inf, -inf])")


def logsumexp_without_dim(lib):
    x = lib.tensor([1.0, 2.0])
    return outcome(lambda: lib.logsumexp(x)), outcome(lambda: x.logsumexp()), str(lib.logsumexp(x, 0))


def test_logsumexp_needs_dim(torch):
    assert logsumexp_without_dim(gv) == logsumexp_without_dim(torch)
    assert logsumexp_without_dim(gv)[0] == ("TypeError", 'logsumexp() missing 1 required positional arguments: "dim"')
