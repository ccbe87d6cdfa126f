"""Dynamic quantized recurrent layers: ``LSTM``, ``GRU`` and the cells, as
``torch.ao.nn.quantized.dynamic``. Each gate projection is ``quantized::linear_dynamic`` (its
input quantized per call with ``reduce_range``, int8 weights) and the gate maths is float32.
As in torch's ``quantized_lstm``/``quantized_gru``, a layer's input projection is one call over
the whole sequence (quantized with the sequence's range) and the hidden projection one call
per step; the loop runs over time steps on whole-batch arrays.
"""
import numpy as np

import ember
from ember.nn.modules.module import Module
from ember.nn.modules.container import ModuleList
from ember.ops import quantized as _ops
from ember._tensor import _wrap
from ember.ao.nn.quantized.modules.utils import _quantize_weight

__all__ = ["PackedParameter", "RNNBase", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell",
           "GRUCell"]


class CellParams:
    """One layer-direction's packed ``W_ih`` and ``W_hh`` (biases inside them), torch's
    ``CellParamsBase`` of ``make_quantized_cell_params_dynamic``/``_fp16``."""

    def __init__(self, packed_ih, packed_hh, dtype, reduce_range=True):
        self.packed_ih, self.packed_hh = packed_ih, packed_hh
        self.dtype, self.reduce_range = dtype, reduce_range

    def linear_ih(self, x):
        return _project(self.packed_ih, x, self.dtype, self.reduce_range)

    def linear_hh(self, h):
        return _project(self.packed_hh, h, self.dtype, self.reduce_range)


def _project(packed, x, dtype, reduce_range):
    if dtype is ember.qint8:
        return _ops.linear_dynamic(x, packed, reduce_range)._data
    return _ops.linear_dynamic_fp16(x, packed)._data


def _pack(weight, bias, dtype, observer_factory):
    if dtype is ember.qint8:
        observer = observer_factory()
        observer(weight)
        return _ops.linear_prepack(_quantize_weight(weight.float(), observer), bias)
    return _ops.linear_prepack_fp16(weight.float(), bias)


def _sigmoid(x):
    return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


class PackedParameter(Module):
    """Holds one ``CellParams`` as ``param``. In a state_dict ``param`` is ``(kind, (w_ih,
    b_ih), (w_hh, b_hh))`` of plain (quantized) tensors, which ``ember.load`` reads with
    ``weights_only``; torch's is a TorchScript object, which Ember cannot read or write."""

    def __init__(self, param):
        super().__init__()
        self.param = param

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        cell = self.param
        kind = "quantized_dynamic" if cell.dtype is ember.qint8 else "quantized_fp16"
        destination[prefix + "param"] = (kind, cell.packed_ih.unpack(), cell.packed_hh.unpack())

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        if prefix + "param" in state_dict:
            kind, (w_ih, b_ih), (w_hh, b_hh) = state_dict.pop(prefix + "param")
            dtype = ember.qint8 if kind == "quantized_dynamic" else ember.float16
            prepack = _ops.linear_prepack if dtype is ember.qint8 else _ops.linear_prepack_fp16
            self.param = CellParams(prepack(w_ih, b_ih), prepack(w_hh, b_hh), dtype)
        elif strict:
            missing_keys.append(prefix + "param")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)


def _weight_observer_factory(mod):
    if mod.qconfig is not None and mod.qconfig.weight is not None:
        return mod.qconfig.weight
    from ember.ao.quantization.qconfig import default_dynamic_qconfig
    return default_dynamic_qconfig.weight


