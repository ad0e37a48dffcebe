"""Recurrent layers against PyTorch 2.13: ``nn.RNNCell``/``GRUCell``/``LSTMCell`` and ``nn.RNN``/``GRU``/``LSTM``.

Each case runs the same lines in both libraries: the module made after ``manual_seed`` (same parameter names,
order, shapes and initial draws), called on batched or unbatched input with or without ``h0``, then backward from a
weighted sum of every output. float64 compares everything ``parity.assert_same`` compares: values, every
parameter's grad, the whole ``grad_fn`` graph node for node (names, edges, ``_saved_*`` names and values) and the
printed module. float32 takes torch's oneDNN path for LSTM (one MkldnnRnnLayerBackward0 per layer and direction):
there the graph and saved attributes are compared before backward (the workspace only by dtype and rank: its
bytes are oneDNN's own), the values with float32 tolerance. Also: errors, backward step order, hypothesis over
sizes, layers, directions and layouts, and a small sequence model trained in both.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import gradviz as gv  # noqa: E402
from orders import torch_order  # noqa: E402
from parity import assert_same, assert_same_error, assert_values, run_both, saved_attribute, saved_names  # noqa: E402


def program(module: str, args: str, x_shape: tuple, hx=None, dtype: str = "float64", train: bool = True,
            x_grad: bool = True) -> str:
    """Lines that build ``m``, run it on ``x`` (and ``hx``: shapes, a pair for LSTM), and backpropagate a
    weighted sum of every output into ``x``, ``hx`` and the parameters (listed in ``params``)."""
    def leaf(shape):
        return f"torch.randn({tuple(shape)}, dtype=torch.{dtype}, requires_grad=True)"

    if hx is None:
        given = ""
    elif module in ("LSTM", "LSTMCell"):
        given = f", ({leaf(hx[0])}, {leaf(hx[1])})"
    else:
        given = f", {leaf(hx)}"
    return f"""
