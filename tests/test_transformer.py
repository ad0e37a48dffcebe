"""The transformer layers against PyTorch 2.13, and an attention graph through the snapshot and the export.

Each snippet builds the module in both libraries under the same seed and runs the same lines
(``parity.assert_same``): printed module and parameter names, initial values, the output's whole graph,
gradients of the input and of every parameter. A tiny transformer is trained a few steps in both with
dropout 0 and must give the same losses. The snapshot tests need no torch.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradviz as gv


def layer_code(build: str, call: str, shapes: list, dtype: str = "torch.float64", mode: str = "") -> str:
    names = "xyz"[:len(shapes)]
    lines = "".join(f"torch.manual_seed({10 + i})\n{n} = torch.randn{s}.to({dtype}).requires_grad_()\n"
                    for i, (n, s) in enumerate(zip(names, shapes)))
    return ("torch.manual_seed(0)\n" f"m = {build}.to({dtype})\n{mode}print(m)\n"
            "print([(n, tuple(p.shape)) for n, p in m.named_parameters()])\n" + lines
            + f"torch.manual_seed(3)\nout = m({call})\n"
            "torch.manual_seed(4)\n(out * torch.randn(out.shape, dtype=out.dtype)).sum().backward()\n"
            "params = [p for n, p in m.named_parameters()]\ngrads = [p.grad for p in params]\n")


ENC = "torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0{})"
CASES = {
    "encoder_layer": layer_code(ENC.format(""), "x", [(5, 3, 8)]),
    "encoder_layer_norm_first_gelu_padding": layer_code(
        ENC.format(", activation='gelu', batch_first=True, norm_first=True"),
        "x, src_key_padding_mask=torch.tensor([[False] * 4 + [True]] * 3)", [(3, 5, 8)]),
    "encoder_layer_module_activation_no_bias": layer_code(
        ENC.format(", activation=torch.nn.GELU(), bias=False, layer_norm_eps=1e-3"), "x, is_causal=True, "
        "src_mask=torch.nn.Transformer.generate_square_subsequent_mask(5)", [(5, 3, 8)]),
    "encoder_layer_callable_activation_unbatched": layer_code(
        ENC.format(", activation=torch.tanh"), "x, src_mask=torch.ones(5, 5, dtype=torch.bool).triu(1)", [(5, 8)]),
    "encoder_layer_dropout": layer_code("torch.nn.TransformerEncoderLayer(8, 2, 16, 0.25)", "x", [(5, 3, 8)]),
    "encoder_layer_eval": layer_code("torch.nn.TransformerEncoderLayer(8, 2, 16, 0.25, batch_first=True)", "x",
                                     [(3, 5, 8)], mode="m.eval()\n"),
    "encoder_stack_causal_mask_detected": layer_code(
        "torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0), 2, norm=torch.nn.LayerNorm(8))",
        "x, mask=torch.nn.Transformer.generate_square_subsequent_mask(5)", [(5, 3, 8)]),
    "encoder_stack_batch_first": layer_code(
        "torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 4, 16, 0.0, batch_first=True), 2, "
        "enable_nested_tensor=False)", "x, src_key_padding_mask=torch.tensor([[False] * 4 + [True]] * 3)", [(3, 5, 8)]),
    "decoder_layer": layer_code("torch.nn.TransformerDecoderLayer(8, 2, 16, 0.0)",
                                "x, y, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4), tgt_is_causal=True",
                                [(4, 3, 8), (5, 3, 8)]),
    "decoder_stack_norm_first": layer_code(
        "torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(8, 2, 16, 0.0, norm_first=True, "
        "batch_first=True), 2)", "x, y, memory_key_padding_mask=torch.tensor([[False] * 4 + [True]] * 3)",
        [(3, 4, 8), (3, 5, 8)]),
    "transformer": layer_code("torch.nn.Transformer(8, 2, 2, 1, 16, 0.0)",
                              "x, y, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4)",
                              [(5, 3, 8), (4, 3, 8)]),
    "transformer_batch_first_padding": layer_code(
        "torch.nn.Transformer(8, 2, 1, 1, 16, 0.0, batch_first=True, activation='gelu')",
        "x, y, src_key_padding_mask=torch.tensor([[False] * 4 + [True]] * 3)", [(3, 5, 8), (3, 4, 8)]),
    "encoder_stack_eval_no_grad_nested": "torch.manual_seed(0)\nm = torch.nn.TransformerEncoder(torch.nn."
    "TransformerEncoderLayer(8, 2, 16, 0.1, batch_first=True), 2)\nm.eval()\nx = torch.randn(3, 5, 8)\n"
    "pad = torch.tensor([[False] * 4 + [True], [False] * 5, [False] * 3 + [True] * 2])\nwith torch.no_grad():\n"
    "    nested = m(x, src_key_padding_mask=pad)\n    plain = m(x)\n    layer = m.layers[0](x, src_key_padding_mask=pad)\n"
    "    attended, weights = m.layers[0].self_attn(x, x, x, key_padding_mask=pad)\n",
    "square_subsequent_mask": "m = torch.nn.Transformer.generate_square_subsequent_mask(4)\n"
                              "h = torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)\nprint(m, h)\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_transformer_layers_as_torch(name):
    pytest.importorskip("torch")
    from parity import assert_same

    assert_same(CASES[name])


def test_a_transformer_on_the_torch_backend_as_torch():
    pytest.importorskip("torch")
    from parity import assert_same

    assert_same(CASES["transformer_batch_first_padding"], "torch")


def test_encoder_warns_as_torch_about_nested_tensors():
    torch = pytest.importorskip("torch")
    for lib in (torch, gv):
        with pytest.warns(UserWarning) as record:
            lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, 16), 2)
        messages = [str(w.message) for w in record if "nested" in str(w.message)]
        if lib is torch:
            expected = messages
    assert messages == expected and expected


ERRORS = {
    "activation_name": "torch.nn.TransformerEncoderLayer(8, 2, activation='tanh')\n",
    "batch_mismatch": "m = torch.nn.Transformer(8, 2, 1, 1, 16)\nm(torch.ones(5, 3, 8), torch.ones(4, 2, 8))\n",
    "feature_mismatch": "m = torch.nn.Transformer(8, 2, 1, 1, 16)\nm(torch.ones(5, 3, 8), torch.ones(4, 3, 6))\n",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_transformer_errors_as_torch(name):
    pytest.importorskip("torch")
    from parity import assert_same_error

    assert_same_error(ERRORS[name])


def _train(lib, steps: int = 4) -> list:
    """A tiny sequence classifier: embedding, a 2-layer batch-first encoder, mean over positions, a linear
    head, cross entropy; Adam for a few steps. Returns the losses."""
    lib.manual_seed(0)
    embed = lib.nn.Embedding(11, 8)
    encoder = lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True), 2,
                                        enable_nested_tensor=False)
    head = lib.nn.Linear(8, 3)
    params = list(embed.parameters()) + list(encoder.parameters()) + list(head.parameters())
    optimizer = lib.optim.Adam(params, lr=0.01)
    tokens = lib.tensor([[1, 4, 2, 7, 0], [3, 3, 9, 1, 2], [10, 5, 6, 0, 8]])
    labels = lib.tensor([2, 0, 1])
    mask = lib.nn.Transformer.generate_square_subsequent_mask(5)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        hidden = encoder(embed(tokens), mask=mask)
        loss = lib.nn.functional.cross_entropy(head(hidden.mean(dim=1)), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_a_tiny_transformer_trains_as_in_torch():
    torch = pytest.importorskip("torch")
    expected, actual = _train(torch), _train(gv)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
    assert actual[-1] < actual[0]


# -- the snapshot and the one-file export of an attention graph (no torch needed) ---------------------------------
def _attention_loss():
    gv.manual_seed(0)
    layer = gv.nn.TransformerEncoderLayer(4, 2, 8, 0.0, batch_first=True)
    x = gv.randn(1, 3, 4, requires_grad=True)
    return layer(x).pow(2).mean(), layer


def test_an_attention_graph_snapshots_and_steps():
    from gradviz.snapshot import graph_of, observe_all_steps

    loss, layer = _attention_loss()
    graph = graph_of(loss, model=layer)
    assert "ScaledDotProductFlashAttentionForCpuBackward0" in {node.name for node in graph.nodes}
    steps = observe_all_steps(loss)
    assert any(step.node.name() == "ScaledDotProductFlashAttentionForCpuBackward0" for step in steps)
    assert all(p.grad is None for p in layer.parameters())  # observing writes no .grad


def test_an_attention_graph_exports_to_one_file(tmp_path):
    loss, layer = _attention_loss()
    path = gv.export_html(loss, tmp_path / "attention.html", model=layer)
    text = path.read_text()
    assert "ScaledDotProductFlashAttentionForCpuBackward0" in text
    weights = gv.nn.MultiheadAttention(4, 2)(*(gv.randn(3, 1, 4, requires_grad=True),) * 3)[1]
    assert "SoftmaxBackward0" in gv.to_html(weights.sum())