class RNNBase(Module):
    """The dynamic quantized LSTM/GRU base: ``_all_weight_values`` holds one
    ``PackedParameter`` per layer and direction."""
    _FLOAT_MODULE = None
    _version = 2

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, dtype=ember.qint8):
        super().__init__()
        if mode not in ("LSTM", "GRU"):
            raise NotImplementedError("Only LSTM/GRU is supported for QuantizedRNN for now")
        if dtype not in (ember.qint8, ember.float16):
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.dtype = float(dropout), bidirectional, dtype
        self.version = 2
        self.training = False
        gates = {"LSTM": 4, "GRU": 3}[mode]
        directions = 2 if bidirectional else 1
        # zero weights until from_float (or set_weight_bias) fills them
        values = []
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size * directions
            for _ in range(directions):
                w_ih = ember.zeros(gates * hidden_size, in_size)
                w_hh = ember.zeros(gates * hidden_size, hidden_size)
                b = ember.zeros(gates * hidden_size) if bias else None
                factory = ember.ao.quantization.observer.MinMaxObserver.with_args(
                    dtype=ember.qint8)
                values.append(PackedParameter(CellParams(
                    _pack(w_ih, b, dtype, factory), _pack(w_hh, b, dtype, factory), dtype)))
        self._all_weight_values = ModuleList(values)

    def _get_name(self):
        return "DynamicQuantizedRNN"

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
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

    def _weight_bias(self):
        weights, biases = {}, {}
        directions = 2 if self.bidirectional else 1
        count = 0
        for layer in range(self.num_layers):
            for direction in range(directions):
                suffix = "_reverse" if direction == 1 else ""
                cell = self._all_weight_values[count].param
                for name, packed in (("ih", cell.packed_ih), ("hh", cell.packed_hh)):
                    w, b = packed.unpack()
                    weights[f"weight_{name}_l{layer}{suffix}"] = w
                    biases[f"bias_{name}_l{layer}{suffix}"] = b
                count += 1
        return {"weight": weights, "bias": biases}

    def get_weight(self):
        return self._weight_bias()["weight"]

    def get_bias(self):
        return self._weight_bias()["bias"]

    def _run(self, input, hx):
        from ember.nn.utils.rnn import PackedSequence
        if isinstance(input, PackedSequence):
            raise NotImplementedError("dynamic quantized LSTM/GRU on a PackedSequence is not "
                                      "implemented in Ember: pad the sequence first")
        lstm = self.mode == "LSTM"
        directions = 2 if self.bidirectional else 1
        x = input._data.astype(np.float32)
        unbatched = x.ndim == 2
        if unbatched:
            x = x[:, None] if not self.batch_first else x[None]
        if x.ndim != 3:
            raise ValueError(f"{self.mode}: Expected input to be 2D or 3D, got {x.ndim}D instead")
        if self.batch_first:
            x = x.transpose(1, 0, 2)
        steps, batch = x.shape[:2]
        if x.shape[2] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[2]}")
        shape = (self.num_layers * directions, batch, self.hidden_size)
        if hx is None:
            h0 = np.zeros(shape, np.float32)
            c0 = np.zeros(shape, np.float32)
        else:
            hs = hx if lstm else (hx,)
            arrays = [t._data.astype(np.float32) for t in hs]
            if unbatched:
                arrays = [a[:, None] for a in arrays]
            h0 = arrays[0]
            c0 = arrays[1] if lstm else None
        like = input
        hn, cn = [], []
        layer_input = x
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                k = layer * directions + direction
                cell = self._all_weight_values[k].param
                h, c = h0[k], (c0[k] if lstm else None)
                order = range(steps - 1, -1, -1) if direction == 1 else range(steps)
                out = np.empty((steps, batch, self.hidden_size), np.float32)
                # the input projection of the whole sequence at once (quantized with the
                # sequence's range), as torch's quantized_lstm/gru compute it
                flat = np.ascontiguousarray(layer_input.reshape(steps * batch, -1))
                projected = cell.linear_ih(_wrap(flat, ember.float32, like)).reshape(
                    steps, batch, -1)
                for t in order:
                    ht = _wrap(h, ember.float32, like)
                    if lstm:
                        h, c = _lstm_step(cell, projected[t], ht, c)
                    else:
                        h = _gru_step(cell, projected[t], ht, h)
                    out[t] = h
                outputs.append(out)
                hn.append(h)
                if lstm:
                    cn.append(c)
            layer_input = np.concatenate(outputs, axis=2) if directions == 2 else outputs[0]
        output = layer_input
        if self.batch_first:
            output = output.transpose(1, 0, 2)
        hn, cn = np.stack(hn), (np.stack(cn) if lstm else None)
        if unbatched:
            output = output[0] if self.batch_first else output[:, 0]
            hn = hn[:, 0]
            cn = cn[:, 0] if lstm else None
        wrap = lambda a: _wrap(np.ascontiguousarray(a), ember.float32, like)  # noqa: E731
        hidden = (wrap(hn), wrap(cn)) if lstm else wrap(hn)
        return wrap(output), hidden

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The dynamic quantized LSTM/GRU of a float ``nn.LSTM``/``nn.GRU`` with a qconfig:
        each weight quantized by ``qconfig.weight()`` (int8) or kept in float16."""
        if type(mod) not in (ember.nn.LSTM, ember.nn.GRU):
            raise AssertionError("nn.quantized.dynamic.RNNBase.from_float only works for nn.LSTM "
                                 "and nn.GRU")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        factory = _weight_observer_factory(mod)
        dtype = factory().dtype
        if dtype not in (ember.qint8, ember.float16):
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")
        target = {"LSTM": LSTM, "GRU": GRU}[mod.mode]
        q = target(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first,
                   mod.dropout, mod.bidirectional, dtype)
        if not mod.bias:
            raise AssertionError("mod.bias must be True")
        values = []
        for layer in range(mod.num_layers):
            for direction in range(2 if mod.bidirectional else 1):
                suffix = "_reverse" if direction == 1 else ""
                packed = [_pack(getattr(mod, f"weight_{n}_l{layer}{suffix}"),
                                getattr(mod, f"bias_{n}_l{layer}{suffix}"), dtype, factory)
                          for n in ("ih", "hh")]
                values.append(PackedParameter(CellParams(*packed, dtype)))
        q._all_weight_values = ModuleList(values)
        return q


def _lstm_step(cell, gi, ht, c):
    """One LSTM step from the input's projection ``gi`` and the hidden state ``ht``."""
    gates = gi + cell.linear_hh(ht)
    i, f, g, o = np.split(gates, 4, axis=1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c), c


