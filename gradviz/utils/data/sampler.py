"""Samplers: the order in which a ``DataLoader`` visits a map-style dataset, drawn as PyTorch draws it."""
from __future__ import annotations

import itertools


def _default():
    from gradviz import random as gradviz_random

    return gradviz_random.default_generator


class Sampler:
    """Gives dataset indices (or, for a batch sampler, lists of them) when iterated."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the indices (or, with ``replacement``, ``num_samples`` independent draws).

    Without a ``generator`` each pass seeds a fresh one from a draw of the default generator
    (``torch.empty((), dtype=torch.int64).random_()``), then uses ``randperm`` (or ``randint`` in
    blocks of 32): PyTorch's draws, so the same seed gives the same order."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        from gradviz._dtype import int64
        from gradviz.random import Generator
        from gradviz.tensor import empty, randint, randperm

        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = Generator()
            generator.manual_seed(int(empty((), dtype=int64).random_().item()))
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(high=n, size=(32,), dtype=int64, generator=generator).tolist()
            yield from randint(high=n, size=(self.num_samples % 32,), dtype=int64, generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator).tolist()
            yield from randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (``randperm`` from ``generator``, else the default one)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        from gradviz.tensor import randperm

        for i in randperm(len(self.indices), generator=self.generator or _default()).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with the given weights (``torch.multinomial``)."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None):
        from gradviz._dtype import float64
        from gradviz.tensor import as_tensor

        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = as_tensor(weights, dtype=float64)
        if len(weights.shape) != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights.shape)}")
        self.weights, self.num_samples, self.replacement, self.generator = weights, num_samples, replacement, generator

    def __iter__(self):
        from gradviz.ops.sampling import multinomial

        yield from multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (the last one shorter unless ``drop_last``)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        indices = iter(self.sampler)
        while True:
            batch = list(itertools.islice(indices, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
