"""Anomaly mode: ``torch.autograd.detect_anomaly()`` and ``set_detect_anomaly(mode, check_nan=True)``.

While it is on, every node recorded keeps the Python stack of the forward call that made it
(``grad_fn.metadata["traceback_"]``, a list of ``traceback.format_stack`` lines, as PyTorch keeps
it), and backward checks each node: a node whose formula returned NaN raises PyTorch's
RuntimeError ("Function 'SqrtBackward0' returned nan values in its 0th output."), and a node that
fails, for that reason or any other, first warns with the forward traceback that made it
("Error detected in SqrtBackward0. Traceback of forward call that caused the error: ...").

The stack keeps the user's frames only: gradviz's own Python frames stand where PyTorch has C++
(which ``format_stack`` never shows). PyTorch's C++ warning ends with "(Triggered internally at
<path of torch's build>)"; that suffix is left out here.

The costs when it is off: recording reads the ``ordering`` set it already reads (anomaly mode adds
``ANOMALY_MARK`` to it, so the one test covers both), the engine one flag per backward pass and
per ``call_function``.
"""
from __future__ import annotations

import os
import sys
import traceback
import warnings

from gradviz.grad_mode import ordering

ANOMALY_TRACE_KEY = "traceback_"
# put in ``grad_mode.ordering`` while anomaly mode is on: recording an op tests that set already
ANOMALY_MARK = "anomaly mode"
_GRADVIZ_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class _AnomalyState:
    __slots__ = ("enabled", "check_nan")

    def __init__(self):
        self.enabled = False
        self.check_nan = True


STATE = _AnomalyState()


def is_anomaly_enabled() -> bool:
    return STATE.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return STATE.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """``torch.set_anomaly_enabled``: switch anomaly mode (and its NaN check) on or off."""
    STATE.enabled = bool(enabled)
    STATE.check_nan = bool(check_nan)
    if STATE.enabled:
        ordering.add(ANOMALY_MARK)
    else:
        ordering.discard(ANOMALY_MARK)


class detect_anomaly:
    """Context manager that turns anomaly mode on, warning as PyTorch warns (not a decorator, as in torch 2.13)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc_info) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Turns anomaly mode on or off now (a function call), or for a ``with`` block."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


# -- recording: the forward traceback of each node ------------------------------------------------
def store_stack(node) -> None:
    """Keep the forward call's stack on ``node`` (``metadata["traceback_"]``), the user's frames only."""
    frames = [frame for frame in traceback.extract_stack()[:-1] if not frame.filename.startswith(_GRADVIZ_DIR)]
    node.metadata[ANOMALY_TRACE_KEY] = traceback.format_list(frames)


# -- backward: the check of each node --------------------------------------------------------------
def checked_call(call, node, grad_outputs, create_graph: bool) -> tuple:
    """``call(node, grad_outputs, create_graph)`` (the engine's formula call), then PyTorch's NaN check;
    a failure warns with the node's forward traceback before it propagates."""
    try:
        grad_inputs = call(node, grad_outputs, create_graph)
        if STATE.check_nan:
            for index, gradient in enumerate(grad_inputs):
                if gradient is not None and _has_nan(gradient):
                    raise RuntimeError(f"Function '{node.name()}' returned nan values in its {index}th output.")
    except Exception:
        print_stack(node)
        raise
    return grad_inputs


def _has_nan(gradient) -> bool:
    import numpy as np

    data = getattr(gradient, "_data", gradient)  # a Tensor under create_graph, an array otherwise
    array = np.asarray(data)
    return array.dtype.kind in "fc" and bool(np.isnan(array).any())


def print_stack(node) -> None:
    """PyTorch's ``AnomalyMetadata::print_stack``: warn with the forward traceback that made ``node``."""
    stack = (node._metadata or {}).get(ANOMALY_TRACE_KEY)
    if stack is None:
        message = (f"Error detected in {node.name()}. No forward pass information available. Enable detect anomaly "
                   "during forward pass for more information.")
    else:
        message = f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n{''.join(stack)}"
    warnings.warn(message, stacklevel=user_stacklevel())


def user_stacklevel() -> int:
    """For ``warnings.warn`` called by this function's caller: the stacklevel of the innermost frame
    outside gradviz (the user's ``backward()`` call)."""
    frame, level = sys._getframe(1), 1  # the caller, the one that warns, is level 1
    while frame is not None and frame.f_code.co_filename.startswith(_GRADVIZ_DIR):
        frame, level = frame.f_back, level + 1
    return level
