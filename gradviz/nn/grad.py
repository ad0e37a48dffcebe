"""``torch.nn.grad``: a convolution's gradient in its input or its weight, as a function of its own.

PyTorch's tutorial "Fusing Convolution and Batch Norm using Custom Functions" calls these in a custom
Function's backward. Each is ``convolution_backward`` with one output asked for (recorded as
ConvolutionBackwardBackward0 when an argument requires grad, as in PyTorch).
"""
from gradviz.ops.convolution import conv1d_input, conv1d_weight, conv2d_input, conv2d_weight

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight"]