def _gru_step(cell, gi, ht, h):
    """One GRU step from the input's projection ``gi`` and the hidden state ``ht``."""
    gh = cell.linear_hh(ht)
    ir, iz, in_ = np.split(gi, 3, axis=1)
    hr, hz, hn = np.split(gh, 3, axis=1)
    r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
    n = np.tanh(in_ + r * hn)
    return (np.float32(1) - z) * n + z * h


class LSTM(RNNBase):
    """A dynamic quantized LSTM (float input and output, int8 or float16 weights)."""
    _FLOAT_MODULE = ember.nn.LSTM

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def _get_name(self):
        return "DynamicQuantizedLSTM"

    def forward(self, input, hx=None):
        return self._run(input, hx)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return super().from_float(mod, use_precomputed_fake_quant)


class GRU(RNNBase):
    """A dynamic quantized GRU (float input and output, int8 or float16 weights)."""
    _FLOAT_MODULE = ember.nn.GRU

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)

    def _get_name(self):
        return "DynamicQuantizedGRU"

    def forward(self, input, hx=None):
        return self._run(input, hx)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return super().from_float(mod, use_precomputed_fake_quant)


class RNNCellBase(Module):
    """A dynamic quantized recurrent cell: ``_packed_weight_ih``/``_packed_weight_hh``."""
    _GATES = {"LSTMCell": 4, "GRUCell": 3, "RNNCell": 1}

    def __init__(self, input_size, hidden_size, bias=True, num_chunks=4, dtype=ember.qint8,
                 nonlinearity="tanh"):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_dtype = dtype
        self.nonlinearity = nonlinearity
        factory = ember.ao.quantization.observer.MinMaxObserver.with_args(dtype=ember.qint8)
        b = ember.zeros(num_chunks * hidden_size) if bias else None
        self._packed_weight_ih = _pack(ember.zeros(num_chunks * hidden_size, input_size), b,
                                       dtype, factory)
        self._packed_weight_hh = _pack(ember.zeros(num_chunks * hidden_size, hidden_size), b,
                                       dtype, factory)

    def _cell(self):
        return CellParams(self._packed_weight_ih, self._packed_weight_hh, self.weight_dtype)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "_packed_weight_ih"] = self._packed_weight_ih.unpack()
        destination[prefix + "_packed_weight_hh"] = self._packed_weight_hh.unpack()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        prepack = (_ops.linear_prepack if self.weight_dtype is ember.qint8
                   else _ops.linear_prepack_fp16)
        for name in ("_packed_weight_ih", "_packed_weight_hh"):
            if prefix + name in state_dict:
                setattr(self, name, prepack(*state_dict.pop(prefix + name)))
            elif strict:
                missing_keys.append(prefix + name)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _weight_bias(self):
        w_ih, b_ih = self._packed_weight_ih.unpack()
        w_hh, b_hh = self._packed_weight_hh.unpack()
        return {"weight": {"weight_ih": w_ih, "weight_hh": w_hh},
                "bias": {"bias_ih": b_ih, "bias_hh": b_hh}}

    def get_weight(self):
        return self._weight_bias()["weight"]

    def get_bias(self):
        return self._weight_bias()["bias"]

    def _inputs(self, input, hx):
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.ndim}D instead")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            zeros = ember.zeros(x.shape[0], self.hidden_size)
            hx = (zeros, zeros) if isinstance(self, LSTMCell) else zeros
        elif not batched:
            hx = tuple(h.unsqueeze(0) for h in hx) if isinstance(hx, tuple) else hx.unsqueeze(0)
        return x, hx, batched

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        kinds = {ember.nn.LSTMCell: LSTMCell, ember.nn.GRUCell: GRUCell,
                 ember.nn.RNNCell: RNNCell}
        if type(mod) not in kinds:
            raise AssertionError("nn.quantized.dynamic.RNNCellBase.from_float only works for "
                                 "nn.LSTMCell, nn.GRUCell, and nn.RNNCell")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        factory = _weight_observer_factory(mod)
        dtype = factory().dtype
        if dtype not in (ember.qint8, ember.float16):
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")
        target = kinds[type(mod)]
        if target is RNNCell:
            q = RNNCell(mod.input_size, mod.hidden_size, bias=mod.bias,
                        nonlinearity=mod.nonlinearity, dtype=dtype)
        else:
            q = target(mod.input_size, mod.hidden_size, bias=mod.bias, dtype=dtype)
        q._packed_weight_ih = _pack(mod.weight_ih, mod.bias_ih, dtype, factory)
        q._packed_weight_hh = _pack(mod.weight_hh, mod.bias_hh, dtype, factory)
        return q


