"""``torch.special``'s Bessel functions and orthogonal polynomials: ``bessel_j0/j1/y0/y1``,
``modified_bessel_i0/i1/k0/k1``, ``scaled_modified_bessel_k0/k1`` and ``chebyshev_polynomial_t/u/v/w``,
``hermite_polynomial_h/he``, ``laguerre_polynomial_l``, ``legendre_polynomial_p``.

PyTorch declares no derivative for any of them and records nothing: the result never requires grad,
even when the input does (so ``y.sum().backward()`` raises "element 0 of tensors does not require
grad").

The Bessel functions are computed in float64 one element at a time and cast to the input's float dtype:
by their power series (summed in 60-digit decimals, so the cancellation of the alternating terms costs
no digits) up to x = 25, and past it by Hankel's asymptotic expansion. These are the true values to
float64's precision; PyTorch's own float64 J and Y are off by up to ~1e-6 between x = 5 and x = 25
(``tests/test_more_ops_special.py`` shows both against mpmath). The polynomials run their three-term
recurrences in the input's precision (float32 overflows where PyTorch's does), with PyTorch's special
cases (n < 0, |x| = 1, and the trigonometric forms of the Chebyshev polynomials for large n).
"""
from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np

from gradviz import _dtype
from gradviz.tensor import Tensor

PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
EULER_GAMMA = Decimal("0.57721566490153286060651209008240243104215933593992359880576723")
SERIES_LIMIT = 25.0  # past it, the asymptotic expansion's smallest term is far below float64's precision


# -- the Bessel functions ---------------------------------------------------------------------------------
def _series(x: float, order: int, kind: str) -> float:
    """J, Y (``kind`` "j"/"y": alternating) or I, K ("i"/"k") of order 0 or 1 from their power series:
    ``Σ s^k (x/2)^(2k+n) / (k! (k+n)!)`` with s = -1 for J and +1 for I; Y and K add the logarithmic
    term and the digamma-weighted series (Abramowitz & Stegun 9.1.11 and 9.6.11)."""
    with localcontext() as context:
        context.prec = 60
        half = Decimal(x) / 2
        quarter = half * half
        sign = -1 if kind in "jy" else 1
        plain = weighted = Decimal(0)
        term = Decimal(1) if order == 0 else half  # (x/2)^(2k+n) / (k! (k+n)!)
        harmonic = Decimal(0)  # H_k, so ψ(k+1) = H_k - γ
        harmonic_next = Decimal(0) if order == 0 else Decimal(1)  # H_(k+n)
        k = 0
        while True:
            plain += term
            weighted += term * (harmonic + harmonic_next - 2 * EULER_GAMMA)
            k += 1
            term = term * quarter * sign / (k * (k + order))
            harmonic += Decimal(1) / k
            harmonic_next += Decimal(1) / (k + order)
            if k > x and abs(term) < Decimal("1e-40") * (abs(plain) + 1):
                break
        if kind in "ji":
            return float(plain)
        log_half = half.ln()
        if kind == "y":  # (2/π) ln(x/2) J_n - (1/π) Σ (ψ(k+1) + ψ(k+n+1)) (-1)^k ... - [n = 1] 2/(πx)
            value = 2 * log_half * plain / PI - weighted / PI
            return float(value - (2 / (PI * Decimal(x)) if order else 0))
        if order == 0:  # K₀ = -ln(x/2) I₀ + ½ Σ 2ψ(k+1) (x/2)^2k / k!²
            return float(-log_half * plain + weighted / 2)
        return float(1 / Decimal(x) + log_half * plain - weighted / 2)  # K₁


