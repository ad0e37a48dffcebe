"""Everything that knows PyTorch's own graphs, in one folder.

* ``torch_source``: reads a torch autograd graph into gradviz's ``Graph`` (the adapter the one
  walker in ``gradviz.snapshot.walk`` reads torch nodes through);
* ``torch_steps``: steps torch's backward pass node by node: observed (each node's formula called
  in torch's order, no hook, nothing written) or torch's real engine watched through hooks;
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
                    dry_run: bool = False, run_hooks: bool = True):
    """The Steps of the backward pass from a torch tensor, in torch's order (see ``torch_steps``):
    observed without torch's engine when ``dry_run=True, run_hooks=False``, else torch's own."""
    from gradviz.interop.torch_steps import torch_backward_steps

    return torch_backward_steps(tensor, gradient, retain_graph, dry_run=dry_run, run_hooks=run_hooks)


def source_for_torch():
    """A fresh adapter that reads one torch graph (see ``torch_source.TorchSource``)."""
    from gradviz.interop.torch_source import TorchSource

    return TorchSource()
