"""Convolution, one node as in PyTorch (ConvolutionBackward0), for 1, 2 and 3 spatial dims.

``F.conv1d``, ``F.conv2d``, ``F.conv_transpose2d`` ... all end in ``convolution(input, weight, bias,
stride, padding, dilation, transposed, output_padding, groups)``, PyTorch's ``at::convolution``, whose
node saves what PyTorch's saves (``_saved_input``, ``_saved_weight``, ``_saved_stride``, ...,
``_saved_bias_sym_sizes_opt``). Everything is computed from three numpy kernels on arrays:

* ``conv_forward``: each output element is a dot product of the weight with one window of the
  zero-padded input. The windows are a strided view of the padded input (no copy), shaped
  ``(N, C, *out, *kernel)``; ``tensordot`` over ``(C/groups, *kernel)`` then copies them once into
  PyTorch's im2col matrix and multiplies it by the weight, one group at a time.
* ``conv_input_grad``: the adjoint of ``conv_forward`` in the input (a transposed convolution): the
  gradient times the weight gives one column per kernel offset, each added back into the padded input
  at the positions that offset read (one strided slice per offset), and the padding cut off.
* ``conv_weight_grad``: the adjoint in the weight: the same windows as the forward, contracted with
  the gradient over the batch and the output positions.

A transposed convolution is the input-gradient kernel run forward, so its gradients are the other two
kernels with the roles swapped (``_run``, ``_grad_input``, ``_grad_weight``). Convolution is linear in
the input and in the weight, so the second derivative (``ConvolutionBackwardBackward0``, PyTorch's
``_convolution_double_backward``) is made of the same three kernels again.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
from numpy.lib.stride_tricks import as_strided

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.backends import numpy_backend
from gradviz.ops.normalization import _NormBackwardOp


# -- the three kernels, on numpy arrays -----------------------------------------------------------------
def _padded(x, padding):
    if not any(padding):
        return x
    return np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))


def _windows(padded, kernel, stride, dilation, out):
    """A read-only view ``(N, C, *out, *kernel)``: ``[n, c, o..., k...]`` is ``padded[n, c, o*stride + k*dilation]``."""
    spatial = padded.strides[2:]
    shape = padded.shape[:2] + tuple(out) + tuple(kernel)
    strides = padded.strides[:2] + tuple(s * st for s, st in zip(spatial, stride)) + \
        tuple(s * d for s, d in zip(spatial, dilation))
    return as_strided(padded, shape, strides, writeable=False)


def output_size(size, kernel, stride, padding, dilation):
    """Output positions along each spatial dim of a (not transposed) convolution."""
    return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                 for s, k, st, p, d in zip(size, kernel, stride, padding, dilation))


def conv_forward(x, w, stride, padding, dilation, groups):
    """``x (N, C, *S)`` convolved with ``w (O, C/groups, *K)``: ``(N, O, *out)``."""
    dims = x.ndim - 2
    kernel = w.shape[2:]
    padded = _padded(x, padding)
    out = output_size(x.shape[2:], kernel, stride, padding, dilation)
    windows = _windows(padded, kernel, stride, dilation, out)
    in_group, out_group = x.shape[1] // groups, w.shape[0] // groups
    result = np.empty((x.shape[0], w.shape[0]) + out, dtype=np.result_type(x, w))
    contracted = ([1] + list(range(2 + dims, 2 + 2 * dims)), list(range(1, 2 + dims)))
    for g in range(groups):
        part = np.tensordot(windows[:, g * in_group:(g + 1) * in_group], w[g * out_group:(g + 1) * out_group],
                            axes=contracted)  # (N, *out, O/groups)
        result[:, g * out_group:(g + 1) * out_group] = np.moveaxis(part, -1, 1)
    return result


def conv_input_grad(grad, w, input_shape, stride, padding, dilation, groups):
    """The gradient of ``conv_forward`` in its input (shaped ``input_shape``): a transposed convolution."""
    dims = grad.ndim - 2
    kernel = w.shape[2:]
    out = grad.shape[2:]
    in_group, out_group = w.shape[1], w.shape[0] // groups
    padded = np.zeros(tuple(input_shape[:2]) + tuple(s + 2 * p for s, p in zip(input_shape[2:], padding)),
                      dtype=np.result_type(grad, w))
    for g in range(groups):
        # (N, *out, C/groups, *K): what each output position sends to each kernel offset's input
        columns = np.tensordot(grad[:, g * out_group:(g + 1) * out_group], w[g * out_group:(g + 1) * out_group],
                               axes=([1], [0]))
        channels = slice(g * in_group, (g + 1) * in_group)
        for offset in itertools.product(*(range(k) for k in kernel)):
            reached = tuple(slice(k * d, k * d + st * (o - 1) + 1, st)
                            for k, d, st, o in zip(offset, dilation, stride, out))
            padded[(slice(None), channels) + reached] += np.moveaxis(columns[(Ellipsis,) + offset], -1, 1)
    inner = tuple(slice(p, p + s) for p, s in zip(padding, input_shape[2:]))
    return np.ascontiguousarray(padded[(slice(None), slice(None)) + inner]) if any(padding) else padded


def conv_weight_grad(x, grad, weight_shape, stride, padding, dilation, groups):
    """The gradient of ``conv_forward`` in its weight (shaped ``weight_shape``)."""
    dims = x.ndim - 2
    kernel = tuple(weight_shape[2:])
    windows = _windows(_padded(x, padding), kernel, stride, dilation, grad.shape[2:])
    in_group, out_group = weight_shape[1], weight_shape[0] // groups
    result = np.empty(tuple(weight_shape), dtype=np.result_type(x, grad))
    summed = [0] + list(range(2, 2 + dims))
    for g in range(groups):
        result[g * out_group:(g + 1) * out_group] = np.tensordot(
            grad[:, g * out_group:(g + 1) * out_group], windows[:, g * in_group:(g + 1) * in_group],
            axes=(summed, summed))  # (O/groups, C/groups, *K)
    return result


# -- a convolution or a transposed one, in terms of the three kernels ------------------------------------
def _transposed_shape(x_shape, w_shape, stride, padding, dilation, output_padding, groups):
    spatial = tuple((s - 1) * st - 2 * p + d * (k - 1) + op + 1 for s, k, st, p, d, op
                    in zip(x_shape[2:], w_shape[2:], stride, padding, dilation, output_padding))
    return (x_shape[0], w_shape[1] * groups) + spatial


def _run(x, w, params):
    """The op's forward on arrays (no bias)."""
    stride, padding, dilation, transposed, output_padding, groups = params
    if transposed:
        shape = _transposed_shape(x.shape, w.shape, stride, padding, dilation, output_padding, groups)
        return conv_input_grad(x, w, shape, stride, padding, dilation, groups)
    return conv_forward(x, w, stride, padding, dilation, groups)


