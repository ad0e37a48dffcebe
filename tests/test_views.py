"""Views share memory and the version counter with their base; gradviz alone, no torch needed.

Every op PyTorch defines as a view must be a view here too, so that a write through the view is
seen in the base (and the other way round) and saved tensors notice it.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradviz as gv

VIEW_MAKERS = {
    "select": lambda b: b[1],
    "slice": lambda b: b[:, 1:],
    "step": lambda b: b[:, ::2],
    "view": lambda b: b.view(6),
    "reshape": lambda b: b.reshape(3, 2),
    "flatten": lambda b: b.flatten(),
    "t": lambda b: b.t(),
    "transpose": lambda b: b.transpose(0, 1),
    "permute": lambda b: b.permute(1, 0),
    "T": lambda b: b.T,
    "unsqueeze": lambda b: b.unsqueeze(0),
    "squeeze": lambda b: b.unsqueeze(1).squeeze(1),
    "narrow": lambda b: b.narrow(1, 1, 2),
    "view_as": lambda b: b.view_as(gv.ones(3, 2)),
    "alias": lambda b: b[...],
    "none": lambda b: b[None],
    "detach": lambda b: b.detach(),
    "expand_row": lambda b: b[:1].expand(4, 3)[2],
}


@pytest.mark.parametrize("name", sorted(VIEW_MAKERS))
def test_every_view_shares_memory_and_version_with_its_base(name):
    base = gv.arange(6.0).reshape(2, 3)
    base = base * 1  # a tensor that owns its memory
    view = VIEW_MAKERS[name](base)
    before = base._version
    view.add_(100)
    assert base._version == view._version == before + 1
    assert np.shares_memory(view._data, base._data)
    expected = np.arange(6.0).reshape(2, 3)
    expected_view = VIEW_MAKERS[name](gv.tensor(expected)).numpy() + 100
    assert np.array_equal(view.numpy(), expected_view)
    assert not np.array_equal(base.numpy(), expected), "the write must reach the base"


def test_writing_the_base_is_seen_through_every_view():
    base = gv.zeros(2, 3)
    views = {name: maker(base) for name, maker in VIEW_MAKERS.items()}
    base[1, 2] = 7.0
    base[0] += 1
    expected = np.zeros((2, 3))
    expected[1, 2] = 7.0
    expected[0] += 1
    for name, view in views.items():
        assert np.array_equal(view.numpy(), VIEW_MAKERS[name](gv.tensor(expected)).numpy()), name
        assert view._version == base._version == 3, name  # x[0] += 1 is an add_ and a copy_, as in torch


def test_reshape_copies_only_when_no_view_is_possible():
    base = gv.arange(6.0).reshape(2, 3)
    assert np.shares_memory(base.reshape(6)._data, base._data)
    copied = base.t().reshape(6)
    assert not np.shares_memory(copied._data, base._data) and copied._base is None


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_view_of_any_layout_has_torchs_strides(data):
    """A dimension of size 1 may take any stride; the view's strides must still be the ones PyTorch's
    ``computeStride`` gives (they show in ``stride()`` and in what mm saves), and where no view exists,
    both raise."""
    torch = pytest.importorskip("torch")
    shape = data.draw(st.lists(st.sampled_from([1, 1, 2, 3]), min_size=1, max_size=4))
    order = data.draw(st.permutations(range(len(shape))))
    numel = int(np.prod(shape))
    factors = [f for p in (2, 3) for f in [p] * _multiplicity(numel, p)]
    factors += [1] * data.draw(st.integers(0, 2))
    new_shape = data.draw(st.permutations(factors)) or [1]
    results = []
    for lib in (torch, gv):
        t = lib.arange(float(numel)).reshape(shape).permute(*order)
        try:
            view = t.view(*new_shape)
        except RuntimeError as error:
            results.append(("error", str(error)))
        else:
            results.append((view.stride(), view.tolist()))
    assert results[1] == results[0]


def _multiplicity(n: int, p: int) -> int:
    count = 0
    while n % p == 0:
        n, count = n // p, count + 1
    return count
