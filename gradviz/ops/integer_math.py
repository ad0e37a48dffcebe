"""Integer and bit math, mantissa/exponent splits, the comparisons and logical ops in place, and Python
callables run over a tensor's elements: ``gcd``, ``lcm``, ``ldexp``, ``bitwise_left_shift``/``<<`` and
``bitwise_right_shift``/``>>``, ``frexp``, ``ge_``/``gt_``/..., ``logical_and_``/..., ``bitwise_and_``/...,
``apply_``/``map_``/``map2_``.

What PyTorch does with each, and so what these do:

* ``gcd``, ``lcm`` and the shifts have integer kernels only (a float or bool operand raises PyTorch's
  ``"gcd_cpu" not implemented for 'Float'``); integers never require grad, so nothing is recorded.
* A shift by a negative amount or by the width of the type or more gives 0 (``<<``) or the sign
  (``>>``), as PyTorch's kernels define it (C leaves it undefined).
* ``ldexp(x, e) = x · 2^e`` is recorded as ``LdexpBackward0`` (saving ``other`` and ``result``);
  ``frexp`` as ``FrexpBackward0`` for the mantissa (saving the exponent, which has no gradient).
* A comparison in place (``x.ge_(0)``) writes 0/1 in ``x``'s own dtype. On a tensor that requires grad
  PyTorch records ``GeBackward0`` (a number) or ``GeBackward1`` (a tensor), whose gradient is zeros.
  The logical and bitwise ops in place record nothing: the tensor keeps its grad_fn (even a leaf
  that requires grad may be changed by them, as in PyTorch).
* ``apply_``/``map_``/``map2_`` call a Python function once per element, on the CPU, refusing a tensor
  that requires grad; PyTorch writes the memory directly, so the version counter does not move.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import broadcast_shapes, meta, promote, shape_of, sum_to_tensor
from gradviz.ops.binary_math import _array, _check_tensors, _grads, _numpy, _operands
from gradviz.ops.kernels import common_dtype
from gradviz.tensor import Tensor


def _integers_only(kernel: str, input, other) -> None:
    """PyTorch's error for a kernel that exists for integer dtypes only (bool and floats refused)."""
    common = common_dtype(input, other)
    if common.is_floating_point or common is _dtype.bool:
        raise _dtype.not_implemented(kernel, common)


def _integer_result(name: str, ufunc, input, other) -> Tensor:
    backend, dtype, (a, b) = _operands(name, input, other)
    like = input if isinstance(input, Tensor) else other
    values = ufunc(*(np.asarray(_numpy(backend, v)).astype(np.dtype(dtype.numpy)) for v in (a, b)))
    return Tensor._make(_array(backend, values, dtype, like._data), backend=backend)


# -- gcd, lcm ------------------------------------------------------------------------------------------------
def _c_gcd(a, b):
    """PyTorch's ``calc_gcd``: Euclid's algorithm on ``|a|``, ``|b|`` taken in the dtype (so ``|INT_MIN|`` stays
    negative) with C's truncated remainder, which is how ``gcd(-32768, 5)`` is -1 in int16."""
    a, b = np.abs(a), np.abs(b)
    a, b = np.broadcast_arrays(a, b)
    a, b = a.copy(), b.copy()
    while np.any(a != 0):
        moving = a != 0
        remainder = np.fmod(b, np.where(moving, a, 1))
        b = np.where(moving, a, b)
        a = np.where(moving, remainder, 0).astype(a.dtype)
    return b


