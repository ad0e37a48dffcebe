"""numpy's argument names in PyTorch's functions: ``x.sum(axis=0)``, ``x.mean(1, keepdims=True)``.

PyTorch's argument parser takes ``axis`` for ``dim`` and ``keepdims`` for ``keepdim`` in every function
and method it parses (learners coming from numpy write them all the time). The functions torch defines
in Python instead (``norm``, ``split``, ``unique``...) take only their own names. ``install`` gives each
public gradviz function and Tensor method that has a ``dim`` or ``keepdim`` parameter the same
behaviour, by a thin wrapper that renames the two words and calls the function itself.
"""
from __future__ import annotations

import functools
import inspect

_RENAMED = {"axis": "dim", "keepdims": "keepdim"}
# the functions and methods torch writes in Python, not through its parser: they keep their own names only
PYTHON_FUNCTIONS = frozenset({"norm", "split", "unique", "unique_consecutive"})
PYTHON_METHODS = PYTHON_FUNCTIONS | {"unflatten"}


def takes_numpy_names(function):
    """``function`` that also takes ``axis=`` for ``dim=`` and ``keepdims=`` for ``keepdim=``."""
    name = function.__name__

    @functools.wraps(function)
    def call(*args, **kwargs):
        if "axis" in kwargs or "keepdims" in kwargs:
            kwargs = _renamed(name, kwargs)
        return function(*args, **kwargs)

    call.takes_numpy_names = True
    return call


def _renamed(name: str, kwargs: dict) -> dict:
    renamed = {}
    for key, value in kwargs.items():
        key = _RENAMED.get(key, key)
        if key in renamed:
            raise TypeError(f"{name}() got multiple values for argument '{key}'")
        renamed[key] = value
    return renamed


def _has_dim(function) -> bool:
    """Whether ``function`` (or what it wraps) has a ``dim`` or ``keepdim`` parameter (read from its code
    object: ``inspect.signature`` for every public function cost several ms of ``import gradviz``)."""
    code = getattr(inspect.unwrap(function), "__code__", None)
    if code is None:
        return False
    parameters = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return "dim" in parameters or "keepdim" in parameters


def install(namespace: dict, tensor_class) -> None:
    """Wrap the public functions in ``namespace`` (the ``gradviz`` module) and the methods of
    ``tensor_class`` that have a ``dim`` or ``keepdim`` parameter."""
    for name, function in _parsed(namespace, PYTHON_FUNCTIONS):
        namespace[name] = takes_numpy_names(function)
    for name, function in _parsed(vars(tensor_class), PYTHON_METHODS):
        setattr(tensor_class, name, takes_numpy_names(function))


def _parsed(names: dict, python_defined) -> list:
    """The public functions in ``names`` with a ``dim`` or ``keepdim`` parameter that torch parses."""
    return [(name, function) for name, function in list(names.items())
            if not name.startswith("_") and name not in python_defined and inspect.isfunction(function)
            and _has_dim(function)]
