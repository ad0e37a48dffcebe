"""The ``Optimizer`` base: parameter groups, per-parameter state, ``zero_grad``, ``state_dict``.

Every optimizer's ``step()`` runs under ``no_grad`` and updates each parameter *in place*: the
Parameter object (and any widget showing it) stays the same, and its version counter goes up, as
in PyTorch. The updates follow PyTorch's single-tensor code (``foreach=False``, its choice on the
CPU) operation for operation, each rounded in the parameter's dtype; the in-place helpers at the
end (``lerp_``, ``addcmul_``, ``addcdiv_``) compute in PyTorch's order. PyTorch's AVX2 kernels
fuse some multiply-adds where numpy rounds twice, so results agree to the last bit with PyTorch's
portable kernels and within a few units in the last place with its vectorised ones.
"""
from __future__ import annotations

import numpy as np

from gradviz.grad_mode import no_grad
from gradviz.tensor import Tensor, tensor, zeros_like


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

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore settings and state saved by ``state_dict`` (matched to the parameters by position)."""
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(saved["params"]) != len(group["params"]) for saved, group in zip(saved_groups, self.param_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        params_by_index = {index: param for saved, group in zip(saved_groups, self.param_groups)
                           for index, param in zip(saved["params"], group["params"])}
        self.state = {}
        for index, entries in state_dict["state"].items():
            param = params_by_index[index]
            self.state[param] = {key: value.to(param.dtype) if isinstance(value, Tensor) and key != "step"
                                 and param.dtype.is_floating_point else value for key, value in entries.items()}
        self.param_groups = [dict({key: value for key, value in saved.items() if key != "params"},
                                  params=group["params"]) for saved, group in zip(saved_groups, self.param_groups)]

    def _state_of(self, param) -> dict:
        """This parameter's state (``{}`` until its first step), created on first use."""
        state = self.state.get(param)
        if state is None:
            state = self.state[param] = {}
        return state

    def step(self, closure=None):
        """Update every parameter that has a ``.grad``, in place (with grad mode off); ``closure``, if
        given, recomputes the loss and its gradients first, and its loss is returned."""
        loss = None
        if closure is not None:
            from gradviz.grad_mode import enable_grad

            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for param in group["params"]:
                    if param._grad is not None:
                        self._update(param, group)
        return loss

    def _begin_update(self, param, group: dict, buffers: tuple) -> tuple:
        """``(backend, data, grad, state)`` for one parameter's step, ``step`` counted: the gradient is
        negated under ``maximize``; a first step starts ``state`` at ``step = 0`` with zero ``buffers``."""
        backend, grad = param._backend, param._grad._data
        if group["maximize"]:
            grad = backend.neg(grad)
        state = self._state_of(param)
        if not state:
            state["step"] = tensor(0.0)
            state.update((name, zeros_like(param)) for name in buffers)
        state["step"] += 1
        return backend, param._data, grad, state

    def _update(self, param, group: dict) -> None:
        """One parameter's step, with the settings of its group (each optimizer's own algorithm)."""
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


# -- in-place updates in PyTorch's order of operations (on backend arrays, in the array's dtype) ---------
def _in_dtype(array, value: float) -> float:
    """A Python number rounded to the array's precision, as PyTorch converts a Scalar for a kernel."""
    return float(np.dtype(str(array.dtype).replace("torch.", "")).type(value))


def lerp_(backend, start, end, weight: float):
    """``start.lerp_(end, weight)``: ``start + weight * (end - start)``, or from the far end,
    ``end - (end - start) * (1 - weight)``, when ``weight >= 0.5`` (PyTorch's two formulas)."""
    weight = _in_dtype(start, weight)
    difference = backend.sub(end, start)
    if abs(weight) < 0.5:
        return backend.iadd(start, backend.mul(difference, weight))
    return backend.assign(start, backend.sub(end, backend.mul(difference, _in_dtype(start, 1 - weight))))


def addcmul_(backend, out, tensor1, tensor2, value: float = 1.0):
    """``out += value * tensor1 * tensor2``."""
    return backend.iadd(out, backend.mul(backend.mul(tensor1, value), tensor2))


def addcdiv_(backend, out, tensor1, tensor2, value: float = 1.0):
    """``out += value * tensor1 / tensor2``."""
    return backend.iadd(out, backend.div(backend.mul(tensor1, value), tensor2))
