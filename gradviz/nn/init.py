"""``gradviz.nn.init``: fill a weight in place with the numbers PyTorch's initialisers draw.

Each function works out a bound or a standard deviation from the tensor's shape (``fan_in`` is the
number of inputs each output sees) and fills the tensor with ``uniform_`` or ``normal_`` under
``no_grad``; with the same seed, the numbers are torch's. ``nn.Linear`` uses
``kaiming_uniform_(weight, a=sqrt(5))``, which works out to the bound ``1 / sqrt(fan_in)``.
"""
from __future__ import annotations

import math
import warnings

from gradviz.grad_mode import no_grad

__all__ = ["calculate_gain", "constant_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_", "uniform_",
           "xavier_normal_", "xavier_uniform_", "zeros_"]

_GAINS = {"linear": 1, "conv1d": 1, "conv2d": 1, "conv3d": 1, "conv_transpose1d": 1, "conv_transpose2d": 1,
          "conv_transpose3d": 1, "sigmoid": 1, "tanh": 5.0 / 3, "relu": math.sqrt(2.0), "selu": 3.0 / 4}


def calculate_gain(nonlinearity: str, param=None) -> float:
    """How much an activation shrinks the spread of its inputs, to be made up by the initial weights."""
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity not in _GAINS:
        raise ValueError(f"Unsupported nonlinearity {nonlinearity}")
    return _GAINS[nonlinearity]


def _calculate_fan_in_and_fan_out(tensor) -> tuple:
    """``(inputs per output, outputs per input)``: dims 1 and 0, times the kernel size of a conv."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _fan(tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor, val: float):
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """Uniform in ``[-b, b]`` with ``b = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot and Bengio)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """Normal with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _empty_warning(tensor) -> bool:
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
        return True
    return False


def kaiming_uniform_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """Uniform in ``[-b, b]`` with ``b = sqrt(3) * gain / sqrt(fan)`` (He et al.)."""
    if _empty_warning(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """Normal with ``std = gain / sqrt(fan)`` (He et al.)."""
    if _empty_warning(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)