def _hankel(x: float, order: int, kind: str) -> float:
    """Large x: J, Y from ``√(2/(πx)) (P cos χ ∓ Q sin χ)``, χ = x - (n/2 + 1/4)π, and K from
    ``√(π/(2x)) e^(-x) Σ a_k / x^k``, with ``a_k = Π (4n² - (2j-1)²) / (k! 8^k)``."""
    mu = 4.0 * order * order
    terms, term, k = [1.0], 1.0, 0
    while True:
        k += 1
        following = term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        if abs(following) >= abs(term) or abs(following) < 1e-18:
            break
        terms.append(following)
        term = following
    if kind == "k":
        return math.sqrt(math.pi / (2 * x)) * math.exp(-x) * math.fsum(terms)
    p = math.fsum(t * (-1) ** (i // 2) for i, t in enumerate(terms) if i % 2 == 0)
    q = math.fsum(t * (-1) ** (i // 2) for i, t in enumerate(terms) if i % 2 == 1)
    chi = x - (order / 2 + 0.25) * math.pi
    scale = math.sqrt(2 / (math.pi * x))
    if kind == "j":
        return scale * (p * math.cos(chi) - q * math.sin(chi))
    return scale * (p * math.sin(chi) + q * math.cos(chi))


def _bessel(kind: str, order: int, scaled: bool = False):
    """The float function for one Bessel function, with its values at 0, ±∞, NaN and below 0."""

    def function(x: float) -> float:
        if math.isnan(x):
            return x
        if kind == "j":
            if order == 1 and x < 0:
                return -function(-x)
            x = abs(x)
            if math.isinf(x):
                return math.nan  # PyTorch's: its large-x form takes the cosine of infinity
            return _series(x, order, "j") if x <= SERIES_LIMIT else _hankel(x, order, "j")
        if kind == "i":
            return math.nan if math.isinf(x) else _series(x, order, "i")  # NaN at ±inf, as PyTorch's
        if x < 0:
            return math.nan
        if x == 0:
            return -math.inf if kind == "y" else math.inf
        if math.isinf(x):
            return math.nan if kind == "y" else 0.0
        if kind == "y":
            return _series(x, order, "y") if x <= SERIES_LIMIT else _hankel(x, order, "y")
        if x <= SERIES_LIMIT:
            value = _series(x, order, "k")
            return value * math.exp(x) if scaled else value
        value = _hankel(x, order, "k")
        return value * math.exp(x) if scaled else value

    return function


def _unary(function, input) -> Tensor:
    """``function`` of each element, in the input's float dtype (int inputs: the default float); no node."""
    if not isinstance(input, Tensor):
        raise TypeError(f"argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    backend = input._backend
    values = np.asarray(backend.to_numpy(input._data), dtype=np.float64)
    out = np.array([function(v) for v in values.reshape(-1).tolist()], dtype=np.float64).reshape(values.shape)
    dtype = input.dtype if input.dtype.is_floating_point else _dtype.default_float
    return Tensor._make(backend.array(out, dtype, backend.device_of(input._data)), backend=backend)


def bessel_j0(input):
    """The Bessel function of the first kind of order 0."""
    return _unary(_bessel("j", 0), input)


def bessel_j1(input):
    """The Bessel function of the first kind of order 1."""
    return _unary(_bessel("j", 1), input)


def bessel_y0(input):
    """The Bessel function of the second kind of order 0 (NaN below 0, -inf at 0)."""
    return _unary(_bessel("y", 0), input)


def bessel_y1(input):
    """The Bessel function of the second kind of order 1 (NaN below 0, -inf at 0)."""
    return _unary(_bessel("y", 1), input)


def modified_bessel_i0(input):
    """The modified Bessel function of the first kind of order 0."""
    return _unary(_bessel("i", 0), input)


def modified_bessel_i1(input):
    """The modified Bessel function of the first kind of order 1."""
    return _unary(_bessel("i", 1), input)


def modified_bessel_k0(input):
    """The modified Bessel function of the second kind of order 0 (NaN below 0, inf at 0)."""
    return _unary(_bessel("k", 0), input)


def modified_bessel_k1(input):
    """The modified Bessel function of the second kind of order 1 (NaN below 0, inf at 0)."""
    return _unary(_bessel("k", 1), input)


def scaled_modified_bessel_k0(input):
    """``e^x K₀(x)``."""
    return _unary(_bessel("k", 0, scaled=True), input)


def scaled_modified_bessel_k1(input):
    """``e^x K₁(x)``."""
    return _unary(_bessel("k", 1, scaled=True), input)


# -- the orthogonal polynomials ---------------------------------------------------------------------------
def _recurrence(first, second, step, n: int, x: float) -> float:
    """``p₀ = first``, ``p₁ = second(x)``, ``p_(k+1) = step(k, x, p_k, p_(k-1))``."""
    if n == 0:
        return first
    previous, current = first, second(x)
    for k in range(1, n):
        if np.isnan(current):
            break
        previous, current = current, step(k, x, current, previous)
    return current


def _chebyshev(kind: str, x, n: int):
    """T, U, V, W: ``p_(k+1) = 2x p_k - p_(k-1)``, from 1 and x, 2x, 2x - 1, 2x + 1; at |x| = 1 their
    closed values, and for large n inside (-1, 1) their trigonometric forms in θ = acos x."""
    one = type(x)(1)
    if abs(x) == 1:
        parity = 1 if n % 2 == 0 else -1
        if kind == "t":
            return one if x > 0 else one * parity
        if kind == "u":
            return one * (n + 1) if x > 0 else one * (parity * (n + 1))
        if kind == "v":
            return one if x > 0 else one * (parity * (2 * n + 1))
        return one * (2 * n + 1) if x > 0 else one * parity
    if abs(x) < 1 and n > (6 if kind == "t" else 8):
        theta = np.arccos(x)
        if kind == "t":
            return np.cos(n * theta)
        if kind == "u":
            if np.sin(theta) != 0:
                return np.sin((n + 1) * theta) / np.sin(theta)
            return (n + 1) * np.cos((n + 1) * theta) / x
        if kind == "v":
            if np.sin(theta / 2) != 1:
                return np.cos((n + one / 2) * theta) / np.cos(theta / 2)
            return one * (2 * n + 1) if n % 2 == 0 else -one * (2 * n + 1)
        if np.cos(theta / 2) != 1:
            return np.sin((n + one / 2) * theta) / np.sin(theta / 2)
        return one * (2 * n + 1) if x > 0 else (one if n % 2 == 0 else -one)
    second = {"t": lambda v: v, "u": lambda v: 2 * v, "v": lambda v: 2 * v - 1, "w": lambda v: 2 * v + 1}[kind]
    return _recurrence(one, second, lambda k, v, p, q: 2 * v * p - q, n, x)


def _polynomial(kind: str, x, n: int, limit: int):
    """The polynomial at ``x`` (a numpy float32 or float64: the recurrence runs in the tensor's precision,
    as PyTorch's does, so float32 overflows where PyTorch's does)."""
    one = type(x)(1)
    if n < 0:
        return 0 * one
    if kind in "tuvw":
        return _chebyshev(kind, x, n)
    if kind == "h":  # H_(k+1) = 2x H_k - 2k H_(k-1)
        return np.nan * one if n > limit else _recurrence(one, lambda v: 2 * v, lambda k, v, p, q: 2 * v * p - 2 * k * q, n, x)
    if kind == "he":  # He_(k+1) = x He_k - k He_(k-1)
        return np.nan * one if n > limit else _recurrence(one, lambda v: v, lambda k, v, p, q: v * p - k * q, n, x)
    if kind == "l":  # (k+1) L_(k+1) = (2k + 1 - x) L_k - k L_(k-1)
        if x == 0:
            return one
        return _recurrence(one, lambda v: 1 - v, lambda k, v, p, q: ((2 * k + 1 - v) * p - k * q) / (k + 1), n, x)
    if abs(x) == 1:  # Legendre: P_n(1) = 1, P_n(-1) = (-1)^n
        return one if x > 0 or n % 2 == 0 else -one
    return _recurrence(one, lambda v: v, lambda k, v, p, q: ((2 * k + 1) * v * p - k * q) / (k + 1), n, x)


def _polynomial_function(kind: str, name: str):
    def function(input, n, *, out=None):
        if out is not None:
            raise NotImplementedError(f"gradviz's {name} has no out= argument: use the returned tensor")
        x_is, n_is = isinstance(input, Tensor), isinstance(n, Tensor)
        numbers = (int, float, bool)
        if not (x_is or n_is) or not (x_is or isinstance(input, numbers)) or not (n_is or isinstance(n, numbers)):
            raise TypeError(
                f"special_{name}() received an invalid combination of arguments - got ({type(input).__name__}, "
                f"{type(n).__name__}), but expected one of:\n * (Tensor x, Tensor n, *, Tensor out = None)\n"
                " * (Number x, Tensor n, *, Tensor out = None)\n * (Tensor x, Number n, *, Tensor out = None)\n")
        like = input if x_is else n
        backend = like._backend
        dtype = _dtype.result_type(tuple(v for v in (input, n) if isinstance(v, Tensor)),
                                   tuple(v for v in (input, n) if not isinstance(v, Tensor)))
        if not dtype.is_floating_point:
            dtype = _dtype.default_float
        xs = np.asarray(backend.to_numpy(input._data) if x_is else input, dtype=np.float64)
        ns = np.asarray(backend.to_numpy(n._data) if n_is else n, dtype=np.float64)
        xs, ns = np.broadcast_arrays(xs, ns)
        limit, real = (512, np.float64) if dtype is _dtype.float64 else (128, np.float32)
        with np.errstate(all="ignore"):
            out_values = np.array([_polynomial(kind, real(x), int(k) if math.isfinite(k) else -1, limit)
                                   for x, k in zip(xs.reshape(-1).tolist(), ns.reshape(-1).tolist())],
                                  dtype=np.float64).reshape(xs.shape)
        return Tensor._make(backend.array(out_values, dtype, backend.device_of(like._data)), backend=backend)

    function.__name__ = name
    function.__doc__ = f"``{name}(x, n)``: the polynomial of degree n (truncated to an integer) at x; no node."
    return function


chebyshev_polynomial_t = _polynomial_function("t", "chebyshev_polynomial_t")
chebyshev_polynomial_u = _polynomial_function("u", "chebyshev_polynomial_u")
chebyshev_polynomial_v = _polynomial_function("v", "chebyshev_polynomial_v")
chebyshev_polynomial_w = _polynomial_function("w", "chebyshev_polynomial_w")
hermite_polynomial_h = _polynomial_function("h", "hermite_polynomial_h")
hermite_polynomial_he = _polynomial_function("he", "hermite_polynomial_he")
laguerre_polynomial_l = _polynomial_function("l", "laguerre_polynomial_l")
legendre_polynomial_p = _polynomial_function("p", "legendre_polynomial_p")

__all__ = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
           "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]
