"""Binary arithmetic: ``+ - * / **`` and their reflected forms.

Each class is PyTorch's node for that op; the formulas read like ``derivatives.yaml``. A Python
number in an op is a constant: it gets the edge ``(None, 0)`` where PyTorch wraps it in a tensor
(``x + 2``, ``x * 2``), and no edge at all where PyTorch takes a Scalar (``2 - x``, ``x ** 2``).
Gradients are summed back to each input's shape wherever broadcasting widened it.
"""
from __future__ import annotations

import math
import operator
import weakref

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import _NO_RECORD, OpFunction
from gradviz.autograd.function import _BOTH, _FIRST_OF_TWO, _FORWARD_AD, _SECOND_OF_TWO, NO_EDGE  # (the lean apply's)
from gradviz.autograd.node import SAVED_TENSOR_HOOKS, SavedTensor, _sequence, saved_input
from gradviz.grad_mode import _state as _grad_state, grad_off as _grad_off, ordering as _ordering
from gradviz.grad_mode import INFERENCE_SAVED, check_not_inference, inference_tensors as _inference_tensors
from gradviz.backends import numpy_backend
from gradviz.backends.quiet import _IGNORE, _get, _reset, _set
from gradviz.ops._util import (backend_of, broadcast_shapes, meta, promote, sum_to_tensor,
                               to_shape_and_dtype)
from gradviz.tensor import Tensor, _is_operand
from gradviz.ops.unary import _saved_scalar, scalar_grads_as_arrays  # the scalar forms' shared readers


def _saved_operand(ctx, value, carrier):
    """What to save for an operand: a tensor, or a Python number kept as the number itself.

    PyTorch shows a saved number as the 0-d tensor it wraps it in (``x * 2`` saves ``tensor(2)``);
    that tensor is made only when someone looks (see ``OpFunction.wrapped_numbers``): backward
    just multiplies by the number.
    """
    if value is None or isinstance(value, Tensor):
        return value
    if carrier._backend is not numpy_backend:  # numpy data is on the CPU, the class default
        ctx.number_device = carrier.device
    return value


def _save_operand(ctx, value, carrier):
    """``ctx.save`` of one operand, written out for Mul and Div (they save their operands directly,
    with no keyword dict and no loop): a tensor as a ``SavedTensor``, a number as the number."""
    if type(value) is Tensor or isinstance(value, Tensor):
        if _inference_tensors:  # empty unless inference_mode was used
            check_not_inference(value, INFERENCE_SAVED)
        return saved_input(value)
    return _saved_operand(ctx, value, carrier)


def check_sub(self, other) -> None:
    """PyTorch's ``sub_check``: ``-`` refuses a bool operand (a bool tensor or Python bool), where numpy
    would subtract (bool - float) or raise its own TypeError (bool - bool)."""
    first = type(self) is bool or (isinstance(self, Tensor) and self.dtype is _dtype.bool)
    second = type(other) is bool or (isinstance(other, Tensor) and other.dtype is _dtype.bool)
    if first and second:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if first or second:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


# -- 0-d float operands: numpy's scalar arithmetic -----------------------------------------------------
# A ufunc on 0-d arrays costs about three times numpy's scalar arithmetic on the same values (and its
# result comes back as a scalar that must be made an array again anyway). For float32 and float64 both
# compute the same IEEE operation in the same precision, so the bits agree (tests/test_scalar_math.py
# checks it, NaN, infinities and -0.0 included); a Python number combines with a numpy scalar as with a
# 0-d array (NEP 50: the array's dtype wins). Scalar graphs (a polynomial fit, a micrograd-style
# network, a long chain) are made of nothing else.
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_ndarray = np.ndarray
_asarray = np.asarray
_METAS_32 = (((), _F32, (), _F32), ((), _F32, (), None))  # the metas of a 0-d pair: one shared tuple each
_METAS_64 = (((), _F64, (), _F64), ((), _F64, (), None))
_PAIR_32, _PAIR_64 = _METAS_32[0], _METAS_64[0]  # the metas of two 0-d tensors of one dtype
# a 0-d float32/float64 node's metas -> its dtype: a 0-d pair of one dtype, or a 0-d tensor with a number
# (nothing to sum or cast back when the gradient is 0-d of that dtype: ``_binary_grads`` would return it)
_SCALAR_NODE_DTYPE = {id(metas): metas[1] for metas in (*_METAS_32, *_METAS_64)}
# the same, to the numpy scalar type of the node's gradient when the engine hands it on as a scalar
_SCALAR_NODE_TYPE = {id(metas): metas[1].type for metas in (*_METAS_32, *_METAS_64)}
_float32, _float64 = np.float32, np.float64
_add, _subtract, _multiply, _divide = operator.add, operator.sub, operator.mul, operator.truediv


# For two 0-d tensors of one dtype (and a float64 tensor with a Python number) + - * / go one step
# further, through Python floats: a float64's operation is the same IEEE double operation, and a
# float32's, computed in double and rounded once to float32, is the correctly rounded float32 result
# (an exact product fits in double's 53 bits; for + and / rounding twice is innocuous when the wider
# format has at least 2p + 2 bits, 53 >= 2 * 24 + 2, subnormal results included). Only a finite result
# within the dtype's range takes that step: an overflow (numpy warns in the float32 cast), an infinity,
# a NaN (whose bits the hardware's float32 operation decides) or a division by zero (Python raises) go
# to numpy's scalar arithmetic as before. Nothing on the float step can warn, so it needs no silencing.
# A Python number meets a float32 tensor as numpy rounds it (to float32 first): that case stays numpy's.
_F32_MAX, _F64_MAX = float(np.finfo(np.float32).max), float(np.finfo(np.float64).max)
_array = np.array
_new_object = object.__new__
_weakref = weakref.ref


