"""``gradviz.nn.functional``: the functions tutorials call as ``F.<name>``, recorded as PyTorch records them.

``linear`` is one composite: PyTorch records ``F.linear`` as ``addmm(bias, input, weight.t())``
for a 2-D input with a bias (flattening any other contiguous input to 2-D around it; a non-contiguous one is
``matmul(input, weight.t()).add_(bias)``), and as ``matmul(input, weight.t())`` without one, so the graph shows AddmmBackward0 or MmBackward0 over TBackward0.
``dropout`` is another: ``input * mask`` (MulBackward0), the mask drawn with ``bernoulli_(1 - p)``
from the same generator as ``torch.rand``, so a seeded run drops the same elements as PyTorch's.
"""
from __future__ import annotations

import warnings

from gradviz.grad_mode import no_grad
from gradviz.ops import activation
from gradviz.ops.linalg import addmm, matmul
from gradviz.ops.activation import elu as _elu, gelu, hardtanh as _hardtanh, leaky_relu as _leaky_relu, silu as _silu
from gradviz.ops.activation import hardsigmoid as _hardsigmoid, hardswish as _hardswish, logsigmoid, mish as _mish
from gradviz.ops.activation import prelu, softplus
from gradviz.ops.embedding import embedding, one_hot
from gradviz.ops.normalization import batch_norm, layer_norm
from gradviz.ops.padding import pad
from gradviz.ops.loss import (binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, huber_loss, kl_div,
                              l1_loss, mse_loss, nll_loss, smooth_l1_loss)
from gradviz.ops.shape import reshape, t
from gradviz.ops.unary import relu as _relu, sigmoid, tanh
from gradviz.tensor import zeros, zeros_like

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "dropout", "elu", "gelu",
           "hardtanh", "huber_loss", "kl_div", "l1_loss", "leaky_relu", "linear", "log_softmax", "mse_loss", "nll_loss",
           "relu", "relu6", "sigmoid", "silu", "smooth_l1_loss", "softmax", "softplus", "tanh", "embedding", "one_hot",
           "layer_norm", "batch_norm", "pad", "normalize", "cosine_similarity", "selu", "celu", "logsigmoid",
           "softsign", "mish", "hardswish", "hardsigmoid", "prelu", "tanhshrink", "softmin", "glu", "softshrink",
           "hardshrink", "threshold", "threshold_", "rrelu", "rrelu_", "pairwise_distance"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    if bias is None:
        return matmul(input, t(weight))
    if input.ndim == 2:
        return addmm(bias, input, t(weight))
    if not input.is_contiguous():  # PyTorch flattens only a contiguous input around addmm
        return matmul(input, t(weight)).add_(bias)
    rows = reshape(input, (-1, input.shape[-1]))
    return reshape(addmm(bias, rows, t(weight)), tuple(input.shape[:-1]) + (weight.shape[0],))


def _implicit_dim(name: str, ndim: int, stacklevel: int) -> int:
    """PyTorch's old rule when ``dim`` is left out (with its deprecation warning): 0 for 0-, 1- and
    3-D inputs, else 1."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim`` (SoftmaxBackward0)."""
    if dim is None:
        dim = _implicit_dim("softmax", input.ndim, _stacklevel)
    return activation.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    """``x - log(sum(exp(x)))`` along ``dim`` (LogSoftmaxBackward0)."""
    if dim is None:
        dim = _implicit_dim("log_softmax", input.ndim, _stacklevel)
    return activation.log_softmax(input, dim, dtype=dtype)


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (training only).

    Out of training, with ``p = 0`` or an empty input, the input itself comes back (no node).
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        mask = zeros((), dtype=input.dtype, device=input.device)  # PyTorch multiplies by one 0-d zero
    else:
        with no_grad():
            mask = zeros_like(input).bernoulli_(1 - p)
            mask.div_(1 - p)
    return input.mul_(mask) if inplace else input * mask


