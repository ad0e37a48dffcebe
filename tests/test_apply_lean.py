"""The lean apply of ops with one or two graph inputs records exactly what the general apply records.

``OpFunction.__init_subclass__`` gives an op with one or two graph inputs ``lean_apply(cls)`` (its
pass over the inputs written out), and ``+ - * /`` are that apply itself with the operator's operand
check. The general apply (``OpFunction.apply``) is still the reference: here the same call runs on
both paths, on freshly made inputs of every kind (leaves with and without a live AccumulateGrad, op
outputs, tensors without grad, numbers, views with and without grad, parameters), in every mode
(grad on and off, inference mode, anomaly mode, saved-tensor hooks), and what each leaves behind is
compared: output bits, node class, ``next_functions``, ``needs_input_grad`` (the same shared tuple),
constants, sequence numbers, saved entries, versions, gradients and errors. PyTorch 2.13 is the
oracle for the graphs drawn scalar programs record through the operators.
"""
from __future__ import annotations

import contextlib
import functools
import warnings
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradviz
from gradviz.autograd.function import _NEEDS, _general_apply
from gradviz.autograd.node import AccumulateGrad, Node, SavedTensor
from gradviz.ops import arithmetic, elementwise, unary

KINDS = ("leaf", "live_leaf", "output", "data", "number", "int", "view", "data_view", "no_grad_view", "parameter")
# (op class, its extra positional parameters, its keyword parameters)
OPS = {
    "add": (arithmetic.AddBackward0, (), {}), "add_alpha": (arithmetic.AddBackward0, (), {"alpha": 2}),
    "sub": (arithmetic.SubBackward0, (), {}), "mul": (arithmetic.MulBackward0, (), {}),
    "div": (arithmetic.DivBackward0, (), {}), "tanh": (unary.TanhBackward0, (), {}),
    "exp": (unary.ExpBackward0, (), {}), "sigmoid": (unary.SigmoidBackward0, (), {}),
    "relu": (unary.ReluBackward0, (), {}), "square": (arithmetic.PowBackward0, (2,), {}),
    "pow_half": (arithmetic.PowBackward0, (0.5,), {}),
}
MODES = ("grad", "no_grad", "inference", "anomaly", "saved_hooks", "second_order")


def make_input(kind: str, shape: tuple, dtype, value: float, anchors: list):
    """A fresh input of ``kind``; ``anchors`` keeps alive what a live AccumulateGrad needs."""
    data = np.full(shape, value, dtype=dtype)
    if kind == "number":
        return float(value)
    if kind == "int":
        return 2
    if kind == "data":
        return gradviz.tensor(data)
    if kind == "data_view":
        return gradviz.tensor(data)[...]
    if kind == "parameter":
        return gradviz.nn.Parameter(gradviz.tensor(data))
    leaf = gradviz.tensor(data, requires_grad=True)
    if kind == "live_leaf":
        anchors.append(leaf * 1.0)  # a graph that holds the leaf's AccumulateGrad
    elif kind == "output":
        return leaf * 1.0
    elif kind == "view":
        return leaf[...]
    elif kind == "no_grad_view":
        with gradviz.no_grad():
            return leaf[...]
    return leaf


@contextlib.contextmanager
def mode(name: str):
    if name == "no_grad":
        with gradviz.no_grad():
            yield
    elif name == "inference":
        with gradviz.inference_mode():
            yield
    elif name == "anomaly":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled ..."
            with gradviz.autograd.detect_anomaly():
                yield
    elif name == "saved_hooks":
        with gradviz.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            yield
    elif name == "second_order":  # as while a create_graph backward pass runs a node: what it records gets order 2
        from gradviz.grad_mode import _state

        _state.backward_order = 2
        try:
            yield
        finally:
            _state.backward_order = 0
    else:
        yield


def _position(value, inputs):
    for index, item in enumerate(inputs):
        if value is item:
            return index
    return None


def describe_edge(edge, inputs):
    node, output_nr = edge
    if node is None:
        return None
    if type(node) is AccumulateGrad:
        return ("AccumulateGrad", _position(node.variable, inputs), output_nr)
    # a node already in the graph: the grad_fn of the input it came with (or of that input's base)
    owners = [index for index, item in enumerate(inputs) if isinstance(item, gradviz.Tensor) and item.grad_fn is node]
    return (type(node).__name__, tuple(owners), output_nr)


def describe_saved(entry, inputs, out):
    if type(entry) is not SavedTensor:
        return ("value", entry)
    data = entry.data
    return ("saved", None if data is None else (data.dtype.str, data.shape, data.tobytes()), entry.saved_version,
            entry.is_output, entry.requires_grad, _position(entry.tensor, inputs),
            entry.version_counter is out._vc if entry.is_output else _position_of_counter(entry, inputs),
            entry.hooks is not None)