def _grad_input(grad, w, x_shape, params):
    stride, padding, dilation, transposed, _, groups = params
    if transposed:  # positions added by output_padding reach past the input: cut off
        full = conv_forward(grad, w, stride, padding, dilation, groups)
        return full[(Ellipsis,) + tuple(slice(0, s) for s in x_shape[2:])]
    return conv_input_grad(grad, w, x_shape, stride, padding, dilation, groups)


def _grad_weight(x, grad, w_shape, params):
    stride, padding, dilation, transposed, _, groups = params
    if transposed:
        return conv_weight_grad(grad, x, w_shape, stride, padding, dilation, groups)
    return conv_weight_grad(x, grad, w_shape, stride, padding, dilation, groups)


def _with_bias(out, bias):
    return out + bias.reshape((1, -1) + (1,) * (out.ndim - 2))


def _bias_grad(grad):
    return grad.sum(axis=(0,) + tuple(range(2, grad.ndim)))


def _arrays(*tensors):
    return tuple(None if t is None else np.asarray(t._backend.to_numpy(t._data)) for t in tensors)


def _back(backend, array, like, device):
    """``array`` in the dtype of the numpy array ``like``, on ``backend`` (numpy's: the array itself)."""
    array = array.astype(like.dtype, copy=False)
    if backend is numpy_backend:
        return array
    return backend.array(array, _dtype.from_any(array.dtype), device)


