"""The Tensor: an array plus what autograd needs (``requires_grad``, ``grad``, ``grad_fn``).

Its names, signatures, printed text and errors follow PyTorch, so tutorial code runs unchanged.
The arithmetic lives in ``gradviz.ops``; this module holds the bookkeeping: leaves and
non-leaves, the version counter that catches in-place changes to saved tensors, gradient
accumulators, hooks, and in-place updates.
"""
from __future__ import annotations

import builtins
import math
import numbers
import warnings
import weakref

import numpy as np

from gradviz import _dtype, backends, random
from gradviz._device import CPU, device as Device
from gradviz.grad_mode import _state as _grad_state, is_grad_enabled

NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
    "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
    "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
    "by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 "
    "for more information. (Triggered internally at /__w/pytorch/pytorch/build/aten/src/ATen/core/"
    "TensorBody.h:493.)"
)
LEAF_IN_PLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_IN_PLACE = "a view of a leaf Variable that requires grad is being used in an in-place operation."
NON_LEAF_REQUIRES_GRAD = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
    "in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
)


class Size(tuple):
    """A shape, printed as PyTorch prints it: ``torch.Size([2, 3])``."""

    def __repr__(self) -> str:
        return f"torch.Size([{', '.join(str(s) for s in self)}])"

    __str__ = __repr__

    def numel(self) -> int:
        return int(np.prod(self, dtype=np.int64))


