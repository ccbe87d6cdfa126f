"""Recurrent layers as ``torch.nn``: ``RNN``, ``LSTM`` (with ``proj_size``), ``GRU`` and their
single-step cells, with PyTorch's parameter names, shapes and order (``weight_ih_l0``,
``weight_hh_l0_reverse``, ``weight_hr_l1``...), initialisation U(-1/sqrt(hidden), 1/sqrt(hidden))
and errors, so a PyTorch ``state_dict`` loads as is.

Each layer and direction is two ops: one ``linear`` projecting the inputs of all steps at once,
and ``ops.recurrent.rnn_layer``, which runs the recurrence with an analytic backward through
time. Packed sequences go through the same op: it takes the rows of all steps stacked
time-major, which is exactly ``PackedSequence.data``. A cell is one step written out in Ember
ops as ATen writes it, so its graph shows PyTorch's nodes.

Under autocast a layer runs as PyTorch's kernel for it would: cuDNN's RNN on CUDA and oneDNN's
LSTM layer on the CPU as one listed op each, every other layer and cell with its projections in
the region's dtype and its state arithmetic promoting (``RNNBase._autocast_layers``).
"""
import math
import numbers
import warnings

from ... import _dtype as _dt
from ... import ops as _ops
from ...amp import autocast_mode as _autocast
from ...ops._dispatch import dtype_name as _dtype_name
from ...ops.recurrent import rnn_layer
from ..parameter import Parameter
from .. import functional as F
from .. import init
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _apply_permutation(tensor, permutation, dim=1):
    return tensor.index_select(dim, permutation)


