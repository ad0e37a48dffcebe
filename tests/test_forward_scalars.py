"""``a + b``, ``a - b`` and ``a * b`` on two plain 0-d float tensors record in one frame, exactly as before.

``arithmetic.scalar_pair_operator`` is what ``Tensor.__add__``/``__sub__``/``__mul__`` run first (the
reflected ``__radd__``/``__rmul__``, whose other operand is never a Tensor, are the lean apply as before): for two plain 0-d float32/float64 tensors of one dtype, not views, at
least one requiring grad, in plain grad mode, it makes the node and output itself; anything else goes to the
op's lean apply. The lean apply is the reference here (``test_apply_lean.py`` holds it to the general apply):
the same call runs through the operator and through ``cls.apply`` on freshly made inputs of every kind and in
every mode, and everything recorded is compared (output bits, node class, edges, the shared
``needs_input_grad``, constants, sequence numbers, saved entries and their versions, ``metas``, gradients,
errors). PyTorch 2.13 is the oracle for values, graphs, saved tensors and errors.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradviz
from gradviz.ops import arithmetic
from test_apply_lean import KINDS, MODES, lean, run

OPERATORS = {"add": ("__add__", arithmetic.AddBackward0), "sub": ("__sub__", arithmetic.SubBackward0),
             "mul": ("__mul__", arithmetic.MulBackward0), "radd": ("__radd__", arithmetic.AddBackward0),
             "rmul": ("__rmul__", arithmetic.MulBackward0)}
OPS = {name: "add" if name == "radd" else "mul" if name == "rmul" else name for name in OPERATORS}
# any value, the float step's edges included: the range's ends (overflow goes to numpy), subnormals, -0.0, inf, nan
ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True, width=32) | st.sampled_from(
    [0.0, -0.0, 3.4028234663852886e38, -3.4028234663852886e38, 1.401298464324817e-45, 1.5e-39, 1e308, 2.0 ** 127])


def through_operator(name):
    method = getattr(gradviz.Tensor, OPERATORS[name][0])

    def apply(cls, first, second):
        assert cls is OPERATORS[name][1]
        return method(first, second)
    return apply


def test_the_operators_take_the_one_frame_path_for_a_plain_pair(monkeypatch):
    """Not vacuous: a plain 0-d pair never reaches the op's forward (nor its apply)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the general path ran")

    for name, (method, cls) in OPERATORS.items():
        if name.startswith("r"):
            continue
        for dtype in (np.float32, np.float64):
            a = gradviz.tensor(np.asarray(1.5, dtype), requires_grad=True)
            b = gradviz.tensor(np.asarray(-0.75, dtype))
            with monkeypatch.context() as patch:
                patch.setattr(cls, "forward", refuse)
                patch.setattr(cls, "apply", refuse)
                out = getattr(gradviz.Tensor, method)(a, b)
                out2 = getattr(gradviz.Tensor, method)(b, a)
            assert type(out.grad_fn) is cls and type(out2.grad_fn) is cls and out.dtype == a.dtype
    # and what it does not take: a view, a 1-element vector, mixed dtypes, float16, a number, nothing requiring grad
    a = gradviz.tensor(1.5, requires_grad=True)
    others = [a[...], gradviz.tensor([2.0]), gradviz.tensor(2.0, dtype=gradviz.float64),
              gradviz.tensor(2.0, dtype=gradviz.float16), 2.0]
    with monkeypatch.context() as patch:
        patch.setattr(arithmetic.MulBackward0, "forward", refuse)
        for other in others:
            with pytest.raises(AssertionError, match="the general path ran"):
                a * other
        with pytest.raises(AssertionError, match="the general path ran"):
            a.detach() * a.detach()


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(sorted(OPERATORS)), kinds=st.tuples(st.sampled_from(KINDS), st.sampled_from(KINDS)),
       shape=st.sampled_from([(), (), (), (1,)]), dtype=st.sampled_from([np.float32, np.float64, np.float16]),
       values=st.tuples(ANY_FLOAT, ANY_FLOAT), mode_name=st.sampled_from(MODES))
def test_the_operator_records_what_the_lean_apply_records(name, kinds, shape, dtype, values, mode_name):
    if kinds[0] in ("number", "int"):  # an operator's first operand is the tensor it is called on
        kinds = ("data",) + kinds[1:]
    with np.errstate(all="ignore"):  # (np.full of an out-of-range value for float16/float32 warns)
        assert run(through_operator(name), OPS[name], kinds, shape, dtype, values, mode_name) == \
            run(lean, OPS[name], kinds, shape, dtype, values, mode_name)


