"""The chain-rule formulas a node shows, specialised to the call from what the node saved.

``formula_table.TABLE`` holds one entry per PyTorch node name; this module reads the plain
values an entry needs from the node (``_saved_alpha``, ``_saved_reduction``, whether
``_saved_weight`` is None...), which gradviz's nodes and torch's both expose under PyTorch's
names, so a torch graph shows the same formulas as a gradviz graph of the same program. The
result is cached per (name, options): a 2,000-layer network builds each distinct formula once.

Three readers of the same rules:

* ``formulas_for(node)``: ``Formula`` records (JSON MathML trees) for the Graph snapshot;
* ``step_numbers(step)``: the values of one step substituted into them, for the trace;
* ``gradient_sent(...)``: the gradient a rule computes, which the tests compare with ``backward()``.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from gradviz.ops import derivatives_for
from gradviz.autograd.node import AccumulateGrad, Node, SavedTensor
from gradviz.autograd.step import ACCUMULATE_GRAD_NAME
from gradviz._kinds import ACCUMULATE_GRAD, is_gradviz_tensor
from gradviz.snapshot import formula_table
from gradviz.snapshot.formula_table import INPUT_SHAPE, INPUT_SHAPES, NODE, SLOT, TABLE
from gradviz.snapshot.math import GRAD, GRADS, LOSS, evaluate, mathml, partial, register, to_mathml_json, variables
from gradviz.snapshot.model import Formula, summarize, to_numpy

FULL_VALUES_UP_TO = 36  # tensors this small carry all their values, shown on demand
LARGEST_EVALUATED = 1_000_000  # local derivatives of bigger tensors are not computed for display


def node_name(node: Any) -> str:
    return node.name() if callable(getattr(node, "name", None)) else type(node).__name__


def rules_for(node: Any, name: str | None = None) -> tuple:
    """``((input name, Rule), ...)`` for ``node``, in input order; ``()`` when no formula is known."""
    return _specialised(node, name)[0]


def formulas_for(node: Any, name: str | None = None) -> tuple:
    """The ``Formula`` records the graph snapshot carries for ``node`` (``()`` when none)."""
    return _specialised(node, name)[1]


def _specialised(node: Any, name: str | None) -> tuple:
    name = name or node_name(node)
    if name.endswith(ACCUMULATE_GRAD):  # torch::autograd::AccumulateGrad, as name() gives it
        name = ACCUMULATE_GRAD
    entry = TABLE.get(name)
    if entry is None and name != node_name(node):  # the walk passes class names: CopySlices
        name = node_name(node)
        entry = TABLE.get(name)
    if entry is None:
        return (), ()
    if not entry.options and not entry.present:  # most ops: nothing to read from the node
        return _built(name, ())
    try:
        options = _read_options(node, entry)
    except _Freed:  # backward() freed what this op's formula is specialised by: it cannot be told here
        return (), ()
    return _built(name, options)


class _Freed(Exception):
    """A saved tensor the formula reads was freed by ``backward()`` (an absent optional one reads None)."""


def _read_options(node: Any, entry) -> tuple:
    options = tuple((option, _plain(_saved(node, option))) for option in entry.options)
    present = tuple((tensor, _shape_or_none(_saved(node, tensor, freed=_Freed))) for tensor in entry.present)
    return options + present


def _saved(node: Any, name: str, freed=None):
    """The node's saved ``name``: None where this op does not save it; after ``backward()`` freed it,
    None too, or ``freed`` raised where telling that apart matters."""
    try:
        return getattr(node, "_saved_" + name)
    except AttributeError:
        return None
    except RuntimeError:
        if freed is not None:
            raise freed from None
        return None


def _plain(value):
    """A saved option as a hashable Python value (sizes as tuples, 0-d tensors as numbers)."""
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if hasattr(value, "shape") and hasattr(value, "tolist"):
        return _plain(value.tolist())
    return value


def _shape_or_none(value):
    return tuple(value.shape) if value is not None and hasattr(value, "shape") else None


@functools.lru_cache(maxsize=4096)
def _built(name: str, options: tuple) -> tuple:
    rules = TABLE[name].build(dict(options))
    torch_text = (AccumulateGrad.derivatives if name == ACCUMULATE_GRAD else derivatives_for(name))
    formulas = tuple(_formula(name, input_name, rule, torch_text.get(input_name, ("", ""))[0])
                     for input_name, rule in rules.items())
    return tuple(rules.items()), formulas


def _formula(name: str, input_name: str, rule, torch_text: str) -> Formula:
    if name == ACCUMULATE_GRAD:
        left = mathml("mi", text="x.grad", sym="grad_before")  # one identifier: the panel writes "w.grad"
        arrow = "←"
    else:
        left, arrow = partial(LOSS, input_name, rule.symbol), "="
    math = mathml("mrow", left, mathml("mo", text=arrow), to_mathml_json(rule.expression))
    local = to_mathml_json(rule.local) if rule.local is not None else None
    return Formula(input=input_name, symbol=rule.symbol, math=math, local=local, note=rule.note,
                   torch=f"{input_name}: {torch_text}" if torch_text else "", broadcast=rule.broadcast)


# ------------------------------------------------------------------ numbers
def rule_for_slot(rules: tuple, slot: int):
    """The rule for input ``slot``: ops over a list (cat) share one; CopySlices' later inputs share 'other'."""
    if not rules:
        return None
    if slot < len(rules):
        return rules[slot][1]
    return rules[-1][1]


