"""``torch.special``'s Bessel functions and orthogonal polynomials against PyTorch 2.13 (and, for the
Bessel functions, against mpmath's arbitrary-precision values).

PyTorch records no node for any of them: the result never requires grad. gradviz's Bessel functions are
the true values to float64's precision (checked against mpmath to 1e-13); PyTorch's own float64 J and Y
are off by up to ~1e-6 between x = 5 and x = 25, so the comparison with torch allows that much. The
polynomials follow PyTorch's recurrences and special cases in the input's precision.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error  # noqa: E402

BESSEL = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
          "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"]
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
               "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]
GRID = [-30.0, -7.3, -1.0, -0.2, 0.0, 1e-6, 0.3, 1.0, 2.404825557695773, 4.9, 5.1, 10.0, 24.9, 25.1, 40.0, 100.0,
        math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_functions_match_torch(name):
    expected = getattr(torch.special, name)(torch.tensor(GRID, dtype=torch.float64)).numpy()
    actual = getattr(gv.special, name)(gv.tensor(GRID, dtype=gv.float64)).numpy()
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6, equal_nan=True)
    expected32 = getattr(torch.special, name)(torch.tensor(GRID)).numpy()
    actual32 = getattr(gv.special, name)(gv.tensor(GRID)).numpy()
    assert actual32.dtype == np.float32
    np.testing.assert_allclose(actual32, expected32, rtol=1e-5, atol=2e-6, equal_nan=True)


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_functions_are_true_to_float64(name):
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    exact = {"bessel_j0": lambda x: mpmath.besselj(0, x), "bessel_j1": lambda x: mpmath.besselj(1, x),
             "bessel_y0": lambda x: mpmath.bessely(0, x), "bessel_y1": lambda x: mpmath.bessely(1, x),
             "modified_bessel_i0": lambda x: mpmath.besseli(0, x), "modified_bessel_i1": lambda x: mpmath.besseli(1, x),
             "modified_bessel_k0": lambda x: mpmath.besselk(0, x), "modified_bessel_k1": lambda x: mpmath.besselk(1, x),
             "scaled_modified_bessel_k0": lambda x: mpmath.besselk(0, x) * mpmath.exp(x),
             "scaled_modified_bessel_k1": lambda x: mpmath.besselk(1, x) * mpmath.exp(x)}[name]
    points = [0.01, 0.3, 1.0, 3.7, 4.9, 5.1, 7.3, 10.0, 17.5, 24.9, 25.1, 40.0, 100.0]
    if not name.startswith(("bessel_y", "modified_bessel_k", "scaled")):
        points += [-0.3, -7.3, -40.0]
    actual = getattr(gv.special, name)(gv.tensor(points, dtype=gv.float64)).numpy()
    for x, value in zip(points, actual):
        truth = float(exact(mpmath.mpf(x)))
        # relative to the function's scale near x: J and Y oscillate through zeros
        scale = max(abs(truth), 1e-3 if name.startswith("bessel") else 0.0)
        assert abs(value - truth) <= 1e-13 * scale + 1e-300, (x, value, truth)


CODE_NO_GRAD = ("x = torch.tensor([0.5, 1.5, 3.0], requires_grad=True)\n"
                "ys = [torch.special.{name}(x)]\nprint(ys[0].requires_grad, ys[0].grad_fn)\n")


@pytest.mark.parametrize("name", ["bessel_j0", "modified_bessel_k1", "scaled_modified_bessel_k0"])
def test_no_node_and_backward_refused_as_in_torch(name):
    assert_same(CODE_NO_GRAD.format(name=name))
    assert_same_error(CODE_NO_GRAD.format(name=name) + "ys[0].sum().backward()\n")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_int_input_gives_float32(backend):
    assert_same("y = torch.special.bessel_j0(torch.tensor([1, 2]))\nz = torch.special.modified_bessel_i1(torch.tensor([3]))\n"
                "print(y, z)\n", backend=backend)


POINTS = [-1.5, -1.0, -0.7, 0.0, 0.3, 0.99, 1.0, 2.5]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_torch_in_float64(name):
    for n in (-1, 0, 1, 2, 3, 5, 7, 9, 12, 30, 200, 600):
        expected = getattr(torch.special, name)(torch.tensor(POINTS, dtype=torch.float64), n).numpy()
        actual = getattr(gv.special, name)(gv.tensor(POINTS, dtype=gv.float64), n).numpy()
        np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=f"n = {n}")


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_torch_in_float32(name):
    """In float32 the recurrences overflow to inf (and inf - inf to NaN) where PyTorch's do."""
    for n in (-1, 0, 1, 2, 3, 5, 7, 9, 12, 30, 130, 600):
        expected = getattr(torch.special, name)(torch.tensor(POINTS), n).numpy()
        actual = getattr(gv.special, name)(gv.tensor(POINTS), n).numpy()
        assert actual.dtype == np.float32
        finite = np.isfinite(expected)
        np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected), err_msg=f"n = {n}")
        np.testing.assert_array_equal(actual[np.isinf(expected)], expected[np.isinf(expected)])
        if n <= 30:  # beyond, float32's cos(n·acos x) differs between libms in the last digits that matter
            np.testing.assert_allclose(actual[finite], expected[finite], rtol=1e-4, atol=1e-5, err_msg=f"n = {n}")


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_at_nan(name):
    """Degrees below 0 give 0, degree 0 gives 1 even at NaN. (From degree 2 on, PyTorch's kernels return an
    uninitialized value at NaN: whatever the previous element left, so there is nothing to compare.)"""
    for n in (-1, 0, 1):
        expected = getattr(torch.special, name)(torch.tensor([math.nan], dtype=torch.float64), n).numpy()
        actual = getattr(gv.special, name)(gv.tensor([math.nan], dtype=gv.float64), n).numpy()
        np.testing.assert_array_equal(actual, expected, err_msg=f"n = {n}")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_forms_match_torch(name, backend):
    """A tensor of degrees (floats are truncated, negatives give 0), a number x, integer tensors."""
    assert_same(f"x = torch.tensor([0.5, -0.25, 2.0], requires_grad=True)\n"
                f"y = torch.special.{name}(x, torch.tensor([2.5, -1.0, 4.0]))\n"
                f"z = torch.special.{name}(0.5, torch.tensor([2, 3, 4]))\n"
                f"w = torch.special.{name}(torch.tensor([1, 2]), 3)\n"
                f"v = torch.special.{name}(torch.tensor([0.5], dtype=torch.float64), torch.tensor([3.0]))\n"
                "print(y, z, w, v, y.requires_grad)\n", backend=backend)


@pytest.mark.parametrize("name", POLYNOMIALS[:2])
def test_polynomials_refuse_two_numbers(name):
    assert_same_error(f"torch.special.{name}(0.5, 3)\n")
