"""Random fills recorded as PyTorch records them: the new values do not depend on the old ones.

``x.normal_()`` on a tensor in the graph gives it the node ``NormalBackward0`` (``uniform_``:
``UniformBackward0``; ``bernoulli_(p)``: ``BernoulliBackward2``, or ``BernoulliBackward1`` with a
tensor of probabilities; ``torch.bernoulli(p)``: ``BernoulliBackward0``). Each sends a zero gradient
back: the drawn numbers are constants as far as the chain rule is concerned. The numbers themselves
are drawn by ``gradviz.random`` before the node is made; ``forward`` only hands them on.
"""
from __future__ import annotations

from gradviz.autograd.function import OpFunction
from gradviz.tensor import Tensor


class _RandomFill(OpFunction):
    """A node whose output is freshly drawn ``values``; every input gets a zero gradient."""

    inputs = ("self",)
    derivatives = {"self": ("zeros_like(grad)", r"0")}

    def forward(ctx, self, values):
        return values

    def backward(ctx, grad):
        return ctx.backend.zeros_like(grad)

    def backward_graph(ctx, grad):
        """``zeros_like(grad)``: zeros with no history (under ``create_graph`` the buffer that sums them
        with another gradient records an AddBackward0 with an empty edge, as PyTorch's does)."""
        return _constant(ctx, ctx.backend.zeros_like(grad._data))


class NormalBackward0(_RandomFill):
    pass


class UniformBackward0(_RandomFill):
    pass


class BernoulliBackward0(_RandomFill):
    """``torch.bernoulli(p)``: draws 0 or 1 with the probabilities ``p``."""


class BernoulliBackward2(_RandomFill):
    """``x.bernoulli_(p)`` with a number ``p``."""


class BernoulliBackward1(OpFunction):
    """``x.bernoulli_(p)`` with a tensor ``p``: both get a zero gradient."""

    inputs = ("self", "p")
    derivatives = {"self": ("zeros_like(grad)", r"0"), "p": ("zeros_like(p)", r"0")}

    def forward(ctx, self, p, values):
        ctx.p_meta = (tuple(p.shape), p.dtype, p.device)
        return values

    def backward(ctx, grad):
        backend = ctx.backend
        return (backend.zeros_like(grad) if ctx.needs_input_grad[0] else None,
                _zeros(backend, *ctx.p_meta) if ctx.needs_input_grad[1] else None)


    def backward_graph(ctx, grad):
        backend = ctx.backend
        return (_constant(ctx, backend.zeros_like(grad._data)) if ctx.needs_input_grad[0] else None,
                _constant(ctx, _zeros(backend, *ctx.p_meta)) if ctx.needs_input_grad[1] else None)


def _constant(ctx, array) -> Tensor:
    return Tensor._make(array, backend=ctx.backend)


def _zeros(backend, shape, dtype, device):
    return backend.full(shape, 0, dtype, device)


RECORDED_FILLS = {"normal": NormalBackward0, "uniform": UniformBackward0, "bernoulli": BernoulliBackward2,
                  "bernoulli_tensor": BernoulliBackward1}


# -- torch.normal with a tensor of means, of standard deviations, or both --------------------------------------
# PyTorch fills the output with normal numbers first (``normal_(0, std)`` for a number std, else
# ``normal_(0, 1)``), then moves them: ``+ mean`` for a number std, else ``* std + mean`` in two roundings.
# The nodes send zeros (the draw does not depend on mean or std as far as PyTorch's chain rule goes).
class _NormalOfTensors(OpFunction):
    def forward(ctx, *args):
        *inputs, values = args
        ctx.save(**{f"{name}_sym_sizes": tuple(tensor.shape) for name, tensor in zip(ctx.inputs, inputs)})
        ctx.metas = tuple((tuple(tensor.shape), tensor.dtype, tensor.device) for tensor in inputs)
        return values

    def backward(ctx, grad):
        backend = ctx.backend
        zeros = tuple(_zeros(backend, shape, dtype, backend.device_of(grad)) if needed else None
                      for (shape, dtype, _), needed in zip(ctx.metas, ctx.needs_input_grad))
        return zeros if len(zeros) > 1 else zeros[0]

    def backward_graph(ctx, grad):
        results = ctx.backward(grad._data)
        results = results if type(results) is tuple else (results,)
        return tuple(None if r is None else _constant(ctx, r) for r in results)


