"""Recurrent layers: ``RNNCell``, ``GRUCell``, ``LSTMCell`` and ``RNN``, ``GRU``, ``LSTM``, recorded as PyTorch's CPU code
records them, so the graph a learner unrolls is torch's node for node.

The functions below follow aten/src/ATen/native/RNN.cpp (``rnn_tanh``, ``gru``, ``lstm`` and their cells) in the
same order of operations: a layer first projects every time step's input at once (``linear_ih`` on the whole
sequence, then ``unbind(0)``: ViewBackward0 over AddmmBackward0, UnbindBackward0), then each step adds the hidden
projection in place (``linear_hh(h).add_(x_t)``: AddBackward0 over AddmmBackward0), cuts the gates with
``unsafe_chunk`` (UnsafeSplitBackward0) and applies the gate functions in place; the step outputs are stacked
(StackBackward0), the directions of a bidirectional layer concatenated (CatBackward0), the final hidden states
stacked. ``nn.LSTM`` on float32 CPU data without a projection takes oneDNN's path instead, one
``MkldnnRnnLayerBackward0`` per layer and direction (``gradviz/ops/recurrent.py``), as torch does.
"""
from __future__ import annotations

import math
import numbers
import warnings

from gradviz import _dtype
from gradviz.nn import functional as F, init
from gradviz.nn.modules import Module, Parameter
from gradviz.ops.combine import cat, stack
from gradviz.ops.linalg import addmm, matmul
from gradviz.ops.recurrent import MkldnnRnnLayerBackward0, unsafe_chunk
from gradviz.ops.shape import reshape, t, view
from gradviz.ops.unary import relu, tanh
from gradviz.tensor import empty, zeros

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


# -- torch's CellParams and at::linear ---------------------------------------------------------------------------
def _linear(input, weight, bias):
    """``at::linear``: ``addmm`` for a 2-D input with a bias, ``addmm`` between two reshapes for a contiguous 3-D
    one, else ``matmul(input, weight.t())`` and the bias added in place."""
    if bias is not None:
        if input.ndim == 2:
            return addmm(bias, input, t(weight))
        if input.is_contiguous() and input.ndim == 3:
            rows = 1
            for size in input.shape[:-1]:
                rows *= size
            result = addmm(bias, reshape(input, (rows, input.shape[-1])), t(weight))
            return view(result, tuple(input.shape[:-1]) + (result.shape[1],))
    output = matmul(input, t(weight))
    if bias is not None:
        output.add_(bias)
    return output


class _CellParams:
    """One layer and direction's weights: ``w_ih, w_hh``, the biases (None without), ``w_hr`` (LSTM projection)."""

    def __init__(self, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None):
        self.w_ih, self.w_hh, self.b_ih, self.b_hh, self.w_hr = w_ih, w_hh, b_ih, b_hh, w_hr

    def linear_ih(self, input):
        return _linear(input, self.w_ih, self.b_ih)

    def linear_hh(self, hidden):
        return _linear(hidden, self.w_hh, self.b_hh)

    def matmul_hr(self, hidden):
        return matmul(hidden, t(self.w_hr)) if self.w_hr is not None else hidden


def _gather_params(params, has_biases: bool, has_projections: bool = False) -> list:
    step = (4 if has_biases else 2) + (1 if has_projections else 0)
    if len(params) % step:
        raise RuntimeError("got an incorrect number of RNN parameters")
    result = []
    for i in range(0, len(params), step):
        group = params[i:i + step]
        w_hr = group[-1] if has_projections else None
        result.append(_CellParams(group[0], group[1], *(group[2:4] if has_biases else (None, None)), w_hr=w_hr))
    return result


# -- the cells: one time step -----------------------------------------------------------------------------------
def _simple_cell(nonlinearity):
    def cell(input, hidden, params, pre_computed: bool):
        gates = params.linear_hh(hidden).add_(input if pre_computed else params.linear_ih(input))
        return nonlinearity(gates)
    return cell


_tanh_cell, _relu_cell = _simple_cell(tanh), _simple_cell(relu)


def _gru_cell(input, hidden, params, pre_computed: bool):
    input_gates = unsafe_chunk(input if pre_computed else params.linear_ih(input), 3, 1)
    hidden_gates = unsafe_chunk(params.linear_hh(hidden), 3, 1)
    reset_gate = hidden_gates[0].add_(input_gates[0]).sigmoid_()
    input_gate = hidden_gates[1].add_(input_gates[1]).sigmoid_()
    new_gate = input_gates[2].add(hidden_gates[2].mul_(reset_gate)).tanh_()
    return (hidden - new_gate).mul_(input_gate).add_(new_gate)


