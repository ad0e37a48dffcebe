"""The learner's formula for every op, one entry per PyTorch node name, as data that computes.

Each entry says which plain values the node saved it needs (``options``: ``alpha``, ``reduction``,
``dim``...; ``present``: optional tensors such as ``weight``, given or not) and builds, from those,
one ``Rule`` per input: the formula specialised to this call. A formula reads the node's saved
tensors by their saved names (``self``, ``other``, ``result``: the names PyTorch's
``_saved_<name>`` attributes use), so the same entry serves gradviz's nodes and torch's.

A ``Rule`` is either elementwise (``local``: the local derivative, and the gradient sent is
``∂L/∂out · local``, summed back over any dimensions broadcasting added) or general (``sent``:
the whole gradient sent, written with ``Grad()`` for ∂L/∂out, or ``Grads()`` for the gradients
arriving at each output of a node with several: split, unbind). ``tests/test_formulas.py``
evaluates every rule and compares it with the op's ``backward()``.

The ops only a backward pass records (``create_graph=True``: ``TanhBackwardBackward0``...) get
formulas in the same notation: their inputs are a gradient (ḡ, the one that arrived at the
first-order op) and that op's saved values, and their note says what the node computed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from gradviz.snapshot.math import (Both, Call, Expr, Grad, Grads, Neg, Num, Sum, Var, absolute, cos, exp, indicator, ln,
                                   register, sgn, sigmoid, sin, sqrt)

INPUT_SHAPE = "_input_shape"    # the shape of the input the gradient is for (hidden: never shown)
INPUT_SHAPES = "_input_shapes"  # the shapes of all inputs, and which slot this is (cat, stack)
SLOT = "_slot"
NODE = "_node"                  # the node itself, for the one op whose geometry is not saved (CopySlices)


@dataclass(frozen=True)
class Rule:
    """How the gradient for one input is made: elementwise ``local``, or the whole ``sent``."""

    local: Expr | None = None
    sent: Expr | None = None
    note: str | None = None
    symbol: str = "x"  # the input's name in the formula when it has no label

    @property
    def expression(self) -> Expr:
        return self.sent if self.sent is not None else Grad() * self.local

    @property
    def broadcast(self) -> bool:
        """Elementwise rules sum their gradient back over dimensions that broadcasting added."""
        return self.sent is None


@dataclass(frozen=True)
class Entry:
    build: Callable  # (options dict) -> {input name: Rule}
    options: tuple = ()
    present: tuple = ()  # saved tensors whose presence (and shape) the formula depends on


TABLE: dict[str, Entry] = {}


def entry(*names: str, options: tuple = (), present: tuple = ()):
    def decorator(build):
        for name in names:
            TABLE[name] = Entry(build, options, present)
        return build

    return decorator


# the names formulas use; ``Var(saved name, symbol)``
x = Var("self", "x")
y = Var("other", "y")
t = Var("target", "t")
g = Grad()


def in_note(name: str, letter: str) -> str:
    """A note's mention of a value the formula names: ``{self:x}``. The panel writes the learner's
    label there when the formula shows one for it (``∂loss/∂w`` and "w's gradient"), else the letter."""
    return "{" + name + ":" + letter + "}"


X, T, Z, Y = in_note("self", "x"), in_note("target", "t"), in_note("result", "z"), in_note("output", "y")


def result(shown: str = "z") -> Var:
    return Var("result", shown)


def hidden(name: str) -> Var:
    return Var(name, "")


def only(rule: Rule, name: str = "self") -> dict:
    return {name: rule}


ZERO_NOTE = "the op overwrote these values, so they do not affect its output: their gradient is 0"


# ------------------------------------------------------------------ elementwise, one input
entry("AbsBackward0")(lambda o: only(Rule(local=sgn(x))))
entry("CosBackward0")(lambda o: only(Rule(local=-sin(x))))
entry("SinBackward0")(lambda o: only(Rule(local=cos(x))))
entry("LogBackward0")(lambda o: only(Rule(local=1 / x)))
entry("LogitBackward0")(lambda o: only(Rule(local=1 / (x * (1 - x)))))
entry("ExpBackward0")(lambda o: only(Rule(local=result("eˣ"), note="eˣ is its own derivative: the local derivative is the output itself")))
entry("TanhBackward0")(lambda o: only(Rule(local=1 - result("tanh x") ** 2)))
entry("SigmoidBackward0")(lambda o: only(Rule(local=result("σ(x)") * (1 - result("σ(x)")))))
entry("ReluBackward0")(lambda o: only(Rule(local=indicator(result(), ">", 0),
                                           note="relu passes the gradient where its output is positive, and blocks it elsewhere")))
entry("SqrtBackward0")(lambda o: only(Rule(local=1 / (2 * result("√x")))))
entry("NegBackward0")(lambda o: only(Rule(local=Num(-1))))
entry("ReciprocalBackward0")(lambda o: only(Rule(local=-(result("1/x") ** 2))))
entry("AddBackward1", "SubBackward1")(lambda o: only(Rule(local=Num(1))))
entry("MulBackward1")(lambda o: only(Rule(local=Var("other", "c"))))
entry("DivBackward1")(lambda o: only(Rule(local=1 / Var("other", "c"))))
entry("CloneBackward0", "AliasBackward0", "ToCopyBackward0")(lambda o: only(Rule(local=Num(1))))
entry("FillBackward2", "ZeroBackward0", "NormalBackward0", "UniformBackward0", "BernoulliBackward0",
      "BernoulliBackward2")(lambda o: only(Rule(sent=Num(0), note=ZERO_NOTE)))


@entry("ClampBackward1", options=("min", "max"))
def _clamp(o):
    low, high = o["min"], o["max"]
    inside = [indicator(Num(low), "≤", x)] if low is not None else []
    if high is not None:
        inside.append(indicator(x, "≤", Num(high)))
    local = Both(*inside) if len(inside) == 2 else inside[0]
    return only(Rule(local=local, note="the gradient passes only where the input was inside the bounds"))


@entry("PowBackward0", options=("exponent",))
def _pow_number(o):
    n = o["exponent"]
    if n == 0:
        return only(Rule(local=Num(0)))
    if n == 1:
        return only(Rule(local=Num(1)))
    return only(Rule(local=Num(n) * (x if n == 2 else x ** Num(n - 1))))


# ------------------------------------------------------------------ elementwise, two inputs
def _alpha(o, sign: int = 1) -> Expr:
    alpha = o["alpha"]
    return Num(sign * alpha) if alpha != 1 else Num(sign)


entry("AddBackward0", options=("alpha",))(lambda o: {"self": Rule(local=Num(1)), "other": Rule(local=_alpha(o), symbol="y")})
entry("SubBackward0", options=("alpha",))(lambda o: {"self": Rule(local=Num(1)), "other": Rule(local=_alpha(o, -1), symbol="y")})
entry("RsubBackward1", options=("alpha",))(lambda o: only(Rule(local=_alpha(o, -1))))
entry("MulBackward0")(lambda o: {"self": Rule(local=y), "other": Rule(local=x, symbol="y")})
entry("DivBackward0")(lambda o: {"self": Rule(local=1 / y), "other": Rule(local=-x / y ** 2, symbol="y")})
entry("DotBackward0")(lambda o: {"self": Rule(local=Var("tensor", "y")), "tensor": Rule(local=x, symbol="y")})


@entry("PowBackward1")
def _pow_tensor(o):
    a, b = Var("self", "a"), Var("exponent", "b")
    return {"self": Rule(local=b * a ** (b - 1), symbol="a"),
            "exponent": Rule(local=result("aᵇ") * ln(a), symbol="b")}


entry("PowBackward2")(lambda o: only(Rule(local=result("cˣ") * ln(Var("self", "c")), symbol="x"), "exponent"))


def _pick(first: str, relation: str) -> dict:
    a, b = Var("self", "x"), Var("other", "y")
    tie = "when x = y, each gets half"
    return {"self": Rule(local=indicator(a, relation, b) + indicator(a, "=", b) / 2, note=tie),
            "other": Rule(local=indicator(b, relation, a) + indicator(a, "=", b) / 2, note=tie, symbol="y")}


entry("MaximumBackward0")(lambda o: _pick("self", ">"))
entry("MinimumBackward0")(lambda o: _pick("self", "<"))


@entry("WhereBackward0")
def _where(o):
    c = Var("condition", "c")
    note = "c is the condition: 1 where it held, 0 elsewhere"
    return {"self": Rule(local=c, note=note), "other": Rule(local=1 - c, note=note, symbol="y")}


entry("MaskedFillBackward0")(lambda o: only(Rule(local=1 - Var("mask", "m"), note="m is the mask: filled elements get 0")))
entry("MaskedFillBackward1")(lambda o: {
    "self": Rule(local=1 - Var("mask", "m"), note="m is the mask: filled elements get 0"),
    "value": Rule(local=Var("mask", "m"), symbol="v", note="the value went to every masked element: their gradients add up")})
entry("FillBackward3")(lambda o: {"self": Rule(sent=Num(0), note=ZERO_NOTE),
                                  "value": Rule(local=Num(1), symbol="v", note="the value filled every element")})
entry("torch::autograd::CopyBackwards")(lambda o: {"self": Rule(sent=Num(0), note=ZERO_NOTE), "src": Rule(local=Num(1), symbol="s")})
entry("BernoulliBackward1")(lambda o: {"self": Rule(sent=Num(0), note=ZERO_NOTE), "p": Rule(sent=Num(0), symbol="p")})


# ------------------------------------------------------------------ matrices
@entry("MmBackward0", "BmmBackward0")
def _mm(o):
    W = Var("mat2", "W")
    return {"self": Rule(sent=g @ W.T), "mat2": Rule(sent=x.T @ g, symbol="W")}


@entry("AddmmBackward0", options=("alpha", "beta"))
def _addmm(o):
    x1, W = Var("mat1", "x"), Var("mat2", "W")
    alpha, beta = o["alpha"], o["beta"]
    scale = (lambda e: Num(alpha) * e) if alpha != 1 else (lambda e: e)
    return {"self": Rule(local=Num(beta), symbol="b"), "mat1": Rule(sent=scale(g @ W.T)),
            "mat2": Rule(sent=scale(x1.T @ g), symbol="W")}


@entry("MvBackward0")
def _mv(o):
    A, v = Var("self", "A"), Var("vec", "v")
    return {"self": Rule(sent=Call("outer", (g, v), "outer"), symbol="A"), "vec": Rule(sent=A.T @ g, symbol="v")}


register("outer")(np.multiply.outer)


# ------------------------------------------------------------------ reductions
def _dims(dim, ndim: int) -> tuple:
    if dim is None or dim == ():
        return tuple(range(ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(sorted(signed(d) % ndim for d in dims))


def signed(value: int) -> int:
    """A dim as given: PyTorch reads negative saved dims back as uint64."""
    return value - 2**64 if value >= 2**63 else value


def spread(expr: Expr, dims: tuple, keepdim: bool, sizes: tuple) -> Call:
    """``expr`` copied back along the reduced ``dims`` to ``sizes``."""
    shown = "copied along dim " + ", ".join(map(str, dims)) if len(dims) < len(sizes) else "copied to every element"
    return Call("spread", (expr,), "", (dims, keepdim, tuple(sizes)), shown)


@register("spread")
def _spread(value, dims, keepdim, sizes):
    value = np.asarray(value, dtype=np.float64)
    if not keepdim:
        for d in sorted(dims):
            value = np.expand_dims(value, d)
    return np.broadcast_to(value, sizes)


def _numel(sizes) -> int:
    return int(np.prod(sizes)) if len(sizes) else 1


entry("SumBackward0", options=("self_sym_sizes",))(
    lambda o: only(Rule(sent=spread(g, tuple(range(len(o["self_sym_sizes"]))), False, o["self_sym_sizes"]),
                        note="a sum passes its gradient unchanged to every element it added")))


@entry("SumBackward1", options=("dim", "keepdim", "self_sym_sizes"))
def _sum_dim(o):
    sizes = o["self_sym_sizes"]
    return only(Rule(sent=spread(g, _dims(o["dim"], len(sizes)), o["keepdim"], sizes),
                     note="a sum passes its gradient unchanged to every element it added"))


@entry("MeanBackward0", options=("self_sym_sizes",))
def _mean(o):
    sizes = o["self_sym_sizes"]
    n = _numel(sizes)
    return only(Rule(sent=spread(g, tuple(range(len(sizes))), False, sizes) / Num(n),
                     note=f"n = {n}: each element counts 1/n in the mean"))


@entry("MeanBackward1", options=("dim", "keepdim", "self_sym_sizes"))
def _mean_dim(o):
    sizes = o["self_sym_sizes"]
    dims = _dims(o["dim"], len(sizes))
    n = _numel([sizes[d] for d in dims])
    return only(Rule(sent=spread(g, dims, o["keepdim"], sizes) / Num(n),
                     note=f"n = {n}: each element counts 1/n in the mean"))


@entry("MaxBackward1")
def _max_all(o):
    hit = indicator(x, "=", result("max x"))
    return only(Rule(local=hit / Sum(hit, None, "i"),
                     note="only the largest element gets the gradient (shared evenly on a tie)"))


@entry("MaxBackward0", options=("dim", "keepdim", "self_sym_sizes"))
def _max_dim(o):
    sizes = o["self_sym_sizes"]
    dim = _dims(o["dim"], len(sizes))[0]
    return only(Rule(sent=Call("at_indices", (g, Var("indices", "i")), "", (dim, o["keepdim"], tuple(sizes)),
                               f"at the largest element along dim {dim}, 0 elsewhere")))


@register("at_indices")
def _at_indices(grad, indices, dim, keepdim, sizes):
    grad, indices = np.asarray(grad, np.float64), np.asarray(indices)
    if not keepdim:
        grad, indices = np.expand_dims(grad, dim), np.expand_dims(indices, dim)
    out = np.zeros(sizes)
    np.put_along_axis(out, indices.astype(np.int64), grad, dim)
    return out


@entry("LinalgVectorNormBackward0", options=("ord", "dim", "keepdim"), present=("self",))
def _norm(o):
    sizes = o["self"]
    dims = _dims(o["dim"], len(sizes))
    up = spread(g, dims, o["keepdim"], sizes)
    size = spread(result("‖x‖"), dims, o["keepdim"], sizes)
    p = o["ord"]
    if p == 0:
        return only(Rule(sent=Num(0), note="counting nonzero elements has gradient 0"))
    if p == 1:
        return only(Rule(sent=up * sgn(x)))
    if p == 2:
        return only(Rule(sent=up * x / size, note=f"‖{X}‖ = √(Σ {X}²), the output"))
    if p in (float("inf"), float("-inf")):
        hit = indicator(absolute(x), "=", size)
        return only(Rule(sent=up * sgn(x) * hit / spread(Sum(hit, dims, "i"), dims, True, sizes),
                         note="only the elements of largest magnitude get the gradient"))
    return only(Rule(sent=up * x * absolute(x) ** Num(p - 2) / size ** Num(p - 1)))


# ------------------------------------------------------------------ softmax
@entry("SoftmaxBackward0", options=("dim",), present=("result",))
def _softmax(o):
    axis = signed(o["dim"]) % max(len(o["result"]), 1)
    s = result("softmax(x)")
    return only(Rule(sent=s * (g - Sum(g * s, axis)), note=f"Σⱼ runs along dim {axis}"))


@entry("LogSoftmaxBackward0", options=("dim",), present=("result",))
def _log_softmax(o):
    axis = signed(o["dim"]) % max(len(o["result"]), 1)
    return only(Rule(sent=g - exp(result("z")) * Sum(g, axis),
                     note=f"{Z} is the output, log_softmax, so exp({Z}) is the softmax; Σⱼ runs along dim {axis}"))


# ------------------------------------------------------------------ losses
MEAN = 1


def _loss_scale(o, sizes, local: Expr) -> tuple:
    """``local`` with the optional weight and the ``/n`` of ``reduction='mean'``, and a note."""
    notes = []
    if o["weight"] is not None:
        local = Var("weight", "weight") * local
        notes.append("weight is the loss's weight argument")
    if o["reduction"] == MEAN:
        n = _numel(sizes)
        local = local / Num(n)
        notes.append(f"n = {n}: reduction='mean' divides by the number of elements")
    return local, "; ".join(notes) or None


@entry("BinaryCrossEntropyWithLogitsBackward0", options=("reduction",), present=("self", "weight", "pos_weight"))
def _bce_logits(o):
    p = Var("pos_weight", "pos_weight")
    if o["pos_weight"] is None:
        d_self, d_target = sigmoid(x) - t, -x
    else:
        d_self = (1 + (p - 1) * t) * sigmoid(x) - p * t
        d_target = ln(1 - sigmoid(x)) - p * ln(sigmoid(x))
    (d_self, note), (d_target, _) = _loss_scale(o, o["self"], d_self), _loss_scale(o, o["self"], d_target)
    return {"self": Rule(local=d_self, note=note), "target": Rule(local=d_target, note=note, symbol="t")}


@entry("BinaryCrossEntropyBackward0", options=("reduction",), present=("self", "weight"))
def _bce(o):
    (d_self, note), (d_target, _) = (_loss_scale(o, o["self"], (x - t) / (x * (1 - x))),
                                     _loss_scale(o, o["self"], ln(1 - x) - ln(x)))
    return {"self": Rule(local=d_self, note=note), "target": Rule(local=d_target, note=note, symbol="t")}


@entry("MseLossBackward0", options=("reduction",), present=("self", "target"))
def _mse(o):
    sizes = np.broadcast_shapes(tuple(o["self"]), tuple(o["target"]))
    o = dict(o, weight=None)
    (d_self, note), (d_target, _) = _loss_scale(o, sizes, 2 * (x - t)), _loss_scale(o, sizes, -2 * (x - t))
    return {"self": Rule(local=d_self, note=note), "target": Rule(local=d_target, note=note, symbol="t")}


@entry("NllLossBackward0", options=("reduction", "ignore_index"), present=("self", "weight"))
def _nll(o):
    sizes = o["self"]
    ignore = signed(o["ignore_index"])
    picked = Call("one_hot", (Var("target", "t"),), "onehot", (sizes, ignore))
    local = Call("per_row", (g,), "", (len(sizes),)) if o["reduction"] == 0 else g
    local = -local * picked
    notes = [f"onehot({T}) is 1 at each row's target class"]
    if o["weight"] is not None:
        local = local * Call("class_weight", (Var("weight", "weight"), Var("target", "t")), "", (len(sizes),),
                             "weight of each row's class")
    if o["reduction"] == MEAN:
        local = local / Var("total_weight", "W")
        notes.append("W: the rows counted (their weights summed)")
    return only(Rule(sent=local, note="; ".join(notes)))


@register("one_hot")
def _one_hot(target, sizes, ignore_index):
    target = np.asarray(target).astype(np.int64)
    classes = sizes[1] if len(sizes) > 1 else sizes[0]
    hit = (np.arange(classes) == target[..., None]) & (target[..., None] != ignore_index)
    if len(sizes) > 2:  # (N, C, d1, ...): the class axis is 1
        hit = np.moveaxis(hit, -1, 1)
    return hit.astype(np.float64)


@register("per_row")
def _per_row(grad, ndim):
    return np.expand_dims(np.asarray(grad, np.float64), 1 if ndim > 1 else 0)


@register("class_weight")
def _class_weight(weight, target, ndim):
    target = np.asarray(target).astype(np.int64)
    picked = np.asarray(weight, np.float64)[np.clip(target, 0, len(weight) - 1)]
    return np.expand_dims(picked, 1 if ndim > 1 else 0) if ndim > 1 else picked


# ------------------------------------------------------------------ moving elements (views, indexing, joining)
def _sizes_text(sizes) -> str:
    return "×".join(map(str, sizes)) if len(sizes) else "a scalar"


def _reshape(o):
    sizes = o["self_sym_sizes"]
    return only(Rule(sent=Call("reshape", (g,), "reshape", (tuple(sizes),), _sizes_text(sizes)),
                     note="the same elements, regrouped: the gradient is regrouped back"))


for _name in ("ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0", "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2",
              "SqueezeBackward4"):
    entry(_name, options=("self_sym_sizes",))(_reshape)
register("reshape")(lambda value, sizes: np.reshape(value, sizes))


entry("UnsqueezeBackward0", options=("dim",))(lambda o: only(Rule(
    sent=Call("squeeze", (g,), "squeeze", (signed(o["dim"]),), f"dim {signed(o['dim'])}"))))
register("squeeze")(lambda value, dim: np.squeeze(value, dim))
entry("TBackward0")(lambda o: only(Rule(sent=g.T)))
entry("TransposeBackward0", options=("dim0", "dim1"))(lambda o: only(Rule(
    sent=Call("swap", (g,), "transpose", (signed(o["dim0"]), signed(o["dim1"])),
              f"dims {signed(o['dim0'])}, {signed(o['dim1'])}"))))
register("swap")(lambda value, a, b: np.swapaxes(value, a, b))
entry("PermuteBackward0", options=("dims",))(lambda o: only(Rule(
    sent=Call("unpermute", (g,), "permute back", (tuple(signed(d) for d in o["dims"]),),
              "undoing " + str(tuple(signed(d) for d in o["dims"]))))))


@register("unpermute")
def _unpermute(value, dims):
    return np.transpose(value, np.argsort([d % len(dims) for d in dims]))


entry("ExpandBackward0")(lambda o: only(Rule(local=Num(1), note="expand copied the input: the copies' gradients add up")))


def _place(grad, shape, key) -> np.ndarray:
    out = np.zeros(shape)
    np.add.at(out, key, grad)
    return out


def _key_text(key, name: str = "x") -> str:
    def one(part):
        if isinstance(part, slice):
            return f"{'' if part.start is None else part.start}:{'' if part.stop is None else part.stop}" + (
                f":{part.step}" if part.step not in (None, 1) else "")
        return "..." if part is Ellipsis else str(part)
    return name + "[" + ", ".join(one(p) for p in key) + "]"


def _along(dim: int, part) -> tuple:
    """A numpy key applying ``part`` (an index, a slice) along ``dim``, counted from the end if negative."""
    return (slice(None),) * dim + (part,) if dim >= 0 else (Ellipsis, part) + (slice(None),) * (-1 - dim)


def _slice_of(o, length: int | None = None) -> slice:
    """The saved ``start:end:step`` as a slice; an end past ``length`` (or past any size) is left open."""
    end = None if o["end"] is None else signed(o["end"])
    if end is not None and end >= (length if length is not None else 2**62):
        end = length
    return slice(signed(o["start"] or 0), end, o["step"])


def _placed(key: tuple, sizes: tuple) -> Rule:
    return Rule(sent=Call("place", (g,), "", (tuple(sizes), key), f"in {_key_text(key)}, 0 elsewhere"),
                note="the gradient goes back to the elements that were read")


register("place")(lambda grad, sizes, key: _place(np.asarray(grad, np.float64), sizes, key))


@entry("SelectBackward0", options=("dim", "index", "self_sym_sizes"))
def _select(o):
    sizes, dim = o["self_sym_sizes"], signed(o["dim"]) % len(o["self_sym_sizes"])
    return only(_placed(_along(dim, signed(o["index"])), sizes))


@entry("SliceBackward0", options=("dim", "start", "end", "step", "self_sym_sizes"))
def _slice(o):
    sizes, dim = o["self_sym_sizes"], signed(o["dim"]) % len(o["self_sym_sizes"])
    return only(_placed(_along(dim, _slice_of(o, sizes[dim])), sizes))


@entry("IndexBackward0", options=("self_sym_sizes",))
def _index(o):
    sizes = o["self_sym_sizes"]
    return only(Rule(sent=Call("place_indices", (g, Var("indices", "i")), "", (tuple(sizes),),
                               "in x[indices], 0 elsewhere"),
                     note="the gradient goes back to the elements read (added up where an index repeats)"))


def _numpy_key(indices) -> tuple:
    return tuple(slice(None) if index is None else np.asarray(index) for index in indices)


register("place_indices")(lambda grad, indices, sizes: _place(np.asarray(grad, np.float64), sizes, _numpy_key(indices)))


@entry("IndexSelectBackward0", options=("dim", "self_sym_sizes"))
def _index_select(o):
    sizes, dim = o["self_sym_sizes"], signed(o["dim"]) % max(len(o["self_sym_sizes"]), 1)
    return only(Rule(sent=Call("place_along", (g, Var("index", "i")), "", (tuple(sizes), dim),
                               f"at the selected indices along dim {dim}, 0 elsewhere"),
                     note="rows picked twice add up their gradients"))


@register("place_along")
def _place_along(grad, index, sizes, dim):
    return _place(np.asarray(grad, np.float64), sizes, (slice(None),) * dim + (np.asarray(index).astype(np.int64),))


@entry("GatherBackward0", options=("dim",), present=("self",))
def _gather(o):
    sizes = o["self"]
    dim = signed(o["dim"]) % max(len(sizes), 1)
    return only(Rule(sent=Call("scatter_add", (g, Var("index", "i")), "", (tuple(sizes), dim),
                               f"added back where gather read along dim {dim}, 0 elsewhere")))


@register("scatter_add")
def _scatter_add(grad, index, sizes, dim):
    grad, index = np.asarray(grad, np.float64), np.asarray(index).astype(np.int64)
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return _place(grad, sizes, tuple(grids))


@entry("IndexPutBackward0", options=("accumulate",))
def _index_put(o):
    indices = Var("indices", "i")
    keep = Rule(local=Num(1)) if o["accumulate"] else Rule(
        sent=Call("zero_at", (g, indices), "", (), "with the overwritten elements set to 0"),
        note="the write replaced those elements: their old values get gradient 0")
    return {"self": keep, "values": Rule(sent=Call("read_at", (g, indices), "", (), "read at x[indices]"),
                                         symbol="v", note="each value gets the gradient of the element it was written to")}


@register("zero_at")
def _zero_at(grad, indices):
    out = np.array(grad, np.float64)
    out[_numpy_key(indices)] = 0
    return out


register("read_at")(lambda grad, indices: np.asarray(grad, np.float64)[_numpy_key(indices)])


@entry("RepeatBackward0", options=("repeats", "self_sym_sizes"))
def _repeat(o):
    return only(Rule(sent=Call("fold", (g,), "", (tuple(o["repeats"]), tuple(o["self_sym_sizes"])),
                               "summed over the copies"), note="repeat made copies of the input: their gradients add up"))


@register("fold")
def _fold(grad, repeats, sizes):
    grad = np.asarray(grad, np.float64)
    lead = len(repeats) - len(sizes)
    full = (1,) * lead + tuple(sizes)
    split = []
    for count, size in zip(repeats, full):
        split.extend((count, size))
    summed = grad.reshape(split).sum(axis=tuple(range(0, len(split), 2)))
    return summed.reshape(sizes)


@entry("CatBackward0", "StackBackward0", options=("dim",))
def _join(o):
    return only(Rule(sent=Call("piece", (g, hidden(INPUT_SHAPES), hidden(SLOT)), "", (signed(o["dim"]),),
                               "this input's part"), note="each input gets back the part of the gradient it filled"),
                "tensors")


@register("piece")
def _piece(grad, shapes, slot, dim):
    grad = np.asarray(grad, np.float64)
    stacked = all(len(s) < grad.ndim for s in shapes if s is not None)
    axis = dim % grad.ndim
    if stacked:
        return np.take(grad, slot, axis=axis)
    sizes = [0 if s is None or len(s) <= axis else s[axis] for s in shapes]
    start = sum(sizes[:slot])
    return np.take(grad, range(start, start + sizes[slot]), axis=axis)


# ------------------------------------------------------------------ pieces: one node, several outputs
@entry("SplitBackward0", options=("dim", "split_size", "self_sym_sizes"))
def _split(o):
    sizes, size = o["self_sym_sizes"], o["split_size"]
    axis = signed(o["dim"]) % len(sizes)
    length = sizes[axis]
    lengths = tuple(min(size, length - start) for start in range(0, length, size)) if length else (0,)
    return _joined(axis, lengths)


@entry("SplitWithSizesBackward0", options=("dim", "split_sizes", "self_sym_sizes"))
def _split_with_sizes(o):
    return _joined(signed(o["dim"]) % len(o["self_sym_sizes"]), tuple(o["split_sizes"]))


entry("UnbindBackward0", options=("dim",))(lambda o: _joined(signed(o["dim"]), None))


def _joined(axis: int, lengths: tuple | None) -> dict:
    """The pieces' gradients put back together: concatenated (a split's pieces, ``lengths`` long
    along ``axis``) or stacked (``lengths`` None: an unbind's slices)."""
    how, made = ("cat", "split cut x into the pieces") if lengths is not None else ("stack", "unbind took x apart into the slices")
    return only(Rule(sent=Call("join", (Grads(), hidden(INPUT_SHAPE)), how, (axis, lengths), f"along dim {axis}"),
                     note=f"{made} z₁, z₂, … along dim {axis}: each piece's gradient goes back where the piece came "
                          "from, and a piece no gradient reached counts as 0"))


@register("join")
def _join(grads, shape, axis, lengths):
    shape = tuple(shape)
    axis %= len(shape)

    def piece(grad, length):
        if grad is not None:
            return np.asarray(grad, np.float64)
        return np.zeros(shape[:axis] + (() if length is None else (length,)) + shape[axis + 1:])

    if lengths is None:
        return np.stack([piece(grad, None) for grad in grads], axis)
    return np.concatenate([piece(grad, length) for grad, length in zip(grads, lengths)], axis)


@entry("AsStridedBackward0", options=("size", "stride", "storage_offset"))
def _as_strided(o):
    geometry = (tuple(o["size"]), tuple(o["stride"]), o["storage_offset"])
    return only(Rule(sent=Call("from_strided", (g, hidden(INPUT_SHAPE)), "", geometry,
                               "at the view's elements, 0 elsewhere"),
                     note=f"the view read these elements of {X}'s memory: only they get a gradient"))


def _positions(sizes, strides, offset) -> np.ndarray:
    position = np.full(tuple(sizes), offset, dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(sizes, strides)):
        shape = [1] * len(sizes)
        shape[axis] = size
        position = position + (np.arange(size) * stride).reshape(shape)
    return position


@register("from_strided")
def _from_strided(grad, shape, sizes, strides, offset):
    memory = np.zeros(_numel(shape))
    np.add.at(memory, _positions(sizes, strides, offset), np.asarray(grad, np.float64))
    return memory.reshape(shape)


@entry("torch::autograd::CopySlices")
def _copy_slices(o):
    context = (g, hidden(NODE), hidden(SLOT), hidden(INPUT_SHAPES))
    return {"self": Rule(sent=Call("copy_slices", context, "", (), "outside the view; inside it, the in-place op's gradient"),
                         note="an in-place op changed a view of this tensor: its formula runs on the view's part"),
            "other": Rule(sent=Call("copy_slices", context, "", (), "the in-place op's gradient"),
                          symbol="y", note="the in-place op's other input")}


# ------------------------------------------------------------------ nn: activations, losses and layers
@entry("LeakyReluBackward0", options=("negative_slope",))
def _leaky_relu(o):
    return only(Rule(local=indicator(x, ">", 0) + Num(o["negative_slope"]) * indicator(x, "≤", 0),
                     note="the gradient passes where x is positive, scaled by the negative slope elsewhere"))


@entry("LeakyReluBackward1", options=("negative_slope",))
def _leaky_relu_in_place(o):
    y_ = result("y")
    return only(Rule(local=indicator(y_, ">", 0) + Num(o["negative_slope"]) * indicator(y_, "≤", 0),
                     note="in place: x was overwritten, so the output y decides (it is positive exactly where x was)"))


@entry("EluBackward1", options=("alpha", "scale", "input_scale"))
def _elu_in_place(o):
    return only(_elu_from_output(o["alpha"], o["scale"], o["input_scale"]))


entry("CeluBackward1", options=("alpha",))(lambda o: only(_elu_from_output(o["alpha"], 1, 1 / o["alpha"])))


def _elu_from_output(alpha: float, scale: float, input_scale: float) -> Rule:
    """In place, ELU's slope read from its output y: where ``y ≤ 0`` it is ``input_scale · (y + alpha · scale)``."""
    return Rule(local=_elu_slope_from_output(result("y"), alpha, scale, input_scale),
                note="in place: x was overwritten, so the output y decides (it is positive exactly where x was)")


def _elu_slope_from_output(y_: Expr, alpha: float, scale: float, input_scale: float) -> Expr:
    negative = y_ + Num(alpha * scale)
    if input_scale != 1:
        negative = Num(input_scale) * negative
    positive = indicator(y_, ">", 0) if scale == 1 else Num(scale) * indicator(y_, ">", 0)
    return positive + negative * indicator(y_, "≤", 0)


register("Phi")(lambda value: (1.0 + np.vectorize(math.erf, otypes=[np.float64])(np.asarray(value) / math.sqrt(2))) / 2)
register("phi")(lambda value: np.exp(-np.square(value) / 2) / math.sqrt(2 * math.pi))
GELU_C = 0.7978845608028654  # √(2/π)
GELU_K = 0.044715


@entry("GeluBackward0", options=("approximate",))
def _gelu(o):
    if o["approximate"] == "tanh":
        th = Call("tanh", (Num(GELU_C) * (x + Num(GELU_K) * x ** 3),), "tanh")
        local = (1 + th) / 2 + x / 2 * (1 - th ** 2) * Num(GELU_C) * (1 + Num(3 * GELU_K) * x ** 2)
        return only(Rule(local=local, note="the tanh approximation x·(1 + tanh(√(2/π)(x + 0.044715x³)))/2, "
                                           "differentiated by the product rule"))
    return only(Rule(local=Call("Phi", (x,), "Φ") + x * Call("phi", (x,), "φ"),
                     note="gelu(x) = x·Φ(x), Φ the standard normal CDF and φ its density"))


entry("SiluBackward0")(lambda o: only(Rule(local=sigmoid(x) * (1 + x * (1 - sigmoid(x))),
                                           note="silu(x) = x·σ(x), by the product rule")))


def _elu_slopes(value: Expr, alpha: float, scale: float, input_scale: float) -> tuple:
    """ELU's f'(x) and f''(x) for ``scale · (x or alpha(e^(input_scale·x) - 1))``, each constant shown only
    when it is not 1 (so plain ELU reads α·eˣ, SELU shows its scale, CELU its e^(x/α))."""
    exponent = exp(value if input_scale == 1 else Num(input_scale) * value)
    negative_coefficient, curve_coefficient = alpha * scale * input_scale, alpha * scale * input_scale ** 2

    def times(coefficient, expr):
        return expr if coefficient == 1 else Num(coefficient) * expr

    first = times(scale, indicator(value, ">", 0)) + times(negative_coefficient, exponent) * indicator(value, "≤", 0)
    return first, times(curve_coefficient, exponent) * indicator(value, "<", 0)


@entry("EluBackward0", options=("alpha", "scale", "input_scale"))
def _elu(o):
    first, _ = _elu_slopes(x, o["alpha"], o["scale"], o["input_scale"])
    return only(Rule(local=first))


entry("CeluBackward0", options=("alpha",))(lambda o: only(Rule(local=_elu_slopes(x, o["alpha"], 1, 1 / o["alpha"])[0])))


@entry("SoftplusBackward0", options=("beta", "threshold"))
def _softplus(o):
    beta, threshold = o["beta"], o["threshold"]
    bx = x if beta == 1 else Num(beta) * x
    return only(Rule(local=sigmoid(bx) * indicator(bx, "≤", Num(threshold)) + indicator(bx, ">", Num(threshold)),
                     note=f"softplus is linear (the input itself) where {'x' if beta == 1 else 'βx'} > {threshold}"))


entry("HardtanhBackward0", options=("min_val", "max_val"))(lambda o: only(Rule(
    local=Both(indicator(Num(o["min_val"]), "<", x), indicator(x, "<", Num(o["max_val"]))),
    note="the gradient passes only strictly inside the bounds")))


entry("LogSigmoidBackward0")(lambda o: only(Rule(local=1 - sigmoid(x), note="d/dx log σ(x) = 1 − σ(x)")))


@entry("MishBackward0")
def _mish(o):
    t_ = Call("tanh", (ln(1 + exp(x)),), "tanh")
    return only(Rule(local=t_ + x * sigmoid(x) * (1 - t_ ** 2), note="mish(x) = x·tanh(softplus(x)), softplus(x) = ln(1 + eˣ)"))


entry("HardswishBackward0")(lambda o: only(Rule(
    local=Both(indicator(Num(-3), "<", x), indicator(x, "<", Num(3))) * (x / 3 + Num(0.5)) + indicator(x, "≥", Num(3)),
    note="hardswish is 0 up to −3, x·(x + 3)/6 between −3 and 3, and x from 3 on")))
entry("HardsigmoidBackward0")(lambda o: only(Rule(
    local=Both(indicator(Num(-3), "<", x), indicator(x, "<", Num(3))) * Num(0.1666666716337204),
    note="hardsigmoid rises linearly from 0 to 1 between −3 and 3 (slope 1/6, which PyTorch rounds to float32), "
         "and is flat elsewhere")))


@entry("PreluKernelBackward0")
def _prelu(o):
    a = Var("weight", "a")
    return {"self": Rule(local=indicator(x, ">", 0) + a * indicator(x, "≤", 0),
                         note="a is the learned slope (one per channel, or one for all)"),
            "weight": Rule(local=x * indicator(x, "≤", 0), symbol="a",
                           note="each slope gets the gradients of the negative inputs it scaled, added up")}


register("clamp")(lambda value, low, high: np.clip(value, low, high))


def _distance_loss(o, bound: float, scaled: bool) -> dict:
    """SmoothL1 (``(x − t)/β`` clamped to ±1) and Huber (``x − t`` clamped to ±δ), both ways."""
    difference = (x - t) / Num(bound) if scaled else x - t
    low, high = (-1, 1) if scaled else (-bound, bound)
    slope = Call("clamp", (difference,), "clamp", (low, high), f"to [{low}, {high}]")
    o = dict(o, weight=None)
    (d_self, note), (d_target, _) = _loss_scale(o, o["self"], slope), _loss_scale(o, o["self"], Neg(slope))
    return {"self": Rule(local=d_self, note=note), "target": Rule(local=d_target, note=note, symbol="t")}


entry("SmoothL1LossBackward0", options=("reduction", "beta"), present=("self",))(
    lambda o: _distance_loss(o, o["beta"], scaled=True))
entry("HuberLossBackward0", options=("reduction", "delta"), present=("self",))(
    lambda o: _distance_loss(o, o["delta"], scaled=False))


@entry("EmbeddingBackward0", options=("padding_idx", "scale_grad_by_freq", "weight_sym_argsize_0"))
def _embedding(o):
    padding = signed(o["padding_idx"])
    rows, by_frequency = o["weight_sym_argsize_0"], o["scale_grad_by_freq"]
    notes = ["each row of the table gets the gradients of the outputs that read it, added up"]
    if padding >= 0:
        notes.append(f"row {padding} is padding: it gets none")
    if by_frequency:
        notes.append("scale_grad_by_freq: each is divided by how often the batch read that row")
    return only(Rule(sent=Call("rows_added", (g, Var("indices", "i")), "", (rows, padding, by_frequency),
                               "added into the rows i"), note="; ".join(notes), symbol="W"), "weight")


@register("rows_added")
def _rows_added(grad, indices, rows, padding, by_frequency):
    grad, flat = np.asarray(grad, np.float64), np.asarray(indices).astype(np.int64).reshape(-1)
    pieces = grad.reshape(-1, grad.shape[-1]) * (flat != padding)[:, None]
    if by_frequency:
        pieces = pieces / np.bincount(flat, minlength=rows)[flat][:, None]
    return _place(pieces, (rows, grad.shape[-1]), (flat,))


@entry("NativeLayerNormBackward0", options=("normalized_shape",), present=("weight", "bias"))
def _layer_norm(o):
    count = len(o["normalized_shape"])
    over = "the last dim" if count == 1 else f"the last {count} dims"
    mean, inv_std = Var("result1", "μ"), Var("result2", "1/σ")
    x_hat = (Var("input", "x") - mean) * inv_std
    scaled = g * Var("weight", "γ") if o["weight"] is not None else g

    def average(expr):
        return Call("mean_last", (expr,), "mean", (count,), f"over {over}")

    note = f"x̂ = (x − μ)/σ is the normalized input, μ and σ the mean and standard deviation over {over}"
    rules = {"input": Rule(sent=inv_std * (scaled - average(scaled) - x_hat * average(scaled * x_hat)), note=note)}
    batch = Call("sum_leading", (g * x_hat,), "Σ", (count,), "over the batch")
    rules["weight"] = Rule(sent=batch, note=note, symbol="γ")
    rules["bias"] = Rule(sent=Call("sum_leading", (g,), "Σ", (count,), "over the batch"), symbol="β",
                         note="the bias is added to every row: its gradient is the sum of theirs")
    return rules


@register("mean_last")
def _mean_last(value, count):
    value = np.asarray(value, np.float64)
    return value.mean(axis=tuple(range(value.ndim - count, value.ndim)), keepdims=True)


@register("sum_leading")
def _sum_leading(value, count):
    value = np.asarray(value, np.float64)
    return value.sum(axis=tuple(range(value.ndim - count)))


@entry("NativeBatchNormBackward0", options=("training", "eps"), present=("input", "weight", "bias"))
def _batch_norm(o):
    ndim = len(o["input"])

    def per_channel(name: str, shown: str) -> Call:
        return Call("per_channel", (Var(name, shown),), "", (ndim,), "")

    if o["training"]:
        mean, inv_std = per_channel("result1", "μ"), per_channel("result2", "1/σ")
        where = "μ and σ the batch's mean and standard deviation of each channel"
    else:
        mean = per_channel("running_mean", "μ")
        inv_std = 1 / sqrt(per_channel("running_var", "σ²") + Num(o["eps"]))
        where = "μ and σ² the running mean and variance (eval mode: fixed numbers)"
    x_hat = (Var("input", "x") - mean) * inv_std
    if o["training"]:
        def average(expr):
            return Call("mean_batch", (expr,), "mean", (), "over the batch")

        sent = inv_std * (g - average(g) - x_hat * average(g * x_hat))
    else:
        sent = g * inv_std
    if o["weight"] is not None:
        sent = sent * per_channel("weight", "γ")
    note = f"x̂ = (x − μ)/σ is the normalized input, {where}"
    return {"input": Rule(sent=sent, note=note),
            "weight": Rule(sent=Call("sum_batch", (g * x_hat,), "Σ", (), "over the batch"), note=note, symbol="γ"),
            "bias": Rule(sent=Call("sum_batch", (g,), "Σ", (), "over the batch"), symbol="β",
                         note="the bias is added to every element of its channel: its gradient is the sum of theirs")}


def _batch_axes(value) -> tuple:
    return (0,) + tuple(range(2, np.ndim(value)))


register("per_channel")(lambda value, ndim: np.asarray(value, np.float64).reshape((1, -1) + (1,) * (ndim - 2)))
register("mean_batch")(lambda value: np.asarray(value, np.float64).mean(axis=_batch_axes(value), keepdims=True))
register("sum_batch")(lambda value: np.asarray(value, np.float64).sum(axis=_batch_axes(value)))


@entry("NativeGroupNormBackward0", options=("group",), present=("input", "weight"))
def _group_norm(o):
    shape, group = tuple(o["input"]), o["group"]
    mean = Call("per_group", (Var("result1", "μ"),), "", (shape,), "")
    inv_std = Call("per_group", (Var("result2", "1/σ"),), "", (shape,), "")
    x_hat = (Var("input", "x") - mean) * inv_std
    scaled = g * Call("per_channel", (Var("weight", "γ"),), "", (len(shape),), "") if o["weight"] is not None else g

    def average(expr):
        return Call("mean_group", (expr,), "mean", (group,), "over each group")

    note = (f"x̂ = (x − μ)/σ is the normalized input, μ and σ the mean and standard deviation of each of the "
            f"{group} groups of channels of each sample")
    return {"input": Rule(sent=inv_std * (scaled - average(scaled) - x_hat * average(scaled * x_hat)), note=note),
            "weight": Rule(sent=Call("sum_batch", (g * x_hat,), "Σ", (), "over the batch and positions"), note=note,
                           symbol="γ"),
            "bias": Rule(sent=Call("sum_batch", (g,), "Σ", (), "over the batch and positions"), symbol="β",
                         note="the bias is added to every element of its channel: its gradient is the sum of theirs")}


@register("per_group")
def _per_group(value, shape):
    """A ``(N, group)`` statistic spread over the input's shape: each group's value on its channels."""
    value = np.asarray(value, np.float64)
    per_group = shape[1] // value.shape[1]
    return np.repeat(value, per_group, axis=1).reshape(tuple(shape[:2]) + (1,) * (len(shape) - 2))


@register("mean_group")
def _mean_group(value, group):
    value = np.asarray(value, np.float64)
    grouped = value.reshape(value.shape[0], group, -1)
    return np.broadcast_to(grouped.mean(axis=2, keepdims=True), grouped.shape).reshape(value.shape)


@entry("ConstantPadNdBackward0", options=("pad",))
def _constant_pad(o):
    pad = tuple(signed(p) for p in o["pad"])
    return only(Rule(sent=Call("unpad", (g,), "", (pad,), "with the padding cut off"),
                     note="the padding is constant: only the elements that came from x send a gradient back"))


@register("unpad")
def _unpad(grad, pad):
    from gradviz.ops.padding import padded_regions

    grad = np.asarray(grad, np.float64)
    shape = list(grad.shape)
    for position in range(len(pad) // 2):
        shape[len(shape) - 1 - position] -= pad[2 * position] + pad[2 * position + 1]
    _, out_key, in_key = padded_regions(tuple(shape), pad)
    result = np.zeros(shape)
    result[in_key] = grad[out_key]
    return result


# ------------------------------------------------------------------ ops a backward pass records (create_graph=True)
def recorded(computed: str) -> str:
    """The note of a node only a backward pass records: what its forward computed."""
    return (f"recorded by a backward pass (create_graph=True): this node computed {computed}; "
            "its own gradient is a second derivative")


g_bar = Var("grad_output", "ḡ")  # the gradient that arrived at the first-order op
y_out = Var("output", "y")


@entry("TanhBackwardBackward0")
def _tanh_twice(o):
    note = recorded(f"tanh's gradient ḡ·(1 − {Y}²), ḡ being the gradient that arrived at the tanh and {Y} = tanh x its output")
    return {"grad_output": Rule(local=1 - y_out ** 2, note=note, symbol="ḡ"),
            "output": Rule(local=Neg(Num(2)) * g_bar * y_out, note=note, symbol="y")}


@entry("SigmoidBackwardBackward0")
def _sigmoid_twice(o):
    note = recorded(f"sigmoid's gradient ḡ·{Y}·(1 − {Y}), ḡ being the gradient that arrived at the sigmoid and {Y} = σ(x) "
                    "its output")
    return {"grad_output": Rule(local=y_out * (1 - y_out), note=note, symbol="ḡ"),
            "output": Rule(local=g_bar * (1 - 2 * y_out), note=note, symbol="y")}


@entry("ThresholdBackwardBackward0", options=("threshold",))
def _threshold_twice(o):
    threshold = o["threshold"]
    if threshold == 0:  # relu's backward reads its output
        s, computed = Var("self", "y"), "relu's gradient ḡ·[y > 0], ḡ being the gradient that arrived at the relu and y its output"
    else:
        s, computed = x, f"threshold's gradient ḡ·[x > {threshold}], ḡ being the gradient that arrived and x the input"
    return {"grad_output": Rule(local=indicator(s, ">", Num(threshold)), note=recorded(computed), symbol="ḡ"),
            "self": Rule(local=Num(0), symbol=s.text, note=recorded(computed) + f"; {s.text} only decides where ḡ "
                         "passes: moving it a little changes nothing, so its gradient is 0")}


@entry("MseLossBackwardBackward0", options=("reduction",), present=("self", "target"))
def _mse_twice(o):
    sizes = np.broadcast_shapes(tuple(o["self"]), tuple(o["target"]))
    o = dict(o, weight=None)
    (d_grad, scale), (d_self, _), (d_target, _) = (_loss_scale(o, sizes, 2 * (x - t)), _loss_scale(o, sizes, 2 * g_bar),
                                                    _loss_scale(o, sizes, Neg(Num(2)) * g_bar))
    computed = "mse_loss's gradient " + ("2·(x − t)·ḡ/n" if o["reduction"] == MEAN else "2·(x − t)·ḡ")
    note = recorded(computed + ", ḡ being the gradient that arrived at the loss") + (f"; {scale}" if scale else "")
    return {"grad_output": Rule(local=d_grad, note=note, symbol="ḡ"), "self": Rule(local=d_self, note=note),
            "target": Rule(local=d_target, note=note, symbol="t")}


def _distance_loss_twice(o, bound: float, scaled: bool) -> dict:
    """The second-order node of Huber and smooth L1: ``ḡ`` times the slope in ``x − t``; its gradients are
    the slope (for ḡ) and ``ḡ`` times the curvature (for x; minus that for t)."""
    sizes = tuple(o["self"])
    first = _distance_loss(o, bound, scaled)["self"].local
    inside = Both(indicator(Num(-bound), "<", x - t), indicator(x - t, "<", Num(bound)))
    o = dict(o, weight=None)
    (d_self, scale), (d_target, _) = (_loss_scale(o, sizes, g_bar * inside / Num(bound) if scaled else g_bar * inside),
                                      _loss_scale(o, sizes, Neg(g_bar * inside / Num(bound) if scaled else g_bar * inside)))
    name = "smooth_l1_loss" if scaled else "huber_loss"
    note = recorded(f"{name}'s gradient, ḡ times its slope in x − t") + (f"; {scale}" if scale else "")
    return {"grad_output": Rule(local=first, note=note, symbol="ḡ"), "self": Rule(local=d_self, note=note),
            "target": Rule(local=d_target, note=note, symbol="t")}


entry("SmoothL1LossBackwardBackward0", options=("reduction", "beta"), present=("self", "target"))(
    lambda o: _distance_loss_twice(o, o["beta"], scaled=True))
entry("HuberLossBackwardBackward0", options=("reduction", "delta"), present=("self", "target"))(
    lambda o: _distance_loss_twice(o, o["delta"], scaled=False))


entry("DivBackward2", options=("rounding_mode",))(lambda o: {
    name: Rule(sent=Num(0), symbol=symbol, note=f"a.div(b, rounding_mode='{o['rounding_mode']}') is a step function: "
               "its gradient is 0 (a recorded backward of remainder or fmod makes it)")
    for name, symbol in (("self", "a"), ("other", "b"))})


def _read_back(key: tuple, computed: str) -> dict:
    return only(Rule(sent=Call("take", (g,), "", (key,), f"read at {_key_text(key, 'z')}"), symbol="ḡ",
                     note=recorded(computed) + ": reading those elements back is the gradient"), "grad_output")


register("take")(lambda grad, key: np.asarray(grad, np.float64)[key])
entry("SelectBackwardBackward0", options=("dim", "index"))(lambda o: _read_back(
    _along(signed(o["dim"]), signed(o["index"])), "the gradient of x[i]: ḡ put at index i in zeros the size of x"))
entry("SliceBackwardBackward0", options=("dim", "start", "end", "step"))(lambda o: _read_back(
    _along(signed(o["dim"]), _slice_of(o)), "the gradient of x[a:b]: ḡ put in the slice, in zeros the size of x"))


def _softmax_axis(o) -> int:
    return signed(o["dim"]) % max(len(o["output"]), 1)


@entry("SoftmaxBackwardDataBackward0", options=("dim",), present=("output",))
def _softmax_twice(o):
    axis = _softmax_axis(o)
    note = recorded(f"softmax's gradient {Y}·(ḡ − Σⱼ ḡ·{Y}), ḡ being the gradient that arrived at the softmax and "
                    f"{Y} its output; Σⱼ runs along dim {axis}")
    return {"grad_output": Rule(sent=y_out * (g - Sum(g * y_out, axis)), note=note, symbol="ḡ"),
            "output": Rule(sent=g * g_bar - g * Sum(g_bar * y_out, axis) - g_bar * Sum(g * y_out, axis),
                           note=note, symbol="y")}


@entry("LogSoftmaxBackwardDataBackward0", options=("dim",), present=("output",))
def _log_softmax_twice(o):
    axis = _softmax_axis(o)
    note = recorded(f"log_softmax's gradient ḡ − exp({Y})·Σⱼ ḡ, ḡ being the gradient that arrived at the log_softmax and "
                    f"{Y} its output (so exp({Y}) is the softmax); Σⱼ runs along dim {axis}")
    return {"grad_output": Rule(sent=g - Sum(g * exp(y_out), axis), note=note, symbol="ḡ"),
            "output": Rule(sent=Neg(g * exp(y_out) * Sum(g_bar, axis)), note=note, symbol="y")}


@entry("NllLossBackwardBackward0", options=("reduction", "ignore_index"), present=("weight",))
def _nll_twice(o):
    reduction, ignore = o["reduction"], signed(o["ignore_index"])
    target = Var("target", "t")
    args = (g, target) + ((Var("weight", "weight"),) if o["weight"] is not None else ())
    how = {0: "per row", 1: "averaged over the rows counted", 2: "summed"}[reduction]
    computed = "nll_loss's gradient: −ḡ at each row's target class (times its class weight)"
    return {"grad_output": Rule(sent=Call("nll", args, "nll_loss", (reduction, ignore), how), symbol="ḡ",
                                note=recorded(computed) + "; so the gradient for ḡ is nll_loss of the arriving "
                                "gradient: minus its value at each row's target class, " + how),
            "self": Rule(sent=Num(0), note=recorded(computed) + f"; its value does not depend on {X}'s values, so {X}'s gradient is 0")}


@register("nll")
def _nll_value(*values):
    """``nll_loss(grad, target, weight, reduction, ignore_index)`` in float64."""
    *arrays, reduction, ignore = values
    grad = np.asarray(arrays[0], np.float64)
    hit = _one_hot(arrays[1], grad.shape, ignore)
    weights = np.ones(grad.shape[1] if grad.ndim > 1 else grad.shape[0])
    if len(arrays) > 2:
        weights = np.asarray(arrays[2], np.float64)
    axis = 1 if grad.ndim > 1 else 0
    weighted = hit * weights.reshape((-1,) + (1,) * (grad.ndim - axis - 1))
    terms = -(grad * weighted).sum(axis=axis)
    if reduction == 0:
        return terms
    return terms.sum() / weighted.sum() if reduction == MEAN else terms.sum()


entry("SgnBackward0")(lambda o: only(Rule(sent=Num(0), note=recorded(f"sgn({X}), abs's derivative: −1, 0 or 1") +
                                           f"; sgn is flat wherever it is defined, so {X}'s gradient is 0")))


@entry("ScatterBackward0", options=("dim",), present=("index",))
def _scatter_twice(o):
    dim = signed(o["dim"]) % max(len(o["index"]), 1)
    computed = (f"max's gradient along dim {dim}: ḡ written at each row's largest element (the index i), "
                "in zeros the size of x")
    index = Var("index", "i")
    return {"self": Rule(sent=Call("zero_along", (g, index), "", (dim,), f"0 at i along dim {dim}"),
                         note=recorded(computed) + "; the zeros written over at i get no gradient"),
            "src": Rule(sent=Call("take_along", (g, index), "", (dim,), f"read at i along dim {dim}"), symbol="ḡ",
                        note=recorded(computed) + ": reading those elements back is the gradient")}


@entry("ScatterAddBackward0", options=("dim",), present=("index",))
def _scatter_add_twice(o):
    dim = signed(o["dim"]) % max(len(o["index"]), 1)
    computed = f"gather's gradient along dim {dim}: ḡ added where gather read (the index i), in zeros the size of x"
    return {"self": Rule(sent=g, note=recorded(computed) + "; the zeros it added into pass the gradient through"),
            "src": Rule(sent=Call("take_along", (g, Var("index", "i")), "", (dim,), f"read at i along dim {dim}"),
                        symbol="ḡ", note=recorded(computed) + ": reading those elements back (a gather) is the gradient")}


@register("take_along")
def _take_along(grad, index, dim):
    """``grad.gather(dim, index)``: ``index`` may be smaller than ``grad`` in the other dims."""
    index = np.asarray(index).astype(np.int64)
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return np.asarray(grad, np.float64)[tuple(grids)]


@register("zero_along")
def _zero_along(grad, index, dim):
    out = np.array(grad, np.float64)
    np.put_along_axis(out, np.asarray(index).astype(np.int64), 0.0, dim)
    return out


@entry("IndexAddBackward0", options=("dim", "source_dim", "alpha"))
def _index_add_twice(o):
    dim = signed(o["dim"]) % max(o["source_dim"], 1)
    computed = f"index_select's gradient along dim {dim}: ḡ's slices added at the index i, in zeros the size of x"
    taken = Call("take_slices", (g, Var("index", "i")), "", (dim,), f"slices i along dim {dim}")
    alpha = o["alpha"]
    return {"self": Rule(sent=g, note=recorded(computed) + "; the zeros it added into pass the gradient through"),
            "source": Rule(sent=taken if alpha in (None, 1) else Num(alpha) * taken,
                           symbol="ḡ", note=recorded(computed) + ": reading those slices back is the gradient")}


register("take_slices")(lambda grad, index, dim: np.take(np.asarray(grad, np.float64),
                                                         np.asarray(index).astype(np.int64), axis=dim))


@entry("IndexPutImplBackward0")
def _index_twice(o):
    computed = "x[indices]'s gradient: ḡ added where x was read (the indices i), in zeros the size of x"
    return {"self": Rule(sent=g, note=recorded(computed) + "; the zeros it added into pass the gradient through"),
            "values": Rule(sent=Call("read_at", (g, Var("indices", "i")), "", (), "read at x[i]"), symbol="ḡ",
                           note=recorded(computed) + ": reading those elements back is the gradient")}


@entry("MaskedSelectBackward0", present=("self",))
def _masked_select(o):
    return only(Rule(sent=Call("place_masked", (g, Var("mask", "m")), "", (tuple(o["self"]),),
                               "where m holds, 0 elsewhere"),
                     symbol="ḡ", note="each selected element gets its gradient back (a recorded backward makes "
                                      "this node too: masked_fill's gradient for its value sums it)"))


@entry("MaskedScatterBackward0", options=("source_sym_sizes",))
def _masked_scatter(o):
    computed = "masked_select's gradient: ḡ written where the mask m holds, into zeros"
    return {"self": Rule(sent=Call("zero_masked", (g, Var("mask", "m")), "", (), "0 where m holds"),
                         note=recorded(computed) + "; the zeros written over get no gradient"),
            "source": Rule(sent=Call("read_masked", (g, Var("mask", "m")), "", (tuple(o["source_sym_sizes"]),),
                                     "read where m holds"), symbol="ḡ",
                           note=recorded(computed) + ": reading those elements back is the gradient")}


@register("zero_masked")
def _zero_masked(grad, mask):
    grad = np.array(grad, np.float64)
    grad[np.broadcast_to(np.asarray(mask, bool), grad.shape)] = 0
    return grad


@register("read_masked")
def _read_masked(grad, mask, sizes):
    grad = np.asarray(grad, np.float64)
    picked = grad[np.broadcast_to(np.asarray(mask, bool), grad.shape)]
    return np.concatenate([picked, np.zeros(int(np.prod(sizes)) - picked.size)]).reshape(sizes)


@register("place_masked")
def _place_masked(grad, mask, sizes):
    """``grad`` put back where the mask (broadcast with the input) holds; summed over broadcast rows."""
    mask = np.asarray(mask, bool)
    shape = np.broadcast_shapes(sizes, mask.shape)
    out = np.zeros(shape)
    out[np.broadcast_to(mask, shape)] = np.asarray(grad, np.float64)
    lead = len(shape) - len(sizes)
    out = out.sum(axis=tuple(range(lead))) if lead else out
    stretched = tuple(i for i, size in enumerate(sizes) if size == 1 and out.shape[i] != 1)
    return out.sum(axis=stretched, keepdims=True) if stretched else out


@entry("BinaryCrossEntropyBackwardBackward0", options=("reduction",), present=("self", "weight"))
def _bce_twice(o):
    sizes = tuple(o["self"])
    spread = x * (1 - x)
    (d_grad, scale), (d_self, _), (d_target, _) = (
        _loss_scale(o, sizes, (x - t) / spread), _loss_scale(o, sizes, g_bar * (x ** 2 - 2 * x * t + t) / spread ** 2),
        _loss_scale(o, sizes, Neg(g_bar / spread)))
    note = recorded(f"binary_cross_entropy's gradient ḡ·({X} − {T})/({X}(1 − {X})), ḡ being the gradient that arrived at the "
                    "loss") + (f"; {scale}" if scale else "")
    return {"grad_output": Rule(local=d_grad, note=note, symbol="ḡ"), "self": Rule(local=d_self, note=note),
            "target": Rule(local=d_target, note=note, symbol="t")}


@entry("LeakyReluBackwardBackward0", options=("negative_slope",))
def _leaky_relu_twice(o):
    slope = o["negative_slope"]
    computed = f"leaky_relu's gradient ḡ·([x > 0] + {slope}·[x ≤ 0]), ḡ being the gradient that arrived and x the input"
    return {"grad_output": Rule(local=indicator(x, ">", 0) + Num(slope) * indicator(x, "≤", 0), symbol="ḡ",
                                note=recorded(computed)),
            "self": Rule(local=Num(0), note=recorded(computed) + "; x only decides which slope applies: its gradient is 0")}


@entry("HardtanhBackwardBackward0", options=("min_val", "max_val"))
def _hardtanh_twice(o):
    low, high = o["min_val"], o["max_val"]
    computed = f"hardtanh's gradient ḡ·[{low} < x < {high}], ḡ being the gradient that arrived and x the input"
    return {"grad_output": Rule(local=Both(indicator(Num(low), "<", x), indicator(x, "<", Num(high))), symbol="ḡ",
                                note=recorded(computed)),
            "self": Rule(local=Num(0), note=recorded(computed) + "; x only decides where ḡ passes: its gradient is 0")}


def _activation_twice(first: Expr, second: Expr, computed: str, input_name: str = "self") -> dict:
    """The second-order node of an elementwise activation f: ``grad_output · f'(x)``, whose gradients are
    ``f'(x)`` for ḡ and ``ḡ · f''(x)`` for x."""
    note = recorded(f"{computed}, ḡ being the gradient that arrived and x the input")
    return {"grad_output": Rule(local=first, symbol="ḡ", note=note), input_name: Rule(local=g_bar * second, note=note)}


@entry("GeluBackwardBackward0", options=("approximate",))
def _gelu_twice(o):
    if o["approximate"] == "tanh":
        c, k = Num(GELU_C), Num(GELU_K)
        u1 = c * (1 + Num(3 * GELU_K) * x ** 2)
        th = Call("tanh", (c * (x + k * x ** 3),), "tanh")
        first = (1 + th) / 2 + x / 2 * (1 - th ** 2) * u1
        second = (1 - th ** 2) * (u1 + x / 2 * (Num(6 * GELU_K * GELU_C) * x - 2 * th * u1 ** 2))
        return _activation_twice(first, second, "gelu's gradient ḡ·gelu′(x) (the tanh approximation)")
    density = Call("phi", (x,), "φ")
    return _activation_twice(Call("Phi", (x,), "Φ") + x * density, density * (2 - x ** 2),
                             "gelu's gradient ḡ·(Φ(x) + x·φ(x))")


x_or_result = Var("self_or_result", "x")  # elu's second-order node names its input so (it may be the output)


@entry("EluBackwardBackward0", options=("alpha", "scale", "input_scale", "is_result"))
def _elu_twice(o):
    if o["is_result"]:  # after an in-place elu: x_or_result is the output y, and PyTorch's formulas read it
        y_ = Var("self_or_result", "y")
        first = _elu_slope_from_output(y_, o["alpha"], o["scale"], o["input_scale"])
        second = indicator(y_, "<", 0) if o["input_scale"] == 1 else Num(o["input_scale"]) * indicator(y_, "<", 0)
        note = recorded("elu's gradient ḡ·elu′ read from its output y, ḡ being the gradient that arrived")
        return {"grad_output": Rule(local=first, symbol="ḡ", note=note),
                "self_or_result": Rule(local=g_bar * second, symbol="y", note=note)}
    first, second = _elu_slopes(x_or_result, o["alpha"], o["scale"], o["input_scale"])
    return _activation_twice(first, second, "elu's gradient ḡ·elu′(x)", "self_or_result")


@entry("SoftplusBackwardBackward0", options=("beta", "threshold"))
def _softplus_twice(o):
    beta, threshold = o["beta"], o["threshold"]
    bx = x if beta == 1 else Num(beta) * x
    first = sigmoid(bx) * indicator(bx, "≤", Num(threshold)) + indicator(bx, ">", Num(threshold))
    second = Num(beta) * sigmoid(bx) * (1 - sigmoid(bx)) * indicator(bx, "<", Num(threshold))
    return _activation_twice(first, second, "softplus's gradient ḡ·σ(βx)")


entry("LogSigmoidBackwardBackward0")(lambda o: _activation_twice(
    1 - sigmoid(x), (sigmoid(x) - 1) * sigmoid(x), "log σ's gradient ḡ·(1 − σ(x))"))
entry("HardswishBackwardBackward0")(lambda o: _activation_twice(
    Both(indicator(Num(-3), "<", x), indicator(x, "<", Num(3))) * (x / 3 + Num(0.5)) + indicator(x, "≥", Num(3)),
    Both(indicator(Num(-3), "<", x), indicator(x, "<", Num(3))) / 3, "hardswish's gradient ḡ·hardswish′(x)"))


@entry("torch::autograd::AccumulateGrad", "AccumulateGrad")
def _accumulate(o):
    return {"variable": Rule(sent=Var("grad_before", ".grad") + g,
                             note=".grad adds up: call .grad.zero_() (or optimizer.zero_grad()) between backward passes")}


# ------------------------------------------------------------------ the wider tensor API (api3): more elementwise math
register("sinh")(np.sinh)
register("cosh")(np.cosh)
register("floor")(np.floor)
register("trunc")(np.trunc)
register("finite")(lambda value: np.isfinite(value).astype(np.float64))
FLAT_NOTE = "the output is flat between the jumps, so the gradient is 0"
a_self, b_other = Var("self", "a"), Var("other", "b")

entry("Log1PBackward0")(lambda o: only(Rule(local=1 / (1 + x))))
entry("Expm1Backward0")(lambda o: only(Rule(local=result("eˣ − 1") + 1)))
entry("Log2Backward0")(lambda o: only(Rule(local=1 / (x * ln(Num(2))))))
entry("Log10Backward0")(lambda o: only(Rule(local=1 / (x * ln(Num(10))))))
entry("RsqrtBackward0")(lambda o: only(Rule(local=Num(-0.5) * result("1/√x") ** 3)))
entry("ErfBackward0")(lambda o: only(Rule(local=2 / sqrt(Num(np.pi)) * exp(-(x ** 2)))))
entry("AsinBackward0")(lambda o: only(Rule(local=1 / sqrt(1 - x ** 2))))
entry("AcosBackward0")(lambda o: only(Rule(local=-(1 / sqrt(1 - x ** 2)))))
entry("AtanBackward0")(lambda o: only(Rule(local=1 / (1 + x ** 2))))
entry("SinhBackward0")(lambda o: only(Rule(local=Call("cosh", (x,), "cosh"))))
entry("CoshBackward0")(lambda o: only(Rule(local=Call("sinh", (x,), "sinh"))))
entry("Atan2Backward0")(lambda o: {"self": Rule(local=b_other / (a_self ** 2 + b_other ** 2), symbol="a"),
                                   "other": Rule(local=-a_self / (a_self ** 2 + b_other ** 2), symbol="b")})
entry("FloorBackward0", "CeilBackward0", "TruncBackward0", "RoundBackward0", "RoundBackward1", "SignBackward0")(
    lambda o: only(Rule(sent=Num(0), note=FLAT_NOTE)))
entry("FracBackward0", "RemainderBackward0", "FmodBackward0")(lambda o: only(Rule(local=Num(1))))
entry("ClampMinBackward0", options=("min",))(lambda o: only(Rule(
    local=indicator(x, "≥", Num(o["min"])), note="the gradient passes only where the input was above the bound")))
entry("ClampMaxBackward0", options=("max",))(lambda o: only(Rule(
    local=indicator(x, "≤", Num(o["max"])), note="the gradient passes only where the input was below the bound")))
entry("RemainderBackward1")(lambda o: {"self": Rule(local=Num(1), symbol="a"), "other": Rule(
    local=-Call("floor", (a_self / b_other,), "floor"), symbol="b", note="a % b = a − ⌊a/b⌋·b")})
entry("FmodBackward1")(lambda o: {"self": Rule(local=Num(1), symbol="a"), "other": Rule(
    local=-Call("trunc", (a_self / b_other,), "trunc"), symbol="b", note="fmod(a, b) = a − trunc(a/b)·b")})
entry("LerpBackward0", options=("weight",))(lambda o: {"self": Rule(local=Num(1 - o["weight"])),
                                                       "end": Rule(local=Num(o["weight"]), symbol="e")})
entry("AddcmulBackward0", options=("value",))(lambda o: {
    "self": Rule(local=Num(1)), "tensor1": Rule(local=Num(o["value"]) * Var("tensor2", "b"), symbol="a"),
    "tensor2": Rule(local=Num(o["value"]) * Var("tensor1", "a"), symbol="b")})
entry("HypotBackward0")(lambda o: {"self": Rule(local=a_self / result("√(a²+b²)"), symbol="a"),
                                   "other": Rule(local=b_other / result("√(a²+b²)"), symbol="b")})
entry("NanToNumBackward0")(lambda o: only(Rule(local=Call("finite", (x,), "finite"),
                                               note="NaN and ±∞ were replaced by numbers: their gradient is 0")))


# ------------------------------------------------------------------ the wider tensor API (api3): reductions and layout
def _given_dims(dim, ndim: int) -> tuple:
    """Saved dims (a number, a tuple, or None / () for all) as sorted non-negative dims."""
    return _dims(dim if dim is None or isinstance(dim, (tuple, list)) else (dim,), ndim)


def _spread_all(value, o, sizes) -> Expr:
    return spread(value, _given_dims(o["dim"], len(sizes)), o["keepdim"], sizes)


@entry("MinBackward1")
def _min_all(o):
    hit = indicator(x, "=", result("min x"))
    return only(Rule(local=hit / Sum(hit, None, "i"),
                     note="only the smallest element gets the gradient (shared evenly on a tie)"))


@entry("MinBackward0", options=("dim", "keepdim", "self_sym_sizes"))
def _min_dim(o):
    sizes = o["self_sym_sizes"]
    dim = _dims(o["dim"], len(sizes))[0]
    return only(Rule(sent=Call("at_indices", (g, Var("indices", "i")), "", (dim, o["keepdim"], tuple(sizes)),
                               f"at the smallest element along dim {dim}, 0 elsewhere")))


def _extreme(word: str):
    def build(o):
        sizes = o["self"]
        dims = _given_dims(o["dim"], len(sizes))
        hit = indicator(x, "=", spread(result(f"{word} x"), dims, o["keepdim"], sizes))
        return only(Rule(sent=spread(g, dims, o["keepdim"], sizes) * hit / Sum(hit, dims, "i"),
                         note=f"only the {'largest' if word == 'max' else 'smallest'} elements get the gradient, "
                              "shared evenly on a tie"))

    return build


entry("AmaxBackward0", options=("dim", "keepdim"), present=("self",))(_extreme("max"))
entry("AminBackward0", options=("dim", "keepdim"), present=("self",))(_extreme("min"))


def _deviation(o, sizes):
    """``(x − x̄, n − c)``: the deviation from the mean over the reduced dims, and the degrees of freedom."""
    dims = _given_dims(o["dim"], len(sizes))
    n = _numel([sizes[d] for d in dims])
    correction = 1 if o["correction"] is None else o["correction"]
    return x - Sum(x, dims, "j") / Num(n), n - correction


@entry("VarBackward0", options=("correction", "dim", "keepdim"), present=("self",))
def _var(o):
    sizes = o["self"]
    deviation, dof = _deviation(o, sizes)
    return only(Rule(sent=_spread_all(g, o, sizes) * 2 * deviation / Num(dof),
                     note=f"x̄ is the mean; {dof} = n − correction"))


@entry("StdBackward0", options=("correction", "dim", "keepdim"), present=("self",))
def _std(o):
    sizes = o["self"]
    deviation, dof = _deviation(o, sizes)
    return only(Rule(sent=_spread_all(g, o, sizes) * deviation / (Num(dof) * _spread_all(result("σ"), o, sizes)),
                     note=f"σ is the output, x̄ the mean; {dof} = n − correction"))


entry("ProdBackward0")(lambda o: only(Rule(local=result("∏x") / x, note="∏x / x is the product of the other elements")))


@entry("ProdBackward1", options=("dim", "keepdim"), present=("self",))
def _prod_dim(o):
    sizes = o["self"]
    return only(Rule(sent=_spread_all(g, o, sizes) * _spread_all(result("∏x"), o, sizes) / x,
                     note="∏x / x is the product of the other elements"))


@entry("LogsumexpBackward0", options=("dim", "keepdim"), present=("self",))
def _logsumexp(o):
    sizes = o["self"]
    return only(Rule(sent=_spread_all(g, o, sizes) * exp(x - _spread_all(result("z"), o, sizes)),
                     note="e^(x − z) is the softmax of x along the reduced dims"))


@register("reverse_cumsum")
def _reverse_cumsum(grad, dim):
    grad = np.asarray(grad, dtype=np.float64)
    return np.flip(np.cumsum(np.flip(grad, dim), dim), dim) if grad.ndim else grad


@register("cumprod_grad")
def _cumprod_grad(grad, values, dim):
    grad, values = np.asarray(grad, dtype=np.float64), np.asarray(values, dtype=np.float64)
    if not values.ndim:
        return grad
    grad, values = np.moveaxis(grad, dim, -1), np.moveaxis(values, dim, -1)
    out = np.zeros_like(values)
    for i in range(values.shape[-1]):
        without = values.copy()
        without[..., i] = 1
        out[..., i] = (np.cumprod(without, -1) * grad)[..., i:].sum(-1)
    return np.moveaxis(out, -1, dim)


entry("CumsumBackward0", options=("dim",))(lambda o: only(Rule(sent=Call(
    "reverse_cumsum", (g,), "", (signed(o["dim"]),), f"summed from each position to the end along dim {signed(o['dim'])}"))))
entry("CumprodBackward0", options=("dim",))(lambda o: only(Rule(
    sent=Call("cumprod_grad", (g, x), "Σⱼ≥ᵢ", (signed(o["dim"]),), f"dim {signed(o['dim'])}"),
    note="each xᵢ reaches every later output zⱼ, through the product of the other factors up to j")))

register("flip")(lambda value, dims: np.flip(np.asarray(value, dtype=np.float64), dims))
register("roll")(lambda value, shifts, dims: np.roll(np.asarray(value, dtype=np.float64), shifts, dims or None))
register("tril")(lambda value, diagonal: np.tril(np.asarray(value, dtype=np.float64), diagonal))
register("triu")(lambda value, diagonal: np.triu(np.asarray(value, dtype=np.float64), diagonal))
register("diagonal")(lambda value, offset: np.diagonal(np.asarray(value, dtype=np.float64), offset, -2, -1))
register("eye")(lambda rows, cols: np.eye(rows, cols))


@register("onto_diagonal")
def _onto_diagonal(grad, sizes, offset, dim1, dim2):
    grad = np.asarray(grad, dtype=np.float64)
    out = np.zeros(sizes)
    moved = np.moveaxis(out, (dim1, dim2), (-2, -1))  # a view: writing it writes out
    for k in range(grad.shape[-1]):
        moved[..., max(-offset, 0) + k, max(offset, 0) + k] = grad[..., k]
    return out


entry("FlipBackward0", options=("dims",))(lambda o: only(Rule(sent=Call(
    "flip", (g,), "flip", (tuple(signed(d) for d in o["dims"]),), "dims " + ", ".join(str(signed(d)) for d in o["dims"])),
    note="the gradient flipped back")))


@entry("RollBackward0", options=("shifts", "dims"))
def _roll(o):
    shifts = tuple(-signed(s) for s in o["shifts"])
    dims = tuple(signed(d) for d in o["dims"])
    return only(Rule(sent=Call("roll", (g,), "roll", (shifts, dims), "by " + ", ".join(map(str, shifts))),
                     note="the gradient rolled back"))


entry("TrilBackward0", options=("diagonal",))(lambda o: only(Rule(sent=Call(
    "tril", (g,), "tril", (signed(o["diagonal"]),)), note="the lower triangle kept, 0 elsewhere")))
entry("TriuBackward0", options=("diagonal",))(lambda o: only(Rule(sent=Call(
    "triu", (g,), "triu", (signed(o["diagonal"]),)), note="the upper triangle kept, 0 elsewhere")))
entry("DiagEmbedBackward0", options=("offset",))(lambda o: only(Rule(sent=Call(
    "diagonal", (g,), "diag", (signed(o["offset"]),)), note="the gradient's diagonal")))


@entry("DiagonalBackward0", "DiagonalBackward0_copy", options=("offset", "dim1", "dim2", "self_sym_sizes"))
def _diagonal(o):
    sizes = tuple(o["self_sym_sizes"])
    dim1, dim2 = (signed(o[d]) % len(sizes) for d in ("dim1", "dim2"))
    return only(Rule(sent=Call("onto_diagonal", (g,), "", (sizes, signed(o["offset"]), dim1, dim2),
                               "on the diagonal, 0 elsewhere")))


@entry("TraceBackward0", options=("self_sym_sizes",))
def _trace(o):
    rows, cols = o["self_sym_sizes"]
    return only(Rule(sent=g * Call("eye", (), "I", (rows, cols), f"{rows}×{cols}"),
                     note="the trace adds the diagonal: each diagonal element gets the gradient, the rest 0"))


# -- the nodes a recorded backward of diagonal and trace makes (create_graph=True) -------------------------
register("diagonal_of")(lambda grad, offset, dim1, dim2: np.diagonal(np.asarray(grad, np.float64), offset, dim1, dim2))


@entry("DiagonalBackwardBackward0", options=("offset", "dim1", "dim2"))
def _diagonal_twice(o):
    offset, dim1, dim2 = (signed(o[name]) for name in ("offset", "dim1", "dim2"))
    computed = "the gradient of x.diagonal(): ḡ put on the diagonal of zeros the size of x"
    return only(Rule(sent=Call("diagonal_of", (g,), "diag", (offset, dim1, dim2), f"offset {offset}, dims {dim1}, {dim2}"),
                     symbol="ḡ", note=recorded(computed) + ": reading that diagonal back is the gradient"), "grad_output")


@register("zero_slices")
def _zero_slices(grad, index, dim):
    out = np.array(grad, dtype=np.float64)
    out[_along(dim, np.asarray(index).astype(np.int64))] = 0
    return out


register("sum_of_unique_slices")(lambda grad, index, dim: np.take(
    np.asarray(grad, np.float64), np.unique(np.asarray(index).astype(np.int64)), axis=dim).sum())


@entry("IndexFillBackward1", options=("dim",))
def _index_fill(o):
    dim = signed(o["dim"])
    return {"self": Rule(sent=Call("zero_slices", (g, Var("index", "i")), "", (dim,), f"0 at the indices i along dim {dim}"),
                        note="the filled places were overwritten: their gradient is 0"),
            "value": Rule(sent=Call("sum_of_unique_slices", (g, Var("index", "i")), "", (dim,),
                                    f"summed at the indices i along dim {dim}"), symbol="v",
                          note="the value went to every filled place: their gradients add up")}


@entry("SortBackward0", "SortBackward1", "TopkBackward0", options=("dim", "self_sym_sizes"))
def _sorted(o):
    sizes = tuple(o["self_sym_sizes"])
    dim = signed(o["dim"]) % max(len(sizes), 1)
    return only(Rule(sent=Call("at_indices", (g, Var("indices", "i")), "", (dim, True, sizes),
                               "back where each element came from, 0 elsewhere"),
                     note="i holds where each output element was in the input"))
entry("Exp2Backward0")(lambda o: only(Rule(local=result("2ˣ") * ln(Num(2)))))


@entry("ScatterBackward1", options=("dim",), present=("index",))
def _scatter_value(o):
    dim = signed(o["dim"]) % max(len(o["index"]), 1)
    return only(Rule(sent=Call("zero_along", (g, Var("index", "i")), "", (dim,), f"0 at i along dim {dim}"),
                     note="the number written over the places i: they get no gradient, the rest pass it through"))


# ------------------------------------------------------------------ more products, torch.linalg, scatter_reduce, padding, unfold
def _scale(factor, expr: Expr) -> Expr:
    return expr if factor == 1 else Num(factor) * expr


@entry("BaddbmmBackward0", "AddbmmBackward0", options=("alpha", "beta"))
def _baddbmm(o):
    A, B = Var("batch1", "A"), Var("batch2", "B")
    return {"self": Rule(local=Num(o["beta"]), symbol="c"),
            "batch1": Rule(sent=_scale(o["alpha"], g @ B.T), symbol="A",
                       note="for each batch entry b: the gradient of A_b B_b (addbmm: every b gets the same ∂L/∂z)"),
            "batch2": Rule(sent=_scale(o["alpha"], A.T @ g), symbol="B")}


@entry("AddmvBackward0", options=("alpha", "beta"))
def _addmv(o):
    M, v = Var("mat", "A"), Var("vec", "v")
    return {"self": Rule(local=Num(o["beta"]), symbol="c"),
            "mat": Rule(sent=_scale(o["alpha"], Call("outer", (g, v), "outer")), symbol="A"),
            "vec": Rule(sent=_scale(o["alpha"], M.T @ g), symbol="v")}


@entry("AddrBackward0", options=("alpha", "beta"))
def _addr(o):
    u, v = Var("vec1", "u"), Var("vec2", "v")
    return {"self": Rule(local=Num(o["beta"]), symbol="c"), "vec1": Rule(sent=_scale(o["alpha"], g @ v), symbol="u"),
            "vec2": Rule(sent=_scale(o["alpha"], g.T @ u), symbol="v")}


@register("cross")
def _cross(a, b, dim):
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    return np.cross(a, b, axis=dim)


@entry("LinalgCrossBackward0", options=("dim",))
def _linalg_cross(o):
    dim = signed(o["dim"])
    return {"self": Rule(sent=Call("cross", (y, g), "×", (dim,), f"along dim {dim}")),
            "other": Rule(sent=Call("cross", (g, x), "×", (dim,), f"along dim {dim}"), symbol="y")}


entry("VdotBackward0")(lambda o: {"self": Rule(local=y), "other": Rule(local=x, symbol="y")})


def _transposed_inverse(a):
    return np.swapaxes(np.linalg.inv(a), -1, -2)


register("inv_t")(_transposed_inverse)


@register("per_matrix")
def _per_matrix(scale, matrices):
    """A number per matrix of a batch, times that matrix."""
    return np.asarray(scale)[..., None, None] * matrices


A_MATRIX = Var("A", "A")


@entry("LinalgInvExBackward0")
def _inv(o):
    inverse_t = Var("inverse", "A⁻¹").T
    return {"A": Rule(sent=Neg(inverse_t @ g @ inverse_t), symbol="A", note="A⁻¹ is the output")}


@register("det_backward")
def _det_backward(grad, det, a):
    """``ḡ det(A) A⁻ᵀ``; 0 where det(A) is exactly 0 (what PyTorch's LU formula gives)."""
    singular = np.asarray(det) == 0
    safe = np.where(singular[..., None, None], np.eye(a.shape[-1]), a)
    return np.where(singular[..., None, None], 0.0, _per_matrix(np.asarray(grad) * det, _transposed_inverse(safe)))


entry("LinalgDetBackward0")(lambda o: {"A": Rule(
    sent=Call("det_backward", (g, result("det A"), A_MATRIX), "", (), "= ∂L/∂z · det(A) · A⁻ᵀ"), symbol="A",
    note="the cofactor matrix; a matrix with det(A) = 0 gets 0, as in PyTorch")})


@register("slogdet_backward")
def _slogdet_backward(grads, a):
    logabsdet = grads[1] if grads[1] is not None else np.zeros(a.shape[:-2])
    return _per_matrix(logabsdet, _transposed_inverse(a))


entry("LinalgSlogdetBackward0")(lambda o: {"A": Rule(
    sent=Call("slogdet_backward", (Grads(), A_MATRIX), "", (), "= ∂L/∂log|det A| · A⁻ᵀ"), symbol="A",
    note="the sign is constant where it is defined: only log|det A| sends a gradient")})


@register("cholesky_backward")
def _cholesky_backward(grad, factor, upper):
    if upper:
        factor, grad = np.swapaxes(factor, -1, -2), np.swapaxes(grad, -1, -2)
    phi = np.tril(np.swapaxes(factor, -1, -2) @ grad)
    phi = phi - 0.5 * phi * np.eye(factor.shape[-1])
    inverse = np.linalg.inv(factor)
    gradient = np.swapaxes(inverse, -1, -2) @ phi @ inverse
    return 0.5 * (gradient + np.swapaxes(gradient, -1, -2))


def _cholesky_entry(saved: str):
    def build(o):
        factor = Var(saved, "L")
        return {"self": Rule(sent=Call("cholesky_backward", (g, factor), "", (bool(o["upper"]),),
                                       "= L⁻ᵀ Φ(Lᵀ ∂L/∂L) L⁻¹, symmetrized"), symbol="A",
                             note="L is the output; Φ keeps the lower triangle and halves the diagonal")}

    return build


entry("LinalgCholeskyExBackward0", options=("upper",))(_cholesky_entry("L"))
entry("CholeskyBackward0", options=("upper",))(_cholesky_entry("result"))


@register("solve_backward")
def _solve_backward(grad, a, solution, slot):
    grad, solution = np.asarray(grad), np.asarray(solution)
    vector = grad.ndim == a.ndim - 1
    if vector:
        grad, solution = grad[..., None], solution[..., None]
    grad_b = np.linalg.solve(np.swapaxes(a, -1, -2), grad)
    if slot == 0:
        return -grad_b @ np.swapaxes(solution, -1, -2)
    return grad_b[..., 0] if vector else grad_b


entry("LinalgSolveExBackward0")(lambda o: {
    "A": Rule(sent=Call("solve_backward", (g, A_MATRIX, result("X")), "", (0,), "= −B̄ Xᵀ"), symbol="A",
              note="X is the output and B̄ = A⁻ᵀ ∂L/∂X, the gradient of B"),
    "B": Rule(sent=Call("solve_backward", (g, A_MATRIX, result("X")), "", (1,), "= A⁻ᵀ ∂L/∂X"), symbol="B")})


@register("solve_triangular_backward")
def _solve_triangular_backward(grad, a, solution, upper, left, unitriangular, slot):
    a = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        a = a - a * np.eye(a.shape[-1]) + np.eye(a.shape[-1])
    a_t = np.swapaxes(a, -1, -2)
    grad_b = np.linalg.solve(a_t, grad) if left else np.swapaxes(np.linalg.solve(a, np.swapaxes(grad, -1, -2)), -1, -2)
    if slot == 1:
        return grad_b
    x_t = np.swapaxes(solution, -1, -2)
    grad_a = -(grad_b @ x_t) if left else -(x_t @ grad_b)
    return np.triu(grad_a, int(unitriangular)) if upper else np.tril(grad_a, -int(unitriangular))


@entry("LinalgSolveTriangularBackward0", options=("upper", "left", "unitriangular"))
def _solve_triangular(o):
    upper, left, unitriangular = bool(o["upper"]), bool(o["left"]), bool(o["unitriangular"])
    side = "B̄ = A⁻ᵀ ∂L/∂X" if left else "B̄ = ∂L/∂X A⁻ᵀ"
    triangle = ("upper" if upper else "lower") + (" (diagonal left out)" if unitriangular else "")
    A = Var("self", "A")

    def rule(slot: int, shown: str, symbol: str) -> Rule:
        return Rule(sent=Call("solve_triangular_backward", (g, A, result("X")), "", (upper, left, unitriangular, slot),
                              shown), symbol=symbol,
                    note=f"X is the output, {side}; A's gradient keeps only its {triangle} triangle")

    return {"self": rule(0, "= −B̄ Xᵀ" if left else "= −Xᵀ B̄", "A"), "B": rule(1, "= " + side[4:], "B")}


@register("scatter_reduce_backward")
def _scatter_reduce_backward(grad, self, src, index, result_value, dim, reduce, include_self, slot):
    """PyTorch's scatter_reduce_backward, on numpy arrays."""
    index = np.asarray(index).astype(np.int64)
    src = np.asarray(src)[tuple(slice(0, size) for size in index.shape)]
    grid = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    key = tuple(grid)

    def gather(a):
        return np.asarray(a)[key]

    def scatter_add(base, values):
        out = np.array(base, dtype=np.float64)
        np.add.at(out, key, values)
        return out

    def reduced(base, values):
        out = np.array(base, dtype=np.float64)
        if not include_self:
            out[key] = 1.0
        np.multiply.at(out, key, values)
        return out

    if reduce == "sum":
        grad_self, grad_src = grad, gather(grad)
    elif reduce == "mean":
        counts = scatter_add(np.full(grad.shape, 1.0 if include_self else 0.0), np.ones(index.shape))
        counts[counts == 0] = 1
        grad_self, grad_src = grad / counts, gather(grad) / gather(counts)
    elif reduce == "prod":
        masked_self = np.where(self == 0, 1.0, self)
        grad_self = grad * reduced(masked_self, src) / masked_self
        zero = src == 0
        single = zero & (gather(scatter_add(np.zeros(self.shape), zero.astype(np.float64))) == 1)
        grad_src = np.where(single, gather(grad * reduced(self, np.where(single, 1.0, src))),
                            gather(grad * result_value) / np.where(zero, 1.0, src))
    else:
        hit_self = (self == result_value).astype(np.float64)
        hit_src = (src == gather(result_value)).astype(np.float64)
        shared = grad / scatter_add(hit_self, hit_src)
        grad_self, grad_src = hit_self * shared, hit_src * gather(shared)
    if slot == 0:
        grad_self = np.array(grad_self, dtype=np.float64)
        if not include_self:
            grad_self[key] = 0.0
        return grad_self
    return grad_src


@entry("ScatterReduceBackward0", options=("dim", "reduce", "include_self"))
def _scatter_reduce(o):
    dim, reduce, include_self = signed(o["dim"]), o["reduce"], bool(o["include_self"])
    index, src = hidden("index"), Var("src", "s")
    how = {"sum": "each place's gradient, to everything summed into it",
           "mean": "each place's gradient divided by how many values were averaged there",
           "prod": "each place's gradient times the product of the other values multiplied there",
           "amax": "each place's gradient, shared by the values equal to the maximum",
           "amin": "each place's gradient, shared by the values equal to the minimum"}[reduce]
    note = how + ("" if include_self else "; x's values at the places written were left out, so they get 0")

    def rule(slot: int, symbol: str) -> Rule:
        return Rule(sent=Call("scatter_reduce_backward", (g, x, src, index, result()), "",
                              (dim, reduce, include_self, slot), f"scatter_reduce '{reduce}' backward"),
                    note=note, symbol=symbol)

    return {"self": rule(0, "x"), "src": rule(1, "s")}


@register("index_pad_backward")
def _index_pad_backward(grad, input_shape, padding, mode):
    """Each output element's gradient added into the input element it read (reflect or replicate)."""
    grad = np.asarray(grad, dtype=np.float64)
    for position in reversed(range(len(padding) // 2)):
        axis = len(input_shape) - 1 - position
        size, before = input_shape[axis], padding[2 * position]
        out = np.zeros(grad.shape[:axis] + (size,) + grad.shape[axis + 1:])
        for place in range(grad.shape[axis]):
            source = place - before
            if mode == "reflect":
                source = -source if source < 0 else 2 * (size - 1) - source if source >= size else source
            else:
                source = min(max(source, 0), size - 1)
            out[(slice(None),) * axis + (source,)] += grad[(slice(None),) * axis + (place,)]
        grad = out
    return grad


def _index_pad(mode: str):
    def build(o):
        padding = tuple(signed(p) for p in o["padding"])
        word = "mirrored about the edge" if mode == "reflect" else "the edge element itself"
        return only(Rule(sent=Call("index_pad_backward", (g, hidden(INPUT_SHAPE)), "", (padding, mode),
                                   f"{mode} padding folded back"),
                         note=f"each padded element is a copy of an input element ({word}): its gradient is "
                              "added to that element's"))

    return build


for _padded in (1, 2, 3):
    entry(f"ReflectionPad{_padded}DBackward0", options=("padding",))(_index_pad("reflect"))
    entry(f"ReplicationPad{_padded}DBackward0", options=("padding",))(_index_pad("replicate"))


@register("unfold_backward")
def _unfold_backward(grad, sizes, dim, size, step):
    grad = np.asarray(grad, dtype=np.float64)
    out = np.zeros(tuple(sizes))
    if not sizes:
        return grad.reshape(())
    for window in range(grad.shape[dim]):
        for offset in range(size):
            piece = np.take(np.take(grad, window, axis=dim), offset, axis=-1)
            out[(slice(None),) * dim + (window * step + offset,)] += piece
    return out


@entry("UnfoldBackward0", options=("self_sym_sizes", "dimension", "size", "step"))
def _unfold(o):
    sizes = tuple(o["self_sym_sizes"])
    dim = signed(o["dimension"]) % max(len(sizes), 1)
    return only(Rule(sent=Call("unfold_backward", (g,), "", (sizes, dim, o["size"], o["step"]),
                               "windows added back where they were read"),
                     note="windows may overlap: an element gets the gradients of every window that holds it"))
# ------------------------------------------------------------------ order statistics, summaries, special math, lookups
def _picked_dim(o) -> int:
    sizes = o["self_sym_sizes"]
    return _dims(o["dim"], len(sizes))[0] if sizes else 0


@entry("KthvalueBackward0", "MedianBackward1", "NanmedianBackward1", "ModeBackward0",
       options=("dim", "keepdim", "self_sym_sizes"))
def _picked_along_dim(o):
    sizes, dim = tuple(o["self_sym_sizes"]), _picked_dim(o)
    return only(Rule(sent=Call("at_indices", (g, Var("indices", "i")), "", (dim, o["keepdim"], sizes),
                               f"at the picked element along dim {dim}, 0 elsewhere"),
                     note="i holds the index of the element each output picked"))


@entry("MedianBackward0", "NanmedianBackward0")
def _median_all(o):
    hit = indicator(x, "=", result("m"))
    return only(Rule(local=hit / Sum(hit, None, "i"), note="the elements equal to the median share its gradient"))


@register("add_at_indices")
def _add_at_indices(grad, indices, values, dim):
    grad, values = np.asarray(grad, np.float64), np.asarray(values)
    out = np.zeros(values.shape)
    if not values.ndim:
        return grad
    grid = list(np.indices(values.shape, sparse=True))
    grid[dim] = np.asarray(indices).astype(np.int64)
    np.add.at(out, tuple(grid), grad)
    return out


entry("CummaxBackward0", "CumminBackward0", options=("dim",))(lambda o: only(Rule(
    sent=Call("add_at_indices", (g, Var("indices", "i"), x), "", (signed(o["dim"]),),
              f"summed at the running index along dim {signed(o['dim'])}"),
    note="each output copied the element at index i: that element gets its gradient")))


@register("var_mean_grad")
def _var_mean_grad(grads, values, std, dims, keepdim, dof):
    values = np.asarray(values, np.float64)
    spread_back = _spread
    n = _numel([values.shape[d] for d in dims])
    out = np.zeros(values.shape)
    variance_grad, mean_grad = grads
    if variance_grad is not None:
        variance_grad = np.asarray(variance_grad, np.float64)
        if std is not None:  # std_mean: d std = d var / (2 std)
            std = np.asarray(std, np.float64)
            variance_grad = np.where(std == 0, 0.0, variance_grad / (2 * std))
        deviation = values - values.mean(axis=dims, keepdims=True)
        out = out + spread_back(variance_grad, dims, keepdim, values.shape) * 2 * deviation / dof
    if mean_grad is not None:
        out = out + spread_back(np.asarray(mean_grad, np.float64), dims, keepdim, values.shape) / n
    return out


def _var_mean_rule(o, std):
    sizes = o["self"]
    dims = _given_dims(o["dim"], len(sizes))
    dof = _numel([sizes[d] for d in dims]) - (1 if o["correction"] is None else o["correction"])
    arguments = (Grads(), x, std) if std is not None else (Grads(), x, Num(float("nan")))
    name = "σ" if std is not None else "v"
    return only(Rule(sent=Call("var_mean_grad" if std is not None else "var_only_grad", arguments, "",
                               (dims, o["keepdim"], dof), f"from ∂L/∂{name} and ∂L/∂m"),
                     note=f"the {'standard deviation' if std is not None else 'variance'} sends "
                          f"{'(x − x̄) / ((n − c) σ)' if std is not None else '2 (x − x̄) / (n − c)'}, the mean 1/n; "
                          f"n − c = {dof}"))


register("var_only_grad")(lambda grads, values, _unused, dims, keepdim, dof: _var_mean_grad(
    grads, values, None, dims, keepdim, dof))
entry("VarMeanBackward0", options=("correction", "dim", "keepdim"), present=("self",))(lambda o: _var_mean_rule(o, None))
entry("StdMeanBackward0", options=("correction", "dim", "keepdim"), present=("self",))(
    lambda o: _var_mean_rule(o, Var("result0", "σ")))


@register("aminmax_grad")
def _aminmax_grad(grads, values, low, high, dims, keepdim):
    values = np.asarray(values, np.float64)
    kept = tuple(1 if i in dims else size for i, size in enumerate(values.shape))
    out = np.zeros(values.shape)
    for grad, extreme in zip(grads, (low, high)):
        if grad is None:
            continue
        hit = (values == np.reshape(np.asarray(extreme, np.float64), kept)).astype(np.float64)
        out = out + np.reshape(np.asarray(grad, np.float64), kept) * hit / hit.sum(axis=dims, keepdims=True)
    return out


@entry("AminmaxBackward0", options=("dim", "keepdim"), present=("self",))
def _aminmax(o):
    sizes = o["self"]
    dims = tuple(range(len(sizes))) if o["dim"] is None else _dims(o["dim"], len(sizes))
    return only(Rule(sent=Call("aminmax_grad", (Grads(), x, Var("min", "m"), Var("max", "M")), "", (dims, o["keepdim"]),
                               "to the smallest and the largest elements"),
                     note="the min's gradient goes to the elements equal to it, the max's to those equal to it, "
                          "each shared evenly on a tie"))


register("not_nan")(lambda values: (~np.isnan(np.asarray(values, np.float64))).astype(np.float64))
entry("NansumBackward0", options=("dim", "keepdim"), present=("self",))(lambda o: only(Rule(
    sent=_spread_all(g, o, o["self"]) * Call("not_nan", (x,), "[x ≠ NaN]"), note="NaNs were left out of the sum")))


@register("logcumsumexp_grad")
def _logcumsumexp_grad(grad, values, result_values, dim):
    grad, values = np.asarray(grad, np.float64), np.asarray(values, np.float64)
    result_values = np.asarray(result_values, np.float64)
    if not values.ndim:
        return grad
    x_, z_, g_ = (np.moveaxis(a, dim, -1) for a in (values, result_values, grad))
    later = np.triu(np.ones((x_.shape[-1],) * 2, dtype=bool))
    with np.errstate(all="ignore"):
        weights = np.where(later, np.exp(x_[..., :, None] - z_[..., None, :]), 0.0)
    return np.moveaxis((np.nan_to_num(weights) * g_[..., None, :]).sum(-1), -1, dim)


entry("LogcumsumexpBackward0", options=("dim",))(lambda o: only(Rule(
    sent=Call("logcumsumexp_grad", (g, x, result("z")), "Σⱼ≥ᵢ", (signed(o["dim"]),), "∂L/∂zⱼ e^(xᵢ − zⱼ)"),
    note="each xᵢ reaches every later output zⱼ, with weight e^(xᵢ − zⱼ)")))
entry("LogaddexpBackward0")(lambda o: {"self": Rule(local=1 / (1 + exp(b_other - a_self)), symbol="a"),
                                       "other": Rule(local=1 / (1 + exp(a_self - b_other)), symbol="b")})
entry("Logaddexp2Backward0")(lambda o: {"self": Rule(local=1 / (1 + exp((b_other - a_self) * ln(Num(2)))), symbol="a"),
                                        "other": Rule(local=1 / (1 + exp((a_self - b_other) * ln(Num(2)))), symbol="b")})
entry("AddcdivBackward0", options=("value",))(lambda o: {
    "self": Rule(local=Num(1)), "tensor1": Rule(local=Num(o["value"]) / Var("tensor2", "b"), symbol="a"),
    "tensor2": Rule(local=-(Num(o["value"]) * Var("tensor1", "a") / Var("tensor2", "b") ** 2), symbol="b")})
register("xlogy_local")(lambda a, b: np.where((np.asarray(a) == 0) & (np.asarray(b) <= 0), 0.0,
                                             np.log(np.asarray(b, np.float64))))
entry("XlogyBackward0")(lambda o: {"self": Rule(local=Call("xlogy_local", (a_self, b_other), "ln b"), symbol="a",
                                                note="ln b, taken as 0 where a = 0 and b ≤ 0"),
                                   "other": Rule(local=a_self / b_other, symbol="b")})
register("xlog1py_local")(lambda a, b: np.where((np.asarray(a) == 0) & (np.asarray(b) <= -1), 0.0,
                                               np.log1p(np.asarray(b, np.float64))))
entry("SpecialXlog1PyBackward0")(lambda o: {"self": Rule(local=Call("xlog1py_local", (a_self, b_other), "ln(1 + b)"),
                                                         symbol="a", note="ln(1 + b), taken as 0 where a = 0 and b ≤ −1"),
                                            "other": Rule(local=a_self / (1 + b_other), symbol="b")})
entry("SpecialXlog1PyBackward1", options=("self",))(lambda o: only(Rule(local=Num(o["self"]) / (1 + b_other), symbol="b"),
                                                                     "other"))
entry("SpecialXlog1PyBackward2", options=("other",))(lambda o: only(Rule(
    local=Call("xlog1py_local", (x, Num(o["other"])), "ln(1 + b)"),
    note=f"ln(1 + {o['other']}), taken as 0 where x = 0 if that log has no value")))
entry("XlogyBackward1", options=("self",))(lambda o: only(Rule(local=Num(o["self"]) / b_other, symbol="b"), "other"))
entry("XlogyBackward2", options=("other",))(lambda o: only(Rule(
    local=Call("xlogy_local", (x, Num(o["other"])), "ln b"), note=f"ln {o['other']}, taken as 0 where x = 0 if it is not positive")))


@register("sinc_grad")
def _sinc_grad(values):
    values = np.asarray(values, np.float64)
    with np.errstate(all="ignore"):
        angle = np.pi * values
        return np.where(values == 0, 0.0, (np.cos(angle) * angle - np.sin(angle)) / (np.pi * values * values))


entry("SincBackward0")(lambda o: only(Rule(local=Call("sinc_grad", (x,), "sinc′"),
                                           note="sinc′(x) = (πx cos πx − sin πx) / (πx²), 0 at 0")))
entry("Deg2RadBackward0")(lambda o: only(Rule(local=Num(math.pi / 180))))
entry("Rad2DegBackward0")(lambda o: only(Rule(local=Num(180 / math.pi))))


@register("take_back")
def _take_back(grad, index, sizes):
    out = np.zeros(_numel(sizes))
    count = max(out.size, 1)
    np.add.at(out, np.asarray(index).astype(np.int64).reshape(-1) % count, np.asarray(grad, np.float64).reshape(-1))
    return out.reshape(sizes)


entry("TakeBackward0", present=("self",))(lambda o: only(Rule(
    sent=Call("take_back", (g, Var("index", "i")), "", (tuple(o["self"]),), "summed back at each flat index i"),
    note="take read x as one flat row: each read place gets the gradients of the outputs that read it")))
register("zero_at_flat")(lambda grad, index: _zero_at_flat(np.array(grad, np.float64), np.asarray(index)))


def _zero_at_flat(grad, index):
    flat = grad.reshape(-1)
    flat[index.astype(np.int64).reshape(-1) % max(flat.size, 1)] = 0
    return flat.reshape(grad.shape)


register("take_flat")(lambda grad, index, shape: np.asarray(grad, np.float64).reshape(-1)[
    np.asarray(index).astype(np.int64).reshape(-1) % max(int(np.size(grad)), 1)].reshape(shape))


@entry("PutBackward0", options=("accumulate",), present=("source",))
def _put(o):
    kept = Rule(sent=g, note="put added the source to these places: every place passes its gradient through") \
        if o["accumulate"] else Rule(sent=Call("zero_at_flat", (g, Var("index", "i")), "", (), "0 at the flat indices i"),
                                     note="the places put wrote over get no gradient")
    return {"self": kept,
            "source": Rule(sent=Call("take_flat", (g, Var("index", "i")), "", (tuple(o["source"]),),
                                     "read at the flat indices i"), symbol="s",
                           note="each source value gets the gradient of the place it was put")}


entry("IndexFillBackward0", options=("dim",))(lambda o: only(Rule(
    sent=Call("zero_slices", (g, Var("index", "i")), "", (signed(o["dim"]),), f"0 at the indices i along dim {signed(o['dim'])}"),
    note="the filled places were overwritten: their gradient is 0")))
register("slices_at")(lambda grad, index, dim, shape: np.reshape(np.take(
    np.asarray(grad, np.float64), np.asarray(index).astype(np.int64).reshape(-1), axis=dim), shape))


@entry("IndexCopyBackward0", options=("dim",), present=("source",))
def _index_copy(o):
    dim = signed(o["dim"])
    return {"self": Rule(sent=Call("zero_slices", (g, Var("index", "i")), "", (dim,), f"0 at the indices i along dim {dim}"),
                         note="the copied-over places get no gradient"),
            "source": Rule(sent=Call("slices_at", (g, Var("index", "i")), "", (dim, tuple(o["source"])),
                                     f"the slices at i along dim {dim}"), symbol="s",
                           note="each source slice gets the gradient of the place it was copied to")}


def _special(name: str):
    def function(values):
        from gradviz.ops import special_math

        kernel = getattr(special_math, name)
        flat = np.asarray(values, np.float64)
        return np.array([kernel(v) for v in flat.reshape(-1).tolist()]).reshape(flat.shape)

    return function


register("erfinv")(_special("_erfinv"))
register("digamma")(_special("_digamma"))
register("trigamma")(_special("_trigamma"))
entry("ErfcBackward0")(lambda o: only(Rule(local=-(2 / sqrt(Num(np.pi)) * exp(-(x ** 2))))))
entry("ErfinvBackward0")(lambda o: only(Rule(local=sqrt(Num(np.pi)) / 2 * exp(Call("erfinv", (x,), "erfinv") ** 2))))
entry("LgammaBackward0")(lambda o: only(Rule(local=Call("digamma", (x,), "ψ"), note="ψ is digamma, the derivative of ln Γ")))
entry("DigammaBackward0")(lambda o: only(Rule(local=Call("trigamma", (x,), "ψ′"), note="ψ′ is trigamma, the derivative of ψ")))
entry("SpecialEntrBackward0")(lambda o: only(Rule(local=-(1 + ln(x)))))
register("i1")(_special("_i1"))
entry("I0Backward0")(lambda o: only(Rule(local=Call("i1", (x,), "I₁"), note="I₁ is the derivative of the Bessel function I₀")))
# ------------------------------------------------------------------ clamp with tensor bounds (ops/clamping.py)
_LOW, _HIGH = Var("min", "l"), Var("max", "h")
_NO_BOUND = "no bound was given here: nothing to send"


@entry("ClampBackward0", present=("min", "max"))
def _clamp_tensors(o):
    low, high = o["min"] is not None, o["max"] is not None
    if low and high:
        keep = Both(indicator(_LOW, "≤", x), indicator(x, "≤", _HIGH))
        to_low = Both(indicator(x, "<", _LOW), indicator(_LOW, "<", _HIGH))
        to_high = 1 - indicator(x, "≤", _HIGH) * indicator(_LOW, "≤", _HIGH)
    else:
        keep = indicator(_LOW, "≤", x) if low else indicator(x, "≤", _HIGH)
        to_low, to_high = indicator(x, "<", _LOW), indicator(x, ">", _HIGH)
    note = "the input keeps the gradient inside [l, h] (ties too); a bound gets it where it was the answer"
    return {"self": Rule(local=keep, note=note),
            "min": Rule(local=to_low, symbol="l", note=note) if low else Rule(sent=Num(0), symbol="l", note=_NO_BOUND),
            "max": Rule(local=to_high, symbol="h", note=note) if high else Rule(sent=Num(0), symbol="h", note=_NO_BOUND)}


entry("ClampMinBackward1")(lambda o: {
    "self": Rule(local=indicator(x, "≥", _LOW), note="the gradient passes where the input was at or above the bound"),
    "min": Rule(local=indicator(x, "<", _LOW), symbol="l", note="the bound gets the gradient where it was the answer")})
entry("ClampMaxBackward1")(lambda o: {
    "self": Rule(local=indicator(x, "≤", _HIGH), note="the gradient passes where the input was at or below the bound"),
    "max": Rule(local=indicator(x, ">", _HIGH), symbol="h", note="the bound gets the gradient where it was the answer")})


# ------------------------------------------------------------------ PReLU's kernel backward, recorded
def _summed_to(value, shape):
    """``value`` summed over the dims broadcasting added or stretched, down to ``shape``."""
    value = np.asarray(value, np.float64)
    shape = tuple(shape)
    lead = value.ndim - len(shape)
    value = value.sum(axis=tuple(range(lead))) if lead > 0 else value
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and value.shape[i] != 1)
    return value.sum(axis=stretched, keepdims=True) if stretched else value


@register("prelu_twice_grad_output")
def _prelu_twice_grad_output(grads, x, a, shape):
    first, second = (list(grads) + [None, None])[:2]
    x = np.asarray(x, np.float64)
    other = (0 if first is None else np.asarray(first) * a) + (0 if second is None else np.asarray(second) * x)
    return _summed_to(np.where(x >= 0, 0 if first is None else first, other), shape)


@register("prelu_twice_input")
def _prelu_twice_input(grads, grad_output, x, shape, slot):
    grad = (list(grads) + [None, None])[slot]
    x = np.asarray(x, np.float64)
    local = np.zeros_like(x) if grad is None else np.where(x >= 0, 0.0, np.asarray(grad_output) * grad)
    return _summed_to(local, shape)


@entry("PreluKernelBackwardBackward0")
def _prelu_twice(o):
    a, g_out, z = Var("weight", "a"), Var("grad_output", "ȳ"), Grads()
    note = recorded("PReLU's two gradients, ∂L/∂z₁ = ȳ·prelu′(x) for x and ∂L/∂z₂ = ȳ·x·[x < 0] for a, "
                    "ȳ being the gradient that arrived")
    return {"grad_output": Rule(sent=Call("prelu_twice_grad_output", (z, x, a, hidden(INPUT_SHAPE)), "",
                                          shown="∂L/∂z₁·([x ≥ 0] + a·[x < 0]) + ∂L/∂z₂·x·[x < 0]"), symbol="ȳ", note=note),
            "self": Rule(sent=Call("prelu_twice_input", (z, g_out, x, hidden(INPUT_SHAPE)), "", (1,),
                                   "ȳ·∂L/∂z₂·[x < 0]"), note=note),
            "weight": Rule(sent=Call("prelu_twice_input", (z, g_out, x, hidden(INPUT_SHAPE)), "", (0,),
                                     "ȳ·∂L/∂z₁·[x < 0], summed to a's shape"), symbol="a", note=note)}


# ------------------------------------------------------------------ embedding's backward, recorded
@register("rows_at")
def _rows_at(grad, indices, padding):
    indices = np.asarray(indices).astype(np.int64)
    picked = np.take(np.asarray(grad, np.float64), indices.reshape(-1), axis=0)
    if padding >= 0:
        picked[indices.reshape(-1) == padding] = 0
    return picked.reshape(indices.shape + (-1,))


@entry("EmbeddingDenseBackwardBackward0", options=("padding_idx",))
def _embedding_twice(o):
    padding = signed(o["padding_idx"])
    note = recorded("the table's gradient, each row of ȳ added into the row it read")
    if padding >= 0:
        note += f"; row {padding} is padding: its reads get 0"
    return only(Rule(sent=Call("rows_at", (g, Var("indices", "i")), "", (padding,), "the rows read at i"),
                     symbol="ȳ", note=note), "grad_output")


# ------------------------------------------------------------------ masked_scatter_backward, recorded
@register("scatter_masked_into_zeros")
def _scatter_masked_into_zeros(grad, mask, shape):
    out = np.zeros(tuple(shape))
    picked = np.broadcast_to(np.asarray(mask, bool), out.shape)
    out[picked] = np.asarray(grad, np.float64).reshape(-1)[:int(picked.sum())]
    return out


entry("MaskedScatterBackwardBackward0")(lambda o: only(Rule(
    sent=Call("scatter_masked_into_zeros", (g, Var("mask", "m"), hidden(INPUT_SHAPE)), "", (), "written where m holds"),
    symbol="ḡ", note=recorded("masked_scatter's gradient for its source: ḡ read where the mask m holds")),
    "grad_output"))


# ------------------------------------------------------------------ the SVD family: svd, eigh, qr, pinv
# Their formulas are the nodes' own backward code, run on numpy arrays (one source for both).
def _numpy_backend():
    from gradviz.backends import numpy_backend

    return numpy_backend


def _arrays(*values):
    return [None if v is None else np.asarray(v, np.float64) for v in values]


@register("svd_backward")
def _svd_backward(grads, U, S, Vh):
    from gradviz.ops.decompositions import _svd_backward as backward

    return backward(_numpy_backend(), *_arrays(*grads[:3], U, S, Vh))


entry("LinalgSvdBackward0")(lambda o: {"A": Rule(
    sent=Call("svd_backward", (Grads(), Var("U", "U"), Var("S", "S"), Var("Vh", "Vᵀ")), "", (),
              "= U [(skew(Uᵀ ∂L/∂U) S + S skew(Vᵀ ∂L/∂V)) / E + diag(∂L/∂S)] Vᵀ"), symbol="A",
    note="A = U diag(S) Vᵀ; skew(X) = X − Xᵀ and E_ij = s_j² − s_i²: repeated singular values make the "
         "vectors' part undefined")})


@register("eigh_backward")
def _eigh_backward(grads, values, vectors):
    from gradviz.ops.decompositions import _eigh_backward as backward

    return backward(_numpy_backend(), *_arrays(*grads[:2], values, vectors))


entry("LinalgEighBackward0")(lambda o: {"A": Rule(
    sent=Call("eigh_backward", (Grads(), Var("eigenvalues", "λ"), Var("eigenvectors", "V")), "", (),
              "= V [½ skew(Vᵀ ∂L/∂V) / E + diag(∂L/∂λ)] Vᵀ"), symbol="A",
    note="A = V diag(λ) Vᵀ read from one triangle; E_ij = λ_j − λ_i: repeated eigenvalues make the vectors' "
         "part undefined")})


@register("qr_backward")
def _qr_backward(grads, Q, R):
    from gradviz.ops.decompositions import _qr_square_backward

    backend = _numpy_backend()
    grad_Q, grad_R = _arrays(*grads[:2])
    Q, R = _arrays(Q, R)
    grad_Q = np.zeros_like(Q) if grad_Q is None else grad_Q
    grad_R = np.zeros_like(R) if grad_R is None else grad_R
    m = Q.shape[-2]
    if m >= R.shape[-1]:
        return _qr_square_backward(backend, grad_Q, grad_R, Q, R)
    U, V, grad_U, grad_V = R[..., :m], R[..., m:], grad_R[..., :m], grad_R[..., m:]
    grad_X = _qr_square_backward(backend, grad_Q + (Q @ V) @ np.swapaxes(grad_V, -1, -2), grad_U, Q, U)
    return np.concatenate((grad_X, Q @ grad_V), -1)


entry("LinalgQrBackward0", options=("mode",))(lambda o: {"A": Rule(
    sent=Call("qr_backward", (Grads(), Var("Q", "Q"), Var("R", "R")), "", (),
              "= (∂L/∂Q + Q copyltu(M)) R⁻ᵀ, M = R (∂L/∂R)ᵀ − (∂L/∂Q)ᵀ Q"), symbol="A",
    note="A = Q R; copyltu mirrors M's strict lower triangle above the diagonal (a wide A: its square left block "
         "takes this formula, the rest Q ∂L/∂R₂)")})


@register("pinv_backward")
def _pinv_backward(grad, pinv, a):
    from gradviz.ops.decompositions import _pinv_backward as backward

    return backward(_numpy_backend(), *_arrays(grad, pinv, a))


entry("LinalgPinvBackward0")(lambda o: {"self": Rule(
    sent=Call("pinv_backward", (g, result("A⁺"), x), "", (), "= PyTorch's pinv_backward(∂L/∂A⁺, A⁺, A)"),
    symbol="A", note="A⁺ is the output; the formula projects onto A's row and column spaces")})


# ------------------------------------------------------------------ torch.special's extras
def _special_with(name: str, *fixed):
    """The special_math kernel ``name`` on each element, with ``fixed`` leading arguments (polygamma's n)."""
    def function(values, *arguments):
        from gradviz.ops import special_math

        kernel = getattr(special_math, name)
        flat = np.asarray(values, np.float64)
        extra = fixed + tuple(arguments)
        return np.array([kernel(*extra, v) for v in flat.reshape(-1).tolist()]).reshape(flat.shape)

    return function


register("i0")(_special("_i0"))
register("i0e")(_special("_i0e"))
register("i1e")(_special("_i1e"))


@register("polygamma")
def _polygamma_values(values, n):
    return _special_with("_polygamma")(values, int(n))


@register("multigammaln_grad")
def _multigammaln_grad(values, p):
    from gradviz.ops.special_math import _multigammaln

    derivative = _multigammaln(int(p))[1]
    flat = np.asarray(values, np.float64)
    return np.array([derivative(v) for v in flat.reshape(-1).tolist()]).reshape(flat.shape)


@register("tiny_safe_bessel")
def _tiny_safe_bessel(x_values, result_values, scaled):
    """PyTorch's i1_backward / i1e_backward local derivative: ½ where |x| ≤ eps."""
    x_values, result_values = np.asarray(x_values, np.float64), np.asarray(result_values, np.float64)
    tiny = np.abs(x_values) <= 2.0 ** -52
    safe = np.where(tiny, 2.0 ** -52, x_values)
    if scaled:
        local = _special("_i0e")(safe) - result_values * (np.sign(safe) + 1 / safe)
    else:
        local = _special("_i0")(safe) - result_values / safe
    return np.where(tiny, 0.5, local)


@register("zeta")
def _zeta_values(s, q):
    from gradviz.ops.special_math import _zeta

    s, q = np.broadcast_arrays(np.asarray(s, np.float64), np.asarray(q, np.float64))
    return np.array([_zeta(u, v) for u, v in zip(s.reshape(-1).tolist(), q.reshape(-1).tolist())]).reshape(s.shape)


register("lgamma_of")(_special_with("_lgamma"))

entry("SpecialI0EBackward0")(lambda o: only(Rule(local=Call("i1e", (x,), "i1e") - sgn(x) * result("y"),
                                                  note="y = e^(−|x|) I₀(x) is the output; i1e(x) = e^(−|x|) I₁(x)")))
entry("SpecialI1Backward0")(lambda o: only(Rule(local=Call("tiny_safe_bessel", (x, result("y")), "", (False,),
                                                           "I₀(x) − y / x"), note="y = I₁(x) is the output; ½ at x = 0")))
entry("SpecialI1EBackward0")(lambda o: only(Rule(local=Call("tiny_safe_bessel", (x, result("y")), "", (True,),
                                                            "i0e(x) − y (sgn x + 1/x)"),
                                                 note="y = e^(−|x|) I₁(x) is the output; ½ at x = 0")))
entry("PolygammaBackward0", options=("n",))(lambda o: only(Rule(
    local=Call("polygamma", (x,), f"ψ⁽{int(o['n']) + 1}⁾", (int(o["n"]) + 1,)),
    note=f"the derivative of ψ⁽{int(o['n'])}⁾ is the next polygamma function")))
entry("MvlgammaBackward0", options=("p",))(lambda o: only(Rule(
    local=Call("multigammaln_grad", (x,), "Σⱼ ψ(x − j/2)", (int(o["p"]),)),
    note=f"the sum over j = 0 … {int(o['p']) - 1} of digamma")))
entry("SpecialNdtriBackward0")(lambda o: only(Rule(local=sqrt(Num(2 * np.pi)) * exp(result("y") ** 2 / 2),
                                                   note="y = Φ⁻¹(x) is the output: 1 / φ(y)")))
entry("SpecialLogNdtrBackward0")(lambda o: only(Rule(local=exp(-(result("y") + x ** 2 / 2)) / sqrt(Num(2 * np.pi)),
                                                     note="y = ln Φ(x) is the output: φ(x) / Φ(x)")))
entry("SpecialErfcxBackward0")(lambda o: only(Rule(local=2 * x * result("y") - 2 / sqrt(Num(np.pi)),
                                                   note="y = e^(x²) erfc(x) is the output")))
_NOT_IMPLEMENTED = "PyTorch has no derivative here: backward raises if this input needs one"
entry("SpecialZetaBackward0")(lambda o: {
    "self": Rule(local=Num(float("nan")), symbol="s", note=_NOT_IMPLEMENTED),
    "other": Rule(local=-a_self * Call("zeta", (a_self + 1, b_other), "ζ"), symbol="q",
                  note="∂ζ(s, q)/∂q = −s ζ(s + 1, q)")})
entry("SpecialZetaBackward1", options=("self",))(lambda o: only(Rule(
    local=-Num(o["self"]) * Call("zeta", (Num(o["self"]) + 1, b_other), "ζ"), symbol="q",
    note="∂ζ(s, q)/∂q = −s ζ(s + 1, q)"), "other"))


def _igamma_entry(sign: float):
    def build(o):
        local = exp((a_self - 1) * ln(b_other) - b_other - Call("lgamma_of", (a_self,), "ln Γ"))
        return {"self": Rule(local=Num(float("nan")), symbol="a", note=_NOT_IMPLEMENTED),
                "other": Rule(local=local if sign > 0 else -local, symbol="x",
                              note="the integrand of the incomplete gamma function, over Γ(a)")}

    return build


entry("IgammaBackward0")(_igamma_entry(1.0))
entry("IgammacBackward0")(_igamma_entry(-1.0))


# ------------------------------------------------------------------ torch.normal with tensors of means / stds
entry("NormalBackward1")(lambda o: only(Rule(sent=Num(0), note=ZERO_NOTE), "mean"))
entry("NormalBackward2")(lambda o: only(Rule(sent=Num(0), note=ZERO_NOTE), "std"))
entry("NormalBackward3")(lambda o: {"mean": Rule(sent=Num(0), note=ZERO_NOTE, symbol="μ"),
                                    "std": Rule(sent=Num(0), note=ZERO_NOTE, symbol="σ")})


# ------------------------------------------------------------------ least squares
@register("lstsq_backward")
def _lstsq_backward(grads, a, b, solution, slot):
    from gradviz.ops.decompositions import _lstsq_backward as backward

    a, b, solution = _arrays(a, b, solution)
    grad_solution, grad_residuals = _arrays(*(tuple(grads) + (None,))[:2])
    sent = backward(_numpy_backend(), grad_solution, grad_residuals, a, b, solution, b.ndim == a.ndim - 1,
                    (slot == 0, slot == 1))[slot]
    return np.zeros_like(a if slot == 0 else b) if sent is None else sent


entry("LinalgLstsqBackward0")(lambda o: {
    "self": Rule(sent=Call("lstsq_backward", (Grads(), x, Var("b", "B"), Var("solution", "X")), "", (0,),
                           "= pinv_backward(∂L/∂X Bᵀ, A⁺, A) + 2 R diag(∂L/∂r) Xᵀ"),
                 symbol="A", note="X = A⁺ B is the solution, r = ‖A X − B‖² per column the residuals, R = A X − B"),
    "b": Rule(sent=Call("lstsq_backward", (Grads(), x, Var("b", "B"), Var("solution", "X")), "", (1,),
                        "= A⁺ᵀ ∂L/∂X − 2 R diag(∂L/∂r)"), symbol="B",
              note="X = A⁺ B is the solution, R = A X − B")})


# ------------------------------------------------------------------ the matrix exponential
@register("matrix_exp_backward")
def _matrix_exp_backward(grad, a):
    from gradviz.ops.decompositions import _matrix_exp_backward as backward

    a, grad = _arrays(a, grad)
    return backward(_numpy_backend(), a, grad)


entry("LinalgMatrixExpBackward0")(lambda o: {"self": Rule(
    sent=Call("matrix_exp_backward", (g, x), "", (), "= top-right block of exp([[Aᵀ, ∂L/∂Y], [0, Aᵀ]])"), symbol="A",
    note="the derivative of exp at A, applied to ∂L/∂Y, read from the exponential of a 2n × 2n block matrix")})


# ------------------------------------------------------------------ recorded first derivatives run as nodes of their own
# (the norms' three-output backward, reflect/replicate padding's backward, unfold's backward): the formula is the
# node's own backward, run on the arriving gradients
@register("recorded_node_gradient")
def _recorded_node_gradient(grads, node, slot):
    grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    backend = node.backend
    saved = node._packed or {}
    like = next((entry for entry in (getattr(node, "primals", None) or ()) if entry is not None), None)
    if like is None:
        like = next((entry.unpack() for entry in saved.values() if hasattr(entry, "unpack")), None)
    from gradviz import _dtype

    arriving = next(np.asarray(grad) for grad in grads if grad is not None)
    dtype = _dtype.from_any(like.dtype if like is not None else arriving.dtype)
    device = backend.device_of(like) if like is not None else None
    arrays = [None if g is None else backend.array(np.asarray(g), dtype, device) for g in grads]
    results = node.backward(*arrays)
    results = results if type(results) is tuple else (results,)
    sent = results[slot]
    return None if sent is None else np.asarray(backend.to_numpy(sent), np.float64)


def _recorded_rules(inputs: tuple, computed: str, outputs: int, constant: tuple = ()) -> dict:
    arriving = Grads() if outputs > 1 else g
    rules = {}
    for slot, name in enumerate(inputs):
        if name in constant:
            rules[name] = Rule(sent=Num(0), symbol=name, note=recorded(computed) + f"; PyTorch sends no gradient to {name}")
            continue
        rules[name] = Rule(sent=Call("recorded_node_gradient", (arriving, hidden(NODE)), "", (slot,),
                                     "this node's own derivative (a second derivative of the forward op)"),
                           symbol=name, note=recorded(computed))
    return rules


entry("NativeLayerNormBackwardBackward0")(lambda o: _recorded_rules(
    ("grad_out", "input", "mean", "rstd", "weight", "bias"), "layer norm's gradients for its input, weight and bias",
    3, ("mean", "rstd", "bias")))
entry("NativeBatchNormBackwardBackward0")(lambda o: _recorded_rules(
    ("grad_out", "input", "weight", "save_mean", "save_invstd"), "batch norm's gradients for its input, weight and bias",
    3, ("save_mean", "save_invstd")))
entry(*(f"{kind}Pad{dims}DBackwardBackward0" for kind in ("Reflection", "Replication") for dims in (1, 2, 3)))(
    lambda o: _recorded_rules(("grad_output", "self"), "padding's gradient, each output's gradient added into the "
                              "element it read", 1, ("self",)))
entry("UnfoldBackwardBackward0")(lambda o: _recorded_rules(
    ("grad_in",), "unfold's gradient, each window's gradient added into the elements it covers", 1))


# -- more two-operand math, distances, diag_embed, glu, the shrinks, threshold, rrelu ------------------------------
register("fmax_keeps")(lambda a, b: (np.greater_equal(a, b) | np.isnan(b)).astype(np.float64))
register("fmin_keeps")(lambda a, b: (np.less_equal(a, b) | np.isnan(b)).astype(np.float64))
for _name, _keeps, _relation in (("FmaxBackward0", "fmax_keeps", "≥"), ("FminBackward0", "fmin_keeps", "≤")):
    entry(_name)(lambda o, keeps=_keeps, relation=_relation: {
        "self": Rule(local=Call(keeps, (x, y), f"[x {relation} y or y = NaN]"),
                     note="the NaN-ignoring pick: a tie, or a NaN y, sends the whole gradient to x"),
        "other": Rule(local=1 - Call(keeps, (x, y), f"[x {relation} y or y = NaN]"), symbol="y")})
register("copysign_local")(lambda a, z: np.where(np.asarray(a) == 0, 0.0, np.asarray(z, np.float64)
                                                 / np.where(np.asarray(a) == 0, 1.0, np.asarray(a, np.float64))))
entry("CopysignBackward0")(lambda o: {
    "self": Rule(local=Call("copysign_local", (x, result("z")), "z / x"), note="±1: the sign kept or flipped (0 at x = 0)"),
    "other": Rule(sent=Num(0), symbol="y", note="the sign's source has gradient 0")})
entry("CopysignBackward1")(lambda o: only(Rule(local=Call("copysign_local", (x, result("z")), "z / x"),
                                               note="±1: the sign kept or flipped (0 at x = 0)")))
entry("NextafterBackward0")(lambda o: {"self": Rule(local=Num(1), note="one ulp away: PyTorch passes the gradient through"),
                                       "other": Rule(sent=Num(0), symbol="y", note="the direction has gradient 0")})


@register("dist_grad")
def _dist_grad(grad, first, second, norm, p, negate):
    from gradviz.ops.binary_math import _p_norm_grad

    difference = np.asarray(first, np.float64) - np.asarray(second, np.float64)
    local = _p_norm_grad(difference.reshape(-1), np.asarray(norm, np.float64), p, True).reshape(difference.shape)
    return (-1 if negate else 1) * np.asarray(grad, np.float64) * local


@entry("DistBackward0", options=("p",))
def _dist(o):
    p = o["p"]
    shown = f"p = {p}"
    return {"self": Rule(sent=Call("dist_grad", (g, x, y, result("d")), "∂‖x − y‖/∂x", (p, False), shown),
                         note="the p-norm's gradient of the difference"),
            "other": Rule(sent=Call("dist_grad", (g, x, y, result("d")), "−∂‖x − y‖/∂x", (p, True), shown), symbol="y",
                          note="the same, negated")}


@register("cdist_grad")
def _cdist_grad(grad, first, second, distances, p, which):
    from gradviz.ops.binary_math import _p_norm_grad

    a, b = np.asarray(first, np.float64), np.asarray(second, np.float64)
    difference = a[..., :, None, :] - b[..., None, :, :]
    weights = np.asarray(grad, np.float64)[..., None]
    norm = np.asarray(distances, np.float64)[..., None]
    if which == 0:
        return (_p_norm_grad(difference, norm, p, False) * weights).sum(axis=-2)
    return (_p_norm_grad(-difference, norm, p, False) * weights).sum(axis=-3)


@entry("CdistBackward0", options=("p",))
def _cdist(o):
    p = o["p"]
    pair = (g, Var("x1", "x"), Var("x2", "y"), result("d"))
    return {"x1": Rule(sent=Call("cdist_grad", pair, "Σⱼ ∂dᵢⱼ/∂xᵢ", (p, 0), f"p = {p}"),
                       note="each row xᵢ gets the gradient of its distance to every row yⱼ"),
            "x2": Rule(sent=Call("cdist_grad", pair, "Σᵢ ∂dᵢⱼ/∂yⱼ", (p, 1), f"p = {p}"), symbol="y",
                       note="each row yⱼ gets the gradient of its distance to every row xᵢ")}


entry("NormBackward1", options=("p", "dim", "keepdim"), present=("self",))(lambda o: _norm({**o, "ord": o["p"]}))


@entry("DiagEmbedBackward0", options=("offset", "dim1", "dim2"))
def _diag_embed(o):
    offset, dim1, dim2 = (signed(o[name]) for name in ("offset", "dim1", "dim2"))
    return only(Rule(sent=Call("diagonal_of", (g,), "diag", (offset, dim1, dim2), f"offset {offset}, dims {dim1}, {dim2}"),
                     note="x was laid along a diagonal of zeros: reading that diagonal back is the gradient"))


@register("glu_grad")
def _glu_grad(grad, values, dim):
    values, grad = np.asarray(values, np.float64), np.asarray(grad, np.float64)
    first, second = np.split(values, 2, axis=dim)
    gate = 1 / (1 + np.exp(-second))
    return np.concatenate((grad * gate, grad * first * gate * (1 - gate)), axis=dim)


entry("GluBackward0", options=("dim",))(lambda o: only(Rule(
    sent=Call("glu_grad", (g, x), "glu′", (signed(o["dim"]),), f"dim {signed(o['dim'])}"),
    note="glu(x) = a·σ(b) for the halves a, b of x: a gets ḡ·σ(b), b gets ḡ·a·σ(b)(1 − σ(b))")))
for _name in ("SoftshrinkBackward0", "HardshrinkBackward0"):
    entry(_name, options=("lambd",))(lambda o: only(Rule(
        local=1 - Both(indicator(Num(-o["lambd"]), "≤", x), indicator(x, "≤", Num(o["lambd"]))),
        note="the gradient passes outside [−λ, λ]")))
entry("ThresholdBackward0", options=("threshold",))(lambda o: only(Rule(
    local=indicator(x, ">", Num(o["threshold"])), note="the gradient passes where x is above the threshold")))
entry("ThresholdBackward1", options=("threshold",))(lambda o: only(Rule(
    local=indicator(x, ">", Num(o["threshold"])),
    note="in place: x is a copy of the input kept before it was overwritten")))


@entry("RreluWithNoiseBackward0", options=("lower", "upper", "training"))
def _rrelu(o):
    if o["training"] and o["upper"] != o["lower"]:
        return only(Rule(local=Var("noise", "r"), note="r: 1 where x > 0, else the slope drawn for that element"))
    slope = (o["lower"] + o["upper"]) / 2
    return only(Rule(local=indicator(x, ">", 0) + Num(slope) * indicator(x, "≤", 0),
                     note="evaluation: the mean slope (lower + upper)/2 below 0"))


@entry("RreluWithNoiseBackward1", options=("lower", "upper", "training"))
def _rrelu_in_place(o):
    if o["training"] and o["upper"] != o["lower"]:
        return only(Rule(local=Var("noise", "r"), note="r: 1 where x > 0, else the slope drawn for that element"))
    slope = (o["lower"] + o["upper"]) / 2
    y_ = result("y")
    return only(Rule(local=indicator(y_, ">", 0) + Num(slope) * indicator(y_, "≤", 0),
                     note="in place: x was overwritten, so the output y decides (it is positive exactly where x was)"))


# ------------------------------------------------------------------ the tensor API sweep: tan, rsub(tensor), random draws
entry("TanBackward0")(lambda o: only(Rule(local=1 + result("tan x") ** 2)))
entry("RsubBackward0", options=("alpha",))(lambda o: {"self": Rule(local=_alpha(o, -1)),
                                                      "other": Rule(local=Num(1), symbol="y")})
entry("ExponentialBackward0", "PoissonBackward0")(lambda o: only(Rule(sent=Num(0), note=ZERO_NOTE)))
entry("AsinhBackward0")(lambda o: only(Rule(local=1 / sqrt(x ** 2 + 1))))
entry("AcoshBackward0")(lambda o: only(Rule(local=1 / sqrt(x ** 2 - 1))))
entry("AtanhBackward0")(lambda o: only(Rule(local=1 / (1 - x ** 2))))
entry("CauchyBackward0", "GeometricBackward0", "LogNormalBackward0")(
    lambda o: only(Rule(sent=Num(0), note=ZERO_NOTE)))
entry("RandomBackward0", "RandomBackward1", "RandomBackward2")(lambda o: only(Rule(sent=Num(0), note=ZERO_NOTE)))


# -- integer and bit math: ldexp, frexp's mantissa, the comparisons in place (ops/integer_math.py) ------------------
entry("LdexpBackward0")(lambda o: {
    "self": Rule(local=Num(2) ** y, note="2^y: an integer power when y is an integer tensor (0 for y < 0), as in PyTorch"),
    "other": Rule(local=result("z") * Num(math.log(2)), symbol="y")})
entry("FrexpBackward0")(lambda o: only(Rule(local=1 / Num(2) ** Var("exponent", "e"),
                                            note="x = m · 2^e with the exponent e held fixed")))
for _compare in ("Ge", "Gt", "Le", "Lt", "Eq", "Ne"):
    entry(f"{_compare}Backward0")(lambda o: only(Rule(sent=Num(0), note="a comparison written in place: gradient 0")))
    entry(f"{_compare}Backward1")(lambda o: {
        "self": Rule(sent=Num(0), note="a comparison written in place: gradient 0"),
        "other": Rule(sent=Num(0), symbol="y", note="a comparison written in place: gradient 0")})
# -- shape helpers: rot90, block_diag, torch.fill (ops/shape_helpers.py) ------------------------------------------
register("rot90")(lambda value, k, dims: np.rot90(np.asarray(value, dtype=np.float64), k % 4, dims))
entry("Rot90Backward0", options=("k", "dims"))(lambda o: only(Rule(sent=Call(
    "rot90", (g,), "rot90", (-signed(o["k"]), tuple(signed(d) for d in o["dims"])), f"by {-signed(o['k'])} quarter turns"),
    note="the gradient turned back")))


@register("block")
def _block(grad, shapes, slot):
    """The block of ``grad`` that input ``slot`` of ``block_diag`` filled (a number 1×1, a vector one row)."""
    grad = np.asarray(grad, np.float64)
    blocks = [(1, 1) if len(s) == 0 else (1, s[0]) if len(s) == 1 else tuple(s) for s in shapes]
    row, column = sum(b[0] for b in blocks[:slot]), sum(b[1] for b in blocks[:slot])
    height, width = blocks[slot]
    return grad[row:row + height, column:column + width].reshape(shapes[slot])


entry("BlockDiagBackward0")(lambda o: only(Rule(sent=Call("block", (g, hidden(INPUT_SHAPES), hidden(SLOT)), "",
                                                          (), "this input's block"),
                                                note="each input gets back the block of the gradient it filled"),
                                           "tensors"))
entry("FillBackward0")(lambda o: only(Rule(sent=Num(0), note=ZERO_NOTE)))
entry("FillBackward1")(lambda o: {"self": Rule(sent=Num(0), note=ZERO_NOTE),
                                  "value": Rule(local=Num(1), symbol="v", note="the value filled every element")})
# the in-place view ops (squeeze_, unsqueeze_, t_, transpose_) compute what their out-of-place forms do
for _name, _same_as in (("UnsqueezeBackward1", "UnsqueezeBackward0"), ("TBackward1", "TBackward0"),
                        ("TransposeBackward1", "TransposeBackward0"), ("SqueezeBackward3", "SqueezeBackward0"),
                        ("SqueezeBackward5", "SqueezeBackward2")):
    TABLE.setdefault(_name, TABLE[_same_as])
# -- statistics: quantile's interpolation, lerp with a tensor weight (ops/statistics_more.py) ------------------------
entry("LerpBackward1")(lambda o: {"self": Rule(local=1 - Var("weight", "w")),
                                  "end": Rule(local=Var("weight", "w"), symbol="e"),
                                  "weight": Rule(local=Var("end", "e") - x, symbol="w")})
# -- more losses: soft margin (ops/losses_more.py) ---------------------------------------------------------------------
entry("SoftMarginLossBackward0", options=("reduction",))(lambda o: only(Rule(
    local=Call("soft_margin_local", (x, t), "-t σ(-t x)") * (Num(1) / Call("element_count", (x,), "n") if o["reduction"] == 1
                                                            else Num(1)),
    note="the logistic loss's slope" + (", shared over the n elements (mean)" if o["reduction"] == 1 else ""))))
register("soft_margin_local")(lambda a, b: -np.asarray(b, np.float64) / (1 + np.exp(np.asarray(a, np.float64)
                                                                                       * np.asarray(b, np.float64))))
register("element_count")(lambda a: float(np.asarray(a).size))
# -- recurrent layers (ops/recurrent.py): unsafe_chunk's pieces, oneDNN's whole LSTM layer ----------------------------
TABLE.setdefault("UnsafeSplitBackward0", TABLE["SplitBackward0"])  # a split whose pieces are copies: same gradient
_LSTM_INPUTS = (("input", "x"), ("weight0", "W_ih"), ("weight1", "W_hh"), ("weight2", "b_ih"), ("weight3", "b_hh"),
                ("hx_", "h₀"), ("cx_", "c₀"))


@entry("MkldnnRnnLayerBackward0", options=("reverse", "has_biases"))
def _lstm_layer(o):
    """Backpropagation through time: the layer is run again from its saved inputs and the gradients of the
    outputs (every step's h, the last h, the last c) are carried back step by step."""
    operands = (Grads(),) + tuple(Var(name, symbol) for name, symbol in _LSTM_INPUTS)
    order = "last step to first" if not o["reverse"] else "first step to last (a reverse layer)"
    return {name: Rule(sent=Call("lstm_bptt", operands, "BPTT", (slot, bool(o["reverse"]), bool(o["has_biases"])),
                                 "through every step"), symbol=symbol,
                       note=f"the gradient of every step's gates z_t is carried back from the {order}; "
                            "each step adds its share (a shared weight's gradient is a sum over the steps)")
            for slot, (name, symbol) in enumerate(_LSTM_INPUTS)}


@register("lstm_bptt")
def _lstm_bptt(grads, x, w_ih, w_hh, b_ih, b_hh, h0, c0, slot, reverse, has_biases):
    from gradviz.ops.recurrent import lstm_layer_backward, lstm_layer_forward

    x, w_ih, w_hh, h0, c0 = (np.asarray(a, np.float64) for a in (x, w_ih, w_hh, h0, c0))
    bias_ih, bias_hh = ((np.asarray(b_ih, np.float64), np.asarray(b_hh, np.float64)) if has_biases
                        else (np.zeros(w_ih.shape[0]), np.zeros(w_ih.shape[0])))
    output, _, _, gates, cells = lstm_layer_forward(x, w_ih, w_hh, bias_ih, bias_hh, h0, c0, reverse)
    shapes = (output.shape, h0.shape, c0.shape)
    arriving = [np.zeros(shape) if g is None else np.asarray(g, np.float64) for g, shape in zip(grads, shapes)]
    sent = lstm_layer_backward(x, w_ih, w_hh, h0, c0, output, gates, cells, *arriving, reverse)
    return sent[min(slot, 3)] if slot < 5 else sent[slot - 1]
# -- attention (ops/attention.py): the safe softmax is softmax's formula; the fused CPU node's gradients, with
# -- P = softmax(Q Kᵀ·s + M) rebuilt from the saved logsumexp ℓ, are written as one call per input -----------------
TABLE.setdefault("SafeSoftmaxBackward0", TABLE["SoftmaxBackward0"])
_ATTENTION_NOTE = ("P = exp(Q Kᵀ·s + M - ℓ) = softmax(Q Kᵀ·s + M) (ℓ, the saved logsumexp of each row; M the mask, "
                   "causal: -∞ above the diagonal), dS = P ⊙ (ȳ Vᵀ - Σⱼ ȳ ⊙ O) (O, the output); ")
_ATTENTION_SENT = {"query": ("attention_dQ", "dQ = s · dS K"), "key": ("attention_dK", "dK = s · dSᵀ Q"),
                   "value": ("attention_dV", "dV = Pᵀ ȳ")}


@entry("ScaledDotProductFlashAttentionForCpuBackward0", options=("scale", "is_causal"), present=("attn_mask",))
def _attention(o):
    operands = (g, Var("query", "Q"), Var("key", "K"), Var("value", "V"), Var("output", "O"), Var("logsumexp", "ℓ"))
    if o["attn_mask"] is not None:
        operands += (Var("attn_mask", "M"),)
    rules = {}
    for slot, (name, (shown, note)) in enumerate(_ATTENTION_SENT.items()):
        rules[name] = Rule(sent=Call("attention_grad", operands, shown, (slot, o["scale"], bool(o["is_causal"]))),
                           note=_ATTENTION_NOTE + note + ("; s = 1/√E" if o["scale"] is None else ""), symbol=name[0].upper())
    return rules


@register("attention_grad")
def _attention_grad(grad, query, key, value, output, logsumexp, *rest):
    from gradviz.ops.attention import attention_backward

    mask, (slot, scale, is_causal) = (rest[0] if len(rest) == 4 else None), rest[-3:]
    arrays = [np.asarray(a, dtype=np.float64) for a in (grad, query, key, value, output, logsumexp)]
    scale = scale if scale is not None else 1.0 / math.sqrt(arrays[1].shape[-1])
    return attention_backward(*arrays, None if mask is None else np.asarray(mask, np.float64), scale, is_causal)[slot]
