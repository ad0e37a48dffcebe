"""gradviz: watch autograd work.

A small autograd engine that behaves like PyTorch (``import gradviz as torch`` runs tutorial
code unchanged), records the computational graph, and lets you draw it and step the backward
pass node by node (``gv.show(loss)``). Only numpy is needed; torch is imported lazily, when a
torch tensor or a CUDA device is used.
"""
from gradviz import _dtype
from gradviz._device import device
from gradviz._dtype import (bool, dtype, float16, float32, float64, int8, int16, int32, int64,  # noqa: A004
                            uint8)
from gradviz._printing import get_printoptions, set_printoptions
from gradviz.grad_mode import enable_grad, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled
from gradviz.tensor import (Size, Tensor, arange, as_tensor, bernoulli, empty, eye, from_numpy, full, full_like,
                            get_default_device, is_tensor, linspace, normal, ones, ones_like, rand, rand_like, randint,
                            randint_like, randn, randn_like, randperm, set_default_device, tensor, zeros, zeros_like)
from gradviz.random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed,
                            set_rng_state)
from gradviz._dtype import get_default_dtype, set_default_dtype
from gradviz import ops  # noqa: E402  (installs the Tensor methods)
from gradviz.ops import (abs, add, addmm, all, allclose, any, argmax, argmin, bitwise_and, bitwise_not,  # noqa: A004
                         bitwise_or, bitwise_xor, bmm, cat, clamp, clone, cos, div, dot, eq, equal, exp, expand_as,
                         flatten, gather, ge, gt, index_select, le, log, log_softmax, logical_and, logical_not,
                         logical_or, logical_xor, lt,
                         masked_fill, matmul, max, maximum, mean, minimum, mm, mul, mv, narrow, ne, neg, norm, permute,
                         pow, reciprocal, relu, repeat, reshape, rsub, sigmoid, sin, softmax, sqrt, square, squeeze,
                         stack, sub, sum, t, tanh, transpose, unsqueeze, where)
from gradviz.ops.pieces import chunk, split, unbind
from gradviz.ops.elementwise import (acos, addcmul, asin, atan, atan2, ceil, clamp_max, clamp_min, cosh, erf,  # noqa: A004
                                     expm1, floor, fmod, frac, hypot, isfinite, isinf, isnan, lerp, log1p, log2, log10,
                                     nan_to_num, remainder, round, rsqrt, sign, sinh, trunc)
from gradviz.ops.matrix import diag, diagonal, flip, fliplr, flipud, roll, trace, tril, triu  # noqa: E402
from gradviz.ops.composites import (atleast_1d, atleast_2d, broadcast_tensors, broadcast_to,  # noqa: E402
                                    column_stack, diff, hstack, meshgrid, movedim, outer, repeat_interleave, swapaxes,
                                    tile, unflatten, vstack)
from gradviz.ops.elementwise import exp2, isclose, sgn  # noqa: E402
from gradviz.ops.selection import argwhere, count_nonzero, masked_select, nonzero  # noqa: E402
from gradviz.ops.statistics import amax, amin, cumprod, cumsum, logsumexp, min, prod, std, var  # noqa: E402,A004
from gradviz.ops import return_types  # noqa: E402
from gradviz.ops.ordering import argsort, msort, sort, topk  # noqa: E402
from gradviz.ops.einsum import einsum  # noqa: E402
from gradviz.ops.scatter import index_add, scatter, scatter_add  # noqa: E402
from gradviz.autograd.inference import inference_mode  # noqa: E402
# -- more products, torch.linalg and its aliases ---------------------------------------------------
from gradviz.ops.products import (addbmm, addmv, addr, baddbmm, chain_matmul, cross, inner, kron,  # noqa: E402
                                  tensordot, vdot)
from gradviz.ops.decompositions import (deprecated_cholesky as cholesky, det, inv as inverse,  # noqa: E402
                                        logdet, torch_slogdet as slogdet)
from gradviz import linalg  # noqa: E402
from gradviz.ops.scatter import scatter_reduce  # noqa: E402
from gradviz.ops.matrix import as_strided  # noqa: E402
# -- order statistics, summaries, special math, lookups, searching, torch.special --------------------
from gradviz.ops.order_statistics import cummax, cummin, kthvalue, median, mode, nanmedian  # noqa: E402
from gradviz.ops.summaries import aminmax, logcumsumexp, nanmean, nansum, std_mean, var_mean  # noqa: E402
from gradviz.ops.special_math import (addcdiv, deg2rad, digamma, erfc, erfinv, heaviside, i0, lgamma,  # noqa: E402
                                      logaddexp, logaddexp2, logit, rad2deg, sinc, xlogy)
from gradviz.ops.lookups import index_copy, index_fill, put, take, take_along_dim  # noqa: E402
from gradviz.ops.searching import (bincount, bucketize, histc, isin, searchsorted, unique,  # noqa: E402
                                   unique_consecutive)