def _c_lcm(a, b):
    """PyTorch's ``|a / gcd · b|``, 0 when the gcd is 0, wrapping around in the dtype (after the absolute
    value, for the types C++ computes in ``int``: ``lcm(5, 26)`` is -126 in int8)."""
    g = _c_gcd(a, b)
    wide = np.promote_types(g.dtype, np.int32)  # C++ computes a narrower integer type in int, then narrows it
    a, b, g = (np.asarray(v).astype(wide) for v in (a, b, g))
    with np.errstate(all="ignore"):
        quotient = np.where(g == 0, 0, a // np.where(g == 0, 1, g))  # exact: the gcd divides a
        return np.where(g == 0, 0, np.abs(quotient * b))


def gcd(input, other):
    """The greatest common divisor, elementwise (``gcd(INT_MIN, 0)`` is INT_MIN, as in PyTorch's kernel)."""
    _check_tensors("gcd", input, other)
    _integers_only("gcd_cpu", input, other)
    return _integer_result("gcd", _c_gcd, input, other)


def lcm(input, other):
    """The least common multiple, elementwise (it wraps around in a narrow dtype, as PyTorch's does)."""
    _check_tensors("lcm", input, other)
    _integers_only("lcm_cpu", input, other)
    return _integer_result("lcm", _c_lcm, input, other)


# -- the bitwise shifts: <<, >> -------------------------------------------------------------------------------
_SHIFT_OVERLOADS = (" * (Tensor input, Tensor other, *, Tensor out = None)\n"
                    " * (Number self, Tensor other)\n"
                    "      didn't match because some of the arguments have invalid types: (!{0}!, !{1}!)\n"
                    " * (Tensor input, Number other, *, Tensor out = None)\n")


def _shift(name: str, kernel: str, input, other) -> Tensor:
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        got = (type(input).__name__, type(other).__name__)
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({', '.join(got)}), but "
                        f"expected one of:\n{_SHIFT_OVERLOADS.format(*got)}")
    _integers_only(kernel, input, other)
    broadcast_shapes(shape_of(input), shape_of(other))
    backend = (input if isinstance(input, Tensor) else other)._backend
    dtype = common_dtype(input, other)
    # a Python number wraps into the dtype first (``int8 << 300`` shifts by 44), as PyTorch casts its Scalar
    values, amounts = (np.asarray(_numpy(backend, v)).astype(np.dtype(dtype.numpy)) for v in promote(input, other))
    width = values.dtype.itemsize * 8
    outside = (amounts < 0) | (amounts >= width)  # PyTorch's kernels define these shifts; C does not
    safe = np.where(outside, 0, amounts)
    if kernel == "lshift_cpu":  # shifted as unsigned, so a bit shifted into the sign is no overflow
        unsigned = np.dtype(f"u{values.dtype.itemsize}")
        shifted = np.left_shift(values.astype(unsigned), safe.astype(unsigned)).astype(values.dtype)
        result = np.where(outside, 0, shifted)
    else:
        result = np.where(outside, np.where(values < 0, -1, 0), np.right_shift(values, safe))
    like = input if isinstance(input, Tensor) else other
    return Tensor._make(_array(backend, result.astype(values.dtype), dtype, like._data), backend=backend)


def bitwise_left_shift(input, other):
    """``input << other``: integer tensors (or a number on one side), bits moved left."""
    return _shift("bitwise_left_shift", "lshift_cpu", input, other)


def bitwise_right_shift(input, other):
    """``input >> other``: arithmetic shift (the sign fills in) for signed integers."""
    return _shift("bitwise_right_shift", "rshift_cpu", input, other)


def _reflected_left_shift(self, other):
    return bitwise_left_shift(other, self)


def _reflected_right_shift(self, other):
    return bitwise_right_shift(other, self)


# -- ldexp: x · 2^e ----------------------------------------------------------------------------------------
def _powers_of_two(backend, exponent, dtype=None):
    """``2^exponent`` in ``dtype`` (by default the exponent's own float dtype, or the default float for an
    integer one, as ``exp2`` computes it): ``2^200`` is inf in float32, finite in float64."""
    if dtype is None:
        dtype = exponent.dtype if exponent.dtype.is_floating_point else _dtype.default_float
    values = np.asarray(_numpy(backend, exponent._data)).astype(np.dtype(dtype.numpy))
    with np.errstate(over="ignore"):
        return np.exp2(values)


def _scaled(values, exponent, dtype, backend):
    """``values · 2^exponent`` in ``dtype``: exactly rounded for an integer exponent (what PyTorch's kernel gives:
    ``2 · 2^-150`` is float32's smallest subnormal, though ``2^-150`` alone is 0 there), else ``values ·
    exp2(exponent)`` in ``dtype`` (float64 holds ``2^200``; float16 does not hold ``2^20``)."""
    if exponent.dtype.is_floating_point:
        return np.multiply(values, _powers_of_two(backend, exponent, dtype), dtype=values.dtype)
    steps = np.clip(np.asarray(_numpy(backend, exponent._data)).astype(np.int64), -100_000, 100_000)
    return np.ldexp(values, steps.astype(np.int32)).astype(values.dtype)


