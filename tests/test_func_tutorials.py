"""The programs PyTorch's torch.func tutorials teach, written here from the API (per-sample gradients, model
ensembling, Jacobians/Hessians/hvp/vhp), run in torch and in gradviz: every tensor they leave must agree. The
models are made with ``manual_seed`` (gradviz reproduces torch's initialization), so the parameters agree too."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import run_both  # noqa: E402
from test_func import assert_tree  # noqa: E402

PER_SAMPLE = """
F = torch.func
torch.manual_seed(0)

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return torch.nn.functional.log_softmax(self.fc2(torch.relu(self.fc1(x))), dim=1)

model = Net()
data = torch.randn(5, 6)
targets = torch.tensor([0, 2, 1, 1, 0])

def loss_fn(predictions, targets):
    return torch.nn.functional.nll_loss(predictions, targets)

# the slow way: one backward per example
loop_grads = []
for i in range(5):
    model.zero_grad()
    loss_fn(model(data[i].unsqueeze(0)), targets[i].unsqueeze(0)).backward()
    loop_grads.append([p.grad.clone() for p in model.parameters()])
loop_grads = [torch.stack(column) for column in zip(*loop_grads)]

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}

def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    predictions = F.functional_call(model, (params, buffers), (batch,))
    return loss_fn(predictions, target.unsqueeze(0))

per_sample = F.vmap(F.grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)
same = [torch.allclose(a, b, atol=1e-6) for a, b in zip(per_sample.values(), loop_grads)]
print(same, [tuple(g.shape) for g in per_sample.values()])
"""


def test_per_sample_gradients():
    (scope_t, out_t), (scope_g, out_g) = run_both(PER_SAMPLE)
    assert out_g == out_t
    assert "False" not in out_t
    assert_tree(scope_t["per_sample"], scope_g["per_sample"], "per_sample")
    assert_tree(scope_t["loop_grads"], scope_g["loop_grads"], "loop_grads")


ENSEMBLE = """
import copy
F = torch.func
torch.manual_seed(0)

def make_model():
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

models = [make_model() for _ in range(3)]
minibatches = torch.randn(3, 5, 4)
minibatch = minibatches[0]

looped_same = [model(minibatch) for model in models]
looped_different = [model(mb) for model, mb in zip(models, minibatches)]

params, buffers = F.stack_module_state(models)
base_model = copy.deepcopy(models[0])

def fmodel(params, buffers, x):
    return F.functional_call(base_model, (params, buffers), (x,))

same_minibatch = F.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
different_minibatches = F.vmap(fmodel)(params, buffers, minibatches)
print(torch.allclose(same_minibatch, torch.stack(looped_same), atol=1e-6),
      torch.allclose(different_minibatches, torch.stack(looped_different), atol=1e-6))
print(same_minibatch.shape, different_minibatches.shape, sorted(params))
loss = different_minibatches.pow(2).mean()
loss.backward()
stacked_grads = {k: v.grad for k, v in params.items()}
"""


def test_model_ensembling():
    (scope_t, out_t), (scope_g, out_g) = run_both(ENSEMBLE)
    assert out_g == out_t
    assert "False" not in out_t
    for name in ("same_minibatch", "different_minibatches", "params", "stacked_grads", "looped_same"):
        assert_tree(scope_t[name], scope_g[name], name)


JACOBIANS = """
F = torch.func
torch.manual_seed(0)
D = 4
weight = torch.randn(D, D)
bias = torch.randn(D)
x = torch.randn(D)

def predict(weight, bias, x):
    return torch.nn.functional.linear(x, weight, bias).tanh()

# row by row with autograd.grad
xp = x.clone().requires_grad_()
unit_vectors = torch.eye(D)
jac_rows = [torch.autograd.grad(predict(weight, bias, xp), xp, v, retain_graph=True)[0] for v in unit_vectors]
jac_loop = torch.stack(jac_rows)

jac_rev = F.jacrev(predict, argnums=2)(weight, bias, x)
jac_fwd = F.jacfwd(predict, argnums=2)(weight, bias, x)
print(torch.allclose(jac_rev, jac_loop), torch.allclose(jac_fwd, jac_rev, atol=1e-6))

jac_w, jac_b = F.jacrev(predict, argnums=(0, 1))(weight, bias, x)
jac_w_fwd, jac_b_fwd = F.jacfwd(predict, argnums=(0, 1))(weight, bias, x)
print(jac_w.shape, jac_b.shape)

batch = torch.randn(3, D)
batch_jac = F.vmap(F.jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, batch)
batch_jac_fwd = F.vmap(F.jacfwd(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, batch)
batch_jac_sum = F.jacrev(lambda x: predict(weight, bias, x).sum(0))(batch).movedim(1, 0)
print(batch_jac.shape, torch.allclose(batch_jac, batch_jac_sum, atol=1e-6))

hess = F.hessian(predict, argnums=2)(weight, bias, x)
hess_rr = F.jacrev(F.jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
hess_ff = F.jacfwd(F.jacfwd(predict, argnums=2), argnums=2)(weight, bias, x)
print(hess.shape, torch.allclose(hess, hess_rr, atol=1e-6), torch.allclose(hess_ff, hess_rr, atol=1e-6))

def f(x):
    return x.sin().sum() * x.cos().sum()

v = torch.randn(D)

def hvp(f, primals, tangents):
    return F.jvp(F.grad(f), primals, tangents)[1]

def vhp(f, primals, cotangent):
    return F.vjp(F.grad(f), *primals)[1](cotangent)[0]

hvp_value = hvp(f, (x,), (v,))
vhp_value = vhp(f, (x,), v)
hvp_ref = F.hessian(f)(x) @ v
hvp_autograd = torch.autograd.functional.hvp(f, x, v)[1]
print(torch.allclose(hvp_value, hvp_ref, atol=1e-5), torch.allclose(vhp_value, hvp_ref, atol=1e-5))
"""


def test_jacobians_hessians_hvp_vhp():
    (scope_t, out_t), (scope_g, out_g) = run_both(JACOBIANS)
    assert out_g == out_t
    assert "False" not in out_t
    for name in ("jac_loop", "jac_rev", "jac_fwd", "jac_w", "jac_b", "jac_w_fwd", "jac_b_fwd", "batch_jac",
                 "batch_jac_fwd", "hess", "hess_rr", "hess_ff", "hvp_value", "vhp_value", "hvp_ref", "hvp_autograd"):
        assert_tree(scope_t[name], scope_g[name], name, rtol=1e-4, atol=1e-5)