from gradviz import special  # noqa: E402
from gradviz.ops.conversion import CONTIGUOUS_FORMAT as contiguous_format, PRESERVE_FORMAT as preserve_format
from gradviz.legacy import (BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor,  # noqa: E402
                            IntTensor, LongTensor, ShortTensor)
from gradviz import _kinds, accelerator, autograd, cuda, interop, snapshot  # noqa: E402
from gradviz.snapshot import graph  # noqa: E402

half, float, double, long, int, short = float16, float32, float64, int64, int32, int16  # noqa: A001
from gradviz.ops.clamping import clip  # noqa: E402  (its errors say clip())
arcsin, arccos, arctan, arctan2, fix, ger = asin, acos, atan, atan2, trunc, outer
moveaxis, swapdims, subtract, multiply, divide, negative, absolute = movedim, swapaxes, sub, mul, div, neg, abs


def numel(input) -> int:
    return input.numel()


def is_floating_point(input) -> bool:
    return input.is_floating_point()


def empty_like(input, *, dtype=None, device=None, requires_grad: bool = False):
    """Uninitialized in PyTorch; zeros here, which is one of its possible values."""
    return zeros_like(input, dtype=dtype, device=device, requires_grad=requires_grad)
concat = concatenate = cat
__version__ = "0.1.0"

_LAZY = {
    "nn": ("gradviz.nn", None),
    "optim": ("gradviz.optim", None),
    "show": ("gradviz.widget", "show"),
    "export_html": ("gradviz.widget", "export_html"),
    "to_html": ("gradviz.widget", "to_html"),
    "GraphWidget": ("gradviz.widget", "GraphWidget"),
    "compare": ("gradviz.widget.compare_view", "compare"),
    "func": ("gradviz.func", None),  # torch.func's transforms
    "vmap": ("gradviz.func", "vmap"),  # torch.vmap
    "utils": ("gradviz.utils", None),  # torch.utils.data: datasets, samplers, DataLoader
    "serialization": ("gradviz.serialization", None),
    "save": ("gradviz.serialization", "save"),  # torch.save / torch.load, in PyTorch's file format
    "load": ("gradviz.serialization", "load"),
}

# The one place gradviz decides "gradviz tensor or torch tensor?": the engine and the snapshot
# know only their own tensors, and hand torch tensors to the interop layer registered here. The
# registered functions import torch (and gradviz.interop's modules) only when one arrives.
autograd.engine.register_foreign_engine(_kinds.is_torch_tensor, interop.steps_for_torch)
snapshot.register_foreign_source(_kinds.is_torch_tensor, interop.source_for_torch)


def __getattr__(name):
    """Import the heavier parts (nn, optim, the widget) only when first used."""
    if name in _LAZY:
        import importlib

        module_name, attribute = _LAZY[name]
        module = importlib.import_module(module_name)
        value = module if attribute is None else getattr(module, attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'gradviz' has no attribute '{name}'")


def load_ipython_extension(ipython):
    """``%load_ext gradviz``: show tensors that have a graph as the stepping widget."""
    from gradviz.widget.ipython import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython):
    from gradviz.widget.ipython import unload_ipython_extension as unload

    unload(ipython)
# -- the SVD family beside torch.linalg's: torch.svd, torch.pinverse, torch.matrix_power ------------------
from gradviz.ops.decompositions import torch_svd as svd  # noqa: E402
from gradviz.ops.linalg import matrix_power  # noqa: E402
# -- torch.special's extras under their top-level names: torch.polygamma, torch.mvlgamma, torch.igamma ---
from gradviz.ops.special_math import gammainc as igamma, gammaincc as igammac, polygamma  # noqa: E402
from gradviz.ops.special_math import multigammaln as mvlgamma  # noqa: E402
# -- torch.normal in all its forms (tensor means and/or standard deviations) ------------------------------------
from gradviz.ops.sampling import normal  # noqa: E402
from gradviz.ops.decompositions import matrix_exp  # noqa: E402
# -- more two-operand math, cdist, diag_embed -----------------------------------------------------------------
from gradviz.ops.binary_math import (copysign, dist, float_power, floor_divide, fmax, fmin, nextafter,  # noqa: E402
                                     true_divide)
from gradviz.ops.distances import cdist  # noqa: E402
from gradviz.ops.shape import diag_embed  # noqa: E402
from gradviz.ops.shape import permute_function as permute, reshape_function as reshape  # noqa: E402

