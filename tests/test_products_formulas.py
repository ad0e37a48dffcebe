"""The learner formulas of the product, linear-algebra, scatter_reduce, padding and strided nodes, evaluated on PyTorch's own graphs: each formula (keyed
by node name, computed from what the node saved) must give the gradient torch's node sent."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gradviz.autograd.engine import backward_steps  # noqa: E402
from gradviz.snapshot.formula_table import TABLE  # noqa: E402
from gradviz.snapshot.formulas import gradient_sent  # noqa: E402
from gradviz.snapshot.model import to_numpy  # noqa: E402

RNG = np.random.default_rng(17)


def leaf(*shape, low=-1.5, high=1.5):
    return torch.tensor(RNG.uniform(low, high, size=shape), requires_grad=True)


def _products():
    s, a, b = leaf(3, 4), leaf(2, 3, 5), leaf(2, 5, 4)
    out = torch.baddbmm(s, a, b, beta=0.5, alpha=2).sum(0) + torch.addbmm(s, a, b, alpha=-1)
    m, v = leaf(3, 3), leaf(3)
    out = out + torch.addmv(leaf(3), m, v, beta=2).unsqueeze(1) + torch.addr(leaf(4), leaf(3), leaf(4), alpha=0.5)
    c = torch.linalg.cross(leaf(4, 3), leaf(1, 3))
    return (out ** 2).sum() + (c * leaf(4, 3)).sum() + torch.vdot(leaf(3), v)


def _linalg():
    a = torch.tensor([[2.0, -1.0, 0.5], [0.3, 1.5, -0.7], [1.0, 0.2, 3.0]], dtype=torch.float64, requires_grad=True)
    spd = a @ a.T + torch.eye(3, dtype=torch.float64)
    out = (torch.linalg.inv(a) * leaf(3, 3)).sum() + torch.linalg.det(a) * 2 + torch.linalg.slogdet(a).logabsdet
    out = out + (torch.linalg.cholesky(spd) * leaf(3, 3)).sum() + (torch.linalg.cholesky(spd, upper=True) ** 2).sum()
    out = out + (torch.linalg.solve(a, leaf(3)) ** 2).sum() + (torch.linalg.solve(a, leaf(3, 2)) * leaf(3, 2)).sum()
    b = leaf(3, 3)
    for upper, left, unit in ((False, True, False), (True, False, True), (True, True, False), (False, False, True)):
        out = out + (torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit) * leaf(3, 3)).sum()
    return out


def _scatter_and_windows():
    x, s = leaf(2, 4), leaf(2, 3)
    index = torch.tensor([[0, 2, 0], [1, 1, 3]])
    out = sum((x.scatter_reduce(1, index, s, reduce, include_self=include) * leaf(2, 4)).sum()
              for reduce in ("sum", "prod", "mean", "amax", "amin") for include in (True, False))
    F = torch.nn.functional
    p = leaf(1, 3, 4)
    for mode in ("reflect", "replicate"):
        out = out + (F.pad(p, (2, 1), mode=mode) ** 2).sum() + (F.pad(p, (1, 2, 2, 0), mode=mode) ** 2).sum()
        out = out + (F.pad(leaf(1, 2, 3, 4), (1, 1, 0, 1, 1, 0), mode=mode) ** 2).sum()
    return out + (p.unfold(2, 3, 1) ** 2).sum() + (leaf(7).unfold(0, 2, 3) * leaf(2, 2)).sum()


@pytest.mark.parametrize("program", [_products, _linalg, _scatter_and_windows])
def test_formulas_give_what_torchs_nodes_sent(program):
    out = program()
    checked = set()
    for step in backward_steps(out, retain_graph=True, dry_run=True):
        assert step.name in TABLE, f"torch node without a learner formula: {step.name}"
        if step.is_accumulate:
            continue
        arriving = [None if grad is None else to_numpy(grad) for grad in step.grad_outputs]
        shapes = tuple(None if grad is None else tuple(grad.shape) for grad in step.grad_inputs)
        for slot, sent in enumerate(step.grad_inputs):
            if sent is not None:
                np.testing.assert_allclose(gradient_sent(step.node, slot, arriving, shapes), to_numpy(sent),
                                           rtol=1e-9, atol=1e-10, err_msg=f"{step.name}, input {slot}")
        checked.add(step.name)
    assert checked