def _lstm_cell(input, hidden, params, pre_computed: bool):
    hx, cx = hidden
    gates = params.linear_hh(hx).add_(input if pre_computed else params.linear_ih(input))
    chunked = unsafe_chunk(gates, 4, 1)
    in_gate = chunked[0].sigmoid_()
    forget_gate = chunked[1].sigmoid_()
    cell_gate = chunked[2].tanh_()
    out_gate = chunked[3].sigmoid_()
    cy = (forget_gate * cx).add_(in_gate * cell_gate)
    hy = out_gate * cy.tanh()
    return params.matmul_hr(hy), cy


def _as_output(hidden):
    return hidden[0] if isinstance(hidden, tuple) else hidden


# -- layers over a sequence -------------------------------------------------------------------------------------
def _run_steps(step_inputs, hidden, params, cell) -> tuple:
    outputs = []
    for input in step_inputs:
        hidden = cell(input, hidden, params, True)
        outputs.append(_as_output(hidden))
    if not outputs:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    return outputs, hidden


def _full_layer(cell):
    def layer(input, hidden, params):
        outputs, hidden = _run_steps(params.linear_ih(input).unbind(0), hidden, params, cell)
        return stack(outputs, 0), hidden
    return layer


def _bidirectional_layer(cell):
    def layer(input, hiddens, params):
        forward_outputs, forward_hidden = _run_steps(params[0].linear_ih(input).unbind(0), hiddens[0], params[0], cell)
        forward_output = stack(forward_outputs, 0)
        steps = params[1].linear_ih(input).unbind(0)
        reverse_outputs, reverse_hidden = _run_steps(steps[::-1], hiddens[1], params[1], cell)
        reverse_output = stack(reverse_outputs[::-1], 0)
        return cat([forward_output, reverse_output], forward_output.ndim - 1), (forward_hidden, reverse_hidden)
    return layer


def _rnn_impl(cell, input, params, hiddens, num_layers: int, dropout_p: float, train: bool, bidirectional: bool):
    """``apply_layer_stack``: each layer's output is the next one's input, with dropout between layers."""
    if bidirectional:
        layer = _bidirectional_layer(cell)
        hiddens = [tuple(hiddens[i:i + 2]) for i in range(0, len(hiddens), 2)]
        params = [tuple(params[i:i + 2]) for i in range(0, len(params), 2)]
    else:
        layer = _full_layer(cell)
    layer_input, finals = input, []
    for index in range(num_layers):
        layer_input, final = layer(layer_input, hiddens[index], params[index])
        finals.extend(final if bidirectional else (final,))
        if dropout_p != 0 and train and index < num_layers - 1:
            layer_input = F.dropout(layer_input, dropout_p, True)
    return layer_input, finals


def _one_hidden_rnn(cell, input, hx, weights, has_biases, num_layers, dropout_p, train, bidirectional, batch_first):
    """``at::rnn_tanh``, ``at::rnn_relu``, ``at::gru``: the output and the stacked final hidden states."""
    input = input.transpose(0, 1) if batch_first else input
    params = _gather_params(weights, has_biases)
    output, finals = _rnn_impl(cell, input, params, hx.unbind(0), num_layers, dropout_p, train, bidirectional)
    hidden = stack(finals, 0)
    if batch_first:
        output.transpose_(0, 1)
    return output, hidden


_PROJECTION_WARNED = [False]


def _uses_onednn(input, weights, hx) -> bool:
    """torch's ``use_mkldnn``: float32 data on the CPU (bfloat16 and float16 are not modelled), not empty."""
    return (input.dtype is _dtype.float32 and input.numel() != 0 and input.device.type == "cpu"
            and all(t.device.type == "cpu" for t in (*weights, *hx)))


def _lstm(input, hx, weights, has_biases, num_layers, dropout_p, train, bidirectional, batch_first):
    """``at::lstm``: oneDNN's fused layers where torch takes them, else the decomposed cells."""
    has_projections = hx[0].shape[2] != hx[1].shape[2]
    if _uses_onednn(input, weights, hx):
        if not has_projections:
            return _lstm_onednn(input, hx, weights, has_biases, num_layers, dropout_p, train, bidirectional,
                                batch_first)
        if not _PROJECTION_WARNED[0]:  # TORCH_WARN_ONCE
            _PROJECTION_WARNED[0] = True
            warnings.warn("LSTM with projections is not supported with oneDNN. Using default implementation.",
                          UserWarning, stacklevel=4)
    input = input.transpose(0, 1) if batch_first else input
    params = _gather_params(weights, has_biases, has_projections)
    layer_hx, layer_cx = hx[0].unbind(0), hx[1].unbind(0)
    hiddens = list(zip(layer_hx, layer_cx))
    output, finals = _rnn_impl(_lstm_cell, input, params, hiddens, num_layers, dropout_p, train, bidirectional)
    hy, cy = stack([h for h, _ in finals], 0), stack([c for _, c in finals], 0)
    if batch_first:
        output = output.transpose(0, 1)
    return output, hy, cy