# -- torch.func (``func``, ``vmap``) is imported when first used: see _LAZY ------------------------------------
# torch.bernoulli / torch.normal that give a dual tensor's sample torch's zero tangent (forward AD)
bernoulli = autograd.forward_ad.bernoulli  # noqa: F811
normal = autograd.forward_ad.normal  # noqa: F811
# -- the tensor API sweep: torch.tan, torch.rsub(alpha=), torch.poisson, torch.multinomial ------------------------
from gradviz.ops.tensor_api import rsub  # noqa: E402, F811
from gradviz.ops.unary import tan  # noqa: E402
from gradviz.ops.sampling import multinomial, poisson  # noqa: E402
from gradviz.ops import torch_functions as _sweep  # noqa: E402

globals().update(_sweep.torch_functions())
e, pi, inf, nan, newaxis = _sweep.e, _sweep.pi, _sweep.inf, _sweep.nan, _sweep.newaxis
# -- anomaly mode's switches: torch.is_anomaly_enabled, torch.set_anomaly_enabled, ... ----------------------------
from gradviz.autograd.anomaly_mode import (is_anomaly_check_nan_enabled, is_anomaly_enabled,  # noqa: E402
                                           set_anomaly_enabled)
# -- integer and bit math: torch.gcd, torch.lcm, torch.ldexp, torch.bitwise_left_shift, torch.frexp ... ------------
from gradviz.ops import integer_math as _integer_math  # noqa: E402

globals().update(_integer_math.torch_functions())
# -- shape helpers: torch.tensor_split, torch.rot90, torch.block_diag, torch.range, torch.logspace, torch.fill ... -------
from gradviz.ops import shape_helpers as _shape_helpers  # noqa: E402

globals().update(_shape_helpers.torch_functions())
# -- statistics: torch.quantile, torch.nanquantile, torch.cov, torch.corrcoef, torch.trapezoid, torch.histogram ... ----
from gradviz.ops import statistics_more as _statistics_more  # noqa: E402

globals().update(_statistics_more.torch_functions())
# -- the functional forms' torch.* names: torch.selu, torch.threshold, torch.margin_ranking_loss, torch.dropout ...
# -- reached lazily, as nn is (the ``_torch_*`` ones take PyTorch's top-level signature: nn/functional.py) -----------
_LAZY.update({name: ("gradviz.nn.functional", f"_torch_{name}") for name in (
    "margin_ranking_loss", "hinge_embedding_loss", "poisson_nll_loss", "triplet_margin_loss", "dropout", "dropout_",
    "layer_norm", "batch_norm")})
_LAZY.update({name: ("gradviz.nn.functional", name) for name in (
    "selu", "selu_", "celu", "celu_", "threshold", "threshold_", "rrelu", "rrelu_", "hardshrink", "prelu",
    "cosine_similarity", "pairwise_distance")})
# -- PyTorch's argument parser in front of the facade: numpy's names (``x.sum(axis=0)``), and its TypeError for
# -- a number or list where a tensor belongs (``torch.exp(2.0)``) ----------------------------------------------
from gradviz import argument_parser as _argument_parser  # noqa: E402

_argument_parser.install(globals(), Tensor)

# -- convolution and pooling (ops/convolution.py, ops/pooling.py) -----------------------------------------------
from gradviz.ops.convolution import (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,  # noqa: E402
                                     conv_transpose3d, convolution)
from gradviz.ops.pooling import (adaptive_avg_pool1d, avg_pool1d, max_pool1d, max_pool1d_with_indices,  # noqa: E402
                                 max_pool2d)
from gradviz.snapshot import window_formulas  # noqa: E402,F401  (their learner formulas, in the snapshot's table)
# -- group, instance and RMS normalization's torch.* names (nn/functional.py) ----------------------------------------
_LAZY.update({name: ("gradviz.nn.functional", f"_torch_{name}") for name in ("group_norm", "instance_norm", "rms_norm")})
# -- resampling's torch.* names (ops/resampling.py) ---------------------------------------------------------------------
from gradviz.ops.resampling import channel_shuffle, pixel_shuffle, pixel_unshuffle  # noqa: E402
from gradviz.snapshot import resampling_formulas  # noqa: E402,F401  (their learner formulas, in the snapshot's table)
# -- select/slice/diagonal_scatter, masked_scatter, renorm, pinverse (ops/scatter_views.py) ------------------------------
from gradviz.ops import scatter_views as _scatter_views  # noqa: E402

globals().update(_scatter_views.torch_functions())
from gradviz.snapshot import scatter_formulas  # noqa: E402,F401  (their learner formulas, in the snapshot's table)
# -- recurrent layers: torch.unsafe_chunk, torch.unsafe_split (ops/recurrent.py) ---------------------------------------
from gradviz.ops.recurrent import unsafe_chunk, unsafe_split  # noqa: E402,F401
# -- the rest of pooling's torch.* names (ops/pooling.py) -------------------------------------------------------------
from gradviz.ops.pooling import adaptive_max_pool1d_with_indices as adaptive_max_pool1d  # noqa: E402
from gradviz.ops.pooling import max_pool3d  # noqa: E402,F401
