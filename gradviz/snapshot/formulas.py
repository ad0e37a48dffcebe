"""The chain-rule formulas a node shows: the derivatives gradviz declares for the op of that name.

Looked up by PyTorch's node name, so a torch graph shows the same formulas as a gradviz graph
of the same program (``AccumulateGrad`` included).
"""
from __future__ import annotations

import functools

from gradviz._kinds import ACCUMULATE_GRAD
from gradviz.autograd.node import AccumulateGrad
from gradviz.ops import derivatives_for
from gradviz.snapshot.model import Formula


@functools.lru_cache(maxsize=None)
def formulas_for(name: str) -> tuple:
    """``Formula`` per input of the op named ``name`` (``()`` when gradviz declares none)."""
    declared = AccumulateGrad.derivatives if name == ACCUMULATE_GRAD else derivatives_for(name)
    return tuple(Formula(input_name, text, latex) for input_name, (text, latex) in declared.items())
