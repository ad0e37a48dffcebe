"""gradviz._printing against torch itself: the same numbers through both, then compare text.

Every expected string comes from torch 2.13 at test time (or, for the tutorial
cases, is also checked against the text a tutorial printed); none is remembered.
Tests that compare with torch take the ``torch`` fixture; the tutorial texts are also checked
against gradviz alone, so printing is tested in the torch-blocked pass too.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import gradviz as gv

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gradviz import _printing as printing  # noqa: E402

FLOAT_DTYPES = ("float32", "float64", "float16")
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)

VALUE_KINDS = (
    "normal",
    "small",
    "large",
    "huge",
    "mixed",
    "integer-valued",
    "specials",
    "zeros",
    "narrow",
)

property_settings = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],  # `torch` is a module
)


def ours(values: np.ndarray, **state) -> str:
    """gradviz's repr of a numpy array, its dtype named as torch names it."""
    return printing.tensor_repr(values, dtype=str(values.dtype), **state)


def theirs(values: np.ndarray) -> str:
    """torch's repr of the same numbers (for tests that took the ``torch`` fixture)."""
    import torch

    return repr(torch.from_numpy(values))


def both_printoptions(options: dict):
    """Apply the same print options to gradviz and, once a test has loaded it, torch."""
    printing.set_printoptions(**options)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_printoptions(**options)


@pytest.fixture(autouse=True)
def default_printoptions():
    """Every test starts and ends with torch's and gradviz's default options."""
    both_printoptions({"profile": "default"})
    yield
    both_printoptions({"profile": "default"})


def float_values(rng: np.random.Generator, kind: str, size: int) -> np.ndarray:
    """Float64 numbers of one magnitude family, to push the formatter into each mode."""
    if kind == "normal":
        return rng.standard_normal(size)
    if kind == "small":
        return rng.standard_normal(size) * 10.0 ** rng.integers(-9, -3)
    if kind == "large":
        return rng.standard_normal(size) * 10.0 ** rng.integers(3, 8)
    if kind == "huge":
        return rng.standard_normal(size) * 10.0 ** rng.integers(8, 30)
    if kind == "mixed":
        return rng.standard_normal(size) * 10.0 ** rng.integers(-8, 9, size)
    if kind == "integer-valued":
        return rng.integers(-(10 ** int(rng.integers(1, 10))), 10**5, size).astype(float)
    if kind == "specials":
        pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 1e-5, 123456.0])
        return rng.choice(pool, size)
    if kind == "zeros":
        return np.zeros(size) * rng.choice([1.0, -1.0], size)
    return 1000.0 + rng.random(size) * 1e-3


def make_array(seed: int, shape: tuple[int, ...], dtype: str, kind: str) -> np.ndarray:
    """A reproducible array: hypothesis picks the recipe, numpy draws the numbers."""
    rng = np.random.default_rng(seed)
    size = math.prod(shape)
    if dtype == "bool":
        return (rng.random(size) < rng.random()).reshape(shape)
    if dtype in INT_DTYPES:
        info = np.iinfo(dtype)
        low = max(int(info.min), -(10 ** int(rng.integers(1, 19))))
        high = min(int(info.max), 10 ** int(rng.integers(1, 19)))
        return rng.integers(low, high, size, dtype=dtype, endpoint=True).reshape(shape)
    with np.errstate(over="ignore"):
        return float_values(rng, kind, size).astype(dtype).reshape(shape)


small_shapes = st.lists(st.integers(0, 7), min_size=0, max_size=4).map(tuple)
threshold_shapes = st.sampled_from(
    [(999,), (1000,), (1001,), (1500,), (2, 501), (1001, 1), (1, 1001), (10, 10, 11),
     (11, 10, 10), (3, 4, 5, 17), (7, 7, 7, 7), (0, 1500)]
)
printoption_sets = st.fixed_dictionaries(
    {},
    optional={
        "profile": st.sampled_from(["default", "short", "full"]),
        "precision": st.integers(0, 10),
        "threshold": st.integers(0, 1200),
        "edgeitems": st.integers(0, 5),
        "linewidth": st.integers(10, 160),
        "sci_mode": st.sampled_from([None, True, False]),
    },
)