class Tensor:
    __slots__ = ("_data", "_backend", "_requires_grad", "_grad", "grad_fn", "_vc", "_output_nr",
                 "_accumulator", "_retains_grad", "_is_view", "_base", "_leaf_hooks", "__weakref__")

    __hash__ = object.__hash__

    def __init__(self, *args, **kwargs):
        raise TypeError("create tensors with gradviz.tensor(...), gradviz.ones(...) and friends")

    @classmethod
    def _make(cls, data, requires_grad: bool = False, grad_fn=None, backend=None, version=None):
        """Wrap a backend array (no copy). Outputs of recorded ops pass their grad_fn."""
        t = object.__new__(cls)
        t._data = data
        t._backend = backend if backend is not None else (
            backends.numpy_backend if type(data) is np.ndarray else _backend_of(data))
        t._requires_grad = requires_grad
        t._grad = None
        t.grad_fn = grad_fn
        t._vc = version if version is not None else [0]
        t._output_nr = 0
        t._accumulator = None
        t._retains_grad = False
        t._is_view = False
        t._base = None
        t._leaf_hooks = None
        return t

    # -- metadata ---------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return self.shape
        return self._data.shape[_wrap_dim(dim, self.ndim)]

    @property
    def dtype(self) -> _dtype.dtype:
        if self._backend is backends.numpy_backend:
            return _dtype.from_numpy(self._data.dtype)  # the fast path: one dict lookup
        return _dtype.from_any(self._data.dtype)

    @property
    def device(self) -> Device:
        return CPU if self._backend is backends.numpy_backend else Device(self._backend.device_of(self._data))

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return math.prod(self._data.shape)

    nelement = numel

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        return self._vc[0]

    @property
    def output_nr(self) -> int:
        return self._output_nr

    # -- autograd state ------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            raise RuntimeError(NON_LEAF_REQUIRES_GRAD)
        if value and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError(NON_LEAF_REQUIRES_GRAD)
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if self.grad_fn is None:
            self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self):
        if self.grad_fn is not None and not self._retains_grad:
            warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                    f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the same size")
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def data(self) -> Tensor:
        return Tensor._make(self._data, backend=self._backend)

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data
        self._backend = value._backend

    def _grad_accumulator(self):
        """The one AccumulateGrad of this leaf (held weakly here, strongly by the graph)."""
        accumulator = self._accumulator() if self._accumulator is not None else None
        if accumulator is None:
            accumulator = AccumulateGrad(self)
            if self._leaf_hooks:
                accumulator._tensor_pre_hooks = {0: self._leaf_hooks}
            self._accumulator = weakref.ref(accumulator)
        return accumulator

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Compute gradients of this tensor with respect to the graph's leaves (see autograd.backward)."""
        from gradviz.autograd.engine import backward

        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """The same data, cut off from the graph: it shares the version counter, not the history."""
        out = Tensor._make(self._data, backend=self._backend, version=self._vc)
        out._is_view = True
        return out

    def detach_(self) -> Tensor:
        if self._is_view and self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._requires_grad = False
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        tensor_ref = weakref.ref(self)

        def retain(grad):
            tensor = tensor_ref()
            if tensor is not None:
                if tensor._grad is None:
                    tensor._grad = Tensor._make(tensor._backend.copy(grad), backend=tensor._backend)
                else:
                    tensor._grad = Tensor._make(tensor._backend.add(tensor._grad._data, grad), backend=tensor._backend)

        if self.grad_fn._retain_grad_hooks is None:
            self.grad_fn._retain_grad_hooks = {}
        self.grad_fn._retain_grad_hooks[self._output_nr] = retain

    def register_hook(self, hook):
        """``hook(grad)`` runs when this tensor's gradient is computed; it may return a new one."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._register_tensor_pre_hook(self._output_nr, hook)
        from gradviz.autograd.node import RemovableHandle

        if self._leaf_hooks is None:
            self._leaf_hooks = {}
        handle = RemovableHandle(self._leaf_hooks)
        self._leaf_hooks[handle.id] = hook
        accumulator = self._accumulator() if self._accumulator is not None else None
        if accumulator is not None:
            accumulator._tensor_pre_hooks = {0: self._leaf_hooks}
        return handle

    # -- conversion ------------------------------------------------------------------------------
    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self._backend.to_numpy(self._data).reshape(()).item()

    def tolist(self):
        return self._backend.to_numpy(self._data).tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self.device.type != "cpu":
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.")
        return self._backend.to_numpy(self._data)

    def __array__(self, dtype=None, copy=None):
        values = self.numpy()
        return values.astype(dtype) if dtype is not None else values

    def to(self, *args, **kwargs) -> Tensor:
        """``to(device)``, ``to(dtype)`` or ``to(device, dtype)``, recorded like PyTorch's ``ToCopyBackward0``."""
        from gradviz.ops import conversion

        target_device, target_dtype = self.device, self.dtype
        for arg in list(args) + [kwargs.get("device"), kwargs.get("dtype")]:
            if arg is None:
                continue
            if isinstance(arg, (str, Device)):
                target_device = Device(arg)
            else:
                target_dtype = _dtype.from_any(arg)
        if target_device == self.device and target_dtype is self.dtype:
            return self
        return conversion.to_copy(self, target_device, target_dtype)

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def cuda(self, device=None) -> Tensor:
        """Copy to a GPU: ``cuda()``, ``cuda(1)`` or ``cuda("cuda:1")``."""
        index = 0 if device is None else device if isinstance(device, builtins.int) else Device(device).index
        return self.to(Device("cuda", index))

    def float(self) -> Tensor:
        return self.to(_dtype.float32)

    def double(self) -> Tensor:
        return self.to(_dtype.float64)

    def long(self) -> Tensor:
        return self.to(_dtype.int64)

    def int(self) -> Tensor:
        return self.to(_dtype.int32)

    def bool(self) -> Tensor:
        return self.to(_dtype.bool)

    def clone(self) -> Tensor:
        from gradviz.ops import conversion

        return conversion.clone(self)

    def contiguous(self) -> Tensor:
        return self

    # -- in place --------------------------------------------------------------------------------
    def _check_in_place(self) -> None:
        if self._requires_grad and is_grad_enabled():
            if self.grad_fn is None:
                raise RuntimeError(LEAF_IN_PLACE)
            if self._is_view and self._base is not None and self._base.grad_fn is None:
                raise RuntimeError(VIEW_OF_LEAF_IN_PLACE)

    def _bump(self) -> None:
        self._vc[0] += 1

    def _in_place(self, op_name: str, other, out_of_place, alpha=1) -> Tensor:
        """Run an in-place update ``self op= alpha * other``: mutate the array, or record it when
        grad mode tracks it."""
        backend = self._backend
        if not _grad_state.enabled:
            # An optimizer's updates (no_grad; a same-dtype tensor, or a float into a float tensor):
            # nothing to record and no promotion to check, so go straight to the backend.
            if (type(other) is Tensor and other._backend is backend and other._data.dtype == self._data.dtype
                    and (alpha == 1 or self.dtype.is_floating_point)):
                getattr(backend, op_name)(self._data, other._data if alpha == 1 else backend.mul(other._data, alpha))
                self._vc[0] += 1
                return self
            if type(other) is float and self.dtype.is_floating_point:
                getattr(backend, op_name)(self._data, other * alpha)
                self._vc[0] += 1
                return self
        other_is_tensor = isinstance(other, Tensor)
        if _grad_state.enabled:  # with grad mode off there is nothing to check or record
            self._check_in_place()
            if self._requires_grad or (other_is_tensor and other._requires_grad):
                if alpha != 1:
                    other = other * alpha
                result = out_of_place(self, other)
                self._data = result._data
                self._bump()
                self._rebase(result.grad_fn)
                return self
        if self._needs_cast_check(other, other_is_tensor, alpha):
            if alpha != 1:
                other = other * alpha
                alpha = 1
            result_dtype = _dtype.result_type((self, other) if other_is_tensor else (self,),
                                              () if other_is_tensor else (other,))
            if _dtype.category(result_dtype) > _dtype.category(self.dtype):
                raise RuntimeError(
                    f"result type {_TYPE_NAMES[result_dtype.name]} can't be cast to the desired output type "
                    f"{_TYPE_NAMES[self.dtype.name]}")
        other_data = other._data if other_is_tensor else other
        if alpha != 1:
            other_data = self._backend.mul(other_data, alpha)
        getattr(self._backend, op_name)(self._data, other_data)
        self._bump()
        return self

    def _needs_cast_check(self, other, other_is_tensor: bool, alpha) -> builtins.bool:
        """False when ``self op= alpha * other`` certainly keeps self's dtype (an optimizer's
        updates: same-dtype tensors, or numbers into a float tensor), so promotion need not be checked."""
        if other_is_tensor:
            if other._backend is not self._backend or other._data.dtype != self._data.dtype:
                return True
            return not (alpha == 1 or self.dtype.is_floating_point)
        return not (self.dtype.is_floating_point and isinstance(other, (builtins.int, builtins.float))
                    and isinstance(alpha, (builtins.int, builtins.float)))

    def _rebase(self, grad_fn) -> None:
        """Make ``grad_fn`` this tensor's history; its saved copy of the old value stays valid."""
        self.grad_fn = grad_fn
        self._output_nr = 0
        self._requires_grad = True
        for entry in (grad_fn._packed or {}).values():
            if getattr(entry, "version_counter", None) is self._vc:
                entry.saved_version = self._vc[0]

    def add_(self, other, *, alpha=1) -> Tensor:
        return self._in_place("iadd", other, ops.add, alpha)

    def sub_(self, other, *, alpha=1) -> Tensor:
        return self._in_place("isub", other, ops.sub, alpha)

    def mul_(self, other) -> Tensor:
        return self._in_place("imul", other, ops.mul)

    def div_(self, other) -> Tensor:
        return self._in_place("idiv", other, ops.div)

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def fill_(self, value) -> Tensor:
        self._check_in_place()
        if is_grad_enabled() and self._requires_grad:
            from gradviz.ops import conversion

            result = conversion.fill(self, value)
            self._data = result._data
            self._bump()
            self._rebase(result.grad_fn)
            return self
        self._backend.fill(self._data, value._data if isinstance(value, Tensor) else value)
        self._bump()
        return self

    def copy_(self, source) -> Tensor:
        self._check_in_place()
        source = source if isinstance(source, Tensor) else tensor(source)
        if is_grad_enabled() and (self._requires_grad or source._requires_grad):
            from gradviz.ops import conversion

            result = conversion.copy_into(self, source)
            self._data = result._data
            self._bump()
            self._rebase(result.grad_fn)
            return self
        values = source._data if source._backend is self._backend else self._backend.array(
            source._backend.to_numpy(source._data), self.dtype, self.device)
        self._backend.assign(self._data, self._backend.broadcast_to(
            self._backend.astype(values, self.dtype), self._data.shape))
        self._bump()
        return self

    # -- random fills (the numbers: gradviz.random, as PyTorch's CPU generator makes them) ------------
    def uniform_(self, from_=0.0, to=1.0, *, generator=None) -> Tensor:
        """Fill with numbers drawn uniformly from [from_, to)."""
        self._check_in_place()
        _check_random_dtype(self.dtype, "check_uniform_bounds")
        if from_ > to:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_:g} > to={to:g}")
        values = random.uniform(generator or random.default_generator, self.numel(), self.dtype.numpy,
                                float(from_), float(to))
        return self._fill_random(values, "uniform")

    def normal_(self, mean=0.0, std=1.0, *, generator=None) -> Tensor:
        """Fill with normal numbers of the given mean and standard deviation (Box-Muller)."""
        self._check_in_place()
        _check_random_dtype(self.dtype, "normal_kernel_cpu")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        values = random.normal(generator or random.default_generator, self.numel(), self.dtype.numpy,
                               float(mean), float(std), contiguous=self._is_contiguous())
        return self._fill_random(values, "normal")

    def bernoulli_(self, p=0.5, *, generator=None) -> Tensor:
        """Fill with 1 where a uniform draw falls below ``p`` (a number or a tensor of them), else 0."""
        self._check_in_place()
        generator = generator or random.default_generator
        if isinstance(p, Tensor):
            probabilities = np.broadcast_to(p._backend.to_numpy(p._data), self._data.shape)
            return self._fill_random(random.bernoulli_from(generator, probabilities).ravel(), "bernoulli_tensor", p)
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
        return self._fill_random(random.bernoulli(generator, self.numel(), float(p)), "bernoulli")

    def _is_contiguous(self) -> builtins.bool:
        expected = 1
        for size, stride in reversed(tuple(zip(self._data.shape, self._backend.strides(self._data)))):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def _fill_random(self, values, kind: str, probabilities=None) -> Tensor:
        """Write freshly drawn ``values`` (flat, in PyTorch's order: memory order) into this tensor;
        in the graph, the tensor's node becomes PyTorch's (``NormalBackward0``, ...)."""
        shape = self._data.shape
        values = np.asarray(values).astype(self.dtype.numpy, copy=False)
        if self._is_contiguous():
            values = values.reshape(shape)
        else:  # PyTorch's iterator walks a strided tensor in memory order
            offsets = np.zeros(shape, dtype=np.int64)
            for axis, stride in enumerate(self._backend.strides(self._data)):
                offsets = offsets + np.arange(shape[axis]).reshape((-1,) + (1,) * (len(shape) - axis - 1)) * stride
            placed = np.empty(values.size, dtype=values.dtype)
            placed[np.argsort(offsets.ravel(), kind="stable")] = values
            values = placed.reshape(shape)
        if is_grad_enabled() and (self._requires_grad or (probabilities is not None and probabilities._requires_grad)):
            from gradviz.ops.sampling import RECORDED_FILLS

            inputs = (self,) if probabilities is None else (self, probabilities)
            result = RECORDED_FILLS[kind].apply(*inputs, self._backend.array(values, self.dtype, self.device))
            self._data = result._data
            self._bump()
            self._rebase(result.grad_fn)
            return self
        self._backend.assign(self._data, values)
        self._bump()
        return self

    # -- Python protocol -----------------------------------------------------------------------------
    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __bool__(self) -> builtins.bool:
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> builtins.int:
        return builtins.int(self.item())

    def __index__(self) -> builtins.int:
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def __repr__(self) -> str:
        from gradviz import _printing

        grad_fn = self.grad_fn
        return _printing.tensor_repr(
            self._backend.to_numpy(self._data), dtype=self.dtype.name, device=str(self.device),
            requires_grad=self._requires_grad, grad_fn_name=grad_fn.name() if grad_fn is not None else None)

    __str__ = __repr__

    def __format__(self, format_spec: str) -> str:
        if self.ndim == 0:
            from gradviz import _printing

            return _printing.format_scalar(self.item(), format_spec)
        return object.__format__(str(self), format_spec)

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self._backend.to_numpy(self._data), self._requires_grad))

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.  If you were attempting to deepcopy a module, this may be because of a torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")
        copy = Tensor._make(self._backend.copy(self._data), requires_grad=self._requires_grad, backend=self._backend)
        if self._grad is not None:
            copy._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = copy
        return copy


