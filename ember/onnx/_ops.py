"""The one table from Ember call targets to ONNX node builders.

A builder is ``build(g, a)``: ``g`` is the exporter's graph builder (``_export._GraphBuilder``),
``a`` the op's arguments bound to its Python signature (defaults applied), with every tensor an
``_export.Value`` (its ONNX name, its shape, its dtype) and every size that follows a dynamic
axis a ``_export.SymInt``. It returns the ONNX name of the op's result (a tuple of names for an
op that returns several tensors, ``None`` where one of them is absent). The table is keyed by
the op's name, the same for ``ember.relu``, ``F.relu`` and ``Tensor.relu``: Ember's spellings of
one op share its semantics. Everything is written in opset 17's forms, which the later opsets
keep for the ops used here (the tests run 17, 18 and 20)."""
import math

import numpy as np

__all__ = ["BUILDERS"]


def _unsupported_argument(op, why):
    from ._export import OnnxExporterError  # _export imports this table
    return OnnxExporterError(f"Exporting '{op}' to ONNX: {why}")


def _axis(d, rank):
    return d + rank if d < 0 else d


def _pair(v, n=2):
    return list(v) if isinstance(v, (tuple, list)) else [v] * n


# ----------------------------------------------------------------------------- element-wise

def _unary(op_type):
    def build(g, a):
        return g.op(op_type, [a["input"].name])
    return build


def _binary(op_type, swap=False):
    def build(g, a):
        x, y = (a["other"], a["input"]) if swap else (a["input"], a["other"])
        alpha = a.get("alpha", 1)
        out_dtype = g.node_dtype
        y_name = g.operand(y, out_dtype)
        if alpha != 1:
            y_name = g.op("Mul", [y_name, g.scalar(alpha, out_dtype)])
        return g.op(op_type, [g.operand(x, out_dtype), y_name])
    return build


def _operator(op_type):
    """``operator.add(a, b)`` & co (what ``a + b`` records)."""
    def build(g, a):
        x, y = a["a"], a["b"]
        out_dtype = g.node_dtype
        return g.op(op_type, [g.operand(x, out_dtype), g.operand(y, out_dtype)])
    return build


def _relu(g, a):
    return g.op("Relu", [a["input"].name])


def _gelu(g, a):
    x = a["input"]
    half = g.scalar(0.5, x.dtype)
    one = g.scalar(1.0, x.dtype)
    if a.get("approximate", "none") == "tanh":
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = g.op("Mul", [g.op("Mul", [x.name, x.name]), x.name])
        inner = g.op("Add", [x.name, g.op("Mul", [cube, g.scalar(0.044715, x.dtype)])])
        t = g.op("Tanh", [g.op("Mul", [inner, g.scalar(math.sqrt(2 / math.pi), x.dtype)])])
    else:
        t = g.op("Erf", [g.op("Mul", [x.name, g.scalar(1 / math.sqrt(2), x.dtype)])])
    return g.op("Mul", [g.op("Mul", [x.name, half]), g.op("Add", [t, one])])


def _softmax(op_type):
    def build(g, a):
        x = a["input"]
        if a.get("dim") is None:
            raise _unsupported_argument(op_type.lower(), "softmax needs an explicit dim")
        name = x.name
        if a.get("dtype") is not None:
            name = g.cast(name, a["dtype"])
        return g.op(op_type, [name], axis=a["dim"])
    return build


def _dropout(g, a):
    if a.get("training", False) and a.get("p", 0) > 0:
        raise _unsupported_argument("dropout", "dropout in training mode is random; export "
                                    "the model in eval mode (training=TrainingMode.EVAL)")
    return g.op("Identity", [a["input"].name])


def _identity(g, a):
    return g.op("Identity", [a["input"].name])


# ----------------------------------------------------------------------------- layers

