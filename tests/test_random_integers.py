"""``Tensor.random_`` against PyTorch 2.13: the same whole numbers from the same seed for every dtype and
form (``random_()``, ``random_(to)``, ``random_(from, to)``, ranges that take 64-bit draws), the generator
left in the same place (a ``rand`` after each fill), torch's errors and warnings for ranges a dtype cannot
hold, and the node a fill records in a graph."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

import gradviz  # noqa: E402
from parity import assert_same, assert_same_error  # noqa: E402

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
FORMS = [(), (5,), (2, 9), (-5, -2), (300,), (2**28 - 1,), (2**28,), (2**31,), (-3, 2**33), (0, 2**40)]


def _fill(lib, dtype: str, args: tuple, seed: int):
    lib.manual_seed(seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            x = lib.zeros(9, dtype=getattr(lib, dtype))
            x.random_(*args)
            outcome = (x.tolist(), lib.rand(2).tolist())
        except RuntimeError as error:
            outcome = ("RuntimeError", str(error))
    return outcome, [str(w.message) for w in caught]


def _precise_enough(dtype: str, args: tuple) -> bool:
    """PyTorch warns that a float type cannot draw whole numbers beyond its mantissa (a range it calls
    deprecated); there it also rounds the bounds to the type first, which gradviz does not copy."""
    limit = {"float16": 2**11, "float32": 2**24}.get(dtype)
    return limit is None or all(abs(bound) <= limit + 1 for bound in args)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args", FORMS, ids=str)
def test_random_fill_matches_torch(dtype, args):
    if not _precise_enough(dtype, args):
        expected, actual = _fill(torch, dtype, args, 1), _fill(gradviz, dtype, args, 1)
        assert expected[1] == actual[1]  # the same warning (or error) at least
        if expected[0][0] == "RuntimeError":
            assert actual[0] == expected[0]
        return
    for seed in (0, 1, 12345):
        assert _fill(gradviz, dtype, args, seed) == _fill(torch, dtype, args, seed)


def test_random_fill_by_keyword_and_generator():
    assert_same("""
g = torch.Generator().manual_seed(9)
x = torch.zeros(6, dtype=torch.int64)
x.random_(to=7, generator=g)
y = torch.empty(4).random_(3, 10, generator=g)
torch.manual_seed(0)
z = torch.empty((), dtype=torch.int64).random_()
print(x, y, z, torch.rand(1))
""")


def test_random_fill_in_a_graph_records_torchs_nodes():
    assert_same("""
torch.manual_seed(0)
a = torch.zeros(3, requires_grad=True).clone()
a.random_()
b = torch.zeros(3, requires_grad=True).clone()
b.random_(4)
c = torch.zeros(3, requires_grad=True).clone()
c.random_(1, 4)
print(a.grad_fn.name(), b.grad_fn.name(), c.grad_fn.name())
(a + b + c).sum().backward()
""")


@pytest.mark.parametrize("code", [
    "torch.zeros(2).random_(3, 3)",
    "torch.zeros(2, dtype=torch.uint8).random_(-1, 3)",
    "torch.zeros(2, dtype=torch.int8).random_(200)",
    "torch.zeros(2, dtype=torch.bool).random_(5)",
    "torch.zeros(2, requires_grad=True).random_()",
])
def test_random_fill_errors_match_torch(code):
    assert_same_error(code)
