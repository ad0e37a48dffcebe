"""The nn pieces tutorials reach for beyond the lessons, against PyTorch 2.13: activations, losses,
containers, Embedding, LayerNorm and the functional helpers. Each case runs the same lines in both
libraries (``tests/parity.py``) and compares values, grads, the whole grad_fn graph and printed text."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

X = "x = torch.tensor([[0.5, -1.5, 2.0], [1.2, 0.3, -0.7]], requires_grad=True)\n"
TARGETS = ("t = torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], requires_grad=True)\n"
           "c = torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])\n")


def weighted(expression: str) -> str:
    """``y = expression``, then a backward pass that gives every element of ``y`` its own gradient."""
    return f"y = {expression}\n(y * torch.arange(1.0, y.numel() + 1.0).reshape(y.shape)).sum().backward()\n"


ACTIVATIONS = [
    "F.leaky_relu(x)", "F.leaky_relu(x, 0.2)", "F.gelu(x)", "F.gelu(x, approximate='tanh')", "F.silu(x)", "F.elu(x)",
    "F.elu(x, 0.5)", "F.softplus(x)", "F.softplus(x, beta=2, threshold=1)", "F.relu6(x * 4)", "F.hardtanh(x)",
    "F.hardtanh(x, -0.5, 0.5)", "torch.nn.ReLU6()(x * 4)", "torch.nn.Softplus()(x)", "torch.nn.GELU('tanh')(x)",
    "torch.nn.LeakyReLU(0.3)(x)", "torch.nn.SiLU()(x)", "torch.nn.ELU(alpha=0.3)(x)", "torch.nn.Hardtanh(-2, 0.5)(x)",
    "F.selu(x)", "F.celu(x)", "F.celu(x, 0.5)", "F.logsigmoid(x * 30)", "F.softsign(x)", "F.mish(x)", "F.mish(x * 30)",
    "F.hardswish(x * 2)", "F.hardsigmoid(x * 3)", "F.tanhshrink(x)", "F.softmin(x, 1)", "F.softmin(x, dim=0)",
    "torch.nn.PReLU()(x)", "F.prelu(x, torch.tensor([0.1, 0.2, 0.3], requires_grad=True))",
    "F.prelu(x.unsqueeze(-1).expand(2, 3, 2) * torch.tensor([1.0, -2.0]), torch.tensor([0.1, 0.2, 0.3], requires_grad=True))",
    "F.prelu(x[0], torch.tensor([0.5], requires_grad=True))", "torch.nn.SELU()(x)", "torch.nn.CELU(0.7)(x)",
    "torch.nn.Mish()(x)", "torch.nn.Hardswish()(x)", "torch.nn.Hardsigmoid()(x)", "torch.nn.LogSigmoid()(x)",
    "torch.nn.Softsign()(x)", "torch.nn.Tanhshrink()(x)", "torch.nn.Softmin(dim=1)(x)",
    "torch.nn.CosineSimilarity(dim=0)(x, x * x + 1)", "torch.nn.Unflatten(1, (3, 1))(x)",
]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("expression", ACTIVATIONS)
def test_activations_match_torch(expression, backend):
    assert_same(X + weighted(expression), backend=backend)


LOSSES = [
    "F.l1_loss(x, c)", "F.l1_loss(x, t, reduction='sum')", "F.l1_loss(x, c, reduction='none')", "F.l1_loss(x, c, weight=c)",
    "F.smooth_l1_loss(x, c)", "F.smooth_l1_loss(x, t, beta=0.5, reduction='sum')", "F.smooth_l1_loss(x, c, beta=0.0)",
    "F.smooth_l1_loss(x, t, reduction='none')", "F.huber_loss(x, c)", "F.huber_loss(x, t, delta=0.5, reduction='none')",
    "F.huber_loss(x, c, weight=c)", "F.kl_div(x, c, reduction='batchmean')", "F.kl_div(x, c)",
    "F.kl_div(x, c, reduction='none', log_target=True)", "F.kl_div(x, c, reduction='sum')",
    "F.kl_div(x, t, reduction='batchmean', log_target=True)", "torch.nn.BCELoss()(x.sigmoid(), c)",
    "torch.nn.BCELoss(weight=c, reduction='sum')(x.sigmoid(), c)", "torch.nn.L1Loss()(x, c)",
    "torch.nn.SmoothL1Loss(beta=2.0)(x, t)", "torch.nn.HuberLoss(delta=0.7)(x, c)",
    "torch.nn.KLDivLoss(reduction='batchmean')(x.log_softmax(1), c)", "F.l1_loss(x, c[0])", "F.smooth_l1_loss(x[:1], c)",
]


@pytest.mark.parametrize("expression", LOSSES)
def test_losses_match_torch(expression):
    assert_same(X + TARGETS + weighted(expression))


IN_PLACE = ["F.leaky_relu(h, 0.2, inplace=True)", "F.elu(h, inplace=True)", "F.elu(h, 0.5, True)",
            "F.hardtanh(h, inplace=True)", "F.relu6(h, inplace=True)", "F.silu(h, inplace=True)", "F.relu(h, inplace=True)",
            "torch.nn.ReLU(inplace=True)(h)", "torch.nn.LeakyReLU(0.1, True)(h)", "torch.nn.ELU(inplace=True)(h)",
            "torch.nn.ReLU6(True)(h)", "torch.nn.SiLU(True)(h)", "torch.nn.Hardtanh(-0.5, 0.5, True)(h)",
            "F.selu(h, True)", "F.celu(h, 0.5, True)", "F.mish(h, True)", "F.hardswish(h, True)", "F.hardsigmoid(h, True)",
            "torch.nn.SELU(True)(h)", "torch.nn.CELU(2.0, True)(h)"]


@pytest.mark.parametrize("expression", IN_PLACE)
def test_in_place_activations_match_torch(expression):
    """``inplace=True`` overwrites the input and records PyTorch's in-place node (LeakyReluBackward1, ...)."""
    assert_same(X + f"h = x * 2\ny = {expression}\nsame = y is h\n"
                "(y * torch.arange(1.0, 7.0).reshape(2, 3)).sum().backward()\nprint(same, h)\n")