class ConvolutionBackward0(OpFunction):
    """``at::convolution``: every ``F.conv*`` and ``F.conv_transpose*`` is this one node."""

    inputs = ("input", "weight", "bias")
    derivatives = {
        "input": ("convolution_backward(grad, input, weight, ...)[0]",
                  r"\bar{y} \star_{\mathrm{T}} w\ \text{(a transposed convolution)}"),
        "weight": ("convolution_backward(grad, input, weight, ...)[1]", r"x \star \bar{y}"),
        "bias": ("convolution_backward(grad, input, weight, ...)[2]", r"\textstyle\sum_{n,\,\text{positions}} \bar{y}"),
    }

    def forward(ctx, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups,
                absent_bias_sizes=None):
        """The parameters as given (saved so, as PyTorch shows them: ``padding='valid'`` saves ``(0,)``);
        ``_saved_bias_sym_sizes_opt`` without a bias is None from ``torch.convolution``, ``(0,)`` from ``F.conv*``."""
        x, w, b = _arrays(input, weight, bias)
        params = _expanded(w.ndim - 2, stride, padding, dilation, transposed, output_padding, groups)
        ctx.save(bias_sym_sizes_opt=tuple(bias.shape) if bias is not None else absent_bias_sizes, dilation=dilation,
                 groups=groups, input=input, output_padding=output_padding, padding=padding, stride=stride,
                 transposed=transposed, weight=weight)
        ctx.params = params
        out = _run(x, w, params)
        if b is not None:
            out = _with_bias(out, b)
        return _back(input._backend, out, x, input._backend.device_of(input._data))

    def backward(ctx, grad):
        x, w = ctx.saved("input", "weight")
        return _first_derivative(ctx.backend, grad, x, w, ctx.params, ctx.needs_input_grad)

    def backward_graph(ctx, grad):
        """``convolution_backward`` as an op of its own (ConvolutionBackwardBackward0: three outputs, edges
        to grad_output, input and weight), as PyTorch records it."""
        input, weight = ctx.saved_graph("input", "weight")
        stride, padding, dilation, transposed, output_padding, groups = ctx.saved(
            "stride", "padding", "dilation", "transposed", "output_padding", "groups")
        saved = dict(dilation=dilation, grad_output=grad, groups=groups, input=input, output_padding=output_padding,
                     padding=padding, stride=stride, transposed=transposed, weight=weight)
        node_backward = lambda g: _first_derivative(ctx.backend, g, input._data, weight._data, ctx.params,  # noqa: E731
                                                    ctx.needs_input_grad)
        return ConvolutionBackwardBackward0.apply((grad, input, weight), (0, 1, 2), None, node_backward,
                                                  ctx.needs_input_grad, saved)


def _first_derivative(backend, grad, x, w, params, needs):
    """``convolution_backward`` on the backend's arrays: the input's, weight's and bias's gradients (None where not needed)."""
    g = np.asarray(backend.to_numpy(grad))
    x, w = np.asarray(backend.to_numpy(x)), np.asarray(backend.to_numpy(w))
    device = backend.device_of(grad)
    grad_input = grad_weight = grad_bias = None
    if needs[0]:
        grad_input = _back(backend, _grad_input(g, w, x.shape, params), x, device)
    if needs[1]:
        grad_weight = _back(backend, _grad_weight(x, g, w.shape, params), w, device)
    if needs[2:3] == (True,):
        grad_bias = _back(backend, _bias_grad(g), g, device)
    return grad_input, grad_weight, grad_bias


