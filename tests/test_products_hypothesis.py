"""Random shapes and indices for products, einsum, scatter_reduce and padding, each run in PyTorch 2.13 and in gradviz
(``assert_same``: values, grads, the whole graph with its saved values)."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from parity import assert_same  # noqa: E402

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
sizes = st.integers(1, 4)


def leaf(name: str, shape, seed: int) -> str:
    count = 1
    for size in shape:
        count *= size
    return (f"{name} = ((torch.arange({count}, dtype=torch.float64) * {0.37 + seed / 97:.4f}) % 2.1 - 1.0)"
            f".reshape({list(shape)}).requires_grad_()\n")


def weighted(expression: str) -> str:
    return (f"y = {expression}\n(y * torch.arange(1.0, y.numel() + 1.0, dtype=torch.float64).reshape(y.shape))"
            ".sum().backward()\n")


@SETTINGS
@given(st.lists(sizes, min_size=1, max_size=3), st.lists(sizes, min_size=0, max_size=2),
       st.lists(sizes, min_size=0, max_size=2), st.booleans(), st.integers(0, 50))
def test_tensordot_and_einsum_of_random_shapes(summed, free_a, free_b, permute_b, seed):
    shape_a = free_a + summed
    shape_b = (list(reversed(summed)) if permute_b else summed) + free_b
    k = len(summed)
    dims_b = list(reversed(range(k))) if permute_b else list(range(k))
    dims = f"({list(range(len(free_a), len(free_a) + k))}, {dims_b})"
    code = leaf("a", shape_a, seed) + leaf("b", shape_b, seed + 1) + weighted(f"torch.tensordot(a, b, dims={dims})")
    letters = "ijkl"[:len(free_a)]
    sum_letters = "pqr"[:k]
    other = "uv"[:len(free_b)]
    equation = (f"...{letters}{sum_letters},{sum_letters[::-1] if permute_b else sum_letters}{other}"
                f"->...{letters}{other}")
    if 1 not in free_a + free_b:  # size-1 output dims: torch sometimes swaps the operands of bmm (not yet followed)
        code += "y1 = torch.einsum('" + equation + "', a, b)\n"
    assert_same(code)


@SETTINGS
@given(st.lists(sizes, min_size=1, max_size=3), st.lists(sizes, min_size=1, max_size=3), st.integers(0, 50))
def test_kron_of_random_shapes(shape_a, shape_b, seed):
    assert_same(leaf("a", shape_a, seed) + leaf("b", shape_b, seed + 2) + weighted("torch.kron(a, b)"))


@SETTINGS
@given(st.sampled_from(["sum", "prod", "mean", "amax", "amin"]), st.booleans(), st.integers(1, 4), st.integers(1, 5),
       st.data())
def test_scatter_reduce_of_random_indices(reduce, include_self, rows, width, data):
    index = [[data.draw(st.integers(0, width - 1)) for _ in range(data.draw(st.integers(1, 5)))] for _ in range(rows)]
    length = min(len(row) for row in index)
    index = [row[:length] for row in index]
    seed = data.draw(st.integers(0, 50))
    code = (leaf("x", (rows, width), seed) + leaf("s", (rows, length), seed + 3) + f"i = torch.tensor({index})\n"
            + weighted(f"x.scatter_reduce(1, i, s, {reduce!r}, include_self={include_self})"))
    assert_same(code)


@SETTINGS
@given(st.sampled_from(["reflect", "replicate", "circular"]), st.integers(1, 3), st.integers(2, 5), st.data())
def test_padding_of_random_sizes(mode, dims, size, data):
    shape = [1, 2] + [size] * dims
    pad = []
    for _ in range(dims):
        limit = size - 1 if mode == "reflect" else size
        # circular padding that crops one end and wraps the other further than what is left is an
        # overlapping copy whose result depends on torch's copy order: not drawn
        lowest = 0 if mode == "circular" else -1
        pad += [data.draw(st.integers(lowest, limit)), data.draw(st.integers(0, limit))]
    assert_same(leaf("x", shape, size) + weighted(f"F.pad(x, {tuple(pad)}, mode={mode!r})"))