def _linear(g, a):
    x, w, b = a["input"], a["weight"], a.get("bias")
    if len(x.shape) == 2:
        inputs = [x.name, w.name] + ([b.name] if b is not None else [])
        return g.op("Gemm", inputs, transB=1)
    out = g.op("MatMul", [x.name, g.op("Transpose", [w.name], perm=[1, 0])])
    return g.op("Add", [out, b.name]) if b is not None else out


def _conv(n):
    def build(g, a):
        x, w, b = a["input"], a["weight"], a.get("bias")
        kernel = list(w.shape[2:])
        dilation = _pair(a["dilation"], n)
        padding = a["padding"]
        if padding == "valid":
            pads = [0] * n * 2
        elif padding == "same":
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
        else:
            pads = _pair(padding, n) * 2
        inputs = [x.name, w.name] + ([b.name] if b is not None else [])
        return g.op("Conv", inputs, kernel_shape=kernel, strides=_pair(a["stride"], n),
                    pads=pads, dilations=dilation, group=a["groups"])
    return build


def _batch_norm(g, a):
    x = a["input"]
    if a["training"]:
        raise _unsupported_argument("batch_norm", "batch statistics in training mode; export "
                                    "the model in eval mode (training=TrainingMode.EVAL)")
    if a["running_mean"] is None or a["running_var"] is None:
        raise _unsupported_argument("batch_norm", "a BatchNorm without running statistics "
                                    "(track_running_stats=False) normalises with batch "
                                    "statistics, which ONNX's BatchNormalization cannot")
    channels = x.shape[1]
    scale = a["weight"].name if a["weight"] is not None else \
        g.const(np.ones(channels, x.dtype.np))
    bias = a["bias"].name if a["bias"] is not None else g.const(np.zeros(channels, x.dtype.np))
    return g.op("BatchNormalization", [x.name, scale, bias, a["running_mean"].name,
                                       a["running_var"].name], epsilon=float(a["eps"]))


def _layer_norm(g, a):
    x = a["input"]
    shape = _pair(a["normalized_shape"], 1)
    weight = a["weight"].name if a["weight"] is not None else \
        g.const(np.ones(shape, x.dtype.np))
    inputs = [x.name, weight] + ([a["bias"].name] if a["bias"] is not None else [])
    return g.op("LayerNormalization", inputs, axis=-len(shape), epsilon=float(a["eps"]))


def _max_pool(n):
    def build(g, a):
        if a["return_indices"]:
            raise _unsupported_argument(f"max_pool{n}d", "return_indices=True is not "
                                        "exported (ONNX's indices are flattened differently)")
        kernel = _pair(a["kernel_size"], n)
        stride = _pair(a["stride"], n) if a["stride"] not in (None, (), []) else kernel
        return g.op("MaxPool", [a["input"].name], kernel_shape=kernel, strides=stride,
                    pads=_pair(a["padding"], n) * 2, dilations=_pair(a["dilation"], n),
                    ceil_mode=int(a["ceil_mode"]))
    return build


def _avg_pool(n):
    def build(g, a):
        if a.get("divisor_override") is not None:
            raise _unsupported_argument(f"avg_pool{n}d", "divisor_override has no ONNX form")
        kernel = _pair(a["kernel_size"], n)
        stride = _pair(a["stride"], n) if a["stride"] not in (None, (), []) else kernel
        return g.op("AveragePool", [a["input"].name], kernel_shape=kernel, strides=stride,
                    pads=_pair(a["padding"], n) * 2, ceil_mode=int(a["ceil_mode"]),
                    count_include_pad=int(a.get("count_include_pad", True)))
    return build


def _adaptive_avg_pool2d(g, a):
    size = _pair(a["output_size"], 2)
    if size != [1, 1]:
        raise _unsupported_argument("adaptive_avg_pool2d", f"output_size {tuple(size)}: only "
                                    "(1, 1) (global average pooling) has an ONNX form")
    return g.op("GlobalAveragePool", [a["input"].name])


# ----------------------------------------------------------------------------- shapes

