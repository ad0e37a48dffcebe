"""Run the same lines in PyTorch and in gradviz, then compare what they left behind.

``run_both(code)`` executes one snippet twice: once with ``torch`` (and ``F``) bound to real
PyTorch, once bound to gradviz, and returns both namespaces with what each printed.
``assert_same(code)`` then compares every tensor the snippet left, as a learner would see it:
values, dtype, shape, ``requires_grad``, leaves' ``.grad``, and the whole ``grad_fn`` graph
(node names, ``next_functions`` order and ``input_nr``, ``_saved_*`` names and values).
Nothing expected is written down: torch 2.13 is the oracle every time.
"""
from __future__ import annotations

import contextlib
import io
import re
import warnings

import numpy as np
import torch

import gradviz
import gradviz.nn.functional
from gradviz import backends

ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def namespace(module) -> dict:
    functional = module.nn.functional
    return {"torch": module, "F": functional, "gv": module, "math": __import__("math")}


def run(code: str, module) -> tuple[dict, str]:
    """Execute ``code`` with ``torch`` bound to ``module``; return its namespace and stdout."""
    scope = namespace(module)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(code, scope)
    return scope, printed.getvalue()


def run_both(code: str, backend: str = "numpy"):
    reference = run(code, torch)
    with backends.using(backend):
        ours = run(code, gradviz)
    return reference, ours


def mask(text: str) -> str:
    """Object addresses differ between runs and libraries; everything else must not."""
    return ADDRESS.sub("0x…", text)


def to_numpy(value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return value.detach().cpu().numpy() if value.device.type != "cpu" else value.detach().numpy()


def assert_values(expected, actual, where: str, rtol=1e-5, atol=1e-6) -> None:
    assert isinstance(actual, gradviz.Tensor), f"{where}: expected a Tensor, got {type(actual).__name__}"
    assert tuple(expected.shape) == tuple(actual.shape), f"{where}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    assert str(expected.dtype) == repr(actual.dtype), f"{where}: dtype {actual.dtype!r} != {expected.dtype}"
    np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), rtol=rtol, atol=atol, err_msg=where,
                               equal_nan=True)


def assert_saved(expected, actual, where: str) -> None:
    if isinstance(expected, torch.Tensor):
        assert_values(expected, actual, where)
        assert actual.requires_grad == expected.requires_grad, f"{where}: requires_grad"
    elif isinstance(expected, (tuple, list)) and any(isinstance(item, torch.Tensor) for item in expected):
        assert len(actual) == len(expected), f"{where}: {len(actual)} items != {len(expected)}"
        for index, (item_t, item_g) in enumerate(zip(expected, actual)):
            assert_saved(item_t, item_g, f"{where}[{index}]")
    elif isinstance(expected, (tuple, list)):
        assert tuple(actual) == tuple(expected), f"{where}: {actual!r} != {expected!r}"
    elif isinstance(expected, float) and expected != expected:  # NaN (a Scalar log of a negative number)
        assert type(actual) is float and actual != actual, f"{where}: {actual!r} != {expected!r}"
    else:
        assert actual == expected and type(actual) is type(expected), f"{where}: {actual!r} != {expected!r}"


def saved_names(node) -> list:
    """The ``_saved_*`` attributes a learner finds with ``dir(node)`` (methods of the class aside)."""
    return sorted(name for name in dir(node)
                  if name.startswith("_saved_") and not callable(getattr(type(node), name, None)))


def saved_attribute(node, name):
    """``(value, None)``, or ``(None, error)`` when reading it raises (a freed saved tensor)."""
    try:
        return getattr(node, name), None
    except Exception as error:  # noqa: BLE001 - compared with what torch raised
        return None, error


