"""Tensor printing that matches PyTorch 2.13 character for character.

Learners compare what gradviz prints with what their PyTorch tutorial shows, so
``repr(tensor)`` has to follow the same rules: one shared number format for the
whole tensor (fixed, integer-valued or scientific), right-aligned columns, rows
wrapped at the line width, ``...`` past the summary threshold, and suffixes such
as ``dtype=torch.float64`` or ``grad_fn=<MulBackward0>``.  The rules come from
``torch/_tensor_str.py``; this module restates them for numpy arrays so that
``import gradviz`` never needs torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "format_scalar",
    "get_printoptions",
    "printoptions",
    "set_printoptions",
    "tensor_repr",
]

NUMPY_DTYPES = {
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.float16,
    "int64": np.int64,
    "int32": np.int32,
    "int16": np.int16,
    "int8": np.int8,
    "uint8": np.uint8,
    "bool": np.bool_,
}
"""The dtypes gradviz prints, by torch name, with the numpy type that holds them."""

DEFAULT_DTYPE = "float32"
"""torch's default dtype: tensors of this dtype print without a dtype suffix."""

_UNSUFFIXED_DTYPES = (DEFAULT_DTYPE, "int64", "bool")
"""Dtypes torch can infer from the printed numbers, so it does not name them."""

_PREFIX = "tensor("


@dataclasses.dataclass
class _PrintOptions:
    """The module-wide print settings, with torch's defaults."""

    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


_PROFILES = {
    "default": _PrintOptions(),
    "short": _PrintOptions(precision=2, edgeitems=2),
    "full": _PrintOptions(threshold=math.inf),
}

_OPTIONS = _PrintOptions()


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Change how tensors print, with the semantics of ``torch.set_printoptions``.

    A ``profile`` ("default", "short" or "full") is applied first, then any
    explicit option overrides it.  As in torch, ``sci_mode`` is always assigned,
    so any call without it returns to the automatic choice of notation.
    """
    if profile in _PROFILES:
        chosen = _PROFILES[profile]
        _OPTIONS.precision = chosen.precision
        _OPTIONS.threshold = chosen.threshold
        _OPTIONS.edgeitems = chosen.edgeitems
        _OPTIONS.linewidth = chosen.linewidth
    if precision is not None:
        _OPTIONS.precision = precision
    if threshold is not None:
        _OPTIONS.threshold = threshold
    if edgeitems is not None:
        _OPTIONS.edgeitems = edgeitems
    if linewidth is not None:
        _OPTIONS.linewidth = linewidth
    _OPTIONS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """Return the current options as a dict that ``set_printoptions(**d)`` accepts."""
    return dataclasses.asdict(_OPTIONS)


@contextlib.contextmanager
def printoptions(**options: Any) -> Iterator[None]:
    """Apply ``set_printoptions(**options)`` for the duration of a ``with`` block."""
    saved = get_printoptions()
    set_printoptions(**options)
    try:
        yield
    finally:
        set_printoptions(**saved)


class _Formatter:
    """Chooses one number format for a whole tensor and pads every entry to one width.

    Floats print in one of three modes, decided from the nonzero finite values:
    integer-valued (``3.``), scientific (``1.0000e-05``) when the magnitudes span
    more than 1000x or leave [1e-4, 1e8], otherwise fixed-point with ``precision``
    decimals.  Integers and bools print as Python prints them.
    """

    def __init__(self, values: np.ndarray, floating: bool) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if floating:
            self._choose_float_mode(values.reshape(-1))
        else:
            widths = (len(str(value)) for value in values.reshape(-1).tolist())
            self.max_width = max(widths, default=1)

    def _choose_float_mode(self, flat: np.ndarray) -> None:
        """Set the mode and width from the nonzero finite values only."""
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        magnitudes = np.abs(finite).astype(np.float64)
        smallest, largest = magnitudes.min(), magnitudes.max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if _OPTIONS.sci_mode is None:
            self.sci_mode = bool(
                largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4
            )
        else:
            self.sci_mode = _OPTIONS.sci_mode
        self.max_width = max(self._width_of(value) for value in finite.tolist())

    def _width_of(self, value: float) -> int:
        """Width one finite nonzero value needs; integer mode reserves one for the dot."""
        if self.sci_mode:
            return len(f"{value:.{_OPTIONS.precision}e}")
        if self.int_mode:
            return len(f"{value:.0f}") + 1
        return len(f"{value:.{_OPTIONS.precision}f}")

    def width(self) -> int:
        """The column width every formatted entry is padded to."""
        return self.max_width

    def format(self, value: float | int | bool) -> str:
        """Format one Python number, right-aligned to the shared width."""
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{_OPTIONS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = f"{value:.{_OPTIONS.precision}f}"
        return text.rjust(self.max_width)


def _is_summarized_away(length: int) -> bool:
    """True when a dimension this long shows only its edge items around ``...``."""
    return length > 2 * _OPTIONS.edgeitems


def _edge_indices(length: int) -> list[int]:
    """Indices of the leading and trailing ``edgeitems`` entries of a dimension."""
    edge = _OPTIONS.edgeitems
    return list(range(edge)) + list(range(length - edge, length))


def _summarized_data(values: np.ndarray) -> np.ndarray:
    """The entries a summarized tensor actually shows; the format is chosen from them."""
    if values.ndim <= 1:
        if values.ndim == 1 and _is_summarized_away(len(values)):
            edge = _OPTIONS.edgeitems
            return np.concatenate((values[:edge], values[-edge:]))
        return values
    if not _OPTIONS.edgeitems:
        return np.empty((0,) * values.ndim, dtype=values.dtype)
    rows = _edge_indices(len(values)) if _is_summarized_away(len(values)) else range(len(values))
    return np.stack([_summarized_data(values[i]) for i in rows])


def _vector_str(values: np.ndarray, indent: int, summarize: bool, formatter: _Formatter) -> str:
    """Print a 1-d tensor, as many entries a line as fit in the line width."""
    if summarize and not _OPTIONS.edgeitems:
        entries = ["..."]
    elif summarize and _is_summarized_away(len(values)):
        edge = _OPTIONS.edgeitems
        entries = (
            [formatter.format(v) for v in values[:edge].tolist()]
            + [" ..."]
            + [formatter.format(v) for v in values[-edge:].tolist()]
        )
    else:
        entries = [formatter.format(v) for v in values.tolist()]
    per_line = max(1, (_OPTIONS.linewidth - indent) // (formatter.width() + 2))
    lines = [", ".join(entries[i : i + per_line]) for i in range(0, len(entries), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(values: np.ndarray, indent: int, summarize: bool, formatter: _Formatter) -> str:
    """Print a tensor of any rank; sub-tensors of rank k are separated by k-1 blank lines."""
    if values.ndim == 0:
        return formatter.format(values.item())
    if values.ndim == 1:
        return _vector_str(values, indent, summarize, formatter)
    if summarize and _is_summarized_away(len(values)):
        edge = _OPTIONS.edgeitems
        head = [_nested_str(values[i], indent + 1, summarize, formatter) for i in range(edge)]
        tail = [
            _nested_str(values[i], indent + 1, summarize, formatter)
            for i in range(len(values) - edge, len(values))
        ]
        parts = head + ["..."] + tail
    else:
        parts = [_nested_str(row, indent + 1, summarize, formatter) for row in values]
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(parts) + "]"


def _contents_str(values: np.ndarray, dtype: str, indent: int) -> str:
    """The bracketed numbers of a non-empty tensor, summarized past the threshold."""
    summarize = values.size > _OPTIONS.threshold
    shown = _summarized_data(values) if summarize else values
    formatter = _Formatter(shown, floating=dtype.startswith("float"))
    return _nested_str(values, indent, summarize, formatter)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """Append ``, suffix`` items, moving one to its own line when it would pass the width.

    The length of the last line is measured as torch measures it (two more than
    its characters), so the wrap happens at exactly the same place.
    """
    pieces = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > _OPTIONS.linewidth:
            pieces.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            pieces.append(", " + suffix)
            last_line_len += len(suffix) + 2
    pieces.append(")")
    return "".join(pieces)


def _device_str(device: str) -> str:
    """torch names an accelerator tensor's device with its index: 'cuda' is 'cuda:0'."""
    if device != "cpu" and ":" not in device:
        return device + ":0"
    return device


