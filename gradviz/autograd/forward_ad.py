"""``torch.autograd.forward_ad``: forward-mode automatic differentiation with dual tensors.

Reverse mode (``backward``) sends one gradient from the output back to every input: a row of
the Jacobian ``J`` per pass. Forward mode pushes a *tangent* ``v`` from the inputs forward through
the same ops, alongside the values: every output leaves with ``J v`` (a column per pass)::

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, tangent)   # a "dual tensor": x = primal + tangent * eps
        y = f(x)
        value, jvp = forward_ad.unpack_dual(y)      # jvp = J_f(primal) @ tangent

How it works here:

* The tangent rides beside the tensor, not in it: the active level keeps a table
  ``id(tensor) -> (weak reference, tangent)`` (``_tangents``), so Tensor keeps its slots and a
  tensor that dies takes its tangent with it. Leaving the level forgets every tangent, as PyTorch does.
* ``OpFunction.apply`` checks one flag (``function._FORWARD_AD``) and, while a level is active, hands
  the op to ``_apply_dual``: the op runs as usual (recording its node if grad mode says so), then its
  output's tangent is computed from the inputs' tangents. Ops that write their own ``apply`` (several
  outputs, a list of inputs: ``cat``, ``split``, ``std_mean``...) get the same treatment by having
  their ``apply`` swapped for a dual-aware one while the level is active (``_own_applies``).
* Each op's forward rule (its ``jvp``): ``_RULES`` below writes PyTorch's formulas for the ops
  tutorials use most (linear ops push the tangent through the op itself; ``mul``, ``mm``, ``addmm``
  and friends use the product rule). Any other op with a derivative is differentiated by the
  **double-vjp trick**: the op's vector-Jacobian product ``u -> J^T u`` is linear in ``u``, so
  ``J v = d/du <J^T u, v>``; gradviz runs the op once more on detached inputs, records its backward
  with ``create_graph=True`` and differentiates that with respect to a dummy ``u``. The values agree
  with PyTorch's own forward formulas up to float rounding (tests/test_forward_ad.py checks every
  op it covers against torch); when a primal or a tangent requires grad both passes are recorded, so the
  tangent has a graph (of the backward formulas, not torch's node for node) with the right gradients. An op
  whose backward is not recorded falls back to one backward pass per output element (rows of ``J``).
* A tensor input without a tangent gets a zero that stands for PyTorch's ZeroTensor (``_zero_tangent``):
  products with it are zero whatever the other factor holds, as torch's are.
* Ops PyTorch has no forward formula for raise PyTorch's NotImplementedError (``_UNSUPPORTED``).
* A view op's tangent is a view of its input's tangent (``_view``); a fallback tangent keeps the dtype torch's
  formulas give it (``_in_dtype``); ``log``, ``pow``, ``div``, ``mul`` with a number, ``softmax``,
  ``log_softmax``, ``abs``, ``sqrt``, ``mse_loss``, ``nll_loss`` and more have written rules so that their
  tangents get torch's graph (docs/ARCHITECTURE.md).

Only one level may be active at a time (PyTorch 2.13 refuses nested levels with the same error).
"""
from __future__ import annotations

import functools
import math
import weakref
from typing import NamedTuple

from gradviz.autograd.function import _FORWARD_AD, OpFunction
from gradviz.grad_mode import _state as _grad_state
from gradviz.tensor import Tensor

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_current_level = -1
_tangents: dict = {}  # id(tensor) -> (weak reference to it, its tangent), for the active level only
# (id(grad_fn), output_nr) -> (weak reference to grad_fn, data array, tangent): the same tangent for an op's output
# when the backward pass re-makes that output from its saved copy (a formula reading ``result``, under
# create_graph: forward-over-reverse), since that copy is a new Tensor object over the same array
_by_node: dict = {}


# -- the tangent table ---------------------------------------------------------------------------------
def _tangent_of(value):
    """The tangent of ``value`` at the active level, or None (also for anything but a dual tensor)."""
    entry = _tangents.get(id(value))
    if entry is not None and entry[0]() is value:
        return entry[1]
    if _by_node and isinstance(value, Tensor) and value._grad_fn is not None:
        entry = _by_node.get((id(value._grad_fn), value._output_nr))
        if entry is not None and entry[0]() is value._grad_fn and entry[1] is value._data:
            return entry[2]
    return None


def _set_tangent(tensor: Tensor, tangent) -> None:
    key = id(tensor)
    node = tensor._grad_fn
    if tangent is None:
        _tangents.pop(key, None)
        if node is not None:
            _by_node.pop((id(node), tensor._output_nr), None)
        return
    table = _tangents

    def forget(ref, key=key):  # the tensor died: its tangent goes too (unless the slot was reused)
        entry = table.get(key)
        if entry is not None and entry[0] is ref:
            del table[key]

    table[key] = (weakref.ref(tensor, forget), tangent)
    if node is not None:
        node_key = (id(node), tensor._output_nr)

        def forget_node(ref, node_key=node_key):
            entry = _by_node.get(node_key)
            if entry is not None and entry[0] is ref:
                del _by_node[node_key]

        _by_node[node_key] = (weakref.ref(node, forget_node), tensor._data, tangent)


def tangent_text(tensor: Tensor):
    """What ``repr`` appends for a dual tensor (``tangent=...``), or None: called by ``Tensor.__repr__``."""
    if _current_level < 0:
        return None
    tangent = _tangent_of(tensor)
    return None if tangent is None else f"{tangent}"


# -- levels --------------------------------------------------------------------------------------------
def enter_dual_level() -> int:
    """Enter a new forward grad level (PyTorch allows one at a time) and make it the default level."""
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level = 0
    _FORWARD_AD[0] = _apply_dual
    _swap_own_applies(install=True)
    return _current_level