@property_settings
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=small_shapes,
    dtype=st.sampled_from(ALL_DTYPES),
    kind=st.sampled_from(VALUE_KINDS),
)
def test_small_arrays_match_torch(seed, shape, dtype, kind, torch):
    values = make_array(seed, shape, dtype, kind)
    assert ours(values) == theirs(values)


@property_settings
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=threshold_shapes,
    dtype=st.sampled_from(ALL_DTYPES),
    kind=st.sampled_from(VALUE_KINDS),
)
def test_summarization_around_threshold_matches_torch(seed, shape, dtype, kind, torch):
    values = make_array(seed, shape, dtype, kind)
    assert ours(values) == theirs(values)


@property_settings
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.one_of(small_shapes, threshold_shapes),
    dtype=st.sampled_from(ALL_DTYPES),
    kind=st.sampled_from(VALUE_KINDS),
    options=printoption_sets,
)
def test_printoptions_match_torch(seed, shape, dtype, kind, options, torch):
    values = make_array(seed, shape, dtype, kind)
    try:
        both_printoptions(options)
        assert printing.get_printoptions() == torch._tensor_str.get_printoptions()
        assert ours(values) == theirs(values)
    finally:
        both_printoptions({"profile": "default"})


@property_settings
@given(
    values=st.lists(
        st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=0, max_size=30
    ),
    rows=st.sampled_from([1, 2, 3]),
)
def test_arbitrary_float32_values_match_torch(values, rows, torch):
    array = np.array(values, dtype=np.float32)
    array = array[: len(array) // rows * rows].reshape(rows, -1)
    assert ours(array) == theirs(array)
    assert ours(array[0]) == theirs(array[0])


@property_settings
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=small_shapes,
    dtype=st.sampled_from(FLOAT_DTYPES),
    kind=st.sampled_from(VALUE_KINDS),
    linewidth=st.integers(20, 120),
)
def test_autograd_suffixes_match_torch(seed, shape, dtype, kind, linewidth, torch):
    values = make_array(seed, shape, dtype, kind)
    try:
        both_printoptions({"linewidth": linewidth})
        leaf = torch.from_numpy(values.copy()).requires_grad_()
        assert ours(values, requires_grad=True) == repr(leaf)
        assert ours(values, requires_grad=True, grad_fn_name="MulBackward0", is_leaf=False) == (
            repr(leaf * 1)
        )
        assert ours(values, grad_fn_name="CloneBackward0") == repr(leaf.clone())
    finally:
        both_printoptions({"profile": "default"})


@property_settings
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=small_shapes,
    dtype=st.sampled_from(ALL_DTYPES),
    kind=st.sampled_from(VALUE_KINDS),
    requires_grad=st.booleans(),
)
def test_device_suffix_is_placed_as_torch_places_it(seed, shape, dtype, kind, requires_grad, torch):
    """No CUDA here: torch's own body and suffix layout, given the suffixes a CUDA tensor gets."""
    values = make_array(seed, shape, dtype, kind)
    requires_grad = requires_grad and dtype in FLOAT_DTYPES
    tensor = torch.from_numpy(values)
    suffixes = ["device='cuda:0'"]
    if values.size == 0 and values.ndim != 1:
        suffixes.append(f"size={tuple(values.shape)}")
    if dtype not in ("float32", "int64", "bool") or (values.size == 0 and dtype != "float32"):
        suffixes.append(f"dtype={tensor.dtype}")
    if requires_grad:
        suffixes.append("requires_grad=True")
    body = "tensor(" + torch._tensor_str._tensor_str(tensor, len("tensor("))
    expected = torch._tensor_str._add_suffixes(body, suffixes, len("tensor("), False)
    assert ours(values, device="cuda", requires_grad=requires_grad) == expected
    assert ours(values, device="cuda:0", requires_grad=requires_grad) == expected


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0), (3, 0, 2), (0, 0, 0, 0)])
def test_empty_tensors_match_torch(dtype, shape, torch):
    values = np.zeros(shape, dtype=dtype)
    assert ours(values) == theirs(values)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_empty_tensor_with_requires_grad_matches_torch(dtype, torch):
    values = np.zeros((0, 4), dtype=dtype)
    leaf = torch.from_numpy(values).requires_grad_()
    assert ours(values, requires_grad=True) == repr(leaf)
    assert ours(values, grad_fn_name="MulBackward0") == repr(leaf * 1)