def test_integer_hardtanh_and_relu6_stay_integer_like_torch():
    assert_same("i = torch.tensor([1, -2, 3])\ny = F.hardtanh(i)\nz = F.relu6(i * 4)\n")


ERRORS = [
    "F.leaky_relu(i)", "F.gelu(i)", "F.silu(i)", "F.elu(i)", "F.softplus(i)", "F.gelu(i.float(), approximate='x')",
    "F.hardtanh(i.float(), 2, 1)", "torch.nn.Hardtanh(1, 0)", "F.smooth_l1_loss(i.float(), i.float(), beta=-1.0)",
    "F.huber_loss(i.float(), i.float(), delta=0)", "F.l1_loss(torch.ones(2), torch.ones(3))",
    "torch.nn.HuberLoss(delta='a')", "F.huber_loss(i.float(), i.float(), weight=torch.ones(2))",
    "F.leaky_relu(torch.ones(2, requires_grad=True), inplace=True)", "F.relu(torch.ones(2, requires_grad=True), True)",
    "F.leaky_relu(torch.ones(2, requires_grad=True) * 1, -0.1, inplace=True).sum().backward()",
    "F.hardtanh(i.float(), 2, 1, inplace=True)", "F.celu(i.float(), 0.0)", "F.mish(i)", "F.prelu(i.float(), torch.ones(2))",
    "F.prelu(i.float(), torch.ones(1, 1))", "F.logsigmoid(i)",
]


def test_module_reprs_match_torch():
    torch = pytest.importorskip("torch")
    import gradviz

    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.LeakyReLU(), nn.LeakyReLU(0.2, inplace=True), nn.GELU(), nn.GELU("tanh"), nn.SiLU(),
                             nn.SiLU(True), nn.ELU(), nn.ELU(0.5, True), nn.Softplus(), nn.Softplus(2, 10), nn.ReLU6(),
                             nn.ReLU6(True), nn.Hardtanh(), nn.Hardtanh(-2, 2, True), nn.Identity(), nn.BCELoss(),
                             nn.L1Loss(), nn.SmoothL1Loss(beta=0.5), nn.HuberLoss(delta=2.0),
                             nn.KLDivLoss(reduction="batchmean"), nn.SELU(), nn.SELU(True), nn.CELU(0.5), nn.LogSigmoid(),
                             nn.Softsign(), nn.Mish(), nn.Hardswish(True), nn.Hardsigmoid(), nn.PReLU(), nn.PReLU(3, 0.1),
                             nn.Tanhshrink(), nn.Softmin(1), nn.CosineSimilarity(), nn.Unflatten(1, (3, 1)))

    assert repr(build(gradviz)) == repr(build(torch))


