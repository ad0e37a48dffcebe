"""A tiny expression language for derivatives: one tree that both renders and computes.

A learner formula (``gradviz.snapshot.formulas``) is written with these nodes, e.g.
``grad * -sin(x)``, and read by two interpreters:

* ``to_mathml_json(expr)`` gives a small JSON tree of MathML tags (``{"tag": "mi", "text": "x"}``,
  ``{"tag": "mrow", "children": [...]}``) that the widget turns into real MathML with
  ``document.createElementNS`` and ``textContent``: text only, never markup. A node that stands for
  a value carries ``"var"`` (the name it is looked up by), so the panel can show the input's label
  (``w``) in the formula, or substitute the step's numbers for it.
* ``evaluate(expr, env)`` computes it with numpy in float64, ``env`` mapping each variable name to
  its value. ``tests/test_formulas.py`` checks the result against every op's ``backward()``.

A node with one output reads the gradient arriving at it as ``Grad()`` (∂L/∂z); a node with
several (``split``, ``unbind``: each piece is an output) reads them all as ``Grads()``
(∂L/∂z₁, ∂L/∂z₂, …), a tuple with ``None`` for a piece no gradient reached, which the functions
that read it count as zeros.

The tags are MathML's presentation tags (``TAGS``); nothing else may appear in a tree.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

TAGS = ("math", "mrow", "mi", "mn", "mo", "mtext", "mfrac", "msup", "msub", "munder", "msqrt")

GRAD = "grad"  # the variable that holds the gradient arriving at the node (∂L/∂out)
GRADS = "grads"  # a node with several outputs: the gradients arriving at each (None: none arrived)
LOSS = "loss"  # display-only variables: what backward() started from, and this node's output
OUT = "out"

# how tightly each kind of node binds, to decide where parentheses go
_SUM, _PRODUCT, _PREFIX, _POWER, _ATOM = 1, 2, 3, 4, 5


class Expr:
    """A node of a formula; arithmetic on nodes (and Python numbers) builds larger formulas."""

    precedence = _ATOM

    def __add__(self, other): return Add(self, lift(other))
    def __radd__(self, other): return Add(lift(other), self)
    def __sub__(self, other): return Sub(self, lift(other))
    def __rsub__(self, other): return Sub(lift(other), self)
    def __mul__(self, other): return Mul(self, lift(other))
    def __rmul__(self, other): return Mul(lift(other), self)
    def __truediv__(self, other): return Div(self, lift(other))
    def __rtruediv__(self, other): return Div(lift(other), self)
    def __neg__(self): return Neg(self)
    def __pow__(self, other): return Pow(self, lift(other))
    def __matmul__(self, other): return MatMul(self, lift(other))

    @property
    def T(self):
        return Transpose(self)

    def children(self) -> tuple:
        return ()


def lift(value) -> Expr:
    return value if isinstance(value, Expr) else Num(value)


@dataclass(frozen=True, eq=False)
class Num(Expr):
    value: float

    def children(self):
        return ()


@dataclass(frozen=True, eq=False)
class Var(Expr):
    """A value looked up by ``name``: an input or saved tensor, a number; ``text`` is its symbol."""

    name: str
    text: str


@dataclass(frozen=True, eq=False)
class Grad(Expr):
    """The gradient arriving at the node, shown as ∂L/∂out; evaluates to ``env[GRAD]``."""


@dataclass(frozen=True, eq=False)
class Grads(Expr):
    """The gradients arriving at each output of a node with several, shown as ∂L/∂z₁, ∂L/∂z₂, …;
    evaluates to ``env[GRADS]``, with ``None`` where no gradient arrived."""


@dataclass(frozen=True, eq=False)
class Binary(Expr):
    left: Expr
    right: Expr

    def children(self):
        return (self.left, self.right)


class Add(Binary):
    precedence = _SUM


class Sub(Binary):
    precedence = _SUM


class Mul(Binary):
    precedence = _PRODUCT


class MatMul(Binary):
    precedence = _PRODUCT


class Div(Binary):
    precedence = _ATOM  # drawn as a fraction bar, which groups by itself


class Pow(Binary):
    precedence = _POWER


@dataclass(frozen=True, eq=False)
class Neg(Expr):
    operand: Expr
    precedence = _PREFIX

    def children(self):
        return (self.operand,)


@dataclass(frozen=True, eq=False)
class Transpose(Expr):
    operand: Expr
    precedence = _POWER

    def children(self):
        return (self.operand,)


@dataclass(frozen=True, eq=False)
class Call(Expr):
    """A function of the operands: ``sin x``, ``σ(x)``, ``reshape(∂L/∂z, 2×3)``.

    ``name`` picks the numpy implementation in ``FUNCTIONS``; ``text`` is what is shown;
    ``params`` are plain values fixed when the formula was specialised to the call (a shape, a
    dim), shown as ``shown`` after the operands.
    """

    name: str
    args: tuple
    text: str = ""
    params: tuple = ()
    shown: str = ""
    precedence = _PREFIX

    def children(self):
        return self.args


@dataclass(frozen=True, eq=False)
class Indicator(Expr):
    """Iverson's bracket ``[x > 0]``: 1 where the condition holds, else 0."""

    left: Expr
    relation: str  # one of RELATIONS
    right: Expr

    def children(self):
        return (self.left, self.right)