_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
               "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _rebuild(values, requires_grad):
    return tensor(values, requires_grad=requires_grad)


def _backend_of(data):
    if isinstance(data, np.generic):
        raise TypeError("internal error: a numpy scalar reached Tensor._make; wrap it with np.asarray")
    return backends.torch_backend()


def _wrap_dim(dim: int, ndim: int) -> int:
    """A dimension index in range, with PyTorch's IndexError when it is not."""
    low, high = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not low <= dim <= high:
        raise IndexError(f"Dimension out of range (expected to be in range of [{low}, {high}], but got {dim})")
    return dim % builtins.max(ndim, 1)


# -- creating tensors ------------------------------------------------------------------------------
def _infer_dtype(data) -> _dtype.dtype:
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        return _dtype.from_numpy(data.dtype)
    if isinstance(data, Tensor):
        return data.dtype
    flat = data
    kinds = set()
    stack = [flat]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, Tensor):
            kinds.add(_dtype.category(item.dtype) if item.dtype is not _dtype.float64 else 3)
        elif isinstance(item, (builtins.bool, np.bool_)):
            kinds.add(_dtype.BOOL)
        elif isinstance(item, numbers.Integral):
            kinds.add(_dtype.INT)
        elif isinstance(item, numbers.Real):
            kinds.add(_dtype.FLOAT)
        else:
            raise TypeError(f"new(): invalid data type '{type(item).__name__}'")
    top = builtins.max(kinds) if kinds else _dtype.FLOAT
    return {_dtype.BOOL: _dtype.bool, _dtype.INT: _dtype.int64, _dtype.FLOAT: _dtype.default_float,
            3: _dtype.float64}[top]