# -- elementwise activations: one node each (LeakyReluBackward0, ...); ``inplace=True`` writes the result
# -- into the input, recorded as PyTorch's in-place variant.
def relu(input, inplace: bool = False):
    """``max(x, 0)`` (ReluBackward0); ``inplace=True`` writes it into ``input``."""
    return input.relu_() if inplace else _relu(input)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    """``x`` where positive, ``negative_slope * x`` elsewhere (LeakyReluBackward0; in place LeakyReluBackward1)."""
    return activation.leaky_relu_(input, negative_slope) if inplace else _leaky_relu(input, negative_slope)


def silu(input, inplace: bool = False):
    """``x * sigmoid(x)`` (SiluBackward0, in place too)."""
    return activation.apply_in_place(_silu, input) if inplace else _silu(input)


def elu(input, alpha: float = 1.0, inplace: bool = False):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere (EluBackward0; in place EluBackward1)."""
    return activation.elu_(input, alpha) if inplace else _elu(input, alpha)


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    """``x`` clamped to ``[min_val, max_val]`` (HardtanhBackward0, in place too)."""
    if inplace:
        activation.check_hardtanh(input, min_val, max_val)
        return activation.apply_in_place(_hardtanh, input, min_val, max_val)
    return _hardtanh(input, min_val, max_val)


def selu(input, inplace: bool = False):
    """``scale · elu(x, alpha)`` with PyTorch's fixed alpha and scale (EluBackward0; in place EluBackward1)."""
    alpha, scale = activation.SELU_ALPHA, activation.SELU_SCALE
    return activation.elu_(input, alpha, scale, 1) if inplace else activation.selu(input)


def celu(input, alpha: float = 1.0, inplace: bool = False):
    """``x`` where positive, ``alpha · (exp(x/alpha) - 1)`` elsewhere (CeluBackward0; in place CeluBackward1)."""
    if inplace:
        if alpha == 0:
            raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
        return activation.celu_(input, alpha)
    return activation.celu(input, alpha)


def mish(input, inplace: bool = False):
    """``x · tanh(softplus(x))`` (MishBackward0, in place too)."""
    return activation.apply_in_place(_mish, input) if inplace else _mish(input)


def hardswish(input, inplace: bool = False):
    """``x · relu6(x + 3) / 6`` (HardswishBackward0, in place too)."""
    return activation.apply_in_place(_hardswish, input) if inplace else _hardswish(input)


def hardsigmoid(input, inplace: bool = False):
    """``relu6(x + 3) / 6`` (HardsigmoidBackward0, in place too)."""
    return activation.apply_in_place(_hardsigmoid, input) if inplace else _hardsigmoid(input)


def softsign(input):
    """``x / (1 + |x|)``: PyTorch's composite (DivBackward0 over AddBackward0 over AbsBackward0)."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """``x - tanh(x)``: PyTorch's composite (SubBackward0)."""
    return input - input.tanh()


def softmin(input, dim=None, _stacklevel: int = 3, dtype=None):
    """``softmax(-x)`` along ``dim``: PyTorch's composite (SoftmaxBackward0 over NegBackward0)."""
    if dim is None:
        dim = _implicit_dim("softmin", input.ndim, _stacklevel)
    return activation.softmax(-input, dim, dtype=dtype)


def relu6(input, inplace: bool = False):
    """``min(max(x, 0), 6)``: PyTorch records it as ``hardtanh(x, 0, 6)`` (HardtanhBackward0)."""
    return hardtanh(input, 0, 6, inplace)


# -- vectors: PyTorch's composites, node for node --------------------------------------------------------
def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    """``input / max(‖input‖_p, eps)`` along ``dim``, as PyTorch records it (the norm clamped with
    ``clamp_min``: ClampMinBackward0)."""
    if out is not None:
        raise NotImplementedError("gradviz's normalize has no out= argument: use the returned tensor")
    denominator = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denominator


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """``Σ (x1/‖x1‖)(x2/‖x2‖)`` along ``dim``, as PyTorch computes it: each norm is cloned and clamped
    at ``eps`` in place without recording (the graph shows CloneBackward0 over each norm)."""
    if tuple(x1.shape) != tuple(x2.shape):
        from gradviz.ops._util import broadcast_shapes

        shape = broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
        x1, x2 = x1.expand(shape), x2.expand(shape)  # PyTorch's expand_outplace expands both
    norm1 = x1.norm(2, dim, keepdim=True).clone()
    norm2 = x2.norm(2, dim, keepdim=True).clone()
    with no_grad():
        norm1.clamp_(min=eps)
        norm2.clamp_(min=eps)
    return ((x1 / norm1) * (x2 / norm2)).sum(dim)