class ConvolutionBackwardBackward0(_NormBackwardOp):
    """``convolution_backward(grad_output, input, weight, ...)``: three outputs (the input's, weight's and
    bias's gradients). Convolution is bilinear, so its derivative (``_convolution_double_backward``) is
    made of the same kernels: the grad_output's gradient is the convolution of the incoming input
    gradient with the weight plus that of the input with the incoming weight gradient (plus the incoming
    bias gradient); the input's is the first input-gradient with the incoming weight gradient as weight;
    the weight's, the first weight-gradient with the incoming input gradient as input."""

    inputs = ("grad_output", "input", "weight")
    derivatives = {"grad_output": ("_convolution_double_backward(...)[0]", r"\partial^2"),
                   "input": ("_convolution_double_backward(...)[1]", r"\partial^2"),
                   "weight": ("_convolution_double_backward(...)[2]", r"\partial^2")}

    def backward(ctx, grad_grad_input, grad_grad_weight=None, grad_grad_bias=None):
        backend = ctx.backend
        go, x, w = _arrays_of(backend, ctx.saved("grad_output", "input", "weight"))
        params = _expanded(w.ndim - 2, *ctx.saved("stride", "padding", "dilation", "transposed", "output_padding",
                                                 "groups"))
        needs = ctx.needs_input_grad
        ggi, ggw, ggb = _arrays_of(backend, (grad_grad_input, grad_grad_weight, grad_grad_bias))
        results = [None, None, None]
        if needs[0]:
            total = np.zeros(go.shape, dtype=go.dtype)
            if ggi is not None:
                total = total + _run(ggi, w, params)
            if ggw is not None:
                total = total + _run(x, ggw, params)
            if ggb is not None:
                total = _with_bias(total, ggb)
            results[0] = total
        if needs[1]:
            results[1] = np.zeros(x.shape, x.dtype) if ggw is None else _grad_input(go, ggw, x.shape, params)
        if needs[2]:
            results[2] = np.zeros(w.shape, w.dtype) if ggi is None else _grad_weight(ggi, go, w.shape, params)
        device = backend.device_of(next(g for g in (grad_grad_input, grad_grad_weight, grad_grad_bias) if g is not None))
        return tuple(None if r is None else _back(backend, r, like, device) for r, like in zip(results, (go, x, w)))


def _arrays_of(backend, arrays):
    return tuple(None if a is None else np.asarray(backend.to_numpy(a)) for a in arrays)


# -- argument checks and the functions ---------------------------------------------------------------------
def _expand(value, dims: int, name: str) -> tuple:
    if isinstance(value, int):
        return (value,) * dims
    value = tuple(value)
    if len(value) == 1:
        return value * dims
    if len(value) != dims:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {dims} values to match the "
                           f"convolution dimensions, but got {name}={list(value)}")
    return value


def _expanded(dims: int, stride, padding, dilation, transposed, output_padding, groups) -> tuple:
    """The parameters with a value per spatial dim (a single value repeated), for the kernels."""
    return (_expand(stride, dims, "stride"), _expand(padding, dims, "padding"), _expand(dilation, dims, "dilation"),
            transposed, _expand(output_padding, dims, "output_padding"), groups)


def _torch_type(tensor) -> str:
    return f"torch.{_dtype.SCALAR_TYPE_NAMES[tensor.dtype.name]}Tensor"


