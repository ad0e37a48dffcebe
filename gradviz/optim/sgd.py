"""``SGD``: stochastic gradient descent, with momentum, dampening, Nesterov and weight decay."""
from __future__ import annotations

from gradviz.optim.optimizer import Optimizer, required


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

    def _update(self, param, group) -> None:
        grad = param._grad
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            state = self._state_of(param)
            buffer = state.get("momentum_buffer")
            if buffer is None:
                buffer = state["momentum_buffer"] = grad.clone().detach()
            else:
                buffer.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad.add(buffer, alpha=momentum) if group["nesterov"] else buffer
        param.add_(grad, alpha=-group["lr"])