# -- containers -----------------------------------------------------------------------------------------
def _containers(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
            self.layers.append(nn.ReLU())
            self.heads = nn.ModuleDict({"score": nn.Linear(2, 1), "act": nn.Tanh()})
            self.scales = nn.ParameterList([nn.Parameter(lib.ones(2)), lib.zeros(3, 2)])
            self.extra = nn.ParameterDict({"shift": nn.Parameter(lib.zeros(1))})

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.heads["act"](self.heads["score"](x * self.scales[0])) + self.extra["shift"]

    return Net()


def test_containers_register_print_and_save_like_torch():
    torch = pytest.importorskip("torch")
    import gradviz

    ours, theirs = _containers(gradviz), _containers(torch)
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    state = {name: gradviz.tensor(value.detach().numpy()) for name, value in theirs.state_dict().items()}
    ours.load_state_dict(state)
    x = [[0.5, -1.0], [2.0, 0.25]]
    out_ours, out_theirs = ours(gradviz.tensor(x)), theirs(torch.tensor(x))
    out_ours.sum().backward()
    out_theirs.sum().backward()
    np.testing.assert_allclose(out_ours.detach().numpy(), out_theirs.detach().numpy(), rtol=1e-6)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        if q.grad is None:
            assert p.grad is None, name
        else:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7, err_msg=name)


CONTAINER_PROGRAMS = [
    "m = torch.nn.ModuleList([torch.nn.ReLU(), torch.nn.Tanh(), torch.nn.Tanh()])\nprint(m, len(m), m[-1], m[1:])\n"
    "m.insert(1, torch.nn.Sigmoid())\ndel m[0]\nprint(m)\nprint(m.pop(-1), m)\nm += [torch.nn.ReLU()]\nprint(m + m)\n"
    "m[0] = torch.nn.ELU()\nprint(m, [type(x).__name__ for x in m])\nprint(torch.nn.ModuleList())\n",
    "d = torch.nn.ModuleDict([('a', torch.nn.ReLU()), ('b', torch.nn.GELU())])\nprint(d, len(d), 'a' in d, list(d))\n"
    "d['c'] = torch.nn.SiLU()\nprint(d.pop('a'), list(d.keys()), [type(v).__name__ for v in d.values()])\n"
    "d.update({'e': torch.nn.Tanh()})\nprint(d)\nd.clear()\nprint(d, torch.nn.ModuleDict())\n",
    "p = torch.nn.ParameterList([torch.ones(2), torch.nn.Parameter(torch.zeros(3, 2))])\nprint(p, len(p))\n"
    "p.append(torch.ones(1, dtype=torch.float64))\nprint(p, [type(v).__name__ for v in p], p[0].requires_grad)\n"
    "print(p[1:], torch.nn.ParameterList(), list(dict(p.named_parameters())))\n",
    "q = torch.nn.ParameterDict({'w': torch.ones(2)})\nq['b'] = torch.nn.Parameter(torch.zeros(1))\n"
    "print(q, len(q), 'w' in q, list(q.keys()), list(q.state_dict()))\nprint(q.pop('w'))\nprint(q)\n",
]


@pytest.mark.parametrize("code", CONTAINER_PROGRAMS)
def test_container_methods_print_like_torch(code):
    from parity import mask, run_both

    (_, printed_torch), (_, printed_ours) = run_both(code)
    assert mask(printed_ours) == mask(printed_torch)


CONTAINER_ERRORS = [
    "torch.nn.ModuleList([torch.nn.ReLU()])[3]", "torch.nn.ModuleList().extend(3)", "torch.nn.ModuleDict().update(3)",
    "torch.nn.ModuleDict().update([('a', torch.nn.ReLU(), 1)])", "torch.nn.ModuleDict()['x']",
    "torch.nn.ParameterList([torch.ones(1)])[-2]", "torch.nn.ParameterDict().update(3)",
]