@dataclass(frozen=True, eq=False)
class Both(Expr):
    """``[a ≤ x ≤ b]`` and the like: the product of two indicators, shown as one bracket."""

    first: Indicator
    second: Indicator

    def children(self):
        return (self.first, self.second)


@dataclass(frozen=True, eq=False)
class Sum(Expr):
    """``Σ_j operand``: summed along ``axis`` (kept as size 1, so it broadcasts back)."""

    operand: Expr
    axis: int
    index: str = "j"
    precedence = _PREFIX

    def children(self):
        return (self.operand,)


RELATIONS = {">": np.greater, "<": np.less, "≥": np.greater_equal, "≤": np.less_equal, "=": np.equal,
             "≠": np.not_equal}


# ------------------------------------------------------------------ builders a formula reads with
def sin(x): return Call("sin", (x,), "sin")
def cos(x): return Call("cos", (x,), "cos")
def exp(x): return Call("exp", (x,), "exp")
def ln(x): return Call("log", (x,), "ln")
def sigmoid(x): return Call("sigmoid", (x,), "σ")
def sgn(x): return Call("sign", (x,), "sgn")
def absolute(x): return Call("abs", (x,), "abs")
def sqrt(x): return Call("sqrt", (x,), "√")
def indicator(left, relation, right): return Indicator(lift(left), relation, lift(right))


# ------------------------------------------------------------------ rendering
def mathml(tag: str, *children, text: str | None = None, var: str | None = None, sym: str | None = None) -> dict:
    """One JSON MathML node. ``var``: the whole node may be replaced by that variable's value;
    ``sym``: its text is the label of the value named so (an input, the output, the loss)."""
    node: dict = {"tag": tag}
    if text is not None:
        node["text"] = text
    if children:
        node["children"] = list(children)
    if var is not None:
        node["var"] = var
    if sym is not None:
        node["sym"] = sym
    return node


def _mo(text: str) -> dict:
    return mathml("mo", text=text)


def number_text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def partial(of: str, wrt: str | None, wrt_text: str, var: str | None = None) -> dict:
    """∂L/∂wrt: the panel shows ``of`` and ``wrt`` by their labels (the loss's, the input's);
    ``wrt`` None: always by ``wrt_text`` (a piece of a split has no label of its own)."""
    return mathml("mfrac", mathml("mrow", _mo("∂"), mathml("mi", text="L", sym=of)),
                  mathml("mrow", _mo("∂"), mathml("mi", text=wrt_text, sym=wrt)), var=var)


def to_mathml_json(expr: Expr) -> dict:
    """The formula as a JSON tree of MathML tags (an ``mrow``); text only, never markup."""
    return _render(expr)


