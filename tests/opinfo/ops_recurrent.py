"""Rows for ``ember/ops/recurrent.py``, the fused recurrent layer op (``rnn_layer``: tanh and
ReLU RNNs, LSTM with and without projections, GRU, both directions), reached through its
public spelling, the ``nn.RNN``/``nn.LSTM``/``nn.GRU`` layers.

torch's top-level ``torch.lstm``/``torch.gru``/``torch.rnn_tanh``... (a flat weight list) are
not in Ember yet, so a row builds the layer and replaces
its parameters by the row's input tensors, as ``torch.func.functional_call`` does: the
gradients are then checked with respect to every weight, the input and the initial state.
Shapes stay small: the float64 gradcheck runs the layer twice per input element.
"""
from .core import OpInfo, Sample

DTYPES = ("float32", "float64")
INPUT, HIDDEN, PROJ = 2, 3, 2
_GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}


def _weight_names(num_layers, bidirectional, bias, proj_size):
    names = []
    for layer in range(num_layers):
        for suffix in ("", "_reverse")[:2 if bidirectional else 1]:
            names += [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
            if bias:
                names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
            if proj_size:
                names.append(f"weight_hr_l{layer}{suffix}")
    return names


def _weight_shapes(mode, num_layers=1, bidirectional=False, bias=True, proj_size=0, **_):
    gates = _GATES[mode] * HIDDEN
    out = proj_size or HIDDEN
    directions = 2 if bidirectional else 1
    shapes = []
    for layer in range(num_layers):
        inputs = INPUT if layer == 0 else out * directions
        for _direction in range(directions):
            shapes += [(gates, inputs), (gates, out)]
            if bias:
                shapes += [(gates,), (gates,)]
            if proj_size:
                shapes.append((proj_size, HIDDEN))
    return shapes


def _layer(mode, with_state, options):
    """``lib.nn.<mode>(INPUT, HIDDEN, **options)`` run on ``x`` (and the initial state) with
    the remaining tensors as its weights."""
    states = (2 if mode == "LSTM" else 1) if with_state else 0

    def fn(lib, x, *tensors):
        module = getattr(lib.nn, mode)(INPUT, HIDDEN, **options)
        names = _weight_names(options.get("num_layers", 1), options.get("bidirectional", False),
                              options.get("bias", True), options.get("proj_size", 0))
        for name, weight in zip(names, tensors[states:]):
            del module._parameters[name]
            setattr(module, name, weight)
        if not states:
            return module(x)
        hx = tuple(tensors[:2]) if mode == "LSTM" else tensors[0]
        return module(x, hx)
    return fn


def _row(name, mode, x_shape, with_state=False, noncontig=False, **options):
    batched = len(x_shape) == 3
    batch = x_shape[0 if options.get("batch_first") else 1] if batched else None
    layers = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
    h_shape = (layers, batch) if batched else (layers,)
    states = []
    if with_state:
        states = [h_shape + (options.get("proj_size") or HIDDEN,)]
        if mode == "LSTM":
            states.append(h_shape + (HIDDEN,))
    shapes = [x_shape] + states + _weight_shapes(mode, **options)
    return OpInfo(name, _layer(mode, with_state, options), [Sample(shapes, noncontig=noncontig)],
                  dtypes=DTYPES)


OPS = [
    _row("nn.RNN_layer", "RNN", (3, 2, INPUT)),
    _row("nn.RNN_layer_relu_state", "RNN", (3, 2, INPUT), with_state=True, nonlinearity="relu"),
    _row("nn.RNN_layer_2layers_bidirectional", "RNN", (3, 2, INPUT), num_layers=2,
         bidirectional=True),
    _row("nn.RNN_layer_unbatched_no_bias", "RNN", (3, INPUT), bias=False),
    _row("nn.LSTM_layer", "LSTM", (3, 2, INPUT)),
    _row("nn.LSTM_layer_state_batch_first", "LSTM", (2, 3, INPUT), with_state=True,
         batch_first=True),
    _row("nn.LSTM_layer_bidirectional", "LSTM", (3, 2, INPUT), bidirectional=True),
    _row("nn.LSTM_layer_proj_2layers", "LSTM", (3, 2, INPUT), with_state=True, num_layers=2,
         proj_size=PROJ),
    _row("nn.LSTM_layer_noncontig", "LSTM", (3, 2, INPUT), noncontig=True),
    _row("nn.GRU_layer", "GRU", (3, 2, INPUT)),
    _row("nn.GRU_layer_state_bidirectional", "GRU", (3, 2, INPUT), with_state=True,
         bidirectional=True),
    _row("nn.GRU_layer_unbatched_2layers", "GRU", (3, INPUT), num_layers=2),
    _row("nn.GRU_layer_noncontig_batch_first", "GRU", (2, 3, INPUT), noncontig=True,
         batch_first=True),
]