torch.manual_seed(0)
m = torch.nn.{module}({args}, dtype=torch.{dtype})
m.train({train})
x = torch.randn({tuple(x_shape)}, dtype=torch.{dtype}, requires_grad={x_grad})
out = m(x{given})
flat = [t for o in (out if isinstance(out, tuple) else (out,)) for t in (o if isinstance(o, tuple) else (o,))]
loss = sum((t * torch.arange(1.0, t.numel() + 1.0, dtype=t.dtype).reshape(t.shape)).sum() for t in flat)
loss.backward()
params = [p for _, p in m.named_parameters()]
print(m)
print([(name, tuple(p.shape)) for name, p in m.named_parameters()])
print([tuple(t.shape) for t in flat])
"""


CASES = {
    # the cells: batched and unbatched, hx given or not, bias or not, tanh or relu
    "rnn_cell": ("RNNCell", "3, 4", (2, 3), None),
    "rnn_cell_unbatched": ("RNNCell", "3, 4", (3,), None),
    "rnn_cell_hx": ("RNNCell", "3, 4", (2, 3), (2, 4)),
    "rnn_cell_relu_no_bias": ("RNNCell", "3, 4, bias=False, nonlinearity='relu'", (2, 3), (2, 4)),
    "rnn_cell_unbatched_hx": ("RNNCell", "3, 4", (3,), (4,)),
    "gru_cell": ("GRUCell", "3, 4", (2, 3), None),
    "gru_cell_hx": ("GRUCell", "3, 4", (2, 3), (2, 4)),
    "gru_cell_unbatched_no_bias": ("GRUCell", "3, 4, bias=False", (3,), (4,)),
    "lstm_cell": ("LSTMCell", "3, 4", (2, 3), None),
    "lstm_cell_hx": ("LSTMCell", "3, 4", (2, 3), ((2, 4), (2, 4))),
    "lstm_cell_unbatched_no_bias": ("LSTMCell", "3, 4, bias=False", (3,), ((4,), (4,))),
    # the layers: layers, directions, batch_first, bias, unbatched, h0, dropout, projections
    "rnn": ("RNN", "3, 4", (5, 2, 3), None),
    "rnn_relu_two_layers": ("RNN", "3, 4, 2, nonlinearity='relu'", (5, 2, 3), None),
    "rnn_batch_first_h0": ("RNN", "3, 4, batch_first=True", (2, 5, 3), (1, 2, 4)),
    "rnn_bidirectional_no_bias": ("RNN", "3, 4, bias=False, bidirectional=True", (5, 2, 3), (2, 2, 4)),
    "rnn_unbatched_two_layers_bidirectional": ("RNN", "3, 4, num_layers=2, bidirectional=True", (5, 3), (4, 4)),
    "rnn_dropout": ("RNN", "3, 4, 3, dropout=0.5", (5, 2, 3), None),
    "gru": ("GRU", "3, 4", (5, 2, 3), None),
    "gru_bidirectional_batch_first": ("GRU", "3, 4, 2, bidirectional=True, batch_first=True", (2, 5, 3), (4, 2, 4)),
    "gru_unbatched_no_bias": ("GRU", "3, 4, bias=False", (4, 3), (1, 4)),
    "gru_dropout_bidirectional": ("GRU", "3, 4, 2, dropout=0.3, bidirectional=True", (5, 2, 3), None),
    "lstm": ("LSTM", "3, 4", (5, 2, 3), None),
    "lstm_bidirectional_batch_first": ("LSTM", "3, 4, 2, bidirectional=True, batch_first=True", (2, 5, 3),
                                       ((4, 2, 4), (4, 2, 4))),
    "lstm_unbatched_no_bias": ("LSTM", "3, 4, bias=False", (4, 3), ((1, 4), (1, 4))),
    "lstm_projection": ("LSTM", "3, 4, proj_size=2, num_layers=2", (5, 2, 3), ((2, 2, 2), (2, 2, 4))),
    "lstm_projection_bidirectional": ("LSTM", "3, 4, proj_size=2, bidirectional=True, batch_first=True", (2, 5, 3),
                                      None),
    "lstm_dropout": ("LSTM", "3, 4, 2, dropout=0.5", (5, 2, 3), None),
    "lstm_eval_dropout": ("LSTM", "3, 4, 2, dropout=0.5", (5, 2, 3), None, False),
}


def _program(name: str, dtype: str) -> str:
    module, args, x_shape, hx, *train = CASES[name]
    return program(module, args, x_shape, hx, dtype, train=train[0] if train else True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float64_matches_torch_node_for_node(name):
    assert_same(_program(name, "float64"))


def assert_structure(expected, actual, where: str = "grad_fn", saved_values: bool = True, rtol=1e-4, atol=1e-5):
    """``parity.assert_graph`` with float32 tolerance, and oneDNN's workspace (``_saved_result3``) compared by
    dtype and rank only."""
    stack, seen = [(expected, actual, where)], set()
    while stack:
        node_t, node_g, path = stack.pop()
        if node_t is None or node_g is None:
            assert node_t is None and node_g is None, f"{path}: {node_g!r} where torch has {node_t!r}"
            continue
        assert node_g.name() == node_t.name(), f"{path}: {node_g.name()} != {node_t.name()}"
        if id(node_t) in seen:
            continue
        seen.add(id(node_t))
        assert saved_names(node_g) == saved_names(node_t), f"{path} {node_t.name()} saved names"
        for name in saved_names(node_t) if saved_values else ():
            (value_t, error_t), (value_g, error_g) = saved_attribute(node_t, name), saved_attribute(node_g, name)
            if error_t is not None or error_g is not None:
                assert type(error_g) is type(error_t) and str(error_g) == str(error_t), f"{path}.{name}"
            elif name == "_saved_result3" and node_t.name() == "MkldnnRnnLayerBackward0":
                assert value_g.dtype == gv.uint8 and value_g.ndim == value_t.ndim == 1 and not value_g.requires_grad
            elif isinstance(value_t, torch.Tensor):
                assert_values(value_t, value_g, f"{path}.{name}", rtol=rtol, atol=atol)
                assert value_g.requires_grad == value_t.requires_grad, f"{path}.{name}: requires_grad"
                assert (value_g.grad_fn is None) == (value_t.grad_fn is None), f"{path}.{name}: grad_fn"
            else:
                assert value_g == value_t and type(value_g) is type(value_t), f"{path}.{name}: {value_g!r} != {value_t!r}"
        edges_t, edges_g = node_t.next_functions, node_g.next_functions
        assert len(edges_g) == len(edges_t), f"{path} {node_t.name()}: {len(edges_g)} edges != {len(edges_t)}"
        for i, ((next_t, nr_t), (next_g, nr_g)) in enumerate(zip(edges_t, edges_g)):
            assert nr_g == nr_t, f"{path}[{i}] input_nr {nr_g} != {nr_t}"
            stack.append((next_t, next_g, f"{path}[{i}]"))


def _before_backward(code: str) -> str:
    """The program up to (not including) backward, then the printing lines."""
    head, tail = code.split("loss.backward()\n")
    return head + tail


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_matches_torch_with_onednn_lstm_layers(name):
    code = _program(name, "float32")
    (scope_t, out_t), (scope_g, out_g) = run_both(_before_backward(code))
    assert out_g == out_t
    for index, (t_out, g_out) in enumerate(zip(scope_t["flat"], scope_g["flat"])):
        assert_values(t_out, g_out, f"flat[{index}]", rtol=1e-5, atol=1e-6)
        assert_structure(t_out.grad_fn, g_out.grad_fn, f"flat[{index}].grad_fn")
    if CASES[name][0] == "LSTM" and "proj_size" not in CASES[name][1]:
        assert "MkldnnRnnLayerBackward0" in _collect(scope_g["flat"][0].grad_fn)
    (scope_t, _), (scope_g, _) = run_both(code)
    for index, (t_param, g_param) in enumerate(zip(scope_t["params"], scope_g["params"])):
        assert_values(t_param.grad, g_param.grad, f"params[{index}].grad", rtol=1e-4, atol=1e-5)
    assert_values(scope_t["x"].grad, scope_g["x"].grad, "x.grad", rtol=1e-4, atol=1e-5)


def _collect(fn) -> set:
    names, stack, seen = set(), [fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.add(node.name())
        stack.extend(n for n, _ in node.next_functions)
    return names


def test_onednn_layer_saves_what_torch_saves():
    """One MkldnnRnnLayerBackward0 per layer and direction: its seven edges (input, the four weights, h0, c0),
    the flags it keeps, h0 and c0 picked with select (SelectBackward0 when they require grad)."""
    code = program("LSTM", "3, 4, 2, bidirectional=True", (5, 2, 3), ((4, 2, 4), (4, 2, 4)), "float32")
    (scope_t, _), (scope_g, _) = run_both(_before_backward(code))
    for t_out, g_out in zip(scope_t["flat"], scope_g["flat"]):
        assert_structure(t_out.grad_fn, g_out.grad_fn)
    node_t, node_g = scope_t["flat"][0].grad_fn.next_functions[0][0], scope_g["flat"][0].grad_fn.next_functions[0][0]
    assert node_g.name() == node_t.name() == "MkldnnRnnLayerBackward0"
    assert [n.name() if n else None for n, _ in node_g.next_functions] == \
        [n.name() if n else None for n, _ in node_t.next_functions]
    assert node_g._saved_reverse is False and node_g._saved_bidirectional is True and node_g._saved_mode == 2


def test_float64_lstm_takes_the_decomposed_path_and_float32_projection_warns():
    ours = gv.nn.LSTM(3, 4, dtype=gv.float64)(gv.randn(2, 1, 3, dtype=gv.float64))[0]
    assert "MkldnnRnnLayerBackward0" not in _collect(ours.grad_fn) and "UnsafeSplitBackward0" in _collect(ours.grad_fn)
    from gradviz.nn import recurrent

    recurrent._PROJECTION_WARNED[0] = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gv.nn.LSTM(3, 4, proj_size=2)(gv.randn(2, 1, 3))
        gv.nn.LSTM(3, 4, proj_size=2)(gv.randn(2, 1, 3))
    assert [str(w.message) for w in caught] == [
        "LSTM with projections is not supported with oneDNN. Using default implementation."]  # once, as torch


def test_no_graph_without_grad():
    code = """