def _to_output_shape(g, a):
    """view/reshape/flatten/unflatten: one Reshape to the shape the trace recorded, whose
    sizes that follow dynamic axes are computed from the inputs' shapes at run time."""
    return g.op("Reshape", [a["input"].name, g.ints(g.node_shape, reshape=True)])


def _expand(g, a):
    return g.op("Expand", [a["input"].name, g.ints(g.node_shape)])


def _transpose(g, a):
    x = a["input"]
    rank = len(x.shape)
    perm = list(range(rank))
    d0, d1 = _axis(a["dim0"], rank), _axis(a["dim1"], rank)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return g.op("Transpose", [x.name], perm=perm)


def _t(g, a):
    x = a["input"]
    return g.op("Transpose", [x.name], perm=list(range(len(x.shape)))[::-1])


def _permute(g, a):
    x = a["input"]
    dims = a.get("dims") or a["dims_args"]
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    return g.op("Transpose", [x.name], perm=[_axis(d, len(x.shape)) for d in dims])


def _unsqueeze(g, a):
    return g.op("Unsqueeze", [a["input"].name, g.ints([a["dim"]])])


def _squeeze(g, a):
    x, dim = a["input"], a["dim"]
    if dim is None:
        return g.op("Squeeze", [x.name])
    dims = list(dim) if isinstance(dim, (tuple, list)) else [dim]
    # torch squeezes only the named dims that are 1; the others stay.
    dims = [d for d in dims if x.shape[_axis(d, len(x.shape))] == 1]
    if not dims:
        return g.op("Identity", [x.name])
    return g.op("Squeeze", [x.name, g.ints(dims)])


def _cat(g, a):
    tensors = a["tensors"]
    return g.op("Concat", [g.operand(t, g.node_dtype) for t in tensors], axis=a["dim"])


def _stack(g, a):
    tensors, dim = a["tensors"], a["dim"]
    axes = g.ints([dim])
    return g.op("Concat", [g.op("Unsqueeze", [t.name, axes]) for t in tensors], axis=dim)


def _unbind(g, a):
    x = a["input"]
    dim = _axis(a.get("dim", 0), len(x.shape))
    n = x.shape[dim]
    if not isinstance(n, int):
        raise _unsupported_argument("unbind", "unbinding a dimension that follows a dynamic "
                                    "axis (the number of results would change)")
    return tuple(g.op("Gather", [x.name, g.const(np.array(i, np.int64))], axis=dim)
                 for i in range(n))


def _getitem(g, a):
    x, index = a["a"], a["b"]
    if isinstance(x, (tuple, list)):  # one result of an op that returned several
        return x[index]
    if not isinstance(index, tuple):
        index = (index,)
    if any(i is Ellipsis for i in index):
        at = index.index(Ellipsis)
        real = sum(1 for i in index if i is not None and i is not Ellipsis)
        index = index[:at] + (slice(None),) * (len(x.shape) - real) + index[at + 1:]
    name, axis, drop, add = x.name, 0, [], []
    starts, ends, axes, steps = [], [], [], []
    out_axis = 0
    for i in index:
        if i is None:
            add.append(out_axis)
            out_axis += 1
            continue
        if isinstance(i, bool) or not isinstance(i, (int, slice)):
            raise _unsupported_argument("getitem", f"indexing with {type(i).__name__} (only "
                                        "ints, slices, None and ... are exported)")
        if isinstance(i, int):
            starts.append(i)
            ends.append(i + 1 if i != -1 else np.iinfo(np.int64).max)
            axes.append(axis)
            steps.append(1)
            drop.append(axis)
        elif i != slice(None):
            step = 1 if i.step is None else i.step
            if step < 0:
                raise _unsupported_argument("getitem", "negative slice steps")
            starts.append(0 if i.start is None else i.start)
            ends.append(np.iinfo(np.int64).max if i.stop is None else i.stop)
            axes.append(axis)
            steps.append(step)
            out_axis += 1
        else:
            out_axis += 1
        axis += 1
    if axes:
        name = g.op("Slice", [name, g.ints(starts), g.ints(ends), g.ints(axes), g.ints(steps)])
    if drop:
        name = g.op("Squeeze", [name, g.ints(drop)])
    if add:
        name = g.op("Unsqueeze", [name, g.ints(add)])
    return name if (axes or drop or add) else g.op("Identity", [name])