def describe_constant(constant, inputs):
    """An input without grad as the node keeps it for the graph view: a number, or a weak reference to a tensor."""
    if isinstance(constant, weakref.ref):
        return ("weak", _position(constant(), inputs))
    if isinstance(constant, gradviz.Tensor):
        return ("tensor", _position(constant, inputs))
    return ("value", type(constant), constant)


def _position_of_counter(entry, inputs):
    return _position(entry.version_counter, [getattr(item, "_vc", None) for item in inputs])


def run(apply, op, kinds, shape, dtype, values, mode_name):
    """Make the inputs, apply the op, and describe everything it recorded (or the error it raised)."""
    cls, extra, keywords = OPS[op]
    anchors = []
    inputs = [make_input(kind, shape, dtype, value, anchors) for kind, value in zip(kinds, values)]
    before = Node()._sequence_nr
    try:
        with mode(mode_name):
            out = apply(cls, *inputs, *extra, **keywords)
    except Exception as error:  # noqa: BLE001 (both paths must raise alike)
        return ("raised", type(error), str(error))
    after = Node()._sequence_nr
    node = out.grad_fn
    record = [out._data.dtype.str, out._data.shape, out._data.tobytes(), out.requires_grad, out.is_leaf,
              out._vc, out._output_nr, out._backend, after - before, out.is_inference()]
    if node is not None:
        constants = node._constants
        record += [type(node).__name__, node._sequence_nr - before, [describe_edge(e, inputs) for e in node.next_functions],
                   node.needs_input_grad, node.needs_input_grad is _NEEDS.get(node.needs_input_grad), node.backend, node._order,
                   None if constants is None else [describe_constant(c, inputs) for c in constants],
                   [(name, describe_saved(entry, inputs, out)) for name, entry in (node._packed or {}).items()],
                   getattr(node, "metas", None), sorted(node._metadata or {})]  # anomaly mode's traceback
        if out.requires_grad and out._data.dtype.kind == "f":
            try:
                out.backward(gradviz.ones_like(out))
                record.append([None if not isinstance(item, gradviz.Tensor) or item._grad is None  # (a non-leaf's
                               else item._grad._data.tobytes() for item in inputs])  # ``.grad`` warns)
            except Exception as error:  # noqa: BLE001
                record.append(("backward raised", type(error), str(error)))
    return record


def lean(cls, *args, **params):
    return cls.apply(*args, **params)


def general(cls, *args, **params):
    return _general_apply(cls, *args, **params)


def test_ops_with_one_or_two_inputs_take_the_lean_apply():
    for cls in (arithmetic.MulBackward0, arithmetic.AddBackward0, unary.TanhBackward0, unary.ReluBackward0):
        assert getattr(cls.apply, "_lean", False), cls
    assert elementwise.AddcmulBackward0.apply.__func__ is _general_apply  # three graph inputs: the general one
    # an op's own apply is kept, and forward AD swaps only those
    from gradviz.autograd.forward_ad import _own_applies
    owners = _own_applies()
    assert owners and all(not getattr(cls.__dict__["apply"].__func__, "_lean", False) for cls in owners)
    # a class with an apply of its own never sits on a lean one (its super().apply would name the wrong class)
    for cls in owners:
        for base in cls.__mro__[1:]:
            if "apply" in base.__dict__:
                assert not getattr(base.__dict__["apply"].__func__, "_lean", False), (cls, base)
                break


@settings(max_examples=400, deadline=None)
@given(op=st.sampled_from(sorted(OPS)), kinds=st.tuples(st.sampled_from(KINDS), st.sampled_from(KINDS)),
       shape=st.sampled_from([(), (3,)]), dtype=st.sampled_from([np.float32, np.float64]),
       values=st.tuples(st.floats(-3, 3, width=32), st.floats(0.25, 3, width=32)), mode_name=st.sampled_from(MODES))
def test_the_lean_apply_records_what_the_general_apply_records(op, kinds, shape, dtype, values, mode_name):
    arity = OPS[op][0]._arity
    kinds, values = kinds[:arity], values[:arity]
    if kinds[0] in ("number", "int"):  # an op's first input is a tensor (the functions see to it)
        kinds = ("data",) + kinds[1:]
    assert run(lean, op, kinds, shape, dtype, values, mode_name) == \
        run(general, op, kinds, shape, dtype, values, mode_name)