def _resolve(device, dtype_):
    device = Device(device) if device is not None else CPU
    return device, backends.for_device(device), (_dtype.from_any(dtype_) if dtype_ is not None else None)


def _finish(data, backend, requires_grad: bool) -> Tensor:
    out = Tensor._make(data, backend=backend)
    if requires_grad:
        if not out.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        out._requires_grad = True
    return out


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (numbers, nested lists, numpy arrays, tensors)."""
    device, backend, dtype_ = _resolve(device, dtype)
    dtype_ = dtype_ or _infer_dtype(data)
    if isinstance(data, Tensor):
        values = data._backend.to_numpy(data._data)
    elif isinstance(data, (list, tuple)) and any(isinstance(item, Tensor) for item in data):
        values = np.array([item.tolist() if isinstance(item, Tensor) else item for item in data])
    else:
        values = data
    return _finish(backend.array(values, dtype_, device), backend, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    return Tensor._make(np.asarray(array))


def _shape(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        return tuple(size[0])
    return tuple(size)


def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    device, backend, dtype_ = _resolve(device, dtype)
    dtype_ = dtype_ or _infer_dtype(fill_value)
    return _finish(backend.full(tuple(size), fill_value, dtype_, device), backend, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return full(_shape(size), 0, dtype=dtype or _dtype.default_float, device=device, requires_grad=requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return full(_shape(size), 1, dtype=dtype or _dtype.default_float, device=device, requires_grad=requires_grad)


def empty(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def zeros_like(other: Tensor, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return zeros(other.shape, dtype=dtype or other.dtype, device=device or other.device, requires_grad=requires_grad)


def ones_like(other: Tensor, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return ones(other.shape, dtype=dtype or other.dtype, device=device or other.device, requires_grad=requires_grad)


def full_like(other: Tensor, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return full(other.shape, fill_value, dtype=dtype or other.dtype, device=device or other.device,
                requires_grad=requires_grad)


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    device, backend, dtype_ = _resolve(device, dtype)
    data = backend.eye(n, n if m is None else m, dtype_ or _dtype.default_float, device)
    return _finish(data, backend, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    if end is None:
        start, end = 0, start
    device, backend, dtype_ = _resolve(device, dtype)
    if dtype_ is None:
        dtype_ = _infer_dtype([start, end, step])
    return _finish(backend.arange(start, end, step, dtype_, device), backend, requires_grad)


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    values = np.linspace(start, end, steps)
    return tensor(values, dtype=dtype or _dtype.default_float, device=device, requires_grad=requires_grad)


# -- random tensors (the numbers: gradviz.random, as PyTorch's CPU generator makes them) -------------
def _check_random_dtype(dtype_, kernel: str) -> None:
    if not dtype_.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_TYPE_NAMES[dtype_.name]}\'')


def _random_size(function: str, args: tuple, size) -> tuple:
    """The shape of ``f(2, 3)``, ``f((2, 3))`` or ``f(size=(2, 3))``, checked as PyTorch checks it."""
    if size is not None:
        if args:
            raise TypeError(f"{function}() got the size twice: pass it positionally or as size=, not both")
        args = (size,)
    if not args:
        raise TypeError(f"{function}() missing required argument 'size' (e.g. {function}(2, 3))")
    shape = _shape(args)
    for item in shape:
        if isinstance(item, builtins.bool) or not isinstance(item, (numbers.Integral, Tensor)):
            raise TypeError(f"{function}(): argument 'size' (position 1) must be tuple of ints, "
                            f"not {type(item).__name__}")
    shape = tuple(builtins.int(item) for item in shape)
    for item in shape:
        if item < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {item}: {list(shape)}")
    return shape


def _random_tensor(values, shape, dtype_, device, requires_grad: bool) -> Tensor:
    device, backend, _ = _resolve(device, None)
    data = backend.array(np.asarray(values).reshape(shape), dtype_, device)
    return _finish(data, backend, requires_grad)


def _float_random(function: str, kernel: str, draw, size_args, size, generator, dtype, device,
                  requires_grad: bool) -> Tensor:
    shape = _random_size(function, size_args, size)
    dtype_ = _dtype.from_any(dtype) if dtype is not None else _dtype.default_float
    _check_random_dtype(dtype_, kernel)
    values = draw(generator or random.default_generator, math.prod(shape), dtype_.numpy)
    return _random_tensor(values, shape, dtype_, device, requires_grad)


def randn(*size_args, size=None, generator=None, dtype=None, device=None, requires_grad: bool = False, layout=None,
          pin_memory: bool = False) -> Tensor:
    """Normal numbers (mean 0, variance 1): after ``manual_seed(s)``, torch's values."""
    return _float_random("randn", "normal_kernel_cpu", random.normal, size_args, size, generator, dtype, device,
                         requires_grad)


