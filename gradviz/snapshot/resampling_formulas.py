"""The learner's formulas for the resampling nodes (``ops/resampling.py``), in the snapshot's formula table.

An upsample's gradient is its transposed map: each output's gradient goes back to the input positions it read,
times their weights. The ``Call`` runs the op's own gradient kernel in float64 with the node's saved sizes, scales
and ``align_corners``, so the same entry serves gradviz's nodes and torch's. The shuffles are rearrangements:
their gradient is the inverse rearrangement.
"""
from __future__ import annotations

import numpy as np

from gradviz.ops import resampling
from gradviz.snapshot.formula_table import INPUT_SHAPE, Rule, _recorded_rules, entry, hidden, only
from gradviz.snapshot.math import Call, Grad, register

g = Grad()
_HOW = {"nearest": "copied from the input element each one read",
        "nearest-exact": "copied from the input element nearest each one's centre",
        "linear": "a weighted mean of the two input elements around it",
        "bilinear": "a weighted mean of the four input elements around it",
        "trilinear": "a weighted mean of the eight input elements around it",
        "bicubic": "a weighted sum of the 4 x 4 input elements around it (cubic weights)"}


def _upsample_entry(cls):
    names = resampling._SPATIAL_NAMES[cls.spatial]
    interpolating = cls.mode not in ("nearest", "nearest-exact")

    def rules(o):
        params = (cls.mode, bool(o["align_corners"]) if interpolating else False,
                  tuple(o[name] for name in names))
        return only(Rule(sent=Call("upsample_gradient", (g, hidden(INPUT_SHAPE)), "", params,
                                   "each output's gradient, back to the elements it read, times their weights"),
                         note=f"each output element is {_HOW[cls.mode]}: each input element gets the gradients of "
                              "the outputs that read it, times the weight it had in each"))

    options = (("align_corners",) if interpolating else ()) + names
    entry(cls.__name__, options=options)(rules)
    entry(cls.double.__name__)(lambda o: _recorded_rules(
        ("grad_output",), f"the {cls.mode} upsample's gradient (its own gradient is the upsample again)", 1))


for _cls in resampling.UPSAMPLE_OPS.values():
    _upsample_entry(_cls)


@register("upsample_gradient")
def _upsample_gradient(grad, shape, mode, align_corners, scales):
    return resampling.resample_grad(np.asarray(grad, np.float64), tuple(shape), mode, align_corners, tuple(scales))


@entry("PixelShuffleBackward0", options=("upscale_factor",))
def _pixel_shuffle(o):
    return only(Rule(sent=Call("pixel_unshuffle", (g,), "pixel_unshuffle", (o["upscale_factor"],), ""),
                     note="the op only moves elements (channel blocks into pixel blocks): each gets back the gradient "
                          "of the place it moved to"))


@entry("PixelUnshuffleBackward0", options=("downscale_factor",))
def _pixel_unshuffle(o):
    return only(Rule(sent=Call("pixel_shuffle", (g,), "pixel_shuffle", (o["downscale_factor"],), ""),
                     note="the op only moves elements (pixel blocks into channels): each gets back the gradient of "
                          "the place it moved to"))


@entry("ChannelShuffleBackward0", options=("groups",))
def _channel_shuffle(o):
    return only(Rule(sent=Call("channel_unshuffle", (g,), "unshuffle", (o["groups"],), "the channels put back"),
                     note="the op only reorders the channels: each channel gets back the gradient of the place it "
                          "moved to"))


register("pixel_unshuffle")(lambda grad, factor: resampling._pixel_unshuffle(np.asarray(grad, np.float64), factor))
register("pixel_shuffle")(lambda grad, factor: resampling._pixel_shuffle(np.asarray(grad, np.float64), factor))
register("channel_unshuffle")(lambda grad, groups: resampling._channel_shuffle(
    np.asarray(grad, np.float64), np.shape(grad)[1] // groups))
