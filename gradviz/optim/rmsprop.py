"""``RMSprop``: each step divided by a running root-mean-square of the gradient.

For each parameter ``p`` with gradient ``g`` (PyTorch's single-tensor algorithm)::

    g += weight_decay * p                            if weight_decay != 0
    v = alpha * v + (1 - alpha) * g * g              running average of g^2
    avg = sqrt(v - m * m) + eps, m = m.lerp(g, 1 - alpha)   centered (m: running average of g)
    avg = sqrt(v) + eps                              otherwise
    b = momentum * b + g / avg;  p -= lr * b         with momentum
    p -= lr * g / avg                                without
"""
from __future__ import annotations

from gradviz.optim.optimizer import Optimizer, addcdiv_, addcmul_, lerp_


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered: bool = False,
                 capturable: bool = False, foreach=None, maximize: bool = False, differentiable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update(self, param, group) -> None:
        lr, alpha, eps, momentum = group["lr"], group["alpha"], group["eps"], group["momentum"]
        buffers = (("square_avg",) + (("momentum_buffer",) if momentum > 0 else ())
                   + (("grad_avg",) if group["centered"] else ()))
        backend, p, grad, state = self._begin_update(param, group, buffers)
        if group["weight_decay"] != 0:
            grad = backend.add(grad, backend.mul(p, group["weight_decay"]))
        square_avg = state["square_avg"]._data
        addcmul_(backend, backend.imul(square_avg, alpha), grad, grad, 1 - alpha)
        if group["centered"]:
            grad_avg = lerp_(backend, state["grad_avg"]._data, grad, 1 - alpha)
            average = backend.sqrt(addcmul_(backend, backend.copy(square_avg), grad_avg, grad_avg, -1))
        else:
            average = backend.sqrt(square_avg)
        average = backend.add(average, eps)
        if momentum > 0:
            buffer = state["momentum_buffer"]._data
            addcdiv_(backend, backend.imul(buffer, momentum), grad, average)
            backend.iadd(p, backend.mul(buffer, -lr))
        else:
            addcdiv_(backend, p, grad, average, -lr)
        param._vc[0] += 1  # changed in place: saved copies of it are now stale
