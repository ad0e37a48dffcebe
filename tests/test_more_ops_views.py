"""``x.view(dtype)``, PyTorch's TypeErrors for ``reshape``/``permute``/``view`` misuse, and ``logsumexp`` over
``dim=()``, against PyTorch 2.13 itself."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

X = "x = torch.arange(24.0).reshape(2, 3, 4).requires_grad_()\n"

VIEWS = {
    "same_size": X + "y = x.view(torch.int32)\nz = x.view(torch.float32)\nprint(y, z, y.requires_grad, z.grad_fn)\n",
    "smaller": X + "y = x.detach().view(torch.int16)\nz = x.detach().view(torch.uint8)\nw = x.view(torch.float16)\n"
    "print(y.shape, z.shape, w)\n",
    "larger": X + "y = x.detach().view(torch.float64)\nz = x.detach()[:, 1].view(torch.float64)\n"
    "w = x.detach()[:, :, :2].view(torch.float64)\nprint(y, z, w)\n",
    "keyword_and_bool": X + "y = x.view(dtype=torch.int32)\nz = torch.tensor([True, False]).view(torch.uint8)\n"
    "w = x.float().view(torch.bool)\nprint(y, z, w.shape)\n",
    "ints_as_floats": "y = torch.tensor([1, 2]).view(torch.float64)\nz = torch.tensor([1, 2], dtype=torch.int32)"
    ".view(torch.float32)\nprint(y, z)\n",
    "strided_same_size": X + "y = x.detach().transpose(0, 2).view(torch.int32)\nprint(y, y.stride())\n",
    "shares_memory": X + "base = x.detach().clone()\ny = base.view(torch.int32)\ny[0, 0, 1] = 1073741824\nprint(base[0, 0])\n"
    "base[0, 0, 0] = 1.0\nprint(y[0, 0])\n",
}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_dtype_matches_torch(name, backend):
    assert_same(VIEWS[name], backend=backend)


ERRORS = [
    X + "x.detach()[:, :, :3].view(torch.float64)",
    X + "x.detach()[:, :, 1].view(torch.float64)",
    X + "x.detach()[:, :, 1:3].view(torch.float64)",
    X + "x.detach().transpose(0, 2).view(torch.int16)",
    "torch.tensor(1.0).view(torch.int16)",
    X + "x.view(torch.int32, 3)",
    X + "x.view(2.0, 12)",
    X + "x.view('float')",
    X + "torch.reshape(x, 24)",
    X + "torch.reshape(x, 2.0)",
    X + "torch.reshape(x, '24')",
    X + "torch.reshape(x)",
    X + "torch.reshape(x, (2, 'a'))",
    X + "x.reshape('a')",
    X + "x.reshape(2.5)",
    X + "x.reshape((2, 'a'))",
    X + "x.reshape(2.0, 12)",
    X + "x.reshape()",
    X + "x.permute(0, 1)",
    X + "x.permute(0, 1, 1)",
    X + "x.permute(0, 1, 3)",
    X + "x.permute([0, 1])",
    X + "x.permute(2.0, 0, 1)",
    X + "x.permute(0, 1, 2.0)",
    X + "x.permute()",
    X + "x.permute('a')",
    X + "x.permute(0, 1, -4)",
    X + "torch.permute(x, 2, 0, 1)",
    X + "torch.permute(x, [2, 0])",
    X + "torch.permute(x)",
    X + "torch.logsumexp(x, dim=())",
    X + "x.logsumexp(())",
    X + "torch.logsumexp(x, dim=[])",
    "torch.logsumexp(torch.tensor([1, 2]), ())",
]


@pytest.mark.parametrize("code", ERRORS)
def test_misuse_raises_as_torch(code):
    assert_same_error(code + "\n")


def test_forms_that_work():
    assert_same(X + "a = torch.reshape(x, (24,))\nb = torch.reshape(x, [4, 6])\nc = x.reshape(24)\n"
                "d = torch.permute(x, (2, 0, 1))\ne = x.permute(dims=(2, 0, 1))\nf = x.permute(0, 1, -1)\n"
                "g = x.permute((2, 0, 1))\nh = x.view(6, 4)\ni = x.view((4, 6))\nj = x.view(size=(24,))\n"
                "k = torch.logsumexp(x, (), keepdim=True)\nm = torch.logsumexp(torch.tensor(2.0), ())\n"
                "(a.sum() + d.sum() + k.sum() + h.sum()).backward()\nprint(k, m)\n")