def _scalar_result(ctx, x, other, operation):
    """``operation(x, y)`` as a 0-d array, computed on Python floats or numpy scalars (see above),
    when ``x`` (the data of ``self``, a plain Tensor: the caller has checked that it is a 0-d numpy array,
    so that an array operand pays no call here) is float32 or float64 and ``other`` a 0-d tensor of the same
    dtype or a Python number; else None. Notes the operands' metas as ``_binary_operands`` does."""
    dtype = x.dtype  # told apart by identity (a dict lookup hashes the dtype, which costs more)
    if dtype is _F32:
        metas, limit = _METAS_32, _F32_MAX
    elif dtype is _F64:
        metas, limit = _METAS_64, _F64_MAX
    else:
        return None
    if type(other) is Tensor:
        y = other._data
        if type(y) is _ndarray and not y.ndim and y.dtype is dtype:
            if ctx is not _NO_RECORD:  # (its __setattr__ is a Python call that keeps nothing)
                ctx.metas = metas[0]
            try:
                value = operation(float(x), float(y))
            except ZeroDivisionError:  # x / 0: numpy's inf or nan, below
                value = limit * 2.0
            if -limit <= value <= limit:
                return _array(value, dtype)
            y = y[()]
        else:
            return None
    elif type(other) is float or type(other) is int:
        if ctx is not _NO_RECORD:
            ctx.metas = metas[1]
        y = float(other)
        if dtype is _F64:
            try:
                value = operation(float(x), y)
            except ZeroDivisionError:
                value = limit * 2.0
            if -limit <= value <= limit:
                return _array(value, dtype)
    else:
        return None
    token = _set(_IGNORE)
    out = operation(x[()], y)
    _reset(token)
    return out.__array__()  # np.asarray(out), for a numpy scalar: one call less


def scalar_pair_operator(cls, operation, lean, saves_operands: bool):
    """The operator ``a + b``, ``a - b`` or ``a * b`` (``cls`` Add/Sub/MulBackward0, ``operation`` the Python
    operator) recorded in one Python frame when both operands are plain 0-d float32/float64 numpy tensors of
    one dtype that are not views, at least one requiring grad, and nothing else is going on (grad mode on, no
    dual level, no create_graph pass or anomaly mode, no saved-tensor hooks, no inference tensors): the lean
    apply (``lean``, which anything else takes), the op's ``forward`` and ``_scalar_result`` written out for
    that case, with the same node, edges, ``needs_input_grad``, constants, sequence number, ``metas``, saved
    entries (``saves_operands``: Mul's two saved inputs, else Add/Sub's ``alpha``) and output bits. A scalar
    graph (micrograd-style network, cubic fit) is nearly all such ``w * v`` and ``total + product``; each
    Python frame the general path spends on them (apply, forward, ``_scalar_result``) is a few percent of
    its forward pass. A result outside the dtype's finite range goes to ``lean`` (numpy's scalar arithmetic
    decides its bits), before anything is made. ``tests/test_forward_scalars.py`` holds it to ``lean`` and
    to PyTorch."""

    def operator(first, second):
        if type(second) is Tensor and type(first) is Tensor:
            x = first._data
            y = second._data
            if (type(x) is _ndarray and type(y) is _ndarray and not x.ndim and not y.ndim  # (arrays: lean at once)
                    and _FORWARD_AD[0] is None and not _ordering and not SAVED_TENSOR_HOOKS and not _inference_tensors
                    and (not _grad_off or _grad_state.enabled) and first._base is None and second._base is None
                    and (first._requires_grad or second._requires_grad)):
                dtype = x.dtype
                if y.dtype is dtype and (dtype is _F32 or dtype is _F64):
                    value = operation(float(x), float(y))  # exact as in _scalar_result (+ - * cannot divide by 0)
                    limit = _F32_MAX if dtype is _F32 else _F64_MAX
                    if -limit <= value <= limit:
                        # the edges (gradient_edge, written out as in lean_apply for inputs that are not views)
                        if first._requires_grad:
                            grad_fn = first._grad_fn
                            if grad_fn is not None:
                                edge = (grad_fn, first._output_nr)
                            else:
                                accumulator = first._accumulator
                                accumulator = accumulator() if accumulator is not None else None
                                edge = (accumulator if accumulator is not None else first._grad_accumulator(), 0)
                        else:
                            edge = None
                        if second._requires_grad:
                            grad_fn = second._grad_fn
                            if grad_fn is not None:
                                other_edge = (grad_fn, second._output_nr)
                            else:
                                accumulator = second._accumulator
                                accumulator = accumulator() if accumulator is not None else None
                                other_edge = (accumulator if accumulator is not None else second._grad_accumulator(), 0)
                        else:
                            other_edge = None
                        node = _new_object(cls)
                        if edge is None:
                            node._next_functions = (NO_EDGE, other_edge)
                            node.needs_input_grad = needs = _SECOND_OF_TWO
                            node._constants = (_weakref(first), None)
                        elif other_edge is None:
                            node._next_functions = (edge, NO_EDGE)
                            node.needs_input_grad = needs = _FIRST_OF_TWO
                            node._constants = (None, _weakref(second))
                        else:
                            node._next_functions = (edge, other_edge)
                            node.needs_input_grad = needs = _BOTH
                        node._sequence_nr = next(_sequence)
                        # forward's notes, in its order: MulBackward0.forward, or Add/SubBackward0.forward
                        if saves_operands:
                            node.metas = _PAIR_32 if dtype is _F32 else _PAIR_64
                            # ctx.save(other=second, self=first) for the inputs whose gradient needs them:
                            # saved_input's slot copies, written out (a call each is about 5 % of a product)
                            other_saved = self_saved = None
                            if needs[0]:
                                other_saved = _new_object(SavedTensor)
                                other_saved.data = y
                                version_counter = other_saved.version_counter = second._vc
                                other_saved.saved_version = version_counter[0]
                                other_saved.is_output = False
                                other_saved._output_name = None
                                other_saved.requires_grad = second._requires_grad
                                other_saved.grad_fn_ref = second._grad_fn
                                other_saved.tensor = second
                                other_saved.hooks = None
                            if needs[1]:
                                self_saved = _new_object(SavedTensor)
                                self_saved.data = x
                                version_counter = self_saved.version_counter = first._vc
                                self_saved.saved_version = version_counter[0]
                                self_saved.is_output = False
                                self_saved._output_name = None
                                self_saved.requires_grad = first._requires_grad
                                self_saved.grad_fn_ref = first._grad_fn
                                self_saved.tensor = first
                                self_saved.hooks = None
                            node._packed = {"other": other_saved, "self": self_saved}
                        else:
                            node._packed = {"alpha": 1}
                            node.metas = _PAIR_32 if dtype is _F32 else _PAIR_64
                        out = _new_object(Tensor)  # Tensor._make, written out (as in lean_apply)
                        out._data = _array(value, dtype)
                        out._backend = numpy_backend
                        out._requires_grad = True
                        out._grad = None
                        out._grad_fn = node
                        out._vc = [0]
                        out._output_nr = 0
                        out._accumulator = None
                        out._retains_grad = False
                        out._base = None
                        out._leaf_hooks = None
                        return out
        return lean(first, second)

    return operator