class LdexpBackward0(OpFunction):
    """``ldexp(x, e) = x · 2^e`` (PyTorch: ``self * pow(2.0, other)``). ``∂/∂x = 2^e``; ``∂/∂e = y · ln 2``."""

    _result_name = "result"
    inputs = ("self", "other")
    derivatives = {"self": ("grad * (pow(2, other))", r"\bar{y}\,2^{e}\ (\text{an integer power for an integer } e)"),
                   "other": ("grad * result * M_LN2", r"\bar{y}\,y \ln 2")}

    def forward(ctx, self, other):
        backend, dtype, (a, _) = _operands("ldexp", self, other)
        dtype = dtype if dtype.is_floating_point else _dtype.default_float
        ctx.save(other=other)
        ctx.metas = (meta(self), meta(other))
        ctx.dtypes = (self.dtype, other.dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            values = _scaled(np.asarray(_numpy(backend, a)).astype(np.dtype(dtype.numpy)), other, dtype, backend)
        return _array(backend, values, dtype, self._data)

    def backward(ctx, grad):
        backend = ctx.backend
        needs = ctx.needs_input_grad
        other, result = ctx.saved("other", "result")
        grad_values = _numpy(backend, grad)
        dtype = _dtype.from_any(grad.dtype)
        with np.errstate(all="ignore"):
            powers = _integer_powers_of_two(backend, _tensor(backend, other))
            first = _array(backend, grad_values * powers.astype(grad_values.dtype), dtype, grad) if needs[0] else None
            second = (_array(backend, grad_values * _numpy(backend, result) * math.log(2), dtype, grad)
                      if needs[1] else None)
        return _grads(ctx, first, second)

    def backward_graph(ctx, grad):
        """As PyTorch's generated code records it: ``grad * pow(2, other)`` (PowBackward2, MulBackward0) and
        ``grad * result * M_LN2`` (MulBackward0, then MulBackward1 for the C++ double)."""
        from gradviz.ops.arithmetic import MulBackward1, rpow

        other, result = ctx.saved_graph("other", "result")
        needs = ctx.needs_input_grad
        first = grad * rpow(other, 2) if needs[0] else None
        second = MulBackward1.apply(grad * result, math.log(2)) if needs[1] else None
        return tuple(None if g is None else _to_input(sum_to_tensor(g, shape), dtype)
                     for g, (shape, _), dtype in zip((first, second), ctx.metas, ctx.dtypes))


def _integer_powers_of_two(backend, exponent):
    """``pow(2, exponent)`` as the derivative computes it: an integer 2, so an integer exponent gives an integer
    power (0 for a negative exponent, wrapping around past the dtype's width, as PyTorch's integer pow does)."""
    if exponent.dtype.is_floating_point:
        return _powers_of_two(backend, exponent)
    values = np.asarray(_numpy(backend, exponent._data))
    width = values.dtype.itemsize * 8
    unsigned = np.dtype(f"u{values.dtype.itemsize}")
    inside = (values >= 0) & (values < width)
    powers = np.left_shift(np.ones_like(values, dtype=unsigned), np.where(inside, values, 0).astype(unsigned))
    return np.where(inside, powers.astype(values.dtype), 0)


def _tensor(backend, data) -> Tensor:
    return data if isinstance(data, Tensor) else Tensor._make(data, backend=backend)


def _to_input(grad: Tensor, dtype) -> Tensor:
    return grad if grad.dtype is dtype else grad.to(dtype)


def ldexp(input, other, *, out=None):
    """``input · 2^other``: a float result (an integer input gives the default float dtype)."""
    _check_tensors("ldexp", input, other)
    result = LdexpBackward0.apply(input, other)
    if out is None:
        return result
    from gradviz.ops.arithmetic import write_out

    return write_out("ldexp", result, out)


def ldexp_(self, other):
    """``ldexp`` written into ``self``; an integer ``self`` cannot hold its float result."""
    _check_tensors("ldexp", self, other)
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"ldexp can't be cast to the desired output type {_dtype.SCALAR_TYPE_NAMES[self.dtype.name]}")
    from gradviz.ops.inplace import apply_

    _check_output_shape(self, other)
    return apply_(self, ldexp, other)


