"""``torch.utils.data``: datasets, samplers and the ``DataLoader`` that batches them.

The batches and their order are PyTorch's: a shuffling ``DataLoader`` draws its seeds from the same
generator, in the same order, as PyTorch's does, so after ``manual_seed`` both give the same batches
and leave the generator in the same place (a later ``randn`` agrees too). Loading always happens in
this process: ``num_workers`` is accepted and changes nothing but where PyTorch would have loaded
(see ``dataloader.py``).
"""
from gradviz.utils.data.collate import default_collate, default_convert
from gradviz.utils.data.dataloader import DataLoader, get_worker_info
from gradviz.utils.data.dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                                        TensorDataset, random_split)
from gradviz.utils.data.sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                                        WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
           "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert", "get_worker_info",
           "random_split"]