def environment(node: Any, rule, slot: int, grad_outputs, input_shapes: tuple) -> dict:
    """The values ``rule`` reads at this node: the gradients arriving (one per output of the node,
    None where none arrived: ``GRAD`` is the first, ``GRADS`` all of them), the node's saved tensors."""
    grads = tuple(None if g is None else _float64(g) for g in grad_outputs)
    env: dict = {GRAD: grads[0], GRADS: grads, INPUT_SHAPE: input_shapes[slot], INPUT_SHAPES: input_shapes,
                 SLOT: slot, NODE: node}
    for name in variables(rule.expression):
        if name not in env:
            env[name] = _saved_value(node, name)
    return env


def _saved_value(node: Any, name: str, exact: bool = True):
    """A saved value as numpy: float64 when ``exact`` (the tests), else its own float dtype (display)."""
    if name == "grad_before":  # AccumulateGrad: the leaf's .grad before this pass (0 if None)
        grad = getattr(node.variable, "grad", None)
        return _float64(grad) if grad is not None else np.float64(0)
    value = _saved_tensor_or_value(node, name)
    if isinstance(value, (tuple, list)):
        return tuple(None if v is None else _float64(v, exact) for v in value)
    return _float64(value, exact)


def _saved_tensor_or_value(node: Any, name: str):
    """``node._saved_<name>``, except that a gradviz node's saved tensor comes back as its array,
    unpacked as backward unpacks it: making the Tensor that ``_saved_<name>`` returns would cost
    more than the rest of a trace step."""
    entry = node._packed.get(name) if isinstance(node, Node) and node._packed else None
    if isinstance(entry, SavedTensor):
        return entry.unpack()
    return getattr(node, "_saved_" + name)


def _float64(value, exact: bool = True):
    if value is None:
        raise ValueError("a value the formula needs was not saved")
    if type(value) is np.ndarray and not exact and value.dtype.kind in "fiu":  # most, for display
        return value
    if is_gradviz_tensor(value):
        value = value._data  # its backend array: numpy, or torch's for the torch backend
    if isinstance(value, (bool, int, float)):
        return np.float64(value)
    array = to_numpy(value.detach() if hasattr(value, "detach") else value)
    kind = array.dtype.kind
    if kind in "iu":
        return array  # indices and class targets stay integers
    if not exact and kind == "f":
        return array
    if np.issubdtype(array.dtype, np.complexfloating):  # never cast to real: that drops the imaginary part
        return array.astype(np.complex128)
    return array.astype(np.float64)


