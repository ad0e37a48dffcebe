"""How a list of samples becomes a batch (``default_collate``), and how samples are passed on when the
``DataLoader`` does not batch (``default_convert``): PyTorch's rules, type by type."""
from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

_STRING_OR_OBJECT = re.compile(r"[SaUO]")  # numpy dtypes that cannot become a tensor
COLLATE_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_numpy(value) -> bool:
    return type(value).__module__ == "numpy" and type(value).__name__ not in ("str_", "string_")


def default_collate(batch):
    """Stack a list of samples into a batch: tensors (and numpy arrays) stacked along a new first
    dimension, Python floats into a float64 tensor, ints into an int64 one, strings kept as a list;
    tuples, lists, named tuples and dicts collated field by field (a tuple gives a list)."""
    from gradviz._dtype import float64
    from gradviz.ops.combine import stack
    from gradviz.tensor import Tensor, as_tensor, tensor

    element = batch[0]
    kind = type(element)
    if isinstance(element, Tensor):
        return stack(batch, 0)
    if isinstance(element, np.ndarray):
        if _STRING_OR_OBJECT.search(element.dtype.str) is not None:
            raise TypeError(COLLATE_ERROR.format(element.dtype))
        return default_collate([as_tensor(b) for b in batch])
    if isinstance(element, (np.bool_, np.number)):
        return as_tensor(batch)
    if isinstance(element, float):
        return tensor(batch, dtype=float64)
    if isinstance(element, int):
        return tensor(batch)
    if isinstance(element, (str, bytes)):
        return batch
    if isinstance(element, collections.abc.Mapping):
        fields = {key: default_collate([sample[key] for sample in batch]) for key in element}
        return _same_kind(element, fields, mapping=True)
    if isinstance(element, tuple) and hasattr(element, "_fields"):  # a named tuple
        return kind(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(element, collections.abc.Sequence):
        size = len(element)
        if not all(len(sample) == size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [default_collate(samples) for samples in zip(*batch)]
        if isinstance(element, tuple):
            return columns  # PyTorch's choice, kept for backward compatibility: a tuple gives a list
        return _same_kind(element, columns, mapping=False)
    raise TypeError(COLLATE_ERROR.format(kind))


def default_convert(data):
    """Pass a sample on without batching: numpy arrays and numbers become tensors (as ``as_tensor``
    makes them), containers are converted inside; anything else is returned as it is."""
    from gradviz.tensor import Tensor, as_tensor

    if isinstance(data, Tensor):
        return data
    if _is_numpy(data):
        if isinstance(data, np.ndarray) and _STRING_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _same_kind(data, {key: default_convert(data[key]) for key in data}, mapping=True)
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_kind(data, [default_convert(d) for d in data], mapping=False)
    return data


def _same_kind(like, items, mapping: bool):
    """``items`` in a container of ``like``'s type where that type allows it (a copy updated in place for
    a mutable one, the type called on the items otherwise), else a plain dict or list."""
    try:
        if isinstance(like, collections.abc.MutableMapping if mapping else collections.abc.MutableSequence):
            clone = copy.copy(like)
            if mapping:
                clone.update(items)
            else:
                for i, item in enumerate(items):
                    clone[i] = item
            return clone
        return type(like)(items)
    except TypeError:
        return dict(items) if mapping else list(items)