PLAIN = ("leaf", "live_leaf", "output", "data")  # the operands the one-frame path takes


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(sorted(OPERATORS)), kinds=st.tuples(st.sampled_from(PLAIN), st.sampled_from(PLAIN)),
       dtype=st.sampled_from([np.float32, np.float64]), values=st.tuples(ANY_FLOAT, ANY_FLOAT),
       mode_name=st.sampled_from(["grad", "grad", "grad", "no_grad", "anomaly", "saved_hooks", "second_order"]))
def test_plain_pairs_record_what_the_lean_apply_records(name, kinds, dtype, values, mode_name):
    """The same comparison, drawn where the one-frame path applies (most draws above fall back at once)."""
    with np.errstate(all="ignore"):
        assert run(through_operator(name), OPS[name], kinds, (), dtype, values, mode_name) == \
            run(lean, OPS[name], kinds, (), dtype, values, mode_name)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(["add", "sub", "mul"]), dtype=st.sampled_from(["float32", "float64"]),
       values=st.tuples(ANY_FLOAT, ANY_FLOAT), grads=st.tuples(st.booleans(), st.booleans()))
def test_values_and_gradients_are_torchs_bits(name, dtype, values, grads):
    torch = pytest.importorskip("torch")
    if not any(grads):
        grads = (True, False)
    results = []
    for lib in (torch, gradviz):
        a = lib.tensor(values[0], dtype=getattr(lib, dtype), requires_grad=grads[0])
        b = lib.tensor(values[1], dtype=getattr(lib, dtype), requires_grad=grads[1])
        out = getattr(a, OPERATORS[name][0])(b)
        out.backward(lib.tensor(0.75, dtype=getattr(lib, dtype)))
        node = out.grad_fn
        results.append((np.asarray(out.detach().numpy()).tobytes(), str(out.dtype).split(".")[-1], type(node).__name__,
                        [type(fn).__name__ if fn is not None else None for fn, _ in node.next_functions],
                        [None if t.grad is None else t.grad.numpy().tobytes() for t in (a, b)]))
    assert results[0] == results[1]


SAVED_AND_ERRORS = [
    # saved tensors of a product of a leaf and an op's output, one of which needs no gradient
    "a = torch.tensor(1.5, requires_grad=True)\nx = torch.tensor(-2.0)\nh = a * a\ny = h * x\nz = x * a\n"
    "s = y + z - h\ns.backward(retain_graph=True)\n",
    # the product's saved input changed in place: torch's error, with its version numbers
    "a = torch.tensor(1.5, requires_grad=True)\nb = torch.tensor(0.5, requires_grad=True)\nh = a + b\ny = h * b\n"
    "h.mul_(2.0)\ny.backward()\n",
    # backward through the graph a second time
    "a = torch.tensor(1.5, requires_grad=True)\nb = torch.tensor(0.5, requires_grad=True)\ny = a * b\n"
    "y.backward()\ny.backward()\n",
    # the saved tensor after the graph was freed
    "a = torch.tensor(1.5, requires_grad=True)\nb = torch.tensor(0.5, requires_grad=True)\ny = a * b\n"
    "y.backward()\nprint(y.grad_fn._saved_self)\n",
]


@pytest.mark.parametrize("code", SAVED_AND_ERRORS)
def test_saved_tensors_and_errors_are_torchs(code):
    pytest.importorskip("torch")
    from parity import assert_same, assert_same_error, raised

    import torch
    if raised(code, torch) is None:
        assert_same(code)
    else:
        assert_same_error(code)


def test_saved_tensor_identity_and_versions_match_torch():
    torch = pytest.importorskip("torch")
    seen = []
    for lib in (torch, gradviz):
        a = lib.tensor(1.5, requires_grad=True)
        b = lib.tensor(0.5, requires_grad=True)
        h = a + b
        y = h * a
        saved = y.grad_fn._saved_self
        seen.append((saved._version, saved.requires_grad, type(saved.grad_fn).__name__, y.grad_fn._saved_other.is_leaf,
                     h._version, y._version, saved.item()))
    assert seen[0] == seen[1]