def fit_to(value, shape: tuple) -> np.ndarray:
    """``value`` brought to ``shape``: summed over broadcast dims, or spread if it is smaller."""
    value = np.asarray(value, dtype=np.float64)
    shape = tuple(shape)
    if value.shape == shape:
        return value
    try:
        if np.broadcast_shapes(value.shape, shape) == shape:
            return np.broadcast_to(value, shape).copy()
    except ValueError:
        pass
    lead = value.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, size in enumerate(shape)
                                      if size == 1 and value.shape[lead + i] != 1)
    return np.sum(value, axis=axes, keepdims=True).reshape(shape)


def gradient_sent(node: Any, slot: int, grad_outputs, input_shapes: tuple, name: str | None = None) -> np.ndarray:
    """The gradient the learner's formula gives for input ``slot`` (float64), to compare with backward;
    ``grad_outputs``: the gradients that arrived, one per output of the node (a step's ``grad_outputs``)."""
    rule = rule_for_slot(rules_for(node, name), slot)
    if rule is None:
        raise KeyError(f"no learner formula for {name or node_name(node)}")
    env = environment(node, rule, slot, grad_outputs, input_shapes)
    with np.errstate(all="ignore"):
        return fit_to(evaluate(rule.expression, env), input_shapes[slot])


def step_numbers(step: Any, silenced: bool = False) -> list:
    """Per input of a step, what the panel needs beyond the step and the graph (``None`` if nothing).

    ``{"local": summary | None, "summed": bool}``: the local derivative's value (elementwise ops
    whose local derivative reads a value: ``-sin x`` at x = 4 is 0.7568), and whether
    broadcasting summed the gradient back to the input's shape. The values the formula reads are
    already in the trace (the arriving gradient, AccumulateGrad's ``grad_before``) or in the graph
    (the node's ``saved`` tensors), so they are not repeated here: a 2,000-layer trace stays small.
    numpy's warnings are silenced while the local derivative is computed (``log(0)`` must not
    warn); ``silenced``: the caller has done so already, once for a whole trace
    (``snapshot/trace.py``), which saves a ``np.errstate`` per step.
    """
    if not silenced:
        with np.errstate(all="ignore"):
            return _step_numbers(step)
    return _step_numbers(step)


def _step_numbers(step: Any) -> list:
    node = step.node
    return [number if number is None or type(number) is dict else
            {"local": None if number[0] is None else summary_dict(number[0]), "summed": number[1]}
            for number in raw_step_numbers(node, node_name(node), step.grad_outputs, step.grad_inputs)]


def raw_step_numbers(node: Any, name: str, grad_outputs: tuple, grad_inputs: tuple) -> list:
    """``step_numbers`` before the local derivatives are summarised: per input, ``None``, a
    ``(local value | None, summed)`` pair, or (CopySlices) the whole dict. The packed trace
    summarises each value into its table itself (``snapshot/trace.py``); call it under
    ``np.errstate(all="ignore")``. ``name``: the node's ``name()``."""
    if name == ACCUMULATE_GRAD_NAME or not grad_outputs or grad_outputs[0] is None:
        return []
    if name == COPY_SLICES:
        return _view_numbers(node, grad_outputs[0], grad_inputs)
    rules = rules_for(node, name)
    if not rules:
        return []
    numbers = []
    grad_output = grad_outputs[0]
    for slot, sent in enumerate(grad_inputs):
        rule = rule_for_slot(rules, slot)
        numbers.append(None if sent is None or rule is None or rule.local is None
                       else _raw_numbers(node, rule, grad_output, sent))
    return numbers


def _numbers(node, rule, slot, grad_output, sent) -> dict | None:
    raw = _raw_numbers(node, rule, grad_output, sent)
    if raw is None:
        return None
    return {"local": None if raw[0] is None else summary_dict(raw[0]), "summed": raw[1]}


def _raw_numbers(node, rule, grad_output, sent) -> tuple | None:
    """``(the local derivative's value | None, summed)``; None when a saved value it reads is gone."""
    local_shape: tuple = ()
    local = None
    names = _variables(rule.local)
    if names:
        try:
            env = {name: _saved_value(node, name, exact=False) for name in names}
        except (AttributeError, RuntimeError, ValueError, TypeError):
            return None  # a saved value is gone (freed by backward()) or not exposed
        try:  # (under the np.errstate of step_numbers)
            value = evaluate(rule.local, env)
        except (ValueError, TypeError, IndexError, KeyError):
            return None
        local_shape, size = (value.shape, value.size) if hasattr(value, "size") else (np.shape(value), np.size(value))
        if size <= LARGEST_EVALUATED:
            local = value
    grad_shape = tuple(grad_output.shape)
    product = (grad_shape if local_shape in ((), grad_shape)
               else np.broadcast_shapes(grad_shape, local_shape))
    return local, product != tuple(sent.shape)


