"""In-place updates (``p -= lr * p.grad``, ``p.add_(g)``): the same values, version counts and errors as
PyTorch 2.13, on the fast paths ``Tensor._in_place`` takes under ``no_grad`` (0-d float parameters, numpy
arrays) and on the general one; numpy's warning state is left as it was, even when the update raises."""
from __future__ import annotations

import numpy as np
import pytest

import gradviz

SHAPES = [((3,), (4,)), ((3,), (3, 3)), ((2, 3), (3, 2)), ((), (2,)), ((), (1,)), ((3,), (1, 3)), ((2, 3), (3,)),
          ((3,), ()), ((), ()), ((2, 3), (2, 3))]
OPS = ["add_", "sub_", "mul_", "div_", "__iadd__", "__isub__", "__imul__", "__itruediv__"]


def _update(lib, shape, other_shape, op, dtype, mode):
    """``op`` on a fresh tensor with ``other`` of ``other_shape``: ('ok', values, version) or ('error', type, text)."""
    values = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float64).reshape(shape) / 4
    other = np.arange(2, 2 + int(np.prod(other_shape)), dtype=np.float64).reshape(other_shape) / 8
    lib_dtype = getattr(lib, dtype)
    target = lib.tensor(values, dtype=lib_dtype)
    if mode == "recorded":  # a non-leaf that requires grad: the update is recorded
        target = lib.tensor(values, dtype=lib_dtype, requires_grad=True) * 1
    before = np.geterr()
    try:
        if mode == "no_grad":
            with lib.no_grad():
                result = getattr(target, op)(lib.tensor(other, dtype=lib_dtype))
        else:
            result = getattr(target, op)(lib.tensor(other, dtype=lib_dtype))
    except Exception as error:  # noqa: BLE001 (the error is what is compared)
        assert np.geterr() == before
        return ("error", type(error).__name__, str(error))
    assert np.geterr() == before
    return ("ok", result.detach().numpy().tolist(), tuple(result.shape), target._version)


@pytest.mark.parametrize("mode", ["no_grad", "plain", "recorded"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape,other_shape", SHAPES)
def test_in_place_update_matches_torch(torch, shape, other_shape, op, dtype, mode):
    assert _update(gradviz, shape, other_shape, op, dtype, mode) == _update(torch, shape, other_shape, op, dtype, mode)


def test_shape_error_without_torch():
    p = gradviz.ones(3)
    with gradviz.no_grad(), pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast "
                                                              r"shape \[3, 3\]"):
        p -= gradviz.ones(3, 3)
    assert p._version == 0 and p.tolist() == [1.0, 1.0, 1.0]
    scalar = gradviz.tensor(1.0)
    with gradviz.no_grad(), pytest.raises(RuntimeError, match=r"output with shape \[\] doesn't match the broadcast "
                                                              r"shape \[2, 3\]"):
        scalar.add_(gradviz.ones(2, 3))
    with gradviz.no_grad(), pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                                              r"tensor b \(4\) at non-singleton dimension 0"):
        p.sub_(gradviz.ones(4))
    assert scalar._version == 0 and p._version == 0


@pytest.mark.parametrize("code", [
    "x = torch.tensor([1, 2]); x /= 2",
    "x = torch.tensor([1, 2]); x.div_(2)",
    "x = torch.tensor([True]); x /= True",
    "x = torch.tensor([1, 2], dtype=torch.uint8); x.div_(torch.tensor([1, 2]))",
])
def test_true_division_into_an_integer_tensor_is_refused_as_torch_does(code):
    """True division of integers gives a float, which an integer tensor cannot hold (numpy's
    UFuncTypeError came through for a number divisor)."""
    pytest.importorskip("torch")
    from parity import assert_same_error

    assert_same_error(code)
