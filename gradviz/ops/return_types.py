"""``torch.return_types``: the named pairs that ``min(dim)``, ``sort``, ``topk`` ... return.

Each is a named tuple (``values, indices = x.sort()`` unpacks it, ``.values`` reads it) that
prints as PyTorch prints it: ``torch.return_types.sort(values=tensor(...), indices=tensor(...))``.
"""
from __future__ import annotations

from collections import namedtuple


def _return_type(name: str, fields: tuple[str, ...] = ("values", "indices")):
    base = namedtuple(name, fields)

    def __repr__(self) -> str:
        body = ",\n".join(f"{field}={value!r}" for field, value in zip(fields, self))
        return f"torch.return_types.{name}(\n{body})"

    kind = type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__str__": __repr__,
                                "__doc__": f"What ``{name}`` returns: ``({', '.join(fields)})``."})
    kind.__module__ = "torch.return_types"
    return kind


max = _return_type("max")  # noqa: A001 - PyTorch's names
min = _return_type("min")  # noqa: A001
sort = _return_type("sort")
topk = _return_type("topk")
kthvalue = _return_type("kthvalue")
# the order statistics and summaries
median = _return_type("median")
nanmedian = _return_type("nanmedian")
mode = _return_type("mode")
cummax = _return_type("cummax")
cummin = _return_type("cummin")
aminmax = _return_type("aminmax", ("min", "max"))
# -- frexp's (mantissa, exponent), and its out= form's (ops/integer_math.py) ---------------------------------------
frexp = _return_type("frexp", ("mantissa", "exponent"))
frexp_out = _return_type("frexp_out", ("mantissa", "exponent"))
# -- histogram's (hist, bin_edges) (ops/statistics_more.py) ----------------------------------------------------
histogram = _return_type("histogram", ("hist", "bin_edges"))
