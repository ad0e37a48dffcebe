"""``gradviz.func`` against ``torch.func``: the same lines run in both libraries (``torch.func.grad`` ... with
``torch`` bound to each), and every tensor left behind (inside tuples, lists and dicts too) must agree: values,
shape, dtype, ``requires_grad`` and grad_fn presence; printed text where the program prints; errors by type and
message. The tutorial-style programs (per-sample gradients, model ensembling, Jacobians/Hessians/hvp/vhp) are in
tests/test_func_tutorials.py."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

import gradviz  # noqa: E402
from parity import assert_same_error, mask, run_both, to_numpy  # noqa: E402

HEAD = ("F = torch.func\n"
        "x = torch.tensor([0.5, -1.0, 2.0])\n"
        "y = torch.tensor([1.5, 0.25, -0.5])\n"
        "A = torch.tensor([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]])\n"
        "X = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [0.0, 1.0, -2.0], [3.0, -0.5, 0.25]])\n"
        "xr = x.clone().requires_grad_()\n")


def assert_tree(expected, actual, where: str, rtol=1e-5, atol=1e-6) -> int:
    """Two pytrees of tensors agree (structure, values, dtype, requires_grad, whether there is a grad_fn)."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, gradviz.Tensor), f"{where}: {type(actual).__name__} where torch has a Tensor"
        assert tuple(actual.shape) == tuple(expected.shape), f"{where}: shape {tuple(actual.shape)} != " \
                                                             f"{tuple(expected.shape)}"
        assert repr(actual.dtype) == str(expected.dtype), f"{where}: dtype"
        np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), rtol=rtol, atol=atol, err_msg=where)
        assert actual.requires_grad == expected.requires_grad, f"{where}: requires_grad"
        assert (actual.grad_fn is None) == (expected.grad_fn is None), f"{where}: grad_fn {actual.grad_fn}"
        return 1
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and list(actual) == list(expected), f"{where}: keys {list(actual)}"
        return sum(assert_tree(expected[k], actual[k], f"{where}[{k!r}]", rtol, atol) for k in expected)
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected), f"{where}: {type(actual)}"
        return sum(assert_tree(e, a, f"{where}[{i}]", rtol, atol) for i, (e, a) in enumerate(zip(expected, actual)))
    assert actual == expected, f"{where}: {actual!r} != {expected!r}"
    return 0


def check(code: str, names, printed: bool = False, rtol=1e-5, atol=1e-6) -> None:
    (scope_t, out_t), (scope_g, out_g) = run_both(HEAD + code)
    compared = sum(assert_tree(scope_t[name], scope_g[name], name, rtol, atol) for name in names.split())
    assert compared, "nothing compared"
    if printed:
        assert mask(out_g) == mask(out_t)


