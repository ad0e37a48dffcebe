"""The two nodes only recurrent layers record: ``UnsafeSplitBackward0`` and ``MkldnnRnnLayerBackward0``.

PyTorch's CPU cells (aten/src/ATen/native/RNN.cpp) cut the gate pre-activations into pieces with
``unsafe_chunk``: one node whose outputs are new tensors, not views (so the cell may change them in
place with ``sigmoid_``). Its gradient is a split's: the pieces' gradients put back side by side.

``nn.LSTM`` on float32 CPU tensors (no projection) runs through oneDNN and records one
``MkldnnRnnLayerBackward0`` per layer and direction: the whole sequence of one layer in one node,
with four outputs (the layer's output over time, its last ``h``, its last ``c``, and a byte
workspace). gradviz computes that layer with numpy and its gradient with backpropagation through
time written out below; the workspace holds what that backward pass reads again (the gate
activations and cell states of every step), so its size differs from oneDNN's own.
"""
from __future__ import annotations

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction, node_for_inputs, outputs_of
from gradviz.backends import numpy_backend
from gradviz.autograd.node import SavedTensor
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.tensor import Tensor


class UnsafeSplitBackward0(OpFunction):
    """``unsafe_split``/``unsafe_chunk``: pieces of ``split_size`` along ``dim``, each a new tensor."""

    inputs = ("self",)
    derivatives = {"self": ("split_backward(grads, split_size, dim, self.sym_sizes())", r"[\bar{y}_1, \bar{y}_2, \dots]")}

    @classmethod
    def apply(cls, input, split_size, dim):
        record, node = node_for_inputs(cls, input)
        outputs = outputs_of(node, record, cls.forward(node, input, split_size, dim), input._backend)
        if record:
            node.piece_shapes = tuple(tuple(p.shape) for p in outputs)
        return tuple(outputs)

    def forward(ctx, self, split_size, dim):
        axis = wrap_dim(dim, max(self.ndim, 1))
        ctx.save(dim=saved_dim(dim), self_sym_sizes=tuple(self.shape), split_size=split_size)
        ctx.axis, ctx.dtype, ctx.device = axis, self.dtype, self.device
        length = self.shape[axis]
        starts = range(0, length, split_size) if length else (0,)
        key = (slice(None),) * axis
        backend = self._backend
        return [backend.copy(backend.getitem(self._data, key + (slice(start, start + split_size), Ellipsis)))
                for start in starts]

    def _filled(self, grads) -> list:
        return [self.backend.full(shape, 0, self.dtype, self.device) if g is None else g
                for g, shape in zip(grads, self.piece_shapes)]

    def backward(ctx, *grads):
        return ctx.backend.concatenate(ctx._filled(grads), ctx.axis)

    def backward_graph(ctx, *grads):
        from gradviz.ops.combine import cat

        pieces = [g if isinstance(g, Tensor) else Tensor._make(g, backend=ctx.backend) for g in ctx._filled(grads)]
        return cat(pieces, ctx.axis)


def unsafe_split(input, split_size: int, dim: int = 0) -> tuple:
    """``torch.unsafe_split``: ``split`` whose pieces are not views of the input."""
    axis = wrap_dim(dim, max(input.ndim, 1))
    if split_size <= 0 and input.shape[axis]:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of "
                           f"{input.shape[axis]}")
    return UnsafeSplitBackward0.apply(input, split_size, dim)


