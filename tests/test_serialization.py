"""``torch.save`` / ``torch.load`` in PyTorch's file format: what gradviz saves, PyTorch 2.13 loads (and the
other way round) with the same values, dtypes, shapes, strides, parameters and shared storage; a program
that saves and loads runs unchanged in both; ``weights_only`` refuses what PyTorch's refuses."""
from __future__ import annotations

import io
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gradviz  # noqa: E402
from parity import assert_same  # noqa: E402


def _objects(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 1))
    base = lib.arange(12.).reshape(3, 4)
    return {"state": model.state_dict(), "weight": model[0].weight, "view": base[:, 1:3], "transposed": base.t(),
            "base": base, "ints": lib.arange(5), "bools": lib.tensor([True, False]), "half": lib.ones(3, dtype=lib.float16),
            "double": lib.tensor([1.5, -2.0], dtype=lib.float64), "scalar": lib.tensor(3.25), "empty": lib.zeros(0, 2),
            "leaf": lib.tensor([1.0, 2.0], requires_grad=True), "nested": [lib.ones(1), (2, "text", None)],
            "number": 7, "bytes8": lib.tensor([1, 255], dtype=lib.uint8), "int32": lib.tensor([-3], dtype=lib.int32)}


def _flat(value, path=""):
    """(path, kind, dtype, shape, stride, values, requires_grad, is parameter) of every tensor, and the rest."""
    if isinstance(value, dict):
        return [item for key in value for item in _flat(value[key], f"{path}/{key}")]
    if isinstance(value, (list, tuple)):
        return [item for i, v in enumerate(value) for item in _flat(v, f"{path}/{i}")]
    if hasattr(value, "stride") and hasattr(value, "dtype"):
        array = value.detach().numpy() if hasattr(value, "numpy") else np.asarray(value)
        return [(path, str(value.dtype).replace("torch.", "").replace("gradviz.", ""), tuple(value.shape),
                 tuple(value.stride()), array.tolist(), value.requires_grad,
                 type(value).__name__ == "Parameter")]
    return [(path, value)]


def _same(expected, actual):
    assert _flat(actual) == _flat(expected)


def test_what_gradviz_saves_torch_loads(tmp_path):
    path = tmp_path / "from_gradviz.pt"
    gradviz.save(_objects(gradviz), path)
    loaded = torch.load(path)
    _same(_objects(torch), loaded)
    # memory shared in gradviz is shared in the file: one storage for the base, its view and its transpose
    pointers = {loaded[k].untyped_storage().data_ptr() for k in ("view", "transposed", "base")}
    assert len(pointers) == 1
    assert loaded["weight"].untyped_storage().data_ptr() == loaded["state"]["0.weight"].untyped_storage().data_ptr()


def test_what_torch_saves_gradviz_loads(tmp_path):
    path = tmp_path / "from_torch.pt"
    torch.save(_objects(torch), path)
    loaded = gradviz.load(path)
    _same(_objects(gradviz), loaded)
    loaded["view"][0, 0] = 100.0  # shared storage, as in torch
    assert loaded["base"][0, 1].item() == 100.0 and loaded["transposed"][1, 0].item() == 100.0


def test_a_layout_numpy_cannot_share_is_saved_as_a_copy():
    flipped = gradviz.Tensor._make(np.arange(6.0)[::-1])  # a negative stride: torch has none
    buffer = io.BytesIO()
    gradviz.save({"flipped": flipped}, buffer)
    buffer.seek(0)
    assert torch.load(buffer)["flipped"].tolist() == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]


def test_the_archive_is_laid_out_as_torchs(tmp_path):
    import zipfile

    gradviz.save({"w": gradviz.ones(3)}, tmp_path / "mine.pt")
    torch.save({"w": torch.ones(3)}, tmp_path / "theirs.pt")
    mine, theirs = (zipfile.ZipFile(tmp_path / name) for name in ("mine.pt", "theirs.pt"))
    assert [n.replace("mine/", "") for n in mine.namelist()] == [n.replace("theirs/", "") for n in theirs.namelist()]
    for info in mine.infolist():
        if "/data/" in info.filename:  # the bytes of every storage start on a 64-byte boundary
            assert (info.header_offset + 30 + len(info.filename) + len(info.extra)) % 64 == 0
    assert mine.read("mine/data/0") == theirs.read("theirs/data/0")


PROGRAMS = {
    "state_dict_round_trip": """
import io
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
buffer.seek(0)
fresh = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
print(fresh.load_state_dict(torch.load(buffer, weights_only=True)))
x = torch.tensor([[0.5, -1.0]])
y = fresh(x)
print(y, torch.equal(y, model(x)))
""",
    "whole_model": """
import io
torch.manual_seed(1)
model = torch.nn.Linear(2, 2)
buffer = io.BytesIO()
torch.save(model, buffer)
buffer.seek(0)
again = torch.load(buffer, weights_only=False)
weight = again.weight
print(again, weight, torch.equal(again.bias, model.bias))
""",
    "checkpoint_with_optimizer": """
import io
torch.manual_seed(2)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
model(torch.ones(1, 3)).sum().backward()
opt.step()
buffer = io.BytesIO()
torch.save({"epoch": 3, "model": model.state_dict(), "optimizer": opt.state_dict(), "loss": 0.25}, buffer)
buffer.seek(0)
checkpoint = torch.load(buffer)
opt2 = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
opt2.load_state_dict(checkpoint["optimizer"])
print(checkpoint["epoch"], checkpoint["loss"], opt2.state_dict())
momentum = opt2.state_dict()["state"][0]["momentum_buffer"]
""",
    "tensors_and_containers": """
import io
buffer = io.BytesIO()
a = torch.arange(6.).reshape(2, 3)
torch.save([a, a[1], {"t": a.t(), "n": None}], buffer)
buffer.seek(0)
x, row, d = torch.load(buffer)
row += 10
print(x, d["t"], d["n"])
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_saving_programs_match_torch(name):
    assert_same(PROGRAMS[name])


def test_weights_only_refuses_a_whole_model_as_torch_does():
    for lib in (torch, gradviz):
        buffer = io.BytesIO()
        lib.save(lib.nn.Linear(2, 1), buffer)
        buffer.seek(0)
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as caught:
            lib.load(buffer)
        module = type(lib.nn.Linear(2, 1)).__module__
        assert f"GLOBAL {module}.Linear was not an allowed global by default" in str(caught.value)
    buffer.seek(0)
    with gradviz.serialization.safe_globals([gradviz.nn.Linear]):
        assert isinstance(gradviz.load(buffer), gradviz.nn.Linear)
    assert gradviz.serialization.get_safe_globals() == []


def test_saving_draws_no_random_numbers_and_changes_nothing():
    gradviz.manual_seed(5)
    x = gradviz.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    gradviz.save({"x": x, "y": y}, io.BytesIO())
    assert gradviz.rand(1).item() == (gradviz.manual_seed(5), gradviz.rand(1).item())[1]
    assert x._version == 0 and y.grad_fn.name() == "MulBackward0" and x.grad is None
