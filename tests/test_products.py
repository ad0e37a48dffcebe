"""More products against PyTorch 2.13: baddbmm, addbmm, addmv, addr, cross, vdot (one node each),
and kron, inner, tensordot, multi_dot, chain_matmul (written with torch's own nodes).

Each case runs the same lines in torch and in gradviz (``assert_same``): values, dtypes, grads,
the whole grad_fn graph with its saved values, and the printed text. Second-order cases record the
gradient with ``create_graph=True`` and compare that graph too.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402


def leaf(name: str, *shape) -> str:
    """A float64 leaf of fixed values (the same in both libraries), named ``name``."""
    count = 1
    for size in shape:
        count *= size
    values = [round(((i * 7 + len(name) * 3) % 11 - 5) / 4, 2) for i in range(count)]
    return f"{name} = torch.tensor({values}, dtype=torch.float64).reshape({list(shape)}).requires_grad_()\n"


CASES = {
    "baddbmm": leaf("s", 2, 3, 4) + leaf("a", 2, 3, 5) + leaf("b", 2, 5, 4) + weighted_backward("torch.baddbmm(s, a, b)"),
    "baddbmm_scaled_broadcast": leaf("s", 4) + leaf("a", 2, 3, 5) + leaf("b", 2, 5, 4)
    + weighted_backward("s.baddbmm(a, b, beta=0.5, alpha=-2)"),
    "baddbmm_beta_0": leaf("s", 3, 4) + leaf("a", 2, 3, 5) + leaf("b", 2, 5, 4)
    + weighted_backward("torch.baddbmm(s, a, b, beta=0)"),
    "addbmm": leaf("s", 3, 4) + leaf("a", 2, 3, 5) + leaf("b", 2, 5, 4) + weighted_backward("torch.addbmm(s, a, b)"),
    "addbmm_scaled": leaf("s", 1, 4) + leaf("a", 3, 3, 2) + leaf("b", 3, 2, 4)
    + weighted_backward("s.addbmm(a, b, alpha=0.5, beta=3)"),
    "addmv": leaf("s", 3) + leaf("m", 3, 4) + leaf("v", 4) + weighted_backward("torch.addmv(s, m, v)"),
    "addmv_scaled": leaf("s", 1) + leaf("m", 3, 4) + leaf("v", 4) + weighted_backward("s.addmv(m, v, beta=2, alpha=0.25)"),
    "addr": leaf("s", 3, 4) + leaf("u", 3) + leaf("v", 4) + weighted_backward("torch.addr(s, u, v)"),
    "addr_scaled": leaf("s", 4) + leaf("u", 3) + leaf("v", 4) + weighted_backward("s.addr(u, v, beta=-1, alpha=3)"),
    "linalg_cross": leaf("a", 4, 3) + leaf("b", 4, 3) + weighted_backward("torch.linalg.cross(a, b)"),
    "linalg_cross_dim_broadcast": leaf("a", 3, 2) + leaf("b", 3, 1) + weighted_backward("torch.linalg.cross(a, b, dim=0)"),
    "cross_default_dim": leaf("a", 3, 3) + leaf("b", 3, 3) + weighted_backward("torch.cross(a, b)"),
    "cross_method_dim": leaf("a", 2, 3, 4) + leaf("b", 2, 3, 4) + weighted_backward("a.cross(b, dim=-2)"),
    "vdot": leaf("a", 4) + leaf("b", 4) + "y = torch.vdot(a, b)\ny.backward()\nprint(y)\n",
    "kron_2d": leaf("a", 2, 2) + leaf("b", 2, 3) + weighted_backward("torch.kron(a, b)"),
    "kron_mixed_dims": leaf("a", 2, 2, 2) + leaf("b", 3, 3) + weighted_backward("a.kron(b)"),
    "kron_1d": leaf("a", 2) + leaf("b", 3) + weighted_backward("torch.kron(a, b)"),
    "inner_vectors": leaf("a", 3) + leaf("b", 3) + "y = torch.inner(a, b)\ny.backward()\n",
    "tensordot_everything": leaf("a", 2, 3) + leaf("b", 2, 3) + "y = torch.tensordot(a, b, dims=2)\ny.backward()\n",
    "tensordot_matrix_vector": leaf("a", 2, 3) + leaf("b", 3) + weighted_backward("torch.tensordot(a, b, dims=1)"),
    "inner_matrices": leaf("a", 2, 3) + leaf("b", 4, 3) + weighted_backward("torch.inner(a, b)"),
    "inner_batch_vector": leaf("a", 2, 2, 3) + leaf("b", 3) + weighted_backward("a.inner(b)"),
    "tensordot_int": leaf("a", 2, 3, 4) + leaf("b", 3, 4, 5) + weighted_backward("torch.tensordot(a, b, dims=2)"),
    "tensordot_lists": leaf("a", 2, 3, 4) + leaf("b", 4, 3, 5)
    + weighted_backward("torch.tensordot(a, b, dims=([1, 2], [1, 0]))"),
    "tensordot_outer": leaf("a", 2) + leaf("b", 3) + weighted_backward("torch.tensordot(a, b, dims=0)"),
    "multi_dot_2": leaf("a", 2, 3) + leaf("b", 3, 4) + weighted_backward("torch.linalg.multi_dot([a, b])"),
    "multi_dot_3_left_first": leaf("a", 2, 3) + leaf("b", 3, 4) + leaf("c", 4, 5)
    + weighted_backward("torch.linalg.multi_dot([a, b, c])"),
    "multi_dot_3_right_first": leaf("a", 5, 4) + leaf("b", 4, 3) + leaf("c", 3, 2)
    + weighted_backward("torch.linalg.multi_dot([a, b, c])"),
    "multi_dot_4": leaf("a", 3, 2) + leaf("b", 2, 4) + leaf("c", 4, 5) + leaf("d", 5, 1)
    + weighted_backward("torch.linalg.multi_dot((a, b, c, d))"),
    "multi_dot_vector_ends": leaf("a", 3) + leaf("b", 3, 4) + leaf("c", 4)
    + "y = torch.linalg.multi_dot([a, b, c])\ny.backward()\n",
    "chain_matmul": leaf("a", 2, 3) + leaf("b", 3, 4) + leaf("c", 4, 5) + weighted_backward("torch.chain_matmul(a, b, c)"),
    "float32_no_grad_inputs": "s = torch.ones(3)\nm = torch.arange(12.).reshape(3, 4)\nv = torch.arange(4.)\n"
    "y = torch.addmv(s, m, v)\nz = torch.addr(m, s, v)\nprint(y, z)\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_product_matches_torch(name):
    assert_same(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_product_matches_torch_on_the_torch_backend(name):
    assert_same(CASES[name], backend="torch")


SECOND_ORDER = {
    "baddbmm": leaf("s", 2, 3, 4) + leaf("a", 2, 3, 5) + leaf("b", 2, 5, 4)
    + "y = (torch.baddbmm(s, a, b, alpha=2) ** 2).sum()\n",
    "addbmm": leaf("s", 3, 4) + leaf("a", 2, 3, 5) + leaf("b", 2, 5, 4)
    + "y = (torch.addbmm(s, a, b, beta=0.5) ** 2).sum()\n",
    "cross": leaf("a", 4, 3) + leaf("b", 4, 3) + "y = (torch.linalg.cross(a, b) ** 2).sum()\n",
    "vdot": leaf("a", 4) + leaf("b", 4) + "y = torch.vdot(a * a, b) ** 2\n",
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_recorded_backward_matches_torch(name):
    inputs = "(s, a, b)" if "s = " in SECOND_ORDER[name] else "(a, b)"
    assert_same(SECOND_ORDER[name] + f"grads = torch.autograd.grad(y, {inputs}, create_graph=True)\n"
                "total = sum((g * g).sum() for g in grads)\ntotal.backward()\n")


ERRORS = [
    "torch.baddbmm(torch.ones(2, 3, 4), torch.ones(2, 3, 5), torch.ones(3, 5, 4))",
    "torch.baddbmm(torch.ones(2, 3, 4), torch.ones(2, 3, 5, 1), torch.ones(2, 5, 4))",
    "torch.addbmm(torch.ones(3, 4), torch.ones(2, 3, 5), torch.ones(3, 5, 4))",
    "torch.addbmm(torch.ones(3, 4), torch.ones(2, 3, 5), torch.ones(2, 6, 4))",
    "torch.addmv(torch.ones(2), torch.ones(2, 3), torch.ones(4))",
    "torch.addr(torch.ones(2, 3), torch.ones(2, 2), torch.ones(3))",
    "torch.cross(torch.ones(2, 2), torch.ones(2, 2))",
    "torch.linalg.cross(torch.ones(2, 3), torch.ones(3))",
    "torch.linalg.cross(torch.ones(2, 4), torch.ones(2, 4))",
    "torch.vdot(torch.ones(2), torch.ones(3))",
    "torch.tensordot(torch.ones(2, 3), torch.ones(4, 5), dims=1)",
    "torch.inner(torch.ones(2, 3), torch.ones(2))",
    "torch.linalg.multi_dot([torch.ones(2, 3)])",
    "torch.linalg.multi_dot([torch.ones(2, 3), torch.ones(4, 5)])",
]


@pytest.mark.parametrize("line", ERRORS)
def test_product_errors_match_torch(line):
    assert_same_error(line + "\n")


MORE_SECOND_ORDER = {
    "addmv": leaf("s", 3) + leaf("a", 3, 4) + leaf("b", 4) + "y = (torch.addmv(s, a, b, beta=2, alpha=0.5) ** 2).sum()\n",
    "addr": leaf("s", 3, 4) + leaf("a", 3) + leaf("b", 4) + "y = (torch.addr(s, a, b, alpha=-1) ** 2).sum()\n",
}


@pytest.mark.parametrize("name", sorted(MORE_SECOND_ORDER))
def test_recorded_backward_of_addmv_addr_matches_torch(name):
    assert_same(MORE_SECOND_ORDER[name] + "grads = torch.autograd.grad(y, (s, a, b), create_graph=True)\n"
                "total = sum((g * g).sum() for g in grads)\ntotal.backward()\n")


def test_cross_rounds_as_torchs_kernel_bit_for_bit():
    """PyTorch's cross kernel fuses one product into the subtraction where its kernels fuse
    multiply-adds, so ``cross(a, a)`` is not exactly 0 there; gradviz rounds the same way (found by the
    wider random programs: a zero distance in cdist after it changed a gradient)."""
    torch = pytest.importorskip("torch")
    import numpy as np

    import gradviz

    rng = np.random.default_rng(7)
    for dtype in (np.float32, np.float64):
        for trial in range(50):
            a = rng.standard_normal((5, 3)).astype(dtype)
            b = a if trial % 5 == 0 else (a + rng.standard_normal((5, 3)) * 10.0 ** -rng.integers(0, 8)).astype(dtype)
            expected = torch.linalg.cross(torch.from_numpy(a), torch.from_numpy(b), dim=1).numpy()
            actual = gradviz.linalg.cross(gradviz.tensor(a), gradviz.tensor(b), dim=1).numpy()
            assert actual.tobytes() == expected.tobytes(), (dtype, trial)