def _reset_uniform_by_hidden_size(module):
    """PyTorch's default for recurrent layers and cells: every parameter drawn from
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
    stdv = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for weight in module.parameters():
        init.uniform_(weight, -stdv, stdv)


def _is_packed(x):
    from ..utils.rnn import PackedSequence
    return isinstance(x, PackedSequence)


class RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: parameters, checks, and the layer loop."""
    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"]

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
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

        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: "
                            f"{type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")

        gates = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}.get(mode)
        if gates is None:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = gates * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size

        def new(*shape):
            return Parameter(_ops.empty(shape, device=device, dtype=dtype))

        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                params = [("weight_ih_l{}{}", (gate_size, layer_input_size)),
                          ("weight_hh_l{}{}", (gate_size, real_hidden_size))]
                if bias:
                    params += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    params.append(("weight_hr_l{}{}", (proj_size, hidden_size)))
                names = []
                for pattern, shape in params:
                    name = pattern.format(layer, suffix)
                    setattr(self, name, new(*shape))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """A no-op, as in PyTorch off cuDNN: the weights are used where they are."""

    def reset_parameters(self):
        _reset_uniform_by_hidden_size(self)

    # ---- checks, as PyTorch words them ----------------------------------------------------

    def check_input(self, input, batch_sizes):
        weight_dtype = self._flat_weights[0].dtype
        # (under autocast the layer's casts decide, as PyTorch lets them)
        if input.dtype != weight_dtype and not _autocast._is_any_autocast_enabled():
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({weight_dtype}). Convert input: input.to({weight_dtype}), or "
                             f"convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got "
                               f"{input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def _expected_state_size(self, input, batch_sizes, size):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, size)

    def get_expected_hidden_size(self, input, batch_sizes):
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return self._expected_state_size(input, batch_sizes, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---- the computation ------------------------------------------------------------------

    def _layers(self, x, batch_sizes, h0, c0, packed=False):
        """All layers over ``x`` (``[N, input_size]``, steps stacked time-major); ``h0``/``c0``
        are ``[layers * directions, B, size]``; ``packed``: ``x`` is a PackedSequence's data.
        Returns (output, h_n, c_n)."""
        if _autocast.active and _autocast.enabled_for(x, None):
            return self._autocast_layers(x, batch_sizes, h0, c0, packed)
        return self._layers_with(x, batch_sizes, h0, c0, self._flat_weights)

    def _autocast_layers(self, x, batch_sizes, h0, c0, packed):
        """The layers under autocast as PyTorch runs them. cuDNN's RNN on CUDA is one autocast
        op (``_cudnn_rnn``), and so is oneDNN's LSTM layer on the CPU (``mkldnn_rnn_layer``)
        where oneDNN takes the LSTM: a padded batch (PyTorch's packed overload never asks
        oneDNN), no projection, a float32 or bfloat16 input, oneDNN enabled. PyTorch's bfloat16
        check of the machine is taken as passed, as on AVX-512 CPUs, and its float16 one as
        failed, as on CPUs without AVX512-FP16. Every other layer PyTorch composes from ops,
        its projections being listed ops: ``_autocast_composed_layer``."""
        from ...backends import mkldnn
        weights = self._flat_weights
        if _autocast.enabled_for(x, "_cudnn_rnn"):
            return _autocast.run(_fused_layers, "_cudnn_rnn", self, x, batch_sizes, h0, c0,
                                 weights)
        if (self.mode == "LSTM" and not packed and self.proj_size == 0 and mkldnn.enabled
                and x.dtype in (_dt.float32, _dt.bfloat16)
                and _autocast.enabled_for(x, "mkldnn_rnn_layer")):
            return _autocast.run(_fused_layers, "mkldnn_rnn_layer", self, x, batch_sizes, h0, c0,
                                 weights)
        layer_op = _autocast_composed_layer if _autocast.enabled_for(x, "linear") else rnn_layer
        return self._layers_with(x, batch_sizes, h0, c0, weights, layer_op)

    def _layers_with(self, x, batch_sizes, h0, c0, flat_weights, layer_op=rnn_layer):
        """``_layers`` with the weights given in ``_flat_weights`` order, one layer and
        direction at a time through ``layer_op`` (``rnn_layer``'s signature)."""
        directions = 2 if self.bidirectional else 1
        h0s = h0.unbind(0)
        c0s = c0.unbind(0) if c0 is not None else None
        named = dict(zip(self._flat_weights_names, flat_weights))
        hns, cns = [], []
        layer_input = x
        for layer in range(self.num_layers):
            outs = []
            for direction in range(directions):
                k = layer * directions + direction
                weights = dict(zip(("w_ih", "w_hh", "b_ih", "b_hh", "w_hr"), (None,) * 5))
                for name in self._all_weights[k]:
                    weights[_ROLE[name.split("_l")[0]]] = named[name]
                gates_x = F.linear(layer_input, weights["w_ih"], weights["b_ih"])
                out, hn, cn = layer_op(self.mode, gates_x, h0s[k],
                                       c0s[k] if c0s is not None else None, weights["w_hh"],
                                       weights["b_hh"], weights["w_hr"], batch_sizes,
                                       reverse=direction == 1)
                outs.append(out)
                hns.append(hn)
                cns.append(cn)
            layer_input = outs[0] if directions == 1 else _ops.cat(outs, 1)
            if self.dropout != 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, _ops.stack(hns), (_ops.stack(cns) if c0 is not None else None)

    def _run(self, input, batch_sizes, h0, c0):
        """``input`` is packed data (``batch_sizes`` given) or a padded 3-D batch."""
        if batch_sizes is not None:
            return self._layers(input, batch_sizes, h0, c0, packed=True)
        x = input.transpose(0, 1) if self.batch_first else input
        steps, batch = x.shape[0], x.shape[1]
        if steps == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        out, hn, cn = self._layers(x.reshape(steps * batch, x.shape[2]), [batch] * steps, h0, c0)
        out = out.reshape(steps, batch, out.shape[-1])
        return (out.transpose(0, 1) if self.batch_first else out), hn, cn

    def _zeros(self, input, batch, size):
        directions = 2 if self.bidirectional else 1
        return _ops.zeros(self.num_layers * directions, batch, size, dtype=input.dtype,
                          device=input.device)

    def _forward_single_state(self, input, hx):
        """RNN and GRU, whose state is one tensor."""
        name = "RNN" if self.mode.startswith("RNN") else self.mode
        orig_input = input
        if _is_packed(orig_input):
            input, batch_sizes, sorted_indices, unsorted_indices = orig_input
            batch_sizes = batch_sizes.tolist()
            if hx is None:
                hx = self._zeros(input, batch_sizes[0], self.hidden_size)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = None
            if input.dim() not in (2, 3):
                suffix = " tensor" if name == "RNN" else ""
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D"
                                 f"{suffix} instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
                if hx is not None:
                    if hx.dim() != 2:
                        raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but "
                                           f"got {hx.dim()}-D tensor")
                    hx = hx.unsqueeze(1)
            elif hx is not None and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                   f"{hx.dim()}-D tensor")
            sorted_indices = unsorted_indices = None
            if hx is None:
                batch = input.size(0) if self.batch_first else input.size(1)
                hx = self._zeros(input, batch, self.hidden_size)
        self.check_forward_args(input, hx, batch_sizes)
        output, hidden, _ = self._run(input, batch_sizes, hx, None)
        if batch_sizes is not None:
            from ..utils.rnn import PackedSequence
            packed = PackedSequence(output, orig_input.batch_sizes, sorted_indices,
                                    unsorted_indices)
            return packed, self.permute_hidden(hidden, unsorted_indices)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = hidden.squeeze(1)
        return output, self.permute_hidden(hidden, unsorted_indices)


