"""Dtypes and tensor creation against torch itself. Type promotion: every pair of the dtypes gradviz has,
as tensors with dims, 0-d tensors and Python numbers, through the binary operators, ``cat``, ``where``
and ``result_type``/``promote_types`` (``uint8`` with ``int8`` is ``int16`` in PyTorch: neither holds
the other's values); subtraction's refusal of bools; ``tensor()`` of out-of-range numbers and of ragged
lists, ``eye`` of negative sizes and bad device strings: the same lines run in both, results or errors
compared."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import gradviz

torch = pytest.importorskip("torch")

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
SCALARS = (True, 3, 2.5)


def _make(lib, name, shape):
    values = np.array([1, 2, 3][:max(1, int(np.prod(shape)))]).reshape(shape)  # no 0 / 0: nan != nan
    return lib.tensor(values.tolist(), dtype=getattr(lib, name))  # bool: all True


def _outcome(run):
    try:
        result = run()
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return type(error).__name__, str(error).replace("gradviz", "torch")
    if isinstance(result, (torch.Tensor, gradviz.Tensor)):
        return str(result.dtype).replace("gradviz", "torch"), result.tolist()
    return str(result).replace("gradviz", "torch")


def _both(program):
    return _outcome(lambda: program(torch)), _outcome(lambda: program(gradviz))


@pytest.mark.parametrize("first, second", list(itertools.product(DTYPES, repeat=2)))
@pytest.mark.parametrize("shapes", [((2,), (2,)), ((2,), ()), ((), (2,)), ((), ())])
def test_binary_operators_promote_as_torch(first, second, shapes):
    for operator in ("__add__", "__mul__", "__sub__", "__truediv__", "__eq__"):
        expected, actual = _both(lambda lib: getattr(_make(lib, first, shapes[0]), operator)(_make(lib, second, shapes[1])))
        assert actual == expected, (operator, first, second, shapes)


@pytest.mark.parametrize("first, second", list(itertools.product(DTYPES, repeat=2)))
def test_cat_where_and_result_type_promote_as_torch(first, second):
    programs = {
        "cat": lambda lib: lib.cat([_make(lib, first, (2,)), _make(lib, second, (3,))]),
        "where": lambda lib: lib.where(lib.tensor([True, False]), _make(lib, first, (2,)), _make(lib, second, (2,))),
        "result_type": lambda lib: lib.result_type(_make(lib, first, (2,)), _make(lib, second, ())),
        "promote_types": lambda lib: lib.promote_types(getattr(lib, first), getattr(lib, second)),
    }
    for name, program in programs.items():
        expected, actual = _both(program)
        assert actual == expected, (name, first, second)


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("scalar", SCALARS)
def test_python_numbers_promote_as_torch(name, scalar):
    for shape in ((2,), ()):
        expected, actual = _both(lambda lib: _make(lib, name, shape) * scalar)
        assert actual == expected, (name, scalar, shape)
        expected, actual = _both(lambda lib: scalar + _make(lib, name, shape))
        assert actual == expected, (name, scalar, shape)


def _no_grad_isub(lib, tensor, other):
    with lib.no_grad():  # an optimizer's update: gradviz's fast path
        tensor -= other
    return tensor


@pytest.mark.parametrize("name", DTYPES)
def test_subtraction_with_a_bool_operand_raises_as_torch(name):
    """``-`` with a bool tensor or Python bool on either side (operator, function, method, rsub, in place with
    grad on and off)."""
    programs = (
        lambda lib: _make(lib, name, (2,)) - _make(lib, "bool", (2,)),
        lambda lib: _make(lib, "bool", ()) - _make(lib, name, (2,)),
        lambda lib: _make(lib, name, (2,)) - True,
        lambda lib: True - _make(lib, name, (2,)),
        lambda lib: 2 - _make(lib, name, (2,)),
        lambda lib: lib.sub(_make(lib, name, (2,)), _make(lib, "bool", (2,)), alpha=2),
        lambda lib: lib.rsub(_make(lib, name, (2,)), _make(lib, "bool", (2,))),
        lambda lib: lib.rsub(_make(lib, name, (2,)), 3, alpha=2),
        lambda lib: _make(lib, name, (2,)).sub(True),
        lambda lib: _make(lib, name, (2,)).sub_(_make(lib, "bool", (2,))),
        lambda lib: _make(lib, name, (2,)).__isub__(True),
        lambda lib: _no_grad_isub(lib, _make(lib, name, (2,)), _make(lib, "bool", (2,))),
        lambda lib: _no_grad_isub(lib, _make(lib, "bool", (2,)), _make(lib, name, (2,))),
    )
    for index, program in enumerate(programs):
        expected, actual = _both(program)
        assert actual == expected, (index, name)


@pytest.mark.parametrize("values, name", [
    ([-3], "uint8"), (-1, "uint8"), ([-255, 3.7], "uint8"), ([-256], "uint8"), ([-3, 300], "uint8"), (300, "uint8"),
    ([-3.7], "uint8"), ([200], "int8"), ([[-128, 127]], "int8"), ([-129], "int8"), ([1.5e10], "int32"),
    ([3e9], "int32"), ([2 ** 63], "int64"), ([-2 ** 63], "int64"), ([True, -1], "uint8"), ([1e40], "float32"),
    ([70000.0], "float16"),
])
def test_out_of_range_numbers_convert_as_torch(values, name):
    """``tensor(values, dtype=...)``: what wraps around, what overflows, and the error PyTorch gives."""
    expected, actual = _both(lambda lib: lib.tensor(values, dtype=getattr(lib, name)))
    assert actual == expected


@pytest.mark.parametrize("values", [
    [[1, 2], [3]], [[1, 2], 3], [[[1, 2], [3, 4]], [[1, 2], [3]]], [[1], [2, 3]], [[[1]], [[1], [2]]],
    [[1, 2], [3, 4, 5], [6]], [[1], []], [[1, 2], (3, 4)], [[1.5, 2], [3]],
])
def test_ragged_lists_raise_as_torch(values):
    """A nested list that is not a block: PyTorch names the dim and the lengths."""
    expected, actual = _both(lambda lib: lib.tensor(values))
    assert actual == expected


@pytest.mark.parametrize("sizes", [(-1,), (2, -3), (-2, -3), (0,), (2, 0)])
def test_eye_sizes_as_torch(sizes):
    expected, actual = _both(lambda lib: lib.eye(*sizes))
    assert actual == expected


@pytest.mark.parametrize("text", ["gpu", "CPU", "cuda:x", "cpu:"])
def test_bad_device_strings_raise_as_torch(text):
    expected, actual = _both(lambda lib: lib.device(text))
    assert actual == expected


@pytest.mark.parametrize("program", [
    lambda lib, x: x.to(lib.ones(1, dtype=lib.float64)), lambda lib, x: x.to(lib.ones(1)) is x,
    lambda lib, x: x.to(lib.float32, copy=True) is x, lambda lib, x: x.to(copy=True).grad_fn.name(),
    lambda lib, x: x.to(lib.ones(1, dtype=lib.int64)).dtype,
])
def test_to_another_tensor_and_copy_as_torch(program):
    """``x.to(other)`` takes other's dtype and device; ``copy=True`` copies (and records) even when nothing changes."""
    expected, actual = _both(lambda lib: program(lib, lib.tensor([1.0, 2.0], requires_grad=True)))
    assert actual == expected


def test_data_ptr_shows_shared_memory_as_torch():
    """What tutorials print to show that a view shares memory: equal pointers, and offsets in elements."""
    def program(lib):
        x = lib.arange(6.0).reshape(2, 3)
        views = (x.view(6), x.t(), x[1:], x[:, 1], x.clone(), x.detach(), x.reshape(3, 2), x.contiguous())
        return [(v.data_ptr() - x.data_ptr()) // x.element_size() for v in views], type(x.data_ptr()).__name__
    expected, actual = program(torch), program(gradviz)
    assert actual[1] == expected[1] == "int"
    clone = 4  # a clone's memory lies elsewhere in both; compare only that it differs
    assert actual[0][:clone] + actual[0][clone + 1:] == expected[0][:clone] + expected[0][clone + 1:]
    assert actual[0][clone] != 0 and expected[0][clone] != 0