# numpy warns about 1 / 0 or an overflow in scalar arithmetic, where torch says nothing: the scalar paths
# below run with numpy's warnings off, quiet.py's ContextVar set and reset around the one operation
# (nothing in between can raise: numpy's "raise" mode is what the set turns off)


def _times(backend, a, b):
    """``backend.mul(a, b)`` in a backward formula; numpy's scalar arithmetic (bit-identical, as in
    ``_scalars``) when ``a`` is a 0-d float32/float64 array and ``b`` a 0-d array of its dtype or a
    Python number: the gradients of a scalar graph are 0-d too. The scalar product is made an array with
    its ``__array__()`` (np.asarray's answer for a numpy scalar, about 400 instructions cheaper), as in
    every 0-d backward path below."""
    if type(a) is _ndarray and a.shape == ():
        dtype = a.dtype
        if dtype is _F32 or dtype is _F64:
            if type(b) is _ndarray:
                if b.shape == () and b.dtype is dtype:
                    token = None if _get() is _IGNORE else _set(_IGNORE)
                    out = a[()] * b[()]
                    if token is not None:
                        _reset(token)
                    return out.__array__()
            elif type(b) is float or type(b) is int:
                token = None if _get() is _IGNORE else _set(_IGNORE)
                out = a[()] * b
                if token is not None:
                    _reset(token)
                return out.__array__()
    return backend.mul(a, b)


def _over(backend, a, b):
    """``backend.div(a, b)`` in a backward formula, as ``_times`` does it."""
    if type(a) is _ndarray and a.shape == ():
        dtype = a.dtype
        if dtype is _F32 or dtype is _F64:
            if type(b) is _ndarray:
                if b.shape == () and b.dtype is dtype:
                    token = None if _get() is _IGNORE else _set(_IGNORE)
                    out = a[()] / b[()]
                    if token is not None:
                        _reset(token)
                    return out.__array__()
            elif type(b) is float or type(b) is int:
                token = None if _get() is _IGNORE else _set(_IGNORE)
                out = a[()] / b
                if token is not None:
                    _reset(token)
                return out.__array__()
    return backend.div(a, b)


def _needs(ctx, index: int) -> bool:
    """Whether input ``index`` needs a gradient (False when forward runs without recording)."""
    return ctx.needs_input_grad[index:index + 1] == (True,)


def _binary_operands(ctx, self, other) -> tuple:
    """``(backend, x, y)``: the operands' data promoted to PyTorch's result dtype, after checking that
    they broadcast (with PyTorch's error) and noting what each one's gradient must look like (its
    shape and array dtype, one flat tuple per node; a Python number gets none).

    The two common cases, two tensors of one dtype and a float tensor with a Python number, are
    answered here with no promotion table: this runs for every ``+ - * /`` a learner writes.
    """
    if type(other) is float or type(other) is int:
        if (type(self) is Tensor or isinstance(self, Tensor)) and self._backend is numpy_backend:
            data = self._data
            if data.dtype.kind == "f":  # a float tensor's dtype wins; the number stays a Python float
                if ctx is not _NO_RECORD:  # (its __setattr__ is a Python call: ``lr * p.grad`` under no_grad)
                    ctx.metas = (data.shape, data.dtype, (), None)
                return numpy_backend, data, float(other)
    elif isinstance(self, Tensor) and isinstance(other, Tensor):
        self_data, other_data = self._data, other._data
        self_shape, other_shape = self_data.shape, other_data.shape
        if self_shape != other_shape:
            # suffix_broadcasts, written out: the shorter shape the end of the longer (``(64, 16) + (16,)``)
            # surely broadcasts; anything else gets broadcast_shapes' check (and PyTorch's error)
            lead = len(self_shape) - len(other_shape)
            if (self_shape[lead:] != other_shape) if lead >= 0 else (other_shape[-lead:] != self_shape):
                broadcast_shapes(self_shape, other_shape)
        self_dtype, other_dtype = self_data.dtype, other_data.dtype  # (read once: a getset call each)
        if ctx is not _NO_RECORD:
            ctx.metas = (self_shape, self_dtype, other_shape, other_dtype)
        if self_dtype is other_dtype or self_dtype == other_dtype:
            return self._backend, self_data, other_data
        x, y = promote(self, other)
        return self._backend, x, y
    ctx.metas = meta(self) + meta(other)
    x, y = promote(self, other)
    return backend_of(self, other), x, y


def _binary_grads(ctx, first, second):
    """The gradients of the two inputs (None where not needed), each summed and cast back to its
    input (only when it differs from it: on scalar graphs it almost never does, and this runs for
    every binary node). Each op's backward computes only the gradients ``needs_input_grad`` asks for."""
    self_shape, self_dtype, other_shape, other_dtype = ctx.metas
    if first is not None and (first.shape != self_shape or (self_dtype is not None and first.dtype is not self_dtype)):
        first = to_shape_and_dtype(ctx.backend, first, self_shape, self_dtype)
    if second is not None and (second.shape != other_shape or (
            other_dtype is not None and second.dtype is not other_dtype)):
        second = to_shape_and_dtype(ctx.backend, second, other_shape, other_dtype)
    return first, second


