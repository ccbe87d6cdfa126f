"""Batching rule of the fused recurrent layer (``ops.recurrent.rnn_layer``): the vmap batch
joins the layer's own batch. Its steps are stacked time-major (``[L * N, G]``), so the batched
``[B, L * N, G]`` is reordered to ``[L * B * N, G]``, run once, and reordered back."""
from .vmap import batch_rule, bind, call_bound, fallback, unwrap, value_at, _make


@batch_rule("rnn_layer")
def rnn_layer(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    a = bound.arguments
    shared = (a["w_hh"], a["b_hh"], a["w_hr"])
    sizes = a["batch_sizes"]
    ragged = sizes is not None and len(set(sizes)) > 1
    if ragged or any(t is not None and unwrap(t, level)[1] for t in shared):
        return fallback(op, level, args, kwargs, name)  # packed sequences, batched weights
    gates = value_at(a["gates_x"], level)
    h0 = value_at(a["h0"], level)
    size, n = h0.shape[0], h0.shape[1]
    steps = gates.shape[1] // n
    a["gates_x"] = gates.reshape(size, steps, n, -1).movedim(0, 1).reshape(steps * size * n, -1)
    a["h0"] = h0.reshape(size * n, -1)
    if sizes is not None:
        a["batch_sizes"] = [size * n] * steps
    if a["c0"] is not None:
        a["c0"] = value_at(a["c0"], level).reshape(size * n, -1)
    output, h_n, c_n = call_bound(op, bound)
    output = output.reshape(steps, size, n, -1).movedim(1, 0).reshape(size, steps * n, -1)
    h_n = h_n.reshape(size, n, -1)
    c_n = c_n.reshape(size, n, -1) if c_n is not None else None
    return (_make(output, level), _make(h_n, level),
            _make(c_n, level) if c_n is not None else None)
