"""``LBFGS``: a quasi-Newton method that needs a ``closure`` (it re-evaluates the loss as it searches).

Each ``step(closure)`` runs up to ``max_iter`` iterations, with PyTorch's algorithm and numbers (0-d tensors
where PyTorch has them, so the same float32 roundings):

1. the gradient ``g`` of all parameters, flattened into one vector; stop if ``max |g| <= tolerance_grad``;
2. the direction ``d = -H g``, where ``H`` approximates the inverse Hessian from the last ``history_size``
   pairs ``s = x_{k+1} - x_k``, ``y = g_{k+1} - g_k`` (the two-loop recursion; a pair is kept only when
   ``y·s > 1e-10``, and ``H_0 = (y·s) / (y·y)`` of the newest pair). The first iteration takes ``d = -g``;
3. a step ``t`` along ``d``: ``lr`` (the first time ``min(1, 1 / sum |g|) * lr``), or, with
   ``line_search_fn='strong_wolfe'``, a step satisfying the strong Wolfe conditions (a bracketing phase, then
   cubic interpolation to zoom in);
4. stop at ``max_eval`` loss evaluations, a tiny step or a loss that stopped changing.

The state (``d``, ``t``, the history, ``H_diag``, the previous gradient and loss, counters) carries over from
one ``step`` to the next, as in PyTorch.
"""
from __future__ import annotations

from gradviz.grad_mode import enable_grad, no_grad
from gradviz.optim.optimizer import Optimizer
from gradviz.ops.combine import cat
from gradviz.tensor import Tensor, zeros


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through ``(x1, f1)`` and ``(x2, f2)`` with slopes ``g1`` and ``g2``, kept within
    ``bounds`` (by default the interval itself); its midpoint when the cubic has no minimum."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = d2_square.sqrt()
    if x1 <= x2:
        position = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        position = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(position, low), high)


class _Bracket:
    """Two trial steps (``t``), their losses (``f``), gradients (``g``) and slopes along ``d`` (``gtd``)."""

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd

    def set(self, index, t, f, g, gtd) -> None:
        self.t[index], self.f[index], self.g[index], self.gtd[index] = t, f, g, gtd

    def low_high(self) -> tuple:
        return (0, 1) if self.f[0] <= self.f[-1] else (1, 0)