_ROLE = {"weight_ih": "w_ih", "weight_hh": "w_hh", "bias_ih": "b_ih", "bias_hh": "b_hh",
         "weight_hr": "w_hr"}


def _fused_layers(module, x, batch_sizes, h0, c0, flat_weights):
    """The layers as one autocast op (cuDNN's or oneDNN's): ``autocast_mode.run`` has cast
    every argument, weights included."""
    return module._layers_with(x, batch_sizes, h0, c0, flat_weights)


def _autocast_composed_layer(mode, gates_x, h0, c0, w_hh, b_hh=None, w_hr=None,
                             batch_sizes=None, reverse=False):
    """One layer and direction under autocast where PyTorch composes it from ops (ATen's
    RNN.cpp cells). Its hidden projection is a listed ``linear`` and the LSTM projection a
    listed ``matmul``: they run in the region's dtype (that of ``gates_x``, from the listed
    input projection), and so does what is computed from them alone. A state updated from its
    own previous value (GRU's hidden state, LSTM's cell state and, without a projection, its
    hidden state) promotes with that value, so a float32 ``h0`` (GRU) or ``c0`` (LSTM) keeps the
    recurrence in float32: the fused op then runs in float32 on the weights rounded to the
    region's dtype, as PyTorch's linears see them."""
    lower = gates_x.dtype
    held = {"GRU": h0, "LSTM": c0}.get(mode)
    state = lower if held is None else _dt.promote_types(held.dtype, lower)
    cast = _autocast.cached_cast
    if mode != "GRU":
        h0 = cast(h0, lower)
    w_hh, b_hh, w_hr = cast(w_hh, lower), cast(b_hh, lower), cast(w_hr, lower)
    # (a float64 state meets the lower-precision weights in rnn_layer's dtype check, as
    # PyTorch's linear refuses it)
    if state is _dt.float32:
        gates_x, h0, c0, w_hh, b_hh, w_hr = (None if t is None else t.to(state)
                                             for t in (gates_x, h0, c0, w_hh, b_hh, w_hr))
    out, hn, cn = rnn_layer(mode, gates_x, h0, c0, w_hh, b_hh, w_hr, batch_sizes,
                            reverse=reverse)
    if w_hr is not None and out.dtype is not lower:
        out, hn = out.to(lower), hn.to(lower)
    return out, hn, cn


class RNN(RNNBase):
    """An Elman RNN with tanh or ReLU non-linearity."""

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
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_single_state(input, hx)


class LSTM(RNNBase):
    """A multi-layer long short-term memory RNN, optionally with projections."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        return self._expected_state_size(input, batch_sizes, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):
        orig_input = input
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if _is_packed(orig_input):
            input, batch_sizes, sorted_indices, unsorted_indices = orig_input
            batch_sizes = batch_sizes.tolist()
            if hx is None:
                hx = (self._zeros(input, batch_sizes[0], real_hidden_size),
                      self._zeros(input, batch_sizes[0], self.hidden_size))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(input, hx, batch_sizes)
        else:
            batch_sizes = None
            if input.dim() not in (2, 3):
                raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D "
                                 "instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            batch = input.size(0) if self.batch_first else input.size(1)
            sorted_indices = unsorted_indices = None
            if hx is None:
                hx = (self._zeros(input, batch, real_hidden_size),
                      self._zeros(input, batch, self.hidden_size))
            else:
                if is_batched:
                    if hx[0].dim() != 3 or hx[1].dim() != 3:
                        raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D "
                                           f"but got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                else:
                    if hx[0].dim() != 2 or hx[1].dim() != 2:
                        raise RuntimeError("For unbatched 2-D input, hx and cx should also be "
                                           f"2-D but got ({hx[0].dim()}-D, {hx[1].dim()}-D) "
                                           "tensors")
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
            self.check_forward_args(input, hx, batch_sizes)
        output, hn, cn = self._run(input, batch_sizes, hx[0], hx[1])
        if batch_sizes is not None:
            from ..utils.rnn import PackedSequence
            packed = PackedSequence(output, orig_input.batch_sizes, sorted_indices,
                                    unsorted_indices)
            return packed, self.permute_hidden((hn, cn), unsorted_indices)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hn, cn = hn.squeeze(1), cn.squeeze(1)
        return output, self.permute_hidden((hn, cn), unsorted_indices)


class GRU(RNNBase):
    """A multi-layer gated recurrent unit RNN."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_single_state(input, hx)


