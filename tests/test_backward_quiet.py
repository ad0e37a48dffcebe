"""numpy's warnings in a plain ``backward()``: switched off once for the whole unhooked pass.

PyTorch prints nothing when a gradient overflows; gradviz's formulas compute with numpy, which would
print a RuntimeWarning, so they run with numpy's error state set to "ignore" (``backends/quiet.py``).
The unhooked loop sets that state once for the pass and the formulas see it is set. These tests pin
down what must not change with it: the same bits as the per-formula silencing (and as torch), the
user's numpy settings restored after the pass (also when it raises), and the user's own code (a
custom Function's backward, a saved-tensor unpack hook) still running under the user's settings, so
that what it prints it still prints, as with torch.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradviz
from gradviz.autograd.engine import GraphTask, make_grads
from gradviz.autograd.function import gradient_edge
from gradviz.backends import quiet
from gradviz.ops.arithmetic import MulBackward0

from programs import random_programs, run_program


def _task(loss, keep_graph=True) -> GraphTask:
    return GraphTask([gradient_edge(loss)], make_grads([loss], [None]), keep_graph=keep_graph)


def _per_formula_backward(loss) -> None:
    """``loss.backward()`` through the hooked loop, where every formula silences itself."""
    task = _task(loss, keep_graph=False)
    task.hooked = True
    task.execute()


def _bits(array) -> bytes:
    array = np.ascontiguousarray(array)
    return array.dtype.str.encode() + array.tobytes()


def _leaves(lib, seed, shape, dtype):
    rng = np.random.default_rng(seed)
    return tuple(lib.tensor(rng.uniform(-2, 2, shape).astype(dtype), requires_grad=True) for _ in range(2))


def _grads(lib, program, seed, shape, dtype, per_formula=False):
    x, y = _leaves(lib, seed, shape, dtype)
    loss = run_program(lib, program, x, y)
    if per_formula:
        _per_formula_backward(loss)
    else:
        loss.backward()
    return [None if t.grad is None else (t.grad.detach().numpy() if lib is not gradviz else t.grad._data)
            for t in (x, y)]


SHAPES = st.sampled_from([(), (3,)])
DTYPES = st.sampled_from([np.float32, np.float64])


@settings(max_examples=40, deadline=None)
@given(program=random_programs(), seed=st.integers(0, 2**16), shape=SHAPES, dtype=DTYPES)
def test_silenced_pass_gives_the_bits_of_per_formula_silencing(program, seed, shape, dtype):
    silenced = _grads(gradviz, program, seed, shape, dtype)
    per_formula = _grads(gradviz, program, seed, shape, dtype, per_formula=True)
    for a, b in zip(silenced, per_formula):
        assert (a is None) == (b is None)
        if a is not None:
            assert _bits(a) == _bits(b)


@settings(max_examples=30, deadline=None)
@given(program=random_programs(), seed=st.integers(0, 2**16), shape=SHAPES)
def test_silenced_pass_matches_torch(program, seed, shape):
    torch = pytest.importorskip("torch")
    expected, actual = (_grads(lib, program, seed, shape, np.float64) for lib in (torch, gradviz))
    for e, a in zip(expected, actual):
        assert (e is None) == (a is None)
        if e is not None:
            np.testing.assert_allclose(a, e, rtol=1e-9, atol=1e-12)


def _overflowing(lib, shape):
    x = lib.full(shape, 3e38, requires_grad=True)  # float32: every product below overflows
    w = lib.full(shape, 10.0, requires_grad=True)
    return x, w, ((x * w) * (x * w) + (x * w).exp() + x.tanh() * 3e38).sum()


@pytest.mark.parametrize("shape", [(), (2,)])
def test_an_overflowing_pass_prints_nothing_and_keeps_the_users_numpy_settings(shape):
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (torch, gradviz):
        x, w, loss = _overflowing(lib, shape)
        with np.errstate(all="raise"), warnings.catch_warnings():
            warnings.simplefilter("error")
            before = np.geterr()
            if lib is gradviz:  # the unhooked loop, the one that silences once
                assert _task(loss).hooked is False
            loss.backward()  # neither raises nor warns (torch prints nothing)
            assert np.geterr() == before
        grads.append([np.asarray(t.grad.detach().numpy() if lib is torch else t.grad._data) for t in (x, w)])
    for expected, actual in zip(*grads):
        assert _bits(expected) == _bits(actual)
    assert np.geterr()["over"] == "warn"  # numpy's default, as it was before the test


def _warning_function(lib):
    class Overflow(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            seen.append(np.geterr()["over"])
            np.float32(3e38) * np.float32(10)  # the user's own numpy overflow: numpy's warning
            return grad * 2

    seen = []
    return Overflow, seen


def test_a_custom_functions_backward_runs_under_the_users_numpy_settings():
    torch = pytest.importorskip("torch")
    for lib in (torch, gradviz):
        function, seen = _warning_function(lib)
        x = lib.tensor(3e38, requires_grad=True)
        loss = (function.apply(x * 3.0) * 10.0).exp()  # overflowing built-in formulas around it
        with pytest.warns(RuntimeWarning, match="overflow encountered in scalar multiply") as record:
            loss.backward()
        assert len(record) == 1 and seen == ["warn"]
        function, seen = _warning_function(lib)
        x = lib.tensor(1.0, requires_grad=True)
        with np.errstate(over="raise"):
            with pytest.raises(FloatingPointError, match="overflow encountered in scalar multiply"):
                (function.apply(x) * 3e38 * 10.0).sum().backward()
            assert seen == ["raise"] and np.geterr()["over"] == "raise"  # restored after the error
    assert np.geterr()["over"] == "warn"


def test_an_unpack_hook_that_warns_still_warns():
    torch = pytest.importorskip("torch")

    def unpack(tensor):
        np.float32(3e38) * np.float32(10)
        return tensor

    for lib in (torch, gradviz):
        x = lib.tensor(2.0, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda tensor: tensor, unpack):
            loss = (x * x) * 3e38 * 10.0
        with pytest.warns(RuntimeWarning, match="overflow encountered in scalar multiply") as record:
            loss.backward()
        assert len(record) == 2  # one per unpacked saved tensor (x twice)
        assert float(x.grad) == float("inf")


def test_an_unpack_hook_runs_under_the_users_numpy_settings_in_a_silenced_pass():
    torch = pytest.importorskip("torch")
    for lib in (torch, gradviz):
        seen = []

        def unpack(tensor):
            seen.append(np.geterr()["over"])
            np.float32(3e38) * np.float32(10)
            return tensor

        x = lib.tensor(2.0, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda tensor: tensor, unpack):
            loss = (x * x) * 3e38 * 10.0
        if lib is gradviz:
            assert _task(loss).hooked is False  # the unhooked loop, silenced once for the pass
        with np.errstate(over="raise"):
            with pytest.raises(FloatingPointError, match="overflow encountered in scalar multiply"):
                loss.backward()
            assert np.geterr()["over"] == "raise"  # restored after the error
        assert seen == ["raise"]
    assert np.geterr()["over"] == "warn"


def _silenced_formulas(monkeypatch) -> list:
    """Whether each MulBackward0 formula ran inside a pass silenced as a whole."""
    seen = []
    formula = MulBackward0.backward

    def watched(ctx, grad):
        seen.append(quiet._get() is quiet._IGNORE)
        return formula(ctx, grad)

    monkeypatch.setattr(MulBackward0, "backward", watched)
    return seen


def test_saved_tensor_hooks_used_once_leave_later_passes_silenced_as_a_whole(monkeypatch):
    x = gradviz.tensor(2.0, requires_grad=True)
    with gradviz.autograd.graph.saved_tensors_hooks(lambda tensor: tensor, lambda tensor: tensor):
        hooked_graph = x * x  # kept alive: its saved tensors still hold their hooks
    seen = _silenced_formulas(monkeypatch)
    (x * 3.0).backward()  # a graph saved without hooks: the pass is silenced once, as it was before
    hooked_graph.backward()  # its saved tensors' unpack hook runs, and this pass is silenced too
    assert seen == [True, True]
    assert float(x.grad) == 7.0


# -- the 0-d product's backward, written out: the same errors and bits as ctx.saved and _times -----------
def _product_outcome(lib, case, dtype):
    x = lib.tensor(np.asarray(1.5, dtype=dtype), requires_grad=True)
    y = lib.tensor(np.asarray(-0.75, dtype=dtype), requires_grad=case != "one side")
    product = x * y
    loss = product * 3.0
    try:
        if case == "modified":
            with lib.no_grad():
                y.add_(1.0)
        loss.backward(retain_graph=case == "twice, retained")
        if case.startswith("twice"):
            loss.backward()
    except RuntimeError as error:
        return type(error), str(error)
    return [None if t.grad is None else _bits(np.asarray(t.grad.detach().numpy() if lib is not gradviz
                                                          else t.grad._data)) for t in (x, y)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["plain", "one side", "modified", "twice", "twice, retained"])
def test_a_0d_products_backward_matches_torch(case, dtype):
    torch = pytest.importorskip("torch")
    assert _product_outcome(gradviz, case, dtype) == _product_outcome(torch, case, dtype)
