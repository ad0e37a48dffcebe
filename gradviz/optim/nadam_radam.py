"""``NAdam`` and ``RAdam``: Adam with Nesterov momentum, and Adam with its early steps' variance rectified.

Both follow PyTorch's single-tensor algorithms operation for operation, on Tensors under ``no_grad``. NAdam, for
each parameter ``p`` with gradient ``g`` at step ``t``::

    mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))     the momentum schedule (mu_{t+1} likewise)
    mu_product *= mu_t                                           a float32 tensor, as in PyTorch
    m = m.lerp(g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    denom = sqrt(v / (1 - beta2^t)) + eps
    p -= lr * (1 - mu_t) / (1 - mu_product) * g / denom + lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom

RAdam::

    m = m.lerp(g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
    p -= lr * m / (1 - beta1^t) * sqrt(1 - beta2^t) / (sqrt(v) + eps) * rect(rho_t)   if rho_t > 5
    p -= lr * m / (1 - beta1^t)                                                        otherwise (plain momentum)
"""
from __future__ import annotations

from gradviz.optim.adam import check_hyperparameters
from gradviz.optim.optimizer import Optimizer
from gradviz.tensor import ones, tensor, zeros_like


def _decay(param, grad, group):
    """Weight decay: decoupled (``p *= 1 - lr * weight_decay``) or added to the gradient."""
    weight_decay = group["weight_decay"]
    if weight_decay == 0:
        return grad
    if group["decoupled_weight_decay"]:
        param.mul_(1 - group["lr"] * weight_decay)
        return grad
    return grad.add(param, alpha=weight_decay)


def _begin(optimizer, param, group, **extra) -> tuple:
    """``(state, grad, step)``: the state made on the first step (``step``, then ``extra``'s entries, then the two
    moments: PyTorch's order), the gradient (negated under ``maximize``), the step counted."""
    state = optimizer._state_of(param)
    if not state:
        state.update(step=tensor(0.0), **{name: make() for name, make in extra.items()}, exp_avg=zeros_like(param),
                     exp_avg_sq=zeros_like(param))
    grad = -param.grad if group["maximize"] else param.grad
    state["step"] += 1
    return state, grad, state["step"].item()


def _moments(state, grad, beta1: float, beta2: float):
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    return exp_avg, exp_avg_sq


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):
        check_hyperparameters(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update(self, param, group) -> None:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        state, grad, step = _begin(self, param, group, mu_product=lambda: ones(()))
        bias_correction2 = 1 - beta2**step
        grad = _decay(param, grad, group)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * group["momentum_decay"])))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * group["momentum_decay"])))
        state["mu_product"] *= mu
        exp_avg, exp_avg_sq = _moments(state, grad, beta1, beta2)
        denominator = exp_avg_sq.div(bias_correction2).sqrt()
        mu_product = state["mu_product"].item()
        mu_product_next = mu_product * mu_next
        denominator.add_(eps)
        param.addcdiv_(grad, denominator, value=(-lr * (1.0 - mu) / (1.0 - mu_product)))
        param.addcdiv_(exp_avg, denominator, value=(-lr * mu_next) / (1.0 - mu_product_next))


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):
        check_hyperparameters(lr, eps, betas, weight_decay)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update(self, param, group) -> None:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        state, grad, step = _begin(self, param, group)
        grad = _decay(param, grad, group)
        exp_avg, exp_avg_sq = _moments(state, grad, beta1, beta2)
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        corrected = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:  # the variance is trusted: Adam's step, rectified
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive_lr = (bias_correction2**0.5) / exp_avg_sq.sqrt().add_(eps)
            param.add_(corrected * lr * adaptive_lr * rect, alpha=-1.0)
        else:  # too few steps to trust the variance: plain momentum
            param.add_(corrected * lr, alpha=-1.0)
