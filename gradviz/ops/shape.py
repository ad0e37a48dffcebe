"""Ops that move elements around without changing them: views, transposes, indexing.

Their gradients move the incoming gradient back where each element came from.
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.grad_mode import _state as _grad_state
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.tensor import Tensor

NOT_VIEWABLE = ("view size is not compatible with input tensor's size and stride (at least one dimension spans "
                "across two contiguous subspaces). Use .reshape(...) instead.")


INT64_MAX = 2**63 - 1  # what PyTorch saves as a slice's end when none was given


def _view_of(out: Tensor, base: Tensor) -> Tensor:
    """Make ``out`` a view of ``base``: same memory, same version counter, and ``_base`` set to the
    tensor that owns the memory (a view of a view points at the first base)."""
    out._vc = base._vc
    if base._base is None:
        out._base = base
        out._view_no_grad = not _grad_state.enabled
    else:
        out._base = base._base
        out._view_no_grad = not _grad_state.enabled or base._view_no_grad
    out._attr_version = base._vc[0]
    return out


def _infer_shape(shape, numel: int) -> tuple:
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _given_dims(saved) -> tuple:
    """Dims as the caller gave them, from their saved form (negatives are saved as uint64)."""
    dims = saved if isinstance(saved, tuple) else (saved,)
    return tuple(d - 2**64 if d >= 2**63 else d for d in dims)


def _unsqueeze_to(grad, dims, sizes):
    """The recorded form of a squeeze's backward (PyTorch's ``unsqueeze_to``): put back each
    squeezed dimension of size 1, lowest first (UnsqueezeBackward0 each)."""
    for d in sorted(wrap_dim(d, len(sizes)) for d in dims):
        if sizes[d] == 1:
            grad = grad.unsqueeze(d)
    return grad


class _ReshapeBack(OpFunction):
    """Ops that only regroup elements (view, squeeze): the gradient is reshaped to the input's size."""

    def backward(ctx, grad):
        return ctx.backend.reshape(grad, ctx.saved("self_sym_sizes"))

    def backward_graph(ctx, grad):
        return grad.reshape(ctx.saved("self_sym_sizes"))


class ViewBackward0(_ReshapeBack):
    inputs = ("self",)
    derivatives = {"self": ("grad.reshape_symint(self.sym_sizes())", r"\mathrm{reshape}(\bar{y})")}

    def forward(ctx, self, shape):
        if not self._backend.can_view(self._data, shape):
            raise RuntimeError(NOT_VIEWABLE)
        ctx.save(self_sym_sizes=tuple(self.shape))
        return self._backend.reshape(self._data, shape)


class ReshapeAliasBackward0(ViewBackward0):
    """``reshape`` of a tensor that is not contiguous but whose layout still allows the new shape:
    PyTorch makes the view with ``_reshape_alias`` and records this node (same derivative as a view)."""


class AliasBackward0(OpFunction):
    """``x[...]`` or ``x[:, :]``: a new view of all of ``x``; the gradient passes through."""

    inputs = ("self",)
    derivatives = {"self": ("grad", r"\bar{y}")}

    def forward(ctx, self):
        return self._backend.getitem(self._data, Ellipsis)

    def backward(ctx, grad):
        return grad

    def backward_graph(ctx, grad):
        return grad


class TBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad.t()", r"\bar{y}^{\top}")}

    def forward(ctx, self):
        return self._backend.permute(self._data, tuple(reversed(range(self.ndim))))

    def backward(ctx, grad):
        return ctx.backend.permute(grad, tuple(reversed(range(grad.ndim))))

    def backward_graph(ctx, grad):
        return grad.t()


class PermuteBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("permute_backwards(grad, dims)", r"\mathrm{permute}^{-1}(\bar{y})")}

    def forward(ctx, self, dims, given=None):
        ctx.save(dims=saved_dim(tuple(dims if given is None else given)))
        ctx.dims = dims
        return self._backend.permute(self._data, dims)

    def backward(ctx, grad):
        dims = ctx.dims
        inverse = [0] * len(dims)
        for position, d in enumerate(dims):
            inverse[d] = position
        return ctx.backend.permute(grad, tuple(inverse))

    def backward_graph(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for position, d in enumerate(ctx.dims):
            inverse[d] = position
        return grad.permute(*inverse)


class TransposeBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad.transpose(dim0, dim1)", r"\bar{y}^{\top}")}

    def forward(ctx, self, dim0, dim1, given=None):
        ctx.save(**dict(zip(("dim0", "dim1"), saved_dim(given or (dim0, dim1)))))
        ctx.dims = (dim0, dim1)
        axes = list(range(self.ndim))
        axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
        return self._backend.permute(self._data, tuple(axes))

    def backward(ctx, grad):
        dim0, dim1 = ctx.dims
        axes = list(range(grad.ndim))
        axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
        return ctx.backend.permute(grad, tuple(axes))

    def backward_graph(ctx, grad):
        return grad.transpose(*_given_dims(tuple(ctx.saved("dim0", "dim1"))))


class UnsqueezeBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad.squeeze(dim)", r"\mathrm{squeeze}(\bar{y})")}

    def forward(ctx, self, dim, given=None):
        ctx.save(dim=saved_dim(dim if given is None else given))
        ctx.shape = tuple(self.shape)
        ctx.dim = dim
        shape = list(self.shape)
        shape.insert(dim, 1)
        return self._backend.reshape(self._data, tuple(shape))

    def backward(ctx, grad):
        return ctx.backend.reshape(grad, ctx.shape)

    def backward_graph(ctx, grad):
        return grad.squeeze(_given_dims(ctx.saved("dim"))[0])  # the dim as given (-1 stays -1, as torch saves it)


class SqueezeBackward0(_ReshapeBack):
    """``squeeze()`` with no dim: drop every size-1 dimension."""

    inputs = ("self",)
    derivatives = {"self": ("unsqueeze_to(grad, self.sym_sizes())", r"\mathrm{unsqueeze}(\bar{y})")}

    def forward(ctx, self):
        ctx.save(self_sym_sizes=tuple(self.shape))
        return self._backend.reshape(self._data, tuple(s for s in self.shape if s != 1))

    def backward_graph(ctx, grad):
        sizes = ctx.saved("self_sym_sizes")
        return _unsqueeze_to(grad, [d for d, size in enumerate(sizes) if size == 1], sizes)


class SqueezeBackward1(_ReshapeBack):
    """``squeeze(dim)``: drop one dimension if its size is 1."""

    inputs = ("self",)
    derivatives = {"self": ("unsqueeze_to(grad, dim, self.sym_sizes())", r"\mathrm{unsqueeze}(\bar{y})")}

    def forward(ctx, self, dim, given=None):
        ctx.save(dim=saved_dim(dim if given is None else given), self_sym_sizes=tuple(self.shape))
        shape = tuple(s for i, s in enumerate(self.shape) if not (i == dim and s == 1))
        return self._backend.reshape(self._data, shape)

    def backward_graph(ctx, grad):
        return _unsqueeze_to(grad, _given_dims(ctx.saved("dim")), ctx.saved("self_sym_sizes"))


class SqueezeBackward2(_ReshapeBack):
    """``squeeze(dims)`` with a tuple of dims, as a user calls it."""

    inputs = ("self",)
    derivatives = {"self": ("unsqueeze_to(grad, dim, self.sym_sizes())", r"\mathrm{unsqueeze}(\bar{y})")}

    def forward(ctx, self, dims, given=None):
        ctx.save(dim=saved_dim(tuple(dims if given is None else given)), self_sym_sizes=tuple(self.shape))
        shape = tuple(s for i, s in enumerate(self.shape) if not (i in dims and s == 1))
        return self._backend.reshape(self._data, shape)

    def backward_graph(ctx, grad):
        return _unsqueeze_to(grad, _given_dims(ctx.saved("dim")), ctx.saved("self_sym_sizes"))


class SqueezeBackward4(_ReshapeBack):
    """The in-place ``squeeze_(dim)`` that ``matmul`` uses to drop a vector's extra dim."""

    inputs = ("self",)
    derivatives = {"self": ("unsqueeze_to(grad, dim, self.sym_sizes())", r"\mathrm{unsqueeze}(\bar{y})")}

    def forward(ctx, self, dim):
        ctx.save(dim=dim, self_sym_sizes=tuple(self.shape))
        shape = tuple(s for i, s in enumerate(self.shape) if not (i == dim and s == 1))
        return self._backend.reshape(self._data, shape)

    def backward_graph(ctx, grad):
        return _unsqueeze_to(grad, _given_dims(ctx.saved("dim")), ctx.saved("self_sym_sizes"))


class UnsafeViewBackward0(_ReshapeBack):
    """A reshape of a freshly made copy (PyTorch's ``_unsafe_view``): the gradient is reshaped back."""

    inputs = ("self",)
    derivatives = ViewBackward0.derivatives

    def forward(ctx, self, shape):
        ctx.save(self_sym_sizes=tuple(self.shape))
        return self._backend.reshape(self._data, shape)


class ExpandBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("at::sum_to(grad, self.sym_sizes())", r"\textstyle\sum_{\mathrm{broadcast}} \bar{y}")}

    def forward(ctx, self, shape):
        ctx.save(self_sym_sizes=tuple(self.shape))
        return self._backend.expand(self._data, shape)

    def backward(ctx, grad):
        from gradviz.ops._util import sum_to

        return sum_to(ctx.backend, grad, ctx.saved("self_sym_sizes"))

    def backward_graph(ctx, grad):
        from gradviz.ops._util import sum_to_tensor

        return sum_to_tensor(grad, ctx.saved("self_sym_sizes"))


class SelectBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("select_backward_symint(grad, self.sym_sizes(), dim, index)", r"\bar{y}\ \mathrm{at}\ i")}

    def forward(ctx, self, dim, index, given=None, given_dim=None):
        ctx.save(dim=dim if given_dim is None else saved_dim(given_dim),
                 index=saved_dim(index if given is None else given), self_sym_sizes=tuple(self.shape))
        ctx.index, ctx.axis = index, dim
        key = (slice(None),) * dim + (index, Ellipsis)  # the Ellipsis keeps a 0-d result a view, not a copy
        return self._backend.getitem(self._data, key)

    def backward(ctx, grad):
        shape = ctx.saved("self_sym_sizes")
        return _scatter_back(ctx.backend, grad, shape, (slice(None),) * ctx.axis + (ctx.index,))

    def backward_graph(ctx, grad):
        from gradviz.ops.double_backward import SelectBackwardBackward0

        shape, index, dim = ctx.saved("self_sym_sizes", "index", "dim")
        return SelectBackwardBackward0.apply(grad, shape, ctx.axis, ctx.index, index, dim)


class SliceBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("slice_backward_wrapper(grad, self.sym_sizes(), dim, start, end, step)",
                            r"\bar{y}\ \mathrm{in\ the\ slice}")}

    def forward(ctx, self, dim, start, end, step, given=None, given_dim=None):
        given_start, given_end = given or (start, end)
        ctx.save(dim=saved_dim(dim if given_dim is None else given_dim), end=saved_dim(given_end),
                 self_sym_sizes=tuple(self.shape), start=saved_dim(given_start), step=step)
        ctx.bounds = (dim, start, end)
        key = (slice(None),) * dim + (slice(start, end, step),)
        return self._backend.getitem(self._data, key)

    def backward(ctx, grad):
        step, shape = ctx.saved("step", "self_sym_sizes")
        dim, start, end = ctx.bounds
        return _scatter_back(ctx.backend, grad, shape, (slice(None),) * dim + (slice(start, end, step),))

    def backward_graph(ctx, grad):
        from gradviz.ops.double_backward import SliceBackwardBackward0

        dim, start, end = ctx.bounds
        step, shape = ctx.saved("step", "self_sym_sizes")
        saved = dict(zip(("dim", "end", "start", "step"), ctx.saved("dim", "end", "start", "step")))
        if saved["end"] is None:  # a C++ slice with no end; slice_backward gets INT64_MAX
            saved["end"] = INT64_MAX
        return SliceBackwardBackward0.apply(grad, shape, (slice(None),) * dim + (slice(start, end, step),), saved)


