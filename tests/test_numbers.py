"""Numbers as PyTorch's CPU kernels compute them, compared bit for bit.

``linspace`` and ``arange`` round as PyTorch's fused multiply-adds round; ``x ** 2``, ``x ** 3``,
``x ** -1``, ``x ** -2``, ``x ** -0.5`` are computed as PyTorch's pow kernel computes them
(``x * x * x``, ``1 / x``, ``1 / sqrt(x)``), not with ``pow()``; ``x ** 0.5`` is ``sqrt(x)`` in
both, within one unit in the last place (PyTorch's SLEEF square root is not always correctly
rounded). The exact FMA they use (``gradviz._float_kernels``) is checked against exact rational
arithmetic in tests/test_random.py, with no torch.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradviz as gv

RNG = np.random.default_rng(2024)


def _bits(array: np.ndarray) -> np.ndarray:
    return array.view(np.uint32 if array.dtype == np.float32 else np.uint64)


def test_linspace_fills_from_both_ends():
    values = gv.linspace(0.0, 1.0, 5).numpy()
    assert values[0] == 0.0 and values[-1] == 1.0 and values.dtype == np.float32
    assert gv.linspace(2, 2, 1).tolist() == [2.0] and gv.linspace(0, 1, 0).shape == (0,)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


DTYPES = (("float32", np.float32), ("float64", np.float64), ("int64", np.int64), ("int32", np.int32))


def _ranges(count: int):
    for _ in range(count):
        start, end = RNG.uniform(-100, 100, 2) * 10.0 ** RNG.integers(-3, 3)
        yield float(start), float(end), int(RNG.choice([0, 1, 2, 3, 5, 17, 100, 999, 2000, 2001, 4097]))


@pytest.mark.parametrize("dtype_name", [name for name, _ in DTYPES])
def test_linspace_matches_torch_bit_for_bit(dtype_name, torch):
    compared = 0
    for start, end, steps in [(0.0, 1.0, 2000), (-3.3, 7.1, 2000), (0.1, 0.7, 33), (1e-3, 1e3, 1999)] + list(_ranges(150)):
        expected = torch.linspace(start, end, steps, dtype=getattr(torch, dtype_name)).numpy()
        actual = gv.linspace(start, end, steps, dtype=getattr(gv, dtype_name)).numpy()
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, (start, end, steps)
        assert np.array_equal(actual.view(np.uint8), expected.view(np.uint8)), (start, end, steps)
        compared += steps
    assert compared > 100_000


@pytest.mark.parametrize("dtype_name", ("float32", "float64"))
def test_arange_matches_torch_bit_for_bit(dtype_name, torch):
    compared = 0
    for _ in range(150):
        start = float(RNG.uniform(-50, 50))
        step = float(RNG.choice([0.1, 0.01, 0.3, 0.7, 1 / 3, 2.5, -0.1, -0.37, 0.001]))
        end = start + step * float(RNG.integers(0, 3000))
        expected = torch.arange(start, end, step, dtype=getattr(torch, dtype_name)).numpy()
        actual = gv.arange(start, end, step, dtype=getattr(gv, dtype_name)).numpy()
        assert actual.shape == expected.shape, (start, end, step)
        assert np.array_equal(_bits(actual), _bits(expected)), (start, end, step)
        compared += actual.size
    assert compared > 50_000


@pytest.mark.parametrize("args", [(10,), (0, 10, 3), (-5, 7, 3), (10, 0, -3), (0.0, 1.0, 0.1), (0, 1, 0.1),
                                  (1.5, 100.2, 0.7), (-3, 3, 0.01)])
def test_arange_dtype_and_values_match_torch(args, torch):
    expected = torch.arange(*args)
    actual = gv.arange(*args)
    assert repr(actual.dtype) == str(expected.dtype)
    assert np.array_equal(actual.numpy(), expected.numpy())


def _power_inputs(exponent, dtype_name: str) -> np.ndarray:
    values = RNG.uniform(0.01, 10.0, 4000) * RNG.choice([-1.0, 1.0], 4000)
    return (np.abs(values) if exponent in (0.5, -0.5) else values).astype(np.dtype(dtype_name))


@pytest.mark.parametrize("exponent", (2, 3, -1, -2, -0.5, 1, 0, 2.0, 3.0))
@pytest.mark.parametrize("dtype_name", ("float32", "float64"))
def test_powers_match_torch_bit_for_bit(exponent, dtype_name, torch):
    data = _power_inputs(exponent, dtype_name)
    expected = (torch.tensor(data) ** exponent).numpy()
    actual = (gv.tensor(data) ** exponent).numpy()
    assert np.array_equal(_bits(actual), _bits(expected))


@pytest.mark.parametrize("dtype_name", ("float32", "float64"))
def test_square_root_power_is_sqrt_within_one_ulp_of_torch(dtype_name, torch):
    """``x ** 0.5`` is ``sqrt(x)`` in both; PyTorch's sqrt (SLEEF) is not always correctly rounded."""
    data = _power_inputs(0.5, dtype_name)
    actual = (gv.tensor(data) ** 0.5).numpy()
    assert np.array_equal(_bits(actual), _bits(gv.tensor(data).sqrt().numpy()))
    np.testing.assert_array_max_ulp(actual, (torch.tensor(data) ** 0.5).numpy(), maxulp=1)


@pytest.mark.parametrize("exponent", (2, 3))
def test_power_gradients_match_torch_bit_for_bit(exponent, torch):
    data = (RNG.uniform(0.01, 10.0, 2000) * RNG.choice([-1.0, 1.0], 2000)).astype(np.float32)
    x_t, x_g = torch.tensor(data, requires_grad=True), gv.tensor(data, requires_grad=True)
    (x_t ** exponent).sum().backward()
    (x_g ** exponent).sum().backward()
    assert np.array_equal(_bits(x_g.grad.numpy()), _bits(x_t.grad.numpy()))


def test_integer_powers_match_torch(torch):
    data = np.arange(-20, 20)
    for exponent in (0, 1, 2, 3, 5):
        assert np.array_equal((gv.tensor(data) ** exponent).numpy(), (torch.tensor(data) ** exponent).numpy())