def _check(input, weight, bias, padding, stride, dilation, transposed, output_padding, groups):
    """PyTorch's ``check_shape_forward``, its messages in its order."""
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    w_shape = list(weight.shape)
    if weight.ndim != input.ndim:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-dimensional weight {w_shape}, "
                           f"but got {input.ndim}-dimensional input of size {list(input.shape)} instead")
    if w_shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {w_shape} instead")
    if w_shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{w_shape}] instead")
    if not transposed:
        if input.shape[1] != w_shape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {w_shape}, expected input{list(input.shape)} to "
                               f"have {w_shape[1] * groups} channels, but got {input.shape[1]} channels instead")
        if bias is not None and (bias.ndim != 1 or bias.shape[0] != w_shape[0]):
            raise RuntimeError(f"Given weight of size {w_shape}, expected bias to be 1-dimensional with {w_shape[0]} "
                               f"elements, but got bias of size {list(bias.shape)} instead")
        padded = [s + 2 * p for s, p in zip(input.shape[2:], padding)]
        spans = [d * (k - 1) + 1 for d, k in zip(dilation, w_shape[2:])]
        if any(p < k for p, k in zip(padded, spans)):
            raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                               f"size: ({' x '.join(map(str, spans))}). Kernel size can't be greater than actual "
                               "input size")
    else:
        if input.shape[1] != w_shape[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {w_shape}, expected input{list(input.shape)} to "
                               f"have {w_shape[0]} channels, but got {input.shape[1]} channels instead")
        if bias is not None and (bias.ndim != 1 or bias.shape[0] != w_shape[1] * groups):
            raise RuntimeError(f"Given transposed=1, weight of size {w_shape}, expected bias to be 1-dimensional with "
                               f"{w_shape[1] * groups} elements, but got bias of size {list(bias.shape)} instead")
        spatial = _transposed_shape(tuple(input.shape), tuple(w_shape), stride, padding, dilation, output_padding,
                                    groups)[2:]
        if any(s <= 0 for s in spatial):
            raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, input.shape[2:]))}). Calculated "
                               f"output size per channel: ({' x '.join(map(str, spatial))}). Output size is too small")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"Input type ({_torch_type(input)}) and weight type ({_torch_type(weight)}) should be the "
                           "same or input should be a MKLDNN tensor and weight is a dense tensor")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({_dtype.SCALAR_TYPE_NAMES[input.dtype.name].lower()}) and bias type "
                           f"({_dtype.SCALAR_TYPE_NAMES[bias.dtype.name].lower()}) should be the same")


def convolution(input, weight, bias, stride, padding, dilation, transposed: bool, output_padding, groups: int,
                _absent_bias_sizes=None):
    """``torch.convolution``: batched input only, every parameter a tuple (or an int, repeated)."""
    given = tuple((value,) if isinstance(value, int) else tuple(value)
                  for value in (stride, padding, dilation, output_padding))
    expanded = _expanded(weight.ndim - 2, *given[:3], transposed, given[3], groups)
    _check(input, weight, bias, expanded[1], expanded[0], expanded[2], transposed, expanded[4], groups)
    return ConvolutionBackward0.apply(input, weight, bias, *given[:3], bool(transposed), given[3], groups,
                                      _absent_bias_sizes)


def _batched(input, name: str, dims: int):
    """(input made batched, whether it was): PyTorch's ``batchify``."""
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, but got "
                           f"input of size: {list(input.shape)}")
    if input.ndim == dims + 2:
        return input, True
    from gradviz.ops.shape import unsqueeze

    return unsqueeze(input, 0), False


def _unbatched(output, was_batched: bool):
    if was_batched:
        return output
    from gradviz.ops.shape import squeeze

    return squeeze(output, 0)


def _conv(name: str, dims: int, input, weight, bias, stride, padding, dilation, groups):
    input, batched = _batched(input, name, dims)
    stride, dilation = _expand(stride, dims, "stride"), _expand(dilation, dims, "dilation")
    if isinstance(padding, str):
        if padding == "valid":  # PyTorch's conv with padding {0} and output_padding {0}
            return _unbatched(convolution(input, weight, bias, stride, (0,), dilation, False, (0,), groups, (0,)),
                              batched)
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        input, padding = _same_padding(input, weight, stride, dilation, dims)
    return _unbatched(convolution(input, weight, bias, stride, _expand(padding, dims, "padding"), dilation, False,
                                  (0,) * dims, groups, (0,)), batched)


