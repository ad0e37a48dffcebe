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
                            is_tensor, linspace, manual_seed, ones, ones_like, rand, rand_like, randn, randn_like,
                            tensor, zeros, zeros_like)
from gradviz import ops  # noqa: E402  (installs the Tensor methods)
from gradviz.ops import (abs, add, addmm, bmm, clamp, clone, cos, div, dot, eq, exp, flatten, ge, gt, le, log,
                         log_softmax, lt, matmul, max, maximum, mean, minimum, mm, mul, mv, ne, neg, permute, pow,
                         reciprocal, relu, reshape, rsub, sigmoid, sin, softmax, sqrt, squeeze, sub, sum, t, tanh,
                         transpose, unsqueeze, where)
from gradviz import autograd, cuda  # noqa: E402
from gradviz.graph import graph  # noqa: E402
from gradviz.graph.torch_source import is_torch_tensor as _is_torch_tensor  # noqa: E402


def _torch_backward_steps(*args, **options):  # imports torch-stepping code only when a torch tensor is stepped
    from gradviz.autograd.torch_steps import torch_backward_steps

    return torch_backward_steps(*args, **options)


autograd.engine.register_foreign_engine(_is_torch_tensor, _torch_backward_steps)  # until gradviz.interop does it

half, float, double, long, int, short = float16, float32, float64, int64, int32, int16  # noqa: A001
clip = clamp
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