def _dtype_of(array):
    from gradviz import _dtype

    return _dtype.from_any(array.dtype)


def _scatter_back(backend, grad, shape, key):
    out = backend.full(shape, 0, _dtype_of(grad), _device_of(backend, grad))
    return backend.assign(out, grad, key)


def _device_of(backend, array):
    return backend.device_of(array)


# -- the functions tensors call -----------------------------------------------------------------------
def view(input, *shape):
    shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    shape = _infer_shape(shape, input.numel())
    return _view_of(ViewBackward0.apply(input, shape), input)


def reshape(input, *shape):
    """A view when the layout allows one (``view`` of a contiguous tensor, ``_reshape_alias`` of a
    strided one); otherwise a copy, then a view of it (as PyTorch records)."""
    shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    shape = _infer_shape(shape, input.numel())
    backend = input._backend
    if backend.is_contiguous(input._data):
        return view(input, shape)
    if backend.can_view(input._data, shape):
        return _view_of(ReshapeAliasBackward0.apply(input, shape), input)
    return unsafe_view(contiguous_copy(input), shape)


def unsafe_view(input, shape):
    return UnsafeViewBackward0.apply(input, _infer_shape(shape, input.numel()))


def contiguous_copy(input):
    """A copy in row-major layout (CloneBackward0), what ``contiguous()`` makes of a strided view."""
    from gradviz.ops.conversion import CONTIGUOUS_FORMAT, clone

    return clone(input, memory_format=CONTIGUOUS_FORMAT)


def flatten(input, start_dim: int = 0, end_dim: int = -1):
    if input.ndim == 0:
        return view(input, 1)
    start, end = wrap_dim(start_dim, input.ndim), wrap_dim(end_dim, input.ndim)
    if start == end:
        return input
    shape = list(input.shape)
    size = 1
    for s in shape[start:end + 1]:
        size *= s
    return reshape(input, tuple(shape[:start] + [size] + shape[end + 1:]))


def t(input):
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return _view_of(TBackward0.apply(input), input)


def permute(input, *dims):
    dims = dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
    given = tuple(dims)
    dims = tuple(wrap_dim(d, input.ndim) for d in dims)
    return _view_of(PermuteBackward0.apply(input, dims, given=given), input)


def T(input):
    """``x.T``: PyTorch records it as a permute reversing all dims."""
    return permute(input, tuple(reversed(range(input.ndim))))


def transpose(input, dim0: int, dim1: int):
    given = (dim0, dim1)
    dim0, dim1 = wrap_dim(dim0, input.ndim), wrap_dim(dim1, input.ndim)
    return _view_of(TransposeBackward0.apply(input, dim0, dim1, given=given), input)


def unsqueeze(input, dim: int):
    return _view_of(UnsqueezeBackward0.apply(input, wrap_dim(dim, input.ndim + 1), given=dim), input)


def squeeze(input, dim=None):
    if dim is None:
        return _view_of(SqueezeBackward0.apply(input), input)
    if isinstance(dim, (tuple, list)):
        dims = tuple(wrap_dim(d, max(input.ndim, 1)) for d in dim)
        return _view_of(SqueezeBackward2.apply(input, dims, given=tuple(dim)), input)
    return _view_of(SqueezeBackward1.apply(input, wrap_dim(dim, max(input.ndim, 1)), given=dim), input)


def squeeze_dims(input, dim: int):
    """The squeeze ``matmul`` records as SqueezeBackward4 (PyTorch's in-place ``squeeze_``)."""
    return _view_of(SqueezeBackward4.apply(input, dim), input)