_VARIABLES: dict = {}  # id(expression) -> (expression, its variables): rules are cached, so few


def _variables(expression) -> tuple:
    known = _VARIABLES.get(id(expression))
    if known is None or known[0] is not expression:
        known = _VARIABLES[id(expression)] = (expression, variables(expression))
    return known[1]


def summary_dict(value) -> dict:
    """An array summary for the panel, with every value when the array is small."""
    array = np.asarray(value)
    summary = summarize(array).to_dict()
    full = full_values(array)
    if full is not None:
        summary["full"] = full
    return summary


def full_values(array) -> str | None:
    """All the values of a tensor the preview shortens but that is small enough to show whole."""
    if not 12 < math.prod(array.shape) <= FULL_VALUES_UP_TO:  # decided before any copy
        return None
    try:
        values = to_numpy(array)
        from gradviz.snapshot.model import preview_text

        return preview_text(values, FULL_VALUES_UP_TO)
    except (TypeError, RuntimeError, ValueError):  # a dtype numpy cannot hold (bfloat16)
        return None


# ------------------------------------------------------------------ CopySlices: the wrapped op's formula on the view
COPY_SLICES = "torch::autograd::CopySlices"


def _view_numbers(node: Any, grad_output, grad_inputs) -> list:
    """CopySlices' numbers: per input, the in-place op's own step on the view (``view``: the op's
    name, the view's part of the arriving gradient, what the op sends), and the op's local
    derivative there where its formula has one; ``[]`` where the node does not say (torch's)."""
    try:
        memory, _, view = _on_memory(node, _float64(grad_output))
        fn, view_grad = node.fn, memory[view]
        rules = rules_for(fn)
    except (AttributeError, RuntimeError, ValueError, TypeError, IndexError):
        return []
    shapes = (tuple(view_grad.shape),) + tuple(() if g is None else tuple(g.shape) for g in grad_inputs[1:])
    numbers = []
    for slot, sent in enumerate(grad_inputs):
        rule = rule_for_slot(rules, slot)
        if sent is None or rule is None:
            numbers.append(None)
            continue
        with np.errstate(all="ignore"):
            view_sent = gradient_sent(fn, slot, (view_grad,), shapes)
        entry = (_numbers(fn, rule, slot, view_grad, view_sent) if rule.local is not None else None) or {"local": None}
        numbers.append({"local": entry["local"], "summed": False,
                        "view": {"op": node_name(fn), "arriving": summary_dict(view_grad), "sent": summary_dict(view_sent)}})
    return numbers


def _on_memory(node: Any, grad) -> tuple:
    """``(memory, base positions, view positions)``: the base's gradient laid out in the memory
    the base and its view share, so that ``memory[view]`` is the view's part of it."""
    from gradviz.snapshot.formula_table import _positions

    base, view = _positions(*node.base_geometry), _positions(*node.view_geometry)
    memory = np.zeros(int(max(base.max(initial=0), view.max(initial=0))) + 1)
    memory[base] = grad
    return memory, base, view


@register("copy_slices")
def _copy_slices(grad, node, slot, input_shapes):
    """The base's gradient outside the view passes; inside, the wrapped op's own formula runs."""
    memory, base, view = _on_memory(node, grad)
    view_grad = memory[view]
    shapes = (tuple(view.shape),) + tuple(input_shapes[1:])
    if slot:
        return gradient_sent(node.fn, slot, (view_grad,), shapes)
    memory[view] = gradient_sent(node.fn, 0, (view_grad,), shapes)
    return memory[base]


__all__ = ["formulas_for", "gradient_sent", "rules_for", "step_numbers", "formula_table"]
