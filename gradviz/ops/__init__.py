"""The op registry: every differentiable op, and the Tensor methods that call them.

Each op is one ``Function`` subclass named as PyTorch names its node, with its forward and
backward side by side and its derivative declared as data. ``REGISTRY`` lists them all so a
test can check each declares a formula for every input; ``TENSOR_METHODS`` is the explicit
table of the Tensor methods and operators that call them.
"""
from __future__ import annotations

from gradviz.autograd.function import Function
from gradviz.ops import (activation, arithmetic, comparison, conversion, linalg, loss, reduction, sampling,
                         shape, unary)
from gradviz.ops.activation import log_softmax, softmax
from gradviz.ops.arithmetic import add, div, mul, neg, pow, reciprocal, rsub, sub
from gradviz.ops.comparison import eq, ge, gt, le, lt, maximum, minimum, ne, where
from gradviz.ops.conversion import clone
from gradviz.ops.linalg import addmm, bmm, dot, matmul, mm, mv
from gradviz.ops.reduction import max, mean, sum
from gradviz.ops.shape import expand, flatten, permute, reshape, squeeze, t, transpose, unsqueeze, view
from gradviz.ops.unary import abs, clamp, cos, exp, log, relu, sigmoid, sin, sqrt, tanh
from gradviz.tensor import Tensor


def _all_functions() -> tuple:
    found, stack = [], list(Function.__subclasses__())
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


TENSOR_METHODS = {
    "__add__": add, "__radd__": add, "add": add,
    "__sub__": sub, "__rsub__": _rsub, "sub": sub,
    "__mul__": mul, "__rmul__": mul, "mul": mul,
    "__truediv__": div, "__rtruediv__": _rtruediv, "div": div, "true_divide": div,
    "__pow__": pow, "__rpow__": _rpow, "pow": pow,
    "__matmul__": matmul, "__rmatmul__": _rmatmul, "matmul": matmul, "mm": mm, "mv": mv, "dot": dot,
    "__neg__": neg, "neg": neg, "__abs__": abs, "abs": abs, "reciprocal": reciprocal,
    "exp": exp, "log": log, "sin": sin, "cos": cos, "tanh": tanh, "sigmoid": sigmoid, "relu": relu,
    "sqrt": sqrt, "clamp": clamp, "clip": clamp,
    "sum": sum, "mean": mean, "max": max, "softmax": softmax, "log_softmax": log_softmax,
    "maximum": maximum, "minimum": minimum,
    "__gt__": gt, "__lt__": lt, "__ge__": ge, "__le__": le, "__eq__": eq, "__ne__": ne,
    "gt": gt, "lt": lt, "ge": ge, "le": le, "eq": eq, "ne": ne, "bmm": bmm,
    "view": view, "reshape": reshape, "flatten": flatten, "t": t, "permute": permute,
    "transpose": transpose, "squeeze": squeeze, "unsqueeze": unsqueeze, "expand": expand,
    "__getitem__": shape.getitem,
}

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
    return _BY_NAME.get(name, {})


_BY_NAME = None