@pytest.mark.parametrize("expression", CONTAINER_ERRORS)
def test_container_errors_match_torch(expression):
    assert_same_error(f"y = {expression}\n")


def test_widget_frames_follow_container_paths():
    """``gv.show(loss, model=model)``: parameters named by their container paths, nodes grouped by them."""
    import gradviz
    from gradviz.snapshot import graph_of

    model = _containers(gradviz)
    loss = model(gradviz.tensor([[0.5, -1.0]])).sum()
    graph = graph_of(loss, model=model)
    labels = {node.label for node in graph.nodes}
    assert {"layers.0.weight", "heads.score.bias", "scales.0", "extra.shift"} <= labels
    groups = {node.module for node in graph.nodes if node.module}
    assert {"layers.0", "layers.2", "heads.score"} <= groups


# -- embedding, one_hot, layer_norm, pad, normalize, cosine_similarity --------------------------------------
E = "E = torch.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [0.7, -0.8, 0.9], [1.0, 1.1, -1.2]], requires_grad=True)\n"
LAYERS = [
    E + weighted("F.embedding(torch.tensor([[0, 2], [2, 3]]), E)"),
    E + weighted("F.embedding(torch.tensor([0, 2, 2, 1]), E, padding_idx=2)"),
    E + weighted("F.embedding(torch.tensor([0, 2, 2, 1]), E, padding_idx=-1, scale_grad_by_freq=True)"),
    E + weighted("F.embedding(torch.tensor([1, 3], dtype=torch.int32), E * 2)"),
    E + "W = E.detach().clone()\n" + weighted("F.embedding(torch.tensor([3, 1, 3]), W, max_norm=1.0) * E[0]"),
    X + weighted("F.layer_norm(x, (3,))"),
    X + "w = torch.tensor([1.5, -0.5, 2.0], requires_grad=True)\nb = torch.tensor([0.1, 0.2, 0.3], requires_grad=True)\n"
    + weighted("F.layer_norm(x, [3], w, b, eps=1e-3)"),
    X + weighted("F.layer_norm(x * 3, x.shape)"),
    X + "w = torch.tensor([1.5, -0.5, 2.0], requires_grad=True)\n" + weighted("F.layer_norm(x.unsqueeze(0), (3,), w)"),
    X + weighted("F.pad(x, (1, 2))"),
    X + weighted("F.pad(x, (1, 2, 0, 1), value=3.0)"),
    X + weighted("F.pad(x, (-1, 1, 1, -1))"),
    X + weighted("F.pad(x, [0, 0, 2, 0])"),
    X + weighted("F.cosine_similarity(x, x * x - 1)"),
    X + "v = torch.tensor([0.3, -1.0, 2.0], requires_grad=True)\n" + weighted("F.cosine_similarity(x, v, dim=-1)"),
    X + weighted("F.cosine_similarity(x, x * x, dim=0, eps=0.5)"),
    "i = torch.tensor([[0, 2], [1, 1]])\ny = F.one_hot(i)\nz = F.one_hot(i, 4)\nprint(y, z.dtype)\n",
]


@pytest.mark.parametrize("code", LAYERS)
def test_layers_match_torch(code):
    assert_same(code)


def test_normalize_values_and_gradients_match_torch():
    """Only the clamp node's name differs (see ``F.normalize``): values and gradients are PyTorch's."""
    from parity import assert_values, run_both

    code = X + "y = F.normalize(x) + F.normalize(x, p=1, dim=0) * 2\n(y * y).sum().backward()\ng = x.grad\n"
    (torch_scope, _), (our_scope, _) = run_both(code)
    for name in ("y", "g"):
        assert_values(torch_scope[name], our_scope[name], name)