def rand(*size_args, size=None, generator=None, dtype=None, device=None, requires_grad: bool = False, layout=None,
         pin_memory: bool = False) -> Tensor:
    """Numbers drawn uniformly from [0, 1): after ``manual_seed(s)``, torch's values."""
    return _float_random("rand", "check_uniform_bounds", random.uniform, size_args, size, generator, dtype, device,
                         requires_grad)


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad: bool = False, layout=None,
            pin_memory: bool = False) -> Tensor:
    """Integers drawn uniformly from [low, high): ``randint(high, size)`` or ``randint(low, high, size)``."""
    if size is None:
        if len(args) not in (2, 3):
            raise TypeError("randint() takes (high, size) or (low, high, size), e.g. randint(0, 10, (3,))")
        *bounds, size = args
    else:
        bounds = list(args)
    if len(bounds) not in (1, 2):
        raise TypeError("randint() takes (high, size) or (low, high, size), e.g. randint(0, 10, (3,))")
    low, high = (0, bounds[0]) if len(bounds) == 1 else bounds
    low, high = builtins.int(low), builtins.int(high)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    shape = _random_size("randint", (), size)
    values = random.integers(generator or random.default_generator, math.prod(shape), low, high)
    return _random_tensor(values, shape, _dtype.from_any(dtype) if dtype is not None else _dtype.int64, device,
                          requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad: bool = False, layout=None,
             pin_memory: bool = False) -> Tensor:
    """The numbers 0 .. n-1 in a random order."""
    n = builtins.int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    values = random.permutation(generator or random.default_generator, n)
    return _random_tensor(values, (n,), _dtype.from_any(dtype) if dtype is not None else _dtype.int64, device,
                          requires_grad)


