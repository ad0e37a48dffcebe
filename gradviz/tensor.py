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
import operator
import warnings
import weakref

import numpy as np

from gradviz import _dtype, backends, random
from gradviz._device import CPU, device as Device
from gradviz import grad_mode
from gradviz.grad_mode import _state as _grad_state, is_grad_enabled
from gradviz.backends.quiet import _IGNORE as _QUIET, _reset as _quiet_reset, _set as _quiet_set

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
DETACH_VIEW_IN_PLACE = (
    "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for "
    "training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence "
    "detach_() cannot be called on these gradients. To fix this error, please refer to the "
    "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
)
FLOAT_OF_REQUIRES_GRAD_WARNING = (
    "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
    "Consider using tensor.detach() first. (Triggered internally at /__w/pytorch/pytorch/torch/csrc/autograd/"
    "generated/python_variable_methods.cpp:822.)"
)
_warned_float_of_requires_grad = False
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
    # A view also sets ``_attr_version`` (the version its grad_fn was made at) and ``_view_no_grad``
    # (made with grad mode off); they are read only when ``_base`` is set.
    __slots__ = ("_data", "_backend", "_requires_grad", "_grad", "_grad_fn", "_vc", "_output_nr",
                 "_accumulator", "_retains_grad", "_base", "_attr_version", "_view_no_grad", "_leaf_hooks",
                 "__weakref__")

    __hash__ = object.__hash__

    def __init__(self, *args, device=None, **kwargs):
        """``torch.Tensor(data)`` or ``torch.Tensor(*sizes)``: PyTorch's legacy constructor.

        Data becomes a float tensor of the default dtype; sizes give an uninitialized one (zeros
        here); a tensor is aliased. Code inside gradviz makes tensors with ``_make``, which
        skips this.
        """
        from gradviz import legacy

        made = legacy.construct(None, args, kwargs, device)
        for slot in ("_data", "_backend", "_vc"):
            setattr(self, slot, getattr(made, slot))
        self._requires_grad, self._grad, self._grad_fn, self._output_nr = False, None, None, 0
        self._accumulator, self._retains_grad, self._base, self._leaf_hooks = None, False, None, None

    @classmethod
    def _make(cls, data, requires_grad: bool = False, grad_fn=None, backend=None, version=None):
        """Wrap a backend array (no copy). Outputs of recorded ops pass their grad_fn."""
        t = object.__new__(cls)
        t._data = data
        t._backend = backend if backend is not None else (
            backends.numpy_backend if type(data) is np.ndarray else _backend_of(data))
        t._requires_grad = requires_grad
        t._grad = None
        t._grad_fn = grad_fn
        t._vc = version if version is not None else [0]
        t._output_nr = 0
        t._accumulator = None
        t._retains_grad = False
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
    def grad_fn(self):
        """The node that made this tensor (None for a leaf).

        A view whose base (or another view of it) was changed in place since its grad_fn was
        made gets a new one on access, an AsStridedBackward0 over the base's, as in PyTorch.
        """
        if self._base is not None and self._attr_version != self._vc[0]:
            from gradviz.ops import inplace

            return inplace.view_grad_fn(self)
        return self._grad_fn

    def _is_view(self) -> builtins.bool:
        return self._base is not None

    @property
    def _version(self) -> int:
        if grad_mode.inference_tensors:
            grad_mode.check_not_inference(self, grad_mode.INFERENCE_VERSION)
        return self._vc[0]

    @property
    def output_nr(self) -> int:
        return self._output_nr

    # -- autograd state ------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Set for a leaf, true for every tensor made from one; a view also requires grad when its base does."""
        return self._requires_grad or (self._base is not None and self._base._requires_grad)

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and grad_mode.inference_tensors:
            grad_mode.check_not_inference(self, grad_mode.INFERENCE_REQUIRES_GRAD)
        if self.grad_fn is not None:
            raise RuntimeError(NON_LEAF_REQUIRES_GRAD)
        if value and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad and grad_mode.inference_tensors:
            grad_mode.check_not_inference(self, grad_mode.INFERENCE_REQUIRES_GRAD)
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError(NON_LEAF_REQUIRES_GRAD)
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if self.grad_fn is None:
            self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self):
        # a leaf that is not a view (every parameter): no grad_fn to look up, no warning
        if (self._grad_fn is not None or self._base is not None) and self.grad_fn is not None and not self._retains_grad:
            warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            if value.dtype is not self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_dtype.CPP_NAMES[value.dtype.name]}' to a tensor with "
                    f"grad_dtype '{_TYPE_NAMES[self.dtype.name]}'. The gradient must match the tensor's grad_dtype "
                    "(defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific "
                    "dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor "
                    "and its gradient may break downstream systems that assume they match.")
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
        if accumulator is None:  # AccumulateGrad(self), with no class call: a leaf's is made anew for each graph
            accumulator = object.__new__(AccumulateGrad)
            accumulator.variable = self
            if self._leaf_hooks:
                accumulator._tensor_pre_hooks = {0: self._leaf_hooks}
            self._accumulator = weakref.ref(accumulator)
        return accumulator

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Compute gradients of this tensor with respect to the graph's leaves (see autograd.backward)."""
        _engine_backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """The same data, cut off from the graph: it shares the memory and version counter, not the history."""
        return Tensor._make(self._data, backend=self._backend, version=self._vc)

    def detach_(self) -> Tensor:
        if self._base is not None:
            raise RuntimeError(DETACH_VIEW_IN_PLACE)
        self._grad_fn = None
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
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)`` or ``to(other)`` (other's device and dtype),
        recorded like PyTorch's ``ToCopyBackward0``; ``copy=True`` copies even when nothing changes."""
        from gradviz.ops import conversion

        target_device, target_dtype = self.device, self.dtype
        for arg in list(args) + [kwargs.get("device"), kwargs.get("dtype")]:
            if arg is None:
                continue
            if isinstance(arg, Tensor):
                target_device, target_dtype = arg.device, arg.dtype
            elif isinstance(arg, (str, Device)):
                target_device = Device(arg)
            else:
                target_dtype = _dtype.from_any(arg)
        if target_device == self.device and target_dtype is self.dtype and not kwargs.get("copy"):
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

    def clone(self, *, memory_format=None) -> Tensor:
        from gradviz.ops import conversion

        return conversion.clone(self, memory_format=memory_format)

    def contiguous(self) -> Tensor:
        """Itself when its elements lie in row-major order; else a row-major copy (CloneBackward0)."""
        if self._backend.is_contiguous(self._data):
            return self
        from gradviz.ops import conversion

        return conversion.clone(self, memory_format=conversion.CONTIGUOUS_FORMAT)

    def is_contiguous(self) -> builtins.bool:
        return self._backend.is_contiguous(self._data)

    def stride(self, dim: builtins.int | None = None):
        """How many elements apart neighbours along each dimension lie in memory."""
        strides = self._backend.strides(self._data)
        if 0 in strides and self._data.size == 0 and not any(strides):
            # numpy makes a new empty array with all strides 0; PyTorch gives it contiguous ones (a size-0
            # dimension counted as 1): zeros(0, 2) is (2, 1)
            strides = tuple(math.prod(max(n, 1) for n in self._data.shape[i + 1:]) for i in range(self.ndim))
        return strides if dim is None else strides[_wrap_dim(dim, self.ndim)]

    def storage_offset(self) -> builtins.int:
        """Where this tensor's first element lies in its base's memory (0 unless it is a view)."""
        if self._base is None:
            return 0
        return self._backend.geometry(self._data, self._base._data)[2]

    def data_ptr(self) -> builtins.int:
        """The address of the first element: tensors that share memory show it (``y = x[1:]`` points one element
        further; a view with the same first element has the same pointer)."""
        data = self._data
        if type(data) is np.ndarray:
            return data.__array_interface__["data"][0]
        return data.data_ptr()

    def type(self, dtype=None):
        """``'torch.FloatTensor'``, or a copy converted to the type named (``x.type(torch.DoubleTensor)``)."""
        from gradviz.autograd.node import _type_string

        if dtype is None:
            return _type_string(self)
        return self.to(getattr(dtype, "dtype", dtype) if not isinstance(dtype, str) else _dtype.from_type_string(dtype))

    def is_inference(self) -> builtins.bool:
        """Whether this tensor was made in ``inference_mode`` (autograd may not save or change it later)."""
        return grad_mode.is_inference(self)

    def type_as(self, other: Tensor) -> Tensor:
        """This tensor converted to ``other``'s dtype (and device); itself when they already match."""
        return self.to(other.device, other.dtype)

    # -- new tensors like this one: the same dtype and device unless told otherwise --------------------
    def new_tensor(self, data, *, dtype=None, device=None, requires_grad: builtins.bool = False) -> Tensor:
        if isinstance(data, Tensor):
            warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
                          "or sourceTensor.detach().clone().requires_grad_(True), rather than "
                          "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
        return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad: builtins.bool = False) -> Tensor:
        return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad: builtins.bool = False, **keywords) -> Tensor:
        return self._new_filled("new_zeros", 0, size, keywords, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad: builtins.bool = False, **keywords) -> Tensor:
        return self._new_filled("new_ones", 1, size, keywords, dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad: builtins.bool = False, **keywords) -> Tensor:
        """Uninitialized memory in PyTorch; zeros here, which is one of its possible values."""
        return self._new_filled("new_empty", 0, size, keywords, dtype, device, requires_grad)

    def _new_filled(self, name: str, value, positional, keywords, dtype, device, requires_grad) -> Tensor:
        return full(_keyword_size(name, positional, keywords), value, dtype=dtype or self.dtype,
                    device=device or self.device, requires_grad=requires_grad)

    # -- in place --------------------------------------------------------------------------------
    # The new value is always written into the tensor's own memory, so every view of it (and the
    # tensor a view was made from) sees it; gradviz.ops.inplace records the history as PyTorch does.
    # The in-place methods reach ops.inplace and ops.conversion as attributes of ``ops``,
    # imported at the end of this module: an import statement in the body cost more than the update.
    def _in_place(self, op_name: str, other, out_of_place, alpha=1) -> Tensor:
        """Run an in-place update ``self op= alpha * other``: mutate the array, or record it when
        grad mode tracks it."""
        backend = self._backend
        if not _grad_state.enabled and not grad_mode.inference_tensors and _FORWARD_AD[0] is None:
            # An optimizer's updates (no_grad; a same-dtype tensor, or a float into a float tensor):
            # nothing to record and no promotion to check, so go straight to the backend. (Once
            # inference_mode has made a tensor, the general path checks each update against it.)
            data = self._data
            if (type(other) is Tensor and alpha == 1 and type(data) is _ndarray and type(value := other._data) is _ndarray
                    and (dtype := data.dtype) is value.dtype):
                # an update of the parameter's own dtype (``p -= lr * p.grad``), told with the fewest tests: the
                # array's goes on to the backend's in-place ufunc below
                if not data.ndim and not value.ndim and (dtype is _F32 or dtype is _F64):
                    # a scalar parameter and a 0-d update: numpy's scalar arithmetic, the same IEEE operation as
                    # the ufunc on the two 0-d arrays below at a fraction of its cost (neither shape can mismatch,
                    # and nothing raises with numpy's warnings off)
                    token = _quiet_set(_QUIET)
                    data[()] = _UPDATE_OPERATORS[op_name](data[()], value[()])
                    _quiet_reset(token)
                    self._vc[0] += 1
                    return self
            elif (type(other) is Tensor and other._backend is backend and other._data.dtype == data.dtype
                    and (alpha == 1 or self.dtype.is_floating_point)):
                value = other._data if alpha == 1 else backend.mul(other._data, alpha)
            elif type(other) is float and (data.dtype.kind == "f" if type(data) is np.ndarray
                                           else self.dtype.is_floating_point):
                value = other * alpha
            else:
                value = None
            if value is not None:
                if not data.ndim and type(data) is _ndarray and data.dtype.kind == "f":
                    # a 0-d float array (a scalar parameter; one element cannot overlap itself): numpy's
                    # operator and a store cost half of a ufunc call with out=, and compute the same
                    # number in the same dtype
                    token = _quiet_set(_QUIET)  # numpy's warnings off, as the backend's functions have them
                    try:
                        data[()] = _UPDATE_OPERATORS[op_name](data, value)
                    except ValueError:  # numpy's word for a tensor of another shape: PyTorch's error instead
                        _check_in_place_shapes(data.shape, other)
                        raise
                    finally:
                        _quiet_reset(token)
                    self._vc[0] += 1
                    return self
                if backend is _numpy_backend and type(data) is _ndarray:
                    if 0 not in data.strides:  # no expanded view (backend.overlaps_itself, answered in C);
                        # else the general path below raises PyTorch's error
                        # the backend's in-place function (``iadd``: ``np.add(out, b, out=out)`` with numpy's
                        # warnings off), written out: two calls less for each parameter of each step (``out``
                        # given by position: numpy parses no keywords)
                        token = _quiet_set(_QUIET)
                        try:
                            _IN_PLACE_UFUNCS[op_name](data, value, data)
                        except ValueError:
                            _check_in_place_shapes(data.shape, other)
                            raise
                        except TypeError:  # numpy refuses bool - bool: PyTorch's words for it
                            if op_name == "isub":
                                ops.arithmetic.check_sub(self, other)
                            raise
                        finally:
                            _quiet_reset(token)
                        self._vc[0] += 1
                        return self
                elif not backend.overlaps_itself(data):  # else the general path below raises PyTorch's error
                    getattr(backend, op_name)(data, value)
                    self._vc[0] += 1
                    return self
        if op_name == "isub":
            ops.arithmetic.check_sub(self, other)  # no bools, as PyTorch's sub_check
        inplace = ops.inplace
        other_is_tensor = isinstance(other, Tensor)
        if not other_is_tensor and not isinstance(other, numbers.Number):
            raise TypeError(f"{op_name[1:]}_(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
        if other_is_tensor:
            _check_in_place_shapes(self._data.shape, other)
        if inplace.records(self, other):
            return inplace.apply_(self, out_of_place, other, **({"alpha": alpha} if alpha != 1 else {}))
        inplace.check_writable(self)
        if self._needs_cast_check(other, other_is_tensor, alpha):
            if alpha != 1:
                other = other * alpha
                alpha = 1
            result_dtype = _dtype.result_type((self, other) if other_is_tensor else (self,),
                                              () if other_is_tensor else (other,))
            if op_name == "idiv" and not result_dtype.is_floating_point:  # true division of integers is float
                result_dtype = _dtype.default_float
            inplace.check_castable(result_dtype, self.dtype)
        other_data = other._data if other_is_tensor else other
        if alpha != 1:
            other_data = self._backend.mul(other_data, alpha)
        getattr(self._backend, op_name)(self._data, other_data)
        self._vc[0] += 1
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

    def add_(self, other, *, alpha=1) -> Tensor:
        return self._in_place("iadd", other, ops.add, alpha)

    def sub_(self, other, *, alpha=1) -> Tensor:
        return self._in_place("isub", other, ops.sub, alpha)

    def mul_(self, other) -> Tensor:
        return self._in_place("imul", other, ops.mul)

    def div_(self, other, *, rounding_mode=None) -> Tensor:
        if rounding_mode is not None:  # floor or trunc division in place: through the general in-place driver
            return ops.inplace.apply_(self, ops.div, other, rounding_mode=rounding_mode)
        return self._in_place("idiv", other, ops.div)

    # the in-place operators go straight to _in_place: ``p -= lr * p.grad`` runs for every
    # parameter of every step of a hand-written training loop
    def __iadd__(self, other):
        if type(other) is Tensor or type(other) is float or _is_operand(other):
            return self._in_place("iadd", other, ops.add)
        return NotImplemented

    def __isub__(self, other):
        if type(other) is Tensor or type(other) is float or _is_operand(other):
            return self._in_place("isub", other, ops.sub)
        return NotImplemented

    def __imul__(self, other):
        if type(other) is Tensor or type(other) is float or _is_operand(other):
            return self._in_place("imul", other, ops.mul)
        return NotImplemented

    def __itruediv__(self, other):
        if type(other) is Tensor or type(other) is float or _is_operand(other):
            return self._in_place("idiv", other, ops.div)
        return NotImplemented

    def zero_(self) -> Tensor:
        conversion, inplace = ops.conversion, ops.inplace
        if inplace.records(self):
            return inplace.apply_(self, conversion.zero)
        return self._fill_unrecorded(0)

    def fill_(self, value) -> Tensor:
        conversion, inplace = ops.conversion, ops.inplace
        if isinstance(value, Tensor) and value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
        if inplace.records(self, value):
            return inplace.apply_(self, conversion.fill, value)
        return self._fill_unrecorded(value._data.item() if isinstance(value, Tensor) else value)

    def _fill_unrecorded(self, value) -> Tensor:
        inplace = ops.inplace
        inplace.check_writable(self)
        self._backend.fill(self._data, value)
        self._vc[0] += 1
        return self

    def copy_(self, source) -> Tensor:
        conversion, inplace = ops.conversion, ops.inplace
        if not isinstance(source, Tensor):
            raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not {type(source).__name__}")
        conversion.check_copy_shapes(self, source)
        if inplace.records(self, source):
            return inplace.apply_(self, conversion.copy_into, source)
        inplace.check_writable(self)
        values = source._data if source._backend is self._backend else self._backend.array(
            source._backend.to_numpy(source._data), self.dtype, self.device)
        self._backend.assign(self._data, self._backend.broadcast_to(
            self._backend.astype(values, self.dtype), self._data.shape))
        self._vc[0] += 1
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
                               float(mean), float(std), contiguous=self.is_contiguous())
        return self._fill_random(values, "normal")

    def bernoulli_(self, p=0.5, *, generator=None) -> Tensor:
        """Fill with 1 where a uniform draw falls below ``p`` (a number or a tensor of them), else 0."""
        self._check_in_place(p)
        generator = generator or random.default_generator
        if isinstance(p, Tensor):
            probabilities = np.broadcast_to(p._backend.to_numpy(p._data), self._data.shape)
            return self._fill_random(random.bernoulli_from(generator, probabilities).ravel(), "bernoulli_tensor", p)
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
        return self._fill_random(random.bernoulli(generator, self.numel(), float(p)), "bernoulli")

    def _check_in_place(self, *others) -> None:
        """PyTorch's in-place checks, made before a random fill draws its numbers, so that a refused
        fill leaves the generator where it was."""
        inplace = ops.inplace
        if inplace.records(self, *others):
            inplace.check_in_place(self)
        inplace.check_writable(self)

    def _fill_random(self, values, kind: str, probabilities=None) -> Tensor:
        """Write freshly drawn ``values`` (flat, in PyTorch's order: memory order) into this tensor;
        in the graph, the tensor's node becomes PyTorch's (``NormalBackward0``, ...)."""
        inplace = ops.inplace
        shape = self._data.shape
        values = np.asarray(values).astype(self.dtype.numpy, copy=False)
        if self.is_contiguous():
            values = values.reshape(shape)
        else:  # PyTorch's iterator walks a strided tensor in memory order
            offsets = np.zeros(shape, dtype=np.int64)
            for axis, stride in enumerate(self._backend.strides(self._data)):
                offsets = offsets + np.arange(shape[axis]).reshape((-1,) + (1,) * (len(shape) - axis - 1)) * stride
            placed = np.empty(values.size, dtype=values.dtype)
            placed[np.argsort(offsets.ravel(), kind="stable")] = values
            values = placed.reshape(shape)
        if inplace.records(self, probabilities):
            from gradviz.ops.sampling import RECORDED_FILLS

            inputs = () if probabilities is None else (probabilities,)
            drawn = self._backend.array(values, self.dtype, self.device)
            return inplace.apply_(self, RECORDED_FILLS[kind].apply, *inputs, drawn)
        self._backend.assign(self._data, values)
        self._vc[0] += 1
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
        global _warned_float_of_requires_grad
        if self._requires_grad and not _warned_float_of_requires_grad:
            _warned_float_of_requires_grad = True  # PyTorch warns once per process
            warnings.warn(FLOAT_OF_REQUIRES_GRAD_WARNING, UserWarning, stacklevel=2)
        return float(self._python_scalar())

    def __int__(self) -> builtins.int:
        return builtins.int(self._python_scalar())

    def _python_scalar(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __index__(self) -> builtins.int:
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def __repr__(self) -> str:
        from gradviz import _printing

        try:
            grad_fn = self.grad_fn
            # the node's class name, as PyTorch prints it: CopySlices, whose name() is torch::autograd::CopySlices
            grad_fn_name = type(grad_fn).__name__ if grad_fn is not None else None
        except RuntimeError:  # a view made under no_grad whose base changed: PyTorch prints it so
            grad_fn_name = "Invalid"
        # -- forward-mode AD: a dual tensor also prints its tangent (autograd/forward_ad.py)
        from gradviz.autograd.forward_ad import tangent_text
        # -- end forward-mode AD
        return _printing.tensor_repr(
            self._backend.to_numpy(self._data), dtype=self.dtype.name, device=str(self.device),
            requires_grad=self.requires_grad and grad_fn_name is None, grad_fn_name=grad_fn_name,
            tangent=tangent_text(self))

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


_TYPE_NAMES = _dtype.SCALAR_TYPE_NAMES


# what ``Tensor._in_place`` computes for a 0-d float array before storing it back
_ndarray, _F32, _F64 = np.ndarray, np.dtype(np.float32), np.dtype(np.float64)  # _in_place's scalar update
_UPDATE_OPERATORS = {"iadd": operator.add, "isub": operator.sub, "imul": operator.mul, "idiv": operator.truediv}
# and for any other numpy array: the ufuncs of the numpy backend's ``iadd``/``isub``/``imul``/``idiv``
_IN_PLACE_UFUNCS = {"iadd": np.add, "isub": np.subtract, "imul": np.multiply, "idiv": np.true_divide}
_numpy_backend = backends.numpy_backend


def _check_in_place_shapes(shape, other) -> None:
    """PyTorch's error for ``self op= other`` when ``other`` is a tensor whose shape does not broadcast
    to ``shape`` (numpy says ValueError, or writes a one-element array into a 0-d one)."""
    if isinstance(other, Tensor) and other._data.shape != shape:
        from gradviz.ops._util import broadcast_shapes

        broadcast = broadcast_shapes(shape, other._data.shape)  # PyTorch's error for sizes that differ
        if broadcast != tuple(shape):
            raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape {list(broadcast)}")


def _is_operand(value) -> builtins.bool:
    """Whether arithmetic with ``value`` is defined (else the operator returns NotImplemented)."""
    return isinstance(value, (Tensor, numbers.Number)) or hasattr(value, "__array_priority__")


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


_default_device = None  # set_default_device(); None means the CPU


def set_default_device(device) -> None:
    """Make ``device`` where factories put new tensors when they are not told (``None``: the CPU)."""
    global _default_device
    _default_device = Device(device) if device is not None else None


def get_default_device() -> Device:
    return _default_device if _default_device is not None else CPU


def _resolve(device, dtype_):
    if device is not None:
        device = Device(device)
    else:
        device = _default_device if _default_device is not None else CPU
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
    try:
        array = backend.array(values, dtype_, device)
    except OverflowError:  # numpy refuses any integer out of range: PyTorch wraps some, with its own error for others
        array = backend.array(_wrapped_integers(values, dtype_), dtype_, device)
    except ValueError:
        if isinstance(values, (list, tuple)):
            _check_nesting(values)  # a ragged nested list: PyTorch's error says where
        raise
    return _finish(array, backend, requires_grad)


def _check_nesting(values) -> None:
    """PyTorch's errors for nested lists that do not form a block: each dim's length is taken from the first
    element at that depth, and the first list found with another length is named (``expected sequence of length
    2 at dim 1 (got 1)``), or an element that is not a list where one was expected (``not a sequence``)."""
    sizes, first = [], values
    while isinstance(first, (list, tuple)):
        sizes.append(len(first))
        if not first:
            break
        first = first[0]

    def check(item, dim):
        if dim == len(sizes):
            return
        if not isinstance(item, (list, tuple)):
            raise TypeError("not a sequence")
        if len(item) != sizes[dim]:
            raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(item)})")
        for element in item:
            check(element, dim + 1)

    if math.prod(sizes):  # PyTorch stores (and so checks) nothing when some dim is empty
        check(values, 0)