LAYER_ERRORS = [
    "F.one_hot(torch.tensor([1.0]))", "F.one_hot(torch.tensor([3]), 2)", "F.one_hot(torch.tensor([-1]))",
    "F.one_hot(torch.tensor([], dtype=torch.int64))", "F.embedding(torch.tensor([5]), torch.ones(3, 2))",
    "F.embedding(torch.tensor([1.0]), torch.ones(3, 2))", "F.embedding(torch.tensor([1]), torch.ones(3, 2), padding_idx=3)",
    "F.layer_norm(torch.ones(2, 3), (2,))", "F.layer_norm(torch.ones(2, 3), (3,), torch.ones(2))",
    "F.pad(torch.ones(2), (1,))", "F.pad(torch.ones(2), (1, 1, 1, 1, 1, 1))", "F.pad(torch.ones(2), (-2, -1))",
    "torch.nn.Embedding(3, 2, padding_idx=5)", "torch.nn.Embedding.from_pretrained(torch.ones(3))",
]


@pytest.mark.parametrize("expression", ERRORS + LAYER_ERRORS)
def test_errors_match_torch(expression):
    assert_same_error(f"i = torch.tensor([1, -2, 3])\ny = {expression}\n")


def test_embedding_and_layer_norm_modules_match_torch():
    torch = pytest.importorskip("torch")
    import gradviz

    def build(lib):
        lib.manual_seed(0)
        nn = lib.nn
        return nn.Sequential(nn.Embedding(6, 4, padding_idx=1), nn.LayerNorm(4), nn.GELU(), nn.Linear(4, 2),
                             nn.LayerNorm(2, elementwise_affine=False), nn.Embedding(5, 3, max_norm=1.0, sparse=True),
                             nn.LayerNorm((2, 3), bias=False), nn.Embedding(5, 3, scale_grad_by_freq=True, norm_type=1.0))

    ours, theirs = build(gradviz), build(torch)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6, err_msg=name)  # the seeded init
    indices = [[0, 1, 5], [2, 2, 1]]
    head_ours, head_theirs = ours[:4], theirs[:4]
    out_ours, out_theirs = head_ours(gradviz.tensor(indices)), head_theirs(torch.tensor(indices))
    out_ours.pow(2).sum().backward()
    out_theirs.pow(2).sum().backward()
    np.testing.assert_allclose(out_ours.detach().numpy(), out_theirs.detach().numpy(), rtol=1e-5, atol=1e-6)
    for (name, p), (_, q) in zip(head_ours.named_parameters(), head_theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
    pretrained = gradviz.nn.Embedding.from_pretrained(gradviz.ones(3, 2))
    assert not pretrained.weight.requires_grad and repr(pretrained) == "Embedding(3, 2)"


# -- second order: create_graph=True records these backward passes as PyTorch does ------------------------
SECOND_ORDER = ["F.selu(x)", "F.celu(x, 0.5)", "F.gelu(x)", "F.gelu(x, approximate='tanh')", "F.elu(x, 0.5)", "F.softplus(x, 2, 1)",
                "F.softplus(x * 3) * F.gelu(x)", "F.silu(x)", "F.leaky_relu(x, 0.2)", "F.hardtanh(x, -1.0, 1.5)", "F.relu6(x * 3)",
                "F.pad(x, (1, -1, 0, 2), value=2.0)", "F.leaky_relu(x * x) * F.silu(x * 2)",
                "F.logsigmoid(x)", "F.logsigmoid(x * 30) * x", "F.hardswish(x * 2)", "F.hardswish(x) * F.logsigmoid(x * 3)",
                "F.huber_loss(x * x, x.sin())", "F.smooth_l1_loss(x * 2, x.exp(), beta=0.5, reduction='sum')",
                "F.huber_loss(x.tanh(), x * 0.3, reduction='none', delta=0.4)", "F.smooth_l1_loss(x, torch.zeros(2, 3))",
                "F.huber_loss(torch.ones(2, 3), x * x, delta=0.5)",
                "F.leaky_relu(x * 1, 0.2, inplace=True)", "F.elu(x * 2, 0.7, inplace=True)", "F.celu(x * 1, 0.5, True)",
                "F.selu(x * x, inplace=True) * x", "F.leaky_relu(x * x, 0.3, True) * F.elu(x * 1, inplace=True)",
                "F.mish(x)", "F.mish(x * 30) * x"]


@pytest.mark.parametrize("expression", SECOND_ORDER)
def test_second_order_graphs_match_torch(expression):
    assert_same(X + f"out = ({expression} ** 2).sum()\ng, = torch.autograd.grad(out, x, create_graph=True)\nprint(g)\n"
                "(g * torch.arange(1.0, g.numel() + 1.0).reshape(g.shape)).sum().backward()\n")


@pytest.mark.parametrize("library", ["gradviz", "torch"])
def test_embedding_and_layer_norm_are_drawn_in_their_own_frames(library):
    """An embedding's indices have no edge, yet the LayerNorm reading its rows is the LayerNorm's, not the
    Embedding's: the same frames for a gradviz model and a torch one."""
    import importlib

    from gradviz.snapshot import graph_of

    lib = importlib.import_module(library)
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Embedding(10, 4), lib.nn.LayerNorm(4), lib.nn.GELU(), lib.nn.Linear(4, 1))
    loss = lib.nn.functional.smooth_l1_loss(model(lib.tensor([[1, 2, 3]])).squeeze(-1), lib.zeros(1, 3))
    modules = {node.name: node.module for node in graph_of(loss, model=model).nodes if node.kind != "leaf"}
    assert modules["EmbeddingBackward0"] == "0" and modules["NativeLayerNormBackward0"] == "1"
    assert modules["AddmmBackward0"] == "3" and modules["SmoothL1LossBackward0"] is None