def _bias_grad(ctx, grad):
    """The second input's gradient of ``x + b`` with a bias ``b`` (one dim fewer than ``x``, all of its dims
    ``x``'s last ones, one dtype throughout) on the numpy backend, or None for any other add: ``_binary_grads``'
    ``sum_to`` of ``grad`` over its first dim, in one backend call (``numpy_backend.sum_leading``: the same
    reduction, no wrappers or shape tests between). The first input's gradient is ``grad`` itself."""
    self_shape, self_dtype, other_shape, other_dtype = ctx.metas
    if (ctx.backend is numpy_backend and grad.dtype is self_dtype and other_dtype is self_dtype
            and grad.shape == self_shape and len(other_shape) == len(self_shape) - 1 and self_shape[1:] == other_shape):
        return numpy_backend.sum_leading(grad)
    return None


def _graph_grads(ctx, grad_self, grad_other):
    """The recorded form of ``_binary_grads`` (``create_graph=True``), in the order PyTorch records it:
    the second input's formula, then the first's (its generated code runs them in that order for
    these ops), then each gradient summed back to its input's shape (PyTorch's engine does that
    after the node has run, in ``validate_outputs``)."""
    needs = ctx.needs_input_grad
    raw_other = grad_other() if needs[1] else None
    raw = (grad_self() if needs[0] else None, raw_other)
    shapes = (ctx.metas[0], ctx.metas[2])  # the flat metas: (shape, dtype) of self, then of other
    grads = tuple(None if g is None else sum_to_tensor(g, shape) for g, shape in zip(raw, shapes))
    # -- recorded mixed dtypes: each gradient cast back to its input's dtype (ToCopyBackward0), as
    # validate_outputs casts it
    dtypes = (ctx.metas[1], ctx.metas[3])
    return tuple(g if g is None or dtype is None or g.dtype is dtype else g.to(dtype) for g, dtype in zip(grads, dtypes))


def _scalar_mul(tensor, number):
    """``tensor * number`` as PyTorch's C++ formulas write it (a Scalar): MulBackward1."""
    return MulBackward1.apply(tensor, number)


class AddBackward0(OpFunction):
    inputs = ("self", "other")
    _saves_tensors = False  # only alpha, a number: nothing for _release_variables to free
    derivatives = {"self": ("grad", r"\bar{y}"), "other": ("grad * alpha", r"\alpha\,\bar{y}")}

    def forward(ctx, self, other, alpha=1):
        ctx._packed = {"alpha": alpha}  # ctx.save(alpha=alpha), written out (nothing to check in a number)
        # a 0-d float self (a scalar graph) first: the test written here, so that arrays pay no call for it
        if alpha == 1 and type(self) is Tensor and type(x := self._data) is _ndarray and not x.ndim:
            out = _scalar_result(ctx, x, other, _add)
            if out is not None:
                return out
        backend, x, y = _binary_operands(ctx, self, other)
        return backend.add(x, y if alpha == 1 else backend.mul(y, alpha))

    def backward(ctx, grad):
        packed = ctx._packed  # alpha is a number, never freed: ctx.saved("alpha") read straight
        alpha = ctx.saved("alpha") if packed is None else packed["alpha"]
        needs = ctx.needs_input_grad
        if alpha == 1 and type(grad) is _ndarray and grad.dtype is _SCALAR_NODE_DTYPE.get(id(ctx.metas)) \
                and grad.shape == ():  # a 0-d node (scalar graph): _binary_grads has nothing to do
            return grad if needs[0] else None, grad if needs[1] else None
        if alpha == 1 and type(grad) is _ndarray and needs[0] and needs[1]:
            bias = _bias_grad(ctx, grad)
            if bias is not None:
                return grad, bias
        return _binary_grads(ctx, grad if needs[0] else None,
                             (grad if alpha == 1 else _times(ctx.backend, grad, alpha)) if needs[1] else None)

    def scalar_backward(ctx, grad):  # Node.scalar_backward: backward's 0-d path on the numpy scalar
        packed = ctx._packed
        if packed is not None and packed["alpha"] == 1 and type(grad) is _SCALAR_NODE_TYPE.get(id(ctx.metas)):
            needs = ctx.needs_input_grad
            return grad if needs[0] else None, grad if needs[1] else None
        return None

    def backward_graph(ctx, grad):
        alpha = ctx.saved("alpha")
        return _graph_grads(ctx, lambda: grad, lambda: grad if alpha == 1 else grad * alpha)


class SubBackward0(OpFunction):
    inputs = ("self", "other")
    _saves_tensors = False  # only alpha, a number: nothing for _release_variables to free
    derivatives = {"self": ("grad", r"\bar{y}"), "other": ("-grad * alpha", r"-\alpha\,\bar{y}")}

    def forward(ctx, self, other, alpha=1):
        ctx._packed = {"alpha": alpha}  # ctx.save(alpha=alpha), written out (nothing to check in a number)
        # a 0-d float self (a scalar graph) first: the test written here, so that arrays pay no call for it
        if alpha == 1 and type(self) is Tensor and type(x := self._data) is _ndarray and not x.ndim:
            out = _scalar_result(ctx, x, other, _subtract)
            if out is not None:
                return out
        check_sub(self, other)
        backend, x, y = _binary_operands(ctx, self, other)
        return backend.sub(x, y if alpha == 1 else backend.mul(y, alpha))

    def backward(ctx, grad):
        packed = ctx._packed  # alpha is a number, never freed: ctx.saved("alpha") read straight
        alpha = ctx.saved("alpha") if packed is None else packed["alpha"]
        needs = ctx.needs_input_grad
        if alpha == 1 and type(grad) is _ndarray and grad.dtype is _SCALAR_NODE_DTYPE.get(id(ctx.metas)) \
                and grad.shape == ():  # a 0-d node (scalar graph): _times's scalar product, nothing to reshape
            if not needs[1]:
                return grad if needs[0] else None, None
            token = None if _get() is _IGNORE else _set(_IGNORE)
            second = (grad[()] * -1).__array__()
            if token is not None:
                _reset(token)
            return grad if needs[0] else None, second
        return _binary_grads(ctx, grad if needs[0] else None, _times(ctx.backend, grad, -alpha) if needs[1] else None)

    def scalar_backward(ctx, grad):  # Node.scalar_backward: backward's 0-d path on the numpy scalar
        packed = ctx._packed
        if packed is not None and packed["alpha"] == 1 and type(grad) is _SCALAR_NODE_TYPE.get(id(ctx.metas)):
            needs = ctx.needs_input_grad
            return grad if needs[0] else None, grad * -1 if needs[1] else None
        return None

    def backward_graph(ctx, grad):
        alpha = ctx.saved("alpha")
        return _graph_grads(ctx, lambda: grad, lambda: -grad if alpha == 1 else (-grad) * alpha)


