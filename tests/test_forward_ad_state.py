"""Forward-mode AD state that PyTorch 2.13 keeps and gradviz must too: a float64 tangent on a float32 primal keeps
its dtype through ops without a written rule; in-place ops under ``no_grad`` on a dual tensor update its tangent
(the optimizer's fast path included: ``d.mul_(2.0)``); the tangent of a view is a view of the tangent (memory
shared both ways). Each snippet runs in torch and gradviz; what it prints and leaves must agree."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same  # noqa: E402


pytestmark = pytest.mark.usefixtures("no_dual_level_left")


HEAD = ("fwAD = torch.autograd.forward_ad\n"
        "p = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])\n"
        "v = torch.tensor([[1.0, 0.5, -2.0], [0.0, 1.0, 0.25]])\n")

DTYPE_OPS = ["d.sin()", "d.exp()", "(d + 3).log()", "d.atan()", "d * 2", "d.abs()", "torch.special.i0(d)",
             "d.logcumsumexp(1)", "(d + 3).sqrt()", "d.softmax(1)", "d.erf()", "d.sum(0)", "d[0]"]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("expression", DTYPE_OPS)
def test_float64_tangent_on_float32_primal_keeps_its_dtype(expression, backend):
    assert_same(HEAD + "with fwAD.dual_level():\n"
                "    d = fwAD.make_dual(p, v.double())\n"
                f"    y = {expression}\n"
                "    out, t = fwAD.unpack_dual(y)\n"
                "    print(t.dtype, out.dtype)\n", backend=backend)


IN_PLACE = {
    "number_floats": "d.mul_(2.0)\n        d.add_(1.5)\n        d.sub_(0.5)\n        d.div_(4.0)\n",
    "number_ints": "d.mul_(2)\n        d.add_(1)\n",
    "tensor_plain": "d.mul_(torch.full((2, 3), 3.0))\n        d.add_(torch.ones(2, 3), alpha=2)\n",
    "tensor_dual": "d.mul_(e)\n        d.sub_(e)\n",
    "unary": "d.exp_()\n        d.sin_()\n",
    "copy": "d.copy_(e)\n",
    "view_written": "d[0].mul_(3.0)\n        d[:, 1].add_(e[:, 1])\n",
}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_under_no_grad_updates_the_tangent(name, backend):
    assert_same(HEAD + "w = v.clone()\n"
                "with fwAD.dual_level():\n"
                "    d = fwAD.make_dual(p.clone(), w)\n"
                "    e = fwAD.make_dual(p.flip(0), torch.ones(2, 3))\n"
                "    with torch.no_grad():\n"
                f"        {IN_PLACE[name]}"
                "    out, t = fwAD.unpack_dual(d)\n"
                "    print(out, t, w)\n", backend=backend)


VIEWS = ["d[0]", "d[:, 1]", "d.t()", "d.view(6)", "d.reshape(3, 2)", "d.unsqueeze(0)", "d[1:].squeeze(0)",
         "d.transpose(0, 1)", "d.permute(1, 0)", "d[:1].expand(3, 3)", "d.T", "d.flatten()"]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("view", VIEWS)
def test_tangent_of_a_view_is_a_view_of_the_tangent(view, backend):
    writable = "[0]" if not view.endswith("expand(3, 3)") else ""
    assert_same(HEAD + "w = v.clone()\n"
                "with fwAD.dual_level():\n"
                "    d = fwAD.make_dual(p, w)\n"
                f"    y = {view}\n"
                "    tv = fwAD.unpack_dual(y).tangent\n"
                "    print(tv._base is not None, tv._base is w)\n"
                "    fwAD.unpack_dual(d).tangent.mul_(10)\n"
                "    print(tv)\n"
                + ("    tv[0].add_(1)\n" if writable else "") +
                "    out = fwAD.unpack_dual(d).tangent.clone()\n"
                "    print(out, w)\n", backend=backend)
