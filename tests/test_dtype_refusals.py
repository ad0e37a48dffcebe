"""What each op does with bool, integer and half tensors, against torch itself: the kernels PyTorch has no
loop for raise its errors (``"abs_cpu" not implemented for 'Bool'``, relu of bools, softmax of integers,
``-`` of a mask), and the dtypes it gives back where it accepts them (``all`` of uint8 stays uint8, ``logit``
of integers is float32). The same lines run in both libraries and are compared: error type and text, or
the result's dtype, shape and values."""
from __future__ import annotations

import numpy as np
import pytest

import gradviz

torch = pytest.importorskip("torch")

DTYPES = ("bool", "uint8", "int32", "int64", "float16", "float32")


def _input(lib, name):
    values = np.array([[1, 2, 3], [0, 1, 2]])
    return lib.tensor((values % 2 if name == "bool" else values).tolist(), dtype=getattr(lib, name))


PROGRAMS = {
    # elementwise
    "relu": lambda lib, x: x.relu(), "torch.relu": lambda lib, x: lib.relu(x), "relu_": lambda lib, x: x.relu_(),
    "F.relu inplace": lambda lib, x: lib.nn.functional.relu(x, inplace=True), "abs": lambda lib, x: x.abs(),
    "abs_": lambda lib, x: x.abs_(), "builtin abs": lambda lib, x: abs(x), "neg": lambda lib, x: -x,
    "neg_": lambda lib, x: x.neg_(), "floor": lambda lib, x: x.floor(), "ceil": lambda lib, x: x.ceil(),
    "trunc": lambda lib, x: x.trunc(), "fix": lambda lib, x: x.fix(), "round": lambda lib, x: x.round(),
    "floor_": lambda lib, x: x.floor_(), "sgn": lambda lib, x: x.sgn(), "logit": lambda lib, x: x.logit(),
    "logit eps": lambda lib, x: lib.logit(x, 0.25), "softsign": lambda lib, x: lib.nn.functional.softsign(x),
    "hardtanh": lambda lib, x: lib.nn.functional.hardtanh(x), "hardtanh 0..1": lambda lib, x: lib.nn.functional.hardtanh(x, 0.0, 1.0),
    "hardtanh inplace": lambda lib, x: lib.nn.functional.hardtanh(x, -1.0, 1.0, inplace=True),
    "relu6": lambda lib, x: lib.nn.functional.relu6(x), "Hardtanh module": lambda lib, x: lib.nn.Hardtanh()(x),
    "bitwise_not": lambda lib, x: x.bitwise_not(), "torch.bitwise_not": lambda lib, x: lib.bitwise_not(x),
    "invert": lambda lib, x: ~x,
    # along a dim, or of everything
    "softmax last": lambda lib, x: x.softmax(1), "softmax first": lambda lib, x: x.softmax(0),
    "softmax -1": lambda lib, x: lib.softmax(x, -1), "F.softmax": lambda lib, x: lib.nn.functional.softmax(x, dim=0),
    "softmax dtype": lambda lib, x: x.softmax(0, dtype=lib.float64), "log_softmax": lambda lib, x: x.log_softmax(1),
    "log_softmax first": lambda lib, x: lib.nn.functional.log_softmax(x, dim=0),
    "softmin": lambda lib, x: lib.nn.functional.softmin(x, dim=1),
    "all": lambda lib, x: x.all(), "all dim": lambda lib, x: x.all(1), "all keepdim": lambda lib, x: x.all(0, keepdim=True),
    "any": lambda lib, x: x.any(), "any dim": lambda lib, x: lib.any(x, 1),
    "argmax": lambda lib, x: x.argmax(), "argmax dim": lambda lib, x: x.argmax(1), "argmin": lambda lib, x: x.argmin(0),
    "median": lambda lib, x: x.median(), "median dim": lambda lib, x: x.median(1).values,
    "kthvalue": lambda lib, x: x.kthvalue(1, 1).values, "topk": lambda lib, x: x.topk(1).values,
}


def _outcome(run):
    """What ``run()`` gives: the error's type and text, or the result's dtype, shape and values."""
    try:
        result = run()
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return type(error).__name__, str(error).replace("gradviz", "torch")
    values = np.nan_to_num(np.asarray(result.tolist(), dtype=float), nan=-7.0, posinf=7.0, neginf=-8.0)
    return str(result.dtype).replace("gradviz", "torch"), tuple(result.shape), np.round(values, 3).tolist()


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("program", list(PROGRAMS))
def test_dtypes_refused_and_kept_as_torch(program, name):
    _assert_same(lambda lib: PROGRAMS[program](lib, _input(lib, name)))