class RsubBackward1(OpFunction):
    """``number - tensor``: PyTorch's ``rsub(self, other=number)``, one edge only."""

    inputs = ("self",)
    derivatives = {"self": ("-grad * alpha", r"-\alpha\,\bar{y}")}

    def forward(ctx, self, other):
        check_sub(self, other)
        ctx.save(alpha=1)
        x, y = promote(self, other)
        return self._backend.sub(self._backend.full((), y, _dtype_of(x), self.device), x)

    def backward(ctx, grad):
        return ctx.backend.neg(grad)

    def backward_graph(ctx, grad):
        return -grad


class MulBackward0(OpFunction):
    inputs = ("self", "other")
    wrapped_numbers = ("self", "other")
    derivatives = {"self": ("grad * other", r"\bar{y}\cdot b"), "other": ("grad * self", r"\bar{y}\cdot a")}

    def forward(ctx, self, other):
        # a 0-d float self (a scalar graph) first, tested here (arrays pay no call for it), as in Add
        out = _scalar_result(ctx, x, other, _multiply) if type(self) is Tensor and type(x := self._data) is _ndarray \
            and not x.ndim else None
        if out is None:
            backend, x, y = _binary_operands(ctx, self, other)
            out = backend.mul(x, y)
        needs = ctx.needs_input_grad
        if needs:  # recording: ctx.save(other=..., self=...), written out
            if type(other) is Tensor and type(self) is Tensor and not _inference_tensors:  # two plain tensors
                ctx._packed = {"other": saved_input(other) if needs[0] else None,
                               "self": saved_input(self) if needs[1] else None}
                return out
            carrier = self if isinstance(self, Tensor) else other
            ctx._packed = {"other": _save_operand(ctx, other, carrier) if needs[0] else None,
                           "self": _save_operand(ctx, self, carrier) if needs[1] else None}
        return out

    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        metas = ctx.metas
        if (metas is _PAIR_64 or metas is _PAIR_32) and type(grad) is _ndarray and grad.shape == () \
                and grad.dtype is metas[1]:
            # two 0-d tensors of one dtype (a scalar graph): the products on numpy scalars (scalar_backward),
            # made 0-d arrays; a saved tensor that does not unpack plainly takes the general path below
            grads = scalar_grads_as_arrays(ctx, grad)
            if grads is not None:
                return grads
        backend = ctx.backend
        return _binary_grads(ctx, _times(backend, grad, ctx.saved("other")) if needs[0] else None,
                             _times(backend, grad, ctx.saved("self")) if needs[1] else None)

    def scalar_backward(ctx, grad):
        """Node.scalar_backward: two 0-d tensors of one dtype (a scalar graph), ``ctx.saved``, ``_times`` and
        ``_binary_grads`` written out for saved tensors that unpack plainly (no hook, not freed, not modified;
        else None: ``backward`` then reads them with ``ctx.saved``, and its errors); the products are
        ``_times``'s, and nothing is left to reshape."""
        metas = ctx.metas
        if not (metas is _PAIR_32 and type(grad) is _float32 or metas is _PAIR_64 and type(grad) is _float64):
            return None
        needs = ctx.needs_input_grad
        packed = ctx._packed
        first = second = None
        if needs[0]:
            other = packed["other"]
            if other.hooks is not None or other.data is None or other.version_counter[0] != other.saved_version:
                return None
            first = grad * other.data[()]
        if needs[1]:
            this = packed["self"]
            if this.hooks is not None or this.data is None or this.version_counter[0] != this.saved_version:
                return None
            second = grad * this.data[()]
        return first, second

    def backward_graph(ctx, grad):
        other, self = ctx.saved_graph("other", "self")  # both unpacked (and version-checked) first, as PyTorch does
        return _graph_grads(ctx, lambda: grad * other, lambda: grad * self)


class DivBackward0(OpFunction):
    inputs = ("self", "other")
    wrapped_numbers = ("self", "other")  # ``torch.div(2.5, x)`` saves the number as self
    derivatives = {"self": ("grad / other", r"\bar{y} / b"),
                   "other": ("-grad * self / (other * other)", r"-\bar{y}\,a / b^{2}")}

    def forward(ctx, self, other):
        # a 0-d float self (a scalar graph) first, tested here (arrays pay no call for it), as in Add
        out = _scalar_result(ctx, x, other, _divide) if type(self) is Tensor and type(x := self._data) is _ndarray \
            and not x.ndim else None
        if out is None:
            backend, x, y = _binary_operands(ctx, self, other)
            if not _is_float(x if isinstance(self, Tensor) else y):
                # integer / integer is true division in the default float dtype
                x = backend.astype(x, _default_float()) if isinstance(self, Tensor) else float(x)
                y = backend.astype(y, _default_float()) if isinstance(other, Tensor) else float(y)
            out = backend.div(x, y)
        needs = ctx.needs_input_grad
        if needs:  # recording: ctx.save(self=..., other=...), written out
            carrier = self if isinstance(self, Tensor) else other  # a number divided by a tensor too
            ctx._packed = {"self": _save_operand(ctx, self, carrier) if needs[1] else None,
                           "other": _save_operand(ctx, other, carrier)}
        return out

    def backward(ctx, grad):
        backend = ctx.backend
        other = ctx.saved("other")
        needs = ctx.needs_input_grad
        return _binary_grads(
            ctx, _over(backend, grad, other) if needs[0] else None,
            # PyTorch's div_tensor_other_backward: -grad * ((self / other) / other), in that order (other * other
            # would overflow where the quotients do not)
            backend.mul(backend.neg(grad), backend.div(backend.div(ctx.saved("self"), other), other)) if needs[1]
            else None)

    def scalar_backward(ctx, grad):
        """Node.scalar_backward: two 0-d tensors of one dtype, ``backward``'s formulas on numpy scalars (the
        same operations in the same order: ``grad / other``, ``-grad * ((self / other) / other)``)."""
        metas = ctx.metas
        if not (metas is _PAIR_32 and type(grad) is _float32 or metas is _PAIR_64 and type(grad) is _float64):
            return None
        other = _saved_scalar(ctx, "other", grad)
        if other is None:
            return None
        needs = ctx.needs_input_grad
        second = None
        if needs[1]:
            this = _saved_scalar(ctx, "self", grad)
            if this is None:
                return None
            second = (-grad) * ((this / other) / other)
        return grad / other if needs[0] else None, second

    def backward_graph(ctx, grad):
        other = ctx.saved_graph("other")
        return _graph_grads(ctx, lambda: grad / other, lambda: _negated_times(grad, (ctx.saved_graph("self") / other) / other))


