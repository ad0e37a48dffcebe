"""Devices with PyTorch's printing: ``device(type='cpu')``, ``cuda:0``."""
from __future__ import annotations


# the other device types PyTorch names (in its order) when a device string starts with none of them
_OTHER_TYPES = ("ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla", "lazy", "vulkan",
                "mps", "meta", "hpu", "mtia", "privateuseone")


class device:
    __slots__ = ("type", "index")

    def __init__(self, type_or_text="cpu", index: int | None = None):
        if isinstance(type_or_text, device):
            type_or_text, index = type_or_text.type, type_or_text.index
        text = str(type_or_text)
        if ":" in text:
            text, number = text.split(":", 1)
            if not number.isdigit():
                raise RuntimeError(f"Invalid device string: '{type_or_text}'")
            index = int(number)
        if text not in ("cpu", "cuda"):
            if text in _OTHER_TYPES:  # a device PyTorch knows, which gradviz (numpy or torch on cpu/cuda) cannot use
                raise RuntimeError(f"gradviz runs on the cpu and on cuda devices, not on '{text}'")
            raise RuntimeError(f"Expected one of cpu, cuda, {', '.join(_OTHER_TYPES)} device type at start of device "
                               f"string: {type_or_text}")
        if text == "cuda" and index is None:
            index = 0
        self.type = text
        self.index = index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = device("cpu")