# -- grad and grad_and_value ------------------------------------------------------------------------------------------
GRAD = {
    "sin_sum": "g = F.grad(lambda x: (x.sin() * x).sum())(x)",
    "second": "g = F.grad(lambda x: F.grad(lambda x: (x ** 3).sum())(x).sum())(x)",
    "third": "g = F.grad(lambda x: F.grad(lambda x: F.grad(lambda x: x.sin().sum())(x).sum())(x).sum())(x)",
    "argnums1": "g = F.grad(lambda x, y: (x * y).sum(), argnums=1)(x, y)",
    "argnums_tuple": "g = F.grad(lambda x, y: (x * y.exp()).sum(), argnums=(0, 1))(x, y)",
    "argnums_neg": "g = F.grad(lambda x, y: (x * y).sum(), argnums=-1)(x, y)",
    "unused": "g = F.grad(lambda x, y: y.sum(), argnums=(0, 1))(x, y)",
    "constant": "g = F.grad(lambda x: torch.tensor(2.0))(x)",
    "has_aux": "g = F.grad(lambda x: ((x ** 2).sum(), {'c': x.cos(), 'n': [x * 3]}), has_aux=True)(x)",
    "dict_arg": "g = F.grad(lambda p, x: (p['w'] @ x + p['b']).pow(2).sum())({'w': A, 'b': y[:2]}, x)",
    "list_arg": "g = F.grad(lambda ps: (ps[0] * ps[1]).sum())([x, y])",
    "kwargs": "g = F.grad(lambda x, scale=1.0: (x * scale).sum())(x, scale=3.0)",
    "and_value": "g = F.grad_and_value(lambda x: (x.exp() * y).sum())(x)",
    "and_value_aux": "g = F.grad_and_value(lambda x: (x.exp().sum(), x * 2), has_aux=True)(x)",
    "requires_grad_input": "g = F.grad(lambda x: (x * x * x).sum())(xr)",
    "closure_param": "g = F.grad(lambda x: (x * xr).sum())(x)",
    "closure_param_value": "g = F.grad_and_value(lambda x: (x * xr.exp()).sum())(x)",
    "no_grad_outside": "with torch.no_grad():\n    g = F.grad(lambda x: (x * xr).sum())(x)",
    "no_grad_inside": "def f(x):\n    with torch.no_grad():\n        c = x ** 2\n    return (c * x).sum()\n"
                      "g = F.grad(f)(x)",
    "double_dtype": "g = F.grad(lambda x: (x ** 2).sum())(x.double())",
    "matmul": "g = F.grad(lambda A: (A @ x).tanh().sum())(A)",
    "softmax_ce": "g = F.grad(lambda A: torch.nn.functional.cross_entropy(X[:, :2] @ A, torch.tensor([0, 2, 1, 1])))(A)",
}


@pytest.mark.parametrize("name", sorted(GRAD))
def test_grad_matches_torch(name):
    check(GRAD[name], "g")


def test_grad_result_backpropagates_to_outer_leaf():
    """A gradient through ``grad`` of a tensor that requires grad outside: backward reaches ``xr.grad``."""
    check("g = F.grad(lambda x: (x.sin() * x).sum())(xr)\n(g ** 2).sum().backward()\ngrad = xr.grad\n", "g grad")


def test_gradient_penalty_through_closed_over_parameter():
    check("w = torch.tensor([0.3, -0.2, 0.1], requires_grad=True)\n"
          "g = F.grad(lambda x: (x * w).tanh().sum())(x)\n"
          "penalty = (g.norm() - 1) ** 2\npenalty.backward()\nwg = w.grad\n", "g penalty wg")