# ---- cells ------------------------------------------------------------------------------------

class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_ops.empty((num_chunks * hidden_size, input_size),
                                              device=device, dtype=dtype))
        self.weight_hh = Parameter(_ops.empty((num_chunks * hidden_size, hidden_size),
                                              device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_ops.empty(num_chunks * hidden_size, device=device,
                                                dtype=dtype))
            self.bias_hh = Parameter(_ops.empty(num_chunks * hidden_size, device=device,
                                                dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        _reset_uniform_by_hidden_size(self)

    def _check_input_dims(self, name, input, states, state_name):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for label, value in zip(state_name, states):
            if value is not None and value.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {value.dim()}D "
                                 "instead")

    def _step(self, mode, input, states):
        """One step of the cell (PyTorch's ``_VF.*_cell``), with ATen's checks."""
        weights = (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if _autocast.active:
            op = _CELL_OPS[mode]
            if _autocast.enabled_for(input, op):
                # CUDA's lower-precision list names the cells: input, states and weights cast.
                return _autocast.run(_cell_step, op, self, mode, input, states, *weights)
        return _cell_step(self, mode, input, states, *weights)

    def _zeros(self, input):
        return _ops.zeros(input.size(0), self.hidden_size, dtype=input.dtype,
                          device=input.device)

    def _forward_single_state(self, name, input, hx):
        """RNNCell and GRUCell, whose state is one tensor; ``_mode()`` names the step."""
        self._check_input_dims(name, input, (hx,), ("hidden",))
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = self._zeros(input)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        ret, _ = self._step(self._mode(), input, (hx,))
        return ret if is_batched else ret.squeeze(0)


# The cells' ATen names, by which CUDA's autocast lists them (the CPU's lists do not).
_CELL_OPS = {"LSTM": "lstm_cell", "GRU": "gru_cell", "RNN_TANH": "rnn_tanh_cell",
             "RNN_RELU": "rnn_relu_cell"}


def _cell_step(cell, mode, input, states, w_ih, w_hh, b_ih, b_hh):
    """``RNNCellBase._step`` on the given weights."""
    # Where autocast casts the cell's linears (the CPU's policy, which composes the cell from
    # them), ATen's matrix products meet no dtype mismatch.
    casting = _autocast.active and _autocast.enabled_for(input, "linear")
    if input.dtype != w_ih.dtype and not casting:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_dtype_name(input.dtype)} and {_dtype_name(w_ih.dtype)}")
    if input.size(1) != cell.input_size:
        raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} "
                           f"expected {cell.input_size}")
    for idx, hx in enumerate(states):
        if input.size(0) != hx.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{idx} "
                               f"batch size {hx.size(0)}")
        if hx.size(1) != cell.hidden_size:
            raise RuntimeError(f"hidden{idx} has inconsistent hidden_size: got "
                               f"{hx.size(1)}, expected {cell.hidden_size}")
    # ATen's cell written out op by op, so the step records PyTorch's graph (Addmm,
    # UnsafeSplit, Sigmoid, ... nodes in the same order); each op is one vectorised kernel.
    hx = states[0]
    if hx.dtype != w_hh.dtype and not casting:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_dtype_name(hx.dtype)} and {_dtype_name(w_hh.dtype)}")
    igates = F.linear(input, w_ih, b_ih)
    hgates = F.linear(hx, w_hh, b_hh)
    if mode == "LSTM":
        i, f, g, o = (hgates + igates).unsafe_chunk(4, 1)
        cy = f.sigmoid() * states[1] + i.sigmoid() * g.tanh()
        return o.sigmoid() * cy.tanh(), cy
    if mode == "GRU":
        i_r, i_z, i_n = igates.unsafe_chunk(3, 1)
        h_r, h_z, h_n = hgates.unsafe_chunk(3, 1)
        reset = (h_r + i_r).sigmoid()
        update = (h_z + i_z).sigmoid()
        new = (i_n + h_n * reset).tanh()
        return (hx - new) * update + new, None
    pre = hgates + igates
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


class RNNCell(RNNCellBase):
    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def _mode(self):
        if self.nonlinearity == "tanh":
            return "RNN_TANH"
        if self.nonlinearity == "relu":
            return "RNN_RELU"
        raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")

    def forward(self, input, hx=None):
        return self._forward_single_state("RNNCell", input, hx)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got "
                                     f"{value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = self._zeros(input)
            hx = (zeros, zeros)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = self._step("LSTM", input, tuple(hx))
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def _mode(self):
        return "GRU"

    def forward(self, input, hx=None):
        return self._forward_single_state("GRUCell", input, hx)
