"""Batching rules of convolutions: a batched input with a shared weight folds the batch into N
(one convolution of B*N images); a batched weight (ensembles, per-sample gradients) folds the
batch into the channels and runs one grouped convolution with B times the groups."""
from .vmap import batch_rule, bind, unwrap, value_at, _make


@batch_rule("conv1d", "conv2d", "conv3d")
def conv(op, level, args, kwargs, name):
    bound = bind(op, args, kwargs)
    a = bound.arguments
    x, weight, bias = a["input"], a["weight"], a["bias"]
    spatial = int(name[4])
    no_n = x.dim() == spatial + 1  # an unbatched image (C, *S): the vmap batch is its N
    w_batched = unwrap(weight, level)[1]
    b_batched = bias is not None and unwrap(bias, level)[1]
    xv = value_at(x, level)
    size = xv.shape[0]
    rest = (a["stride"], a["padding"], a["dilation"])
    if not w_batched and not b_batched:
        if no_n:
            return _make(op(xv, weight, bias, *rest, a["groups"]), level)
        n = xv.shape[1]
        out = op(xv.reshape(size * n, *xv.shape[2:]), weight, bias, *rest, a["groups"])
        return _make(out.reshape(size, n, *out.shape[1:]), level)
    if no_n:
        xv = xv.unsqueeze(1)
    n, c = xv.shape[1], xv.shape[2]
    folded = xv.movedim(0, 1).reshape(n, size * c, *xv.shape[3:])
    wv = value_at(weight, level)
    wg = wv.reshape(size * wv.shape[1], *wv.shape[2:])
    bg = value_at(bias, level).reshape(-1) if bias is not None else None
    out = op(folded, wg, bg, *rest, a["groups"] * size)
    out = out.reshape(n, size, wv.shape[1], *out.shape[2:]).movedim(1, 0)
    if no_n:
        out = out.squeeze(1)
    return _make(out, level)


@batch_rule("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def conv_transpose(op, level, args, kwargs, name):
    """As ``conv``: the weight ``(C_in, C_out/groups, *K)`` of B examples stacks along C_in,
    which is what ``groups * B`` splits the folded channels into."""
    bound = bind(op, args, kwargs)
    a = bound.arguments
    x, weight, bias = a["input"], a["weight"], a["bias"]
    spatial = int(name[-2])
    no_n = x.dim() == spatial + 1
    w_batched = unwrap(weight, level)[1]
    b_batched = bias is not None and unwrap(bias, level)[1]
    xv = value_at(x, level)
    size = xv.shape[0]
    rest = dict(stride=a["stride"], padding=a["padding"], output_padding=a["output_padding"],
                dilation=a["dilation"])
    if not w_batched and not b_batched:
        if no_n:
            return _make(op(xv, weight, bias, groups=a["groups"], **rest), level)
        n = xv.shape[1]
        out = op(xv.reshape(size * n, *xv.shape[2:]), weight, bias, groups=a["groups"], **rest)
        return _make(out.reshape(size, n, *out.shape[1:]), level)
    if no_n:
        xv = xv.unsqueeze(1)
    n, c = xv.shape[1], xv.shape[2]
    folded = xv.movedim(0, 1).reshape(n, size * c, *xv.shape[3:])
    wv = value_at(weight, level)
    wg = wv.reshape(size * wv.shape[1], *wv.shape[2:])
    bg = value_at(bias, level).reshape(-1) if bias is not None else None
    out = op(folded, wg, bg, groups=a["groups"] * size, **rest)
    out = out.reshape(n, size, -1, *out.shape[2:]).movedim(1, 0)
    if no_n:
        out = out.squeeze(1)
    return _make(out, level)