# -- whole tutorial-style programs: seeded init, data, training loop, schedule ------------------------------
TINY_LANGUAGE_MODEL = """
torch.manual_seed(0)
vocab, dim = 12, 8


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim, padding_idx=0)
        self.blocks = torch.nn.ModuleList([torch.nn.Sequential(torch.nn.LayerNorm(dim), torch.nn.Linear(dim, dim),
                                                               torch.nn.GELU()) for _ in range(2)])
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens):
        h = self.embed(tokens)
        for block in self.blocks:
            h = h + block(h)
        return self.head(h)


model = TinyLM()
print(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=20)
tokens = torch.randint(0, vocab, (4, 6))
for step in range(20):
    logits = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
    if step % 5 == 0:
        print(f"{step} {loss.item():.4f} {scheduler.get_last_lr()[0]:.6f}")
weights = list(model.parameters())
"""

REGRESSION = """
torch.manual_seed(1)
model = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.LeakyReLU(0.1), torch.nn.Linear(16, 16),
                            torch.nn.Softplus(), torch.nn.Linear(16, 16), torch.nn.ELU(), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
x = torch.randn(64, 3)
y = (x[:, :1] * 2 - x[:, 1:2] * x[:, 2:]).tanh()
loss_fn = torch.nn.SmoothL1Loss(beta=0.5)
for epoch in range(30):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    scheduler.step()
    if epoch % 10 == 0:
        print(f"{epoch} {loss.item():.4f} {scheduler.get_last_lr()}")
weights = list(model.parameters())
"""


@pytest.mark.parametrize("program", [TINY_LANGUAGE_MODEL, REGRESSION], ids=["tiny language model", "regression"])
def test_tutorial_programs_train_like_torch(program):
    assert_same(program)


# -- batch normalization ------------------------------------------------------------------------------------
BATCH_NORM = [
    "bn = torch.nn.BatchNorm1d(3)\ny = bn(x)\n",
    "bn = torch.nn.BatchNorm1d(3, momentum=None, eps=1e-3)\ny = bn(x)\ny = bn(x * 2) + y\n",
    "bn = torch.nn.BatchNorm1d(3)\nbn(x * 3)\nbn.eval()\ny = bn(x)\n",
    "bn = torch.nn.BatchNorm1d(3, affine=False)\ny = bn(x)\n",
    "bn = torch.nn.BatchNorm1d(3, track_running_stats=False)\nbn.eval()\ny = bn(x)\n",
    "bn = torch.nn.BatchNorm1d(3, bias=False)\ny = bn(x.unsqueeze(-1).expand(4, 3, 2) * torch.tensor([1.0, -2.0]))\n",
    "bn = torch.nn.BatchNorm2d(3)\ny = bn(x.reshape(2, 2, 3).permute(0, 2, 1).unsqueeze(-1) * torch.tensor([1.0, 3.0]))\n",
]
BATCH = "x = torch.tensor([[0.5, -1.5, 2.0], [1.2, 0.3, -0.7], [0.1, 0.9, -1.1], [2.0, -0.4, 0.6]], requires_grad=True)\n"