def _wrap(expr: Expr, above: int, strict: bool = False) -> dict:
    """``expr`` rendered, in parentheses when it binds more loosely than its context."""
    inner = _render(expr)
    looser = expr.precedence < above or (strict and expr.precedence == above)
    return mathml("mrow", _mo("("), inner, _mo(")")) if looser else inner


def _render(expr: Expr) -> dict:  # noqa: C901 (one case per node kind reads best as one list)
    if isinstance(expr, Num):
        return mathml("mn", text=number_text(expr.value))
    if isinstance(expr, Var):
        return mathml("mi", text=expr.text, var=expr.name, sym=expr.name)
    if isinstance(expr, Grad):
        return partial(LOSS, OUT, "z", var=GRAD)
    if isinstance(expr, Grads):
        pieces = (partial(LOSS, None, "z₁"), _mo(","), partial(LOSS, None, "z₂"), _mo(","), _mo("…"))
        return mathml("mrow", *pieces, var=GRADS)
    if isinstance(expr, (Add, Sub)):
        sign = "+" if isinstance(expr, Add) else "−"
        return mathml("mrow", _wrap(expr.left, _SUM), _mo(sign), _wrap(expr.right, _SUM, strict=True))
    if isinstance(expr, (Mul, MatMul)):
        return mathml("mrow", _wrap(expr.left, _PRODUCT), _mo("·"), _factor(expr.right))
    if isinstance(expr, Div):
        return mathml("mfrac", _render(expr.left), _render(expr.right))
    if isinstance(expr, Pow):
        base = expr.left
        if isinstance(base, Var) and not base.text.isidentifier():  # (tanh x)², not tanh x²
            return mathml("msup", mathml("mrow", _mo("("), _render(base), _mo(")")), _render(expr.right))
        return mathml("msup", _wrap(base, _POWER, strict=True), _render(expr.right))
    if isinstance(expr, Neg):
        return mathml("mrow", _mo("−"), _wrap(expr.operand, _PREFIX))
    if isinstance(expr, Transpose):
        return mathml("msup", _wrap(expr.operand, _POWER, strict=True), mathml("mi", text="⊤"))
    if isinstance(expr, Call):
        return _render_call(expr)
    if isinstance(expr, Indicator):
        return mathml("mrow", _mo("["), _render(expr.left), _mo(expr.relation), _render(expr.right), _mo("]"))
    if isinstance(expr, Both):
        first, second = expr.first, expr.second
        if first.right is second.left or (isinstance(first.right, Var) and isinstance(second.left, Var)
                                           and first.right.name == second.left.name):
            return mathml("mrow", _mo("["), _render(first.left), _mo(first.relation), _render(first.right),
                          _mo(second.relation), _render(second.right), _mo("]"))
        return mathml("mrow", _render(first), _render(second))
    if isinstance(expr, Sum):
        sigma = mathml("munder", _mo("∑"), mathml("mi", text=expr.index))
        return mathml("mrow", sigma, _wrap(expr.operand, _PRODUCT))
    raise TypeError(f"cannot render {type(expr).__name__}")


def _factor(expr: Expr) -> dict:
    """A factor after ``·``: one that starts with a minus sign keeps its parentheses,
    ``a · (−sin x)``, ``a · (−2·y)``."""
    if isinstance(expr, (Call, Sum)):
        return _render(expr)
    if _starts_negative(expr):
        return mathml("mrow", _mo("("), _render(expr), _mo(")"))
    return _wrap(expr, _PRODUCT)


def _starts_negative(expr: Expr) -> bool:
    while isinstance(expr, (Mul, MatMul)):
        expr = expr.left
    return isinstance(expr, Neg) or (isinstance(expr, Num) and expr.value < 0)