# ----------------------------------------------------------------------------- attention

def _sdpa(g, a):
    q, k, v = a["query"], a["key"], a["value"]
    if a.get("dropout_p", 0.0) > 0:
        raise _unsupported_argument("scaled_dot_product_attention", "dropout_p > 0 is random; "
                                    "export in eval mode")
    if a.get("enable_gqa"):
        raise _unsupported_argument("scaled_dot_product_attention", "enable_gqa=True")
    rank, dtype = len(q.shape), q.dtype
    scale = a.get("scale")
    if scale is None:
        scale = 1 / math.sqrt(q.shape[-1])
    perm = list(range(rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    scores = g.op("MatMul", [q.name, g.op("Transpose", [k.name], perm=perm)])
    scores = g.op("Mul", [scores, g.scalar(scale, dtype)])
    mask = a.get("attn_mask")
    if a.get("is_causal"):
        L, S = q.shape[-2], k.shape[-2]
        if not isinstance(L, int) or not isinstance(S, int):
            raise _unsupported_argument("scaled_dot_product_attention", "is_causal with a "
                                        "dynamic sequence length")
        causal = np.where(np.tril(np.ones((L, S), bool)), 0, -np.inf).astype(dtype.np)
        scores = g.op("Add", [scores, g.const(causal)])
    if mask is not None:
        if mask.dtype.name == "bool":
            mask_name = g.op("Where", [mask.name, g.scalar(0.0, dtype),
                                       g.scalar(-np.inf, dtype)])
        else:
            mask_name = g.operand(mask, dtype)
        scores = g.op("Add", [scores, mask_name])
    return g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v.name])


# ----------------------------------------------------------------------------- recurrent

# ONNX's gate orders, as rows of Ember's (PyTorch's) stacked gate weights.
_GATE_ORDER = {"LSTM": (0, 3, 1, 2),  # i f g o -> i o f c
               "GRU": (1, 0, 2),      # r z n -> z r h
               "RNN_TANH": (0,), "RNN_RELU": (0,)}


