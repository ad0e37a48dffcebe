"""Recurrent layers without torch: central differences (float64) to first and second order for every cell and
layer, oneDNN's fused LSTM layer (``MkldnnRnnLayerBackward0``, gradviz's own backpropagation through time) against
the decomposed cells it stands for, and a recurrent graph through the snapshot, the one-file export and the
stepping engine.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import gradviz as gv
from gradviz.autograd.gradcheck import gradcheck, gradgradcheck
from gradviz.nn import recurrent
from gradviz.ops.recurrent import MkldnnRnnLayerBackward0

RNG = np.random.default_rng(7)


def leaves(*shapes):
    return [gv.tensor(RNG.uniform(-1, 1, size=shape), dtype=gv.float64, requires_grad=True) for shape in shapes]


CELLS = {
    "rnn_tanh_cell": (recurrent.rnn_tanh_cell, 1), "rnn_relu_cell": (recurrent.rnn_relu_cell, 1),
    "gru_cell": (recurrent.gru_cell, 3),
}


@pytest.mark.parametrize("name", sorted(CELLS))
def test_cells_match_central_differences(name):
    cell, chunks = CELLS[name]
    x, h, w_ih, w_hh, b_ih, b_hh = leaves((2, 3), (2, 2), (2 * chunks, 3), (2 * chunks, 2), (2 * chunks,),
                                          (2 * chunks,))
    if name == "rnn_relu_cell":  # keep the pre-activations away from relu's kink
        b_ih = gv.tensor(np.full(2, 3.0), dtype=gv.float64, requires_grad=True)
    inputs = (x, h, w_ih, w_hh, b_ih, b_hh)
    assert gradcheck(cell, inputs)
    assert gradgradcheck(cell, inputs)


def test_lstm_cell_matches_central_differences():
    x, h, c, w_ih, w_hh, b_ih, b_hh = leaves((2, 3), (2, 2), (2, 2), (8, 3), (8, 2), (8,), (8,))

    def cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
        hy, cy = recurrent.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)
        return hy * 2 + cy

    assert gradcheck(cell, (x, h, c, w_ih, w_hh, b_ih, b_hh))
    assert gradgradcheck(cell, (x, h, c, w_ih, w_hh, b_ih, b_hh))


LAYERS = {
    "RNN": dict(num_layers=2, bidirectional=True), "GRU": dict(num_layers=2, batch_first=True),
    "LSTM": dict(bidirectional=True, proj_size=1), "LSTM_two_layers": dict(num_layers=2),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers_match_central_differences_in_every_input_and_parameter(name):
    """The layer as a function of its input, h0 (and c0) and every parameter, to first and second order."""
    gv.manual_seed(0)
    module = getattr(gv.nn, name.split("_")[0])(2, 2, dtype=gv.float64, **LAYERS[name])
    names = [n for n, _ in module.named_parameters()]
    directions = 2 if module.bidirectional else 1
    states = (module.num_layers * directions, 3, module.proj_size or module.hidden_size)
    shape = (3, 4, 2) if module.batch_first else (4, 3, 2)
    x, h0, c0 = leaves(shape, states, (module.num_layers * directions, 3, module.hidden_size))
    params = [p.detach().requires_grad_() for p in module.parameters()]

    def run(x, h0, c0, *weights):
        for key, weight in zip(names, weights):
            module._parameters[key] = weight
        if name.startswith("LSTM"):
            output, (hy, cy) = module(x, (h0, c0))
            return gv.cat([output.reshape(-1), hy.reshape(-1) * 2, cy.reshape(-1) * 3])
        output, hy = module(x, h0)
        return gv.cat([output.reshape(-1), hy.reshape(-1) * 2 + c0.sum()])

    assert gradcheck(run, (x, h0, c0, *params))
    assert gradgradcheck(run, (x, h0, c0, *params))


def _onednn_and_decomposed(layers, bidirectional, steps, batch, inputs, hidden, has_biases):
    """The float64 LSTM run both ways (the fused layers called directly), with the same weights."""
    gv.manual_seed(1)
    module = gv.nn.LSTM(inputs, hidden, layers, bias=has_biases, bidirectional=bidirectional, dtype=gv.float64)
    directions = 2 if bidirectional else 1
    results = []
    for path in (recurrent._lstm_onednn, None):
        x, h0, c0 = (gv.tensor(np.linspace(-1, 1, int(np.prod(shape))).reshape(shape) * (k + 1), dtype=gv.float64,
                               requires_grad=True)
                     for k, shape in enumerate(((steps, batch, inputs), (layers * directions, batch, hidden),
                                                (layers * directions, batch, hidden))))
        module.zero_grad()
        if path is None:
            output, (hy, cy) = module(x, (h0, c0))
        else:
            output, hy, cy = path(x, (h0, c0), module._flat_weights, has_biases, layers, 0.0, True, bidirectional,
                                  False)
        weights = gv.arange(1.0, output.numel() + 1.0, dtype=gv.float64).reshape(output.shape)
        ((output * weights).sum() + (hy * 2).sum() + (cy * 3).sum()).backward()
        results.append((output, hy, cy, x.grad, h0.grad, c0.grad, *[p.grad for p in module.parameters()]))
    return results


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(layers=st.integers(1, 2), bidirectional=st.booleans(), steps=st.integers(1, 4), batch=st.integers(1, 3),
       inputs=st.integers(1, 3), hidden=st.integers(1, 3), has_biases=st.booleans())
def test_fused_lstm_layer_agrees_with_the_decomposed_cells(layers, bidirectional, steps, batch, inputs, hidden,
                                                          has_biases):
    """What oneDNN's node computes, and the gradients gradviz's BPTT sends, equal autograd through the cells."""
    fused, decomposed = _onednn_and_decomposed(layers, bidirectional, steps, batch, inputs, hidden, has_biases)
    for index, (a, b) in enumerate(zip(fused, decomposed)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=f"item {index}")


def test_fused_layer_graph_and_workspace():
    gv.manual_seed(0)
    output, (hy, cy) = gv.nn.LSTM(3, 4, 2, bidirectional=True)(gv.randn(5, 2, 3))
    assert output.grad_fn.name() == "CatBackward0"
    layer = output.grad_fn.next_functions[0][0]
    assert layer.name() == "MkldnnRnnLayerBackward0"
    assert [n.name() if n else None for n, _ in layer.next_functions] == (
        ["CatBackward0"] + ["torch::autograd::AccumulateGrad"] * 4 + [None, None])
    assert hy.grad_fn.name() == "StackBackward0" and len(hy.grad_fn.next_functions) == 4
    assert [nr for _, nr in hy.grad_fn.next_functions] == [1] * 4 and [nr for _, nr in cy.grad_fn.next_functions] == [2] * 4
    workspace = layer._saved_result3
    assert workspace.dtype == gv.uint8 and not workspace.requires_grad
    assert workspace.numel() == 5 * 2 * (4 * 4 + 4) * 4  # the float32 gates and cell state of every step
    out_node = layer._saved_result0
    assert out_node.grad_fn is layer and tuple(out_node.shape) == (5, 2, 4)


def test_reverse_layer_runs_the_sequence_backwards():
    """A reverse layer's output at step t depends on the steps after t only."""
    x, w_ih, w_hh, b_ih, b_hh, h, c = leaves((4, 1, 2), (8, 2), (8, 2), (8,), (8,), (1, 2), (1, 2))
    kwargs = dict(hidden_size=2, num_layers=1, has_biases=True, bidirectional=True, batch_first=False, train=True)
    output = MkldnnRnnLayerBackward0.apply(x, w_ih, w_hh, b_ih, b_hh, h, c, reverse=True, **kwargs)[0]
    output[2].sum().backward()
    assert np.all(x.grad.numpy()[:2] == 0) and np.any(x.grad.numpy()[2:] != 0)


