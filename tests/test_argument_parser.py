"""What torch's argument parser does before a function runs, against torch itself: numpy's argument names
(``axis`` for ``dim``, ``keepdims`` for ``keepdim``) in the functions and methods torch parses in C++, not in
those it writes in Python; and its TypeError for a number, list or array where a tensor belongs."""
from __future__ import annotations

import types

import numpy as np
import pytest

import gradviz
from gradviz import argument_parser

torch = pytest.importorskip("torch")


def _parsed(owner):
    return sorted(name for name, value in vars(owner).items() if getattr(value, "parsed", False) is True)


def test_the_parser_stands_in_front_of_what_torch_parses():
    """Every gradviz function or method with the parser in front is one torch's parser reads (a builtin, not
    a Python function), and the lists of those torch writes in Python are right."""
    for owner, torch_owner in ((gradviz, torch), (gradviz.Tensor, torch.Tensor)):
        parsed = _parsed(owner)
        assert len(parsed) > 40
        for name in parsed:
            assert not isinstance(getattr(torch_owner, name, None), types.FunctionType), name
    for names, torch_owner in ((argument_parser.PYTHON_FUNCTIONS, torch),
                               (argument_parser.PYTHON_METHODS, torch.Tensor)):
        for name in names:
            assert isinstance(getattr(torch_owner, name), types.FunctionType), name


NUMPY_NAMES = {
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
    "torch.mean(x, axis=0, keepdims=True)": lambda lib, x: lib.mean(x, axis=0, keepdims=True),
    "x.sum(dim=0, axis=0)": lambda lib, x: x.sum(dim=0, axis=0),
}


def _outcome(run, texts: bool = True):
    try:
        result = run()
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return type(error).__name__, str(error).split("\n")[0] if texts else ""
    return str(result).replace("gradviz", "torch")


@pytest.mark.parametrize("program", list(NUMPY_NAMES))
def test_numpy_names_as_torch(program):
    def run(lib):
        return NUMPY_NAMES[program](lib, lib.tensor([[1.0, -2.0], [3.0, 0.5]]))
    # a refused name: torch's parser lists every overload, Python names the keyword; the type is compared
    assert _outcome(lambda: run(gradviz), texts=False) == _outcome(lambda: run(torch), texts=False)


NOT_TENSORS = {
    "exp(2.0)": lambda lib: lib.exp(2.0), "sqrt(4)": lambda lib: lib.sqrt(4), "sum([1, 2])": lambda lib: lib.sum([1, 2]),
    "tanh(array)": lambda lib: lib.tanh(np.ones(2)), "relu(1.0)": lambda lib: lib.relu(1.0),
    "sigmoid([0.5])": lambda lib: lib.sigmoid([0.5]), "mean([1.0, 2.0])": lambda lib: lib.mean([1.0, 2.0]),
    "softmax([1.0], 0)": lambda lib: lib.softmax([1.0, 2.0], 0), "matmul(2.0, 3.0)": lambda lib: lib.matmul(2.0, 3.0),
    "mm": lambda lib: lib.mm(2.0, 3.0), "dot": lambda lib: lib.dot(2.0, 3.0), "t(2.0)": lambda lib: lib.t(2.0),
    "reshape([1, 2], (2,))": lambda lib: lib.reshape([1, 2], (2,)), "flatten": lambda lib: lib.flatten(2.0),
    "zeros_like(2.0)": lambda lib: lib.zeros_like(2.0), "ones_like([1])": lambda lib: lib.ones_like([1]),
    "cat([1, 2])": lambda lib: lib.cat([1, 2]), "stack((x, 2))": lambda lib: lib.stack((lib.ones(1), 2)),
    "cumsum([1.0], 0)": lambda lib: lib.cumsum([1.0], 0), "square(3)": lambda lib: lib.square(3),
    "exp(input=2.0)": lambda lib: lib.exp(input=2.0), "sum(input=[1])": lambda lib: lib.sum(input=[1]),
    "log(x) still works": lambda lib: lib.log(lib.tensor([1.0, 2.0])),
    "add(2, x) still works": lambda lib: lib.add(2, lib.ones(2)), "mul(2, x) still works": lambda lib: lib.mul(2, lib.ones(2)),
}


@pytest.mark.parametrize("program", list(NOT_TENSORS))
def test_numbers_where_tensors_belong_raise_as_torch(program):
    """``torch.exp(2.0)``: torch's TypeError naming the argument (gradviz's function would have failed inside
    with an AttributeError about ``_backend``)."""
    assert _outcome(lambda: NOT_TENSORS[program](gradviz)) == _outcome(lambda: NOT_TENSORS[program](torch))