def assert_graph(expected, actual, where: str = "grad_fn") -> None:
    """Walk both graphs together: names, edges in order, saved names and values."""
    stack = [(expected, actual, where)]
    seen = set()
    while stack:
        node_t, node_g, path = stack.pop()
        if node_t is None or node_g is None:
            assert node_t is None and node_g is None, f"{path}: {node_g!r} where torch has {node_t!r}"
            continue
        assert node_g.name() == node_t.name(), f"{path}: {node_g.name()} != {node_t.name()}"
        if id(node_t) in seen:
            continue
        seen.add(id(node_t))
        assert saved_names(node_g) == saved_names(node_t), f"{path} {node_t.name()} saved names"
        for name in saved_names(node_t):
            (value_t, error_t), (value_g, error_g) = saved_attribute(node_t, name), saved_attribute(node_g, name)
            if error_t is not None or error_g is not None:
                assert type(error_g) is type(error_t) and str(error_g) == str(error_t), \
                    f"{path}.{name}: {error_g!r} where torch has {error_t!r}"
            else:
                assert_saved(value_t, value_g, f"{path}.{name}")
        edges_t, edges_g = node_t.next_functions, node_g.next_functions
        assert len(edges_g) == len(edges_t), f"{path} {node_t.name()}: {len(edges_g)} edges != {len(edges_t)}"
        for i, ((next_t, nr_t), (next_g, nr_g)) in enumerate(zip(edges_t, edges_g)):
            assert nr_g == nr_t, f"{path}[{i}] input_nr {nr_g} != {nr_t}"
            stack.append((next_t, next_g, f"{path}[{i}]"))


def assert_tensor(expected, actual, where: str) -> None:
    assert_values(expected, actual, where)
    assert actual.requires_grad == expected.requires_grad, f"{where}: requires_grad"
    assert actual.is_leaf == expected.is_leaf, f"{where}: is_leaf"
    if expected.is_leaf or expected.retains_grad:
        if expected.grad is None:
            assert actual.grad is None, f"{where}.grad should be None"
        else:
            assert_values(expected.grad, actual.grad, f"{where}.grad")
    assert_graph(expected.grad_fn, actual.grad_fn, f"{where}.grad_fn")


def assert_same(code: str, backend: str = "numpy", printed: bool = True) -> tuple[dict, dict]:
    """Run ``code`` in both libraries; every tensor it leaves, and its printed text, must agree."""
    (scope_t, out_t), (scope_g, out_g) = run_both(code, backend)
    if printed:
        assert mask(out_g) == mask(out_t)
    compared = 0
    for name, value in scope_t.items():
        if isinstance(value, torch.Tensor):
            assert_tensor(value, scope_g[name], name)
            compared += 1
        elif isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
            for i, item in enumerate(value):
                assert_tensor(item, scope_g[name][i], f"{name}[{i}]")
            compared += 1
    assert compared, "the snippet left no tensors to compare"
    return scope_t, scope_g


def raised(code: str, module):
    """The exception ``code`` raises with ``torch`` bound to ``module`` (None if it runs)."""
    try:
        run(code, module)
    except Exception as error:  # noqa: BLE001 - the point is to capture whatever torch raises
        return error
    return None


def assert_same_error(code: str, backend: str = "numpy") -> BaseException:
    expected = raised(code, torch)
    assert expected is not None, "torch raised nothing: the snippet does not test an error"
    with backends.using(backend):
        actual = raised(code, gradviz)
    assert actual is not None, f"gradviz raised nothing; torch raised {type(expected).__name__}: {expected}"
    assert type(actual) is type(expected), f"{type(actual).__name__}({actual}) != {type(expected).__name__}({expected})"
    assert mask(str(actual)) == mask(str(expected))
    return actual


def weighted_backward(expression: str) -> str:
    """Snippet lines: ``y = expression``, then backward from ``(y * [1, 2, 3, ...]).sum()`` so that
    every element of ``y`` gets a different gradient."""
    return f"y = {expression}\n(y * torch.arange(1.0, y.numel() + 1.0).reshape(y.shape)).sum().backward()\n"
