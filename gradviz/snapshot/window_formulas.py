"""The learner's formulas for the convolution and pooling nodes, in the snapshot's formula table.

Each is written as the snapshot's other structural ops are (``snapshot/formula_table.py``): a ``Call`` of a
numpy function registered under its name, specialised by the node's saved parameters, so the same entry
serves gradviz's nodes and torch's. The numpy functions are the ops' own kernels (``ops/convolution.py``,
``ops/pooling.py``) in float64. The second-order nodes a create_graph pass records use the table's
``_recorded_rules``: their gradient is the node's own derivative.
"""
from __future__ import annotations

import numpy as np

from gradviz.ops import convolution, fold, pooling
from gradviz.snapshot.formula_table import INPUT_SHAPE, Rule, _recorded_rules, entry, hidden
from gradviz.snapshot.math import Call, Grad, Var, register

g = Grad()
CONV_OPTIONS = ("stride", "padding", "dilation", "transposed", "output_padding", "groups")


def _conv_params(weight_ndim: int, params: tuple) -> tuple:
    stride, padding, dilation, transposed, output_padding, groups = params
    return convolution._expanded(weight_ndim - 2, tuple(stride), tuple(padding), tuple(dilation), bool(transposed),
                                 tuple(output_padding), int(groups))


@entry("ConvolutionBackward0", options=CONV_OPTIONS)
def _convolution(o):
    params = tuple(o[name] for name in CONV_OPTIONS)
    kind = "transposed convolution" if o["transposed"] else "convolution"
    return {
        "input": Rule(sent=Call("conv_input_gradient", (g, Var("weight", "w"), hidden(INPUT_SHAPE)), "conv_input",
                                params), symbol="x",
                      note=f"each output of the {kind} sends its gradient back, times the weight, to every input "
                           "element its window read"),
        "weight": Rule(sent=Call("conv_weight_gradient", (Var("input", "x"), g, hidden(INPUT_SHAPE)), "conv_weight",
                                 params), symbol="w",
                       note="each weight gets the input elements it multiplied, times the gradient of the output "
                            "they made, added over the batch and every position"),
        "bias": Rule(sent=Call("sum_but_channels", (g,), "Σ", (), "over the batch and every position"), symbol="b",
                     note="the bias is added to every position of its channel: it gets their gradients, added up"),
    }


@register("conv_input_gradient")
def _conv_input_gradient(grad, weight, shape, *params):
    weight = np.asarray(weight, np.float64)
    return convolution._grad_input(np.asarray(grad, np.float64), weight, tuple(shape),
                                   _conv_params(weight.ndim, params))


@register("conv_weight_gradient")
def _conv_weight_gradient(input, grad, shape, *params):
    return convolution._grad_weight(np.asarray(input, np.float64), np.asarray(grad, np.float64), tuple(shape),
                                    _conv_params(len(shape), params))


register("sum_but_channels")(lambda grad: convolution._bias_grad(np.asarray(grad, np.float64)))


def _max_pool(dims: int):
    """The rule of a max pooling node over ``dims`` spatial dims (its saved ``result1`` says where each maximum was)."""
    def build(o):
        return {"self": Rule(sent=Call("max_unpool", (g, Var("result1", "i"), hidden(INPUT_SHAPE)), "", (dims,),
                                       "at each window's maximum"),
                             note="only the largest element of each window reached the output: it alone gets that "
                                  "output's gradient")}
    return build


entry("MaxPool2DWithIndicesBackward0", "AdaptiveMaxPool2DBackward0")(_max_pool(2))
entry("MaxPool3DWithIndicesBackward0", "AdaptiveMaxPool3DBackward0")(_max_pool(3))

register("max_unpool")(lambda grad, indices, shape, dims=2: pooling.max_unpool_grad(
    np.asarray(grad, np.float64), np.asarray(indices).astype(np.int64), tuple(shape), dims))

AVG_OPTIONS = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")


def _avg_pool(dims: int):
    def build(o):
        return {"self": Rule(sent=Call("avg_unpool", (g, hidden(INPUT_SHAPE)), "",
                                       tuple(o[name] for name in AVG_OPTIONS) + (dims,), "spread over each window"),
                             note="each output is its window's mean: every element of the window gets the output's "
                                  "gradient over the window's divisor")}
    return build


entry("AvgPool2DBackward0", options=AVG_OPTIONS)(_avg_pool(2))
entry("AvgPool3DBackward0", options=AVG_OPTIONS)(_avg_pool(3))