def _render_call(expr: Call) -> dict:
    args = [_render(a) for a in expr.args if not (isinstance(a, Var) and a.name.startswith("_"))]
    if expr.name == "sqrt":
        return mathml("msqrt", *args)
    if expr.name == "exp":
        return mathml("msup", mathml("mi", text="e"), args[0])
    if expr.name == "abs":
        return mathml("mrow", _mo("|"), args[0], _mo("|"))
    if not expr.text:  # a gradient moved into place: "∂L/∂z in x[1:3], 0 elsewhere"
        return mathml("mrow", args[0], mathml("mtext", text="\u2009" + expr.shown))
    head = mathml("mi", text=expr.text)
    simple = len(expr.args) == 1 and not expr.params and isinstance(expr.args[0], (Var, Num)) and expr.text != "σ"
    if simple:  # sin x, ln x: as a calculus book writes them
        return mathml("mrow", head, _mo("\u2061"), args[0])  # U+2061: function application
    inside: list = []
    for i, arg in enumerate(args):
        if i:
            inside.append(_mo(","))
        inside.append(arg)
    if expr.shown:
        if inside:
            inside.append(_mo(","))
        inside.append(mathml("mtext", text=expr.shown))
    return mathml("mrow", head, _mo("("), *inside, _mo(")"))


@functools.lru_cache(maxsize=4096)
def variables(expr: Expr) -> tuple:
    """The names of the values ``expr`` reads, in first-use order (``GRAD`` included); formulas
    are immutable and cached, so each is walked once."""
    found: list = []
    stack = [expr]
    while stack:
        node = stack.pop()
        name = (node.name if isinstance(node, Var) else GRAD if isinstance(node, Grad)
                else GRADS if isinstance(node, Grads) else None)
        if name is not None and name not in found:
            found.append(name)
        stack.extend(reversed(node.children()))
    return tuple(found)


# ------------------------------------------------------------------ evaluation
def evaluate(expr: Expr, env: dict) -> Any:
    """``expr`` computed with numpy in float64; ``env`` maps each variable name to its value."""
    if isinstance(expr, Num):
        return np.float64(expr.value)
    if isinstance(expr, Var):
        return env[expr.name]
    if isinstance(expr, Grad):
        return env[GRAD]
    if isinstance(expr, Grads):
        return env[GRADS]
    if isinstance(expr, Call):
        return FUNCTIONS[expr.name](*(evaluate(a, env) for a in expr.args), *expr.params)
    if isinstance(expr, Indicator):
        relation = RELATIONS[expr.relation]
        return relation(evaluate(expr.left, env), evaluate(expr.right, env)).astype(np.float64)
    if isinstance(expr, Both):
        return evaluate(expr.first, env) * evaluate(expr.second, env)
    if isinstance(expr, Sum):
        return np.sum(evaluate(expr.operand, env), axis=expr.axis, keepdims=True)
    if isinstance(expr, Neg):
        return -evaluate(expr.operand, env)
    if isinstance(expr, Transpose):
        value = np.asarray(evaluate(expr.operand, env))
        return np.swapaxes(value, -1, -2) if value.ndim >= 2 else value
    left, right = evaluate(expr.left, env), evaluate(expr.right, env)
    with np.errstate(all="ignore"):  # NaN and inf are shown as such, never raised
        return _BINARY[type(expr)](left, right)


def _matmul(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim == 1 and b.ndim == 1 and a.shape[0] and b.shape[0] and (a.shape != b.shape):
        return np.outer(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return a @ b


_BINARY: dict = {Add: np.add, Sub: np.subtract, Mul: np.multiply, Div: np.divide, Pow: np.power, MatMul: _matmul}


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


FUNCTIONS: dict[str, Callable] = {
    "sin": np.sin, "cos": np.cos, "exp": np.exp, "log": np.log, "sigmoid": _sigmoid, "sign": np.sign,
    "abs": np.abs, "sqrt": np.sqrt, "tanh": np.tanh,
}


def register(name: str) -> Callable:
    """Add a numpy implementation for ``Call(name, ...)`` (the structural ops' helpers use this)."""

    def decorator(function: Callable) -> Callable:
        FUNCTIONS[name] = function
        return function

    return decorator