def unsafe_chunk(input, chunks: int, dim: int = 0) -> tuple:
    """``torch.unsafe_chunk``: ``chunk`` whose pieces are not views of the input."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    length = input.shape[wrap_dim(dim, max(input.ndim, 1))]
    return unsafe_split(input, max(-(-length // chunks), 1) if length else 0, dim)


# -- one LSTM layer over a whole sequence, as oneDNN records it -------------------------------------------------
def _numpy(backend, data):
    return np.asarray(backend.to_numpy(data))


def _on(backend, array, device):
    """A numpy result on the op's backend (numpy's: the array itself)."""
    return array if backend is numpy_backend else backend.array(array, _dtype.from_any(array.dtype), device)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm_layer_forward(x, w_ih, w_hh, b_ih, b_hh, h, c, reverse: bool):
    """One LSTM layer over time-major ``x`` (T, B, I): the outputs (T, B, H), the last h and c, and per
    step the activated gates (i, f, g, o side by side) and the cell state, which backward reads again."""
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    hidden = w_hh.shape[1]
    dtype = x.dtype
    output = np.empty(x.shape[:2] + (hidden,), dtype)
    gates_seen = np.empty(x.shape[:2] + (4 * hidden,), dtype)
    cells = np.empty(x.shape[:2] + (hidden,), dtype)
    projected = x @ w_ih.T + b_ih  # every step's input part at once, as the decomposed path does
    for t in steps:
        gates = projected[t] + (h @ w_hh.T + b_hh)
        i, f, g, o = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
        i, f, g, o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
        c = f * c + i * g
        h = o * np.tanh(c)
        output[t], cells[t] = h, c
        gates_seen[t] = np.concatenate([i, f, g, o], axis=1)
    return output, h, c, gates_seen.astype(dtype, copy=False), cells


def lstm_layer_backward(x, w_ih, w_hh, h0, c0, output, gates, cells, grad_output, grad_h, grad_c, reverse: bool):
    """Backpropagation through time for ``lstm_layer_forward``: the gradients of x, w_ih, w_hh, the two
    biases (the same sum), h0 and c0. The steps run in the opposite order of the forward pass."""
    steps = list(range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0]))
    hidden = w_hh.shape[1]
    grad_x = np.zeros_like(x)
    grad_w_ih, grad_w_hh = np.zeros_like(w_ih), np.zeros_like(w_hh)
    grad_bias = np.zeros(w_ih.shape[0], x.dtype)
    dh, dc = grad_h.copy(), grad_c.copy()
    for position in range(len(steps) - 1, -1, -1):
        t = steps[position]
        previous = steps[position - 1] if position > 0 else None
        h_prev = h0 if previous is None else output[previous]
        c_prev = c0 if previous is None else cells[previous]
        i, f, g, o = (gates[t][:, k * hidden:(k + 1) * hidden] for k in range(4))
        dh = dh + grad_output[t]
        tanh_c = np.tanh(cells[t])
        dc = dc + dh * o * (1 - tanh_c * tanh_c)
        d_gates = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g),
                                  dh * tanh_c * o * (1 - o)], axis=1)
        grad_w_ih += d_gates.T @ x[t]
        grad_w_hh += d_gates.T @ h_prev
        grad_bias += d_gates.sum(axis=0)
        grad_x[t] = d_gates @ w_ih
        dh = d_gates @ w_hh
        dc = dc * f
    return grad_x, grad_w_ih, grad_w_hh, grad_bias, dh, dc


class MkldnnRnnLayerBackward0(OpFunction):
    """One LSTM layer and direction over the whole sequence (``mkldnn_rnn_layer``), four outputs:
    ``output`` (T, B, H), ``hy``, ``cy`` and the byte workspace (no gradient)."""

    inputs = ("input", "weight0", "weight1", "weight2", "weight3", "hx_", "cx_")
    derivatives = {name: ("mkldnn_rnn_layer_backward(input, weight0, weight1, weight2, weight3, hx_, cx_, result0, "
                          "result1, result2, grad_output, grad_hy, grad_cy, reverse, mode, hidden_size, num_layers, "
                          "has_biases, train, bidirectional, batch_sizes, batch_first, result3)", latex)
                   for name, latex in (("input", r"\sum_t \bar{z}_t W_{ih}"),
                                       ("weight0", r"\sum_t \bar{z}_t^\top x_t"),
                                       ("weight1", r"\sum_t \bar{z}_t^\top h_{t-1}"),
                                       ("weight2", r"\sum_t \bar{z}_t"), ("weight3", r"\sum_t \bar{z}_t"),
                                       ("hx_", r"\bar{z}_1 W_{hh}"), ("cx_", r"\bar{c}_1 \odot f_1"))}
    saved_outputs = ("result0", "result1", "result2", "result3")

    @classmethod
    def apply(cls, input, weight0, weight1, weight2, weight3, hx_, cx_, *, reverse, hidden_size, num_layers,
              has_biases, bidirectional, batch_first, train):
        graph_inputs = (input, weight0, weight1, weight2, weight3, hx_, cx_)
        record, node = node_for_inputs(cls, *graph_inputs)
        backend = input._backend
        arrays = [_numpy(backend, t._data) for t in graph_inputs]
        if not has_biases:  # weight2 and weight3 are zeros shaped like the weights then, never read
            arrays[3] = arrays[4] = np.zeros(arrays[1].shape[0], arrays[1].dtype)
        output, hy, cy, gates, cells = lstm_layer_forward(*arrays, reverse)
        workspace = np.frombuffer(np.concatenate([gates.reshape(-1), cells.reshape(-1)]).tobytes(), np.uint8).copy()
        device = backend.device_of(input._data)
        outputs = outputs_of(node, record, tuple(_on(backend, a, device) for a in (output, hy, cy, workspace)), backend)
        if record:
            node.save(input=input, weight0=weight0, weight1=weight1, weight2=weight2, weight3=weight3, hx_=hx_,
                      cx_=cx_, reverse=reverse, batch_sizes=(), mode=2, hidden_size=hidden_size,
                      num_layers=num_layers, has_biases=has_biases, bidirectional=bidirectional,
                      batch_first=batch_first, train=train)
            outputs[3]._requires_grad = False  # the workspace is not differentiable
            outputs[3]._grad_fn = None
            for index, name in enumerate(cls.saved_outputs):
                node._packed[name] = SavedTensor(outputs[index], is_output=index < 3)
            node.output_meta = tuple((tuple(o.shape), o.dtype, o.device) for o in outputs[:3])
        return tuple(outputs)

    def backward(ctx, grad_output=None, grad_hy=None, grad_cy=None, grad_workspace=None):
        backend = ctx.backend
        *arrays, reverse = ctx.saved("input", "weight0", "weight1", "hx_", "cx_", "result0", "result3", "reverse")
        device = backend.device_of(arrays[0])
        x, w_ih, w_hh, h0, c0, output, workspace = (_numpy(backend, a) for a in arrays)
        grads = [np.zeros(shape, x.dtype) if g is None else _numpy(backend, g)
                 for g, (shape, _, _) in zip((grad_output, grad_hy, grad_cy), ctx.output_meta)]
        steps, batch, hidden = output.shape
        flat = np.frombuffer(np.asarray(workspace).tobytes(), x.dtype)
        gates = flat[:steps * batch * 4 * hidden].reshape(steps, batch, 4 * hidden)
        cells = flat[steps * batch * 4 * hidden:].reshape(steps, batch, hidden)
        grad_x, grad_w_ih, grad_w_hh, grad_bias, grad_h0, grad_c0 = lstm_layer_backward(
            x, w_ih, w_hh, h0, c0, output, gates, cells, *grads, reverse)
        return tuple(_on(backend, a, device) for a in (grad_x, grad_w_ih, grad_w_hh, grad_bias, grad_bias.copy(),
                                                       grad_h0, grad_c0))