def _negated_times(grad, factor):
    """``-grad * factor`` with ``factor`` already made: PyTorch's C++ builds the right operand first, so
    its NegBackward0 comes after the factor's nodes (and runs before them in a second backward)."""
    return -grad * factor


class ReciprocalBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("-grad * (result * result)", r"-\bar{y}\,y^{2}")}

    def forward(ctx, self):
        ctx.save_result()
        backend = self._backend
        values = self._data if _is_float(self._data) else backend.astype(self._data, _default_float())
        return backend.reciprocal(values)

    def backward(ctx, grad):
        backend = ctx.backend
        result = ctx.saved("result")
        return backend.neg(backend.mul(grad, backend.mul(result, result)))

    def backward_graph(ctx, grad):
        result = ctx.saved_graph("result")
        return _negated_times(grad, result * result)


class NegBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad.neg()", r"-\bar{y}")}

    def forward(ctx, self):
        return self._backend.neg(self._data)

    def backward(ctx, grad):
        return ctx.backend.neg(grad)

    def scalar_backward(ctx, grad):  # Node.scalar_backward: the backend's neg on a numpy scalar
        return -grad,

    def backward_graph(ctx, grad):
        return -grad


class PowBackward0(OpFunction):
    """``tensor ** number``."""

    inputs = ("self",)
    derivatives = {"self": ("grad * exponent * self.pow(exponent - 1)", r"\bar{y}\,n\,x^{n-1}")}

    def forward(ctx, self, exponent):
        if ctx.needs_input_grad:  # recording: ctx.save(self=self, exponent=exponent), written out
            ctx._packed = {"self": _save_operand(ctx, self, self), "exponent": exponent}
        x = self._data
        if ((exponent == 2 or exponent == 3) and (type(exponent) is int or type(exponent) is float)
                and type(x) is _ndarray and not x.ndim and ((dtype := x.dtype) is _F32 or dtype is _F64)):
            # PyTorch's kernel squares and cubes by multiplying (as the backend's pow does for arrays): on
            # Python floats as in _scalar_result where that is exact (a square; a float64's cube, the same
            # two double products), else on numpy scalars
            if exponent == 2 or dtype is _F64:
                value = float(x)
                value = value * value if exponent == 2 else value * value * value
                limit = _F32_MAX if dtype is _F32 else _F64_MAX
                if -limit <= value <= limit:
                    return _array(value, dtype)
            value = x[()]
            token = _set(_IGNORE)
            out = value * value if exponent == 2 else value * value * value
            _reset(token)
            return out.__array__()
        x, n = promote(self, exponent)
        return self._backend.pow(x, n)

    def backward(ctx, grad):
        if type(grad) is _ndarray and grad.shape == () and ((dtype := grad.dtype) is _F32 or dtype is _F64):
            grads = scalar_grads_as_arrays(ctx, grad)
            if grads is not None:
                return grads[0]
        backend = ctx.backend
        self, exponent = ctx.saved("self", "exponent")
        if exponent == 0:
            return backend.zeros_like(grad)  # PyTorch's zeros_like, +0. (grad * 0. is -0. or nan)
        # x ** 1 is a copy of x (PyTorch's kernel), so for a square x itself gives the same numbers
        if exponent == 2:
            power = self
        elif exponent == 3 and type(self) is _ndarray:  # numpy's pow(x, 2) multiplies too: x * x
            power = _times(backend, self, self)
        else:
            power = backend.pow(self, exponent - 1)
        return _times(backend, grad, _times(backend, power, float(exponent)))

    def scalar_backward(ctx, grad):
        """Node.scalar_backward: a 0-d square or cube (a scalar graph), ``ctx.saved`` and the two ``_times``
        products written out for a saved tensor that unpacks plainly (no hook, not freed, not modified: else
        None, and ``backward``'s general path with its errors); the same products in the same order."""
        packed = ctx._packed
        if packed is not None and ((exponent := packed["exponent"]) == 2 or exponent == 3):
            x = _saved_scalar(ctx, "self", grad)
            if x is not None:
                return (grad * (x * 2.0) if exponent == 2 else grad * ((x * x) * 3.0)),
        return None

    def backward_graph(ctx, grad):
        self, exponent = ctx.saved_graph("self", "exponent")
        if exponent == 0:
            return Tensor._make(ctx.backend.zeros_like(self._data), backend=ctx.backend)  # +0.
        exponent = float(exponent)  # PyTorch's pow_backward works with the exponent as a double
        return grad * _scalar_mul(self.pow(exponent - 1), exponent)


