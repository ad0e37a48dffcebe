"""Datasets: anything with ``__getitem__`` and ``__len__`` (map-style) or ``__iter__`` (iterable)."""
from __future__ import annotations

import bisect
import itertools
import math
import warnings


class Dataset:
    """A map-style dataset: ``dataset[i]`` is one sample. ``a + b`` concatenates two."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: ``iter(dataset)`` gives the samples. ``a + b`` chains two."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``: the tensors must share their first dimension."""

    def __init__(self, *tensors):
        assert all(tensors[0].size(0) == tensor.size(0) for tensor in tensors), "Size mismatch between tensors"
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Samples of several datasets side by side: as a tuple (``StackDataset(a, b)``) or a dict
    (``StackDataset(x=a, y=b)``)."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        datasets = args or tuple(kwargs.values())
        self._length = len(datasets[0])
        if any(self._length != len(dataset) for dataset in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: dataset[index] for key, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Several map-style datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        assert len(self.datasets) > 0, "datasets should not be an empty iterable"
        for dataset in self.datasets:
            assert not isinstance(dataset, IterableDataset), "ConcatDataset does not support IterableDataset"
        self.cumulative_sizes = list(itertools.accumulate(len(dataset) for dataset in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index = len(self) + index
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][index - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for dataset in self.datasets:
            assert isinstance(dataset, IterableDataset), "ChainDataset only supports IterableDataset"
            yield from dataset

    def __len__(self) -> int:
        total = 0
        for dataset in self.datasets:
            assert isinstance(dataset, IterableDataset), "ChainDataset only supports IterableDataset"
            total += len(dataset)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: list) -> list:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset, lengths, generator=None) -> list:
    """Split ``dataset`` into non-overlapping random subsets of the given lengths (or fractions of its
    length that sum to 1), with PyTorch's permutation: ``randperm(len(dataset))`` from ``generator``
    (the default generator if none)."""
    from gradviz import random as gradviz_random
    from gradviz.tensor import randperm

    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, fraction in enumerate(lengths):
            if fraction < 0 or fraction > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(int(math.floor(len(dataset) * fraction)))
        remainder = len(dataset) - sum(sizes)
        for i in range(remainder):  # one more each, round-robin from the first
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = sizes
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator or gradviz_random.default_generator).tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]