ERRORS = {
    "non_scalar": "F.grad(torch.sin)(x)",
    "not_tensor": "F.grad(lambda x: 1.0)(x)",
    "argnums_str": "F.grad(lambda x: x.sum(), argnums='a')(x)",
    "argnums_range": "F.grad(lambda x: x.sum(), argnums=1)(x)",
    "argnums_negative_range": "F.grad(lambda x: x.sum(), argnums=-2)(x)",
    "argnums_empty": "F.grad(lambda x: x.sum(), argnums=())(x)",
    "argnums_repeated": "F.grad(lambda x, y: x.sum(), argnums=(0, 0))(x, y)",
    "argnums_repeated_negative": "F.grad(lambda x, y: x.sum(), argnums=(1, -1))(x, y)",
    "argnums_float": "F.grad(lambda x, y: x.sum(), argnums=(0, 1.0))(x, y)",
    "has_aux_not_pair": "F.grad(lambda x: x.sum(), has_aux=True)(x)",
    "has_aux_one": "F.grad(lambda x: (x.sum(),), has_aux=True)(x)",
    "has_aux_number": "F.grad(lambda x: (x.sum(), 3), has_aux=True)(x)",
    "vjp_aux_number": "F.vjp(lambda x: (x, {'a': 3}), x, has_aux=True)",
    "jvp_aux_number": "F.jvp(lambda x: (x, 3), (x,), (x,), has_aux=True)",
    "jvp_aux_not_pair": "F.jvp(lambda x: x, (x,), (x,), has_aux=True)",
    "jacrev_aux_not_pair": "F.jacrev(lambda x: x, has_aux=True)(x)",
    "jacfwd_aux_not_pair": "F.jacfwd(lambda x: x, has_aux=True)(x)",
    "jacfwd_aux_number": "F.jacfwd(lambda x: (x, 3.0), has_aux=True)(x)",
    "integer_input": "F.grad(lambda x: x.sum())(torch.arange(3))",
    "number_input": "F.grad(lambda x: x)(1.0)",
    "and_value_non_scalar": "F.grad_and_value(lambda x: x * 2)(x)",
    "vjp_number": "F.vjp(torch.sin, 1.0)",
    "vjp_output": "F.vjp(lambda x: 1.0, x)",
    "vjp_has_aux": "F.vjp(lambda x: x, x, has_aux=True)",
    "vjp_cotangent_shape": "out, fn = F.vjp(torch.sin, x)\nfn(torch.ones(2))",
    "vjp_cotangent_structure": "out, fn = F.vjp(torch.sin, x)\nfn((torch.ones(3),))",
    "vjp_cotangent_structure_dict": "out, fn = F.vjp(lambda x: (x, {'a': x}), x)\nfn(torch.ones(3))",
    "jvp_not_tuple": "F.jvp(torch.sin, x, x)",
    "jvp_structure": "F.jvp(torch.sin, (x,), x)",
    "jvp_length": "F.jvp(torch.sin, (x,), (x, x))",
    "jvp_shape": "F.jvp(torch.sin, (x,), (torch.ones(2),))",
    "jvp_empty": "F.jvp(torch.sin, (), ())",
    "jvp_output": "F.jvp(lambda x: 1.0, (x,), (x,))",
    "jvp_number": "F.jvp(torch.sin, (1.0,), (1.0,))",
    "jacrev_output": "F.jacrev(lambda x: 1.0)(x)",
    "jacrev_argnums": "F.jacrev(torch.sin, argnums=2)(x)",
    "vmap_sizes": "F.vmap(torch.add)(torch.ones(3), torch.ones(4))",
    "vmap_in_dim_range": "F.vmap(torch.sin, in_dims=1)(torch.ones(3))",
    "vmap_zero_dim": "F.vmap(torch.sin)(torch.tensor(1.0))",
    "vmap_structure": "F.vmap(torch.add, in_dims=(0,))(torch.ones(3), torch.ones(3))",
    "vmap_in_dims_none": "F.vmap(torch.sin, in_dims=None)(torch.ones(3))",
    "vmap_in_dims_type": "F.vmap(torch.sin, in_dims='a')(torch.ones(3))",
    "vmap_all_none": "F.vmap(lambda x: x, in_dims=(None,))(torch.ones(3))",
    "vmap_no_inputs": "F.vmap(lambda: 1)()",
    "vmap_number_mapped": "F.vmap(lambda x, y: x * y, in_dims=(0, 0))(torch.ones(3), 2.0)",
    "vmap_returns_number": "F.vmap(lambda x: 1.0)(torch.ones(3))",
    "vmap_out_dim_range": "F.vmap(lambda x: x, out_dims=2)(torch.ones(3, 2))",
    "vmap_out_none_batched": "F.vmap(lambda x: x * 2, out_dims=None)(torch.arange(6.).reshape(3, 2))",
    "vmap_random": "F.vmap(lambda x: x + torch.rand(()))(torch.ones(3))",
    "vmap_randn_like": "F.vmap(lambda x: torch.randn_like(x))(torch.ones(3))",
    "vmap_dropout": "F.vmap(lambda x: torch.nn.functional.dropout(x, 0.5))(torch.ones(3, 2))",
    "vmap_randomness": "F.vmap(lambda x: x, randomness='x')",
    "jacfwd_randomness": "F.jacfwd(torch.sin, randomness='x')(x)",
    "functional_call_strict": "m = torch.nn.Linear(3, 2)\n"
                              "F.functional_call(m, {'weight': torch.zeros(2, 3)}, x, strict=True)",
    "functional_call_strict_both": "m = torch.nn.Linear(3, 2)\nF.functional_call(m, {'weight': torch.zeros(2, 3), "
                                   "'foo': torch.zeros(1)}, x, strict=True)",
    "functional_call_repeated": "m = torch.nn.Linear(3, 2)\nF.functional_call(m, ({'weight': torch.zeros(2, 3)}, "
                                "{'weight': torch.zeros(2, 3)}), x)",
    "functional_call_not_dicts": "m = torch.nn.Linear(3, 2)\nF.functional_call(m, [1], x)",
    "functional_call_type": "m = torch.nn.Linear(3, 2)\nF.functional_call(m, 3, x)",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    assert_same_error(HEAD + ERRORS[name])


# -- vjp, jvp, jacrev, jacfwd, hessian --------------------------------------------------------------------------------
PRODUCTS = {
    "vjp": "out, fn = F.vjp(lambda x: x.sin() * y, x)\ng = fn(torch.tensor([1.0, 2.0, -1.0]))\ng2 = fn(torch.ones(3))",
    "vjp_two": "out, fn = F.vjp(lambda a, b: (a @ b, b.exp()), A, x)\n"
               "g = fn((torch.ones(2), torch.tensor([1.0, 0.0, 2.0])))",
    "vjp_aux": "out, fn, aux = F.vjp(lambda x: (x.exp(), x.sum()), x, has_aux=True)\ng = fn(torch.ones(3))",
    "vjp_dict": "out, fn = F.vjp(lambda p: {'a': p['u'] * 2, 'b': p['u'].sum()}, {'u': x})\n"
                "g = fn({'a': y, 'b': torch.tensor(3.0)})",
    "vjp_requires_grad": "out, fn = F.vjp(lambda x: x ** 3, xr)\ng = fn(torch.ones(3))",
    "jvp": "out, t = F.jvp(lambda x: x.sin() * y, (x,), (torch.ones(3),))",
    "jvp_two": "out, t = F.jvp(lambda a, b: a @ b.exp(), (A, x), (torch.ones(2, 3), y))",
    "jvp_aux": "out, t, aux = F.jvp(lambda x: (x.exp(), x.cos()), (x,), (y,), has_aux=True)",
    "jvp_unrelated_output": "out, t = F.jvp(lambda x: (x * 2, torch.ones(2)), (x,), (y,))",
    "jacrev": "J = F.jacrev(lambda x: x.sin() * x.sum())(x)",
    "jacrev_matrix": "J = F.jacrev(lambda A: A @ x)(A)",
    "jacrev_two": "J = F.jacrev(lambda a, b: a @ b, argnums=(0, 1))(A, x)",
    "jacrev_tuple_out": "J = F.jacrev(lambda x: (x.exp(), x.sum()))(x)",
    "jacrev_dict_out": "J = F.jacrev(lambda x: {'e': x.exp(), 's': x.sum()})(x)",
    "jacrev_aux": "J = F.jacrev(lambda x: (x.exp(), x.cos()), has_aux=True)(x)",
    "jacrev_scalar": "J = F.jacrev(lambda x: (x ** 2).sum())(x)",
    "jacfwd": "J = F.jacfwd(lambda x: x.sin() * x.sum())(x)",
    "jacfwd_matrix": "J = F.jacfwd(lambda A: A @ x)(A)",
    "jacfwd_two": "J = F.jacfwd(lambda a, b: a @ b, argnums=(0, 1))(A, x)",
    "jacfwd_tuple_out": "J = F.jacfwd(lambda x: (x.exp(), x.sum()))(x)",
    "jacfwd_aux": "J = F.jacfwd(lambda x: (x.exp(), x.cos()), has_aux=True)(x)",
    "jacfwd_of_jacfwd": "J = F.jacfwd(F.jacfwd(lambda x: (x ** 3).sum()))(x)",
    "jacrev_of_jacrev": "J = F.jacrev(F.jacrev(lambda x: (x ** 3 * x.sin()).sum()))(x)",
    "jacrev_of_jacfwd": "J = F.jacrev(F.jacfwd(lambda x: x.exp() * x.sum()))(x)",
    "hessian": "H = F.hessian(lambda x: (x.sin() * x).sum())(x)",
    "hessian_matrix": "H = F.hessian(lambda A: (A @ x).tanh().sum())(A)",
    "hessian_two": "H = F.hessian(lambda a, b: (a * b.exp()).sum(), argnums=(0, 1))(x, y)",
}
NAMES = {"vjp": "out g g2", "vjp_two": "out g", "vjp_aux": "out g aux", "vjp_dict": "out g", "vjp_requires_grad": "out g",
         "jvp": "out t", "jvp_two": "out t", "jvp_aux": "out t aux", "jvp_unrelated_output": "out t"}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_products_and_jacobians_match_torch(name):
    check(PRODUCTS[name], NAMES.get(name, "H" if name.startswith("hessian") else "J"))


def test_jacobians_agree_with_central_differences():
    """jacrev, jacfwd and hessian against float64 central differences of a function with every kind of op."""
    F = gradviz.func

    def f(v):
        return (v.sin() * v.roll(1)).cumsum(0).tanh() / (1 + v ** 2)

    x = gradviz.tensor([0.3, -1.2, 0.7, 2.0], dtype=gradviz.float64)
    eps = 1e-6
    numeric = np.stack([(f(x + eps * e).numpy() - f(x - eps * e).numpy()) / (2 * eps)
                        for e in gradviz.eye(4, dtype=gradviz.float64)], axis=-1)
    np.testing.assert_allclose(F.jacrev(f)(x).numpy(), numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(F.jacfwd(f)(x).numpy(), numeric, rtol=1e-6, atol=1e-8)

    def g(v):
        return f(v).sum()

    numeric_h = np.stack([(F.grad(g)(x + eps * e).numpy() - F.grad(g)(x - eps * e).numpy()) / (2 * eps)
                          for e in gradviz.eye(4, dtype=gradviz.float64)], axis=-1)
    np.testing.assert_allclose(F.hessian(g)(x).numpy(), numeric_h, rtol=1e-5, atol=1e-7)


# -- vmap ----------------------------------------------------------------------------------------------------------
VMAP = {
    "dot": "r = F.vmap(torch.dot)(X, X.flip(0))",
    "elementwise": "r = F.vmap(lambda v: v.sin() * 2 + v.exp())(X)",
    "in_dims_none": "r = F.vmap(lambda a, b: a @ b, in_dims=(None, 0))(A, X)",
    "in_dim_1": "r = F.vmap(lambda v: v.sum(), in_dims=1)(X)",
    "in_dim_negative": "r = F.vmap(lambda v: v * 2, in_dims=-1)(X)",
    "out_dim_1": "r = F.vmap(lambda v: v * 2, out_dims=1)(X)",
    "out_dims_tuple": "r = F.vmap(lambda v: (v.exp(), v.sum()), out_dims=(1, 0))(X)",
    "out_dim_none": "r = F.vmap(lambda v: (v * 2, torch.ones(2)), out_dims=(0, None))(X)",
    "reduction": "r = F.vmap(lambda v: v.mean(0, keepdim=True))(X)",
    "nested": "r = F.vmap(F.vmap(lambda a, b: a * b))(X, X)",
    "nested_outer": "r = F.vmap(F.vmap(torch.mul, in_dims=(None, 0)), in_dims=(0, None))(x, y)",
    "dict_input": "r = F.vmap(lambda d: d['a'].sum() * d['b'])({'a': X, 'b': X[:, 0]})",
    "dict_in_dims": "r = F.vmap(lambda d, s: d['a'] * s, in_dims=({'a': 0}, None))({'a': X}, 3.0)",
    "dict_out": "r = F.vmap(lambda v: {'s': v.sum(), 'v': v})(X)",
    "kwargs": "r = F.vmap(lambda v, scale=1.0: v * scale)(X, scale=2.0)",
    "empty_batch": "r = F.vmap(torch.sin)(torch.ones(0, 2))",
    "matmul_batch": "r = F.vmap(torch.mm)(X.reshape(2, 2, 3), X.reshape(2, 3, 2))",
    "grad_per_example": "r = F.vmap(F.grad(lambda v: (v ** 3).sum()))(X)",
    "jacrev_per_example": "r = F.vmap(F.jacrev(torch.sin))(X)",
    "vmap_in_grad": "r = F.grad(lambda v: F.vmap(torch.dot, in_dims=(None, 0))(v, X).sum())(x)",
    "requires_grad": "r = F.vmap(lambda v: v * xr)(X)",
    "randomness_same": "torch.manual_seed(0)\nr = F.vmap(lambda v: v + torch.rand(3), randomness='same')(X)",
    "chunk_size": "r = F.vmap(torch.exp, chunk_size=2)(X)",
    "torch_vmap": "r = torch.vmap(torch.dot)(X, X)",
}


@pytest.mark.parametrize("name", sorted(VMAP))
def test_vmap_matches_torch(name):
    check(VMAP[name], "r")


def test_vmap_randomness_different_draws_per_example():
    """``randomness='different'``: each example gets its own draw, and the generator moves on."""
    F = gradviz.func
    gradviz.manual_seed(0)
    r = F.vmap(lambda v: v + gradviz.rand(3), randomness="different")(gradviz.zeros(4, 3))
    assert tuple(r.shape) == (4, 3)
    assert len({tuple(row) for row in r.numpy().tolist()}) == 4
    assert ((r.numpy() >= 0) & (r.numpy() < 1)).all()


@pytest.mark.parametrize("name, code", [
    ("rand", "r = F.vmap(lambda v: v + torch.rand(3), randomness='different')(torch.zeros(4, 3))"),
    ("randn", "r = F.vmap(lambda v: v * torch.randn(2), randomness='different')(torch.ones(3, 2))"),
    ("randn_same", "r = F.vmap(lambda v: v * torch.randn(2), randomness='same')(torch.ones(3, 2))\ns = torch.rand(2)"),
])
def test_vmap_randomness_small_draws_are_torch_numbers(name, code):
    """Fewer than 16 numbers in all: the loop draws the same stream torch's batched draw does."""
    check("torch.manual_seed(0)\n" + code, "r s" if "s = " in code else "r")


# -- functional_call and stack_module_state ---------------------------------------------------------------------------
CALLS = {
    "linear": "torch.manual_seed(0)\nm = torch.nn.Linear(3, 2)\np = {'weight': A * 0.5, 'bias': torch.tensor([1.0, -1.0])}\n"
              "r = F.functional_call(m, p, (X,))\nw = m.weight",
    "not_tuple": "m = torch.nn.Linear(3, 2)\np = {'weight': A, 'bias': torch.zeros(2)}\nr = F.functional_call(m, p, X)",
    "partial": "torch.manual_seed(0)\nm = torch.nn.Linear(3, 2)\nr = F.functional_call(m, {'weight': A}, X)",
    "kwargs": "m = torch.nn.Linear(3, 2)\nr = F.functional_call(m, {'weight': A, 'bias': y[:2]}, (), {'input': X})",
    "two_dicts": "m = torch.nn.Linear(3, 2)\nr = F.functional_call(m, ({'weight': A}, {'bias': y[:2]}), (X,))",
    "sequential": "m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh(), torch.nn.Linear(2, 1))\n"
                  "p = {'0.weight': A, '0.bias': y[:2], '2.weight': torch.tensor([[1.0, -2.0]]), "
                  "'2.bias': torch.tensor([0.5])}\nr = F.functional_call(m, p, (X,))",
    "requires_grad_params": "m = torch.nn.Linear(3, 2)\nW = A.clone().requires_grad_()\n"
                            "r = F.functional_call(m, {'weight': W, 'bias': y[:2]}, (X,))\nr.sum().backward()\n"
                            "wg = W.grad",
    "grad_wrt_params": "m = torch.nn.Linear(3, 2)\np = {'weight': A, 'bias': y[:2]}\n"
                       "r = F.grad(lambda p: F.functional_call(m, p, (X,)).pow(2).mean())(p)",
    "buffers": "m = torch.nn.BatchNorm1d(3)\nm.eval()\n"
               "r = F.functional_call(m, {'running_mean': y, 'running_var': x.abs() + 1}, (X,))",
    "stack_module_state": "torch.manual_seed(0)\nms = [torch.nn.Linear(3, 2) for _ in range(3)]\n"
                          "r = F.stack_module_state(ms)",
    "stack_buffers": "torch.manual_seed(0)\nms = [torch.nn.BatchNorm1d(3) for _ in range(2)]\n"
                     "r = F.stack_module_state(ms)",
}
CALL_NAMES = {"linear": "r w", "requires_grad_params": "r wg"}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_functional_call_matches_torch(name):
    check(CALLS[name], CALL_NAMES.get(name, "r"))


def test_functional_call_restores_the_module():
    m = gradviz.nn.Linear(3, 2)
    weight, bias = m.weight, m.bias
    try:
        gradviz.func.functional_call(m, {"weight": gradviz.zeros(2, 3)}, (gradviz.zeros(1, 4),))
    except RuntimeError:
        pass
    assert m.weight is weight and m.bias is bias
    assert isinstance(m.weight, gradviz.nn.Parameter)


def test_functional_call_ties_weights():
    check("m = torch.nn.Sequential(torch.nn.Linear(3, 3, bias=False), torch.nn.Linear(3, 3, bias=False))\n"
          "m[1].weight = m[0].weight\n"
          "W = torch.eye(3) * 2\n"
          "r = F.functional_call(m, {'0.weight': W}, (X,))\n"
          "r2 = F.functional_call(m, {'0.weight': W}, (X,), tie_weights=False)\n", "r")


# -- random programs: vmap over random shapes and dims, and the Jacobians of random compositions --------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

BODIES = ["v.sin() * 2 + v", "v.exp().sum(0)", "(v * v).mean(-1)", "v.tanh().cumsum(0)", "v.t() if v.dim() == 2 else v",
          "v.softmax(0)", "v.abs().sqrt()", "(v @ v.t()) if v.dim() == 2 else v.dot(v)", "v.max(0)[0]"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# examples of at least one dimension: gradviz's ``t.sum(0)`` on a 0-d tensor raises numpy's AxisError (torch's works)
@given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=3), data=st.data())
def test_vmap_random_shapes_and_dims(shape, data):
    rank = len(shape)
    in_dim = data.draw(st.integers(-rank, rank - 1), label="in_dim")
    body = data.draw(st.sampled_from(BODIES), label="body")
    values = data.draw(st.lists(st.floats(-2, 2, width=32), min_size=int(np.prod(shape)),
                                max_size=int(np.prod(shape))), label="values")
    setup = f"x = torch.tensor({values}).reshape({shape})\nf = lambda v: {body}\n"
    probe = setup + f"r = F.vmap(f, in_dims={in_dim})(x)\n"
    from parity import raised

    error_t = raised("F = torch.func\n" + probe, torch)
    if error_t is not None:  # the per-example body does not fit this shape: torch refuses it too
        error_g = raised("F = torch.func\n" + probe, gradviz)
        assert error_g is not None, f"torch raised {error_t!r}"
        return
    out_rank = run_both("F = torch.func\n" + probe)[0][0]["r"].dim()
    out_dim = data.draw(st.integers(-out_rank, out_rank - 1), label="out_dim")
    (scope_t, _), (scope_g, _) = run_both("F = torch.func\n" + setup +
                                          f"r = F.vmap(f, in_dims={in_dim}, out_dims={out_dim})(x)\n")
    assert_tree(scope_t["r"], scope_g["r"], "r", rtol=1e-5, atol=1e-6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.sampled_from(BODIES[:4] + BODIES[5:6]), second=st.sampled_from(["u.sin()", "u * u", "u.exp()", "u / 3"]),
       values=st.lists(st.floats(-2, 2, width=32), min_size=6, max_size=6))
def test_jacobians_of_random_compositions(first, second, values):
    code = (f"F = torch.func\nx = torch.tensor({values}).reshape(2, 3)\n"
            f"def f(v):\n    u = {first}\n    return {second}\n"
            "jr = F.jacrev(f)(x)\njf = F.jacfwd(f)(x)\nh = F.hessian(lambda v: f(v).sum())(x)\n")
    (scope_t, _), (scope_g, _) = run_both(code)
    for name in ("jr", "jf", "h"):
        assert_tree(scope_t[name], scope_g[name], name, rtol=1e-4, atol=1e-4)