def test_an_unrolled_rnn_goes_through_the_snapshot_the_export_and_the_stepper():
    gv.manual_seed(0)
    model = gv.nn.RNN(2, 3, num_layers=2, batch_first=True)
    x = gv.randn(1, 4, 2, requires_grad=True)
    output, hidden = model(x)
    loss = output.sum() + hidden.sum()
    graph = gv.graph(loss, model=model)
    names = [node.name for node in graph.nodes]
    assert "TransposeBackward1" in names and "UnbindBackward0" in names and names.count("TanhBackward0") == 8
    page = gv.to_html(loss, model=model)
    assert "TanhBackward0" in page and "weight_hh_l0" in page
    steps = list(gv.autograd.backward_steps(loss, retain_graph=True))
    assert steps[-1].name.endswith("AccumulateGrad") and len(steps) == len(
        [n for n in graph.nodes if n.name.endswith("Backward0") or n.name.endswith("Backward1")
         or n.name.endswith("AccumulateGrad")])
    lstm = gv.nn.LSTM(2, 3)
    out, (h, c) = lstm(gv.randn(3, 1, 2))
    lstm_graph = gv.graph(out.sum() + c.sum(), model=lstm)
    assert [n.name for n in lstm_graph.nodes].count("MkldnnRnnLayerBackward0") == 1
    assert "MkldnnRnnLayerBackward0" in gv.to_html(out.sum() + c.sum(), model=lstm)


def test_unsafe_chunk_pieces_are_not_views():
    x = gv.arange(12.0).reshape(2, 6).requires_grad_()
    pieces = x.unsafe_chunk(3, 1)
    assert [p.grad_fn.name() for p in pieces] == ["UnsafeSplitBackward0"] * 3
    assert [p._output_nr for p in pieces] == [0, 1, 2] and all(p._base is None for p in pieces)
    assert [tuple(p.shape) for p in gv.unsafe_split(x, 4, 1)] == [(2, 4), (2, 2)]
    (pieces[1] * 2).sum().backward()
    assert x.grad.numpy().tolist() == [[0, 0, 2, 2, 0, 0]] * 2