@pytest.mark.parametrize(
    "value",
    [0.0, -0.0, 3.0, -3.0, 6.7924, 1e-5, 1e9, 123456789.0, np.nan, np.inf, -np.inf, 0.5],
)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_zero_dim_floats_match_torch(value, dtype, torch):
    with np.errstate(over="ignore"):
        values = np.array(value, dtype=dtype)
    assert ours(values) == theirs(values)


@pytest.mark.parametrize(
    ("value", "dtype"),
    [(True, "bool"), (False, "bool"), (0, "uint8"), (255, "uint8"), (-128, "int8"),
     (2**63 - 1, "int64"), (-(2**63), "int64"), (-7, "int32")],
)
def test_zero_dim_ints_and_bools_match_torch(value, dtype, torch):
    values = np.array(value, dtype=dtype)
    assert ours(values) == theirs(values)


@pytest.mark.parametrize(
    "values",
    [
        [1.0, 2.0],
        [-0.0, 1.0],
        [-0.0, 0.0],
        [np.nan, 1.0, 2.0],
        [np.nan, np.inf],
        [1e-4, 1.0],
        [9.9e-5, 1.0],
        [1.0, 1000.0],
        [1.0, 1000.5],
        [1e8, 1.0],
        [1.5e8, 2e8],
        [0.1, 100.0],
        [1234567.0, 0.5],
        [0.00015, 0.15],
        [-1e-10, 5.0, np.nan],
    ],
)
def test_mode_boundaries_match_torch(values, torch):
    for dtype in ("float32", "float64"):
        array = np.array(values, dtype=dtype)
        assert ours(array) == theirs(array)


def test_long_rows_wrap_and_align_like_torch(torch):
    values = np.arange(-60, 60, dtype=np.float64).reshape(2, 3, 20) / 7
    assert ours(values) == theirs(values)
    values = np.arange(200, dtype=np.int64).reshape(2, 100) * 12345
    assert ours(values) == theirs(values)


def test_tutorial_scalar_gradient(torch):
    """tensor(6.7924): x.grad of z = sin(2 x cos(x)^2) at x = 4, from a tutorial."""
    x = torch.tensor(4.0, requires_grad=True)
    torch.sin(2 * x * torch.cos(x) ** 2).backward()
    grad = x.grad.numpy()
    assert ours(grad) == repr(x.grad) == "tensor(6.7924)"


def test_tutorial_matrix_gradient(torch):
    """x.grad of (x**2).mean() for a 2x3 x, as a tutorial printed it."""
    x = torch.tensor([[1.0, 2.0, 3.0], [2.5, 9.8, 5.7]], requires_grad=True)
    (x**2).mean().backward()
    expected = "tensor([[0.3333, 0.6667, 1.0000],\n        [0.8333, 3.2667, 1.9000]])"
    assert ours(x.grad.numpy()) == repr(x.grad) == expected
    leaf_text = ours(x.detach().numpy(), requires_grad=True)
    assert leaf_text == repr(x)


def test_tutorial_scalars_with_autograd_and_device(torch):
    x = torch.tensor(3.0, requires_grad=True)
    three = np.array(3.0, dtype=np.float32)
    assert ours(three) == repr(x.detach()) == "tensor(3.)"
    assert ours(three, requires_grad=True) == repr(x)
    assert ours(three, device="cuda", requires_grad=True) == (
        "tensor(3., device='cuda:0', requires_grad=True)"
    )
    nine = np.array(9.0, dtype=np.float32)
    assert ours(nine, device="cuda:0", grad_fn_name="PowBackward0") == (
        "tensor(9., device='cuda:0', grad_fn=<PowBackward0>)"
    )