def strong_wolfe(evaluate, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step ``t`` along ``d`` with enough decrease (``f(t) <= f + c1 t gtd``) and a flat enough slope
    (``|g(t)·d| <= -c2 gtd``): ``(loss, gradient, t, evaluations)``. ``evaluate(x, t, d)`` is the loss and flat
    gradient at ``x + t d``. First steps grow (by cubic extrapolation) until they bracket such a point, then the
    bracket shrinks around it by cubic interpolation, nudged away from its ends when progress is slow."""
    d_norm = d.abs().max()
    g = g.clone()
    f_new, g_new = evaluate(x, t, d)
    evaluations = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    iteration = 0
    bracket = None
    while iteration < max_ls:  # bracketing
        if f_new > (f + c1 * t * gtd) or (iteration > 1 and f_new >= f_prev):
            bracket = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new])
            break
        if abs(gtd_new) <= -c2 * gtd:  # the strong Wolfe conditions hold: done
            bracket = _Bracket([t], [f_new], [g_new], None)
            done = True
            break
        if gtd_new >= 0:
            bracket = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new])
            break
        grown = _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new.clone(), gtd_new
        t = grown
        f_new, g_new = evaluate(x, t, d)
        evaluations += 1
        gtd_new = g_new.dot(d)
        iteration += 1
    if iteration == max_ls:  # no bracket found: between the start and the last step
        bracket = _Bracket([0, t], [f, f_new], [g, g_new], bracket.gtd if bracket is not None else None)
    slow = False
    low, high = bracket.low_high()
    while not done and iteration < max_ls:  # zooming
        if abs(bracket.t[1] - bracket.t[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(bracket.t[0], bracket.f[0], bracket.gtd[0], bracket.t[1], bracket.f[1], bracket.gtd[1])
        width = max(bracket.t) - min(bracket.t)
        eps = 0.1 * width
        if min(max(bracket.t) - t, t - min(bracket.t)) < eps:  # too near an end of the bracket
            if slow or t >= max(bracket.t) or t <= min(bracket.t):
                t = max(bracket.t) - eps if abs(t - max(bracket.t)) < abs(t - min(bracket.t)) else min(bracket.t) + eps
                slow = False
            else:
                slow = True
        else:
            slow = False
        f_new, g_new = evaluate(x, t, d)
        evaluations += 1
        gtd_new = g_new.dot(d)
        iteration += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket.f[low]:  # not enough decrease: the new high end
            bracket.set(high, t, f_new, g_new.clone(), gtd_new)
            low, high = bracket.low_high()
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket.t[high] - bracket.t[low]) >= 0:  # the minimum is on the other side
                bracket.set(high, bracket.t[low], bracket.f[low], bracket.g[low], bracket.gtd[low])
            bracket.set(low, t, f_new, g_new.clone(), gtd_new)
    return bracket.f[low], bracket.g[low], bracket.t[low], evaluations


class LBFGS(Optimizer):
    def __init__(self, params, lr=1, max_iter: int = 20, max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100, line_search_fn: str | None = None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval, "tolerance_grad": tolerance_grad,
                    "tolerance_change": tolerance_change, "history_size": history_size,
                    "line_search_fn": line_search_fn}
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # -- the parameters as one flat vector ---------------------------------------------------------------------------
    def _flat_grad(self) -> Tensor:
        return cat([p.grad.view(-1) if p.grad is not None else zeros(p.numel(), dtype=p.dtype) for p in self._params],
                   0)

    def _move(self, step, direction) -> None:
        """Every parameter ``+= step *`` its slice of ``direction``."""
        offset = 0
        for p in self._params:
            count = p.numel()
            p.add_(direction[offset:offset + count].view_as(p), alpha=step.item() if isinstance(step, Tensor) else step)
            offset += count

    def _evaluate_along(self, closure, x, t, d) -> tuple:
        """The loss and flat gradient at ``x + t d``; the parameters go back to ``x`` afterwards."""
        self._move(t, d)
        loss = float(closure())
        flat_grad = self._flat_grad()
        for p, data in zip(self._params, x):
            p.copy_(data)
        return loss, flat_grad

    def _direction(self, state, flat_grad, memory: dict, history_size: int):
        """``-H g`` by the two-loop recursion, after adding the newest ``(s, y)`` pair to ``memory`` (the
        history, ``H_diag``, the last direction and step)."""
        y = flat_grad.sub(memory["prev_flat_grad"])
        s = memory["d"].mul(memory["t"])
        ys = y.dot(s)
        old_dirs, old_stps, ro = memory["old_dirs"], memory["old_stps"], memory["ro"]
        if ys > 1e-10:  # curvature along the step: keep the pair
            if len(old_dirs) == history_size:
                for kept in (old_dirs, old_stps, ro):
                    kept.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            memory["H_diag"] = ys / y.dot(y)
        if "al" not in state:
            state["al"] = [None] * history_size
        al = state["al"]
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):  # newest to oldest
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-al[i].item())
        r = q * memory["H_diag"]
        for i in range(len(old_dirs)):  # oldest to newest
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=(al[i] - be_i).item())
        return r

    def step(self, closure):
        with no_grad():
            return self._step(closure)

    def _step(self, closure):
        group = self.param_groups[0]
        lr = group["lr"].item() if isinstance(group["lr"], Tensor) else group["lr"]
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        def evaluate():
            with enable_grad():
                return closure()

        orig_loss = evaluate()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:  # already optimal
            return orig_loss
        # what carries over between steps, written back to the state at the end in PyTorch's order
        memory = {name: state.get(name) for name in _CARRIED}
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:  # steepest descent to begin with
                memory.update(d=flat_grad.neg(), old_dirs=[], old_stps=[], ro=[], H_diag=1)
            else:
                memory["d"] = self._direction(state, flat_grad, memory, group["history_size"])
            d = memory["d"]
            if memory["prev_flat_grad"] is None:
                memory["prev_flat_grad"] = flat_grad.clone()
            else:
                memory["prev_flat_grad"].copy_(flat_grad)
            memory["prev_loss"] = loss
            t = memory["t"] = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # not a descent direction any more
                break
            ls_func_evals = 0
            opt_cond = False
            if group["line_search_fn"] is not None:
                if group["line_search_fn"] != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p.clone() for p in self._params]
                loss, flat_grad, t, ls_func_evals = strong_wolfe(
                    lambda x, step, direction: self._evaluate_along(evaluate, x, step, direction), x_init, t, d,
                    loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                memory["t"] = t
                self._move(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._move(t, d)
                if n_iter != max_iter:  # the last iteration's loss is the next step's first evaluation
                    loss = float(evaluate())
                    flat_grad = self._flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if d.mul(t).abs().max() <= tolerance_change or abs(loss - memory["prev_loss"]) < tolerance_change:
                break
        state.update(memory)
        return orig_loss


_CARRIED = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")
