"""The SVD family of ``torch.linalg`` against PyTorch 2.13: ``svd`` (``full_matrices``), ``torch.svd``
(``some``, ``compute_uv``), ``svdvals``, ``eigh``/``eigvalsh``, ``qr`` (its modes), ``pinv``, ``matrix_rank``,
``cond``, ``matrix_power``, the nuclear and spectral norms and ``solve(left=False)``: nodes, saved values,
outputs, gradients, printed text and errors, on both backends.

Singular vectors and eigenvectors are fixed by LAPACK only up to their signs. numpy and PyTorch call the
same drivers, and on the matrices of ``CASES`` they pick the same signs, so everything is compared as is;
on random matrices (``test_gauge_invariant_...``) the signs may differ, so those tests compare what does
not depend on them: ``U diag(S) Vh``, ``U Uᵀ``, ``|U|``, and the gradients of losses built from those.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

A = "A = torch.tensor([[2.0, -1.0, 0.5], [0.3, 1.5, -0.7], [1.0, 0.2, 3.0]], dtype=torch.float64, requires_grad=True)\n"
TALL = ("T = torch.tensor([[2.0, -1.0, 0.5], [0.3, 1.5, -0.7], [1.0, 0.2, 3.0], [0.4, -0.9, 1.1]], dtype=torch.float64, "
        "requires_grad=True)\n")
WIDE = "W = torch.tensor([[2.0, -1.0, 0.5, 0.7], [0.3, 1.5, -0.7, 0.2]], dtype=torch.float64, requires_grad=True)\n"
BATCH = ("Ab = torch.tensor([[[1.0, 2.0], [3.0, 4.0]], [[0.5, -1.0], [2.0, 1.5]]], dtype=torch.float64, "
         "requires_grad=True)\n")
SYM = "M = torch.tensor([[4.0, 1.0, -0.5], [9.0, 3.0, 0.2], [9.0, 9.0, 2.0]], dtype=torch.float64, requires_grad=True)\n"
F32 = "A = torch.tensor([[2.0, -1.0, 0.5], [0.3, 1.5, -0.7], [1.0, 0.2, 3.0]], requires_grad=True)\n"


def weighted(*names: str) -> str:
    """Backward from every output named, each weighted elementwise so each element gets its own gradient."""
    terms = " + ".join(f"({n} * torch.arange(1.0, {n}.numel() + 1.0, dtype={n}.dtype).reshape({n}.shape).cos()).sum()"
                       for n in names)
    return f"({terms}).backward()\n"


CASES = {
    "svd": A + "U, S, Vh = torch.linalg.svd(A)\nprint(torch.linalg.svd(A))\n" + weighted("U", "S", "Vh"),
    "svd_reduced_S_only": A + "U, S, Vh = torch.linalg.svd(A, full_matrices=False)\n" + weighted("S"),
    "svd_U_only": A + "U, S, Vh = torch.linalg.svd(A)\n" + weighted("U"),
    "svd_Vh_only": A + "U, S, Vh = torch.linalg.svd(A)\n" + weighted("Vh"),
    "svd_float32": F32 + "U, S, Vh = torch.linalg.svd(A)\n" + weighted("U", "S", "Vh"),
    # the vectors of a non-square matrix may take other signs in numpy's LAPACK: only S is compared here
    "svd_tall_S": TALL + "S = torch.linalg.svd(T).S\n" + weighted("S"),
    "svd_batch_S": BATCH + "U, S, Vh = torch.linalg.svd(Ab)\n" + weighted("S"),
    "torch_svd": A + "U, S, V = torch.svd(A)\nprint(torch.svd(A))\n" + weighted("U", "S", "V"),
    "torch_svd_no_uv": TALL + "r = torch.svd(T, compute_uv=False)\nU, S, V = r\nprint(r)\n" + weighted("S"),
    "torch_svd_not_some": WIDE + "S = torch.svd(W, some=False).S\n" + weighted("S"),
    "torch_svd_no_uv_no_grad": "U, S, V = torch.svd(torch.eye(3, 2), compute_uv=False)\n",
    "svdvals": TALL + "s = torch.linalg.svdvals(T)\nprint(s)\n" + weighted("s"),
    "svdvals_no_grad": "s = torch.linalg.svdvals(torch.tensor([[3.0, 1.0], [1.0, 2.0]]))\nprint(s)\n",
    "eigh": SYM + "L, V = torch.linalg.eigh(M)\nprint(torch.linalg.eigh(M))\n" + weighted("L", "V"),
    "eigh_values_only": SYM + "L, V = torch.linalg.eigh(M)\n" + weighted("L"),
    "eigh_vectors_only": SYM + "L, V = torch.linalg.eigh(M)\n" + weighted("V"),
    "eigvalsh_upper": SYM + "L = torch.linalg.eigvalsh(M, UPLO='U')\n" + weighted("L"),
    "eigh_of_a_product": A + "P = A @ A.T\nL, V = torch.linalg.eigh(P)\n" + weighted("L", "V"),
    "qr": A + "Q, R = torch.linalg.qr(A)\nprint(torch.linalg.qr(A))\n" + weighted("Q", "R"),
    "qr_tall": TALL + "Q, R = torch.linalg.qr(T)\n" + weighted("Q", "R"),
    "qr_wide": WIDE + "Q, R = torch.linalg.qr(W)\n" + weighted("Q", "R"),
    "qr_R_only": TALL + "Q, R = torch.linalg.qr(T)\n" + weighted("R"),
    "qr_complete_square": A + "Q, R = torch.linalg.qr(A, mode='complete')\n" + weighted("Q", "R"),
    "qr_mode_r": TALL + "Q, R = torch.linalg.qr(T, mode='r')\nprint(Q)\n",
    "pinv": A + weighted_backward("torch.linalg.pinv(A)") + "print(y)\n",
    "pinv_tall": TALL + weighted_backward("torch.linalg.pinv(T)"),
    "pinv_wide": WIDE + weighted_backward("torch.linalg.pinv(W)"),
    "pinv_hermitian": A + "P = A @ A.T\n" + weighted_backward("torch.linalg.pinv(P, hermitian=True)"),
    "pinv_rank_deficient": "R = torch.tensor([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]], dtype=torch.float64, "
    "requires_grad=True)\n" + weighted_backward("torch.linalg.pinv(R)"),
    "matrix_rank": "r = torch.linalg.matrix_rank(torch.tensor([[1.0, 2.0], [2.0, 4.0]]))\n"
    "q = torch.linalg.matrix_rank(torch.eye(3) * 1e-3, atol=1e-2)\nh = torch.linalg.matrix_rank(torch.eye(2), hermitian=True)\n"
    "print(r, q, h)\n",
    "cond": A + "c = torch.linalg.cond(A)\nc.backward()\nprint(c)\n",
    "cond_minus_2": A + "c = torch.linalg.cond(A, -2)\nc.backward()\n",
    "cond_nuc": A + "c = torch.linalg.cond(A, 'nuc')\nc.backward()\nprint(c)\n",
    # (a singular matrix's smallest singular value is 0 or a rounding error, as each LAPACK build computes it)
    "cond_nuc_batch_and_zero": "c = torch.linalg.cond(torch.stack([torch.eye(2) * 2, torch.tensor([[1.0, 2.0], [0.5, 3.0]])]), "
    "'nuc')\nd = torch.linalg.cond(torch.zeros(2, 2), 'nuc')\ne = torch.linalg.cond(torch.tensor([[1.0, 2.0, 0.0], "
    "[0.0, 1.0, 1.0]]))\nprint(c, d, e)\n",
    "nuclear_norm": A + "n = torch.linalg.matrix_norm(A, 'nuc')\nn.backward()\nprint(n)\n",
    "spectral_norms": A + "n = torch.linalg.matrix_norm(A, 2) + torch.linalg.matrix_norm(A, -2)\nn.backward()\n",
    "spectral_norm_dims": A + "n = torch.linalg.matrix_norm(A, -2, dim=(1, 0))\nn.backward()\n",
    "nuclear_norm_keepdim": BATCH + weighted_backward("torch.linalg.matrix_norm(Ab, 'nuc', keepdim=True)"),
    "linalg_norm_nuc_2": A + "n = torch.linalg.norm(A, 'nuc') + torch.linalg.norm(A, 2)\nn.backward()\n",
    "solve_left_false": A + "B = A[:2] * 1\n" + weighted_backward("torch.linalg.solve(A, B, left=False)"),
    "solve_left_false_batch": BATCH + "c = torch.tensor([[1.0, 2.0], [0.5, -1.0], [3.0, 0.25]], dtype=torch.float64, "
    "requires_grad=True)\n" + weighted_backward("torch.linalg.solve(Ab, c, left=False)"),
    "matrix_power_0": A + weighted_backward("torch.linalg.matrix_power(A, 0)"),
    "matrix_power_1": A + weighted_backward("torch.linalg.matrix_power(A, 1)"),
    "matrix_power_3": A + weighted_backward("torch.linalg.matrix_power(A, 3)"),
    "matrix_power_6": A + weighted_backward("torch.linalg.matrix_power(A, 6)"),
    "matrix_power_minus_2": A + weighted_backward("torch.linalg.matrix_power(A, -2)"),
    "matrix_power_batch": BATCH + weighted_backward("torch.linalg.matrix_power(Ab, 5)"),
}
LSTSQ = TALL + (
    "B = torch.tensor([[1.0, 0.0], [-2.0, 1.0], [0.5, 3.0], [0.2, -0.4]], dtype=torch.float64, requires_grad=True)\n")
for _driver in ("None", "'gelsy'", "'gelsd'", "'gelss'", "'gels'"):
    CASES[f"lstsq_{_driver.strip(chr(39))}"] = LSTSQ + f"r = torch.linalg.lstsq(T, B, driver={_driver})\nprint(r)\n" + \
        weighted("r.solution")
CASES["lstsq_vector"] = LSTSQ + "r = torch.linalg.lstsq(T, B[:, 0], driver='gelsd')\nprint(r)\n" + weighted("r.solution")
CASES["lstsq_wide_A_only"] = LSTSQ + "r = torch.linalg.lstsq(T.mT.detach() * 1, B[:3], driver='gelsd')\n" + \
    weighted("r.solution")
CASES["matrix_exp"] = A + weighted_backward("torch.linalg.matrix_exp(A)") + "print(y)\n"
CASES["matrix_exp_large_norm_batch"] = BATCH + weighted_backward("torch.linalg.matrix_exp(Ab * 4)")
CASES["matrix_exp_float32_top_level"] = F32 + weighted_backward("torch.matrix_exp(A) + A.matrix_exp()")
CASES["lstsq_residuals_used"] = LSTSQ + "r = torch.linalg.lstsq(T, B, driver='gels')\ny = r.solution.sum() + r.residuals.sum()\n" \
    "y.backward()\n"


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_svd_family_matches_torch(name, backend):
    assert_same(CASES[name], backend=backend)


ERRORS = [
    "torch.linalg.svd(torch.ones(3))",
    "torch.linalg.svdvals(torch.ones(3, 3, dtype=torch.long))",
    "torch.svd(torch.ones(3))",
    "torch.linalg.eigh(torch.ones(2, 3))",
    "torch.linalg.eigh(torch.ones(3, 3), UPLO='X')",
    "torch.linalg.eigvalsh(torch.ones(3, 3, dtype=torch.long))",
    "torch.linalg.qr(torch.ones(3), mode='r')",
    "torch.linalg.qr(torch.ones(3, 3), mode='x')",
    "torch.linalg.pinv(torch.ones(3))",
    "torch.linalg.matrix_rank(torch.ones(3))",
    "torch.linalg.cond(torch.ones(3))",
    "torch.linalg.cond(torch.ones(3, 3), 3)",
    "torch.linalg.cond(torch.ones(2, 3), 'nuc')",
    "torch.linalg.cond(torch.ones(2, 3), 1)",
    "torch.linalg.matrix_power(torch.ones(2, 3), 2)",
    "torch.linalg.matrix_power(torch.ones(2, 2), 2.0)",
    "torch.linalg.matrix_norm(torch.ones(2, 3), 3)",
    "torch.linalg.solve(torch.eye(3), torch.ones(3), left=False)",
    "torch.linalg.solve(torch.eye(3), torch.ones(3, 2), left=False)",
    "torch.linalg.matrix_exp(torch.ones(2, 3))",
    "torch.linalg.matrix_exp(torch.ones(3))",
    "torch.linalg.matrix_exp(torch.ones(2, 2, dtype=torch.long))",
    "torch.linalg.lstsq(torch.ones(3, 2), torch.ones(3, 2), driver='x')",
    "torch.linalg.lstsq(torch.ones(3), torch.ones(3, 2))",
    "torch.linalg.lstsq(torch.ones(3, 2), torch.ones(2, 2))",
    "torch.linalg.lstsq(torch.ones(3, 2), torch.ones(3, 2, dtype=torch.float64))",
    # backward through what cannot be differentiated
    "A = torch.ones(4, 3, requires_grad=True)\nQ, R = torch.linalg.qr(A * torch.arange(12.0).reshape(4, 3).cos(), "
    "mode='complete')\n(Q.sum() + R.sum()).backward()",
    "A = torch.ones(4, 3, requires_grad=True)\nQ, R = torch.linalg.qr(A * torch.arange(12.0).reshape(4, 3).cos(), "
    "mode='r')\nR.sum().backward()",
]


@pytest.mark.parametrize("code", ERRORS)
def test_svd_family_errors_match_torch(code):
    assert_same_error(code + "\n")


def _gauge_free_loss(lib, U, S, Vh, weights):
    k = S.shape[-1]
    Uk, Vk = U[..., :, :k], Vh[..., :k, :]
    w = [lib.tensor(x) for x in weights]
    return (((Uk * S.unsqueeze(-2) ** 2) @ Vk * w[0]).sum() + ((Uk @ Uk.mT) * w[1]).sum()
            + ((Vk.mT @ (Vk * S.unsqueeze(-1))) * w[2]).sum() + (Uk.abs() * w[3]).sum())


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 3), (3, 2, 2)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_gauge_invariant_svd_values_and_gradients_match_torch(shape, full_matrices, backend):
    """On random matrices: what does not depend on the singular vectors' signs, and its gradient."""
    import torch

    from gradviz import backends

    rng = np.random.default_rng(sum(shape) * 7 + full_matrices)
    matrix = rng.normal(size=shape)
    m, n = shape[-2:]
    k, batch = min(m, n), shape[:-2]
    weights = [rng.normal(size=batch + s) for s in ((m, n), (m, m), (n, n), (m, k))]
    results = []
    for lib in (torch, gv):
        with backends.using(backend if lib is gv else "numpy"):
            A = lib.tensor(matrix, requires_grad=True)
            U, S, Vh = lib.linalg.svd(A, full_matrices=full_matrices)
            assert U.grad_fn.name() == "LinalgSvdBackward0" and S.grad_fn is U.grad_fn is Vh.grad_fn
            _gauge_free_loss(lib, U, S, Vh, weights).backward()
            results.append((S.detach().cpu().numpy(), (U[..., :k] * S.unsqueeze(-2) @ Vh[..., :k, :]).detach().cpu().numpy(),
                            tuple(U.shape), tuple(Vh.shape), A.grad.cpu().numpy()))
    (s_t, usv_t, u_t, vh_t, grad_t), (s_g, usv_g, u_g, vh_g, grad_g) = results
    assert (u_t, vh_t) == (u_g, vh_g)
    np.testing.assert_allclose(s_g, s_t, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(usv_g, usv_t, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad_g, grad_t, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("upper", [False, True])
def test_gauge_invariant_eigh_gradients_match_torch(upper):
    import torch

    rng = np.random.default_rng(5 + upper)
    matrix, weights = rng.normal(size=(4, 4)), rng.normal(size=(2, 4, 4))
    grads = []
    for lib in (torch, gv):
        A = lib.tensor(matrix, requires_grad=True)
        L, V = lib.linalg.eigh(A, UPLO="U" if upper else "L")
        loss = ((V * L.unsqueeze(-2) ** 3) @ V.mT * lib.tensor(weights[0])).sum() + (V.abs() * lib.tensor(weights[1])).sum()
        loss.backward()
        grads.append(A.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-9, atol=1e-11)


def _central_difference(function, matrix, eps=1e-6):
    grad = np.zeros_like(matrix)
    for index in np.ndindex(*matrix.shape):
        step = np.zeros_like(matrix)
        step[index] = eps
        grad[index] = (function(matrix + step) - function(matrix - step)) / (2 * eps)
    return grad


GRADCHECKS = {
    "svd": lambda A: _gauge_free_loss(gv, *gv.linalg.svd(A), WEIGHTS_54),
    "svd_reduced": lambda A: _gauge_free_loss(gv, *gv.linalg.svd(A, full_matrices=False), WEIGHTS_54),
    "svdvals": lambda A: (gv.linalg.svdvals(A) * gv.tensor([1.0, -2.0, 0.5, 3.0])).sum(),
    # eigh reads one triangle: differentiated on symmetric matrices, where the derivative is the formula's
    "eigh": lambda A: (gv.linalg.eigh(A[:4] + A[:4].mT).eigenvectors.abs() * gv.tensor(WEIGHTS_54[2])).sum()
    + gv.linalg.eigvalsh(A[:4] + A[:4].mT).pow(3).sum(),
    "qr": lambda A: (gv.linalg.qr(A).Q * gv.tensor(WEIGHTS_54[0])).sum() + (gv.linalg.qr(A).R ** 2).sum(),
    "qr_wide": lambda A: (gv.linalg.qr(A.mT).Q.sum() + (gv.linalg.qr(A.mT).R * gv.tensor(WEIGHTS_54[0]).mT).sum()),
    "pinv": lambda A: (gv.linalg.pinv(A) * gv.arange(20.0, dtype=gv.float64).reshape(4, 5).sin()).sum(),
    "nuclear_norm": lambda A: gv.linalg.matrix_norm(A, "nuc") + gv.linalg.matrix_norm(A, 2) * gv.linalg.cond(A[:4]),
    "matrix_power": lambda A: (gv.linalg.matrix_power(A[:4], -3) * gv.tensor(WEIGHTS_54[2])).sum(),
    "solve_left_false": lambda A: (gv.linalg.solve(A[:4], A[4:] * 2, left=False) ** 2).sum(),
    "lstsq": lambda A: (gv.linalg.lstsq(A[:, :3], A[:, 3:] * 2).solution ** 2).sum(),
    "matrix_exp": lambda A: (gv.linalg.matrix_exp(A[:4] * 3) * gv.tensor(WEIGHTS_54[2])).sum(),
}
WEIGHTS_54 = [np.random.default_rng(i).normal(size=s) for i, s in enumerate(((5, 4), (5, 5), (4, 4), (5, 4)))]


@pytest.mark.parametrize("name", sorted(GRADCHECKS))
def test_gradients_agree_with_central_differences(name):
    function = GRADCHECKS[name]
    matrix = np.random.default_rng(11).normal(size=(5, 4))
    A = gv.tensor(matrix, requires_grad=True)
    function(A).backward()
    expected = _central_difference(lambda m: function(gv.tensor(m)).item(), matrix)
    np.testing.assert_allclose(A.grad.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_formulas_give_what_torchs_nodes_sent():
    """The learner formula of each new node (keyed by name, computed from what the node saved) gives the
    gradient torch's own node sent, for every output used or left unused."""
    import torch

    from gradviz.autograd.engine import backward_steps
    from gradviz.snapshot.formula_table import TABLE
    from gradviz.snapshot.formulas import gradient_sent
    from gradviz.snapshot.model import to_numpy

    rng = np.random.default_rng(23)

    def leaf(*shape):
        return torch.tensor(rng.uniform(-1.5, 1.5, size=shape), requires_grad=True)

    out = 0
    for shape in ((3, 3), (4, 3), (3, 5)):
        a = leaf(*shape)
        U, S, Vh = torch.linalg.svd(a, full_matrices=False)
        out = out + (U * leaf(*U.shape)).sum() + (S * leaf(*S.shape)).sum() + (Vh * leaf(*Vh.shape)).sum()
        out = out + torch.linalg.svdvals(a).sum() + (torch.linalg.pinv(a) * leaf(*shape[::-1])).sum()
        Q, R = torch.linalg.qr(a)
        out = out + (Q * leaf(*Q.shape)).sum() + (R * leaf(*R.shape)).sum() + (torch.linalg.qr(a).R ** 2).sum()
    s = leaf(4, 4)
    L, V = torch.linalg.eigh(s)
    out = out + (L * leaf(4)).sum() + (V * leaf(4, 4)).sum() + torch.linalg.eigvalsh(s, UPLO="U").pow(2).sum()
    out = out + (torch.linalg.matrix_exp(s * 2) * leaf(4, 4)).sum()
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
    assert {"LinalgSvdBackward0", "LinalgEighBackward0", "LinalgQrBackward0", "LinalgPinvBackward0",
            "LinalgMatrixExpBackward0"} <= checked


def test_lstsq_formula_gives_what_torchs_node_sent():
    import torch

    from gradviz.autograd.engine import backward_steps
    from gradviz.snapshot.formulas import gradient_sent
    from gradviz.snapshot.model import to_numpy

    rng = np.random.default_rng(4)
    A = torch.tensor(rng.normal(size=(5, 3)), requires_grad=True)
    B = torch.tensor(rng.normal(size=(5, 2)), requires_grad=True)
    r = torch.linalg.lstsq(A, B, driver="gelsd")
    v = torch.linalg.lstsq(A, B[:, 0], driver="gels")
    out = (r.solution * torch.tensor(rng.normal(size=(3, 2)))).sum() + (r.residuals * torch.tensor([1.0, -2.0])).sum()
    out = out + (v.solution ** 2).sum() + v.residuals.sum()
    checked = 0
    for step in backward_steps(out, retain_graph=True, dry_run=True):
        if step.name != "LinalgLstsqBackward0":
            continue
        arriving = [None if grad is None else to_numpy(grad) for grad in step.grad_outputs]
        shapes = tuple(None if grad is None else tuple(grad.shape) for grad in step.grad_inputs)
        for slot, sent in enumerate(step.grad_inputs):
            np.testing.assert_allclose(gradient_sent(step.node, slot, arriving, shapes), to_numpy(sent),
                                       rtol=1e-9, atol=1e-10)
            checked += 1
    assert checked == 4


@pytest.mark.parametrize("expression", ["gv.linalg.svdvals(A).sum()", "gv.linalg.eigvalsh(A).sum()",
                                        "gv.linalg.qr(A).R.sum()", "gv.linalg.pinv(A).sum()",
                                        "gv.linalg.lstsq(A, A).solution.sum()", "gv.linalg.matrix_exp(A).sum()"])
def test_create_graph_through_them_records_the_gradient(expression):
    """Their backward passes are recorded (as PyTorch's, written with ATen ops): the gradient has a graph.
    Values and graphs against PyTorch: tests/test_decompositions_recorded.py."""
    A = gv.tensor([[2.0, 1.0], [0.5, 3.0]], dtype=gv.float64, requires_grad=True)
    out = eval(expression)
    grad, = gv.autograd.grad(out, A, create_graph=True)
    assert grad.requires_grad and grad.grad_fn is not None
