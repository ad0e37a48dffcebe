"""Integer and bit math, frexp/ldexp, the comparisons and logical ops in place, and ``apply_``/``map_``/``map2_``
(``gradviz/ops/integer_math.py``), against PyTorch 2.13 itself: each snippet runs in both libraries (numpy and
torch backends); values, dtypes, grads, the whole ``grad_fn`` graph (names, edges, saved tensors) and the
printed text must agree, and so must the errors. Integer results are compared bit for bit over random inputs
of every integer dtype; the differentiable ops pass central-difference gradient checks, twice over.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

import gradviz  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

A = "a = torch.tensor([[1.0, -2.0, 0.3], [0.5, 2.0, -1.0]], requires_grad=True)\n"
E = "e = torch.tensor([[2, -1, 3], [0, 1, -2]])\n"
I = "i = torch.tensor([12, -18, 0, 7, -9223372036854775807 - 1])\nj = torch.tensor([8, 27, 0, 0, 0])\n"

CASES = {
    # -- gcd, lcm ----------------------------------------------------------------------------------------------
    "gcd_lcm": I + "y = torch.gcd(i, j)\nz = torch.lcm(i[:4], j[:4])\nw = i.gcd(j)\nv = i[:4].lcm(j[:4])\nprint(y, z, w, v)\n",
    "gcd_lcm_promote_broadcast": "x = torch.tensor([12, 100], dtype=torch.uint8)\ny = torch.tensor([[8], [-3]], "
    "dtype=torch.int8)\nz = torch.gcd(x, y)\nw = torch.lcm(torch.tensor([100], dtype=torch.int8), "
    "torch.tensor([3], dtype=torch.int8))\nv = torch.gcd(torch.tensor(12), torch.tensor([8, 9], dtype=torch.int32))\n"
    "print(z, w, v)\n",
    "gcd_lcm_in_place": I + "k = i.clone()\nv0 = k._version\nr = k.gcd_(j)\nm = j.clone()\nm.lcm_(torch.tensor(3))\n"
    "n = torch.tensor([4, 6])\ntorch.gcd_(n, torch.tensor([6]))\nprint(k, m, n, r is k, k._version - v0)\n",
    # -- shifts ----------------------------------------------------------------------------------------------
    "shifts": "x = torch.tensor([1, -2, 5, 7])\ns = torch.tensor([63, 64, -1, 2])\n"
    "y = x << s\nz = x >> s\nw = x << 2\nv = 2 << x.abs()\nu = -64 >> torch.tensor([1, 3])\n"
    "t = torch.bitwise_left_shift(x, 1)\nr = torch.bitwise_right_shift(x, torch.tensor(1))\n"
    "q = torch.bitwise_left_shift(3, torch.tensor([1, 2]))\np = x.bitwise_right_shift(1)\nprint(y, z, w, v, u, t, r, q, p)\n",
    "shifts_dtypes": "x = torch.tensor([1, -2, 5], dtype=torch.int8)\ny = x << torch.tensor([7, 8, -1], dtype=torch.int8)\n"
    "z = torch.tensor([1, 200], dtype=torch.uint8) >> torch.tensor([1, 9], dtype=torch.uint8)\n"
    "w = torch.tensor([1, 2], dtype=torch.int32) << torch.tensor(3)\nv = x << 300\n"
    "u = torch.tensor([True, False]) << 1\nt = torch.tensor([3, 4], dtype=torch.int16) >> 1\nprint(y, z, w, v, u, t)\n",
    "shifts_in_place": "x = torch.tensor([1, 2, -8])\nv0 = x._version\nx <<= 2\nx >>= torch.tensor([1, 0, 2])\n"
    "y = torch.tensor([5, 6], dtype=torch.int8)\ny.bitwise_left_shift_(torch.tensor([1]))\ny.bitwise_right_shift_(1)\n"
    "print(x, y, x._version - v0)\n",
    # -- ldexp ------------------------------------------------------------------------------------------------
    "ldexp": A + E + weighted_backward("torch.ldexp(a, e) + a.ldexp(e.flip(0))") + "print(y)\n",
    "ldexp_float_exponent": A + "f = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\n"
    + weighted_backward("torch.ldexp(a, f)") + "print(y)\n",
    "ldexp_dtypes": "y = torch.ldexp(torch.tensor([1, 2], dtype=torch.int32), torch.tensor([1]))\n"
    "z = torch.ldexp(torch.tensor([1.0, 2.0]), torch.tensor([1.0], dtype=torch.float64))\n"
    "w = torch.ldexp(torch.tensor([1.0], dtype=torch.float64), torch.tensor([200, -200]))\n"
    "v = torch.ldexp(torch.tensor([3.0]), torch.tensor([2]), out=torch.empty(1))\nprint(y, z, w, v)\n",
    "ldexp_in_place": A + E + "b = a * 1\nv0 = b._version\nb.ldexp_(e)\nb.sum().backward()\n"
    "c = torch.tensor([1.0, 2.0])\ntorch.ldexp_(c, torch.tensor([3, 4]))\nprint(b, c, b._version - v0)\n",
    "ldexp_double_backward": "x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)\n"
    "f = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)\ny = torch.ldexp(x, f)\n"
    "gx, gf = torch.autograd.grad((y * y).sum(), (x, f), create_graph=True)\n(gx.sum() + gf.sum()).backward()\n"
    "print(gx, gf)\n",
    # -- frexp ------------------------------------------------------------------------------------------------
    "frexp": A + "m, x = torch.frexp(a)\n(m * torch.arange(1.0, 7.0).reshape(2, 3)).sum().backward()\n"
    "r = a.frexp()\nprint(r, m, x)\n",
    "frexp_specials": "z = torch.tensor([0.0, -0.0, float('inf'), float('nan'), 5e-320, -3.5, 1e300], dtype=torch.float64)\n"
    "m, x = torch.frexp(z)\nh = torch.frexp(torch.tensor([1.0, -6.0], dtype=torch.float16))\n"
    "o = torch.frexp(torch.tensor([3.0]), out=(torch.empty(1), torch.empty(1, dtype=torch.int32)))\nprint(m, x, h, o)\n",
    "frexp_large_exponent_grad": "z = torch.tensor([1e300, 1e-300, 3.0], dtype=torch.float64, requires_grad=True)\n"
    "m, x = torch.frexp(z)\nm.sum().backward()\nprint(m, x)\n",
    # -- comparisons in place -------------------------------------------------------------------------------
    **{f"compare_in_place_{name}": A + f"b = a * 1\nr = b.{name}_(0.5)\nc = a * 2\ns = c.{name}_(a.detach().flip(0))\n"
       "d = a * 3\nt = d." + name + "_(a)\n(r.sum() + s.sum() + t.sum()).backward()\nprint(r, s, t)\n"
       for name in ("ge", "gt", "le", "lt", "eq", "ne", "greater", "greater_equal", "less", "less_equal",
                    "not_equal")},
    "compare_in_place_dtypes": "x = torch.tensor([1, 2, 3])\nx.ge_(1.5)\ny = torch.tensor([True, False])\ny.lt_(0.5)\n"
    "z = torch.tensor([1.0, 2.0], dtype=torch.float64)\nz.ne_(torch.tensor(2))\nprint(x, y, z)\n",
    "compare_in_place_view": A + "b = a * 1\nv = b[0]\nv.ge_(0.0)\nb.sum().backward()\nprint(b, v)\n",
    "compare_in_place_no_grad": A + "with torch.no_grad():\n    b = a * 1\n    b.le_(0.0)\nprint(b)\n",
    # -- logical and bitwise ops in place: nothing recorded --------------------------------------------------
    "logical_in_place": A + "b = a * 1\nv0 = b._version\nb.logical_and_(torch.tensor([1.0, 0.0, 1.0]))\n"
    "c = a * 1\nc.logical_or_(torch.tensor([0, 0, 1]))\nd = a * 1\nd.logical_xor_(a)\nf = a * 1\nf.logical_not_()\n"
    "(b.sum() + c.sum() + d.sum() + f.sum()).backward()\nprint(b, c, d, f, b._version - v0)\n",
    "logical_in_place_view": A + "g = a * 1\nv = g[0]\nv.logical_not_()\nw = a[1]\nw.logical_not_()\n"
    "g.sum().backward()\nprint(g, v, w, v._version)\n",
    "logical_in_place_leaf": "a = torch.tensor([1.0, 0.0, 3.0], requires_grad=True)\na.logical_not_()\nprint(a)\n",
    "bitwise_in_place": "x = torch.tensor([3, 0, 5])\nx.bitwise_and_(torch.tensor([1, 1, 4]))\n"
    "y = torch.tensor([True, False])\ny.bitwise_or_(torch.tensor([False, False]))\nz = torch.tensor([3, 0])\n"
    "z.bitwise_xor_(1)\nw = torch.tensor([3, 0], dtype=torch.int8)\nw.bitwise_not_()\nu = torch.tensor([True, False])\n"
    "u.bitwise_not_()\nprint(x, y, z, w, u)\n",
    # -- in-place forms of existing two-operand math --------------------------------------------------------
    "float_power_in_place": "a = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64, requires_grad=True)\n"
    "b = a * 1\nb.float_power_(2)\nc = a * 1\nc.float_power_(torch.tensor([1.0, 2.0, 3.0]))\n"
    "(b.sum() + c.sum()).backward()\nprint(b, c)\n",
    "true_divide_in_place": A + "b = a * 1\nb.true_divide_(2)\nc = a * 1\nc.true_divide_(a.detach() + 3)\n"
    "(b.sum() + c.sum()).backward()\nprint(b, c)\n",
    "copysign_in_place": A + "b = a * 1\nb.copysign_(-1.0)\nc = a * 1\nc.copysign_(torch.tensor([-1.0, 1.0, -0.0]))\n"
    "(b * torch.arange(1.0, 7.0).reshape(2, 3)).sum().backward()\nc.sum().backward()\nprint(b, c)\n",
    "nextafter_in_place": A + "b = a * 1\nb.nextafter_(torch.zeros(3))\nb.sum().backward()\nprint(b - a)\n",
    # -- Python callables ------------------------------------------------------------------------------------
    "apply_map": "x = torch.tensor([1.0, 2.0, 3.0])\nv0 = x._version\nr = x.apply_(lambda v: v * 10 + 1)\n"
    "y = torch.tensor([[1.0, 2.0], [3.0, 4.0]])\ny.map_(torch.tensor([10.0, 20.0]), lambda p, q: p + q)\n"
    "z = torch.tensor([1.0, 2.0])\nz.map2_(torch.tensor([3.0, 4.0]), torch.tensor(2.0), lambda p, q, s: p + q * s)\n"
    "k = torch.tensor([1, 2, -3])\nk.apply_(lambda v: v / 2)\nm = torch.tensor([True, False])\nm.apply_(lambda v: 2.5)\n"
    "n = torch.tensor([1.0, 2.0], dtype=torch.float16)\nn.apply_(lambda v: 1e6)\nprint(x, y, z, k, m, n, r is x, "
    "x._version - v0)\n",
    "apply_types": "x = torch.tensor([1.5, 2.0])\nx.apply_(lambda v: print(type(v).__name__) or v)\n"
    "k = torch.tensor([1, 2])\nk.apply_(lambda v: print(type(v).__name__) or v)\nb = torch.tensor([True])\n"
    "b.apply_(lambda v: print(type(v).__name__) or v)\nd = torch.tensor([1.0]).detach()\n",
}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_missing_ops_match_torch(name, backend):
    assert_same(CASES[name], backend=backend)


ERRORS = [
    "torch.gcd(torch.tensor([1.0]), torch.tensor([2]))",
    "torch.gcd(torch.tensor([True]), torch.tensor([False]))",
    "torch.lcm(torch.tensor([1]), torch.tensor([2.0]))",
    "torch.gcd(torch.tensor([1]), 3)",
    "torch.gcd(2, torch.tensor([3]))",
    "torch.tensor([1]).gcd(3)",
    "torch.tensor([1]).gcd_(torch.tensor([2, 3, 4]))",
    "torch.tensor([1, 2]).lcm_(torch.tensor([2, 3, 4]))",
    "torch.tensor([1.0, 2.0]) << 2",
    "2.5 << torch.tensor([1, 2])",
    "torch.tensor([1, 2]) << 2.5",
    "torch.tensor([True]) << torch.tensor([True])",
    "torch.tensor([1, 2]) >> torch.tensor([1, 2, 3])",
    "torch.tensor([1, 2]) << 'a'",
    "torch.bitwise_left_shift(2, 3)",
    "x = torch.tensor([1.0])\nx <<= 1",
    "torch.tensor([1, 2]).bitwise_right_shift_(torch.tensor([1, 2, 3]))",
    A + "torch.ldexp(a, 2)",
    A + "a.ldexp(2)",
    "torch.tensor([1, 2]).ldexp_(torch.tensor([1, 2]))",
    A + "a.ldexp_(torch.tensor([1, 2, 3]))",
    A + "torch.ldexp(a, torch.tensor([1]), out=torch.empty(2, 3))",
    "torch.frexp(torch.tensor([1, 2]))",
    "torch.frexp(2.0)",
    A + "a.ge_(1)",
    A + "b = a * 1\nb.ge_(torch.tensor([1.0, 2.0, 3.0, 4.0]))",
    "torch.tensor([1.0, 2.0]).lt_(torch.tensor([1.0, 2.0, 3.0]))",
    "torch.tensor([1.0]).ge_(torch.tensor([1.0, 2.0, 3.0]))",
    "torch.tensor([1.0, 2.0]).logical_and_(torch.tensor([1, 2, 3]))",
    "torch.tensor([True, False]).bitwise_or_(torch.tensor([1, 1]))",
    "torch.tensor([1.0]).bitwise_not_()",
    "torch.tensor([1.0]).bitwise_and_(torch.tensor([1.0]))",
    "torch.tensor([1.0, 2.0], requires_grad=True).float_power_(2)",
    "x = torch.tensor([1.0, 2.0])\nx.float_power_(2)",
    "torch.tensor([1, 2]).true_divide_(2)",
    "torch.tensor([1, 2]).copysign_(-1)",
    "torch.tensor([1.0, 2.0], requires_grad=True).apply_(lambda v: v)",
    "a = torch.tensor([1.0, 2.0], requires_grad=True)\nb = a * 1\nb.apply_(lambda v: v)",
    "a = torch.tensor([1.0, 2.0], requires_grad=True)\na.detach().map_(a, lambda p, q: p)",
    "a = torch.tensor([1.0, 2.0], requires_grad=True)\na.detach().map2_(a.detach(), a, lambda p, q, r: p)",
    "torch.tensor([1.0, 2.0]).apply_(lambda v: 'a')",
    "torch.tensor([1.0, 2.0]).apply_(lambda v: None)",
    "torch.tensor([1, 2]).apply_(lambda v: 'a')",
    "torch.tensor([1, 2], dtype=torch.int8).apply_(lambda v: 300)",
    "torch.tensor([1.0]).apply_(5)",
    "torch.tensor([1.0, 2.0]).apply_(lambda v: 1 / 0)",
    "torch.tensor([1.0, 2.0]).map_(torch.tensor([1, 2]), lambda p, q: p)",
    "torch.tensor([1.0, 2.0], dtype=torch.float64).map_(torch.tensor([1, 2], dtype=torch.int32), lambda p, q: p)",
    "torch.tensor([1.0, 2.0]).map2_(torch.tensor([1.0, 2.0]), torch.tensor([1, 2]), lambda p, q, r: p)",
    "torch.tensor([1.0, 2.0]).map2_(torch.tensor([1, 2]), torch.tensor([1.0, 2.0]), lambda p, q, r: p)",
    "torch.tensor([1.0, 2.0]).map_(torch.tensor([1.0, 2.0, 3.0]), lambda p, q: p)",
    "torch.tensor([[1.0, 2.0]]).map_(torch.tensor([[1.0], [2.0]]), lambda p, q: p)",
    "torch.tensor(5.0).map_(torch.tensor([1.0, 2.0]), lambda p, q: p)",
    "torch.tensor([1.0, 2.0]).map_([1, 2], lambda p, q: p)",
]


@pytest.mark.parametrize("code", ERRORS)
def test_missing_ops_errors_match_torch(code):
    assert_same_error(code + "\n")


# -- integer results bit for bit, every integer dtype, random values ------------------------------------------------
INTEGER_DTYPES = ("uint8", "int8", "int16", "int32", "int64")


def _pair(draw, dtype: str):
    limits = np.iinfo(np.dtype(dtype))
    values = st.lists(st.integers(int(limits.min), int(limits.max)), min_size=1, max_size=6)
    first = draw(values)
    second = draw(st.lists(st.integers(int(limits.min), int(limits.max)), min_size=len(first), max_size=len(first)))
    return first, second


@st.composite
def integer_operands(draw):
    dtype = draw(st.sampled_from(INTEGER_DTYPES))
    first, second = _pair(draw, dtype)
    return dtype, first, second


def _both(function_name: str, dtype: str, first, second, method=None):
    results = []
    for module in (torch, gradviz):
        x, y = (module.tensor(v, dtype=getattr(module, dtype)) for v in (first, second))
        results.append(getattr(module, function_name)(x, y) if method is None else method(x, y))
    expected, actual = results
    assert repr(actual.dtype) == str(expected.dtype)
    np.testing.assert_array_equal(actual.numpy(), expected.numpy())


@settings(max_examples=60, deadline=None)
@given(integer_operands())
def test_gcd_lcm_bits_match_torch(operands):
    dtype, first, second = operands
    _both("gcd", dtype, first, second)
    _both("lcm", dtype, first, second)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(INTEGER_DTYPES), st.data())
def test_shifts_bits_match_torch(dtype, data):
    limits = np.iinfo(np.dtype(dtype))
    first = data.draw(st.lists(st.integers(int(limits.min), int(limits.max)), min_size=1, max_size=6))
    shift_low = max(int(limits.min), -3)
    second = data.draw(st.lists(st.integers(shift_low, min(int(limits.max), 70)), min_size=len(first),
                                max_size=len(first)))
    _both("bitwise_left_shift", dtype, first, second, lambda x, y: x << y)
    _both("bitwise_right_shift", dtype, first, second, lambda x, y: x >> y)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1, max_size=6),
       st.sampled_from(("float16", "float32", "float64")))
def test_frexp_bits_match_torch(values, dtype):
    expected = torch.frexp(torch.tensor(values, dtype=getattr(torch, "float64")).to(getattr(torch, dtype)))
    actual = gradviz.frexp(gradviz.tensor(values, dtype=gradviz.float64).to(getattr(gradviz, dtype)))
    np.testing.assert_array_equal(actual.mantissa.numpy(), expected.mantissa.numpy())
    np.testing.assert_array_equal(actual.exponent.numpy(), expected.exponent.numpy())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, width=32), min_size=1, max_size=5), st.data())
def test_ldexp_bits_match_torch(values, data):
    exponents = data.draw(st.lists(st.integers(-160, 160), min_size=len(values), max_size=len(values)))
    expected = torch.ldexp(torch.tensor(values), torch.tensor(exponents))
    actual = gradviz.ldexp(gradviz.tensor(values), gradviz.tensor(exponents))
    np.testing.assert_array_equal(actual.numpy(), expected.numpy())


# -- central differences, first and second order ----------------------------------------------------------------------
def test_ldexp_gradcheck_and_gradgradcheck():
    from gradviz.autograd import gradcheck, gradgradcheck

    x = gradviz.tensor([[0.7, -1.3, 2.1], [0.2, 1.1, -0.4]], dtype=gradviz.float64, requires_grad=True)
    f = gradviz.tensor([0.5, -1.25, 2.0], dtype=gradviz.float64, requires_grad=True)
    assert gradcheck(gradviz.ldexp, (x, f))
    assert gradgradcheck(gradviz.ldexp, (x, f))
    # an integer exponent: PyTorch's derivative is an integer power, right for exponents >= 0 only
    assert gradcheck(lambda t: gradviz.ldexp(t, gradviz.tensor([1, 0, 3])), (x,))


def test_frexp_mantissa_gradcheck_and_gradgradcheck():
    from gradviz.autograd import gradcheck, gradgradcheck

    # away from powers of two, where the exponent (held fixed by the derivative) jumps
    x = gradviz.tensor([0.7, -1.3, 2.1, 5.5, -0.3], dtype=gradviz.float64, requires_grad=True)
    assert gradcheck(lambda t: gradviz.frexp(t).mantissa, (x,))
    assert gradgradcheck(lambda t: gradviz.frexp(t).mantissa, (x,))


def test_comparison_in_place_gradcheck():
    from gradviz.autograd import gradcheck

    x = gradviz.tensor([0.7, -1.3, 2.1], dtype=gradviz.float64, requires_grad=True)
    other = gradviz.tensor([0.5, 0.5, 3.0], dtype=gradviz.float64, requires_grad=True)
    assert gradcheck(lambda t, o: (t * 1).ge_(o), (x, other))
    assert gradcheck(lambda t: (t * 1).lt_(0.0), (x,))


def test_new_nodes_declare_a_formula_for_every_input():
    from gradviz.ops import integer_math, registry

    names = {cls.__name__ for cls in registry() if cls.__module__ == integer_math.__name__}
    assert {"LdexpBackward0", "FrexpBackward0", "GeBackward0", "GeBackward1", "NeBackward1"} <= names
    for cls in registry():
        if cls.__module__ == integer_math.__name__:
            assert set(cls.derivatives) == set(cls.inputs), cls.__name__
