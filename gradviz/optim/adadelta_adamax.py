"""``Adadelta`` and ``Adamax``, PyTorch's single-tensor algorithms line for line.

Adadelta, for each parameter ``p`` with gradient ``g``::

    g += weight_decay * p                            if weight_decay != 0
    v = rho * v + (1 - rho) * g * g                  square_avg: running average of g^2
    delta = sqrt(u + eps) / sqrt(v + eps) * g        u: acc_delta, the running average of delta^2
    u = rho * u + (1 - rho) * delta * delta
    p -= lr * delta

Adamax, at step ``t``::

    g += weight_decay * p                            if weight_decay != 0
    m = m.lerp(g, 1 - beta1)                         exp_avg
    u = max(beta2 * u, |g| + eps)                    exp_inf: the infinity norm's running maximum
    p -= lr / (1 - beta1^t) * m / u
"""
from __future__ import annotations

from gradviz.optim.adam import check_hyperparameters
from gradviz.optim.optimizer import Optimizer, addcdiv_, addcmul_, lerp_


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update(self, param, group) -> None:
        lr, rho, eps, weight_decay = group["lr"], group["rho"], group["eps"], group["weight_decay"]
        backend, p, grad, state = self._begin_update(param, group, ("square_avg", "acc_delta"))
        if weight_decay != 0:
            grad = backend.add(grad, backend.mul(p, weight_decay))
        square_avg, acc_delta = state["square_avg"]._data, state["acc_delta"]._data
        addcmul_(backend, backend.imul(square_avg, rho), grad, grad, 1 - rho)
        std = backend.sqrt(backend.add(square_avg, eps))
        delta = backend.mul(backend.div(backend.sqrt(backend.add(acc_delta, eps)), std), grad)
        addcmul_(backend, backend.imul(acc_delta, rho), delta, delta, 1 - rho)
        backend.iadd(p, backend.mul(delta, -lr))
        param._vc[0] += 1  # changed in place: saved copies of it are now stale


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize: bool = False, differentiable: bool = False, capturable: bool = False):
        check_hyperparameters(lr, eps, betas, weight_decay)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _update(self, param, group) -> None:
        lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        backend, p, grad, state = self._begin_update(param, group, ("exp_avg", "exp_inf"))
        if weight_decay != 0:
            grad = backend.add(grad, backend.mul(p, weight_decay))
        exp_avg, exp_inf = state["exp_avg"]._data, state["exp_inf"]._data
        lerp_(backend, exp_avg, grad, 1 - beta1)
        backend.assign(exp_inf, backend.maximum(backend.imul(exp_inf, beta2), backend.add(backend.abs(grad), eps)))
        clr = lr / (1 - beta1 ** state["step"].item())
        addcdiv_(backend, p, exp_avg, exp_inf, -clr)
        param._vc[0] += 1
