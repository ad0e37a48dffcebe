"""The learner's formulas for ``ops/scatter_views.py``'s nodes, in the snapshot's formula table: the scatters into a
copy (the input's gradient with the written part zeroed, the source's read through the same view), masked_scatter
and renorm. Each ``Call`` runs the op's own numpy code in float64 with the node's saved arguments (negative ones
saved as PyTorch shows them, unsigned, and read back with ``signed``), so it serves gradviz's nodes and torch's."""
from __future__ import annotations

import numpy as np

from gradviz.ops import scatter_views
from gradviz.snapshot.formula_table import Rule, entry, only, signed
from gradviz.snapshot.math import Call, Grad, Var, register

g = Grad()
_KINDS = {"SelectScatterBackward0": (scatter_views.SelectScatterBackward0, "the row"),
          "SliceScatterBackward0": (scatter_views.SliceScatterBackward0, "the slice"),
          "DiagonalScatterBackward0": (scatter_views.DiagonalScatterBackward0, "the diagonal")}


def _scatter_entry(name: str):
    cls, what = _KINDS[name]

    def rules(o):
        view = tuple(None if o[option] is None else signed(o[option]) for option in cls.options)
        return {"self": Rule(sent=Call("scatter_cleared", (g,), "", (name,) + view,
                                       f"with {what} set to 0"),
                             note=f"{what} was overwritten by src, so those elements of the input do not reach the "
                                  "output: their gradient is 0, the others' passes through"),
                "src": Rule(sent=Call("scatter_read", (g,), "", (name,) + view, f"{what} of it"),
                            symbol="src", note=f"src became {what} of the output: it gets that part of the gradient")}

    entry(name, options=cls.options)(rules)


for _name in _KINDS:
    _scatter_entry(_name)


def _view(name: str, shape, view) -> tuple:
    cls = _KINDS[name][0]
    dims = len(shape)
    normalized = tuple(value + dims if option.startswith("dim") and value is not None and value < 0 else value
                       for option, value in zip(cls.options, view))
    if name == "SliceScatterBackward0":  # the saved start/end as given: resolved as the forward resolved them
        dim, start, end, step = normalized
        first, last, _ = slice(start, end, step).indices(shape[dim])
        normalized = (dim, first, max(first, last), step)
    if name == "SelectScatterBackward0":
        dim, index = normalized
        normalized = (dim, index + shape[dim] if index < 0 else index)
    return cls, normalized


@register("scatter_cleared")
def _scatter_cleared(grad, name, *view):  # (the gradient has the input's shape: the views resolve against it)
    cls, view = _view(name, np.shape(grad), view)
    out = np.array(grad, np.float64)
    cls._put(out, 0, *view)
    return out


@register("scatter_read")
def _scatter_read(grad, name, *view):
    cls, view = _view(name, np.shape(grad), view)
    return np.array(cls._take(np.asarray(grad, np.float64), *view))


@entry("MaskedScatterBackward0", options=("source_sym_sizes",))
def _masked_scatter(o):
    return {"self": Rule(sent=Call("masked_cleared", (g, Var("mask", "mask")), "", (), "where the mask is False"),
                         note="where the mask is True the output took source's elements: the input's gradient is 0 "
                              "there"),
            "source": Rule(sent=Call("masked_read", (g, Var("mask", "mask")), "", (tuple(o["source_sym_sizes"]),),
                                     "at the mask, in order"), symbol="source",
                           note="source's first elements filled the masked places in order: each gets the gradient "
                                "of its place, the unused ones 0")}


@register("masked_cleared")
def _masked_cleared(grad, mask):
    grad = np.asarray(grad, np.float64)
    return np.where(np.broadcast_to(np.asarray(mask, bool), grad.shape), 0.0, grad)


@register("masked_read")
def _masked_read(grad, mask, shape):
    grad = np.asarray(grad, np.float64)
    picked = grad[np.broadcast_to(np.asarray(mask, bool), grad.shape)]
    flat = np.zeros(int(np.prod(shape)))
    flat[:picked.size] = picked
    return flat.reshape(shape)


@entry("RenormBackward0", options=("p", "dim", "maxnorm"))
def _renorm(o):
    return only(Rule(sent=Call("renorm_gradient", (g, Var("self", "x")), "", (o["p"], signed(o["dim"]), o["maxnorm"]),
                               ""),
                     note="a slice whose norm was above maxnorm was scaled by s = maxnorm / ‖x‖: its gradient is "
                          "s·ȳ plus the change of s itself; the other slices pass ȳ through"))


@register("renorm_gradient")
def _renorm_gradient(grad, x, p, dim, maxnorm):
    x = np.asarray(x, np.float64)
    dim = dim + x.ndim if dim < 0 else dim
    axes = tuple(axis for axis in range(x.ndim) if axis != dim)
    return scatter_views.renorm_grad(np.asarray(grad, np.float64), x, p, axes, maxnorm)
