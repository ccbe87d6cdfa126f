"""``pad``: constant padding is an op (``ember.ops.conv.constant_pad_nd``); reflect and
replicate padding gather each padded dim by an index vector, as one op
(``ember.ops.conv.gather_dims``) under PyTorch's node; circular padding is PyTorch's composite
of slice copies into a new tensor (``CopySlices`` nodes)."""
from ..._tensor import _wrap
from ... import _dtype as dt
from ...ops import conv as _conv

__all__ = ["pad"]

_NON_CONSTANT = ("reflect", "replicate", "circular")


def _pairs(pad, input):
    """``pad`` (last dim first, PyTorch's order) as ``(before, after)`` from the first padded
    dim on."""
    pad = tuple(pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.ndim}")
    return tuple((pad[2 * i], pad[2 * i + 1]) for i in reversed(range(len(pad) // 2)))


def _source_index(xp, mode, size, lo, hi):
    positions = xp.arange(-lo, size + hi)
    if mode == "replicate":
        return xp.clip(positions, 0, size - 1)
    period = 2 * (size - 1)
    folded = positions % period if period else positions * 0
    return xp.where(folded < size, folded, period - folded)


def _check_non_constant(input, pairs, mode):
    padded_dims = len(pairs)
    if not (padded_dims <= 3 and input.ndim in (padded_dims + 1, padded_dims + 2)):
        raise NotImplementedError(
            f"Padding size {2 * padded_dims} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    lead = input.ndim - padded_dims
    for i, (lo, hi) in enumerate(pairs):
        size = input.shape[lead + i]
        if mode == "reflect" and (lo >= size or hi >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension "
                               f"{lead + i} of input {list(input.shape)}")
        if mode == "circular" and (lo > size or hi > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
    if mode == "replicate" and any(s == 0 for s in input.shape[1:]):
        raise RuntimeError(f"Expected {lead + padded_dims - 1}D or {lead + padded_dims}D (batch "
                           f"mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")


def pad(input, pad, mode="constant", value=None):
    """Pads (or, with negative widths, crops) the last ``len(pad) // 2`` dims of ``input``."""
    if mode not in ("constant",) + _NON_CONSTANT:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pairs = _pairs(pad, input)
    if mode == "constant":
        return _conv.constant_pad_nd(input, pairs, 0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument.")
    _check_non_constant(input, pairs, mode)
    if mode == "circular":
        return _pad_circular(input, pairs)
    if input.dtype is dt.bool:
        kernel = "reflection_pad" if mode == "reflect" else "replication_pad"
        raise NotImplementedError(f"\"{kernel}{len(pairs)}d\" not implemented for 'Bool'")
    xp = input._backend.xp
    lead = input.ndim - len(pairs)
    gathers = [(lead + i, _wrap(xp.asarray(_source_index(xp, mode, input.shape[lead + i], lo, hi),
                                           dtype=xp.int64), dt.int64, input))
               for i, (lo, hi) in enumerate(pairs)]
    # one node, PyTorch's ReflectionPad2DBackward0 and the like
    return _conv.gather_dims(input, gathers, _conv.INDEX_PAD_NODES[mode, len(gathers)])


def _pad_circular(input, pairs):
    """PyTorch's ``_pad_circular``: a new tensor gets the (cropped) input copied into its middle,
    then, dim by dim from the last, each border is copied from the far side of the new tensor
    itself. Every copy writes a slice in place, so the graph is PyTorch's chain of
    ``CopySlices`` (corners are written more than once, as there)."""
    lead = input.ndim - len(pairs)
    in_shape = input.shape
    out_shape = list(in_shape[:lead])
    for size, (lo, hi) in zip(in_shape[lead:], pairs):
        if size + lo + hi < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
        out_shape.append(size + lo + hi)
    out = input.new_empty(out_shape)
    out_slice, in_slice = out, input
    last_first = [(lead + i, lo, hi) for i, (lo, hi) in reversed(list(enumerate(pairs)))]
    for dim, lo, hi in last_first:
        out_slice = out_slice.narrow(dim, max(lo, 0), out_shape[dim] - max(hi, 0) - max(lo, 0))
        in_slice = in_slice.narrow(dim, max(-lo, 0), in_shape[dim] - max(-hi, 0) - max(-lo, 0))
    out_slice.copy_(in_slice)
    for dim, lo, hi in last_first:
        n = out_shape[dim]
        if lo > 0:
            out.narrow(dim, 0, lo).copy_(out.narrow(dim, n - lo - max(hi, 0), lo))
        if hi > 0:
            # PyTorch's copy runs forward through memory, so a right border wider than the
            # distance to its source (a left crop allows it) repeats what it has just written:
            # copy in pieces no wider than that distance.
            source, target = max(lo, 0), n - hi
            step = max(target - source, 1)
            for offset in range(0, hi, step):
                width = min(step, hi - offset)
                out.narrow(dim, target + offset, width).copy_(
                    out.narrow(dim, source + offset, width))
    return out