class PowBackward1(OpFunction):
    """``tensor ** tensor``."""

    inputs = ("self", "exponent")
    derivatives = {"self": ("grad * exponent * self.pow(exponent - 1)", r"\bar{y}\,b\,a^{b-1}"),
                   "exponent": ("grad * result * self.log()", r"\bar{y}\,y\,\ln a")}

    def forward(ctx, self, exponent):
        backend, x, n = _binary_operands(ctx, self, exponent)
        ctx.save(self=self, exponent=exponent)
        ctx.save_result()
        return backend.pow(x, n)

    def backward(ctx, grad):
        backend = ctx.backend
        self, exponent = ctx.saved("self", "exponent")
        needs = ctx.needs_input_grad
        grad_self = grad_exponent = None
        if needs[0]:
            grad_self = backend.mul(grad, backend.mul(exponent, backend.pow(self, backend.sub(exponent, 1))))
            # PyTorch's pow_backward_self picks 0 where the exponent is 0 (not 0 * inf = nan, nor -0.)
            grad_self = backend.where(backend.eq(exponent, 0.0), 0.0, grad_self)
        if needs[1]:
            # d(a**b)/db = a**b * ln(a); PyTorch takes the term as 0 where a == 0 and b >= 0 (only
            # there: 0 ** -1 * ln 0 is inf * -inf = -inf, as in PyTorch, not 0 * inf = nan)
            at_zero = backend.logical_and(backend.eq(self, 0), backend.ge(exponent, 0))
            term = backend.where(at_zero, 0.0, backend.mul(ctx.saved("result"), backend.log(self)))
            grad_exponent = backend.mul(grad, term)
        return _binary_grads(ctx, grad_self, grad_exponent)

    def backward_graph(ctx, grad):
        """PyTorch's ``pow_backward_self`` and ``pow_backward_exponent``: the same terms, with a 0-d zero
        chosen by ``where`` where the exponent is 0 (for self) or where ``self == 0 and exponent >= 0``
        (for the exponent); the exponent's gradient is recorded first."""
        from gradviz.ops.comparison import where

        backend = ctx.backend
        self, exponent = ctx.saved_graph("self", "exponent")
        zero = Tensor._make(backend.full((), 0, grad.dtype, grad.device), backend=backend)

        def grad_self():
            no_power = Tensor._make(backend.eq(exponent._data, 0.0), backend=backend)
            return where(no_power, zero, grad * (exponent * self.pow(SubBackward1.apply(exponent, 1))))

        def grad_exponent():
            at_zero = backend.astype(backend.mul(backend.eq(self._data, 0), backend.ge(exponent._data, 0)),
                                     _dtype.bool)
            term = ctx.saved_graph("result") * self.log()
            return grad * where(Tensor._make(at_zero, backend=backend), zero, term)

        return _graph_grads(ctx, grad_self, grad_exponent)


class PowBackward2(OpFunction):
    """``number ** tensor``: the base is a Scalar to PyTorch, so the only edge is the exponent's."""

    inputs = ("exponent",)
    derivatives = {"exponent": ("grad * result * log(self)", r"\bar{y}\,y\,\ln c")}

    def forward(ctx, exponent, base):
        ctx.save(self=base, exponent=exponent)
        ctx.save_result()
        n, c = promote(exponent, base)
        backend = exponent._backend
        return backend.pow(backend.full((), c, _dtype_of(n), exponent.device), n)

    def backward(ctx, grad):
        backend = ctx.backend
        base, result = ctx.saved("self", "result")
        local = backend.mul(result, _log_of_number(base))
        if base == 0:  # 0 ** n is flat for n >= 0: PyTorch picks 0 there rather than 0 * -inf
            local = backend.where(backend.ge(ctx.saved("exponent"), 0), 0.0, local)
        return backend.mul(grad, local)

    def backward_graph(ctx, grad):
        """PyTorch's ``pow_backward_exponent``: ``grad * (result * log(base))``, the log a number
        (MulBackward1: NaN for a negative base); for a base of 0, ``grad * where(exponent >= 0, 0,
        result * log(0))``."""
        base = ctx.saved("self")
        local = _scalar_mul(ctx.saved_graph("result"), _log_of_number(base))
        if base == 0:
            from gradviz.ops.comparison import where

            exponent = ctx.saved_graph("exponent")
            zero = Tensor._make(ctx.backend.full((), 0, grad.dtype, grad.device), backend=ctx.backend)
            local = where(exponent >= 0, zero, local)
        return grad * local


def _log_of_number(number) -> float:
    """``log`` of a Scalar as C++ computes it: -inf at 0, NaN below."""
    return math.log(number) if number > 0 else -math.inf if number == 0 else math.nan


# -- the Scalar forms that PyTorch's C++ composites record (cross_entropy's label smoothing) ----------------
class MulBackward1(OpFunction):
    """``tensor * number`` written in C++ (``mul(Tensor, Scalar)``): one edge, the number saved as is."""

    inputs = ("self",)
    derivatives = {"self": ("grad * other", r"\bar{y}\,c")}

    def forward(ctx, self, other):
        ctx.save(other=other)
        return self._backend.mul(self._data, other)

    def backward(ctx, grad):
        return _times(ctx.backend, grad, ctx.saved("other"))

    def backward_graph(ctx, grad):
        return _scalar_mul(grad, ctx.saved("other"))


class AddBackward1(OpFunction):
    """``tensor + number`` written in C++ (``add(Tensor, Scalar)``): one edge, nothing saved."""

    inputs = ("self",)
    derivatives = {"self": ("grad", r"\bar{y}")}

    def forward(ctx, self, other):
        return self._backend.add(self._data, other)

    def backward(ctx, grad):
        return grad

    def backward_graph(ctx, grad):
        return grad


class SubBackward1(AddBackward1):
    """``tensor - number`` written in C++ (``sub(Tensor, Scalar)``, as in pow's ``exponent - 1``)."""

    def forward(ctx, self, other):
        return self._backend.sub(self._data, other)


class DivBackward1(OpFunction):
    """``tensor / number`` written in C++ (``div(Tensor, Scalar)``)."""

    inputs = ("self",)
    derivatives = {"self": ("grad / other", r"\bar{y} / c")}

    def forward(ctx, self, other):
        ctx.save(other=other)
        return self._backend.div(self._data, other)

    def backward(ctx, grad):
        return _over(ctx.backend, grad, ctx.saved("other"))

    def backward_graph(ctx, grad):
        return DivBackward1.apply(grad, ctx.saved("other"))


# -- the functions tensors call ---------------------------------------------------------------------
def _dtype_of(array):
    from gradviz import _dtype

    return _dtype.from_any(array.dtype)


