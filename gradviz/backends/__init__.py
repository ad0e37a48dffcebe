"""Pick the backend that holds a tensor's data.

``cpu`` tensors use numpy unless ``use('torch')`` says otherwise (that is how CI covers the
torch backend without a GPU); ``cuda`` tensors always use torch. torch is imported only here,
on first need.
"""
from __future__ import annotations

import contextlib
import importlib

from gradviz.backends import numpy_backend

_default_cpu = numpy_backend


def _load_torch_backend():
    """The torch backend module, importing torch on first use with a clear message if absent."""
    try:
        module = importlib.import_module("gradviz.backends.torch_backend")
    except ModuleNotFoundError as error:
        if error.name != "torch":
            raise
        raise RuntimeError(
            "This needs PyTorch, which is not installed. Install it with "
            "`pip install 'gradviz-lab[torch]'` (or `pip install torch`), or use device='cpu'."
        ) from None
    # importing a submodule binds its name on this package, over this function: bind it back
    globals()["torch_backend"] = _load_torch_backend
    return module


torch_backend = _load_torch_backend


def for_device(device) -> object:
    if device.type == "cuda":
        backend = torch_backend()
        import torch

        if not torch.backends.cuda.is_built():
            raise AssertionError("Torch not compiled with CUDA enabled")
        if not torch.cuda.is_available():
            raise RuntimeError("No CUDA GPUs are available")
        return backend
    return _default_cpu


def use(name: str) -> None:
    """Make ``'numpy'`` (the default) or ``'torch'`` hold new CPU tensors."""
    global _default_cpu
    if name == "numpy":
        _default_cpu = numpy_backend
    elif name == "torch":
        _default_cpu = torch_backend()
    else:
        raise ValueError(f"unknown backend {name!r}: choose 'numpy' or 'torch'")


def current() -> str:
    return _default_cpu.name


@contextlib.contextmanager
def using(name: str):
    """Temporarily hold new CPU tensors with another backend (used by the test suite)."""
    previous = _default_cpu.name
    use(name)
    try:
        yield
    finally:
        use(previous)