def _lstm_onednn(input, hx, weights, has_biases, num_layers, dropout_p, train, bidirectional, batch_first):
    """``mkldnn_rnn``: one MkldnnRnnLayerBackward0 per layer and direction, on time-major contiguous input."""
    if batch_first:
        input = input.transpose(0, 1)
    input = input.contiguous()
    h0, c0 = hx[0].contiguous(), hx[1].contiguous()
    directions = 2 if bidirectional else 1
    step = 4 if has_biases else 2
    layer_input, hy, cy = input, [], []
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            w_ih, w_hh = weights[index * step], weights[index * step + 1]
            if has_biases:
                b_ih, b_hh = weights[index * step + 2], weights[index * step + 3]
            else:  # torch passes zeros shaped like the weights (never read: has_biases is False)
                b_ih, b_hh = zeros(tuple(w_ih.shape), dtype=w_ih.dtype), zeros(tuple(w_hh.shape), dtype=w_hh.dtype)
            output, h, c, _ = MkldnnRnnLayerBackward0.apply(
                layer_input, w_ih, w_hh, b_ih, b_hh, h0[index], c0[index], reverse=direction > 0,
                hidden_size=h0.shape[2], num_layers=num_layers, has_biases=has_biases, bidirectional=bidirectional,
                batch_first=batch_first, train=train)
            outputs.append(output)
            hy.append(h)
            cy.append(c)
        layer_input = outputs[0] if directions == 1 else cat(outputs, -1)
        if dropout_p != 0 and train and layer < num_layers - 1:
            layer_input = F.dropout(layer_input, dropout_p, True)
    hy, cy = stack(hy, 0), stack(cy, 0)
    return (layer_input.transpose(0, 1) if batch_first else layer_input), hy, cy  # transposed after the stacks


# -- the cells' functions (torch's _VF.rnn_tanh_cell, ...) -------------------------------------------------------
def _check_cell_input(input, input_size: int) -> None:
    if input.shape[1] != input_size:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {input_size}")


def _check_cell_hidden(input, hx, hidden_size: int, label: int) -> None:
    if input.shape[0] != hx.shape[0]:
        raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{label} batch size {hx.shape[0]}")
    if hx.shape[1] != hidden_size:
        raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {hx.shape[1]}, expected {hidden_size}")


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell_input(input, w_ih.shape[1])
    _check_cell_hidden(input, hx, w_hh.shape[1], 0)
    return _tanh_cell(input, hx, _CellParams(w_ih, w_hh, b_ih, b_hh), False)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell_input(input, w_ih.shape[1])
    _check_cell_hidden(input, hx, w_hh.shape[1], 0)
    return _relu_cell(input, hx, _CellParams(w_ih, w_hh, b_ih, b_hh), False)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell_input(input, w_ih.shape[1])
    _check_cell_hidden(input, hx, w_hh.shape[1], 0)
    return _gru_cell(input, hx, _CellParams(w_ih, w_hh, b_ih, b_hh), False)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_cell_input(input, w_ih.shape[1])
    _check_cell_hidden(input, hx[0], w_hh.shape[1], 0)
    _check_cell_hidden(input, hx[1], w_hh.shape[1], 1)
    return _lstm_cell(input, (hx[0], hx[1]), _CellParams(w_ih, w_hh, b_ih, b_hh), False)