# -- glu, the shrinks, threshold, rrelu (ops/shrink.py) and pairwise_distance ---------------------------------------
from gradviz.ops.shrink import glu, hardshrink, softshrink  # noqa: E402
from gradviz.ops import shrink as _shrink  # noqa: E402


def threshold(input, threshold, value, inplace: bool = False):
    """``input`` where it is above ``threshold``, ``value`` elsewhere (ThresholdBackward0; in place 1)."""
    return _shrink.threshold(input, threshold, value, inplace)


def threshold_(input, threshold, value):
    return _shrink.threshold(input, threshold, value, True)


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False):
    """A leaky ReLU whose negative slope is drawn from U(lower, upper) per element in training and is their
    mean otherwise (RreluWithNoiseBackward0)."""
    return _shrink.rrelu(input, lower, upper, training, inplace)


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    return _shrink.rrelu(input, lower, upper, training, True)


from gradviz.ops.distances import pairwise_distance  # noqa: E402


# -- convolution and pooling (ops/convolution.py, ops/pooling.py) -----------------------------------------
from gradviz.ops.convolution import (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,  # noqa: E402
                                     conv_transpose3d)

__all__ += ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
from gradviz.ops.pooling import (adaptive_avg_pool1d, adaptive_avg_pool2d, avg_pool1d, avg_pool2d,  # noqa: E402
                                 max_pool1d, max_pool1d_with_indices, max_pool2d, max_pool2d_with_indices)

__all__ += ["max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d"]
# -- more losses: margin ranking, hinge embedding, soft margin, Poisson and Gaussian NLL, triplet margin
# -- (ops/losses_more.py); the in-place activations under their F names -------------------------------------------
from gradviz.ops.losses_more import (gaussian_nll_loss, hinge_embedding_loss, margin_ranking_loss,  # noqa: E402
                                     poisson_nll_loss, soft_margin_loss, triplet_margin_loss)


def relu_(input):
    """``relu`` in place."""
    return input.relu_()


def elu_(input, alpha: float = 1.0):
    """``elu`` in place."""
    return elu(input, alpha, inplace=True)


def selu_(input):
    """``selu`` in place."""
    return selu(input, inplace=True)


