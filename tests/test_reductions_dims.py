"""The reductions in every dim form PyTorch accepts, on 0-d and n-d tensors, against torch 2.13: hypothesis draws
the shape (0-d to 3-d, a size 0 now and then), the values (small integers, so ties happen), the op, the dim form
(None, an int, a negative int, one out of range, a tuple, a list, the empty tuple, a dim given twice) and keepdim;
values, dtype, shape, grad_fn name, the input's gradient and any error (type and message) must all agree.
"""
from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import gradviz as gv  # noqa: E402

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# op -> (dim forms its signature takes, whether it has keepdim, whether it is differentiable)
INT_ONLY, MANY = "int", "many"
OPS = {
    "sum": (MANY, True, True), "mean": (MANY, True, True), "nansum": (MANY, True, True),
    "nanmean": (MANY, True, True), "prod": (INT_ONLY, True, True), "amax": (MANY, True, True),
    "amin": (MANY, True, True), "max": (INT_ONLY, True, True), "min": (INT_ONLY, True, True),
    "std": (MANY, True, True), "var": (MANY, True, True), "norm": (MANY, True, True),
    "logsumexp": (MANY, True, True), "all": (MANY, True, False), "any": (MANY, True, False),
    "argmax": (INT_ONLY, True, False), "argmin": (INT_ONLY, True, False), "count_nonzero": (MANY, False, False),
    "median": (INT_ONLY, True, True),
}
NEEDS_DIM = {"logsumexp"}  # torch.logsumexp(x) without dim is a TypeError
# std/var with ``dim=()``: torch reduces every dim forward but its backward reads ``()`` as no dim (gradients of
# +-inf), a torch quirk gradviz does not copy; every other dim form of std/var is compared
NO_EMPTY_TUPLE = {"std", "var"}


@st.composite
def cases(draw):
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0 if draw(st.booleans()) and draw(st.booleans()) else 1, 3),
                                min_size=ndim, max_size=ndim)))
    values = draw(st.lists(st.integers(-3, 3), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    op = draw(st.sampled_from(sorted(OPS)))
    forms, has_keepdim, _ = OPS[op]
    rank = max(ndim, 1)
    one = st.integers(-rank - 1, rank)  # one past each end: torch's IndexError
    if forms == INT_ONLY:
        dim = draw(st.none() | one) if op not in NEEDS_DIM else draw(one)
    else:
        dim = draw(st.one_of(
            *(() if op in NEEDS_DIM else (st.none(),)), one,
            st.lists(one, min_size=1, max_size=3).map(tuple), st.lists(one, min_size=1, max_size=3),
            *(() if op in NO_EMPTY_TUPLE else (st.just(()),))))
    keepdim = draw(st.booleans()) if has_keepdim and dim is not None else None
    dtype = draw(st.sampled_from(["float32", "float64"]))
    how = draw(st.sampled_from(["method", "function"]))
    return shape, values, op, dim, keepdim, dtype, how


def _call(library, shape, values, op, dim, keepdim, dtype, how):
    x = library.tensor(np.array(values, dtype=np.float64).reshape(shape), dtype=getattr(library, dtype),
                       requires_grad=OPS[op][2])
    args, kwargs = [], {}
    if dim is not None:
        kwargs["dim"] = dim
    if keepdim is not None:
        kwargs["keepdim"] = keepdim
    function = getattr(x, op) if how == "method" else (lambda *a, **k: getattr(library, op)(x, *a, **k))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = function(*args, **kwargs)
            values_out = out[0] if isinstance(out, tuple) else out
            indices = out[1] if isinstance(out, tuple) else None
            if values_out.requires_grad:
                weights = library.arange(1.0, values_out.numel() + 1.0, dtype=values_out.dtype).reshape(values_out.shape)
                (values_out * weights).sum().backward()
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return ("error", type(error).__name__, str(error).split("\n")[0])
    grad = None if x.grad is None else x.grad.numpy()
    name = type(values_out.grad_fn).__name__ if values_out.grad_fn is not None else None
    return ("value", values_out.detach().numpy(), str(values_out.dtype), tuple(values_out.shape), name, grad,
            None if indices is None else indices.numpy())


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)


@SETTINGS
@given(cases())
def test_reduction_dim_forms_match_torch(case):
    expected = _call(torch, *case)
    actual = _call(gv, *case)
    if expected[0] == "error":
        assert actual[0] == "error", f"{case}: torch raised {expected[1:]}, gradviz gave {actual[1:4]}"
        assert actual[1:] == expected[1:], case
        return
    assert actual[0] == "value", f"{case}: gradviz raised {actual[1:]}"
    _, value_t, dtype_t, shape_t, name_t, grad_t, indices_t = expected
    _, value_g, dtype_g, shape_g, name_g, grad_g, indices_g = actual
    assert (dtype_g, shape_g, name_g) == (dtype_t, shape_t, name_t), case
    assert _same(value_t, value_g), f"{case}: values {value_g} != {value_t}"
    assert _same(indices_t, indices_g), f"{case}: indices {indices_g} != {indices_t}"
    assert _same(grad_t, grad_g), f"{case}: grad {grad_g} != {grad_t}"


GRID_SHAPES = [(), (0,), (2,), (2, 0), (0, 3), (2, 3), (1, 2, 2)]


def _grid(op):
    """Every dim form on every shape of ``GRID_SHAPES``: each int in range and one past each end, and the tuples
    and lists (empty, one dim, both ends, a dim twice, out of range, every dim)."""
    forms, has_keepdim, _ = OPS[op]
    for shape in GRID_SHAPES:
        rank = max(len(shape), 1)
        dims = ([] if op in NEEDS_DIM else [None]) + list(range(-rank - 1, rank + 1))
        if forms != INT_ONLY:
            dims += [(0,), (-1,), [0, -1], (0, 0), (rank,), (0, 0, rank + 1), [-1, -1, -rank - 2],
                     tuple(range(len(shape))) or (0,)]
            dims += [] if op in NO_EMPTY_TUPLE else [()]
        for dim in dims:
            for keepdim in ([None] if not has_keepdim or dim is None else [False, True]):
                yield shape, dim, keepdim


@pytest.mark.parametrize("op", sorted(OPS))
def test_every_dim_form_on_a_grid_of_shapes(op):
    rng = np.random.RandomState(sorted(OPS).index(op))
    for shape, dim, keepdim in _grid(op):
        for how in ("method", "function"):
            case = (shape, rng.randint(-2, 3, size=int(np.prod(shape))).tolist(), op, dim, keepdim, "float64", how)
            expected, actual = _call(torch, *case), _call(gv, *case)
            if expected[0] == "error" or actual[0] == "error":
                assert actual[:3] == expected[:3], f"{case}: {actual[:4]} != {expected[:4]}"
                continue
            assert actual[2:5] == expected[2:5], case
            for index, what in ((1, "values"), (5, "grad"), (6, "indices")):
                assert _same(expected[index], actual[index]), f"{case}: {what} {actual[index]} != {expected[index]}"