class NormalBackward1(_NormalOfTensors):
    """``torch.normal(mean_tensor, std_number)``."""

    inputs = ("mean",)
    derivatives = {"mean": ("at::zeros_symint(mean.sym_sizes(), grad.options())", r"0")}


class NormalBackward2(_NormalOfTensors):
    """``torch.normal(mean_number, std_tensor)``."""

    inputs = ("std",)
    derivatives = {"std": ("at::zeros_symint(std.sym_sizes(), grad.options())", r"0")}


class NormalBackward3(_NormalOfTensors):
    """``torch.normal(mean_tensor, std_tensor)``."""

    inputs = ("mean", "std")
    derivatives = {"mean": ("at::zeros_symint(mean.sym_sizes(), grad.options())", r"0"),
                   "std": ("at::zeros_symint(std.sym_sizes(), grad.options())", r"0")}


def _check_std_tensor(std) -> None:
    backend = std._backend
    if std.numel() and bool(backend.any(backend.lt(std._data, 0))):
        raise RuntimeError("normal expects all elements of std >= 0.0")


def _standard_normals(generator, shape, dtype, backend, device, std=1.0):
    import math

    from gradviz import random as gradviz_random

    values = gradviz_random.normal(generator or gradviz_random.default_generator, math.prod(shape), dtype.numpy, 0.0,
                                   float(std))
    return backend.array(values.reshape(shape), dtype, device)


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory: bool = False, requires_grad: bool = False):
    """``torch.normal`` in all its forms: ``(mean_tensor, std=1.0)``, ``(mean, std_tensor)``,
    ``(mean_tensor, std_tensor)`` (broadcast together), and ``(mean, std, size)`` of numbers."""
    from gradviz import _dtype
    from gradviz.grad_mode import _state as grad_state
    from gradviz.ops._util import broadcast_shapes
    from gradviz.tensor import _check_random_dtype, normal as normal_of_numbers

    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, float), but "
                            "expected one of:\n * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor "
                            "out = None)\n * (Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor "
                            "out = None)\n * (float mean, Tensor std, *, torch.Generator generator = None, Tensor out = "
                            "None)\n * (float mean, float std, tuple of ints size, *, torch.Generator generator = None, "
                            "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device device "
                            "= None, bool pin_memory = False, bool requires_grad = False)\n")
        result = normal_of_numbers(mean, std, size, generator=generator, dtype=dtype, device=device,
                                   requires_grad=requires_grad)
        return result if out is None else _write_out(result, out)
    like = mean if isinstance(mean, Tensor) else std
    backend, device = like._backend, like.device
    _check_random_dtype(like.dtype, "normal_kernel_cpu")
    if not isinstance(std, Tensor):  # a tensor of means: normal_(0, std), then + mean
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        shape = tuple(mean.shape)
        values = backend.add(_standard_normals(generator, shape, mean.dtype, backend, device, std), mean._data)
        node, inputs = NormalBackward1, (mean,)
    else:
        _check_std_tensor(std)
        shape = tuple(std.shape) if not isinstance(mean, Tensor) else broadcast_shapes(tuple(mean.shape), tuple(std.shape))
        values = _standard_normals(generator, shape, like.dtype, backend, device)
        moved = backend.mul(values, std._data)
        if isinstance(mean, Tensor):
            moved = backend.add(backend.astype(moved, like.dtype), mean._data)
            node, inputs = NormalBackward3, (mean, std)
        else:
            moved = backend.add(backend.astype(moved, like.dtype), mean)
            node, inputs = NormalBackward2, (std,)
        values = moved
    values = backend.astype(values, _dtype.from_any(like.dtype)) if values.dtype != like._data.dtype else values
    if grad_state.enabled and any(tensor.requires_grad for tensor in inputs):
        result = node.apply(*inputs, values)
    else:
        result = Tensor._make(values, backend=backend)
    return result if out is None else _write_out(result, out)


def _write_out(result, out):
    from gradviz.ops.arithmetic import write_out

    return write_out("normal", result, out)