def expand(input, *sizes):
    """A view that repeats size-1 dimensions (and adds leading ones) without copying: ``-1`` keeps a size."""
    sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    return _view_of(ExpandBackward0.apply(input, expanded_shape(input, sizes)), input)


def expanded_shape(input, sizes) -> tuple:
    """The shape ``input.expand(*sizes)`` has, with PyTorch's errors."""
    from gradviz.autograd.node import _type_string

    lead = len(sizes) - input.ndim
    if lead < 0:
        raise RuntimeError(f"expand({_type_string(input)}{{{list(input.shape)}}}, size={list(sizes)}): the number of "
                           f"sizes provided ({len(sizes)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({input.ndim})")
    shape = []
    for i, size in enumerate(sizes):
        if i < lead:
            if size < 0:
                raise RuntimeError(f"The expanded size of the tensor ({size}) isn't allowed in a leading, non-existing "
                                   f"dimension {i}")
            shape.append(size)
            continue
        existing = input.shape[i - lead]
        if size == -1:
            size = existing
        elif existing != 1 and size != existing:
            raise RuntimeError(f"The expanded size of the tensor ({size}) must match the existing size ({existing}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                               f"{list(input.shape)}")
        shape.append(size)
    return tuple(shape)


def expand_as(input, other):
    return expand(input, tuple(other.shape))


def view_as(input, other):
    return view(input, tuple(other.shape))


def reshape_as(input, other):
    return reshape(input, tuple(other.shape))


def alias(input):
    """A view of the whole tensor (what ``x[...]`` returns)."""
    return _view_of(AliasBackward0.apply(input), input)


def select(input, dim: int, index: int, given=None, given_dim=None):
    """``input[..., index, ...]`` along ``dim`` (a wrapped, checked index): a view one dimension smaller
    (``given``, ``given_dim``: the index and dim as the caller wrote them, which the node saves)."""
    return _view_of(SelectBackward0.apply(input, dim, index, given=index if given is None else given,
                                          given_dim=given_dim), input)


def slice_along(input, dim: int, start: int, end: int, step: int, given=None, given_dim=None):
    """``input[..., start:end:step, ...]`` along ``dim`` (clamped bounds; ``given`` as the user wrote them)."""
    return _view_of(SliceBackward0.apply(input, dim, start, end, step, given=given, given_dim=given_dim), input)


def narrow(input, dim: int, start: int, length: int):
    """``length`` elements along ``dim`` from ``start``: a slice view, as PyTorch records it."""
    given_dim, dim = dim, wrap_dim(dim, input.ndim)
    size = input.shape[dim]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    start = start % size if size and start < 0 else start
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return slice_along(input, dim, start, start + length, 1, given=(start, start + length), given_dim=given_dim)


# -- method forms: ``x.flip(-1, 0)``, ``x.permute(dims=(1, 0))``, ``x.view(size=(6, 4))`` ----------------------------
# PyTorch's Tensor methods whose one argument is a list of ints take it as separate numbers, as one tuple or list,
# or by keyword (a tuple there: ``x.flip(dims=0)`` is refused); the function forms take a tuple only.
def int_list(name: str, argument: str, args: tuple, kwargs: dict) -> tuple:
    """The ints a method got as ``*args`` or as ``argument=``, with PyTorch's TypeErrors for anything else."""
    for key in kwargs:
        if key != argument:
            raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
    if kwargs:
        if args:
            raise TypeError(f"{name}() got multiple values for argument '{argument}'")
        value = kwargs[argument]
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"{name}(): argument '{argument}' must be tuple of ints, not {type(value).__name__}")
        return tuple(value)
    if len(args) == 1:
        value = args[0]
        if isinstance(value, (tuple, list)):
            for position, item in enumerate(value, 1):
                if not _is_int(item):
                    raise TypeError(f"{name}(): argument '{argument}' failed to unpack the object at pos {position} "
                                    f"with error \"type must be tuple of ints,but got {type(item).__name__}\"")
            return tuple(value)
        if not _is_int(value):
            raise TypeError(f"{name}(): argument '{argument}' (position 1) must be tuple of ints, not "
                            f"{type(value).__name__}")
        return (value,)
    for position, value in enumerate(args, 1):
        if not _is_int(value):
            raise TypeError(f"{name}(): argument '{argument}' failed to unpack the object at pos {position} with error "
                            f"\"type must be tuple of ints,but got {type(value).__name__}\"")
    return tuple(args)