# -- frexp: x = mantissa · 2^exponent -------------------------------------------------------------------------------
class FrexpBackward0(OpFunction):
    """The mantissa of ``frexp``: ``m = x / 2^e`` with ``e`` held fixed, so ``∂m/∂x = 1 / 2^e``."""

    inputs = ("self",)
    derivatives = {"self": ("grad / exponent.exp2()", r"\bar{y} / 2^{e}")}

    def forward(ctx, self, mantissa, exponent):
        ctx.save(exponent=exponent)
        return mantissa

    def backward(ctx, grad):
        backend = ctx.backend
        powers = _powers_of_two(backend, _tensor(backend, ctx.saved("exponent")))  # in float32, as PyTorch's exp2
        grad_values = _numpy(backend, grad)
        with np.errstate(all="ignore"):
            values = (grad_values / powers).astype(grad_values.dtype)
        return _array(backend, values, _dtype.from_any(grad.dtype), grad)

    def backward_graph(ctx, grad):
        """``grad / exponent.exp2()``: the exponent is an integer tensor outside the graph."""
        return grad / ctx.saved_graph("exponent").exp2()


def frexp(input, *, out=None):
    """``(mantissa, exponent)`` with ``input = mantissa · 2^exponent``, ``0.5 ≤ |mantissa| < 1`` (int32 exponent)."""
    from gradviz.ops import return_types

    if not isinstance(input, Tensor):
        raise TypeError(f"frexp(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    backend = input._backend
    mantissa, exponent = np.frexp(np.asarray(_numpy(backend, input._data)))
    exponent = Tensor._make(_array(backend, exponent.astype(np.int32), _dtype.int32, input._data), backend=backend)
    mantissa = FrexpBackward0.apply(input, _array(backend, mantissa, input.dtype, input._data), exponent)
    if out is None:
        return return_types.frexp(mantissa, exponent)
    from gradviz.ops.arithmetic import write_out

    return return_types.frexp_out(write_out("frexp", mantissa, out[0]), write_out("frexp", exponent, out[1]))


# -- in place: the comparisons (recorded, with zero gradients), the logical and bitwise ops (not recorded) ---------
class _ComparisonInPlace(OpFunction):
    """``x.ge_(other)``: 1 where the comparison holds, else 0, in ``x``'s dtype. Its gradient is zero
    everywhere (PyTorch's ``zeros_like``), for ``x`` and for a tensor ``other``."""

    inputs = ("self",)
    derivatives = {"self": ("zeros_like(self)", "0")}

    def forward(ctx, self, other, compare):
        """``compare``: the backend's comparison (``ctx`` is no node when nothing is recorded)."""
        ctx.metas = (meta(self), meta(other))
        backend = self._backend
        truth = getattr(backend, compare)(*promote(self, other))
        return backend.astype(truth, self.dtype)

    def backward(ctx, grad):
        zeros = ctx.backend.zeros_like(grad)
        return _grads(ctx, zeros, zeros) if len(ctx.needs_input_grad) == 2 else zeros


def _comparison_nodes(compare: str) -> tuple:
    """``GeBackward0`` (a number ``other``) and ``GeBackward1`` (a tensor ``other``) for ``compare = 'ge'``."""
    title = compare.capitalize()
    number = type(f"{title}Backward0", (_ComparisonInPlace,), {"__module__": __name__,
                                                              "__doc__": f"``x.{compare}_(number)``."})
    tensor = type(f"{title}Backward1", (_ComparisonInPlace,), {
        "__module__": __name__, "__doc__": f"``x.{compare}_(tensor)``.",
        "inputs": ("self", "other"),
        "derivatives": {"self": ("zeros_like(self)", "0"), "other": ("zeros_like(other)", "0")}})
    return number, tensor


GeBackward0, GeBackward1 = _comparison_nodes("ge")
GtBackward0, GtBackward1 = _comparison_nodes("gt")
LeBackward0, LeBackward1 = _comparison_nodes("le")
LtBackward0, LtBackward1 = _comparison_nodes("lt")
EqBackward0, EqBackward1 = _comparison_nodes("eq")
NeBackward0, NeBackward1 = _comparison_nodes("ne")
_COMPARISON_NODES = {"ge": (GeBackward0, GeBackward1), "gt": (GtBackward0, GtBackward1),
                     "le": (LeBackward0, LeBackward1), "lt": (LtBackward0, LtBackward1),
                     "eq": (EqBackward0, EqBackward1), "ne": (NeBackward0, NeBackward1)}


def _check_output_shape(tensor: Tensor, other) -> None:
    from gradviz.tensor import _check_in_place_shapes

    if isinstance(other, Tensor):
        broadcast_shapes(tensor._data.shape, other._data.shape)  # PyTorch's size error comes first
    _check_in_place_shapes(tensor._data.shape, other)


def comparison_in_place(compare: str, name: str):
    """The method ``x.ge_(other)`` (``name`` is the spelling: ``ge_``, ``greater_equal_``)."""
    from gradviz.ops import comparison
    from gradviz.ops.inplace import apply_

    out_of_place = getattr(comparison, compare)
    number_node, tensor_node = _COMPARISON_NODES[compare]

    def recorded(self, other):
        out_of_place(self, other)  # PyTorch's checks and errors
        node = tensor_node if isinstance(other, Tensor) else number_node
        return node.apply(self, other, compare)

    def method(self, other):
        _check_output_shape(self, other)
        return apply_(self, recorded, other)

    method.__name__ = name
    method.__doc__ = f"``{compare}`` written into this tensor as 0/1 of its own dtype (PyTorch's ``{name}``)."
    return method


def write_unrecorded(tensor: Tensor, function, *args) -> Tensor:
    """Run ``function(tensor, *args)`` and write its result into ``tensor``, recording nothing: PyTorch's in-place
    ops without a derivative (``logical_and_``, ``bitwise_or_``, ``gcd_``, ``<<=``) leave the grad_fn as it was."""
    from gradviz.ops.inplace import check_castable, check_writable

    check_writable(tensor)
    for other in args:
        _check_output_shape(tensor, other)
    result = function(tensor, *args)
    check_castable(result.dtype, tensor.dtype)
    backend = tensor._backend
    values = result._data if result.dtype is tensor.dtype else backend.astype(result._data, tensor.dtype)
    backend.assign(tensor._data, values)
    tensor._vc[0] += 1
    return tensor


def unrecorded_in_place(function, name: str):
    """The in-place method of an op that has no derivative."""

    def method(self, *args):
        return write_unrecorded(self, function, *args)

    method.__name__ = name
    method.__doc__ = f"``{name[:-1]}`` written into this tensor's memory (PyTorch's in-place ``{name}``)."
    return method


def shift_in_place(function, name: str):
    """``x <<= n`` and ``x >>= n``: ``NotImplemented`` for an operand that is not a number or a tensor."""

    def method(self, other):
        if isinstance(other, (Tensor, int, float)):
            return write_unrecorded(self, function, other)
        return NotImplemented

    method.__name__ = name
    return method


def float_power_(self, exponent):
    """``float_power`` in place: only a float64 tensor can hold its float64 result."""
    from gradviz.ops.binary_math import float_power
    from gradviz.ops.inplace import apply_

    if self.dtype is not _dtype.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_dtype.SCALAR_TYPE_NAMES[self.dtype.name]} but "
                           "the operation's result requires dtype Double")
    _check_output_shape(self, exponent)
    return apply_(self, float_power, exponent)


