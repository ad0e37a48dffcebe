"""numpy's argument names (``axis`` for ``dim``, ``keepdims`` for ``keepdim``), against torch itself: the
functions and methods torch parses in C++ take them, the ones it writes in Python do not."""
from __future__ import annotations

import types

import pytest

import gradviz
from gradviz import numpy_names

torch = pytest.importorskip("torch")


def _wrapped(owner):
    return sorted(name for name, value in vars(owner).items() if getattr(value, "takes_numpy_names", False) is True)


def test_the_functions_taking_numpy_names_are_the_ones_torch_parses():
    """Every gradviz function or method given numpy's names is one torch's argument parser reads (a builtin,
    not a Python function); the names left out are Python functions in torch."""
    for owner, torch_owner in ((gradviz, torch), (gradviz.Tensor, torch.Tensor)):
        wrapped = _wrapped(owner)
        assert len(wrapped) > 40
        for name in wrapped:
            assert not isinstance(getattr(torch_owner, name), types.FunctionType), name
    for names, torch_owner in ((numpy_names.PYTHON_FUNCTIONS, torch), (numpy_names.PYTHON_METHODS, torch.Tensor)):
        for name in names:
            assert isinstance(getattr(torch_owner, name), types.FunctionType), name


PROGRAMS = {
    "x.sum(axis=0)": lambda lib, x: x.sum(axis=0), "x.sum(0, keepdims=True)": lambda lib, x: x.sum(0, keepdims=True),
    "torch.sum(x, axis=1)": lambda lib, x: lib.sum(x, axis=1), "x.mean(axis=1)": lambda lib, x: x.mean(axis=1),
    "x.max(axis=1)": lambda lib, x: x.max(axis=1).values, "x.std(axis=0)": lambda lib, x: x.std(axis=0),
    "x.argmax(axis=1)": lambda lib, x: x.argmax(axis=1), "x.cumsum(axis=0)": lambda lib, x: x.cumsum(axis=0),
    "x.softmax(axis=0)": lambda lib, x: x.softmax(axis=0), "torch.cat(axis=1)": lambda lib, x: lib.cat([x, x], axis=1),
    "torch.stack(axis=1)": lambda lib, x: lib.stack([x, x], axis=1),
    "x.squeeze(axis=0)": lambda lib, x: x[None].squeeze(axis=0), "x.amax(axis=0)": lambda lib, x: x.amax(axis=0),
    "x.all(axis=0)": lambda lib, x: (x > 0).all(axis=0), "x.unsqueeze(axis=0)": lambda lib, x: x.unsqueeze(axis=0),
    "x.prod(axis=1, keepdims=True)": lambda lib, x: x.prod(axis=1, keepdims=True),
    "x.logsumexp(axis=1)": lambda lib, x: x.logsumexp(axis=1), "x.norm(axis=1)": lambda lib, x: x.norm(axis=1),
    "x.split(1, axis=1)": lambda lib, x: x.split(1, axis=1)[0], "torch.unique(axis=0)": lambda lib, x: lib.unique(x, axis=0),
    "x.sum(dim=0, axis=0)": lambda lib, x: x.sum(dim=0, axis=0),
}


def _outcome(run):
    try:
        result = run()
    except TypeError as error:
        return "TypeError"  # the texts differ (torch's parser lists every overload)
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return type(error).__name__, str(error)
    return str(result).replace("gradviz", "torch")


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_numpy_names_as_torch(program):
    def run(lib):
        return PROGRAMS[program](lib, lib.tensor([[1.0, -2.0], [3.0, 0.5]]))
    assert _outcome(lambda: run(gradviz)) == _outcome(lambda: run(torch))