def exit_dual_level(*, level=None) -> None:
    """Leave the level: every tangent made in it is forgotten."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    _FORWARD_AD[0] = None
    _swap_own_applies(install=False)
    _tangents.clear()
    _by_node.clear()
    _current_level = level - 1


class dual_level:
    """Context manager (or decorator) for a forward AD level: ``with dual_level(): ...``."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc_info):
        exit_dual_level()
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            with dual_level():
                return function(*args, **kwargs)

        return wrapper


# -- dual tensors ----------------------------------------------------------------------------------------
class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal (a view of the tensor) and its tangent (or None)."""

    primal: Tensor
    tangent: Tensor | None


UnpackedDualTensor.__module__ = "torch.autograd.forward_ad"  # as PyTorch's repr of the class names it


def _sizes(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def make_dual(tensor, tangent, *, level=None) -> Tensor:
    """A new tensor aliasing ``tensor`` (a view of it, ViewBackward0 when it requires grad) whose tangent
    is ``tangent``, kept as it is."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not tensor.is_floating_point():
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not tangent.is_floating_point():
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if level != _current_level:
        raise RuntimeError("Invalid level given to _make_dual")
    if _tangent_of(tensor) is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           f"level {level} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {_sizes(tensor.shape)} while the given "
                           f"forward gradient is of size {_sizes(tangent.shape)}.")
    dual = tensor.view(tensor.shape)
    _set_tangent(dual, _in_layout_of(tensor, tangent))
    return dual


def _in_layout_of(tensor: Tensor, tangent: Tensor) -> Tensor:
    """The tangent as it is when its elements lie in memory as the primal's do; else a copy laid out like the
    primal (PyTorch's rule: ``make_dual(x, t.T)`` stores a copy, ``make_dual(x, t)`` stores ``t`` itself)."""
    data, primal = tangent._data, tensor._data
    if (tangent._backend is not tensor._backend or not hasattr(primal, "__array_interface__")
            or data.strides == primal.strides or data.itemsize != primal.itemsize or tangent.requires_grad):
        return tangent
    import numpy as np

    copy = np.empty_like(primal, dtype=data.dtype)  # order "K": the primal's own strides
    copy[...] = data
    return Tensor._make(copy, backend=tangent._backend)