@register("avg_unpool")
def _avg_unpool(grad, shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, dims=2):
    kernel = pooling._two(tuple(kernel_size), None, dims)
    stride, padding = pooling._two(tuple(stride), kernel, dims), pooling._two(tuple(padding), None, dims)
    _, divisor = pooling.avg_geometry(tuple(shape), kernel, stride, padding, ceil_mode, count_include_pad,
                                      divisor_override)
    return pooling.avg_pool_grad(np.asarray(grad, np.float64), tuple(shape), kernel, stride, padding, divisor)


def _adaptive_avg_pool(dims: int):
    def build(o):
        return {"self": Rule(sent=Call("adaptive_unpool", (g, hidden(INPUT_SHAPE)), "", (dims,),
                                       "spread over each window"),
                             note="each output is the mean of its window: every element of the window gets the "
                                  "output's gradient over the window's size")}
    return build


entry("AdaptiveAvgPool2DBackward0")(_adaptive_avg_pool(2))
entry("AdaptiveAvgPool3DBackward0")(_adaptive_avg_pool(3))

register("adaptive_unpool")(lambda grad, shape, dims=2: pooling.adaptive_avg_grad(np.asarray(grad, np.float64),
                                                                                  tuple(shape), dims))


def _max_unpool(dims: int):
    def build(o):
        return {"self": Rule(sent=Call("gather_planes", (g, Var("indices", "i")), "", (dims,), "at the indices"),
                             note="each input element was written at its index of the output: it gets the gradient "
                                  "found there")}
    return build


entry("MaxUnpool2DBackward0")(_max_unpool(2))
entry("MaxUnpool3DBackward0")(_max_unpool(3))
register("gather_planes")(lambda grad, indices, dims: pooling.gather_planes(
    np.asarray(grad, np.float64), np.asarray(indices).astype(np.int64), dims))

BLOCK_OPTIONS = ("kernel_size", "dilation", "padding", "stride")


@entry("Im2ColBackward0", options=("self_sym_argsize_minus_2", "self_sym_argsize_minus_1") + BLOCK_OPTIONS)
def _im2col(o):
    return {"self": Rule(sent=Call("fold_columns", (g,), "fold", (o["self_sym_argsize_minus_2"],
                                                                  o["self_sym_argsize_minus_1"])
                                   + tuple(o[name] for name in BLOCK_OPTIONS), "each column added back into its block"),
                         note="each column holds one block of the input: every element gets the gradients of all "
                              "the columns it was copied into, added up")}


@entry("Col2ImBackward0", options=BLOCK_OPTIONS)
def _col2im(o):
    return {"self": Rule(sent=Call("unfold_blocks", (g,), "unfold", tuple(o[name] for name in BLOCK_OPTIONS),
                                   "each block read back as a column"),
                         note="each column was added into one block of the output: it gets that block's gradient")}


register("fold_columns")(lambda grad, height, width, kernel, dilation, padding, stride: fold.col2im_arrays(
    np.asarray(grad, np.float64), (height, width), tuple(kernel), tuple(dilation), tuple(padding), tuple(stride)))
register("unfold_blocks")(lambda grad, kernel, dilation, padding, stride: fold.im2col_arrays(
    np.asarray(grad, np.float64), tuple(kernel), tuple(dilation), tuple(padding), tuple(stride)))

entry("ConvolutionBackwardBackward0")(lambda o: _recorded_rules(
    ("grad_output", "input", "weight"), "convolution's gradients for its input, weight and bias", 3))
entry(*(f"{op}{dims}D{name}BackwardBackward0" for op, name in (("MaxPool", "WithIndices"), ("AdaptiveMaxPool", ""))
        for dims in (2, 3)))(lambda o: _recorded_rules(
            ("grad_output", "self"), "max pooling's gradient, each output's gradient put at its window's maximum", 1,
            ("self",)))
entry("AvgPool2DBackwardBackward0", "AvgPool3DBackwardBackward0")(lambda o: _recorded_rules(
    ("grad_output", "self"), "average pooling's gradient, each output's gradient spread over its window", 1,
    ("self",)))
entry("AdaptiveAvgPool2DBackwardBackward0", "AdaptiveAvgPool3DBackwardBackward0")(lambda o: _recorded_rules(
    ("grad_output", "self"), "adaptive average pooling's gradient, each output's gradient spread over its window", 1,
    ("self",)))