# -- the modules -------------------------------------------------------------------------------------------------
class RNNBase(Module):
    """What RNN, LSTM and GRU share: the parameters ``weight_ih_l{k}[_reverse]``, ``weight_hh_l{k}...``, the biases,
    LSTM's ``weight_hr_l{k}...``, all drawn uniform in +-1/sqrt(hidden_size) in registration order, as torch does."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gate_sizes = {"LSTM": 4 * hidden_size, "GRU": 3 * hidden_size, "RNN_TANH": hidden_size,
                      "RNN_RELU": hidden_size}
        if mode not in gate_sizes:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = gate_sizes[mode]
        factory = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                real_hidden_size = proj_size if proj_size > 0 else hidden_size
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                params = [Parameter(empty((gate_size, layer_input_size), **factory)),
                          Parameter(empty((gate_size, real_hidden_size), **factory))]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    params += [Parameter(empty((gate_size,), **factory)), Parameter(empty((gate_size,), **factory))]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    params.append(Parameter(empty((proj_size, hidden_size), **factory)))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [name.format(layer, suffix) for name in names]
                for name, param in zip(names, params):
                    setattr(self, name, param)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        return [[getattr(self, weight) for weight in weights] for weights in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op, as in torch on the CPU (it packs the weights for cuDNN)."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def check_input(self, input, batch_sizes) -> None:
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                             f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes) -> tuple:
        mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        return hx

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def _batched(self, input, name: str):
        """The input made 3-D (an unbatched 2-D input gets a batch dimension), and whether it was batched."""
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             + ("tensor instead" if name == "RNN" else "instead"))
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        return input, is_batched, batch_dim

    def _one_hidden_forward(self, input, hx, name: str, cell):
        """RNN's and GRU's forward: one hidden state."""
        num_directions = 2 if self.bidirectional else 1
        input, is_batched, batch_dim = self._batched(input, name)
        if not is_batched:
            if hx is not None:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
        elif hx is not None and hx.dim() != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
        max_batch_size = input.size(0) if self.batch_first else input.size(1)
        if hx is None:
            hx = zeros(self.num_layers * num_directions, max_batch_size, self.hidden_size, dtype=input.dtype,
                       device=input.device)
        self.check_forward_args(input, hx, None)
        output, hidden = _one_hidden_rnn(cell, input, hx, self._flat_weights, self.bias, self.num_layers,
                                         self.dropout, self.training, self.bidirectional, self.batch_first)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return output, hidden


class RNN(RNNBase):
    """An Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu), layer on layer."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        cell = _tanh_cell if self.mode == "RNN_TANH" else _relu_cell
        return self._one_hidden_forward(input, hx, "RNN", cell)


class GRU(RNNBase):
    """Gated recurrent units: reset and update gates decide how much of the old hidden state to keep."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._one_hidden_forward(input, hx, "GRU", _gru_cell)


class LSTM(RNNBase):
    """Long short-term memory: a cell state ``c`` carried along next to ``h``, changed through gates."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes) -> tuple:
        mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def forward(self, input, hx=None):
        num_directions = 2 if self.bidirectional else 1
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        input, is_batched, batch_dim = self._batched(input, "LSTM")
        max_batch_size = input.size(0) if self.batch_first else input.size(1)
        if hx is None:
            h_zeros = zeros(self.num_layers * num_directions, max_batch_size, real_hidden_size, dtype=input.dtype,
                            device=input.device)
            c_zeros = zeros(self.num_layers * num_directions, max_batch_size, self.hidden_size, dtype=input.dtype,
                            device=input.device)
            hx = (h_zeros, c_zeros)
        else:
            if is_batched:
                if hx[0].dim() != 3 or hx[1].dim() != 3:
                    raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                       f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            else:
                if hx[0].dim() != 2 or hx[1].dim() != 2:
                    raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                       f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx, None)
        output, hy, cy = _lstm(input, hx, self._flat_weights, self.bias, self.num_layers, self.dropout,
                               self.training, self.bidirectional, self.batch_first)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hy, cy = hy.squeeze(1), cy.squeeze(1)
        return output, (hy, cy)


class RNNCellBase(Module):
    """What the three cells share: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh`` (None without bias)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **factory))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **factory))
        if bias:
            self.bias_ih = Parameter(empty((num_chunks * hidden_size,), **factory))
            self.bias_hh = Parameter(empty((num_chunks * hidden_size,), **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity")
        if nonlinearity is not None and nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input, name: str, hx):
        """RNNCell's and GRUCell's checks; the input made 2-D, and whether it was batched."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        is_batched = input.dim() == 2
        return (input if is_batched else input.unsqueeze(0)), is_batched

    def _zeros(self, input):
        return zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, is_batched = self._batched(input, "RNNCell", hx)
        hx = self._zeros(input) if hx is None else (hx if is_batched else hx.unsqueeze(0))
        if self.nonlinearity == "tanh":
            ret = rnn_tanh_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        elif self.nonlinearity == "relu":
            ret = rnn_relu_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return ret if is_batched else ret.squeeze(0)


class GRUCell(RNNCellBase):
    """One step of a GRU."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, is_batched = self._batched(input, "GRUCell", hx)
        hx = self._zeros(input) if hx is None else (hx if is_batched else hx.unsqueeze(0))
        ret = gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One step of an LSTM: returns ``(h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for index, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{index}] to be 1D or 2D, got {value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zero = self._zeros(input)
            hx = (zero, zero)
        else:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0)) if not is_batched else hx
        ret = lstm_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else (ret[0].squeeze(0), ret[1].squeeze(0))
