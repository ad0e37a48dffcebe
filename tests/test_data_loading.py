"""``torch.utils.data`` against PyTorch 2.13: each program runs unchanged with ``torch`` bound to PyTorch and
to gradviz; what it prints (batches, their order, lengths, every random number drawn afterwards) and every
tensor it leaves must agree. A shuffling DataLoader must draw from the generator exactly as PyTorch's does,
so the programs draw ``rand`` after iterating to check the generator ended in the same place."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

DATA = """
torch.manual_seed(0)
data = torch.utils.data
X = torch.arange(20.).reshape(10, 2)
Y = torch.arange(10)
ds = data.TensorDataset(X, Y)
"""

PROGRAMS = {
    "tensor_dataset": DATA + """
print(len(ds), ds[3], ds[-1])
print(ds[2:4])
""",
    "sequential_batches": DATA + """
loader = data.DataLoader(ds, batch_size=4)
print(len(loader))
for xb, yb in loader:
    print(xb.shape, yb)
print(torch.rand(2))
""",
    "shuffled_epochs": DATA + """
torch.manual_seed(0)
loader = data.DataLoader(ds, batch_size=3, shuffle=True)
for epoch in range(3):
    print([yb.tolist() for _, yb in loader])
print(torch.rand(3))
""",
    "shuffled_drop_last": DATA + """
torch.manual_seed(7)
loader = data.DataLoader(ds, batch_size=4, shuffle=True, drop_last=True)
print(len(loader), [yb.tolist() for _, yb in loader], torch.randn(2))
""",
    "own_generator": DATA + """
g = torch.Generator()
g.manual_seed(3)
loader = data.DataLoader(ds, batch_size=5, shuffle=True, generator=g)
print([yb.tolist() for _, yb in loader], [yb.tolist() for _, yb in loader], torch.rand(1))
""",
    "partial_pass": DATA + """
torch.manual_seed(1)
loader = data.DataLoader(ds, batch_size=2, shuffle=True)
it = iter(loader)
print(next(it)[1], len(it))
print(torch.rand(1))
print(next(it)[1])
""",
    "no_batching": DATA + """
loader = data.DataLoader(ds, batch_size=None)
print(len(loader), next(iter(loader)))
torch.manual_seed(2)
print([int(y) for _, y in data.DataLoader(ds, batch_size=None, shuffle=True)])
""",
    "collate_kinds": """
import collections
import numpy as np
data = torch.utils.data
Point = collections.namedtuple("Point", ["x", "y"])
class Samples(data.Dataset):
    def __init__(self, make):
        self.make = make
    def __len__(self):
        return 5
    def __getitem__(self, i):
        return self.make(i)
for make in (lambda i: float(i) / 2, lambda i: i, lambda i: i % 2 == 0, lambda i: f"s{i}",
             lambda i: np.arange(3) * i, lambda i: np.float32(i), lambda i: {"a": torch.tensor([i, i]), "b": i * 1.5},
             lambda i: Point(torch.tensor(i), [i, i + 1]), lambda i: [i, (i, "x")], lambda i: (torch.ones(2) * i, i)):
    batch = next(iter(data.DataLoader(Samples(make), batch_size=3)))
    print(type(batch).__name__, batch)
print(data.default_collate([(1, 2.0), (3, 4.0)]))
print(data.default_convert([np.arange(2), (np.float64(1.5), "t")]), data.default_convert({"k": np.ones(1)}))
""",
    "random_split": DATA + """
torch.manual_seed(0)
train, test = data.random_split(ds, [7, 3])
print(len(train), len(test), train.indices, test.indices, [int(y) for _, y in test])
parts = data.random_split(ds, [0.5, 0.3, 0.2], generator=torch.Generator().manual_seed(42))
print([p.indices for p in parts])
parts = data.random_split(range(7), [0.5, 0.5])
print([list(p) for p in parts], torch.rand(1))
""",
    "subset_concat_stack": DATA + """
sub = data.Subset(ds, [4, 0, 2])
print(len(sub), sub[1], sub[-1])
both = data.ConcatDataset([sub, ds])
print(len(both), both[2], both[3], both[-1], both.cumulative_sizes)
print(len(sub + ds))
stacked = data.StackDataset(X, Y)
print(stacked[1], data.StackDataset(x=X, y=Y)[2])
print(next(iter(data.DataLoader(both, batch_size=4))))
""",
    "samplers": DATA + """