def _is_int(value) -> bool:
    return not isinstance(value, float) and hasattr(value, "__index__")


def check_int_tuple(name: str, argument: str, value, position: int = 2) -> None:
    """A function form (``torch.flip(x, 0)``): the ints must come as one tuple or list."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be tuple of ints, not "
                        f"{type(value).__name__}")


def _list_method(function, name: str, argument: str):
    def method(self, *args, **kwargs):
        return function(self, int_list(name, argument, args, kwargs))

    method.__name__ = name
    method.__doc__ = function.__doc__
    return method


def permute_checked(input, dims):
    """``permute`` with PyTorch's errors for the wrong number of dims and for a repeated one."""
    if len(dims) != input.ndim:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not match the length of "
                           f"the desired ordering of dimensions i.e. input.dim() = {input.ndim} is not equal to "
                           f"len(dims) = {len(dims)}")
    if len({wrap_dim(d, input.ndim) for d in dims}) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return permute(input, tuple(dims))


def squeeze_method(self, *dims, **kwargs):
    """``x.squeeze()``, ``x.squeeze(0)``, ``x.squeeze(0, 2)``, ``x.squeeze((0, 2))``, ``x.squeeze(dim=...)``."""
    if kwargs:
        if set(kwargs) != {"dim"} or dims:
            return squeeze(self, *dims, **kwargs)
        return squeeze(self, kwargs["dim"])
    if not dims:
        return squeeze(self)
    if len(dims) == 1:
        return squeeze(self, dims[0])
    return squeeze(self, int_list("squeeze", "dim", dims, {}))


squeeze_method.__wrapped__ = squeeze  # its parameters, for help() and numpy_names


def unsqueeze_method(self, *args, **kwargs):
    """``x.unsqueeze(dim)``: one int, with PyTorch's TypeErrors for anything else."""
    if len(args) + len(kwargs) > 1:
        raise TypeError(f"unsqueeze() takes 1 positional argument but {len(args) + len(kwargs)} were given")
    value = args[0] if args else kwargs.get("dim")
    if not _is_int(value):
        where = " (position 1)" if args else ""
        raise TypeError(f"unsqueeze(): argument 'dim'{where} must be int, not {type(value).__name__}")
    return unsqueeze(self, value)


unsqueeze_method.__wrapped__ = unsqueeze