def _shape_str(shape: tuple[int, ...]) -> str:
    """A shape as torch prints it inside ``size=``: a Python tuple."""
    return str(tuple(int(n) for n in shape))


def tensor_repr(
    values: np.ndarray,
    *,
    dtype: Any,
    device: Any = "cpu",
    requires_grad: bool = False,
    grad_fn_name: str | None = None,
    is_leaf: bool = True,
    tangent: str | None = None,
) -> str:
    """Return exactly what ``repr`` of the equivalent torch tensor prints.

    ``dtype`` is a torch dtype name ("float32") or anything whose ``.name`` is
    one, and ``device`` anything whose ``str`` is a device ("cpu", "cuda:0").
    ``values`` is cast to ``dtype`` first, so the digits shown are those of the
    tensor's own precision.  A ``grad_fn`` suffix replaces ``requires_grad=True``,
    as in torch; ``is_leaf`` is accepted for symmetry with the Tensor's state but
    does not change the text, since torch's repr depends only on the grad_fn.
    ``tangent`` is the text of a dual tensor's tangent (forward-mode AD), printed last.
    """
    dtype = getattr(dtype, "name", dtype)
    device = str(device)
    if dtype not in NUMPY_DTYPES:
        raise ValueError(f"tensor_repr does not know dtype {dtype!r}")
    values = np.asarray(values, dtype=NUMPY_DTYPES[dtype])
    indent = len(_PREFIX)
    suffixes = []
    if device != "cpu":
        suffixes.append(f"device='{_device_str(device)}'")
    if values.size == 0:
        # With no numbers to look at, the reader cannot tell the shape or dtype.
        if values.ndim != 1:
            suffixes.append("size=" + _shape_str(values.shape))
        if dtype != DEFAULT_DTYPE:
            suffixes.append(f"dtype=torch.{dtype}")
        contents = "[]"
    else:
        if not _OPTIONS.edgeitems:
            suffixes.append("size=" + _shape_str(values.shape))
        if dtype not in _UNSUFFIXED_DTYPES:
            suffixes.append(f"dtype=torch.{dtype}")
        contents = _contents_str(values, dtype, indent)
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    if tangent is not None:
        suffixes.append(f"tangent={tangent}")
    return _add_suffixes(_PREFIX + contents, suffixes, indent)


def format_scalar(value: Any, format_spec: str) -> str:
    """Format a 0-d tensor's value as ``f"{t:spec}"`` does in torch.

    torch formats the Python number ``t.item()``, so a float32 value shows all
    the digits of its float64 widening (``6.691762447357178``), not the rounded
    repr.  Tensors with dimensions fall back to ``object.__format__`` in torch:
    an empty spec means ``str(t)``, which the caller prints with ``tensor_repr``,
    and any other spec is the TypeError raised here.
    """
    array = np.asarray(value)
    if array.ndim != 0:
        if format_spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        raise ValueError("format_scalar needs a 0-d value; print the tensor with tensor_repr")
    return format(array.item(), format_spec)
