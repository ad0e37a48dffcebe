"""Optimizers: the ``Optimizer`` base (parameter groups, ``zero_grad``) and ``SGD``.

``step()`` runs under ``no_grad`` and updates each parameter *in place*: the Parameter object
(and any widget showing it) stays the same, and its version counter goes up, as in PyTorch.
"""
from __future__ import annotations

import functools

from gradviz.grad_mode import no_grad
from gradviz.tensor import Tensor


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


def _torch_type_name(tensor: Tensor) -> str:
    names = {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor", "bool": "BoolTensor"}
    return "torch." + names.get(tensor.dtype.name, "Tensor")


class Optimizer:
    """Holds ``param_groups`` (a list of dicts: ``params`` plus settings) and per-parameter ``state``."""

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.state: dict = {}
        self.param_groups: list = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_torch_type_name(params)}")
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for param in group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(param).__name__}")
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        seen = {id(p) for existing in self.param_groups for p in existing["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's ``.grad``: to None by default (PyTorch 2), else zeros in place."""
        for group in self.param_groups:
            for param in group["params"]:
                grad = param._grad
                if grad is None:
                    continue
                if set_to_none:
                    param._grad = None
                else:
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    def state_dict(self) -> dict:
        """``{'state': {index: {...}}, 'param_groups': [{settings..., 'params': [indices]}]}``."""
        index_of, groups, next_index = {}, [], 0
        for group in self.param_groups:
            packed = {key: value for key, value in group.items() if key != "params"}
            packed["params"] = []
            for param in group["params"]:
                if id(param) not in index_of:
                    index_of[id(param)] = next_index
                    next_index += 1
                packed["params"].append(index_of[id(param)])
            groups.append(packed)
        params = {id(p): p for group in self.param_groups for p in group["params"]}
        state = {index_of[key]: dict(value) for key, value in
                 ((id(p), self.state[p]) for p in params.values() if p in self.state)}
        return {"state": state, "param_groups": groups}

    def step(self, closure=None):
        raise NotImplementedError

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for index, group in enumerate(self.param_groups):
            text += f"\nParameter Group {index}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


def _no_grad_step(step):
    """Run ``step`` with recording off, like PyTorch's ``_use_grad_for_differentiable``."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with no_grad():
            return step(self, *args, **kwargs)

    return wrapper


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum, weight decay and Nesterov.

    For each parameter ``p`` with gradient ``g`` (PyTorch's algorithm, line for line)::

        g = g + weight_decay * p                  if weight_decay != 0
        buf = g (first step), else momentum * buf + (1 - dampening) * g
        g = g + momentum * buf if nesterov, else buf        if momentum != 0
        p -= lr * g                                          (p += lr * g if maximize)
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize: bool = False, foreach=None, differentiable: bool = False, fused=None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach,
                    "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self, closure=None):
        """Update every parameter that has a ``.grad``, in place."""
        loss = None
        if closure is not None:
            from gradviz.grad_mode import enable_grad

            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
            weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
            for param in group["params"]:
                grad = param._grad
                if grad is None:
                    continue
                if maximize:
                    grad = -grad
                if weight_decay != 0:
                    grad = grad.add(param, alpha=weight_decay)
                if momentum != 0:
                    state = self.state.setdefault(param, {})
                    buffer = state.get("momentum_buffer")
                    if buffer is None:
                        buffer = state["momentum_buffer"] = grad.clone().detach()
                    else:
                        buffer.mul_(momentum).add_(grad, alpha=1 - dampening)
                    grad = grad.add(buffer, alpha=momentum) if nesterov else buffer
                param.add_(grad, alpha=-lr)
        return loss