def _keepdim_checked(function, name: str):
    """``x.sum(0, 2)``: PyTorch's TypeError for a keepdim that is not a bool (the method counts from ``dim``)."""

    def method(self, *args, **kwargs):
        if len(args) > 1 and not isinstance(args[1], bool):
            raise TypeError(f"{name}(): argument 'keepdim' (position 2) must be bool, not {type(args[1]).__name__}")
        return function(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = function.__doc__
    method.__wrapped__ = function  # its parameters, for help() and numpy_names
    return method


def shape_methods() -> dict:
    """The Tensor methods above, by name (installed by ``gradviz.ops``)."""
    from gradviz.ops.combine import repeat
    from gradviz.ops.composites import tile
    from gradviz.ops.matrix import flip
    from gradviz.ops.reduction import mean, sum

    return {"flip": _list_method(flip, "flip", "dims"), "permute": _list_method(permute_checked, "permute", "dims"),
            "tile": _list_method(tile, "tile", "dims"), "repeat": _list_method(repeat, "repeat", "repeats"),
            "view": _list_method(view, "view", "size"), "reshape": _list_method(reshape, "reshape", "shape"),
            "expand": _list_method(expand, "expand", "size"), "squeeze": squeeze_method,
            "unsqueeze": unsqueeze_method, "sum": _keepdim_checked(sum, "sum"), "mean": _keepdim_checked(mean, "mean")}


# -- diag_embed: each last-dim vector of the input becomes the diagonal of a new matrix ---------------------------
class DiagEmbedBackward0(OpFunction):
    """``diag_embed(x, offset, dim1, dim2)``: the input's last dimension laid along the ``offset`` diagonal of
    the plane ``(dim1, dim2)``, zeros elsewhere. Its gradient reads that diagonal back."""

    inputs = ("self",)
    derivatives = {"self": ("grad.diagonal(offset, dim1, dim2)", r"\operatorname{diag}_k(\bar{y})")}

    def forward(ctx, self, offset, dim1, dim2, given):
        """``dim1``, ``dim2`` wrapped; ``given``: both as the caller wrote them (what PyTorch saves)."""
        import numpy as np

        ctx.save(dim1=saved_dim(given[0]), dim2=saved_dim(given[1]), offset=saved_dim(offset))
        ctx.dims = (offset, dim1, dim2)
        backend = self._backend
        values = np.asarray(backend.to_numpy(self._data))
        rows, columns = _diagonal_positions(values.shape[-1], offset)
        side = values.shape[-1] + abs(offset)
        out = np.zeros(values.shape[:-1] + (side, side), dtype=values.dtype)
        out[..., rows, columns] = values
        out = np.moveaxis(out, (-2, -1), (dim1, dim2))
        return backend.array(np.ascontiguousarray(out), self.dtype, backend.device_of(self._data))

    def backward(ctx, grad):
        import numpy as np

        backend = ctx.backend
        offset, dim1, dim2 = ctx.dims
        values = np.moveaxis(np.asarray(backend.to_numpy(grad)), (dim1, dim2), (-2, -1))
        rows, columns = _diagonal_positions(values.shape[-1] - abs(offset), offset)
        return backend.array(np.ascontiguousarray(values[..., rows, columns]), _dtype.from_any(grad.dtype),
                             backend.device_of(grad))


def _diagonal_positions(length: int, offset: int) -> tuple:
    """The (row, column) indices of the ``offset`` diagonal's ``length`` elements."""
    import numpy as np

    steps = np.arange(length)
    return (steps, steps + offset) if offset >= 0 else (steps - offset, steps)


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """A batch of diagonal matrices from the last dimension of ``input`` (DiagEmbedBackward0)."""
    from gradviz.tensor import _wrap_dim

    ndim = input.ndim + 1
    first, second = _wrap_dim(dim1, ndim), _wrap_dim(dim2, ndim)
    if first == second:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return DiagEmbedBackward0.apply(input, offset, first, second, (dim1, dim2))


# -- x.view(dtype): the same memory read as another dtype ------------------------------------------------------------
def view_dtype(input, dtype):
    """The tensor's bytes reinterpreted as ``dtype`` (no copy, no node: PyTorch's result never requires grad).
    With a different element size the last dimension grows or shrinks by the ratio, with PyTorch's errors
    for a 0-d tensor, a last dimension that is not contiguous or not divisible, and misaligned strides."""
    from gradviz._dtype import SCALAR_TYPE_NAMES, from_any

    target = from_any(dtype)
    old, new = input.dtype.itemsize, target.itemsize
    names = f"{SCALAR_TYPE_NAMES[input.dtype.name]} as {SCALAR_TYPE_NAMES[target.name]}"
    if old != new:
        if input.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 to view {names} (different element sizes)")
        if new > old:
            ratio = new // old
            if input.shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to view {names} (different element "
                                   f"sizes), but got {input.shape[-1]}")
            if input.storage_offset() % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} to view {names} (different "
                                   f"element sizes), but got {input.storage_offset()}")
        if input.stride(-1) != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {names} (different element sizes), but got "
                               f"{input.stride(-1)}")
        if new > old:
            for dim, stride in enumerate(input.stride()[:-1]):
                if stride % ratio:
                    raise RuntimeError(f"self.stride({dim}) must be divisible by {ratio} to view {names} (different "
                                       f"element sizes), but got {stride}")
    backend, data = input._backend, input._data
    if isinstance(data, __import__("numpy").ndarray):
        reread = data.view(target.numpy)
    else:  # a torch backend's array: torch's own view(dtype)
        import torch

        reread = data.view(getattr(torch, target.name))
    return Tensor._make(reread, backend=backend)


