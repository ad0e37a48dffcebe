"""``F.pad`` modes reflect, replicate and circular, and the ``nn`` padding layers, against PyTorch 2.13:
values, grads, ReflectionPadNDBackward0 / ReplicationPadNDBackward0 with their saved values, the
CopySlices-over-SliceBackward0 graph circular padding makes, printed layers, and errors.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402


def leaf(*shape) -> str:
    return (f"x = (torch.arange({int(np.prod(shape))}, dtype=torch.float64).reshape({list(shape)}) * 0.37 % 1.9)"
            ".requires_grad_()\n")


CASES = {}
for mode in ("reflect", "replicate", "circular"):
    CASES.update({
        f"{mode}_1d": leaf(2, 5) + weighted_backward(f"F.pad(x, (2, 1), mode={mode!r})") + "print(y)\n",
        f"{mode}_1d_batch": leaf(1, 2, 5) + weighted_backward(f"F.pad(x, [1, 3], mode={mode!r})"),
        f"{mode}_2d": leaf(1, 2, 4, 5) + weighted_backward(f"F.pad(x, (2, 1, 1, 3), mode={mode!r})"),
        f"{mode}_2d_no_batch": leaf(2, 4, 3) + weighted_backward(f"F.pad(x, (0, 2, 3, 1), mode={mode!r})"),
        f"{mode}_3d": leaf(1, 1, 3, 4, 3) + weighted_backward(f"F.pad(x, (1, 1, 2, 0, 1, 2), mode={mode!r})"),
        f"{mode}_negative": leaf(1, 2, 5) + weighted_backward(f"F.pad(x, (-1, 2), mode={mode!r})"),
    })
CASES.update({
    "layers": leaf(1, 2, 4, 4) + "layers = [torch.nn.ReflectionPad2d(1), torch.nn.ReplicationPad2d((1, 0, 2, 1)), "
    "torch.nn.CircularPad2d(2), torch.nn.ZeroPad2d((1, 2, 0, 1)), torch.nn.ConstantPad2d(1, 3.5)]\n"
    "for layer in layers:\n    print(layer)\n"
    "y = sum((layer(x) ** 2).sum() for layer in layers)\ny.backward()\n",
    "layers_1d_3d": leaf(1, 1, 2, 3, 3) + "layers = [torch.nn.ReflectionPad3d(1), torch.nn.ReplicationPad3d(2), "
    "torch.nn.CircularPad3d((1, 0, 0, 1, 1, 1)), torch.nn.ZeroPad3d(1), torch.nn.ConstantPad3d((1, 0, 0, 0, 0, 1), -1.0)]\n"
    "z = torch.ones(2, 5, requires_grad=True)\n"
    "for layer in layers + [torch.nn.ReflectionPad1d(2), torch.nn.ReplicationPad1d(3), torch.nn.CircularPad1d(1), "
    "torch.nn.ZeroPad1d(2), torch.nn.ConstantPad1d((2, 1), 0.5)]:\n    print(layer)\n"
    "y = sum(layer(x).sum() for layer in layers) + torch.nn.ReflectionPad1d(2)(z).sum()\ny.backward()\n",
})


@pytest.mark.parametrize("name", sorted(CASES))
def test_padding_matches_torch(name):
    assert_same(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_padding_matches_torch_on_the_torch_backend(name):
    assert_same(CASES[name], backend="torch")


ERRORS = [
    "F.pad(torch.ones(1, 2, 3), (3, 1), mode='reflect')",
    "F.pad(torch.ones(1, 3, 3), (1, 1, 3, 1), mode='reflect')",
    "F.pad(torch.ones(2, 3), (1, 1, 1, 1), mode='reflect')",
    "F.pad(torch.ones(3), (1, 1), mode='replicate')",
    "F.pad(torch.ones(1, 2, 3, 4), (1, 1), mode='circular')",
    "F.pad(torch.ones(1, 2, 3), (1, 1), mode='wrap')",
    "F.pad(torch.ones(1, 2, 3), (4, 1), mode='circular')",
    "F.pad(torch.ones(1, 2, 3), (1,), mode='reflect')",
    "F.pad(torch.ones(1, 2, 3), (1, 1), mode='reflect', value=2.0)",
    "F.pad(torch.ones(2, 3, 3), (1, 1, -3, -1), mode='replicate')",
]


@pytest.mark.parametrize("line", ERRORS)
def test_padding_errors_match_torch(line):
    assert_same_error(line + "\n")


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_gradient_by_central_differences(mode):
    rng = np.random.default_rng(11)
    array, weights = rng.normal(size=(1, 3, 4)), rng.normal(size=(1, 5, 7))

    def value(a):
        return float((gv.nn.functional.pad(gv.tensor(a), (2, 1, 1, 1), mode=mode).numpy() * weights).sum())

    x = gv.tensor(array, requires_grad=True)
    (gv.nn.functional.pad(x, (2, 1, 1, 1), mode=mode) * gv.tensor(weights)).sum().backward()
    numeric = np.zeros_like(array)
    for position in np.ndindex(*array.shape):
        up, down = array.copy(), array.copy()
        up[position] += 1e-6
        down[position] -= 1e-6
        numeric[position] = (value(up) - value(down)) / 2e-6
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_sparse_embedding_says_what_to_do():
    layer = gv.nn.Embedding(4, 3, sparse=True)
    with pytest.raises(NotImplementedError, match="gradviz has no sparse tensors: use sparse=False"):
        layer(gv.tensor([0, 2]))
