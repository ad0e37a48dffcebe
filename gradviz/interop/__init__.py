"""Everything that knows PyTorch's own graphs, in one folder.

* ``torch_source``: reads a torch autograd graph into gradviz's ``Graph`` (the adapter the one
  walker in ``gradviz.snapshot.walk`` reads torch nodes through);
* ``torch_steps``: steps torch's real backward pass, observed node by node through hooks;
* ``compare``: matches a gradviz graph with the torch graph of the same program and says
  whether names, values and step order agree.

Layers: this folder may import the core and ``gradviz.snapshot``; nothing below it imports it.
The engine and the snapshot learn about torch tensors only through the two entry points below,
which ``gradviz/__init__.py`` registers (``register_foreign_engine``, ``register_foreign_source``).
They load torch and this folder's modules only when a torch tensor arrives, so ``import gradviz``
stays numpy-only.
"""
from __future__ import annotations

from typing import Any


def steps_for_torch(tensor: Any, gradient: Any = None, retain_graph: bool | None = None, *,
                    dry_run: bool = False):
    """The Steps of torch's own backward pass from a torch tensor (see ``torch_steps``)."""
    from gradviz.interop.torch_steps import torch_backward_steps

    return torch_backward_steps(tensor, gradient, retain_graph, dry_run=dry_run)


def source_for_torch():
    """A fresh adapter that reads one torch graph (see ``torch_source.TorchSource``)."""
    from gradviz.interop.torch_source import TorchSource

    return TorchSource()
