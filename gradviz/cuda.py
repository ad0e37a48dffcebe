"""``gradviz.cuda``: true only where a CUDA build of torch sees a GPU (torch imported lazily)."""
from __future__ import annotations


def _torch():
    """torch if it can be imported, else None (no torch means no CUDA)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def is_available() -> bool:
    torch = _torch()
    return torch is not None and torch.cuda.is_available()


def device_count() -> int:
    return _torch().cuda.device_count() if is_available() else 0
