"""``Rprop`` and ``ASGD``, PyTorch's single-tensor algorithms operation for operation, on Tensors under ``no_grad``.

Rprop uses only the gradient's sign. Each element keeps its own step size, grown by ``etaplus`` while the sign
stays the same, shrunk by ``etaminus`` when it flips (and that element skips its move once), clamped to
``step_sizes``::

    sign = sign(g * prev) -> etaplus (> 0), etaminus (< 0), 1 (= 0)
    step_size = clamp(step_size * sign, *step_sizes);  g = 0 where the sign flipped
    p -= sign(g) * step_size;  prev = g

ASGD (averaged SGD) decays the parameter, takes an SGD step with a shrinking rate ``eta`` and keeps the running
average ``ax`` of the parameter (from step ``t0`` on; before, ``ax`` is the parameter)::

    p *= 1 - lambd * eta;  p -= eta * g
    ax = p if mu == 1 else ax + mu * (p - ax)
    eta = lr / (1 + lambd * lr * t) ** alpha;  mu = 1 / max(1, t - t0)      (float32 tensors, as in PyTorch)
"""
from __future__ import annotations

from gradviz.optim.optimizer import Optimizer
from gradviz.tensor import full_like, ones, tensor, zeros_like


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable: bool = False,
                 foreach=None, maximize: bool = False, differentiable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": tuple(etas), "step_sizes": tuple(step_sizes), "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _update(self, param, group) -> None:
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        grad = -param.grad if group["maximize"] else param.grad
        state = self._state_of(param)
        if not state:
            state.update(step=tensor(0.0), prev=zeros_like(param), step_size=full_like(grad, group["lr"]))
        prev, step_size = state["prev"], state["step_size"]
        state["step"] += 1
        sign = grad.mul(prev).sign()
        sign[sign.gt(0)] = etaplus
        sign[sign.lt(0)] = etaminus
        sign[sign.eq(0)] = 1
        step_size.mul_(sign).clamp_(step_size_min, step_size_max)
        grad = grad.clone()
        grad[sign.eq(etaminus)] = 0  # the sign flipped: this element does not move this time
        param.addcmul_(grad.sign(), step_size, value=-1)
        prev.copy_(grad)


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize: bool = False, differentiable: bool = False, capturable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _update(self, param, group) -> None:
        lr, lambd = group["lr"], group["lambd"]
        state = self._state_of(param)
        if not state:
            state.update(step=tensor(0.0), eta=tensor(float(lr)), mu=ones(()), ax=zeros_like(param))
        grad = -param.grad if group["maximize"] else param.grad
        eta, mu, ax = state["eta"], state["mu"], state["ax"]
        state["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        eta_value = eta.item()
        param.mul_(1 - lambd * eta_value)
        param.add_(grad, alpha=-eta_value)
        if mu.item() != 1:
            ax.add_(param.sub(ax).mul_(mu))
        else:
            ax.copy_(param)
        step = state["step"].item()
        eta.copy_(tensor(lr / ((1 + lambd * lr * step) ** group["alpha"])))
        mu.copy_(tensor(1 / max(1, step - group["t0"])))