def _same_padding(input, weight, stride, dilation, dims):
    """PyTorch's ``_convolution_same``: padding that keeps the size; an odd total puts the extra zero after
    the input, through ``constant_pad_nd`` (ConstantPadNdBackward0) before the convolution."""
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    left, right = [], []
    for d, k in zip(dilation, weight.shape[2:]):
        total = d * (k - 1)
        left.append(total // 2)
        right.append(total - total // 2)
    if left == right:
        return input, tuple(left)
    warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy of "
                  "the input be created", UserWarning, stacklevel=4)
    pad = [0] * (2 * dims)
    for i in range(dims):
        position = 2 * (dims - 1 - i)
        delta = right[i] - left[i]
        if delta > 0:
            pad[position + 1] = delta
        else:
            pad[position] = delta
            left[i] = right[i]
    from gradviz.ops.padding import ConstantPadNdBackward0

    return ConstantPadNdBackward0.apply(input, tuple(pad), 0), tuple(left)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``F.conv1d``: ``(N, C, L)`` or ``(C, L)`` input, ``(O, C/groups, K)`` weight (ConvolutionBackward0)."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``F.conv2d``: ``(N, C, H, W)`` or ``(C, H, W)`` input, ``(O, C/groups, kH, kW)`` weight (ConvolutionBackward0)."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``F.conv3d``: ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input (ConvolutionBackward0)."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(name: str, dims: int, input, weight, bias, stride, padding, output_padding, groups, dilation):
    input, batched = _batched(input, name, dims)
    output = convolution(input, weight, bias, _expand(stride, dims, "stride"), _expand(padding, dims, "padding"),
                         _expand(dilation, dims, "dilation"), True, _expand(output_padding, dims, "output_padding"),
                         groups, (0,))
    return _unbatched(output, batched)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """``F.conv_transpose1d``: the input-gradient of ``conv1d`` run forward (ConvolutionBackward0, transposed)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """``F.conv_transpose2d``: the input-gradient of ``conv2d`` run forward (ConvolutionBackward0, transposed)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """``F.conv_transpose3d``: the input-gradient of ``conv3d`` run forward (ConvolutionBackward0, transposed)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups, dilation)


# -- torch.nn.grad: convolution_backward with one output asked for ------------------------------------------
def convolution_backward(grad_output, input, weight, stride, padding, dilation, transposed, output_padding, groups,
                         output_mask):
    """``aten.convolution_backward`` without a bias: recorded (ConvolutionBackwardBackward0) when an input
    requires grad, as in PyTorch."""
    params = _expanded(weight.ndim - 2, stride, padding, dilation, transposed, output_padding, groups)
    saved = dict(dilation=dilation, grad_output=grad_output, groups=groups, input=input, output_padding=output_padding,
                 padding=padding, stride=stride, transposed=transposed, weight=weight)
    mask = tuple(output_mask) + (False,)
    node_backward = lambda g: _first_derivative(grad_output._backend, g, input._data, weight._data, params,  # noqa: E731
                                                mask)
    return ConvolutionBackwardBackward0.apply((grad_output, input, weight), (0, 1, 2), None, node_backward, mask, saved)


def _placeholder(grad_output, size):
    """PyTorch's ``grad_output.new_empty(1).expand(size)``: only its shape is read."""
    from gradviz.tensor import zeros

    return zeros(1, dtype=grad_output.dtype).expand(*size)


def _grad_of(which: int, dims: int, input, weight, grad_output, stride, padding, dilation, groups):
    params = [_expand(stride, dims, "stride"), _expand(padding, dims, "padding"), _expand(dilation, dims, "dilation")]
    mask = (which == 0, which == 1)
    return convolution_backward(grad_output, input, weight, *params, False, (0,), groups, mask)[which]


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """``torch.nn.grad.conv1d_input``: the gradient of ``conv1d`` in an input of size ``input_size``."""
    return _grad_of(0, 1, _placeholder(grad_output, input_size), weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """``torch.nn.grad.conv1d_weight``: the gradient of ``conv1d`` in a weight of size ``weight_size``."""
    return _grad_of(1, 1, input, _placeholder(grad_output, weight_size), grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """``torch.nn.grad.conv2d_input``: the gradient of ``conv2d`` in an input of size ``input_size``."""
    return _grad_of(0, 2, _placeholder(grad_output, input_size), weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """``torch.nn.grad.conv2d_weight``: the gradient of ``conv2d`` in a weight of size ``weight_size``."""
    return _grad_of(1, 2, input, _placeholder(grad_output, weight_size), grad_output, stride, padding, dilation, groups)