def normal(mean, std, size, *, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``torch.normal(mean, std, size)``: normal numbers with that mean and standard deviation."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    shape = _random_size("normal", (), size)
    dtype_ = _dtype.from_any(dtype) if dtype is not None else _dtype.default_float
    values = random.normal(generator or random.default_generator, math.prod(shape), dtype_.numpy,
                           float(mean), float(std))
    return _random_tensor(values, shape, dtype_, device, requires_grad)


def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    """0 or 1 for each element: 1 with the probability the element holds (or with ``p``)."""
    out = zeros_like(input)
    if p is not None:
        return out.bernoulli_(p, generator=generator)
    values = random.bernoulli_from(generator or random.default_generator, input._backend.to_numpy(input._data))
    if is_grad_enabled() and input._requires_grad:
        from gradviz.ops.sampling import BernoulliBackward0

        return BernoulliBackward0.apply(input, input._backend.array(values, input.dtype, input.device))
    return out._fill_random(values.ravel(), "bernoulli")


def randn_like(other: Tensor, *, dtype=None, device=None, requires_grad: bool = False, generator=None) -> Tensor:
    return randn(other.shape, dtype=dtype or other.dtype, device=device or other.device, requires_grad=requires_grad,
                 generator=generator)


def rand_like(other: Tensor, *, dtype=None, device=None, requires_grad: bool = False, generator=None) -> Tensor:
    return rand(other.shape, dtype=dtype or other.dtype, device=device or other.device, requires_grad=requires_grad,
                generator=generator)


def randint_like(other: Tensor, low=0, high=None, *, dtype=None, device=None, requires_grad: bool = False,
                 generator=None) -> Tensor:
    if high is None:
        low, high = 0, low
    return randint(low, high, other.shape, dtype=dtype or other.dtype, device=device or other.device,
                   requires_grad=requires_grad, generator=generator)


def is_tensor(obj) -> builtins.bool:
    return isinstance(obj, Tensor)


# Imported last: the autograd and ops packages import this module (kept out of hot method bodies)
from gradviz import ops  # noqa: E402
from gradviz.autograd.node import AccumulateGrad  # noqa: E402