def test_tutorial_texts_from_gradviz_alone():
    """The seed tutorial's printed values, computed and printed by gradviz with no torch present."""
    x = gv.tensor(4.0, requires_grad=True)
    y = 2 * x * (gv.cos(x) ** 2)
    z = gv.sin(y)
    assert (repr(x), repr(y), repr(z)) == ("tensor(4., requires_grad=True)", "tensor(3.4180, grad_fn=<MulBackward0>)",
                                           "tensor(-0.2729, grad_fn=<SinBackward0>)")
    z.backward()
    assert repr(x.grad) == "tensor(6.7924)"
    x = gv.tensor([[1.0, 2.0, 3.0], [2.5, 9.8, 5.7]], requires_grad=True)
    assert repr(x) == "tensor([[1.0000, 2.0000, 3.0000],\n        [2.5000, 9.8000, 5.7000]], requires_grad=True)"
    y = (x**2).mean()
    assert repr(y) == "tensor(24.7967, grad_fn=<MeanBackward0>)"
    y.backward()
    assert repr(x.grad) == "tensor([[0.3333, 0.6667, 1.0000],\n        [0.8333, 3.2667, 1.9000]])"


@pytest.mark.parametrize(
    "calls",
    [
        [{"precision": 2}],
        [{"sci_mode": True}],
        [{"sci_mode": True}, {"precision": 6}],
        [{"profile": "short"}],
        [{"profile": "full", "edgeitems": 1}],
        [{"threshold": 5, "edgeitems": 0}],
        [{"linewidth": 30}, {"profile": "default"}],
    ],
)
def test_set_printoptions_sequences_match_torch(calls, torch):
    values = np.linspace(-3, 3, 2000, dtype=np.float32).reshape(40, 50)
    for call in calls:
        both_printoptions(call)
    assert printing.get_printoptions() == torch._tensor_str.get_printoptions()
    assert ours(values) == theirs(values)


def test_printoptions_context_restores_previous_options(torch):
    printing.set_printoptions(precision=6)
    with printing.printoptions(precision=1, sci_mode=True):
        assert printing.get_printoptions()["precision"] == 1
    assert printing.get_printoptions() == {
        **torch._tensor_str.get_printoptions(), "precision": 6
    }


def outcome(function, *args):
    """What a call returns, or the type and message of what it raises."""
    try:
        return function(*args)
    except (TypeError, ValueError) as error:
        return type(error), str(error)


@pytest.mark.parametrize("spec", ["", ".2f", "e", ">12", "g", ".3", "d", "^8"])
@pytest.mark.parametrize(
    ("value", "dtype"),
    [(6.6918, "float32"), (6.6918, "float64"), (0.1, "float16"), (3.0, "float32"),
     (np.nan, "float32"), (-7, "int64"), (200, "uint8"), (True, "bool")],
)
def test_format_scalar_matches_torch(value, dtype, spec, torch):
    values = np.array(value, dtype=dtype)
    assert outcome(printing.format_scalar, values, spec) == outcome(
        format, torch.from_numpy(values), spec
    )


def test_format_scalar_prints_full_float32_digits(torch):
    value = np.float32(6.6918)
    assert printing.format_scalar(value, "") == f"{torch.tensor(6.6918)}"


def test_format_scalar_rejects_specs_for_tensors_with_dimensions(torch):
    with pytest.raises(TypeError) as torch_error:
        format(torch.zeros(2), ".2f")
    with pytest.raises(TypeError) as our_error:
        printing.format_scalar(np.zeros(2), ".2f")
    assert str(our_error.value) == str(torch_error.value)


def test_dtype_and_device_objects_are_accepted(torch):
    class Named:
        name = "float64"

    values = np.array([1.5, 2.0])
    assert printing.tensor_repr(values, dtype=Named(), device=torch.device("cpu")) == (
        theirs(values)
    )


def test_unknown_dtype_is_rejected():
    with pytest.raises(ValueError):
        printing.tensor_repr(np.zeros(2), dtype="complex64")
