"""The op registry: every differentiable op, and the Tensor methods that call them.

Each op is one ``OpFunction`` subclass named as PyTorch names its node, with its forward and
backward side by side and its derivative declared as data. ``REGISTRY`` lists them all so a
test can check each declares a formula for every input; ``TENSOR_METHODS`` is the explicit
table of the Tensor methods and operators that call them.
"""
from __future__ import annotations

import operator as _operator_module

from gradviz.autograd.function import OpFunction, lean_apply
from gradviz.ops import (activation, arithmetic, combine, comparison, conversion, double_backward, indexing, inplace,
                         linalg, loss, pieces, reduction, sampling, shape, unary)
from gradviz.ops.activation import log_softmax, softmax
from gradviz.ops.arithmetic import add, div, mul, neg, pow, reciprocal, rsub, square, sub
from gradviz.ops.combine import cat, repeat, stack
from gradviz.ops.comparison import (allclose, bitwise_and, bitwise_not, bitwise_or, bitwise_xor, eq, equal, ge, gt, le,
                                   logical_and, logical_not, logical_or, logical_xor, lt, maximum, minimum, ne, where)
from gradviz.ops.conversion import clone
from gradviz.ops.indexing import gather, index_put, index_put_, index_select, masked_fill, masked_fill_
from gradviz.ops.inplace import in_place
from gradviz.ops.linalg import addmm, bmm, dot, matmul, mm, mv
from gradviz.ops.reduction import all, any, argmax, argmin, max, mean, norm, sum
from gradviz.ops.shape import (expand, expand_as, flatten, narrow, permute, reshape, reshape_as, squeeze, t, transpose,
                               unsqueeze, view, view_as)
from gradviz.ops.pieces import chunk, split, unbind
from gradviz.ops.unary import abs, clamp, cos, exp, log, relu, sigmoid, sin, sqrt, tanh
from gradviz.tensor import Tensor, _is_operand


