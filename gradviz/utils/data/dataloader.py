"""``DataLoader``: batches of a dataset, in PyTorch's order and with PyTorch's random draws.

Each pass (each ``iter(loader)``) first draws a base seed from the loader's generator (PyTorch gives it to
its worker processes), then a shuffling sampler draws the seed of its own generator and a ``randperm``
from it: the same draws as PyTorch's, so after ``manual_seed`` the batches agree and so does every
random number drawn after them.

Samples are always loaded in this process. With ``num_workers > 0`` PyTorch loads in worker processes
and still yields the batches in the sampler's order (``in_order=True``), so the batches are the same;
what differs is only inside the dataset's own code: ``get_worker_info()`` is ``None`` and
``worker_init_fn`` is not called (there is no worker to start).
"""
from __future__ import annotations

import math
import warnings

from gradviz.utils.data.collate import default_collate, default_convert
from gradviz.utils.data.dataset import IterableDataset
from gradviz.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


def get_worker_info():
    """``None``: gradviz loads every sample in the main process (see the module's docstring)."""
    return None


class _InfiniteConstantSampler(Sampler):
    """The "indices" of an iterable dataset: ``None`` forever (the dataset's own iterator decides)."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size`` samples (``batch_size=None``: one sample at
    a time, not batched), shuffled each pass with ``shuffle=True``, collated by ``collate_fn``."""

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers, self.prefetch_factor, self.timeout = num_workers, prefetch_factor, timeout
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.persistent_workers, self.in_order = persistent_workers, in_order

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What each step of a pass takes: a list of indices (batching) or one index."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        return _Pass(self)

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """PyTorch warns when more workers are asked for than CPUs; gradviz starts none."""


class _Pass:
    """One pass over a ``DataLoader`` (PyTorch's single-process iterator)."""

    def __init__(self, loader: DataLoader):
        from gradviz._dtype import int64
        from gradviz.tensor import empty

        if loader.num_workers == 0 and loader.timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._loader = loader
        self._indices = iter(loader._index_sampler)
        if loader.pin_memory:  # no accelerator pins memory for gradviz's numpy arrays
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=3)
        self._base_seed = int(empty((), dtype=int64).random_(generator=loader.generator).item())
        self._samples = iter(loader.dataset) if loader._iterable else None
        self._ended = False
        self._num_yielded = 0

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self):
        index = next(self._indices)
        loader = self._loader
        if self._samples is None:  # map-style: the sampler's indices
            if loader._auto_collation:
                getitems = getattr(loader.dataset, "__getitems__", None)
                data = getitems(index) if getitems else [loader.dataset[i] for i in index]
            else:
                data = loader.dataset[index]
        else:  # iterable: the dataset's own order
            data = self._next_samples(index, loader)
        self._num_yielded += 1
        return loader.collate_fn(data)

    def _next_samples(self, index, loader):
        if self._ended:
            raise StopIteration
        if not loader._auto_collation:
            return next(self._samples)
        data = []
        for _ in index:
            try:
                data.append(next(self._samples))
            except StopIteration:
                self._ended = True
                break
        if not data or (loader.drop_last and len(data) < len(index)):
            raise StopIteration
        return data