torch.manual_seed(0)
m = torch.nn.LSTM(3, 4, 2, bidirectional=True)
with torch.no_grad():
    y, (h, c) = m(torch.randn(5, 2, 3))
m.requires_grad_(False)
y2, (h2, c2) = m(torch.randn(5, 2, 3))
"""
    assert_same(code)


@pytest.mark.parametrize("name, dtype", [(name, "float64") for name in (
    "rnn_bidirectional_no_bias", "gru_bidirectional_batch_first", "lstm_projection", "gru_cell_hx", "lstm_cell_hx",
    "rnn_dropout")] + [(name, "float32") for name in (
    "lstm", "lstm_bidirectional_batch_first", "lstm_dropout", "lstm_unbatched_no_bias")])
def test_backward_runs_the_nodes_in_torchs_order(name, dtype):
    code = _before_backward(_program(name, dtype))
    (scope_t, _), (scope_g, _) = run_both(code)
    expected = torch_order(scope_t["loss"])
    observed = [step.name for step in gv.autograd.backward_steps(scope_g["loss"])]
    assert observed == expected


@pytest.mark.parametrize("name", ["rnn_batch_first_h0", "gru_bidirectional_batch_first", "lstm_cell_hx",
                                  "lstm_projection", "gru_cell_unbatched_no_bias"])
def test_torch_backend_matches_torch(name):
    assert_same(_program(name, "float64"), backend="torch")


def test_torch_backend_runs_the_onednn_layer():
    code = _program("lstm_bidirectional_batch_first", "float32")
    (scope_t, _), (scope_g, _) = run_both(_before_backward(code), "torch")
    for t_out, g_out in zip(scope_t["flat"], scope_g["flat"]):
        assert_structure(t_out.grad_fn, g_out.grad_fn)
    (scope_t, _), (scope_g, _) = run_both(code, "torch")
    for index, (t_param, g_param) in enumerate(zip(scope_t["params"], scope_g["params"])):
        assert_values(t_param.grad, g_param.grad, f"params[{index}].grad", rtol=1e-4, atol=1e-5)


def test_parameters_and_printing():
    code = """