# -- apply_, map_, map2_: a Python function over the elements ------------------------------------------------
def _python_value(value, dtype):
    """``value`` as PyTorch stores a Python result into an element of ``dtype``."""
    if dtype is _dtype.bool:
        return bool(value)
    if dtype.is_floating_point:
        if isinstance(value, (bool, int, float)) or hasattr(value, "__float__"):
            return float(value)
        raise TypeError(f"must be real number, not {type(value).__name__}")
    number = int(value) if isinstance(value, float) else operator.index(value)
    limits = np.iinfo(np.dtype(dtype.numpy))
    if not limits.min <= number <= limits.max:
        raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")
    return number


def _check_callable_target(name: str, tensors) -> None:
    if any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")


def _elements(tensor: Tensor, shape) -> list:
    """The elements of ``tensor`` broadcast to ``shape``, as Python numbers."""
    values = np.asarray(_numpy(tensor._backend, tensor._data))
    return np.broadcast_to(values, shape).reshape(-1).tolist()


def _apply_python(self: Tensor, function, others=()) -> Tensor:
    backend = self._backend
    shape = self._data.shape
    results = [_python_value(function(*items), self.dtype)
               for items in zip(*(_elements(t, shape) for t in (self, *others)))]
    with np.errstate(over="ignore"):  # a float too large for float16 is inf there, as in PyTorch
        values = np.asarray(results, dtype=np.dtype(self.dtype.numpy)).reshape(shape)
    backend.assign(self._data, _array(backend, values, self.dtype, self._data))
    return self  # PyTorch writes the memory directly: the version counter stays


