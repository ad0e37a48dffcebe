"""``Adagrad``: each parameter's step divided by the root of its summed squared gradients.

For each parameter ``p`` with gradient ``g``, at step ``t`` (PyTorch's single-tensor algorithm)::

    g += weight_decay * p                            if weight_decay != 0
    clr = lr / (1 + (t - 1) * lr_decay)
    s += g * g                                       s starts at initial_accumulator_value
    p -= clr * g / (sqrt(s) + eps)

Elements that keep getting large gradients take ever smaller steps.
"""
from __future__ import annotations

from gradviz.optim.optimizer import Optimizer, addcdiv_, addcmul_
from gradviz.tensor import full_like, tensor


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize: bool = False, differentiable: bool = False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        for group in self.param_groups:  # unlike the others, Adagrad makes its state up front, as PyTorch does
            for param in group["params"]:
                self._start(param)

    def _start(self, param) -> dict:
        state = self._state_of(param)
        state["step"] = tensor(0.0)
        state["sum"] = full_like(param, self.defaults["initial_accumulator_value"])
        return state

    def _update(self, param, group) -> None:
        state = self.state.get(param) or self._start(param)  # a group added after construction starts here
        backend, p, grad = param._backend, param._data, param._grad._data
        state["step"] += 1
        step = state["step"].item()
        if group["maximize"]:
            grad = backend.neg(grad)
        if group["weight_decay"] != 0:
            grad = backend.add(grad, backend.mul(p, group["weight_decay"]))
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        square_sum = addcmul_(backend, state["sum"]._data, grad, grad, 1)
        std = backend.add(backend.sqrt(square_sum), group["eps"])
        addcdiv_(backend, p, grad, std, -clr)
        param._vc[0] += 1  # changed in place: saved copies of it are now stale