def _assert_same(program):
    """``program(torch)`` and ``program(gradviz)`` give the same outcome."""
    expected, actual = _outcome(lambda: program(torch)), _outcome(lambda: program(gradviz))
    if expected[0] == "torch.float16" == actual[0]:  # half precision: an ulp (about 1e-3) apart at most
        assert actual[1] == expected[1] and np.allclose(actual[2], expected[2], rtol=1e-3, atol=1e-3)
    else:
        assert actual == expected


BINARY = {
    "hypot": lambda lib, a, b: lib.hypot(a, b), "logaddexp": lambda lib, a, b: lib.logaddexp(a, b),
    "logaddexp2": lambda lib, a, b: lib.logaddexp2(a, b), "nextafter": lambda lib, a, b: lib.nextafter(a, b),
    "remainder": lambda lib, a, b: a % b, "fmod": lambda lib, a, b: lib.fmod(a, b),
    "floor_divide": lambda lib, a, b: a // b, "pow": lambda lib, a, b: a ** b,
    "bitwise_and": lambda lib, a, b: a & b, "bitwise_or": lambda lib, a, b: lib.bitwise_or(a, b),
    "bitwise_xor": lambda lib, a, b: a ^ b, "lerp": lambda lib, a, b: lib.lerp(a, b, 0.5),
    "isclose": lambda lib, a, b: lib.isclose(a, b), "allclose": lambda lib, a, b: lib.tensor(lib.allclose(a, b)),
    "dist": lambda lib, a, b: lib.dist(a, b),
}
PAIRS = [(first, second) for first in DTYPES for second in DTYPES]


def _pair(lib, first, second, values=(3, 2, 5), others=(2, 4, 3)):
    def make(name, numbers):
        return lib.tensor([bool(v % 2) if name == "bool" else v for v in numbers], dtype=getattr(lib, name))
    return make(first, values), make(second, others)


@pytest.mark.parametrize("first, second", PAIRS)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_kernels_refuse_dtypes_as_torch(op, first, second):
    """The operands' common dtype decides (``"hypot_cpu" not implemented for 'Long'``); numpy would compute."""
    _assert_same(lambda lib: BINARY[op](lib, *_pair(lib, first, second)))


@pytest.mark.parametrize("program", [
    lambda lib: lib.tensor([3]) % lib.tensor([0]), lambda lib: lib.fmod(lib.tensor([3]), lib.tensor([0, 1])),
    lambda lib: lib.tensor([3]) % 0, lambda lib: lib.fmod(lib.tensor([3]), 0), lambda lib: lib.tensor([3]) % False,
    lambda lib: lib.remainder(5, lib.tensor([0])), lambda lib: lib.tensor([3.0]) % lib.tensor([0.0]),
    lambda lib: lib.tensor([3]) % 0.0, lambda lib: lib.tensor([3]) // lib.tensor([0]),
])
def test_integer_division_by_zero_raises_as_torch(program):
    _assert_same(program)


@pytest.mark.parametrize("program", [
    lambda lib: lib.nn.functional.nll_loss(lib.ones(2, 3), lib.tensor([0.0, 1.0])),
    lambda lib: lib.nn.functional.nll_loss(lib.ones(2, 3), lib.tensor([0.0, 1.0, 2.0])),
    lambda lib: lib.nn.functional.nll_loss(lib.ones(2, 3), lib.tensor([0, 1], dtype=lib.uint8)),
    lambda lib: lib.nn.functional.nll_loss(lib.ones(2, 3), lib.tensor([0, 3])),
    lambda lib: lib.nn.functional.nll_loss(lib.ones(2, 3), lib.tensor([-1, 0])),
    lambda lib: lib.nn.functional.nll_loss(lib.ones(2, 3), lib.tensor([-100, 0])),
    lambda lib: lib.nn.functional.nll_loss(lib.ones(3), lib.tensor(5)),
    lambda lib: lib.nn.functional.nll_loss(lib.ones(2, 3), lib.tensor([True, False])),
    lambda lib: lib.nn.functional.nll_loss(lib.ones(2, 3, 4), lib.tensor([[0, 1, 5, 1], [0, 0, 0, 0]])),
    lambda lib: lib.nn.functional.nll_loss(lib.ones(2, 3), lib.tensor([0, 7]), ignore_index=7),
    lambda lib: lib.nn.functional.cross_entropy(lib.ones(2, 3), lib.tensor([1.0, 2.0])),
    lambda lib: lib.nn.functional.cross_entropy(lib.ones(2, 3), lib.tensor([4, 0])),
    lambda lib: lib.nn.functional.cross_entropy(lib.ones(2, 3), lib.tensor([0, 1], dtype=lib.int32)),
    lambda lib: lib.nn.CrossEntropyLoss()(lib.ones(2, 3), lib.tensor([0.0, 1.0])),
    lambda lib: lib.nn.functional.binary_cross_entropy(lib.tensor([2.0]), lib.tensor([3.0])),
    lambda lib: lib.nn.functional.binary_cross_entropy(lib.tensor([0.5]), lib.tensor([-0.5])),
    lambda lib: lib.nn.functional.binary_cross_entropy(lib.tensor([0.5]), lib.tensor([1.5])),
    lambda lib: lib.nn.BCELoss()(lib.tensor([0.5, 0.25]), lib.tensor([1.0, 0.0])),
])
def test_loss_targets_checked_as_torch(program):
    """Class-index targets of the wrong dtype or out of range, BCE targets outside [0, 1]: a learner's
    usual slips, with PyTorch's errors."""
    _assert_same(program)


