"""The lesson subset of ``torch.nn``: Module, Parameter, Linear, Sequential, activations, losses.

A Module keeps its Parameters and sub-modules in ordered dicts as they are assigned, so
``parameters()`` lists them in definition order (the order an optimizer and the graph see), and
``repr`` prints the tree as PyTorch prints it. The arithmetic is ``gradviz.nn.functional``'s.
"""
from __future__ import annotations

import math
import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from gradviz import _dtype
from gradviz.autograd.node import _sequence
from gradviz.grad_mode import no_grad
from gradviz.nn import backward_hooks as _backward_hooks, functional as F, init
from gradviz.nn import init as init_module  # PReLU has an attribute named init
from gradviz.tensor import Tensor, empty, ones, tensor, zeros


class Parameter(Tensor):
    """A leaf tensor that a Module registers as one of its weights (``requires_grad=True``).

    Like PyTorch's, it shares the data of the tensor it wraps (no copy).
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = tensor([])
        if requires_grad and not data.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        parameter = Tensor._make(data._data, backend=data._backend, version=data._vc)
        parameter.__class__ = cls
        if requires_grad:
            parameter.requires_grad_(True)
        return parameter

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass  # everything happens in __new__ (Tensor.__init__ refuses direct construction)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self._requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        copy = Parameter(Tensor._make(self._backend.copy(self._data), backend=self._backend), self._requires_grad)
        if self._grad is not None:
            copy._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = copy
        return copy


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


def _note_call(module, first: int, result) -> None:
    """Remember on each output's node that the nodes numbered ``first`` up to it were recorded
    inside ``module``'s forward: ``(module, first)`` appended to ``node._module_calls``.

    This is how a graph shown with ``model=`` draws every node in the module whose forward made
    it (``snapshot/labels.py``, ``recorded_modules``), an activation at a block's edge included:
    nested calls give nested ranges, and a node's module is the innermost range holding its
    number. It costs one counter step and a type check per module call, nothing per op, and
    nothing at all where no module is called. Outputs that are not tensors with a node made here
    (a module that returns its input, a forward under ``no_grad``) note nothing.
    """
    outputs = result if type(result) is tuple or type(result) is list else (result,)
    for output in outputs:
        if not isinstance(output, Tensor):
            continue
        node = output._grad_fn
        if node is None or node._sequence_nr <= first:
            continue
        try:
            calls = node.__dict__.setdefault("_module_calls", [])
        except AttributeError:  # a node without a __dict__: its modules are read off the graph instead
            return
        calls.append((module, first))


class Module:
    """Base of every layer: holds Parameters and sub-modules, and calls ``forward`` when called."""

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        if "_hook_tables" in self.__dict__:  # a hook of any kind was registered: PyTorch's order (nn/backward_hooks.py)
            return _backward_hooks.call_with_hooks(self, args, kwargs, _sequence.__next__, _note_call)
        first = next(_sequence)  # every node this forward records is numbered after this
        result = self.forward(*args, **kwargs)
        _note_call(self, first, result)
        return result

    # -- hooks (the call with hooks, and the full backward hooks, are in nn/backward_hooks.py) ------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """``hook(module, args)`` runs before each ``forward``; a returned value replaces the args.
        With ``with_kwargs``: ``hook(module, args, kwargs)``, which may return ``(args, kwargs)``."""
        flags = ("_forward_pre_hooks_with_kwargs",) if with_kwargs else ()
        return _backward_hooks.add_hook(self, "_forward_pre_hooks", hook, prepend, flags)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """``hook(module, args, output)`` runs after each ``forward``; a returned value replaces the output.
        With ``with_kwargs``: ``hook(module, args, kwargs, output)``; ``always_call``: also when forward raises."""
        flags = (("_forward_hooks_with_kwargs",) if with_kwargs else ()) + (
            ("_forward_hooks_always_called",) if always_call else ())
        return _backward_hooks.add_hook(self, "_forward_hooks", hook, prepend, flags)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_output)`` runs when the gradients of the outputs are in; may return new ones."""
        return _backward_hooks.add_hook(self, "_backward_pre_hooks", hook, prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """``hook(module, grad_input, grad_output)`` runs when the gradients of the inputs are computed; a
        returned tuple replaces ``grad_input``."""
        _backward_hooks.set_backward_kind(self, full=True)
        return _backward_hooks.add_hook(self, "_backward_hooks", hook, prepend)

    def register_backward_hook(self, hook):
        """The old form: a post-hook on the output's ``grad_fn`` (deprecated in PyTorch, with its warnings)."""
        _backward_hooks.set_backward_kind(self, full=False)
        return _backward_hooks.add_hook(self, "_backward_hooks", hook)

    # -- registration ------------------------------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        parameters = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if parameters is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep=parameters)
            parameters[name] = value
        elif isinstance(value, Module):
            if parameters is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep=self._modules)
            self._modules[name] = value
        elif parameters is not None and name in parameters:
            if value is not None:
                raise TypeError(f"cannot assign '{_torch_type_name(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            parameters[name] = None
        elif parameters is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_torch_type_name(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            self._modules[name] = None
        elif parameters is not None and name in self._buffers:
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep=None) -> None:
        """Drop ``name`` from the attributes and every table but ``keep``, the table it is being
        assigned in: there a reassigned name keeps its place (``model[0] = layer``), as in PyTorch."""
        self.__dict__.pop(name, None)
        for table in (self._parameters, self._buffers, self._modules):
            if table is not keep:
                table.pop(name, None)

    def __getattr__(self, name: str):
        # only called when normal lookup fails: parameters, buffers and modules live in the tables
        parameters = self.__dict__.get("_parameters")
        if parameters is not None and name in parameters:  # the common case first: every forward reads its weights
            return parameters[name]
        for table in ("_buffers", "_modules"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_torch_type_name(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        self._forget(name, keep=self._parameters)
        self._parameters[name] = param

    def register_buffer(self, name: str, value: Tensor | None, persistent: bool = True) -> None:
        """A tensor the module keeps but does not train; ``persistent=False`` leaves it out of state_dict."""
        self._forget(name)
        self._buffers[name] = value
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        self._forget(name, keep=self._modules)
        self._modules[name] = module

    register_module = add_module

    # -- walking the tree ------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """This module and every sub-module, depth first, each once (an explicit stack, no recursion)."""
        seen = set() if memo is None else memo
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if module is None or (remove_duplicate and id(module) in seen):
                continue
            seen.add(id(module))
            yield name, module
            children = [(name + ("." if name else "") + child_name, child)
                        for child_name, child in module._modules.items()]
            stack.extend(reversed(children))

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """``(name, Parameter)`` pairs in definition order, e.g. ``('0.weight', ...)``."""
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, parameter in module._parameters.items():
                if parameter is None or (remove_duplicate and id(parameter) in seen):
                    continue
                seen.add(id(parameter))
                yield module_prefix + ("." if module_prefix else "") + name, parameter

    def parameters(self, recurse: bool = True):
        for _, parameter in self.named_parameters(recurse=recurse):
            yield parameter

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, buffer in module._buffers.items():
                if buffer is None or (remove_duplicate and id(buffer) in seen):
                    continue
                seen.add(id(buffer))
                yield module_prefix + ("." if module_prefix else "") + name, buffer

    def buffers(self, recurse: bool = True):
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    # -- state ------------------------------------------------------------------------------------
    def _tree(self, prefix: str = ""):
        """``(prefix, module)`` for this module and every sub-module, depth first, without removing
        repeats: a module shared by two parents is saved (and loaded) under both names, as in PyTorch."""
        stack = [(prefix, self)]
        while stack:
            module_prefix, module = stack.pop()
            yield module_prefix, module
            stack.extend(reversed([(module_prefix + name + ".", child)
                                   for name, child in module._modules.items() if child is not None]))

    def _local_state(self) -> OrderedDict:
        """This module's own parameters, then its persistent buffers (not its children's)."""
        state = OrderedDict((name, value) for name, value in self._parameters.items() if value is not None)
        state.update((name, value) for name, value in self._buffers.items()
                     if value is not None and name not in self._non_persistent_buffers)
        return state

    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (``'0.weight'``), each module's own before
        its children's. Values are detached and share data with the module (``keep_vars`` keeps them)."""
        state = OrderedDict() if destination is None else destination
        for module_prefix, module in self._tree(prefix):
            for name, value in module._local_state().items():
                state[module_prefix + name] = value if keep_vars else value.detach()
        return state

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values into the parameters and buffers in place (under no_grad), as PyTorch does.

        Missing and unexpected keys are errors when ``strict``; a value of the wrong shape always is.
        """
        from collections.abc import Mapping

        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        for module_prefix, module in self._tree():
            local = module._local_state()
            for name, own in local.items():
                key = module_prefix + name
                if key not in state_dict:
                    missing.append(key)
                    continue
                error = module._load_one(name, key, own, state_dict[key], assign)
                if error:
                    errors.append(error)
            for key in state_dict:
                if key.startswith(module_prefix):
                    first = key[len(module_prefix):].split(".", 1)[0]
                    if first not in module._modules and first not in local:
                        unexpected.append(key)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    def _load_one(self, name: str, key: str, own: Tensor, value, assign: bool) -> str | None:
        """Load one entry; returns PyTorch's error text for it, or None."""
        if not isinstance(value, Tensor):
            return (f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like object from '
                    f"checkpoint but received {type(value)}")
        if tuple(value.shape) != tuple(own.shape):
            return (f"size mismatch for {key}: copying a param with shape {value.shape} from checkpoint, "
                    f"the shape in current model is {own.shape}.")
        with no_grad():
            if not assign:
                own.copy_(value)
            elif name in self._parameters:
                self._parameters[name] = Parameter(value, requires_grad=own.requires_grad)
            else:
                self._buffers[name] = value
        return None

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's ``.grad``: to None by default, as PyTorch 2 does."""
        for parameter in self.parameters():
            _zero_grad(parameter, set_to_none)

    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for parameter in self.parameters():
            parameter.requires_grad_(requires_grad)
        return self

    def apply(self, function) -> Module:
        """Call ``function`` on every submodule, then on this one: children first, in registration order,
        each one's own children before it (``net.apply(init_weights)`` draws its random numbers in
        PyTorch's order)."""
        for module in self.children():
            module.apply(function)
        function(self)
        return self

    # -- printing -----------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        """``Name(extra)`` or a tree, one child per line, as PyTorch prints modules."""
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, module in self._modules.items():
            child = _add_indent(repr(module), 2)
            lines.append(f"({name}): {child}")
        text = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                text += lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


class _IncompatibleKeys(tuple):
    def __new__(cls, missing_keys, unexpected_keys):
        result = super().__new__(cls, (missing_keys, unexpected_keys))
        result.missing_keys, result.unexpected_keys = missing_keys, unexpected_keys
        return result

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"


def _add_indent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def _torch_type_name(value) -> str:
    if isinstance(value, Tensor):
        return "torch.FloatTensor" if value.dtype is _dtype.float32 else f"torch.{type(value).__name__}"
    return f"{type(value).__module__}.{type(value).__name__}" if type(value).__module__ != "builtins" \
        else type(value).__name__


def _zero_grad(parameter: Tensor, set_to_none: bool) -> None:
    """PyTorch's rule: drop the grad, or detach it and fill it with zeros in place."""
    grad = parameter._grad
    if grad is None:
        return
    if set_to_none:
        parameter._grad = None
        return
    if grad.grad_fn is not None:
        grad.detach_()
    else:
        grad.requires_grad_(False)
    grad.zero_()


# -- layers ------------------------------------------------------------------------------------------
class Linear(Module):
    """``y = x @ weight.T + bias``, initialised as PyTorch does, drawing the same numbers after a seed:
    ``kaiming_uniform_(weight, a=sqrt(5))`` (uniform in +-1/sqrt(in_features)), then the bias uniform
    in the same bound."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty((out_features,), device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Sequential(Module):
    """Modules run one after another; children are named ``0``, ``1``, ... (or by an OrderedDict)."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index):
        modules = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(OrderedDict(modules[index]))
        if not -len(modules) <= index < len(modules):
            raise IndexError(f"index {index} is out of range")
        return modules[index][1]

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self


class ReLU(Module):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class Identity(Module):
    """Returns its input unchanged (a placeholder where a layer is optional)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Flatten(Module):
    """Flattens dims ``start_dim`` .. ``end_dim`` into one (by default all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Dropout(Module):
    """In training, zeroes each element with probability ``p`` and scales the rest by 1/(1-p);
    in eval mode (``model.eval()``), passes the input through."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Softmax(Module):
    """Probabilities along ``dim`` (each slice sums to 1)."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim, _stacklevel=4)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """Log-probabilities along ``dim``, computed stably in one node."""

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=4)


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        self.reduction = reduction


class MSELoss(_Loss):
    """Mean (or sum) of squared differences."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy on raw scores (logits), computed stably in one node."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices, from log-probabilities."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None, reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of raw scores against class indices or class probabilities (log-softmax, then
    the negative log-likelihood), optionally with label smoothing."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


# -- more activations (``inplace=True`` writes the result into the input, as in PyTorch) ----------------------
class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """``x * Φ(x)`` (Φ the standard normal CDF), or its tanh approximation."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """``x * sigmoid(x)``."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ELU(Module):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``: a smooth ReLU."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]``."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if max_val <= min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``: a Hardtanh from 0 to 6."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


# -- more losses ----------------------------------------------------------------------------------------
class BCELoss(_WeightedLoss):
    """Binary cross-entropy on probabilities (each log clamped at -100, as PyTorch does)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean (or sum) of absolute differences."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error below ``beta``, absolute error above it."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error below ``delta``, ``delta`` times the absolute error above it."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        if not isinstance(delta, (float, int)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of log-probabilities ``input`` from the target distribution."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


# -- containers: lists and dicts of modules and parameters, registered so that named_parameters,
# -- state_dict, the optimizer and the widget's module frames see what they hold ------------------------
def _absolute_index(container, index) -> str:
    """``index`` (negative counts from the end) as the string key the container stores it under."""
    index = operator.index(index)
    if not -len(container) <= index < len(container):
        raise IndexError(f"index {index} is out of range")
    return str(index + len(container) if index < 0 else index)


class ModuleList(Module):
    """Modules held in a list and registered as children ``0``, ``1``, ... (it has no ``forward``:
    the owner decides how they run)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[_absolute_index(self, index)]

    def __setitem__(self, index, module) -> None:
        setattr(self, _absolute_index(self, index), module)

    def __delitem__(self, index) -> None:
        if isinstance(index, slice):
            for position in range(len(self._modules))[index]:
                delattr(self, str(position))
        else:
            delattr(self, _absolute_index(self, index))
        object.__setattr__(self, "_modules", OrderedDict((str(i), m) for i, m in enumerate(self._modules.values())))

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        combined = ModuleList()
        for index, module in enumerate(list(self) + list(other)):
            combined.add_module(str(index), module)
        return combined

    def insert(self, index: int, module: Module) -> None:
        for position in range(len(self._modules), index, -1):
            self._modules[str(position)] = self._modules[str(position - 1)]
        self._modules[str(index)] = module

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> ModuleList:
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        offset = len(self)
        for index, module in enumerate(modules):
            self.add_module(str(offset + index), module)
        return self

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def __repr__(self) -> str:
        """One line per run of equal children, ``(0-2): 3 x Linear(...)``, as PyTorch prints a ModuleList."""
        reprs = [repr(module) for module in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []  # [first index, last index, repr]
        for index, text in enumerate(reprs):
            if runs and runs[-1][2] == text:
                runs[-1][1] = index
            else:
                runs.append([index, index, text])
        lines = [_add_indent(f"({first}): {text}" if first == last else f"({first}-{last}): {last - first + 1} x {text}", 2)
                 for first, last, text in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """Modules held by name, in insertion order, registered as children under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        value = self[key]
        del self[key]
        return value

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        _update_by_name(self, modules, "ModuleDict")


def _update_by_name(container, entries, kind: str) -> None:
    """``container[key] = value`` for a mapping's items or an iterable of pairs (PyTorch's checks and words)."""
    if not isinstance(entries, Iterable):
        raise TypeError(f"{kind}.update should be called with an iterable of key/value pairs, but got "
                        + type(entries).__name__)
    if isinstance(entries, (Mapping, ModuleDict, ParameterDict)):
        for key, value in entries.items():
            container[key] = value
        return
    for position, pair in enumerate(entries):
        if not isinstance(pair, Iterable):
            raise TypeError(f"{kind} update sequence element #{position} should be Iterable; is" + type(pair).__name__)
        if len(pair) != 2:
            raise ValueError(f"{kind} update sequence element #{position} has length {len(pair)}; 2 is required")
        container[pair[0]] = pair[1]


def _as_parameter(value):
    """A tensor put in a ParameterList or ParameterDict becomes a Parameter (a Parameter stays itself)."""
    return Parameter(value) if isinstance(value, Tensor) and not isinstance(value, Parameter) else value


class ParameterList(Module):
    """Parameters held in a list, registered as ``0``, ``1``, ... (plain tensors become Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self += values

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)([self[i] for i in range(len(self))[index]])
        return getattr(self, _absolute_index(self, index))

    def __setitem__(self, index, value) -> None:
        key = _absolute_index(self, index)
        value = _as_parameter(value)
        if isinstance(value, Parameter):
            self.register_parameter(key, value)
        else:
            object.__setattr__(self, key, value)

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def append(self, value) -> ParameterList:
        object.__setattr__(self, "_size", self._size + 1)
        self[self._size - 1] = value
        return self

    def extend(self, values) -> ParameterList:
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        lines = []
        for index, value in enumerate(self):
            if isinstance(value, Tensor):
                kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
                size = "x".join(str(s) for s in value.shape)
                device = f" ({value.device})" if value.device.type == "cuda" else ""
                lines.append(f"  ({index}): {kind} containing: [{value.dtype} of size {size}{device}]")
            else:
                lines.append(f"  ({index}): Object of type: {type(value).__name__}")
        return "\n".join(lines)


class ParameterDict(Module):
    """Parameters held by name, in insertion order (plain tensors become Parameters)."""

    def __init__(self, parameters=None):
        super().__init__()
        object.__setattr__(self, "_keys", {})
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self._keys[key] = None
        value = _as_parameter(value)
        if isinstance(value, Parameter):
            self.register_parameter(key, value)
        else:
            object.__setattr__(self, key, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key) -> bool:
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((key, self[key]) for key in self._keys)

    def values(self):
        return (self[key] for key in self._keys)

    def pop(self, key: str):
        value = self[key]
        del self[key]
        return value

    def update(self, parameters) -> None:
        _update_by_name(self, parameters, "ParametersDict")

    def extra_repr(self) -> str:
        lines = []
        for key, value in self.items():
            if isinstance(value, Tensor):
                kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
                size = "x".join(str(s) for s in value.shape)
                lines.append(f"  ({key}): {kind} containing: [{_torch_type_name(value)} of size {size}]")
            else:
                lines.append(f"  ({key}): Object of type: {type(value).__name__}")
        return "\n".join(lines)


# -- lookup tables and normalization ---------------------------------------------------------------------
class Embedding(Module):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim``, looked up by integer index.

    Initialised ``normal_(0, 1)`` as PyTorch does (the same numbers after a seed), with the
    ``padding_idx`` row zeroed: that row gets no gradient."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if padding_idx >= num_embeddings or padding_idx < -num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            if padding_idx < 0:
                padding_idx += num_embeddings
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if _weight is None:
            self.weight = Parameter(empty((num_embeddings, embedding_dim), device=device, dtype=dtype),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)
        self.sparse = sparse

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            text += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            text += ", sparse=True"
        return text

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx=None, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Embedding:
        """An Embedding whose table is ``embeddings`` (trained further only with ``freeze=False``)."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)


def _norm_parameters(module, shape, learned: bool, bias: bool, device, dtype) -> None:
    """A normalization layer's learned ``weight`` and ``bias`` of ``shape`` (``bias=False``: the weight alone),
    registered as None when nothing is learned; ``_reset_norm_parameters`` sets them to ones and zeros."""
    if learned:
        module.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            module.bias = Parameter(empty(shape, device=device, dtype=dtype))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_norm_parameters(module) -> None:
    if module.weight is not None:
        init.ones_(module.weight)
        if module.bias is not None:
            init.zeros_(module.bias)


class LayerNorm(Module):
    """Normalizes over the last dims (``normalized_shape``) to mean 0 and variance 1, then scales by
    ``weight`` (ones) and shifts by ``bias`` (zeros), learned elementwise."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _norm_parameters(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_norm_parameters(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class _BatchNorm(Module):
    """Normalizes each channel over the batch: with the batch's statistics in training (moving the running
    mean and variance toward them), with the running statistics in eval mode (``model.eval()``)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _norm_parameters(self, (num_features,), affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=_dtype.int64, device=device))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_norm_parameters(self)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            # momentum=None: a plain average of every batch seen so far
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None, self.running_var if keep else None,
                            self.weight, self.bias, use_batch, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of ``(N, C)`` or ``(N, C, L)`` inputs, per channel C."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization of ``(N, C, H, W)`` inputs, per channel C."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


# -- the rarer activations, and modules over functions ------------------------------------------------------
class _Elementwise(Module):
    """An activation with nothing to configure: ``forward`` is ``function(input)``."""

    function = None

    def forward(self, input: Tensor) -> Tensor:
        return type(self).function(input)


class _ElementwiseInPlace(Module):
    """An activation whose only setting is ``inplace`` (printed only when True)."""

    function = None

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self).function(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class SELU(_ElementwiseInPlace):
    """``scale · elu(x, alpha)`` with alpha ≈ 1.6733 and scale ≈ 1.0507 (self-normalizing)."""

    function = staticmethod(F.selu)


class Mish(_ElementwiseInPlace):
    """``x · tanh(softplus(x))``."""

    function = staticmethod(F.mish)


class Hardswish(_ElementwiseInPlace):
    """``x · relu6(x + 3) / 6`` (PyTorch prints it without its ``inplace`` setting)."""

    function = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""


class Hardsigmoid(Hardswish):
    """``relu6(x + 3) / 6``."""

    function = staticmethod(F.hardsigmoid)


class LogSigmoid(_Elementwise):
    """``log(sigmoid(x))``, computed without overflow."""

    function = staticmethod(F.logsigmoid)


class Softsign(_Elementwise):
    """``x / (1 + |x|)``."""

    function = staticmethod(F.softsign)


class Tanhshrink(_Elementwise):
    """``x - tanh(x)``."""

    function = staticmethod(F.tanhshrink)


class CELU(Module):
    """``x`` where positive, ``alpha · (exp(x/alpha) - 1)`` elsewhere."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class PReLU(Module):
    """A leaky ReLU whose negative slope is learned: one for all channels, or one per channel (dim 1)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty((num_parameters,), device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init_module.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Softmin(Module):
    """``softmax(-x)`` along ``dim``."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim, _stacklevel=4)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class CosineSimilarity(Module):
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class Unflatten(Module):
    """Splits dim ``dim`` into ``unflattened_size`` (the inverse of Flatten), as a view."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        dim = self.dim % input.ndim if input.ndim else 0
        shape = tuple(input.shape[:dim]) + tuple(self.unflattened_size) + tuple(input.shape[dim + 1:])
        return input.view(shape)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


# -- glu, the shrinks, threshold, rrelu, pairwise distance ----------------------------------------------------
class GLU(Module):
    """``a · sigmoid(b)``, ``a`` and ``b`` the halves of the input along ``dim``."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softshrink(Module):
    """``x ∓ lambd`` outside ``[-lambd, lambd]``, 0 inside."""

    function = staticmethod(F.softshrink)

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return type(self).function(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """``x`` outside ``[-lambd, lambd]``, 0 inside."""

    function = staticmethod(F.hardshrink)


class Threshold(Module):
    """``x`` above ``threshold``, ``value`` elsewhere."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class RReLU(Module):
    """A leaky ReLU with a random negative slope from U(lower, upper) in training, their mean in evaluation."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class PairwiseDistance(Module):
    """``‖x1 - x2 + eps‖_p`` along the last dimension."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


# -- Sequential item assignment and deletion (``model[2] = nn.Linear(3, 2)``, ``del model[0]``) ------------------------
def _sequential_setitem(self, index: int, module: Module) -> None:
    """Replace the module at ``index``, keeping its name."""
    names = list(self._modules)
    if not -len(names) <= index < len(names):
        raise IndexError(f"index {index} is out of range")
    self.add_module(names[index], module)


def _sequential_delitem(self, index) -> None:
    """Remove a module (or a slice of them); as in PyTorch, the rest are renumbered 0, 1, ..."""
    names = list(self._modules)
    if isinstance(index, slice):
        doomed = names[index]
    else:
        if not -len(names) <= index < len(names):
            raise IndexError(f"index {index} is out of range")
        doomed = [names[index]]
    for name in doomed:
        del self._modules[name]
    kept = list(self._modules.values())
    self._modules.clear()
    for position, module in enumerate(kept):
        self._modules[str(position)] = module


Sequential.__setitem__ = _sequential_setitem
Sequential.__delitem__ = _sequential_delitem


# -- Module.to / float / double / half / cpu / cuda / type, get_submodule / get_parameter (the API sweep) -------------
def _module_apply_to_tensors(self, convert) -> Module:
    """PyTorch's ``Module._apply``: children first, then each parameter converted in place (``param.data =
    convert(param)``, so the Parameter object, and an optimizer holding it, stays the same; its ``.grad``
    too), then each buffer replaced."""
    from gradviz.grad_mode import no_grad

    for module in self.children():
        _module_apply_to_tensors(module, convert)
    with no_grad():
        for parameter in self._parameters.values():
            if parameter is None:
                continue
            parameter.data = convert(parameter)
            if parameter.grad is not None:
                parameter.grad.data = convert(parameter.grad)
        for name, buffer in self._buffers.items():
            if buffer is not None:
                self._buffers[name] = convert(buffer)
    return self


def _parse_module_to(args, kwargs):
    """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``, with the keywords, as ``_parse_to`` reads them."""
    from gradviz import _dtype
    from gradviz._device import device as Device

    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for arg in args:
        if isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, Device, int)) and not isinstance(arg, bool):
            device = Device(arg) if not isinstance(arg, int) else Device("cuda", arg)
        elif isinstance(arg, bool):
            continue  # non_blocking given by position
        else:
            dtype = _dtype.from_any(arg)
    return device, dtype


def _module_to(self, *args, **kwargs) -> Module:
    """Move and/or cast the parameters and buffers; a dtype applies only to floating-point ones."""
    device, dtype = _parse_module_to(args, dict(kwargs))
    if dtype is not None and not dtype.is_floating_point:
        raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}")

    def convert(tensor):
        return tensor.to(device, dtype if tensor.dtype.is_floating_point else None)

    return _module_apply_to_tensors(self, convert)


def _floating_cast(name: str, method: str):
    def cast(self) -> Module:
        return _module_apply_to_tensors(
            self, lambda tensor: getattr(tensor, method)() if tensor.dtype.is_floating_point else tensor)

    cast.__name__ = name
    cast.__doc__ = f"Casts all floating-point parameters and buffers with ``Tensor.{method}()``."
    return cast


def _module_cpu(self) -> Module:
    return _module_apply_to_tensors(self, lambda tensor: tensor.cpu())


def _module_cuda(self, device=None) -> Module:
    return _module_apply_to_tensors(self, lambda tensor: tensor.cuda(device))


def _module_type(self, dst_type) -> Module:
    return _module_apply_to_tensors(self, lambda tensor: tensor.type(dst_type))


def _module_get_submodule(self, target: str) -> Module:
    if target == "":
        return self
    module = self
    for item in target.split("."):
        if not hasattr(module, item):
            raise AttributeError(module._get_name() + " has no attribute `" + item + "`")
        module = getattr(module, item)
        if not isinstance(module, Module):
            raise AttributeError("`" + item + "` is not an nn.Module")
    return module


def _module_get_parameter(self, target: str):
    module_path, _, name = target.rpartition(".")
    module = self.get_submodule(module_path)
    if not hasattr(module, name):
        raise AttributeError(module._get_name() + " has no attribute `" + name + "`")
    parameter = getattr(module, name)
    if not isinstance(parameter, Parameter):
        raise AttributeError("`" + name + "` is not an nn.Parameter")
    return parameter


def _module_get_buffer(self, target: str):
    module_path, _, name = target.rpartition(".")
    module = self.get_submodule(module_path)
    if not hasattr(module, name):
        raise AttributeError(module._get_name() + " has no attribute `" + name + "`")
    if name not in module._buffers:
        raise AttributeError("`" + name + "` is not a buffer")
    return getattr(module, name)


Module._apply = _module_apply_to_tensors
Module.to = _module_to
Module.float = _floating_cast("float", "float")
Module.double = _floating_cast("double", "double")
Module.half = _floating_cast("half", "half")
Module.cpu = _module_cpu
Module.cuda = _module_cuda
Module.type = _module_type
Module.get_submodule = _module_get_submodule
Module.get_parameter = _module_get_parameter
Module.get_buffer = _module_get_buffer


# -- convolution and pooling layers (ops/convolution.py, ops/pooling.py) ------------------------------------
def _ntuple(value, dims: int) -> tuple:
    """PyTorch's ``_single``/``_pair``: an int repeated, an iterable kept as a tuple."""
    return tuple(value) if isinstance(value, Iterable) else (value,) * dims


class _ConvNd(Module):
    """What ``Conv1d``/``Conv2d`` and the transposed ones share: PyTorch's checks, attributes, printing and
    initialisation (``kaiming_uniform_(weight, a=sqrt(5))``, the bias uniform in +-1/sqrt(fan_in): the same
    numbers as PyTorch after one seed)."""

    dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed, output_padding,
                 groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.transposed, self.output_padding, self.groups, self.padding_mode = transposed, output_padding, groups, \
            padding_mode
        if isinstance(padding, str):  # what F.pad needs for a padding_mode other than zeros, last dim first
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    self._reversed_padding_repeated_twice[2 * i] = total // 2
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - total // 2
        else:
            self._reversed_padding_repeated_twice = tuple(p for p in reversed(padding) for _ in range(2))
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(empty(shape + tuple(kernel_size), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty((out_channels,), device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            text += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class _Conv(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        dims = self.dims
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, dims), _ntuple(stride, dims),
                         padding if isinstance(padding, str) else _ntuple(padding, dims), _ntuple(dilation, dims),
                         False, (0,) * dims, groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        function = (F.conv1d, F.conv2d, F.conv3d)[self.dims - 1]
        if self.padding_mode != "zeros":
            from gradviz.ops.padding import pad

            return function(pad(input, self._reversed_padding_repeated_twice, self.padding_mode), weight, bias,
                            self.stride, (0,) * self.dims, self.dilation, self.groups)
        return function(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """A 1-d convolution over ``(N, C, L)``: ``F.conv1d`` with a learned weight ``(out, in/groups, k)`` and bias."""

    dims = 1


class Conv2d(_Conv):
    """A 2-d convolution over ``(N, C, H, W)``: ``F.conv2d`` with a learned weight ``(out, in/groups, kH, kW)``
    and bias."""

    dims = 2


class Conv3d(_Conv):
    """A 3-d convolution over ``(N, C, D, H, W)``: ``F.conv3d`` with a learned weight ``(out, in/groups, kD, kH, kW)``
    and bias."""

    dims = 3


class _ConvTranspose(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        dims = self.dims
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, dims), _ntuple(stride, dims),
                         _ntuple(padding, dims), _ntuple(dilation, dims), True, _ntuple(output_padding, dims), groups,
                         bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size) -> tuple:
        """``output_padding``, or what reaches ``output_size`` (PyTorch's ``_output_padding``)."""
        from gradviz.tensor import Size

        if output_size is None:
            return self.output_padding
        dims = self.dims
        leading = 2 if input.dim() == dims + 2 else 1
        if len(output_size) == leading + dims:
            output_size = output_size[leading:]
        if len(output_size) != dims:
            raise ValueError(f"ConvTranspose{dims}D: for {input.dim()}D input, output_size must have {dims} or "
                             f"{leading + dims} elements (got {len(output_size)})")
        min_sizes = [(input.shape[d + leading] - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(dims)]
        max_sizes = [size + self.stride[d] - 1 for d, size in enumerate(min_sizes)]
        for size, low, high in zip(output_size, min_sizes, max_sizes):
            if size < low or size > high:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {min_sizes} "
                                 f"to {max_sizes} (for an input of {Size(input.shape[2:])})")
        return tuple(size - low for size, low in zip(output_size, min_sizes))

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        function = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self.dims - 1]
        return function(input, self.weight, self.bias, self.stride, self.padding,
                        self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """The input-gradient of a ``Conv1d`` run forward: ``F.conv_transpose1d`` with a learned weight
    ``(in, out/groups, k)`` and bias."""

    dims = 1


class ConvTranspose2d(_ConvTranspose):
    """The input-gradient of a ``Conv2d`` run forward: ``F.conv_transpose2d`` with a learned weight
    ``(in, out/groups, kH, kW)`` and bias."""

    dims = 2


class ConvTranspose3d(_ConvTranspose):
    """The input-gradient of a ``Conv3d`` run forward: ``F.conv_transpose3d`` with a learned weight
    ``(in, out/groups, kD, kH, kW)`` and bias."""

    dims = 3


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """``F.max_pool1d`` with the window it was built with (stride: the window's, unless given)."""

    def forward(self, input: Tensor):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """``F.max_pool2d`` with the window it was built with (stride: the window's, unless given)."""

    def forward(self, input: Tensor):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


class AvgPool1d(Module):
    """``F.avg_pool1d`` with the window it was built with (kept as 1-tuples, as PyTorch keeps them)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, 1)
        self.stride = _ntuple(stride if stride is not None else kernel_size, 1)
        self.padding = _ntuple(padding, 1)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """``F.avg_pool2d`` with the window it was built with (stride: the window's, unless given)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptiveAvgPoolNd(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """``F.adaptive_avg_pool1d`` to the output size it was built with."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """``F.adaptive_avg_pool2d`` to the output size it was built with (None keeps a dim's size)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)
# -- more losses: margin ranking, hinge embedding, soft margin, Poisson and Gaussian NLL, triplet margin -----------
class MarginRankingLoss(_Loss):
    """``max(0, -target · (x1 - x2) + margin)``, reduced."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``x`` where the target is 1, ``max(0, margin - x)`` where it is -1, reduced."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """The two-class logistic loss ``log(1 + exp(-target · x))``, reduced."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """The negative log likelihood of a Poisson target."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """The negative log likelihood of a Gaussian target with predicted mean and variance."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with the p-norm distance."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False, size_average=None,
                 reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


# -- more normalization layers: 3-d batch norm, instance, group and RMS norm -------------------------------------
class BatchNorm3d(_BatchNorm):
    """Batch normalization of ``(N, C, D, H, W)`` inputs, per channel C."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _InstanceNorm(_BatchNorm):
    """Normalizes each channel of each sample over its positions; the settings and buffers are batch
    norm's, but nothing is learned unless ``affine=True`` and nothing is tracked unless
    ``track_running_stats=True`` (then eval mode uses the running statistics)."""

    no_batch_dim = 0  # the number of dims of an input without its batch dim

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:
        dims = (self.no_batch_dim, self.no_batch_dim + 1)
        if input.dim() not in dims:
            raise ValueError(f"expected {dims[0]}D or {dims[1]}D input (got {input.dim()}D input)")

    def _apply(self, input: Tensor) -> Tensor:
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        feature_dim = input.dim() - self.no_batch_dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[feature_dim]}.")
            import warnings

            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False", UserWarning,
                          stacklevel=3)
        if input.dim() == self.no_batch_dim:  # one sample: as a batch of one
            return self._apply(input.unsqueeze(0)).squeeze(0)
        return self._apply(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of ``(N, C, L)`` or ``(C, L)`` inputs."""

    no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of ``(N, C, H, W)`` or ``(C, H, W)`` inputs."""

    no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs."""

    no_batch_dim = 4


class GroupNorm(Module):
    """Splits the channels into ``num_groups`` groups and normalizes each group of each sample, then
    scales by ``weight`` (ones) and shifts by ``bias`` (zeros) per channel."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _norm_parameters(self, (num_channels,), affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_norm_parameters(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Divides by the root mean square over the last dims (``normalized_shape``), then scales by
    ``weight`` (ones), learned elementwise."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


# -- resampling layers ----------------------------------------------------------------------------------------------
class Upsample(Module):
    """Resamples the spatial dims to ``size`` or by ``scale_factor`` (``F.interpolate``)."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        shown = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{shown}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """2-d nearest-neighbour upsampling (``Upsample(mode='nearest')``)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """2-d bilinear upsampling with ``align_corners=True``."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class _Rearranging(Module):
    """A module over a rearranging function with one integer setting, named ``setting``, printed as
    ``setting=value``."""

    setting = function = None

    def __init__(self, value: int):
        super().__init__()
        setattr(self, self.setting, value)

    def forward(self, input: Tensor) -> Tensor:
        return type(self).function(input, getattr(self, self.setting))

    def extra_repr(self) -> str:
        return f"{self.setting}={getattr(self, self.setting)}"


class PixelShuffle(_Rearranging):
    """``(*, C·r², H, W) -> (*, C, H·r, W·r)``."""

    setting, function = "upscale_factor", F.pixel_shuffle


class PixelUnshuffle(_Rearranging):
    """``(*, C, H·r, W·r) -> (*, C·r², H, W)``."""

    setting, function = "downscale_factor", F.pixel_unshuffle


class ChannelShuffle(_Rearranging):
    """Interleaves the channels of ``groups`` groups."""

    setting, function = "groups", F.channel_shuffle


# -- the rest of pooling, fold/unfold and local response normalization (ops/pooling.py, ops/fold.py) ---------------
class MaxPool3d(_MaxPoolNd):
    """``F.max_pool3d`` with the box it was built with (stride: the box's, unless given)."""

    def forward(self, input: Tensor):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


class AvgPool3d(AvgPool2d):
    """``F.avg_pool3d`` with the box it was built with (stride: the box's, unless given)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """``F.adaptive_avg_pool3d`` to the output size it was built with (None keeps a dim's size)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPoolNd(_AdaptiveAvgPoolNd):
    dims = 2

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        pool = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}[self.dims]
        return pool(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """``F.adaptive_max_pool1d`` to the output size it was built with."""

    dims = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """``F.adaptive_max_pool2d`` to the output size it was built with (None keeps a dim's size)."""

    dims = 2


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """``F.adaptive_max_pool3d`` to the output size it was built with (None keeps a dim's size)."""

    dims = 3


class _MaxUnpoolNd(Module):
    dims = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self.dims)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self.dims)
        self.padding = _ntuple(padding, self.dims)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        unpool = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[self.dims]
        return unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """``F.max_unpool1d`` with the window the pooling used."""

    dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """``F.max_unpool2d`` with the window the pooling used."""

    dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """``F.max_unpool3d`` with the box the pooling used."""

    dims = 3


class _LPPoolNd(Module):
    dims = 2

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        pool = {1: F.lp_pool1d, 2: F.lp_pool2d, 3: F.lp_pool3d}[self.dims]
        return pool(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """``F.lp_pool1d``: the ``norm_type``-norm of each window."""

    dims = 1


class LPPool2d(_LPPoolNd):
    """``F.lp_pool2d``: the ``norm_type``-norm of each window."""

    dims = 2


class LPPool3d(_LPPoolNd):
    """``F.lp_pool3d``: the ``norm_type``-norm of each box."""

    dims = 3


class Fold(Module):
    """``F.fold``: columns added back into the blocks of an ``output_size`` image."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """``F.unfold``: every block of the input as a column."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"


class LocalResponseNorm(Module):
    """``F.local_response_norm``: each channel over a power of its neighbours' mean square."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