torch.manual_seed(3)
m = torch.nn.LSTM(3, 5, 2, bidirectional=True, proj_size=2, batch_first=True, bias=False, dropout=0.25)
r = torch.nn.RNN(2, 3, 1, 'relu', False)
cells = [torch.nn.RNNCell(2, 3, nonlinearity='relu'), torch.nn.GRUCell(2, 3, bias=False), torch.nn.LSTMCell(2, 3)]
print(m, r, *cells, torch.nn.GRU(2, 3, num_layers=3), torch.nn.RNN(2, 3, batch_first=True))
print(m._flat_weights_names)
print(m._all_weights)
print([[tuple(w.shape) for w in ws] for ws in m.all_weights])
print(m.flatten_parameters())
w = [p for p in m.parameters()] + [p for p in r.parameters()] + [p for c in cells for p in c.parameters()]
print(r.nonlinearity, r.mode, m.mode, cells[1].bias_ih, m.dropout, m.proj_size)
print(list(m.state_dict()))
"""
    assert_same(code)


ERRORS = [
    "torch.nn.RNN(3, 4)(torch.randn(5, 2, 6))",
    "torch.nn.RNN(3, 4)(torch.randn(5, 2, 3, 1))",
    "torch.nn.GRU(3, 4)(torch.randn(5, 2, 3, 1))",
    "torch.nn.LSTM(3, 4)(torch.randn(5, 2, 3, 1))",
    "torch.nn.RNN(3, 4)(torch.randn(5, 2, 3), torch.randn(1, 3, 4))",
    "torch.nn.RNN(3, 4)(torch.randn(5, 2, 3), torch.randn(2, 4))",
    "torch.nn.RNN(3, 4)(torch.randn(5, 3), torch.randn(1, 1, 4))",
    "torch.nn.GRU(3, 4, 2)(torch.randn(5, 2, 3), torch.randn(1, 2, 4))",
    "torch.nn.LSTM(3, 4)(torch.randn(5, 2, 3), (torch.randn(1, 2, 4), torch.randn(1, 2, 5)))",
    "torch.nn.LSTM(3, 4)(torch.randn(5, 2, 3), (torch.randn(1, 3, 4), torch.randn(1, 2, 4)))",
    "torch.nn.LSTM(3, 4)(torch.randn(5, 2, 3), (torch.randn(2, 4), torch.randn(1, 2, 4)))",
    "torch.nn.LSTM(3, 4)(torch.randn(5, 3), (torch.randn(1, 1, 4), torch.randn(1, 4)))",
    "torch.nn.LSTM(3, 4, proj_size=2)(torch.randn(5, 2, 3), (torch.randn(1, 2, 4), torch.randn(1, 2, 4)))",
    "torch.nn.RNN(3, 4)(torch.randn(5, 2, 3, dtype=torch.float64))",
    "torch.nn.RNN(3, 4)(torch.randn(0, 2, 3))",
    "torch.nn.RNN(3, 4, nonlinearity='sigmoid')",
    "torch.nn.GRU(3, 4, proj_size=2)",
    "torch.nn.LSTM(3, 4, proj_size=4)",
    "torch.nn.LSTM(3, 4, proj_size=-1)",
    "torch.nn.RNN(3, 0)",
    "torch.nn.RNN(0, 4)",
    "torch.nn.RNN(3, 4, num_layers=0)",
    "torch.nn.RNN(3, 4, dropout=1.5)",
    "torch.nn.RNN(3, 4, dropout=True)",
    "torch.nn.RNN(3, 4, bias=1)",
    "torch.nn.RNN(3, 4, batch_first=None)",
    "torch.nn.RNN(3.0, 4)",
    "torch.nn.RNN(3, 4.0)",
    "torch.nn.RNNCell(3, 4)(torch.randn(2, 5))",
    "torch.nn.RNNCell(3, 4)(torch.randn(2, 2, 3))",
    "torch.nn.RNNCell(3, 4)(torch.randn(2, 3), torch.randn(2, 2, 4))",
    "torch.nn.RNNCell(3, 4)(torch.randn(2, 3), torch.randn(3, 4))",
    "torch.nn.RNNCell(3, 4)(torch.randn(2, 3), torch.randn(2, 5))",
    "torch.nn.RNNCell(3, 4, nonlinearity='gelu')(torch.randn(2, 3))",
    "torch.nn.GRUCell(3, 4)(torch.randn(2, 2, 3))",
    "torch.nn.GRUCell(3, 4)(torch.randn(2, 3), torch.randn(2, 5))",
    "torch.nn.LSTMCell(3, 4)(torch.randn(2, 2, 3))",
    "torch.nn.LSTMCell(3, 4)(torch.randn(2, 3), (torch.randn(2, 4), torch.randn(2, 2, 4)))",
    "torch.nn.LSTMCell(3, 4)(torch.randn(2, 3), (torch.randn(2, 4), torch.randn(3, 4)))",
    "torch.nn.LSTMCell(3, 4)(torch.randn(2, 3), (torch.randn(2, 4), torch.randn(2, 5)))",
    "torch.nn.LSTMCell(3, 4)(torch.randn(2, 7))",
]


@pytest.mark.parametrize("code", ERRORS)
def test_errors_match_torch(code):
    assert_same_error(code)


def test_dropout_with_one_layer_warns_as_torch():
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        gv.nn.GRU(3, 4, dropout=0.5)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.nn.GRU(3, 4, dropout=0.5)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(module=st.sampled_from(["RNN", "GRU", "LSTM"]), hidden=st.integers(1, 4), inputs=st.integers(1, 3),
       layers=st.integers(1, 2), bidirectional=st.booleans(), batch_first=st.booleans(), steps=st.integers(1, 4),
       batch=st.integers(0, 3), bias=st.booleans(), with_h0=st.booleans())
def test_hypothesis_layers_match_torch(module, hidden, inputs, layers, bidirectional, batch_first, steps, batch, bias,
                                       with_h0):
    """batch 0 means unbatched input."""
    shape = (steps, inputs) if batch == 0 else ((batch, steps, inputs) if batch_first else (steps, batch, inputs))
    states = (layers * (2 if bidirectional else 1),) + ((batch,) if batch else ()) + (hidden,)
    hx = None if not with_h0 else ((states, states) if module == "LSTM" else states)
    args = f"{inputs}, {hidden}, {layers}, bias={bias}, batch_first={batch_first}, bidirectional={bidirectional}"
    assert_same(program(module, args, shape, hx, "float64"))


def test_a_sequence_model_trains_the_same():
    """An LSTM over a short sequence, its last hidden state read by a Linear, SGD on an MSE loss: the same losses
    step by step (float32: torch's oneDNN layer and gradviz's numpy BPTT agree to float32 rounding)."""
    code = """