class RNNCell(RNNCellBase):
    """A dynamic quantized Elman cell (``tanh`` or ``relu``)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh",
                 dtype=ember.qint8):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, dtype=dtype,
                         nonlinearity=nonlinearity)

    def _get_name(self):
        return "DynamicQuantizedRNNCell"

    def forward(self, input, hx=None):
        x, h, batched = self._inputs(input, hx)
        cell = self._cell()
        pre = cell.linear_ih(x) + cell.linear_hh(h)
        out = np.tanh(pre) if self.nonlinearity == "tanh" else np.maximum(pre, 0)
        out = _wrap(out.astype(np.float32), ember.float32, input)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """A dynamic quantized LSTM cell: returns ``(h', c')``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, num_chunks=4, **kwargs)

    def _get_name(self):
        return "DynamicQuantizedLSTMCell"

    def forward(self, input, hx=None):
        x, (h, c), batched = self._inputs(input, hx)
        cell = self._cell()
        h2, c2 = _lstm_step(cell, cell.linear_ih(x), h, c._data.astype(np.float32))
        out = tuple(_wrap(a.astype(np.float32), ember.float32, input) for a in (h2, c2))
        return out if batched else tuple(t.squeeze(0) for t in out)


class GRUCell(RNNCellBase):
    """A dynamic quantized GRU cell."""

    def __init__(self, input_size, hidden_size, bias=True, dtype=ember.qint8):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, dtype=dtype)

    def _get_name(self):
        return "DynamicQuantizedGRUCell"

    def forward(self, input, hx=None):
        x, h, batched = self._inputs(input, hx)
        cell = self._cell()
        out = _gru_step(cell, cell.linear_ih(x), h, h._data.astype(np.float32))
        out = _wrap(out.astype(np.float32), ember.float32, input)
        return out if batched else out.squeeze(0)
