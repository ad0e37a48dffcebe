"""``gradviz.cuda``: true only where a CUDA build of torch sees a GPU (torch imported lazily)."""
from __future__ import annotations

import importlib.util


def is_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def device_count() -> int:
    if not is_available():
        return 0
    import torch

    return torch.cuda.device_count()