def _wrapped_integers(values, dtype_) -> np.ndarray:
    """``values`` for an integer dtype as PyTorch converts them: an integer within the type's range, or for uint8
    down to minus its maximum, wraps around (``tensor([-3], dtype=uint8)`` is 253); a float must lie within the
    type's range; anything else is PyTorch's overflow error."""
    limits = np.iinfo(dtype_.numpy)
    flat = np.array(values, dtype=object).reshape(-1).tolist()
    for number in flat:
        if isinstance(number, builtins.bool):
            continue
        if isinstance(number, numbers.Integral):
            if not -2 ** 63 <= number < 2 ** 63:
                raise ValueError("Overflow when unpacking long long")
            fits = (-limits.max if limits.min == 0 else limits.min) <= number <= limits.max
        else:
            fits = limits.min <= number <= limits.max
        if not fits:
            raise RuntimeError(f"value cannot be converted to type {dtype_.name} without overflow")
    wrapped = [builtins.int(number) % (1 << (8 * dtype_.itemsize)) for number in flat]
    return np.array(wrapped, dtype=np.uint64).astype(dtype_.numpy).reshape(np.shape(values))


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


def _size(name: str, positional: tuple, size) -> tuple:
    """The shape a factory was given, positionally (``zeros(2, 3)``, ``zeros((2, 3))``) or as ``size=``."""
    if positional and size is not None:
        raise TypeError(f"{name}() got multiple values for argument 'size'")
    if size is None:
        if not positional:
            raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
        size = _shape(positional)
    elif not isinstance(size, (tuple, list)):
        raise TypeError(f"{name}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    shape = []
    for position, item in enumerate(size):
        if isinstance(item, Tensor) and item.ndim == 0 and not item.dtype.is_floating_point:
            item = item.item()  # randn(n) with n = torch.tensor(3), as PyTorch allows
        if isinstance(item, builtins.bool) or not isinstance(item, numbers.Integral):
            if len(positional) == 1 and not isinstance(positional[0], (tuple, list)):
                raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not "
                                f"{type(item).__name__}")
            raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, but found element of "
                            f"type {type(item).__name__} at pos {position}")
        shape.append(builtins.int(item))
    negative = [item for item in shape if item < 0]
    if negative:
        if name == "zeros":
            raise RuntimeError("zeros: Dimension size must be non-negative.")
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative[0]}: {shape}")
    return tuple(shape)