print(list(data.SequentialSampler(ds)))
torch.manual_seed(5)
print(list(data.RandomSampler(ds)), list(data.RandomSampler(ds, replacement=True, num_samples=40)))
print(list(data.RandomSampler(ds, num_samples=23)))
print(list(data.SubsetRandomSampler([10, 20, 30, 40])))
print(list(data.WeightedRandomSampler([0.1, 0.9, 0.4, 0.7], 8)))
print(list(data.WeightedRandomSampler([0.1, 0.9, 0.4, 0.7], 3, replacement=False)))
print(list(data.BatchSampler(data.SequentialSampler(range(7)), 3, False)),
      list(data.BatchSampler(range(7), 3, True)), len(data.BatchSampler(range(7), 3, True)))
loader = data.DataLoader(ds, batch_sampler=data.BatchSampler(data.RandomSampler(ds), 4, False))
print([y.tolist() for _, y in loader], torch.rand(1))
loader = data.DataLoader(ds, sampler=data.SubsetRandomSampler([1, 3, 5, 7]), batch_size=2)
print([y.tolist() for _, y in loader])
""",
    "iterable_dataset": """
torch.manual_seed(0)
data = torch.utils.data
class Stream(data.IterableDataset):
    def __init__(self, n):
        self.n = n
    def __iter__(self):
        return iter(range(self.n))
    def __len__(self):
        return self.n
print([b.tolist() for b in data.DataLoader(Stream(7), batch_size=3)])
print([b.tolist() for b in data.DataLoader(Stream(7), batch_size=3, drop_last=True)])
print(len(data.DataLoader(Stream(7), batch_size=3)), len(data.DataLoader(Stream(7), batch_size=3, drop_last=True)))
print(list(data.DataLoader(Stream(3), batch_size=None)))
batches = list(data.DataLoader(Stream(2) + Stream(3), batch_size=2))
print(batches, torch.rand(1))
""",
    "minibatch_training": """
torch.manual_seed(0)
X = torch.randn(64, 3)
true_w = torch.tensor([[2.0], [-1.0], [0.5]])
y = X @ true_w + 0.1 * torch.randn(64, 1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=16, shuffle=True)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    total = 0.0
    for xb, yb in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        total += loss.item() * len(xb)
    print(epoch, round(total / len(X), 4))
print(model.weight.data.round(decimals=3))
""",
    "workers_and_pinning_are_accepted": DATA + """
torch.manual_seed(4)
loader = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True, num_workers=0, persistent_workers=False)
print([y.tolist() for _, y in loader], torch.utils.data.get_worker_info())
""",
}

ERRORS = {
    "tensor_dataset_sizes": "torch.utils.data.TensorDataset(torch.ones(3), torch.ones(4))",
    "shuffle_with_sampler": DATA + "data.DataLoader(ds, sampler=data.SequentialSampler(ds), shuffle=True)",
    "batch_sampler_with_batch_size": DATA + "data.DataLoader(ds, batch_size=2, batch_sampler=[[0, 1]])",
    "no_batching_drop_last": DATA + "data.DataLoader(ds, batch_size=None, drop_last=True)",
    "negative_workers": DATA + "data.DataLoader(ds, num_workers=-1)",
    "negative_timeout": DATA + "data.DataLoader(ds, timeout=-1)",
    "prefetch_without_workers": DATA + "data.DataLoader(ds, prefetch_factor=2)",
    "persistent_without_workers": DATA + "data.DataLoader(ds, persistent_workers=True)",
    "bad_batch_size": DATA + "data.BatchSampler(range(3), 0, False)",
    "bad_drop_last": DATA + "data.BatchSampler(range(3), 2, 1)",
    "bad_replacement": DATA + "data.RandomSampler(ds, replacement=1)",
    "bad_num_samples": DATA + "data.RandomSampler(ds, num_samples=0)",
    "weights_2d": DATA + "data.WeightedRandomSampler([[0.1, 0.2]], 2)",
    "split_lengths": DATA + "data.random_split(ds, [3, 3])",
    "split_fraction": DATA + "data.random_split(ds, [1.5, -0.5])",
    "iterable_shuffle": "class S(torch.utils.data.IterableDataset):\n    def __iter__(self):\n        return iter([1])\n"
                        "torch.utils.data.DataLoader(S(), shuffle=True)",
    "ragged_samples": "torch.utils.data.default_collate([[1, 2], [3]])",
    "uncollatable": "torch.utils.data.default_collate([object(), object()])",
    "string_arrays": "import numpy as np\ntorch.utils.data.default_collate([np.array(['a']), np.array(['b'])])",
    "unequal_tensors": "torch.utils.data.default_collate([torch.ones(2), torch.ones(3)])",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_data_loading_matches_torch(name):
    assert_same(PROGRAMS[name])


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_data_loading_errors_match_torch(name):
    assert_same_error(ERRORS[name])
