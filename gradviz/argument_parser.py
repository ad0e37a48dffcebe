"""What PyTorch's argument parser does before one of its functions runs, for gradviz's facade.

torch parses the arguments of every function and method it defines in C++ (``torch.exp``,
``Tensor.sum``...). Two things a learner meets there come from the parser, not from the function:

* numpy's argument names: ``axis`` for ``dim`` and ``keepdims`` for ``keepdim`` (``x.sum(axis=0)``);
* a Python number or list where a tensor is required is a TypeError naming the argument
  (``exp(): argument 'input' (position 1) must be Tensor, not float``), where gradviz's function
  would fail inside with an AttributeError about a missing ``_backend``.

``install`` wraps the public functions of the ``gradviz`` module and the Tensor methods that torch
parses (not those it writes in Python: ``norm``, ``split``, ``unique``...) in one thin layer that does
both. Code inside gradviz calls the functions themselves, without the layer.
"""
from __future__ import annotations

import functools
import inspect

_RENAMED = {"axis": "dim", "keepdims": "keepdim"}
# the functions and methods torch writes in Python, not through its parser (tests/test_argument_parser.py
# checks these lists against torch itself)
PYTHON_FUNCTIONS = frozenset({"atleast_1d", "atleast_2d", "atleast_3d", "norm", "split", "unique", "unique_consecutive"})
PYTHON_METHODS = frozenset({"norm", "split", "unflatten", "unique", "unique_consecutive"})


def parsed(function, tensor_class, *, takes_input: bool):
    """``function`` with torch's parser in front: numpy's names when it has a ``dim`` or ``keepdim`` parameter,
    and, when ``takes_input`` (its first parameter is the tensor ``input``), torch's TypeError for a first
    argument that is not a tensor."""
    name = function.__name__
    numpy_names = _has_dim(function)

    @functools.wraps(function)
    def call(*args, **kwargs):
        if numpy_names and ("axis" in kwargs or "keepdims" in kwargs):
            kwargs = _renamed(name, kwargs)
        try:
            return function(*args, **kwargs)
        except AttributeError:  # a number or list where a tensor belongs reached the function's body
            if takes_input and (args or "input" in kwargs):
                value = args[0] if args else kwargs["input"]
                if not isinstance(value, tensor_class):
                    where = " (position 1)" if args else ""
                    raise TypeError(f"{name}(): argument 'input'{where} must be Tensor, not "
                                    f"{_type_name(value)}") from None
            raise

    call.parsed = True
    call.takes_numpy_names = numpy_names
    return call


def _renamed(name: str, kwargs: dict) -> dict:
    renamed = {}
    for key, value in kwargs.items():
        key = _RENAMED.get(key, key)
        if key in renamed:
            raise TypeError(f"{name}() got multiple values for argument '{key}'")
        renamed[key] = value
    return renamed


def _type_name(value) -> str:
    """How torch's parser names a type: ``float``, ``list``, ``numpy.ndarray``."""
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__.split('.')[0]}.{kind.__name__}"


def _parameters(function) -> tuple:
    """``function``'s (or what it wraps) named parameters, read from its code object (``inspect.signature``
    for every public function cost several ms of ``import gradviz``)."""
    code = getattr(inspect.unwrap(function), "__code__", None)
    return () if code is None else code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def _has_dim(function) -> bool:
    parameters = _parameters(function)
    return "dim" in parameters or "keepdim" in parameters


def install(namespace: dict, tensor_class) -> None:
    """Put the parser in front of the public functions in ``namespace`` (the ``gradviz`` module) whose first
    parameter is ``input`` or that have a ``dim`` or ``keepdim`` parameter, and of ``tensor_class``'s methods
    with a ``dim`` or ``keepdim`` parameter, except those torch writes in Python."""
    for name, function in list(namespace.items()):
        if not name.startswith("_") and name not in PYTHON_FUNCTIONS and inspect.isfunction(function):
            parameters = _parameters(function)
            takes_input = bool(parameters) and parameters[0] == "input"
            if takes_input or _has_dim(function):
                namespace[name] = parsed(function, tensor_class, takes_input=takes_input)
    for name, function in list(vars(tensor_class).items()):
        if not name.startswith("_") and name not in PYTHON_METHODS and inspect.isfunction(function) \
                and _has_dim(function):
            setattr(tensor_class, name, parsed(function, tensor_class, takes_input=False))
