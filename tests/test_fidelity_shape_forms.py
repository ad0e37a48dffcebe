"""Shape methods in every form PyTorch 2.13 accepts, and its TypeErrors for the others: the list of ints as
separate numbers (``x.flip(-1, 0)``, ``x.tile(2, 1)``, ``s.squeeze(0, 2)``), as one tuple or list, or by keyword
(``x.permute(dims=...)``, ``x.view(size=...)``); function forms take a tuple only (``torch.flip(x, 0)`` raises);
``sum``/``mean`` over ``dim=()`` reduce every dim. Each line runs in torch and gradviz, on both backends."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

SETUP = ("x = torch.arange(24.).reshape(2, 3, 4).requires_grad_()\n"
         "s = torch.ones(1, 3, 1, 2, requires_grad=True)\n")

ACCEPTED = [
    "x.flip(-1, 0)", "x.flip((-1, 0))", "x.flip([0])", "x.flip(0)", "x.flip(dims=(0,))", "torch.flip(x, (0, 1))",
    "torch.flip(x, [1])", "x.permute(1, 0, 2)", "x.permute((1, 0, 2))", "x.permute([1, 0, 2])",
    "x.permute(dims=(1, 0, 2))", "x.permute(-1, 0, 1)", "torch.permute(x, (2, 0, 1))", "x.permute(*[2, 1, 0])",
    "x.tile(2)", "x.tile(2, 1)", "x.tile((2, 1))", "x.tile([1, 2, 1, 1])", "x.tile(dims=(2,))",
    "torch.tile(x, (2,))", "x.repeat(2, 1, 1)", "x.repeat((2, 1, 1))", "x.repeat([1, 1, 2])",
    "x.repeat(repeats=(2, 1, 1))", "x.repeat(1, 1, 1, 2)", "x.view(6, 4)", "x.view((6, 4))", "x.view([6, -1])",
    "x.view(size=(24,))", "x.view(-1)", "x.reshape(6, 4)", "x.reshape((6, 4))", "x.reshape([6, -1])",
    "x.reshape(shape=(24,))", "x.reshape(-1)", "torch.reshape(x, (4, 6))", "x.expand(2, 2, 3, 4)",
    "x.expand((2, 2, 3, 4))", "x.expand([2, -1, -1, -1])", "x.expand(size=(2, 2, 3, 4))", "x.sum(dim=(0, 2))",
    "x.sum((0, 2))", "x.sum([0, 1])", "x.sum(dim=[0, -1], keepdim=True)", "x.sum(dim=())", "x.sum(dim=[])",
    "x.sum((), True)", "torch.sum(x, (0, 1))", "x.mean(dim=(0, 2))", "x.mean((0, 1))", "x.mean(dim=())",
    "x.mean(1, True)", "s.squeeze((0, 2))", "s.squeeze([0, 2])", "s.squeeze(0, 2)", "s.squeeze(dim=(0, 2))",
    "s.squeeze(1)", "s.squeeze(dim=0)", "s.squeeze()", "torch.squeeze(s, (0, 2))", "x.unsqueeze(0)",
    "x.unsqueeze(dim=-1)", "torch.unsqueeze(x, 1)", "x.amax(dim=())", "x.amin(())",
]

REFUSED = [
    "x.flip(dims=0)", "torch.flip(x, 0)", "x.flip(0, dims=(1,))", "x.flip(dims=[0], foo=1)", "x.flip(0, (1,))",
    "x.flip(1.0)", "x.permute(dims=1)", "x.permute(1, 0)", "x.permute(0, 0, 1)", "x.tile(dims=2)",
    "torch.tile(x, 2)", "x.repeat(repeats=2)", "x.repeat(2)", "x.view(2, (3, 4))", "x.view(5, 5)", "x.view(-1, -1)",
    "x.reshape(shape=24)", "x.reshape(5, 5)", "x.expand(size=2)", "x.expand(3, 3, 4)", "x.sum(0, 2)",
    "x.mean(0, 2)", "x.unsqueeze((0,))", "x.unsqueeze(0, 1)", "x.unsqueeze(5)", "s.squeeze((0, 5))",
]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("line", ACCEPTED)
def test_shape_method_forms_match_torch(line, backend):
    assert_same(SETUP + f"y = {line}\n(y * torch.arange(1.0, y.numel() + 1.0).reshape(y.shape)).sum().backward()\n"
                "print(y)\n", backend=backend)


@pytest.mark.parametrize("line", REFUSED)
def test_shape_method_forms_torch_refuses_raise_its_error(line):
    assert_same_error(SETUP + line + "\n")
