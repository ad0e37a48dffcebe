"""Shared test setup.

``GRADVIZ_BLOCK_TORCH=1`` makes ``import torch`` fail for the whole run, so the suite proves
that gradviz works without torch installed: torch-only tests skip (``importorskip``) and say so.
"""
import importlib.abc
import os
import sys

import pytest


class _BlockTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch.") or name == "torchviz":
            raise ModuleNotFoundError(f"No module named '{name}' (blocked by GRADVIZ_BLOCK_TORCH)", name=name)
        return None


if os.environ.get("GRADVIZ_BLOCK_TORCH") == "1":
    sys.meta_path.insert(0, _BlockTorch())


@pytest.fixture(autouse=True)
def _reset_backend_and_grad_mode():
    """Every test starts on the numpy backend with grad mode on."""
    import gradviz.backends as backends
    from gradviz.grad_mode import _set_enabled

    yield
    backends.use("numpy")
    _set_enabled(True)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.fixture
def no_dual_level_left():
    """Forward-mode tests: a failing snippet must not leave its dual level open for the next test,
    gradviz's or torch's."""
    yield
    import torch

    from gradviz.autograd import forward_ad

    while forward_ad._current_level >= 0:
        forward_ad.exit_dual_level()
    while torch.autograd.forward_ad._current_level >= 0:
        torch.autograd.forward_ad.exit_dual_level()