def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    size = _size("full", (), size)
    device, backend, dtype_ = _resolve(device, dtype)
    dtype_ = dtype_ or _infer_dtype(fill_value)
    return _finish(backend.full(size, fill_value, dtype_, device), backend, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad: bool = False, **keywords) -> Tensor:
    return _filled("zeros", 0, size, keywords, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False, **keywords) -> Tensor:
    return _filled("ones", 1, size, keywords, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad: bool = False, **keywords) -> Tensor:
    """An uninitialized tensor in PyTorch; here its memory is zeroed, which is one of its possible values."""
    return _filled("empty", 0, size, keywords, dtype, device, requires_grad)


def _filled(name: str, value, positional: tuple, keywords: dict, dtype, device, requires_grad) -> Tensor:
    shape = _keyword_size(name, positional, keywords)
    return full(shape, value, dtype=dtype or _dtype.default_float, device=device, requires_grad=requires_grad)


def _keyword_size(name: str, positional: tuple, keywords: dict) -> tuple:
    """The shape from ``*size`` or ``size=`` (the only other keyword a factory's ``**keywords`` takes)."""
    size = keywords.pop("size", None)
    if keywords:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(keywords))}'")
    return _size(name, positional, size)


def _like(other: Tensor, make) -> Tensor:
    """``make(shape)`` laid out in memory as ``other`` is (PyTorch's ``preserve_format``): a dense tensor's
    strides exactly (a size-1 dim's too), any other's dims in the same memory order, densely; so the zeros of a
    transposed tensor are transposed too, and random values fill them in memory order."""
    shape, strides = other.shape, other.stride()
    order = sorted(range(other.ndim), key=lambda dim: -strides[dim])  # stable: equal strides keep their order
    wanted = list(strides)
    if not backends.numpy_backend.non_overlapping_and_dense(shape, strides):
        step = 1
        for dim in reversed(order):
            wanted[dim], step = step, step * shape[dim]
    step, contiguous = 1, [0] * other.ndim
    for dim in reversed(range(other.ndim)):
        contiguous[dim], step = step, step * shape[dim]
    if wanted == contiguous:
        return make(shape)
    made = make(tuple(shape[dim] for dim in order))  # filled in memory order
    made._data = made._backend.as_strided(made._data, shape, wanted, 0)
    return made