def celu_(input, alpha: float = 1.0):
    """``celu`` in place."""
    return celu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope: float = 0.01):
    """``leaky_relu`` in place."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    """``hardtanh`` in place."""
    return hardtanh(input, min_val, max_val, inplace=True)


# -- the functional forms' torch.* names, each in PyTorch's top-level signature (a loss's reduction there is ATen's
# -- int: 0 none, 1 mean, 2 sum); gradviz's facade reaches them lazily --------------------------------------------
def _reduction_name(function_name: str, reduction) -> str:
    if not isinstance(reduction, int) or isinstance(reduction, bool):
        raise TypeError(f"{function_name}(): argument 'reduction' must be int, not {type(reduction).__name__}")
    return {0: "none", 1: "mean", 2: "sum"}[reduction]


def _torch_margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction: int = 1):
    return margin_ranking_loss(input1, input2, target, margin, reduction=_reduction_name("margin_ranking_loss", reduction))


def _torch_hinge_embedding_loss(input, target, margin: float = 1.0, reduction: int = 1):
    return hinge_embedding_loss(input, target, margin, reduction=_reduction_name("hinge_embedding_loss", reduction))


def _torch_poisson_nll_loss(input, target, log_input: bool, full: bool, eps: float, reduction: int):
    return poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction_name("poisson_nll_loss",
                                                                                               reduction))


def _torch_triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                               swap: bool = False, reduction: int = 1):
    return triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                               reduction=_reduction_name("triplet_margin_loss", reduction))


def _torch_dropout(input, p: float, train: bool):
    return dropout(input, p, train)


def _torch_dropout_(input, p: float, train: bool):
    return dropout(input, p, train, inplace=True)


def _torch_layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5, cudnn_enable: bool = True):
    return layer_norm(input, normalized_shape, weight, bias, eps)


def _torch_batch_norm(input, weight, bias, running_mean, running_var, training: bool, momentum: float, eps: float,
                      cudnn_enabled: bool):
    return batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


for _name in ("margin_ranking_loss", "hinge_embedding_loss", "poisson_nll_loss", "triplet_margin_loss", "dropout",
              "dropout_", "layer_norm", "batch_norm"):
    globals()[f"_torch_{_name}"].__name__ = _name  # PyTorch's name, in help() and messages
# -- group, instance and RMS normalization ------------------------------------------------------------------------
from gradviz.ops.normalization import group_norm, instance_norm, rms_norm  # noqa: E402

__all__ += ["group_norm", "instance_norm", "rms_norm"]


def _torch_group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5, cudnn_enabled: bool = True):
    from gradviz.ops.normalization import _group_norm

    return _group_norm(input, weight, bias, num_groups, eps)  # (torch.group_norm skips F's size check)


def _torch_instance_norm(input, weight, bias, running_mean, running_var, use_input_stats: bool, momentum: float,
                         eps: float, cudnn_enabled: bool):
    from gradviz.ops.normalization import _instance_norm

    return _instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps)


_torch_rms_norm = rms_norm
for _name in ("group_norm", "instance_norm"):
    globals()[f"_torch_{_name}"].__name__ = _name
# -- resampling: interpolate (and its deprecated names), pixel and channel shuffles -------------------------------------
from gradviz.ops.resampling import channel_shuffle, interpolate, pixel_shuffle, pixel_unshuffle  # noqa: E402


def _deprecated_upsample(name: str) -> None:
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.", UserWarning,
                  stacklevel=3)


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
             recompute_scale_factor=None):
    """``interpolate``'s old name (PyTorch warns that it is deprecated)."""
    _deprecated_upsample("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor)


def upsample_nearest(input, size=None, scale_factor=None):
    """``interpolate(mode='nearest')``'s old name (deprecated)."""
    _deprecated_upsample("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """``interpolate(mode='bilinear', align_corners=True)``'s old name (deprecated)."""
    _deprecated_upsample("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


__all__ += ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle",
            "channel_shuffle"]


# -- attention: scaled dot-product attention (ops/attention.py) and multi-head attention (nn/attention.py) -----------
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False,
                                 scale=None, enable_gqa: bool = False):
    """``softmax(query keyᵀ · scale + attn_mask) value``: PyTorch's fused CPU node or its math composite, as
    PyTorch picks (nn/attention.py)."""
    from gradviz.nn.attention import scaled_dot_product_attention as attention

    return attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


__all__ += ["scaled_dot_product_attention"]


def multi_head_attention_forward(*args, **kwargs):
    """PyTorch's multi-head attention as a function (nn/attention.py)."""
    from gradviz.nn.attention import multi_head_attention_forward as forward

    return forward(*args, **kwargs)


__all__ += ["multi_head_attention_forward"]
# -- the rest of pooling, fold/unfold and local response normalization (ops/pooling.py, ops/fold.py) ----------------
from gradviz.ops.fold import fold, unfold  # noqa: E402
from gradviz.ops.pooling import (adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool1d_with_indices,  # noqa: E402
                                 adaptive_max_pool2d, adaptive_max_pool2d_with_indices, adaptive_max_pool3d,
                                 adaptive_max_pool3d_with_indices, avg_pool3d, local_response_norm, lp_pool1d,
                                 lp_pool2d, lp_pool3d, max_pool3d, max_pool3d_with_indices, max_unpool1d, max_unpool2d,
                                 max_unpool3d)

__all__ += ["max_pool3d", "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
            "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
            "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d",
            "max_unpool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "fold", "unfold", "local_response_norm"]