@pytest.mark.parametrize("code", BATCH_NORM)
def test_batch_norm_matches_torch(code):
    """Graph (NativeBatchNormBackward0 with torch's saved values), output, grads, running statistics."""
    assert_same(BATCH + code + "(y * torch.arange(1.0, y.numel() + 1.0).reshape(y.shape)).sum().backward()\n"
                "stats = [b for b in bn.buffers()]\nprint(bn, list(bn.state_dict()))\n")


BATCH_NORM_ERRORS = [
    "torch.nn.BatchNorm1d(3)(torch.ones(1, 3))", "torch.nn.BatchNorm1d(3)(torch.ones(2, 4))",
    "torch.nn.BatchNorm1d(3)(torch.ones(2, 3, 4, 5))", "torch.nn.BatchNorm2d(3)(torch.ones(2, 3))",
]


@pytest.mark.parametrize("expression", BATCH_NORM_ERRORS)
def test_batch_norm_errors_match_torch(expression):
    assert_same_error(f"y = {expression}\n")


# -- nn.utils ------------------------------------------------------------------------------------------------
CLIPPING = "a = torch.tensor([[3.0, -4.0], [1.0, 2.0]], requires_grad=True)\nb = torch.tensor([0.5, -12.0], requires_grad=True)\n" \
           "c = torch.tensor([1.0], requires_grad=True)\n((a * a).sum() + (b ** 3).sum()).backward()\n"
UTILS = [
    CLIPPING + "total = torch.nn.utils.clip_grad_norm_([a, b, c], max_norm=5.0)\n",
    CLIPPING + "total = torch.nn.utils.clip_grad_norm_((p for p in [a, b]), 1000.0)\n",
    CLIPPING + "total = torch.nn.utils.clip_grad_norm_([a, b], 2.0, norm_type=1)\n",
    CLIPPING + "total = torch.nn.utils.clip_grad_norm_(b, 3.0, norm_type=float('inf'))\n",
    CLIPPING + "total = torch.nn.utils.clip_grad_norm_([c], 1.0)\n",
    CLIPPING + "torch.nn.utils.clip_grad_value_([a, b, c], 1.5)\n",
    CLIPPING + "v = torch.nn.utils.parameters_to_vector([a, b])\n(v * v).sum().backward()\n",
    CLIPPING + "with torch.no_grad():\n    torch.nn.utils.vector_to_parameters(torch.arange(6.0), [a, b])\n",
]


@pytest.mark.parametrize("code", UTILS)
def test_nn_utils_match_torch(code):
    assert_same(code)


def test_clip_grad_norm_errors_and_warnings_match_torch():
    assert_same_error(CLIPPING + "b.grad[0] = float('inf')\ntorch.nn.utils.clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)\n")
    import gradviz

    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur."):
        total = gradviz.nn.utils.clip_grad_norm_((p for p in []), 1.0)
    assert total.item() == 0.0


def test_apply_visits_children_first_in_torchs_order_and_draws_the_same_weights():
    """``net.apply(init)`` is post-order (each child's children, the child, ..., the module itself): the
    order in which an init function draws its random numbers, so the weights match torch's."""
    assert_same("""
torch.manual_seed(0)
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 4))
        self.norm = torch.nn.BatchNorm1d(4)
        self.head = torch.nn.Linear(4, 2)
net = torch.nn.Sequential(Block(), torch.nn.Dropout(0.1), torch.nn.Linear(2, 1))
visited = []
def init(module):
    visited.append(type(module).__name__)
    if isinstance(module, torch.nn.Linear):
        torch.nn.init.xavier_uniform_(module.weight)
        module.bias.data.fill_(0.01)
print(net.apply(init) is net, visited)
w = net[0].inner[0].weight
last = net[2].weight
""")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_batch_norm_in_training_on_either_backend_matches_torch(backend):
    """The torch backend (CUDA's) trained batch norm too: ``x.size`` is a method on a torch tensor."""
    assert_same("""
torch.manual_seed(0)
bn = torch.nn.BatchNorm2d(2)
x = torch.randn(3, 2, 4, 4, requires_grad=True)
y = bn(x)
(y * y).sum().backward()
running = bn.running_mean
""", backend=backend)