def unpack_dual(tensor, *, level=None) -> UnpackedDualTensor:
    """``(primal, tangent)``: the primal is a new view of ``tensor`` without the tangent (its grad_fn, when
    ``tensor`` requires grad, is PyTorch's ``Identity``); the tangent is the one stored, as it is."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"_unpack_dual(): argument 'dual' (position 1) must be Tensor, not {type(tensor).__name__}")
    if level != _current_level:
        raise RuntimeError("Invalid level given to _fw_primal")
    tangent = _tangent_of(tensor)
    hook, _FORWARD_AD[0] = _FORWARD_AD[0], None
    try:
        primal = Identity.apply(tensor)
    finally:
        _FORWARD_AD[0] = hook
    from gradviz.ops.shape import _view_of

    return UnpackedDualTensor(_view_of(primal, tensor), tangent)


class Identity(OpFunction):
    """The node of ``unpack_dual``'s primal (PyTorch's ``torch::autograd::Identity``, a C++ node printed
    ``grad_fn=<Identity>``): the same elements, the gradient passed on unchanged."""

    inputs = ("self",)
    derivatives = {"self": ("grad", r"\bar{y}")}

    def name(self) -> str:
        return "torch::autograd::Identity"

    def __repr__(self) -> str:
        return f"<CppFunction object at {id(self):#x}>"

    def forward(ctx, self):
        return self._data

    def backward(ctx, grad):
        return grad

    def backward_graph(ctx, grad):
        return grad


Identity.__module__ = "builtins"  # a C++ node, as PyTorch's (and out of the op registry: no formula to show)


# -- running an op on dual tensors ------------------------------------------------------------------------
_base_apply = OpFunction.apply.__func__


def _apply_dual(cls, args, params, apply=_base_apply):
    """Run ``cls`` on ``args`` as usual, then give its floating outputs their tangents."""
    tangents = [_tangent_of(arg) if isinstance(arg, Tensor) else None for arg in args]
    if not any(t is not None for t in tangents):
        hook, _FORWARD_AD[0] = _FORWARD_AD[0], None
        try:
            return apply(cls, *args, **params)
        finally:
            _FORWARD_AD[0] = hook
    name = cls.__name__
    unsupported = _UNSUPPORTED.get(name)
    if unsupported is not None:
        raise NotImplementedError(_not_implemented_message(unsupported))
    hook, _FORWARD_AD[0] = _FORWARD_AD[0], None
    try:
        out = apply(cls, *args, **params)
        outs = out if isinstance(out, tuple) else (out,)
        if any(isinstance(o, Tensor) and o.is_floating_point() for o in outs):
            rule = _RULES.get(name)
            if rule is not None:
                results = rule(cls, args, params, tangents, out)
            else:
                results = _jvp_by_double_vjp(cls, args, params, tangents, apply)
            results = results if isinstance(results, tuple) else (results,)
            for output, tangent in zip(outs, results):
                if tangent is not None and isinstance(output, Tensor) and output.is_floating_point():
                    if tuple(tangent.shape) != tuple(output.shape):
                        tangent = tangent.expand(output.shape)  # an input broadcast into a larger output
                    _set_tangent(output, tangent)
    finally:
        _FORWARD_AD[0] = hook
    return out


def _not_implemented_message(op: str) -> str:
    if op.startswith("aten::"):  # an op PyTorch declares no derivative for at all
        return f"Trying to use forward AD with {op} that does not support it."
    return (f"Trying to use forward AD with {op} that does not support it because it has not been implemented yet.\n"
            "Please file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-"
            "request.yml so that we can prioritize its implementation or submit a PR adding the implementation to "
            "derivatives.yaml")


# gradviz's node -> the op PyTorch names when it refuses forward AD for it
_UNSUPPORTED = {
    "Unique2Backward0": "_unique2",
    "UniqueDimBackward0": "unique_dim",
    "UniqueConsecutiveBackward0": "unique_consecutive",
    # derivatives.yaml gives these no forward formula (whichever input is dual)
    "SpecialZetaBackward0": "special_zeta", "SpecialZetaBackward1": "special_zeta",
    "IgammaBackward0": "igamma", "IgammacBackward0": "igammac",
}


def check_no_derivative(node_class, inputs, aten_name) -> None:
    """For ``ops.no_derivative.without_derivative``: an op without a derivative given a dual tensor raises
    PyTorch's error when PyTorch refuses it (``unique``, ``heaviside``, ``scatter(reduce=)``); an op whose
    output is not differentiable (``histc``, ``bucketize``) just gives no tangent."""
    if not any(_tangent_of(tensor) is not None for tensor in inputs):
        return
    name = node_class.__name__
    if name == "NotImplemented":
        raise NotImplementedError(_not_implemented_message(f"aten::{aten_name or node_class.aten_name}"))
    if name in _UNSUPPORTED:
        raise NotImplementedError(_not_implemented_message(_UNSUPPORTED[name]))


def after_in_place(tensor: Tensor, result: Tensor) -> None:
    """For ``ops.inplace.apply_``: the tensor written in place takes the tangent of the value written. A tangent
    it already had is updated in place, as PyTorch does (the tensor given to ``make_dual`` changes too)."""
    old, new = _tangent_of(tensor), _tangent_of(result)
    if old is not None and new is not None and tuple(old.shape) == tuple(new.shape):
        hook, _FORWARD_AD[0] = _FORWARD_AD[0], None
        previous = _grad_state.enabled
        _grad_state.enabled = False
        try:
            old.copy_(new)
        finally:
            _grad_state.enabled = previous
            _FORWARD_AD[0] = hook
        new = old
    _set_tangent(tensor, new)


# -- the generic rule: J v = d/du <J^T u, v> ---------------------------------------------------------------
def _jvp_by_double_vjp(cls, args, params, tangents, apply):
    """``J v`` for an op with no written forward rule, from its backward formula (see the module docstring).

    When a primal or a tangent requires grad, PyTorch's tangent has a graph; here both passes are recorded
    (``create_graph=True``) from the inputs' ``Identity`` views and the tangents as they are, so the tangent gets a
    graph of the backward formulas (not torch's node for node) whose values and gradients are right."""
    from gradviz.autograd.engine import grad
    from gradviz.tensor import zeros_like

    graphed = any(isinstance(arg, Tensor) and arg.requires_grad for arg in args) or _graphed(None, tangents)
    previous = _grad_state.enabled
    _grad_state.enabled = True  # forward AD works under no_grad too: this recording is private
    try:
        inputs, vectors, fresh = [], [], []
        for arg, tangent in zip(args, tangents):
            if isinstance(arg, Tensor):
                if graphed and arg.requires_grad:
                    arg = Identity.apply(arg)  # the op's primal as torch's formulas read it: the graph goes on
                else:
                    arg = arg.detach()
                    if tangent is not None:
                        arg.requires_grad_(True)
                if tangent is not None:
                    inputs.append(arg)
                    vectors.append(tangent if graphed else tangent.detach())
            fresh.append(arg)
        out = apply(cls, *fresh, **params)
        outs = [o for o in (out if isinstance(out, tuple) else (out,))]
        differentiable = [o for o in outs if isinstance(o, Tensor) and o.requires_grad]
        if not differentiable:
            return tuple(None for _ in outs)
        try:
            dummies = [zeros_like(o).requires_grad_(True) for o in differentiable]
            # <outputs, u> as one scalar: its gradient is J^T u (one root, so the recorded pass has one start)
            pairing = None
            for output, dummy in zip(differentiable, dummies):
                term = (output * dummy).sum()
                pairing = term if pairing is None else pairing + term
            vjps = grad((pairing,), inputs, create_graph=True, allow_unused=True)
            pairs = [(g, v) for g, v in zip(vjps, vectors) if g is not None and g.requires_grad]
            if pairs:
                products = grad([g for g, _ in pairs], dummies, [v.to(g.dtype) for g, v in pairs], allow_unused=True,
                                create_graph=graphed)
            else:
                products = (None,) * len(dummies)
            by_output = dict(zip(map(id, differentiable), products))
        except NotImplementedError:  # the op's backward is not recorded: one backward pass per output element
            by_output = {id(o): _jvp_by_rows(o, inputs, vectors) for o in differentiable}  # (without a graph)
        results = tuple(None if id(o) not in by_output else
                        (by_output[id(o)] if by_output[id(o)] is not None else zeros_like(o)) for o in outs)
        return tuple(_in_dtype(result, output, vectors) for result, output in zip(results, outs))
    finally:
        _grad_state.enabled = previous


def _in_dtype(tangent, output, vectors):
    """A tangent in the dtype PyTorch's formulas give it: the output's promoted with the input tangents' (a
    float64 tangent on a float32 primal stays float64: ``self_t * self_p.cos()``)."""
    if tangent is None or not vectors:
        return tangent
    from gradviz import _dtype

    dtype = output.dtype
    for vector in vectors:
        if vector.dtype.is_floating_point and _dtype.category(vector.dtype) == _dtype.category(dtype):
            dtype = _dtype._highest((dtype, vector.dtype))
    return tangent if tangent.dtype is dtype else tangent.to(dtype)


def _jvp_by_rows(output: Tensor, inputs: list, vectors: list) -> Tensor:
    """``J v`` one element at a time: element k is <row k of J, v>, the row from one backward pass."""
    from gradviz.autograd.engine import grad
    from gradviz.tensor import tensor as make_tensor

    flat = output.reshape(-1)
    values = []
    for index in range(flat.numel()):
        rows = grad((flat[index],), inputs, retain_graph=True, allow_unused=True)
        total = 0.0
        for row, vector in zip(rows, vectors):
            if row is not None:
                total += float((row.detach() * vector.to(row.dtype)).sum())
        values.append(total)
    return make_tensor(values, dtype=output.dtype).reshape(output.shape)


# -- written rules: PyTorch's forward formulas for the common ops ------------------------------------------
def _zeros_for(args, tangents):
    from gradviz.tensor import zeros_like

    return [t if t is not None else zeros_like(a) for a, t in zip(args, tangents)]


def _linear(cls, args, params, tangents, out):
    """An op linear in its one tensor input (views, reductions, copies): the tangent goes through the op itself."""
    return cls.apply(tangents[0], *args[1:], **params)


def _view(cls, args, params, tangents, out):
    """A view op: the tangent goes through the op itself and is a view of the input's tangent, as PyTorch's is
    (``unpack_dual(d[0]).tangent`` shares memory with ``d``'s tangent, and an in-place change to one is seen by
    the other)."""
    from gradviz.ops.shape import _view_of

    return _view_of(cls.apply(tangents[0], *args[1:], **params), tangents[0])


def _linear_in_all(cls, args, params, tangents, out):
    """``cat``/``stack``: linear in every input; an input without a tangent contributes zeros."""
    return cls.apply(*_zeros_for(args, tangents), **params)


def _same(cls, args, params, tangents, out):
    """``x + c``, ``x - c`` with a number ``c``: the tangent passes unchanged."""
    return tangents[0]


def _add(cls, args, params, tangents, out, sign=1):
    """``self_t + maybe_multiply(other_t, alpha)`` (``-`` for ``sub``). When a tangent has a graph, torch's sum is
    recorded with a missing tangent as its ZeroTensor (``AddBackward0(tangent, None)``); else the sum is plain."""
    self_t, other_t = tangents[0], tangents[1]
    alpha = params.get("alpha", args[2] if len(args) > 2 else 1)
    if _graphed(None, tangents):
        from gradviz.ops.arithmetic import MulBackward1

        self_t = self_t if self_t is not None else _zero_tangent(args[0])
        other_t = other_t if other_t is not None else _zero_tangent(args[1])
        if alpha != 1:
            other_t = MulBackward1.apply(other_t, alpha)
        if sign > 0:
            return self_t + other_t
        return _zero_minus(self_t, other_t) if _is_zero(self_t) else self_t - other_t
    alpha *= sign
    if other_t is not None and alpha != 1:
        other_t = other_t * alpha
    if self_t is None:
        return other_t
    return self_t if other_t is None else self_t + other_t


def _sub(cls, args, params, tangents, out):
    return _add(cls, args, params, tangents, out, sign=-1)


def _rsub(cls, args, params, tangents, out):
    """``c - x`` with a number ``c``: ``-maybe_multiply(self_t, alpha)``."""
    from gradviz.ops.arithmetic import MulBackward1

    alpha = params.get("alpha", args[2] if len(args) > 2 else 1)
    return -(tangents[0] if alpha == 1 else MulBackward1.apply(tangents[0], alpha))


def _graphed(out, tangents) -> bool:
    """Whether PyTorch's tangent has a graph: the output requires grad, or an input's tangent does."""
    return ((isinstance(out, Tensor) and out.requires_grad)
            or any(isinstance(t, Tensor) and t.requires_grad for t in tangents))


def _primal(value):
    """An input as PyTorch's formulas read it (``self_p``): for a tensor that requires grad, its primal view
    (the ``Identity`` node ``unpack_dual`` makes), so the tangent's own graph is torch's."""
    if isinstance(value, Tensor) and value.requires_grad:
        return Identity.apply(value)
    return value


def _materialized(args, tangents, count):
    """The first ``count`` inputs' primals and tangents; a tensor input without a tangent gets a zero one that
    stands for PyTorch's ZeroTensor (``_zero_tangent``), as PyTorch's generated code does once any input is dual."""
    primals = [_primal(arg) for arg in args[:count]]
    filled = [t if t is not None or not isinstance(arg, Tensor) else _zero_tangent(arg)
              for arg, t in zip(args[:count], tangents[:count])]  # a Python number has no tangent: None
    return primals, filled


# -- torch's ZeroTensor: the tangent of an input that has none -------------------------------------------------------
_zeros: dict = {}  # id(tensor) -> weak reference: the zero tangents made for inputs without one


def _zero_tangent(like) -> Tensor:
    """A zero tangent for a tensor (or a Python number) that has none. PyTorch uses a ZeroTensor there, whose
    products are zero whatever the other factor holds (no NaN from ``0 * inf``); ``_term`` honours that."""
    from gradviz.tensor import zeros_like

    zero = zeros_like(like) if isinstance(like, Tensor) else _number_tangent(like)
    key = id(zero)

    def forget(ref, key=key):
        if _zeros.get(key) is ref:
            del _zeros[key]

    _zeros[key] = weakref.ref(zero, forget)
    return zero


def _is_zero(value) -> bool:
    entry = _zeros.get(id(value))
    return entry is not None and entry() is value


def _term(op, a, b, keep: bool = False):
    """``op(a, b)`` for a product-like term (``*``, ``dot``) of a tangent and a primal. With a ZeroTensor factor
    PyTorch's result is zero; its node is recorded only when the other factor requires grad; else the term is a
    plain zero when the tangent has a graph (``keep``: torch's sum shows it as a None edge), or left out."""
    zero = a if _is_zero(a) else b if _is_zero(b) else None
    if zero is None:
        return op(a, b)
    other = b if zero is a else a
    if not keep and not (isinstance(other, Tensor) and other.requires_grad):
        return None
    product = op(a, b)
    product._data = product._backend.zeros_like(product._data)
    return product


def _zero_minus(zero, value: Tensor) -> Tensor:
    """``zero - value`` with a ZeroTensor ``zero``: PyTorch's value is ``-value`` exactly (signed zeros too)."""
    difference = zero - value
    backend = difference._backend
    negated = backend.astype(backend.neg(value._data), difference.dtype)
    difference._data = backend.copy(backend.broadcast_to(negated, difference._data.shape))
    return difference


def _product(method):
    """The product rule for a bilinear op (``mm``, ``mv``, ``bmm``, ``dot``): ``self_t @ other_p + self_p @ other_t``."""

    def rule(cls, args, params, tangents, out):
        (self_p, other_p), (self_t, other_t) = _materialized(args, tangents, 2)
        if cls.__name__ == "DotBackward0":  # torch's dot with a ZeroTensor is zero (mm, mv, bmm compute it)
            return _sum_of([_term(method, self_t, other_p), _term(method, self_p, other_t)])
        return _sum_of([method(self_t, other_p), method(self_p, other_t)])

    return rule


def _mul(cls, args, params, tangents, out):
    """``other_t * self_p + self_t * other_p``, PyTorch's formula and order."""
    (self_p, other_p), (self_t, other_t) = _materialized(args, tangents, 2)
    keep = _graphed(out, tangents)
    return _sum_of([None if other_t is None else _term(_times, other_t, self_p, keep),
                    None if self_t is None else _term(_times, self_t, other_p, keep)])


def _times(a, b):
    return a * b


def _number_tangent(value):
    """The tangent PyTorch gives a Python number it wrapped in a 0-d tensor (an efficient zero tensor)."""
    from gradviz import _dtype
    from gradviz.tensor import zeros

    return zeros((), dtype=_dtype.bool if isinstance(value, bool) else _dtype.int64 if isinstance(value, int)
                 else _dtype.float64)


def _mul_rule(cls, args, params, tangents, out):
    """``mul``: ``other_t * self_p + self_t * other_p``. A Python number's tangent is PyTorch's zero tensor: its
    term is recorded only when the primal needs a graph (so the tangent's graph is torch's; 0 * inf is no issue
    otherwise)."""
    if isinstance(args[0], Tensor) and isinstance(args[1], Tensor):
        return _mul(cls, args, params, tangents, out)
    (self_p, other_p), (self_t, other_t) = _materialized(args, tangents, 2)
    if not _graphed(out, tangents):
        return self_t * other_p if other_t is None else other_t * self_p
    if other_t is None:
        return _sum_of([_term(_times, _zero_tangent(args[1]), self_p, True), self_t * other_p])
    return _sum_of([other_t * self_p, _term(_times, _zero_tangent(args[0]), other_p, True)])


def _div_rule(cls, args, params, tangents, out):
    """``div``: PyTorch's ``(self_t - other_t * result) / other_p`` (an input without a tangent has a zero one,
    kept out of the arithmetic unless the primal needs a graph: a zero times an infinite quotient is no NaN)."""
    (self_p, other_p), _ = _materialized(args, tangents, 2)
    self_t, other_t = tangents[0], tangents[1]
    if not _graphed(out, tangents):
        if other_t is None:
            return self_t / other_p
        if self_t is None:
            return -(other_t * out) / other_p
    if self_t is None:
        self_t = _zero_tangent(args[0])
    if other_t is None:
        other_t = _zero_tangent(args[1])
    product = _term(_times, other_t, out, True)
    return (_zero_minus(self_t, product) if _is_zero(self_t) else self_t - product) / other_p


def _pow_rule(cls, args, params, tangents, out):
    """``x ** c``: PyTorch's ``pow_backward(self_t, self_p, exponent)``: ``self_t * (c * self_p.pow(c - 1))``,
    zeros for ``c == 0``."""
    from gradviz.ops.arithmetic import MulBackward1
    from gradviz.tensor import zeros_like

    self_p, exponent = _primal(args[0]), params.get("exponent", args[1] if len(args) > 1 else None)
    if exponent == 0:
        return zeros_like(self_p)
    exponent = float(exponent)
    return tangents[0] * MulBackward1.apply(self_p.pow(exponent - 1), exponent)


def _hardsigmoid(self_t, self_p, result):
    """PyTorch's ``hardsigmoid_backward(self_t, self_p)``: ``self_t / 6`` where ``-3 < x < 3``, else 0 (its own
    backward is not recorded, so the double-vjp trick cannot be used)."""
    from gradviz.ops.comparison import where

    inside = (self_p.detach() > -3.0).logical_and(self_p.detach() < 3.0)
    return where(inside, self_t * (1.0 / 6.0), 0.0)


def _logsumexp_jvp(self_p, self_t, dim, keepdim=True):
    """PyTorch's ``logsumexp_jvp(self_p, self_t, dim, keepdim)``, step for step (its in-place ``*=`` included)."""
    self_p_exp = (self_p - self_p.amax(dim, True)).exp() if self_p.numel() > 0 else self_p.exp()
    sumexp_p = self_p_exp.sum(dim, keepdim)
    self_p_exp.mul_(self_t)
    return self_p_exp.sum(dim, keepdim) / sumexp_p


def _logsumexp_rule(cls, args, params, tangents, out):
    """``logsumexp``: ``logsumexp_jvp(self_p, self_t, dim, keepdim)``."""
    keepdim = params.get("keepdim", args[2] if len(args) > 2 else False)
    return _logsumexp_jvp(_primal(args[0]), tangents[0], _dim_of(args, params), keepdim)


def _dim_of(args, params):
    return params["dim"] if "dim" in params else args[1]


def _softmax_rule(cls, args, params, tangents, out):
    """``softmax``: ``result * (self_t - logsumexp_jvp(self_p, self_t, {dim}, true))``."""
    return out * (tangents[0] - _logsumexp_jvp(_primal(args[0]), tangents[0], _dim_of(args, params)))


def _log_softmax_rule(cls, args, params, tangents, out):
    """``log_softmax``: ``self_t - logsumexp_jvp(self_p, self_t, {dim}, true)``."""
    return tangents[0] - _logsumexp_jvp(_primal(args[0]), tangents[0], _dim_of(args, params))


def _sum_of(terms):
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else total + term
    return total


def _scale(cls, args, params, tangents, out):
    """``x * c`` and ``x / c`` with a number ``c``: the same op on the tangent."""
    return cls.apply(tangents[0], args[1])


def _addmm(cls, args, params, tangents, out):
    """``beta * self_t + alpha * (mat1_t @ mat2 + mat1 @ mat2_t)`` (nn.Linear's op)."""
    (bias, mat1, mat2), (bias_t, mat1_t, mat2_t) = _materialized(args, tangents, 3)
    beta = params.get("beta", args[3] if len(args) > 3 else 1)
    alpha = params.get("alpha", args[4] if len(args) > 4 else 1)
    terms = [bias_t if beta == 1 else bias_t * beta]
    for term in (mat1_t.mm(mat2), mat1.mm(mat2_t)):
        terms.append(term if alpha == 1 else term * alpha)
    return _sum_of(terms)


def _elementwise(formula):
    """A unary op's rule, ``formula(self_t, self_p, result)``, written with the ops PyTorch's formula uses
    (so a tangent of a primal that requires grad gets torch's graph)."""

    def rule(cls, args, params, tangents, out):
        return formula(tangents[0], _primal(args[0]), out)

    return rule


def _double_backward_op(name):
    """``tanh_backward(self_t, result)``-style formulas: the op's own backward node, applied to the tangent."""

    def formula(self_t, self_p, result):
        from gradviz.ops import double_backward

        return getattr(double_backward, name).apply(self_t, result)

    return formula


def _logcumsumexp(cls, args, params, tangents, out):
    """PyTorch's ``logcumsumexp_jvp``: ``cumsum(e^(x - max) t) / cumsum(e^(x - max))`` along ``dim``. (Its
    backward, read at the zero vector the double-vjp trick uses, takes ``log |0|``: NaN, in torch as here.)"""
    self_p, dim = _primal(args[0]), params["dim"] if "dim" in params else args[1]
    self_p_exp = (self_p - self_p.max(dim, True)[0]).exp()
    tangent = (self_p_exp * tangents[0]).cumsum(dim) / self_p_exp.cumsum(dim)
    return tangent if tangent.dtype is out.dtype else tangent.to(out.dtype)  # torch's is the primal's dtype


def _abs(self_t, self_p, result):
    """``abs``: ``self_t * self_p.sgn()``."""
    return self_t * self_p.sgn()


def _sqrt(self_t, self_p, result):
    """``sqrt``: ``self_t / (2 * result)`` (the 2 a C++ number: MulBackward1)."""
    from gradviz.ops.arithmetic import MulBackward1

    return self_t / MulBackward1.apply(result, 2)


def _reciprocal(self_t, self_p, result):
    """``reciprocal``: ``-self_t * (result * result)``."""
    return -self_t * (result * result)


def _rsqrt(self_t, self_p, result):
    """``rsqrt``: ``-0.5 * self_t * result.pow(3)``."""
    from gradviz.ops.arithmetic import MulBackward1

    return MulBackward1.apply(self_t, -0.5) * result.pow(3)


def _mse_loss(cls, args, params, tangents, out):
    """PyTorch's ``mse_loss_jvp``: ``mse_loss_backward(input_t, input_p, target_p, 'none') +
    mse_loss_backward(target_t, target_p, input_p, 'none')``, then the loss's reduction; a reduced tangent is
    copied into a fresh tensor (torch's CopyBackwards on top)."""
    from gradviz.ops.double_backward import MseLossBackwardBackward0
    from gradviz.tensor import zeros_like

    reduction = params.get("reduction", args[2] if len(args) > 2 else 1)
    (input_p, target_p), (input_t, target_t) = _materialized(args, tangents, 2)
    terms = []
    for grad, self, target in ((input_t, input_p, target_p), (target_t, target_p, input_p)):
        if isinstance(self, Tensor) and isinstance(target, Tensor):
            if grad is None:
                grad = _zero_tangent(self)
            terms.append(MseLossBackwardBackward0.apply(grad, self, target, 0))
    tangent = _sum_of(terms)
    if reduction == 0:
        return tangent
    tangent = tangent.mean() if reduction == 1 else tangent.sum()
    return zeros_like(out).copy_(tangent) if tangent.requires_grad else tangent


def _plus_one(value: Tensor) -> Tensor:
    """``value + 1`` as PyTorch's C++ formulas write it (``add(Tensor, Scalar)``: AddBackward1)."""
    from gradviz.ops.arithmetic import AddBackward1

    return AddBackward1.apply(value, 1)


def _times_number(value: Tensor, number: float) -> Tensor:
    """``value * number`` in a C++ formula (MulBackward1)."""
    from gradviz.ops.arithmetic import MulBackward1

    return MulBackward1.apply(value, number)


def _one_minus_square(self_p: Tensor) -> Tensor:
    """``-self * self + 1`` (``asin``/``acos``)."""
    return _plus_one(-self_p * self_p)


_LN2, _LN10 = math.log(2.0), math.log(10.0)
_UNARY = {  # derivatives.yaml's ``auto_element_wise`` formulas with ``grad`` replaced by ``self_t``
    "Log1PBackward0": lambda self_t, self_p, result: self_t / _plus_one(self_p),
    "Expm1Backward0": lambda self_t, self_p, result: self_t * _plus_one(result),
    "SinhBackward0": lambda self_t, self_p, result: self_t * self_p.cosh(),
    "CoshBackward0": lambda self_t, self_p, result: self_t * self_p.sinh(),
    "AtanBackward0": lambda self_t, self_p, result: self_t / _plus_one(self_p * self_p),
    "AsinBackward0": lambda self_t, self_p, result: self_t * _one_minus_square(self_p).rsqrt(),
    "AcosBackward0": lambda self_t, self_p, result: self_t * -_one_minus_square(self_p).rsqrt(),
    "ErfBackward0": lambda self_t, self_p, result: _times_number((-self_p.pow(2)).exp(),
                                                                 2.0 / math.sqrt(math.pi)) * self_t,
    "ErfinvBackward0": lambda self_t, self_p, result: _times_number(self_p.erfinv().pow(2).exp(),
                                                                    0.5 * math.sqrt(math.pi)) * self_t,
    "Log2Backward0": lambda self_t, self_p, result: self_t / _times_number(self_p, _LN2),
    "Log10Backward0": lambda self_t, self_p, result: self_t / _times_number(self_p, _LN10),
    "Exp2Backward0": lambda self_t, self_p, result: _times_number(self_t * result, _LN2),
}


def _through_double_backward(node_name: str):
    """An activation whose tangent is its own backward node applied to the tangent: ``leaky_relu_backward(self_t,
    self_p, negative_slope)`` and alike; the op's parameters are read from its forward's signature."""

    def rule(cls, args, params, tangents, out):
        import inspect

        from gradviz.ops import activation

        bound = inspect.signature(cls.forward).bind(None, *args, **params)
        bound.apply_defaults()
        rest = list(bound.arguments.values())[2:]
        return getattr(activation, node_name).apply(tangents[0], _primal(args[0]), *rest)

    return rule


_ELEMENTWISE = {
    "LogBackward0": lambda self_t, self_p, result: self_t.div(self_p),
    "ExpBackward0": lambda self_t, self_p, result: self_t * result,
    "SinBackward0": lambda self_t, self_p, result: self_t * self_p.cos(),
    "CosBackward0": lambda self_t, self_p, result: self_t * -self_p.sin(),
    "TanhBackward0": _double_backward_op("TanhBackwardBackward0"),
    "SigmoidBackward0": _double_backward_op("SigmoidBackwardBackward0"),
    "ReluBackward0": _double_backward_op("ThresholdBackwardBackward0"),
    "AbsBackward0": _abs, "SqrtBackward0": _sqrt, "ReciprocalBackward0": _reciprocal, "RsqrtBackward0": _rsqrt,
}

_LINEAR_OPS = ("ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0", "AliasBackward0", "TBackward0",
               "PermuteBackward0", "TransposeBackward0", "UnsqueezeBackward0", "SqueezeBackward0",
               "SqueezeBackward1", "SqueezeBackward2", "SqueezeBackward4", "ExpandBackward0", "SelectBackward0",
               "SliceBackward0", "IndexBackward0", "CloneBackward0", "SumBackward0", "SumBackward1",
               "MeanBackward0", "MeanBackward1", "NegBackward0", "ToCopyBackward0", "Identity")
_RULES = dict.fromkeys(_LINEAR_OPS, _linear)
_RULES.update(dict.fromkeys(("ViewBackward0", "ReshapeAliasBackward0", "AliasBackward0", "TBackward0", "PermuteBackward0",
                             "TransposeBackward0", "UnsqueezeBackward0", "SqueezeBackward0", "SqueezeBackward1",
                             "SqueezeBackward2", "SqueezeBackward4", "ExpandBackward0", "SelectBackward0",
                             "SliceBackward0"), _view))
_RULES.update({
    "CatBackward0": _linear_in_all, "StackBackward0": _linear_in_all,
    "AddBackward1": _same, "SubBackward1": _same, "MulBackward1": _scale, "DivBackward1": _scale,
    "AddBackward0": _add, "SubBackward0": _sub,
    "MulBackward0": _mul, "MmBackward0": _product(lambda a, b: a.mm(b)),
    "MvBackward0": _product(lambda a, b: a.mv(b)), "BmmBackward0": _product(lambda a, b: a.bmm(b)),
    "DotBackward0": _product(lambda a, b: a.dot(b)),
    "AddmmBackward0": _addmm, "LogcumsumexpBackward0": _logcumsumexp,
})
_RULES["HardsigmoidBackward0"] = _elementwise(_hardsigmoid)
_RULES.update({"MulBackward0": _mul_rule, "DivBackward0": _div_rule, "PowBackward0": _pow_rule,
               "SoftmaxBackward0": _softmax_rule, "LogSoftmaxBackward0": _log_softmax_rule})
_RULES.update({name: _elementwise(formula) for name, formula in _ELEMENTWISE.items()})
_RULES.update({"MseLossBackward0": _mse_loss, "NllLossBackward0": _linear, "RsubBackward1": _rsub})
_RULES.update({name: _elementwise(formula) for name, formula in _UNARY.items()})
_RULES["LogsumexpBackward0"] = _logsumexp_rule
_RULES.update({f"{name}Backward0": _through_double_backward(f"{name}BackwardBackward0")
               for name in ("LeakyRelu", "Elu", "Gelu", "Softplus", "Hardtanh")})


# -- ops that write their own ``apply`` -------------------------------------------------------------------------
_swapped: dict = {}  # class -> its own apply (a classmethod), while a level is active


def _own_applies() -> list:
    """The op classes whose ``apply`` does not go through ``OpFunction.apply`` (found by walking the subclasses)."""
    found, stack = [], list(OpFunction.__subclasses__())
    while stack:
        klass = stack.pop()
        stack.extend(klass.__subclasses__())
        own = klass.__dict__.get("apply")
        if own is not None and own.__func__ is not _base_apply and not hasattr(own.__func__, "_lean"):
            found.append(klass)  # (not the general or lean apply OpFunction gives a class: they hand dual inputs here)
    return found


def _swap_own_applies(install: bool) -> None:
    if not install:
        for klass, original in _swapped.items():
            setattr(klass, "apply", original)
        _swapped.clear()
        return
    for klass in _own_applies():
        original = klass.__dict__["apply"]
        _swapped[klass] = original

        def dual_apply(cls, *args, _original=original.__func__, **params):
            if _FORWARD_AD[0] is None:  # inside another op's work: run plainly
                return _original(cls, *args, **params)
            return _apply_dual(cls, args, params, apply=_original)

        setattr(klass, "apply", classmethod(dual_apply))


# -- sampling on dual tensors: ``torch.bernoulli``, ``torch.normal`` -----------------------------------------------------
def _sample_with_zero_tangent(sample, name: str, args: tuple, kwargs: dict):
    """``sample(*args, **kwargs)``; a dual input's sample gets the zero tangent torch gives it (torch refuses
    ``bernoulli(d, p)``: that overload has no forward formula)."""
    if _current_level < 0 or not any(isinstance(a, Tensor) and _tangent_of(a) is not None
                                     for a in (*args, *kwargs.values())):
        return sample(*args, **kwargs)
    if name == "bernoulli" and (len(args) > 1 or kwargs.get("p") is not None):
        raise NotImplementedError(_not_implemented_message("aten::bernoulli"))
    hook, _FORWARD_AD[0] = _FORWARD_AD[0], None
    try:
        out = sample(*args, **kwargs)
    finally:
        _FORWARD_AD[0] = hook
    from gradviz.tensor import zeros_like

    _set_tangent(out, zeros_like(out))
    return out


def bernoulli(*args, **kwargs):
    """``torch.bernoulli`` (gradviz.tensor's), aware of dual tensors."""
    from gradviz.tensor import bernoulli as sample

    return _sample_with_zero_tangent(sample, "bernoulli", args, kwargs)


def normal(*args, **kwargs):
    """``torch.normal`` (gradviz.ops.sampling's), aware of dual tensors."""
    from gradviz.ops.sampling import normal as sample

    return _sample_with_zero_tangent(sample, "normal", args, kwargs)


# -- a user's autograd.Function: its ``jvp`` staticmethod is the forward rule ---------------------------------
class _JvpCtx:
    """The ``ctx`` that ``jvp`` sees: the call's own ctx, whose ``saved_tensors`` are what forward gave
    ``ctx.save_for_forward`` (attributes set on ctx in forward are all there)."""

    def __init__(self, node):
        object.__setattr__(self, "_node", node)

    @property
    def saved_tensors(self) -> tuple:
        return tuple(self._node._to_save_for_forward)

    def __getattr__(self, name):
        return getattr(self._node, name)

    def __setattr__(self, name, value):
        setattr(self._node, name, value)

    def __delattr__(self, name):  # ``del ctx.result`` once jvp has used it, as PyTorch's tutorial does
        delattr(self._node, name)


def apply_custom(cls, args, kwargs):
    """``MyFunction.apply`` while a level is active: forward (and its recording) as usual, with no tangent
    pushed through the ops inside it; then ``cls.jvp(ctx, *tangents)`` gives the outputs' tangents."""
    from gradviz.tensor import zeros_like

    tangents = [_tangent_of(arg) if isinstance(arg, Tensor) else None for arg in args]
    node = cls._backward_cls()
    hook, _FORWARD_AD[0] = _FORWARD_AD[0], None
    try:
        output = cls._apply_with(node, args, kwargs)
        if all(t is None for t in tangents):
            return output
        grads = [t if t is not None or not isinstance(arg, Tensor) or not node.materialize_grads else zeros_like(arg)
                 for arg, t in zip(args, tangents)]
        results = cls.jvp(_JvpCtx(node), *grads)
    finally:
        _FORWARD_AD[0] = hook
    outputs = output if isinstance(output, tuple) else (output,)
    results = results if isinstance(results, tuple) else (results,)
    tensors = [out for out in outputs if isinstance(out, Tensor)]
    for out, tangent in zip(tensors, results):
        if tangent is not None and out.is_floating_point():
            _set_tangent(out, tangent)
    return output