def _is_float(array) -> bool:
    return "float" in str(array.dtype)


def _default_float():
    from gradviz import _dtype

    return _dtype.default_float


def _as_number(value):
    if type(value) is int or type(value) is float:  # ``x ** 2``: no attribute lookup that fails
        return value
    return value.item() if hasattr(value, "item") and not isinstance(value, Tensor) else value


def check_operands(name: str, input, other, other_position: int = 2) -> None:
    """PyTorch's error for an operand that is neither a tensor nor a number (``torch.add(x, 'a')``);
    a method call (``x.add('a')``) numbers ``other`` as position 1."""
    for value, argument, position in ((input, "input", 1), (other, "other", other_position)):
        if type(value) is not float and type(value) is not int and not _is_operand(value):
            raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")


def write_out(name: str, result, out):
    """``out=``: copy ``result`` into ``out`` as PyTorch does (resized when its shape differs, with
    PyTorch's warning unless it was empty); refused when the result would need a gradient."""
    if result.requires_grad or out.requires_grad:
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if not out.dtype.is_floating_point and result.dtype.is_floating_point:
        from gradviz import _dtype

        raise RuntimeError(f"result type {_dtype.SCALAR_TYPE_NAMES[result.dtype.name]} can't be cast to the desired "
                           f"output type {_dtype.SCALAR_TYPE_NAMES[out.dtype.name]}")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel():
            import warnings

            warnings.warn(
                f"An output with one or more elements was resized since it had shape {list(out.shape)}, which does "
                f"not match the required output shape {list(result.shape)}. This behavior is deprecated, and in a "
                "future PyTorch release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0). "
                "(Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/Resize.cpp:30.)",
                UserWarning, stacklevel=3)
        out._data = out._backend.copy(out._backend.astype(result._data, out.dtype))
        out._vc[0] += 1
        return out
    from gradviz.grad_mode import no_grad

    with no_grad():
        return out.copy_(result)


def add(input, other, *, alpha=1, out=None):
    if type(other) is not float and type(other) is not int and not isinstance(other, Tensor):
        check_operands("add", input, other)
    if out is not None:
        return write_out("add", add(input, other, alpha=alpha), out)
    if not isinstance(input, Tensor):
        check_operands("add", input, other)
        if not isinstance(other, Tensor):  # two numbers: PyTorch wraps the first (``torch.add(2, 3)``)
            input = _wrapped(input)
    if alpha == 1:  # forward's default: no keyword dict to build for every ``a + b``
        return AddBackward0.apply(input, other)
    return AddBackward0.apply(input, other, alpha=alpha)


def sub(input, other, *, alpha=1, out=None):
    if type(other) is not float and type(other) is not int and not isinstance(other, Tensor):
        check_operands("sub", input, other)
    if out is not None:
        return write_out("sub", sub(input, other, alpha=alpha), out)
    if not isinstance(input, Tensor):
        check_operands("sub", input, other)
        if not isinstance(other, Tensor):
            input = _wrapped(input)
    if alpha == 1:
        return SubBackward0.apply(input, other)
    return SubBackward0.apply(input, other, alpha=alpha)


def rsub(input, other):
    """``other - input`` where ``other`` is a number (what Python's ``2 - x`` calls)."""
    if not isinstance(input, Tensor):  # ``torch.rsub(2.5, x)``: PyTorch has no overload for a number first
        from gradviz.ops.comparison import check_tensor_first

        check_tensor_first("rsub", input, other, " * (Tensor input, Tensor other, *, Number alpha = 1)\n"
                                                 " * (Tensor input, Number other, Number alpha = 1)\n")
    if isinstance(other, Tensor):
        return SubBackward0.apply(other, input)
    return RsubBackward1.apply(input, other)


def mul(input, other, *, out=None):
    if type(other) is not float and type(other) is not int and not isinstance(other, Tensor):
        check_operands("mul", input, other)
    if out is not None:
        return write_out("mul", mul(input, other), out)
    if not isinstance(input, Tensor):
        check_operands("mul", input, other)
        if not isinstance(other, Tensor):
            input = _wrapped(input)
    return MulBackward0.apply(input, other)


def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode is not None:  # floor or trunc division: a step function, DivBackward2 (ops/elementwise.py)
        from gradviz.ops.binary_math import div_rounded

        return div_rounded(input, other, rounding_mode, out)
    if type(other) is not float and type(other) is not int and not isinstance(other, Tensor):
        check_operands("div", input, other)
    if out is not None:
        return write_out("div", div(input, other), out)
    if not isinstance(input, Tensor):
        check_operands("div", input, other)
        if not isinstance(other, Tensor):
            input = _wrapped(input)
    return DivBackward0.apply(input, other)


def _wrapped(number):
    """A Python number given as ``input`` with a number ``other``: PyTorch makes it a 0-d tensor."""
    from gradviz.tensor import tensor

    return tensor(number)


def rdiv(input, other):
    """``other / input`` for a number ``other``: PyTorch computes ``reciprocal(input) * other``."""
    return MulBackward0.apply(ReciprocalBackward0.apply(input), other)


def reciprocal(input):
    return ReciprocalBackward0.apply(input)


def neg(input):
    if input.dtype is _dtype.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
                           "a mask, use the `~` or `logical_not()` operator instead.")
    return NegBackward0.apply(input)


def pow(input, exponent):
    if isinstance(input, Tensor) and isinstance(exponent, Tensor):
        if input.dtype is _dtype.bool and exponent.dtype is _dtype.bool:
            raise _dtype.not_implemented("pow", _dtype.bool)
        return PowBackward1.apply(input, exponent)
    if isinstance(input, Tensor):
        exponent = _as_number(exponent)
        if isinstance(exponent, int) and exponent < 0 and not input.dtype.is_floating_point:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return PowBackward0.apply(input, exponent)
    return PowBackward2.apply(exponent, input)


def square(input):
    """``x * x``, recorded as PyTorch records it: ``pow(x, 2)``."""
    return pow(input, 2)


def rpow(input, base):
    """``base ** input`` for a number ``base``."""
    return PowBackward2.apply(input, base)
