"""``torch.accelerator``: the device-neutral way tutorials pick a GPU when there is one.

gradviz's only accelerator is CUDA (through torch). Without one, every answer is what PyTorch 2.13
gives on a CPU-only machine: ``is_available()`` is False, ``current_accelerator()`` is None, and
asking for the current device raises PyTorch's error.
"""
from __future__ import annotations

from gradviz import cuda
from gradviz._device import device

NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    return cuda.is_available()


def device_count() -> int:
    return cuda.device_count()


def current_accelerator(check_available: bool = False):
    """``device(type='cuda')`` where CUDA works, else None."""
    return device("cuda") if is_available() else None


def _torch_cuda():
    if not is_available():
        raise RuntimeError(NONE_AVAILABLE)
    import torch

    return torch.cuda


def current_device_index() -> int:
    return _torch_cuda().current_device()


def set_device_index(index) -> None:
    _torch_cuda().set_device(index)


def synchronize(index=None) -> None:
    _torch_cuda().synchronize(index)


current_device_idx = current_device_index
set_device_idx = set_device_index
