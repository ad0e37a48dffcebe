"""The padding layers: ``nn.ReflectionPad1d``, ``ReplicationPad2d``, ``CircularPad1d``, ``ZeroPad2d``,
``ConstantPad3d`` ... each ``F.pad`` with its mode and the padding it was built with.

An int pads every side by that much; a tuple lists (before, after) for the last dim first, as ``F.pad``.
"""
from __future__ import annotations

from gradviz.nn.modules import Module
from gradviz.ops.padding import pad


class _PadNd(Module):
    mode = "constant"
    dims = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = (padding,) * (2 * self.dims) if isinstance(padding, int) else tuple(padding)

    def forward(self, input):
        return pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


def _layer(name: str, base, mode: str, dims: int):
    return type(name, (base,), {"mode": mode, "dims": dims, "__module__": __name__,
                                "__doc__": f"``F.pad(input, padding, mode={mode!r})`` over the last {dims} dim(s)."})


ReflectionPad1d = _layer("ReflectionPad1d", _PadNd, "reflect", 1)
ReflectionPad2d = _layer("ReflectionPad2d", _PadNd, "reflect", 2)
ReflectionPad3d = _layer("ReflectionPad3d", _PadNd, "reflect", 3)
ReplicationPad1d = _layer("ReplicationPad1d", _PadNd, "replicate", 1)
ReplicationPad2d = _layer("ReplicationPad2d", _PadNd, "replicate", 2)
ReplicationPad3d = _layer("ReplicationPad3d", _PadNd, "replicate", 3)
CircularPad1d = _layer("CircularPad1d", _PadNd, "circular", 1)
CircularPad2d = _layer("CircularPad2d", _PadNd, "circular", 2)
CircularPad3d = _layer("CircularPad3d", _PadNd, "circular", 3)
ConstantPad1d = _layer("ConstantPad1d", _ConstantPadNd, "constant", 1)
ConstantPad2d = _layer("ConstantPad2d", _ConstantPadNd, "constant", 2)
ConstantPad3d = _layer("ConstantPad3d", _ConstantPadNd, "constant", 3)


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


ZeroPad1d = _layer("ZeroPad1d", _ZeroPadNd, "constant", 1)
ZeroPad2d = _layer("ZeroPad2d", _ZeroPadNd, "constant", 2)
ZeroPad3d = _layer("ZeroPad3d", _ZeroPadNd, "constant", 3)

PADDING_LAYERS = ("ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
                  "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
                  "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d")
