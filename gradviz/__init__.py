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
from gradviz.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from gradviz.tensor import (Generator, Size, Tensor, arange, as_tensor, empty, eye, from_numpy, full, full_like,
                            get_default_device, is_tensor, linspace, manual_seed, ones, ones_like, rand, rand_like,
                            randn, randn_like, set_default_device, tensor, zeros, zeros_like)
from gradviz._dtype import get_default_dtype, set_default_dtype
from gradviz import ops  # noqa: E402  (installs the Tensor methods)
from gradviz.ops import (abs, add, addmm, all, allclose, any, argmax, argmin, bitwise_and, bitwise_not,  # noqa: A004
                         bitwise_or, bitwise_xor, bmm, cat, clamp, clone, cos, div, dot, eq, equal, exp, expand_as,
                         flatten, gather, ge, gt, index_select, le, log, log_softmax, logical_and, logical_not,
                         logical_or, logical_xor, lt,
                         masked_fill, matmul, max, maximum, mean, minimum, mm, mul, mv, narrow, ne, neg, norm, permute,
                         pow, reciprocal, relu, repeat, reshape, rsub, sigmoid, sin, softmax, sqrt, square, squeeze,
                         stack, sub, sum, t, tanh, transpose, unsqueeze, where)
from gradviz.ops.conversion import CONTIGUOUS_FORMAT as contiguous_format, PRESERVE_FORMAT as preserve_format
from gradviz.legacy import (BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor,  # noqa: E402
                            IntTensor, LongTensor, ShortTensor)
from gradviz import accelerator, autograd, cuda  # noqa: E402
from gradviz.graph import graph  # noqa: E402

half, float, double, long, int, short = float16, float32, float64, int64, int32, int16  # noqa: A001
clip = clamp
concat = concatenate = cat
__version__ = "0.1.0"

_LAZY = {
    "nn": ("gradviz.nn", None),
    "optim": ("gradviz.optim", None),
    "show": ("gradviz.widget", "show"),
    "export_html": ("gradviz.widget", "export_html"),
    "GraphWidget": ("gradviz.widget", "GraphWidget"),
    "compare": ("gradviz.graph.compare", "compare"),
}


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
