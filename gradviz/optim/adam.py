"""``Adam`` and ``AdamW``: steps scaled by running averages of the gradient and of its square.

For each parameter ``p`` with gradient ``g``, at step ``t`` (PyTorch's single-tensor algorithm)::

    p *= 1 - lr * weight_decay                       AdamW (decoupled weight decay)
    g += weight_decay * p                            Adam with weight_decay != 0
    m = m.lerp(g, 1 - beta1)                         running average of g
    v = beta2 * v + (1 - beta2) * g * g              running average of g^2 (amsgrad: keep its maximum)
    p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
"""
from __future__ import annotations

from gradviz.optim.optimizer import Optimizer, addcdiv_, addcmul_, lerp_


def check_hyperparameters(lr, eps, betas, weight_decay) -> None:
    """The checks (and ValueErrors) PyTorch's Adam-family constructors make, in their order."""
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad: bool = False, *,
                 foreach=None, maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused=None, decoupled_weight_decay: bool = False):
        check_hyperparameters(lr, eps, betas, weight_decay)
        if not (isinstance(betas[0], float) and isinstance(betas[1], float)):
            raise ValueError("betas must be either both floats or both Tensors")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def _update(self, param, group) -> None:
        lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        buffers = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())
        backend, p, grad, state = self._begin_update(param, group, buffers)
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                backend.imul(p, 1 - lr * weight_decay)
            else:
                grad = backend.add(grad, backend.mul(p, weight_decay))
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        lerp_(backend, exp_avg, grad, 1 - beta1)
        addcmul_(backend, backend.imul(exp_avg_sq, beta2), grad, grad, 1 - beta2)
        step = state["step"].item()
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        if group["amsgrad"]:
            max_exp_avg_sq = state["max_exp_avg_sq"]._data
            backend.assign(max_exp_avg_sq, backend.maximum(max_exp_avg_sq, exp_avg_sq))
            exp_avg_sq = max_exp_avg_sq
        denominator = backend.add(backend.div(backend.sqrt(exp_avg_sq), bias_correction2_sqrt), eps)
        addcdiv_(backend, p, exp_avg, denominator, -step_size)
        param._vc[0] += 1  # changed in place: saved copies of it are now stale


class AdamW(Adam):
    """Adam with the weight decay applied to the parameter directly (``p *= 1 - lr * weight_decay``)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach=None, capturable: bool = False, differentiable: bool = False,
                 fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