def _all_functions() -> tuple:
    found, stack = [], list(OpFunction.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("gradviz.ops") and not cls.__name__.startswith("_"):
            found.append(cls)
    return tuple(sorted(found, key=lambda cls: cls.__name__))


def registry() -> tuple:
    """Every op class (a PyTorch node name), for the formula check and the docs."""
    return _all_functions()


def _rsub(self, other):
    return arithmetic.rsub(self, other)


def _rtruediv(self, other):
    return arithmetic.rdiv(self, other)


def _rpow(self, other):
    return arithmetic.rpow(self, other)


def _rmatmul(self, other):
    return linalg.matmul(other, self)


def _operator(function):
    """A binary operator: ``NotImplemented`` for an operand it has no meaning for, so that Python
    raises its own error (``x + 'a'``) or asks the other operand (``x == 'a'`` is False)."""

    def operator(self, other):
        if type(other) is float or type(other) is int or isinstance(other, Tensor) or _is_operand(other):
            return function(self, other)
        return NotImplemented

    operator.__name__ = function.__name__
    operator.__doc__ = function.__doc__
    return operator


def _arithmetic_operator(function, op_class):
    """``+ - * /`` (and the reflected ``+ *``): with a Tensor or a Python number on the other side,
    straight to the op's node, as ``function`` itself would go (these are most of the ops in a
    learner's code); anything else takes ``function``'s own checks. The operator is the op's lean
    apply itself (``autograd.function.lean_apply``), made with that check: one Python call per ``a * b``."""
    operator = lean_apply(op_class, checked=_operator(function))
    operator.__name__ = function.__name__
    operator.__doc__ = function.__doc__
    return operator


def _pow_operator(self, other):
    """``x ** n``: a float, or an int that is not negative (which an integer tensor refuses), goes
    straight to PowBackward0, as ``pow`` itself would send it; anything else takes ``pow``'s checks."""
    if type(other) is float or (type(other) is int and other >= 0):
        return _pow_apply(self, other)
    return _checked_pow(self, other)


_pow_apply = arithmetic.PowBackward0.apply  # bound once for ``x ** n``


def _matmul_operator(self, other):
    """``x @ w``: two matrices go straight to MmBackward0, as ``matmul`` itself sends them (mm's own
    checks cannot fail there); anything else takes ``matmul``'s checks and dispatch."""
    if type(other) is Tensor and self._data.ndim == 2 and other._data.ndim == 2:
        return _mm_apply(self, other)
    return _checked_matmul(self, other)


_mm_apply = linalg.MmBackward0.apply  # bound once for ``x @ w``


def _method(function):
    """A Tensor method over a binary function: ``x.add('a')`` names ``other`` as position 1, as PyTorch does."""

    def method(self, other, *args, **kwargs):
        if type(other) is not float and type(other) is not int and not isinstance(other, Tensor):
            arithmetic.check_operands(function.__name__, self, other, other_position=1)
        return function(self, other, *args, **kwargs)

    method.__name__ = function.__name__
    method.__doc__ = function.__doc__
    return method


OPERATORS = {
    "__add__": add, "__radd__": add, "__sub__": sub, "__rsub__": _rsub, "__mul__": mul, "__rmul__": mul,
    "__truediv__": div, "__rtruediv__": _rtruediv, "__pow__": pow, "__rpow__": _rpow,
    "__gt__": gt, "__lt__": lt, "__ge__": ge, "__le__": le, "__eq__": eq, "__ne__": ne,
    "__and__": bitwise_and, "__rand__": bitwise_and, "__or__": bitwise_or, "__ror__": bitwise_or,
    "__xor__": bitwise_xor, "__rxor__": bitwise_xor,
}

TENSOR_METHODS = {
    "add": _method(add), "sub": _method(sub), "mul": _method(mul), "div": _method(div), "true_divide": _method(div), "pow": pow, "square": square,
    "__matmul__": _operator(matmul), "__rmatmul__": _operator(_rmatmul), "matmul": matmul, "mm": mm, "mv": mv,
    "dot": dot, "__neg__": neg, "neg": neg, "__abs__": abs, "abs": abs, "reciprocal": reciprocal,
    "exp": exp, "log": log, "sin": sin, "cos": cos, "tanh": tanh, "sigmoid": sigmoid, "relu": relu,
    "sqrt": sqrt, "clamp": clamp, "clip": clamp,
    "sum": sum, "mean": mean, "max": max, "norm": norm, "all": all, "any": any, "argmax": argmax, "argmin": argmin,
    "softmax": softmax, "log_softmax": log_softmax,
    "maximum": maximum, "minimum": minimum, "equal": equal, "allclose": allclose,
    "gt": gt, "lt": lt, "ge": ge, "le": le, "eq": eq, "ne": ne, "bmm": bmm,
    "__invert__": comparison.invert, "logical_not": logical_not, "logical_and": logical_and, "logical_or": logical_or,
    "logical_xor": logical_xor, "bitwise_not": bitwise_not, "bitwise_and": bitwise_and, "bitwise_or": bitwise_or,
    "bitwise_xor": bitwise_xor,
    "view": view, "view_as": view_as, "reshape": reshape, "reshape_as": reshape_as, "flatten": flatten, "t": t,
    "permute": permute, "transpose": transpose, "squeeze": squeeze, "unsqueeze": unsqueeze, "expand": expand,
    "expand_as": expand_as, "narrow": narrow, "repeat": repeat,
    "split": split, "chunk": chunk, "unbind": unbind,
    "where": comparison.tensor_where, "masked_fill": masked_fill, "index_select": index_select, "gather": gather,
    "index_put": index_put,
    "__getitem__": indexing.getitem, "__setitem__": indexing.setitem,
    # in place: the new value is written into the tensor's memory (see ops/inplace.py)
    "masked_fill_": masked_fill_, "index_put_": index_put_,
}
TENSOR_METHODS.update({name: _operator(function) for name, function in OPERATORS.items()})
_checked_pow = _operator(pow)
TENSOR_METHODS["__pow__"] = _pow_operator
_checked_matmul = TENSOR_METHODS["__matmul__"]
TENSOR_METHODS["__matmul__"] = _matmul_operator
TENSOR_METHODS.update({name: _arithmetic_operator(function, op_class) for name, function, op_class in (
    ("__add__", add, arithmetic.AddBackward0), ("__radd__", add, arithmetic.AddBackward0),
    ("__sub__", sub, arithmetic.SubBackward0), ("__mul__", mul, arithmetic.MulBackward0),
    ("__rmul__", mul, arithmetic.MulBackward0), ("__truediv__", div, arithmetic.DivBackward0))})
# -- ``a + b``, ``a - b``, ``a * b`` of two plain 0-d float tensors: recorded in one frame (arithmetic.scalar_pair_operator),
# in front of the lean apply (not the reflected forms: their other operand is never a Tensor)
for _name, _op_class, _operation, _saves_operands in (
        ("__add__", arithmetic.AddBackward0, _operator_module.add, False),
        ("__sub__", arithmetic.SubBackward0, _operator_module.sub, False),
        ("__mul__", arithmetic.MulBackward0, _operator_module.mul, True)):
    _lean = TENSOR_METHODS[_name]
    _pair = TENSOR_METHODS[_name] = arithmetic.scalar_pair_operator(_op_class, _operation, _lean, _saves_operands)
    _pair.__name__, _pair.__doc__ = _lean.__name__, _lean.__doc__
# -- end of the one-frame 0-d pairs
TENSOR_METHODS.update({f"{name}_": in_place(function, f"{name}_") for name, function in {
    "cos": cos, "sin": sin, "exp": exp, "log": log, "neg": neg, "abs": abs, "sqrt": sqrt, "tanh": tanh,
    "sigmoid": sigmoid, "relu": relu, "clamp": clamp, "clip": clamp, "pow": pow, "reciprocal": reciprocal,
    "square": square}.items()})

# -- the wider tensor API that tutorials use: more math, reductions, orderings, matrices -------------------
from gradviz.ops import elementwise  # noqa: E402
from gradviz.ops.elementwise import (acos, addcmul, asin, atan, atan2, ceil, clamp_max, clamp_min, cosh,  # noqa: E402
                                     erf, expm1, floor, fmod, frac, hypot, isfinite, isinf, isnan, lerp, log1p,
                                     log2, log10, nan_to_num, remainder, round, rsqrt, sign, sinh, trunc)

IN_PLACE_TOO = ("log1p", "expm1", "log2", "log10", "rsqrt", "erf", "asin", "arcsin", "acos", "arccos", "atan", "arctan",
                "sinh", "cosh", "atan2", "arctan2", "floor", "ceil", "trunc", "fix", "round", "sign", "frac", "clamp_min",
                "clamp_max", "remainder", "fmod", "lerp", "addcmul", "hypot", "nan_to_num", "cumsum", "cumprod", "tril",
                "triu", "exp2", "sgn", "subtract", "multiply", "divide", "negative", "absolute", "swapaxes", "swapdims")
MORE_MATH = {
    "log1p": log1p, "expm1": expm1, "log2": log2, "log10": log10, "rsqrt": rsqrt, "erf": erf, "asin": asin,
    "arcsin": asin, "acos": acos, "arccos": acos, "atan": atan, "arctan": atan, "sinh": sinh, "cosh": cosh,
    "atan2": atan2, "arctan2": atan2, "floor": floor, "ceil": ceil, "trunc": trunc, "fix": trunc, "round": round,
    "sign": sign, "frac": frac, "clamp_min": clamp_min, "clamp_max": clamp_max, "remainder": remainder,
    "fmod": fmod, "lerp": lerp, "addcmul": addcmul, "hypot": hypot, "nan_to_num": nan_to_num,
    "isnan": isnan, "isinf": isinf, "isfinite": isfinite, "__mod__": _operator(remainder),
}
from gradviz.ops import matrix, statistics  # noqa: E402
from gradviz.ops.matrix import diag, diagonal, flip, fliplr, flipud, roll, tril, triu, trace  # noqa: E402
from gradviz.ops.statistics import amax, amin, cumprod, cumsum, logsumexp, min, prod, std, var  # noqa: E402

MORE_MATH.update({
    "min": min, "amax": amax, "amin": amin, "std": std, "var": var, "prod": prod, "logsumexp": logsumexp,
    "cumsum": cumsum, "cumprod": cumprod,
    "flip": flip, "fliplr": fliplr, "flipud": flipud, "roll": roll, "tril": tril, "triu": triu, "diag": diag,
    "diagonal": diagonal, "trace": trace,
})
from gradviz.ops import ordering  # noqa: E402
from gradviz.ops.ordering import argsort, msort, sort, topk  # noqa: E402

MORE_MATH.update({"sort": sort, "argsort": argsort, "msort": msort, "topk": topk})
from gradviz.ops import composites, selection  # noqa: E402
from gradviz.ops.composites import (broadcast_to, diff, movedim, outer, repeat_interleave, swapaxes,  # noqa: E402
                                    tile, unflatten)
from gradviz.ops.elementwise import exp2, isclose, sgn  # noqa: E402
from gradviz.ops.selection import argwhere, count_nonzero, masked_select, nonzero  # noqa: E402

MORE_MATH.update({
    "outer": outer, "ger": outer, "repeat_interleave": repeat_interleave, "tile": tile, "broadcast_to": broadcast_to,
    "movedim": movedim, "moveaxis": movedim, "swapaxes": swapaxes, "swapdims": swapaxes, "unflatten": unflatten,
    "exp2": exp2, "sgn": sgn, "isclose": isclose, "masked_select": masked_select, "nonzero": nonzero,
    "argwhere": argwhere, "count_nonzero": count_nonzero, "subtract": _method(sub), "multiply": _method(mul),
    "divide": _method(div), "negative": neg, "absolute": abs, "diff": diff,
})
from gradviz.ops import scatter as _scatter_module  # noqa: E402
from gradviz.ops.scatter import index_add, index_add_, scatter, scatter_, scatter_add, scatter_add_  # noqa: E402

MORE_MATH.update({"scatter": scatter, "scatter_": scatter_, "scatter_add": scatter_add, "scatter_add_": scatter_add_,
                  "index_add": index_add, "index_add_": index_add_})
# -- more products, linear algebra, scatter_reduce, windows ---------------------------------------
from gradviz.ops import decompositions, products  # noqa: E402
from gradviz.ops.products import addbmm, addmv, addr, baddbmm, cross, inner, kron, vdot  # noqa: E402

API7_METHODS = {
    "baddbmm": baddbmm, "addbmm": addbmm, "addmv": addmv, "addr": addr, "cross": cross, "vdot": vdot, "kron": kron,
    "inner": inner, "inverse": decompositions.inv, "det": decompositions.det, "logdet": decompositions.logdet,
    "slogdet": decompositions.torch_slogdet, "cholesky": decompositions.deprecated_cholesky,
    "scatter_reduce": _scatter_module.scatter_reduce, "scatter_reduce_": _scatter_module.scatter_reduce_,
    "unfold": matrix.unfold, "as_strided": matrix.as_strided,
}
IN_PLACE_TOO += ("baddbmm", "addbmm", "addmv", "addr")
MORE_MATH.update(API7_METHODS)
# -- order statistics, summaries, special math, lookups, searching ------------------------------------
from gradviz.ops.order_statistics import cummax, cummin, kthvalue, median, mode, nanmedian  # noqa: E402
from gradviz.ops.summaries import aminmax, logcumsumexp, nanmean, nansum, std_mean, var_mean  # noqa: E402
from gradviz.ops.special_math import (addcdiv, deg2rad, digamma, erfc, erfinv, heaviside, i0, lgamma,  # noqa: E402
                                      logaddexp, logaddexp2, logit, rad2deg, sinc, xlogy)
from gradviz.ops.lookups import index_copy, index_fill, put, take, take_along_dim  # noqa: E402
from gradviz.ops.searching import (bincount, bucketize, histc, isin, searchsorted, unique,  # noqa: E402
                                   unique_consecutive)

API6_METHODS = {
    "kthvalue": kthvalue, "median": median, "nanmedian": nanmedian, "mode": mode, "cummax": cummax, "cummin": cummin,
    "aminmax": aminmax, "nansum": nansum, "nanmean": nanmean, "logcumsumexp": logcumsumexp,
    "logaddexp": logaddexp, "logaddexp2": logaddexp2, "addcdiv": addcdiv, "xlogy": xlogy, "sinc": sinc,
    "deg2rad": deg2rad, "rad2deg": rad2deg, "heaviside": heaviside, "logit": logit,
    "erfc": erfc, "erfinv": erfinv, "lgamma": lgamma, "digamma": digamma, "i0": i0,
    "take": take, "take_along_dim": take_along_dim, "index_fill": index_fill, "index_copy": index_copy,
    "put": put, "histc": histc, "bincount": bincount, "unique": unique, "unique_consecutive": unique_consecutive,
}
MORE_MATH.update(API6_METHODS)
IN_PLACE_TOO += ("addcdiv", "xlogy", "sinc", "deg2rad", "rad2deg", "logit", "heaviside", "index_fill", "index_copy",
                 "put", "erfc", "erfinv", "lgamma", "digamma", "i0")
TENSOR_METHODS.update(MORE_MATH)
TENSOR_METHODS.update({f"{name}_": in_place(function, f"{name}_") for name, function in MORE_MATH.items()
                       if name in IN_PLACE_TOO})

# -- clamp/clip with tensor bounds and PyTorch's errors for mixed bounds (ops/clamping.py) ------
from gradviz.ops import clamping as _clamping  # noqa: E402

clamp = _clamping.clamp
TENSOR_METHODS.update({"clamp": _clamping.clamp_method, "clip": _clamping.clip_method})

for _name, _function in TENSOR_METHODS.items():
    setattr(Tensor, _name, _function)
Tensor.__hash__ = object.__hash__  # defining __eq__ would otherwise make tensors unhashable
Tensor.T = property(shape.T)
Tensor.mT = property(lambda self: shape.transpose(self, -2, -1))


def derivatives_for(name: str) -> dict:
    """The derivatives declared by the op PyTorch calls ``name`` (``{}`` when gradviz has none).

    Real torch graphs use this to show the same chain-rule formulas as gradviz graphs.
    """
    global _BY_NAME
    if _BY_NAME is None:
        _BY_NAME = {cls.__name__: cls.derivatives for cls in registry()}
        _BY_NAME.update({cls.qualified_name: cls.derivatives for cls in registry() if hasattr(cls, "qualified_name")})
    return _BY_NAME.get(name, {})


_BY_NAME = None


# -- the SVD family and torch.special's extras as Tensor methods ------------------------------------------------
def _more_linalg_and_special_methods() -> dict:
    from gradviz.ops.decompositions import torch_svd
    from gradviz.ops.linalg import matrix_power
    from gradviz.ops.special_math import gammainc, gammaincc, multigammaln, polygamma

    return {"svd": torch_svd, "matrix_power": matrix_power, "polygamma": lambda self, n: polygamma(n, self),
            "mvlgamma": multigammaln, "igamma": _method(gammainc), "igammac": _method(gammaincc)}


for _name, _function in _more_linalg_and_special_methods().items():
    TENSOR_METHODS[_name] = _function
    setattr(Tensor, _name, _function)
Tensor.matrix_exp = TENSOR_METHODS["matrix_exp"] = __import__("gradviz.ops.decompositions", fromlist=["x"]).matrix_exp
# -- shape methods in every form PyTorch accepts (``x.flip(-1, 0)``, ``x.permute(dims=...)``), and the function
# forms' tuple-only dims (``torch.flip(x, 0)`` is refused) -------------------------------------------------------
for _name, _function in shape.shape_methods().items():
    TENSOR_METHODS[_name] = _function
    setattr(Tensor, _name, _function)
# -- more two-operand math, distances and diag_embed as Tensor methods (ops/binary_math.py, ops/distances.py) --------
from gradviz.ops import binary_math as _binary_math  # noqa: E402

_MORE_OPS_METHODS = {
    "fmax": _binary_math.fmax, "fmin": _binary_math.fmin, "copysign": _binary_math.copysign,
    "nextafter": _binary_math.nextafter, "float_power": _binary_math.float_power, "dist": _binary_math.dist,
    "floor_divide": _binary_math.floor_divide, "__floordiv__": _operator(_binary_math.floor_divide),
    "__rfloordiv__": _operator(_binary_math.rfloor_divide), "diag_embed": shape.diag_embed,
}
for _name, _function in _MORE_OPS_METHODS.items():
    TENSOR_METHODS[_name] = _function
    setattr(Tensor, _name, _function)
# -- view(dtype), and reshape/permute with PyTorch's TypeErrors for misuse (ops/shape.py) ---------------------------
for _name, _function in shape.checked_shape_methods().items():
    TENSOR_METHODS[_name] = _function
    setattr(Tensor, _name, _function)
# -- the tensor API sweep: tan, rsub(alpha), bernoulli/exponential_/multinomial as methods, half (ops/tensor_api.py) ----
from gradviz.ops import tensor_api as _tensor_api  # noqa: E402

for _name, _function in _tensor_api.tensor_methods().items():
    TENSOR_METHODS[_name] = _function
    setattr(Tensor, _name, _function)
for _name, _function in _tensor_api.sweep_methods().items():
    TENSOR_METHODS[_name] = _function
    setattr(Tensor, _name, _function)
for _name, _getter in _tensor_api.SWEEP_PROPERTIES.items():
    setattr(Tensor, _name, property(_getter))
# -- ``x //= 2`` and ``floor_divide_`` in place (PyTorch's ``floor_divide_``), and post-accumulate-grad hooks --------


def _floor_divide_for_in_place(input, other):
    """``floor_divide``, its NotImplemented node named as PyTorch names the in-place op (``aten::floor_divide_``)."""
    result = _binary_math.floor_divide(input, other)
    if result._grad_fn is not None:
        result._grad_fn.aten_name = "floor_divide_"
    return result


TENSOR_METHODS["floor_divide_"] = in_place(_floor_divide_for_in_place, "floor_divide_")
TENSOR_METHODS["__ifloordiv__"] = in_place(_floor_divide_for_in_place, "__ifloordiv__")
for _name in ("floor_divide_", "__ifloordiv__"):
    setattr(Tensor, _name, TENSOR_METHODS[_name])
from gradviz.autograd.post_accumulate import register_post_accumulate_grad_hook  # noqa: E402

Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
# -- the wider tensor API's methods, each module's table put on the Tensor (and listed in TENSOR_METHODS) ------------
def _install(methods: dict) -> None:
    TENSOR_METHODS.update(methods)
    for name, method in methods.items():
        setattr(Tensor, name, method)


from gradviz.ops import integer_math as _integer_math  # noqa: E402  (gcd, shifts and << >>, frexp, ge_..., apply_)
from gradviz.ops import losses_more as _losses_more  # noqa: E402  (x.hardshrink, x.prelu)
from gradviz.ops import shape_helpers as _shape_helpers  # noqa: E402  (tensor_split, rot90, diagflat, new, byte...)
from gradviz.ops import statistics_more as _statistics_more  # noqa: E402  (quantile, cov, corrcoef, histogram)

_install(_integer_math.tensor_methods())
_install({name: _operator(function) for name, function in _integer_math.operators().items()})
_install(_shape_helpers.tensor_methods())
_install(_statistics_more.tensor_methods())
_install(_losses_more.tensor_methods())
# -- the scatters into a copy, masked_scatter, renorm, fill_diagonal_, x.addmm, x.pinverse ---------------------------------
from gradviz.ops import scatter_views as _scatter_views  # noqa: E402

_install(_scatter_views.tensor_methods())
# -- recurrent layers: unsafe_chunk and unsafe_split, the pieces an RNN cell cuts its gates into ----------------------
from gradviz.ops import recurrent as _recurrent  # noqa: E402

_install({"unsafe_chunk": _recurrent.unsafe_chunk, "unsafe_split": _recurrent.unsafe_split})