def _products(lib):
    f64, linear = lib.float64, lib.nn.functional.linear
    return {
        "mm": lambda: lib.ones(2, 3, dtype=f64) @ lib.ones(3, 2), "mm shapes first": lambda: lib.ones(2, 3, dtype=f64) @ lib.ones(2, 3),
        "vector @ matrix": lambda: lib.ones(3, dtype=f64) @ lib.ones(3, 2), "mv": lambda: lib.ones(2, 3, dtype=f64) @ lib.ones(3),
        "torch.mv": lambda: lib.mv(lib.ones(2, 3), lib.ones(3, dtype=f64)), "mv shapes first": lambda: lib.ones(2, 3, dtype=f64) @ lib.ones(2),
        "dot dtypes first": lambda: lib.ones(3, dtype=f64) @ lib.ones(2),
        "bmm": lambda: lib.bmm(lib.ones(1, 2, 3, dtype=f64), lib.ones(1, 3, 2)),
        "bmm shapes first": lambda: lib.bmm(lib.ones(1, 2, 3, dtype=f64), lib.ones(1, 2, 2)),
        "3-D @ matrix": lambda: lib.ones(2, 2, 3, dtype=f64) @ lib.ones(3, 2), "3-D @ vector": lambda: lib.ones(2, 2, 3, dtype=f64) @ lib.ones(3),
        "matrix @ 3-D": lambda: lib.ones(2, 3, dtype=f64) @ lib.ones(2, 3, 2), "vector @ 3-D": lambda: lib.ones(3, dtype=f64) @ lib.ones(2, 3, 2),
        "3-D @ 3-D": lambda: lib.ones(2, 2, 3, dtype=f64) @ lib.ones(2, 3, 2), "4-D @ matrix": lambda: lib.ones(2, 2, 2, 3, dtype=f64) @ lib.ones(3, 2),
        "transposed 3-D @ matrix": lambda: lib.ones(2, 3, 2, dtype=f64).mT @ lib.ones(3, 2),
        "addmm": lambda: lib.addmm(lib.ones(2, dtype=f64), lib.ones(2, 3, dtype=f64), lib.ones(3, 2)),
        "addmm mats": lambda: lib.addmm(lib.ones(2), lib.ones(2, 3, dtype=f64), lib.ones(3, 2)),
        "addmm bias": lambda: lib.addmm(lib.ones(2, dtype=f64), lib.ones(2, 3), lib.ones(3, 2)),
        "linear": lambda: linear(lib.ones(2, 3, dtype=f64), lib.ones(2, 3)),
        "linear with bias": lambda: linear(lib.ones(2, 3, dtype=f64), lib.ones(2, 3), lib.ones(2)),
        "linear 3-D with bias": lambda: linear(lib.ones(2, 2, 3, dtype=f64), lib.ones(2, 3), lib.ones(2)),
        "nn.Linear on float64 data": lambda: lib.nn.Linear(3, 2)(lib.ones(4, 3, dtype=f64)),
        "integers @ floats": lambda: lib.ones(2, 2, dtype=lib.int64) @ lib.ones(2, 2),
    }


@pytest.mark.parametrize("case", list(_products(gradviz)))
def test_products_of_two_dtypes_raise_as_torch(case):
    """float64 data through float32 weights, a learner's everyday slip: each product kernel's own error."""
    _assert_same(lambda lib: _products(lib)[case]())
