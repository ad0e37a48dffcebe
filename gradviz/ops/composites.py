"""Tensor API functions that PyTorch itself writes with other ops, so that their graph is those ops'
(no node of their own): ``repeat_interleave``, ``tile``, ``broadcast_to``, ``movedim``, ``swapaxes``,
``unflatten``, ``meshgrid``, ``broadcast_tensors``, ``vstack``/``hstack``/``column_stack``, ``diff``, and the aliases (``subtract``, ``multiply``, ``divide``, ``negative``, ``absolute``).
"""
from __future__ import annotations

import warnings

from gradviz import _dtype
from gradviz.ops._util import wrap_dim
from gradviz.ops.conversion import CONTIGUOUS_FORMAT
from gradviz.tensor import Tensor


def repeat_interleave(input, repeats, dim=None, *, output_size=None):
    """Each element (or slice along ``dim``) repeated ``repeats`` times in place: ``[a, b] -> [a, a, b, b]``.

    As PyTorch: a number of repeats is ``unsqueeze``, ``expand``, ``clone``, ``view``; a tensor of
    repeats is an ``index_select``. Without ``dim`` the input is flattened first.
    """
    if dim is None:
        input, dim = input.flatten(), 0
    axis = wrap_dim(dim, max(input.ndim, 1))
    backend = input._backend
    if isinstance(repeats, Tensor):
        counts = [int(count) for count in repeats.tolist()] if repeats.ndim else [int(repeats.item())] * input.shape[axis]
        if len(counts) != input.shape[axis]:
            raise RuntimeError("repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{len(counts)} and input.size({dim}) = {input.shape[axis]}")
        index = [position for position, count in enumerate(counts) for _ in range(count)]
        return input.index_select(axis, Tensor._make(backend.array(index, _dtype.int64, input.device),
                                                     backend=backend))
    shape = list(input.shape)
    spread = input.unsqueeze(axis + 1).expand(shape[:axis + 1] + [repeats] + shape[axis + 1:]).clone(
        memory_format=CONTIGUOUS_FORMAT)
    return spread.view(shape[:axis] + [shape[axis] * repeats] + shape[axis + 1:])


def tile(input, dims):
    """``repeat`` with as many repeats as dims, ones added in front where fewer are given."""
    from gradviz.ops.shape import check_int_tuple

    check_int_tuple("tile", "dims", dims)  # the method takes ``x.tile(2)`` (ops/shape.py's method forms)
    dims = tuple(dims)
    return input.repeat((1,) * (input.ndim - len(dims)) + dims)


def broadcast_to(input, *size):
    return input.expand(*size)


def movedim(input, source, destination):
    """Dims moved to new places (the others keep their order): a ``permute``."""
    sources = (source,) if isinstance(source, int) else tuple(source)
    destinations = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(sources) != len(destinations):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(sources)} dims) should "
                           f"contain the same number of dims as destination ({list(destinations)} dims)")
    ndim = input.ndim
    sources = [wrap_dim(d, ndim) for d in sources]
    destinations = [wrap_dim(d, ndim) for d in destinations]
    order = [None] * ndim
    for src, dst in zip(sources, destinations):
        order[dst] = src
    rest = iter(d for d in range(ndim) if d not in sources)
    return input.permute([d if d is not None else next(rest) for d in order])


def swapaxes(input, axis0: int, axis1: int):
    return input.transpose(axis0, axis1)


def unflatten(input, dim: int, sizes):
    """Dim ``dim`` split into ``sizes`` (one may be -1): a ``view``."""
    axis = wrap_dim(dim, input.ndim)
    sizes = list(sizes)
    if -1 in sizes:
        known = 1
        for size in sizes:
            known *= size if size != -1 else 1
        sizes[sizes.index(-1)] = input.shape[axis] // known
    return input.view(list(input.shape[:axis]) + sizes + list(input.shape[axis + 1:]))


def outer(input, vec2):
    """``input[i] * vec2[j]``, as PyTorch computes it: ``input.reshape(-1, 1) * vec2``."""
    if input.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return input.reshape(-1, 1) * vec2


def meshgrid(*tensors, indexing: str | None = None):
    """Coordinate grids: output ``i`` holds ``tensors[i]`` along dim ``i``, repeated along the others
    (``indexing='xy'`` swaps the first two dims, as for plotting). Each is a ``view`` then an ``expand``."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    swap = indexing == "xy" and len(tensors) >= 2
    ordered = [tensors[1], tensors[0], *tensors[2:]] if swap else list(tensors)
    shape = [t.numel() for t in ordered]
    grids = []
    for position, tensor in enumerate(ordered):
        sizes = [1] * len(ordered)
        sizes[position] = -1
        grids.append(tensor.view(sizes).expand(shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def broadcast_tensors(*tensors):
    """Every tensor expanded to their common broadcast shape (one that has it already is returned as is)."""
    from gradviz.ops._util import broadcast_shapes

    shape = ()
    for tensor in tensors:
        shape = broadcast_shapes(shape, tuple(tensor.shape))
    return tuple(tensor if tuple(tensor.shape) == shape else tensor.expand(shape) for tensor in tensors)


def atleast_1d(input):
    return input.reshape(1) if input.ndim == 0 else input


def atleast_2d(input):
    return input.view(1, 1) if input.ndim == 0 else input.unsqueeze(0) if input.ndim == 1 else input


def vstack(tensors):
    """Stacked as rows: each 1-D tensor becomes a row (``atleast_2d``), then ``cat`` along dim 0."""
    from gradviz.ops.combine import cat

    return cat([atleast_2d(tensor) for tensor in tensors], 0)


def hstack(tensors):
    """Joined side by side: ``cat`` along dim 0 for vectors, dim 1 otherwise."""
    from gradviz.ops.combine import cat

    tensors = [atleast_1d(tensor) for tensor in tensors]
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def column_stack(tensors):
    """Vectors as columns (each viewed as ``(n, 1)``), joined along dim 1."""
    from gradviz.ops.combine import cat

    return cat([tensor.view(tensor.numel(), 1) if tensor.ndim <= 1 else tensor for tensor in tensors], 1)


def diff(input, n: int = 1, dim: int = -1):
    """Differences of neighbours along ``dim`` (``n`` times): ``x[1:] - x[:-1]``, two ``narrow`` slices."""
    for _ in range(n):
        length = input.shape[wrap_dim(dim, input.ndim)]
        input = input.narrow(dim, 1, length - 1) - input.narrow(dim, 0, length - 1)
    return input