def _rnn_layer(g, a):
    """One direction of a recurrent layer. Ember has already projected the inputs
    (``gates_x = x W_ih^T + b_ih``), so ONNX's input weight is the identity, reordered into
    ONNX's gate order; the recurrent weight and bias are reordered the same way."""
    mode, gates_x, h0, c0 = a["mode"], a["gates_x"], a["h0"], a["c0"]
    w_hh, b_hh, sizes = a["w_hh"], a["b_hh"], a["batch_sizes"]
    if a.get("w_hr") is not None:
        raise _unsupported_argument("rnn_layer", "LSTM with proj_size > 0 has no ONNX form")
    from ._export import RepeatedInt
    if isinstance(sizes, RepeatedInt):  # the steps, and maybe the batch, are dynamic axes
        steps, batch = sizes.count, sizes.value
    elif sizes is None or len({repr(s) for s in sizes}) > 1:
        raise _unsupported_argument("rnn_layer", "packed sequences of different lengths")
    else:
        steps, batch = len(sizes), sizes[0]
    order = _GATE_ORDER[mode]
    G = gates_x.shape[1]
    H = G // len(order)
    dtype = gates_x.dtype
    rows = np.concatenate([np.arange(j * H, (j + 1) * H) for j in order])
    eye = np.eye(G, dtype=dtype.np)[rows][None]
    w = g.const(eye)
    idx = g.const(rows.astype(np.int64))
    r = g.op("Unsqueeze", [g.op("Gather", [w_hh.name, idx], axis=0), g.ints([0])])
    rb = g.op("Gather", [b_hh.name, idx], axis=0) if b_hh is not None else \
        g.const(np.zeros(G, dtype.np))
    b = g.op("Unsqueeze", [g.op("Concat", [g.const(np.zeros(G, dtype.np)), rb], axis=0),
                           g.ints([0])])
    x = g.op("Reshape", [gates_x.name, g.ints([steps, batch, G], reshape=True)])
    zero_axis = g.ints([0])
    inputs = [x, w, r, b, "", g.op("Unsqueeze", [h0.name, zero_axis])]
    attrs = {"hidden_size": H, "direction": "reverse" if a.get("reverse") else "forward"}
    if mode == "LSTM":
        inputs.append(g.op("Unsqueeze", [c0.name, zero_axis]))
        y, y_h, y_c = g.op("LSTM", inputs, outputs=3, **attrs)
    elif mode == "GRU":
        y, y_h = g.op("GRU", inputs, outputs=2, linear_before_reset=1, **attrs)
        y_c = None
    else:
        act = "Tanh" if mode == "RNN_TANH" else "Relu"
        y, y_h = g.op("RNN", inputs, outputs=2, activations=[act], **attrs)
        y_c = None
    # Y is [T, 1, B, H]: back to Ember's [T*B, H] rows.
    out = g.op("Reshape", [y, g.ints([-1, H])])
    h_n = g.op("Squeeze", [y_h, zero_axis])
    c_n = g.op("Squeeze", [y_c, zero_axis]) if y_c is not None else None
    return out, h_n, c_n


# ----------------------------------------------------------------------------- the table

BUILDERS = {
    # element-wise
    "add": _binary("Add"), "sub": _binary("Sub"), "mul": _binary("Mul"),
    "div": _binary("Div"), "rsub": _binary("Sub", swap=True),
    "matmul": _binary("MatMul"), "mm": _binary("MatMul"), "bmm": _binary("MatMul"),
    "relu": _relu, "sigmoid": _unary("Sigmoid"), "tanh": _unary("Tanh"),
    "exp": _unary("Exp"), "log": _unary("Log"), "sqrt": _unary("Sqrt"), "neg": _unary("Neg"),
    "abs": _unary("Abs"), "erf": _unary("Erf"), "reciprocal": _unary("Reciprocal"),
    "gelu": _gelu, "softmax": _softmax("Softmax"), "log_softmax": _softmax("LogSoftmax"),
    "dropout": _dropout, "contiguous": _identity, "clone": _identity, "detach": _identity,
    # what Python operators record
    "operator.add": _operator("Add"), "operator.sub": _operator("Sub"),
    "operator.mul": _operator("Mul"), "operator.truediv": _operator("Div"),
    "operator.matmul": _operator("MatMul"), "operator.pow": _operator("Pow"),
    "operator.neg": lambda g, a: g.op("Neg", [a["a"].name]),
    "operator.getitem": _getitem,
    # layers
    "linear": _linear, "conv1d": _conv(1), "conv2d": _conv(2), "conv3d": _conv(3),
    "batch_norm": _batch_norm, "layer_norm": _layer_norm,
    "max_pool1d": _max_pool(1), "max_pool2d": _max_pool(2),
    "avg_pool1d": _avg_pool(1), "avg_pool2d": _avg_pool(2),
    "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "sdpa": _sdpa, "scaled_dot_product_attention": _sdpa,
    "rnn_layer": _rnn_layer,
    # shapes
    "view": _to_output_shape, "reshape": _to_output_shape, "flatten": _to_output_shape,
    "unflatten": _to_output_shape, "expand": _expand,
    "transpose": _transpose, "t": _t, "permute": _permute,
    "unsqueeze": _unsqueeze, "squeeze": _squeeze, "cat": _cat, "concat": _cat, "stack": _stack,
    "unbind": _unbind,
}