def view_method(self, *args, **kwargs):
    """``x.view(2, 3)``, ``x.view((2, 3))``, ``x.view(size=...)``, ``x.view(dtype)``, ``x.view(dtype=...)``."""
    from gradviz._dtype import dtype as gradviz_dtype

    def is_dtype(value):
        return isinstance(value, gradviz_dtype) or type(value).__name__ == "dtype"

    if set(kwargs) == {"dtype"} and not args:
        return view_dtype(self, kwargs["dtype"])
    if args and (is_dtype(args[0]) or isinstance(args[0], (str, float)) or (len(args) > 1 and not _is_int(args[0]))):
        if len(args) == 1 and not kwargs and is_dtype(args[0]):
            return view_dtype(self, args[0])
        got = ", ".join("torch.dtype" if is_dtype(a) else type(a).__name__ for a in args)
        expected = " * (torch.dtype dtype)\n * (tuple of ints size)\n"
        if len(args) == 1:
            expected = (" * (torch.dtype dtype)\n      didn't match because some of the arguments have invalid types: "
                        f"(!{got}!)\n * (tuple of ints size)\n      didn't match because some of the arguments have "
                        f"invalid types: (!{got}!)\n")
        raise TypeError(f"view() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        + expected)
    return view(self, int_list("view", "size", args, kwargs))


def _positional_list_method(function, name: str, argument: str):
    """A method taking ints (``x.permute(2, 0, 1)``), with PyTorch's TypeErrors when none come and when the
    first of several is not an int (its parser then reads the call as too many arguments)."""

    def method(self, *args, **kwargs):
        if not args and not kwargs:
            raise TypeError(f'{name}() missing 1 required positional arguments: "{argument}"')
        if len(args) > 1 and not _is_int(args[0]):
            raise TypeError(f"{name}() takes 1 positional argument but {len(args)} were given")
        return function(self, int_list(name, argument, args, kwargs))

    method.__name__ = name
    method.__doc__ = function.__doc__
    return method


def _function_form(function, name: str, argument: str):
    """``torch.reshape(x, (2, 3))``, ``torch.permute(x, (1, 0))``: the ints as one tuple or list only."""

    def function_form(input, *args, **kwargs):
        if kwargs:
            if args or set(kwargs) != {argument}:
                raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'")
            args = (kwargs[argument],)
        if not args:
            raise TypeError(f'{name}() missing 1 required positional arguments: "{argument}"')
        if len(args) > 1:
            raise TypeError(f"{name}() takes 2 positional arguments but {len(args) + 1} were given")
        value = args[0]
        check_int_tuple(name, argument, value)
        for position, item in enumerate(value, 1):
            if not _is_int(item):
                raise TypeError(f"{name}(): argument '{argument}' failed to unpack the object at pos {position} with "
                                f"error \"type must be tuple of ints,but got {type(item).__name__}\"")
        return function(input, tuple(value))

    function_form.__name__ = name
    function_form.__doc__ = function.__doc__
    return function_form


def checked_shape_methods() -> dict:
    """``view`` (sizes or a dtype), ``reshape`` and ``permute`` with PyTorch's TypeErrors (installed by ``gradviz.ops``)."""
    return {"view": view_method, "reshape": _positional_list_method(reshape, "reshape", "shape"),
            "permute": _positional_list_method(permute_checked, "permute", "dims")}


reshape_function = _function_form(reshape, "reshape", "shape")
permute_function = _function_form(permute_checked, "permute", "dims")