@pytest.mark.parametrize("operator", ["__add__", "__radd__", "__sub__", "__mul__", "__rmul__", "__truediv__"])
@pytest.mark.parametrize("other", ["tensor", "float", "int", "bool", "numpy", "string", "list"])
def test_the_operators_check_their_operand_as_before(operator, other):
    """A Tensor or Python number goes straight to the op; anything else through the checked function."""
    from gradviz.ops import _operator, add, div, mul, sub

    function = {"__add__": add, "__radd__": add, "__sub__": sub, "__mul__": mul, "__rmul__": mul,
                "__truediv__": div}[operator]
    value = {"tensor": gradviz.tensor(2.0), "float": 2.5, "int": 3, "bool": True, "numpy": np.float32(1.5),
             "string": "a", "list": [1.0]}[other]
    results = []
    for method in (getattr(gradviz.Tensor, operator), _operator(function)):
        w = gradviz.tensor(1.5, requires_grad=True)
        try:
            out = method(w, value)
        except Exception as error:  # noqa: BLE001
            results.append((type(error), str(error)))
            continue
        if out is NotImplemented:
            results.append(out)
            continue
        out.backward()
        results.append((out._data.tobytes(), out._data.dtype, type(out.grad_fn).__name__, w.grad._data.tobytes()))
    assert results[0] == results[1]


def test_the_lean_apply_keeps_forward_ad():
    import gradviz.autograd.forward_ad as fwAD

    x = gradviz.tensor([0.5, -1.0], requires_grad=True)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, gradviz.tensor([1.0, 2.0]))
        out = (dual * dual + 1.0).tanh()
        primal, tangent = fwAD.unpack_dual(out)
    value = np.tanh(np.float32([0.5, -1.0]) ** 2 + 1)
    np.testing.assert_allclose(primal.detach().numpy(), value, rtol=1e-6)
    np.testing.assert_allclose(tangent.detach().numpy(), (1 - value ** 2) * 2 * np.float32([0.5, -1.0]) * [1.0, 2.0], rtol=1e-5)
    assert primal.grad_fn is not None and type(out.grad_fn).__name__ == "TanhBackward0"


# -- drawn scalar programs through the operators, against PyTorch ------------------------------------------------
LEAVES = ("a", "b", "c", "x")  # a, b, c require grad; x does not


@st.composite
def scalar_programs(draw):
    """Lines ``vN = <expression>`` over the leaves, numbers and earlier values, using the operators."""
    names = list(LEAVES)
    lines = []
    for index in range(draw(st.integers(1, 8))):
        form = draw(st.sampled_from(["{} + {}", "{} - {}", "{} * {}", "{} / {}", "{} ** 2", "{} ** 3", "({}).tanh()",
                                     "({}).exp()", "torch.relu({})", "{} * 0.5", "0.5 + {}", "2 * {}", "1.5 - {}"]))
        operands = [draw(st.sampled_from(names)) for _ in range(form.count("{}"))]
        if form == "{} / {}":
            operands[1] = f"({operands[1]}).exp()"  # no division by zero
        lines.append(f"v{index} = " + form.format(*operands))
        names.append(f"v{index}")
    lines.append(f"total = {' + '.join(names[len(LEAVES):])} + a")  # (a: something requires grad)
    return lines


@settings(max_examples=60, deadline=None)
@given(program=scalar_programs(), dtype=st.sampled_from(["float32", "float64"]),
       values=st.tuples(*[st.floats(-1.5, 1.5, width=32)] * 4))
def test_drawn_scalar_programs_record_what_torch_records(program, dtype, values):
    pytest.importorskip("torch")
    from parity import assert_same

    setup = [f"{name} = torch.tensor({value!r}, dtype=torch.{dtype}, requires_grad={name != 'x'})"
             for name, value in zip(LEAVES, values)]
    assert_same("\n".join(setup + program + ["total.backward()"]) + "\n")


def test_step_order_matches_torch(torch):
    """The order of backward steps follows the sequence numbers the lean apply hands out."""
    from orders import torch_order

    from gradviz.autograd.engine import backward as _  # noqa: F401

    def build(lib):
        a = lib.tensor(0.5, requires_grad=True)
        b = lib.tensor(-1.25, requires_grad=True)
        x = lib.tensor(2.0)
        h = (a * x + b).tanh()
        return (h * h - 0.5 * a + b ** 2) / (1.0 + h.exp())

    expected = torch_order(build(torch))
    order = []
    out = build(gradviz)
    seen, stack = set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        node.register_prehook(functools.partial(lambda node, grads: order.append(node.name()), node))
        stack.extend(fn for fn, _ in node.next_functions)
    out.backward()
    assert order == expected