torch.manual_seed(0)
lstm = torch.nn.LSTM(2, 5, num_layers=2, batch_first=True)
gru = torch.nn.GRU(5, 3, bidirectional=True, batch_first=True)
head = torch.nn.Linear(6, 1)
params = list(lstm.parameters()) + list(gru.parameters()) + list(head.parameters())
opt = torch.optim.SGD(params, lr=0.1)
x = torch.randn(4, 6, 2)
target = x.sum(dim=(1, 2)).unsqueeze(1) * 0.1
losses = []
for step in range(5):
    opt.zero_grad()
    h, _ = lstm(x)
    out, last = gru(h)
    loss = F.mse_loss(head(torch.cat([last[0], last[1]], 1)), target)
    loss.backward()
    opt.step()
    losses.append(loss.item())
final = [p.detach() for p in params]
"""
    (scope_t, _), (scope_g, _) = run_both(code)
    np.testing.assert_allclose(scope_g["losses"], scope_t["losses"], rtol=2e-5)
    assert scope_g["losses"][-1] < scope_g["losses"][0]
    for t_param, g_param in zip(scope_t["final"], scope_g["final"]):
        assert_values(t_param, g_param, "parameter after training", rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("module, args", [("LSTM", "3, 4, 2, bidirectional=True"), ("GRU", "3, 4"),
                                          ("LSTMCell", "3, 4")])
def test_learner_formulas_reproduce_what_torch_sent(module, args):
    """Every node of torch's own recurrent graph (oneDNN's fused layer included, in float32) has a learner formula
    that evaluates to the gradient torch's engine sent."""
    from gradviz.autograd.engine import backward_steps
    from gradviz.snapshot.formula_table import TABLE
    from gradviz.snapshot.formulas import gradient_sent
    from gradviz.snapshot.model import to_numpy

    torch.manual_seed(0)
    layer = getattr(torch.nn, module)(*(int(a) for a in args.split(", ")[:2]),
                                      **({"num_layers": 2, "bidirectional": True} if "bidirectional" in args else {}))
    x = torch.randn(*((4, 2, 3) if "Cell" not in module else (2, 3)), requires_grad=True)
    out = layer(x)
    flat = [t for o in (out if isinstance(out, tuple) else (out,)) for t in (o if isinstance(o, tuple) else (o,))]
    loss = sum((t * torch.arange(1.0, t.numel() + 1.0).reshape(t.shape)).sum() for t in flat)
    checked = set()
    for step in backward_steps(loss, retain_graph=True, dry_run=True):
        if step.is_accumulate:
            continue
        assert step.name in TABLE, step.name
        arriving = [None if g is None else to_numpy(g) for g in step.grad_outputs]
        shapes = tuple(None if g is None else tuple(g.shape) for g in step.grad_inputs)
        for slot, sent in enumerate(step.grad_inputs):
            if sent is not None:
                np.testing.assert_allclose(gradient_sent(step.node, slot, arriving, shapes), to_numpy(sent),
                                           rtol=1e-4, atol=1e-5, err_msg=f"{step.name}, input {slot}")
        checked.add(step.name)
    assert ("MkldnnRnnLayerBackward0" in checked) == (module == "LSTM")
    assert "UnsafeSplitBackward0" in checked or module == "LSTM"


def test_unsafe_chunk_and_unsafe_split_match_torch():
    code = """
x = torch.arange(14.0, dtype=torch.float64).reshape(2, 7).requires_grad_()
a, b, c = x.unsafe_chunk(3, 1)
d, e = torch.unsafe_split(x, 5, -1)
f, = torch.unsafe_chunk(x * 2, 1, 0)
y = a.sum() + (b * c).sum() + (e ** 2).sum() + f.sum()
y.backward()
print(a, b, c, d, e)
"""
    assert_same(code)
    assert_same_error("torch.unsafe_chunk(torch.ones(3), 0)")
    assert_same_error("torch.unsafe_split(torch.ones(3), 0)")