def zeros_like(input: Tensor, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _like(input, lambda shape: zeros(shape, dtype=dtype or input.dtype, device=device or input.device,
                                            requires_grad=requires_grad))


def ones_like(input: Tensor, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _like(input, lambda shape: ones(shape, dtype=dtype or input.dtype, device=device or input.device,
                                           requires_grad=requires_grad))


def full_like(input: Tensor, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _like(input, lambda shape: full(shape, fill_value, dtype=dtype or input.dtype,
                                           device=device or input.device, requires_grad=requires_grad))


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    for name, count in (("n", n), ("m", m)):
        if count is not None and count < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {count}")
    device, backend, dtype_ = _resolve(device, dtype)
    data = backend.eye(n, n if m is None else m, dtype_ or _dtype.default_float, device)
    return _finish(data, backend, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``start, start + step, ...`` below ``end``, with PyTorch's rounding (see backends/numpy_ranges.py)."""
    if end is None:
        start, end = 0, start
    start, end, step = (_scalar_of(value) for value in (start, end, step))
    device, backend, dtype_ = _resolve(device, dtype)
    if dtype_ is None:
        dtype_ = _infer_dtype([start, end, step])
    return _finish(backend.arange(start, end, step, dtype_, device), backend, requires_grad)


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, rounded as PyTorch rounds them."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    device, backend, dtype_ = _resolve(device, dtype)
    data = backend.linspace(_scalar_of(start), _scalar_of(end), builtins.int(steps), dtype_ or _dtype.default_float,
                            device)
    return _finish(data, backend, requires_grad)


def _scalar_of(value):
    """A Python number from a number or a one-element tensor (``arange(torch.tensor(5))``)."""
    return value.item() if isinstance(value, Tensor) else value


# -- random tensors (the numbers: gradviz.random, as PyTorch's CPU generator makes them) -------------
def _check_random_dtype(dtype_, kernel: str) -> None:
    if not dtype_.is_floating_point:
        raise _dtype.not_implemented(kernel, dtype_)


def _random_tensor(values, shape, dtype_, device, requires_grad: bool) -> Tensor:
    device, backend, _ = _resolve(device, None)
    data = backend.array(np.asarray(values).reshape(shape), dtype_, device)
    return _finish(data, backend, requires_grad)


def _float_random(function: str, kernel: str, draw, size_args, size, generator, dtype, device,
                  requires_grad: bool) -> Tensor:
    shape = _size(function, size_args, size)
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
            pin_memory: bool = False, low=None, high=None) -> Tensor:
    """Integers drawn uniformly from [low, high): ``randint(high, size)`` or ``randint(low, high, size)``
    (``low=``, ``high=`` by keyword too)."""
    if high is not None:  # the bounds by keyword: randint(high=10, size=(3,)), randint(2, high=9, size=...)
        if low is None:
            low, args = (args[0], args[1:]) if args else (0, args)
        args = (low, high) + args
    elif low is not None:
        args = (low,) + args
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
    shape = _size("randint", (), size)
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
    shape = _size("normal", (), size)
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


def randn_like(input: Tensor, *, dtype=None, device=None, requires_grad: bool = False, generator=None) -> Tensor:
    """As torch makes it: ``empty_like(input)`` (its layout) filled by ``normal_``, which draws a non-contiguous
    tensor's values one pair at a time, in memory order."""
    out = zeros_like(input, dtype=dtype, device=device).normal_(generator=generator)
    return out.requires_grad_() if requires_grad else out


def rand_like(input: Tensor, *, dtype=None, device=None, requires_grad: bool = False, generator=None) -> Tensor:
    out = zeros_like(input, dtype=dtype, device=device).uniform_(generator=generator)
    return out.requires_grad_() if requires_grad else out


def randint_like(input: Tensor, low=0, high=None, *, dtype=None, device=None, requires_grad: bool = False,
                 generator=None) -> Tensor:
    if high is None:
        low, high = 0, low
    return _like(input, lambda shape: randint(low, high, shape, dtype=dtype or input.dtype,
                                              device=device or input.device, requires_grad=requires_grad,
                                              generator=generator))


def is_tensor(obj) -> builtins.bool:
    return isinstance(obj, Tensor)


# Imported last: the autograd and ops packages import this module (kept out of hot method bodies)
from gradviz import ops  # noqa: E402
from gradviz.autograd.node import AccumulateGrad  # noqa: E402
from gradviz.autograd.function import _FORWARD_AD  # noqa: E402  (a dual level: in-place ops move tangents too)
from gradviz.autograd.engine import backward as _engine_backward  # noqa: E402  (Tensor.backward: an import
# statement in the method cost about 14,000 instructions a call, mostly Python's check of the module's spec)