def _check_others(name: str, self: Tensor, others: dict) -> None:
    from gradviz.ops.shape import expand

    for argument, (position, other) in others.items():
        if not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
                            f"{type(other).__name__}")
    for argument, (_, other) in others.items():
        if other.dtype is not self.dtype:
            label = "'other'" if name == "map_" else f"argument '{argument}'"
            raise TypeError(f"{name}: expected {self.type()} for {label} (got {other.type()})")
    for _, other in others.values():
        expand(other, tuple(self.shape))  # PyTorch's error when it does not expand to self's shape


def apply_method(self, callable):
    """``x.apply_(f)``: each element replaced by ``f(element)`` (CPU tensors that do not require grad)."""
    _check_callable_target("apply_", (self,))
    return _apply_python(self, callable)


def map_method(self, other, callable):
    """``x.map_(y, f)``: each element replaced by ``f(x_i, y_i)`` (``y`` of ``x``'s dtype, broadcast to it)."""
    _check_others("map_", self, {"other": (1, other)})
    _check_callable_target("map_", (self, other))
    return _apply_python(self, callable, (other,))


def map2_method(self, x, y, callable):
    """``t.map2_(x, y, f)``: each element replaced by ``f(t_i, x_i, y_i)``."""
    _check_others("map2_", self, {"x": (1, x), "y": (2, y)})
    _check_callable_target("map2_", (self, x, y))
    return _apply_python(self, callable, (x, y))


# -- the Tensor methods and torch functions ----------------------------------------------------------------------
def _tensor_other(function, name: str):
    """A method whose ``other`` must be a tensor: PyTorch numbers it position 1 there (``x.gcd(3)``)."""

    def method(self, other, *args, **kwargs):
        if not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
        return function(self, other, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = function.__doc__
    return method


def tensor_methods() -> dict:
    from gradviz.ops import binary_math, comparison
    from gradviz.ops.inplace import in_place

    methods = {
        "gcd": _tensor_other(gcd, "gcd"), "lcm": _tensor_other(lcm, "lcm"), "ldexp": _tensor_other(ldexp, "ldexp"),
        "gcd_": _tensor_other(unrecorded_in_place(gcd, "gcd_"), "gcd_"),
        "lcm_": _tensor_other(unrecorded_in_place(lcm, "lcm_"), "lcm_"),
        "ldexp_": _tensor_other(ldexp_, "ldexp_"), "frexp": frexp,
        "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
        "bitwise_left_shift_": unrecorded_in_place(bitwise_left_shift, "bitwise_left_shift_"),
        "bitwise_right_shift_": unrecorded_in_place(bitwise_right_shift, "bitwise_right_shift_"),
        "__ilshift__": shift_in_place(bitwise_left_shift, "__ilshift__"),
        "__irshift__": shift_in_place(bitwise_right_shift, "__irshift__"),
        "float_power_": float_power_, "true_divide_": in_place(binary_math.true_divide, "true_divide_"),
        "copysign_": in_place(binary_math.copysign, "copysign_"), "nextafter_": in_place(binary_math.nextafter,
                                                                                      "nextafter_"),
        "logical_not_": unrecorded_in_place(comparison.logical_not, "logical_not_"),
        "bitwise_not_": unrecorded_in_place(comparison.bitwise_not, "bitwise_not_"),
        "apply_": apply_method, "map_": map_method, "map2_": map2_method,
    }
    for kind in ("and", "or", "xor"):
        for family in ("logical", "bitwise"):
            name = f"{family}_{kind}"
            methods[f"{name}_"] = unrecorded_in_place(getattr(comparison, name), f"{name}_")
    for compare, spellings in {"ge": ("greater_equal",), "gt": ("greater",), "le": ("less_equal",), "lt": ("less",),
                               "eq": (), "ne": ("not_equal",)}.items():
        for spelling in (compare, *spellings):
            methods[f"{spelling}_"] = comparison_in_place(compare, f"{spelling}_")
    return methods


def operators() -> dict:
    """``<<`` and ``>>`` (either side a tensor): wrapped by the registry so other operands get NotImplemented."""
    return {"__lshift__": bitwise_left_shift, "__rlshift__": _reflected_left_shift,
            "__rshift__": bitwise_right_shift, "__rrshift__": _reflected_right_shift}


def torch_functions() -> dict:
    methods = tensor_methods()
    return {"gcd": gcd, "lcm": lcm, "ldexp": ldexp, "gcd_": methods["gcd_"], "lcm_": methods["lcm_"],
            "ldexp_": ldexp_, "frexp": frexp, "bitwise_left_shift": bitwise_left_shift,
            "bitwise_right_shift": bitwise_right_shift}
