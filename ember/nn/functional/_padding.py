"""``pad``: constant padding is an op (``ember.ops.conv.constant_pad_nd``); reflect, replicate
and circular padding gather each padded dim by an index vector: reflect and replicate as one
op (``ember.ops.conv.gather_dims``) under PyTorch's node, circular by ``index_select``."""
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
    if mode == "circular":
        # PyTorch crops the negative sides first and wraps around what is left
        start, kept = max(-lo, 0), size + min(lo, 0) + min(hi, 0)
        return start + xp.arange(-max(lo, 0), kept + max(hi, 0)) % kept
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
    if input.dtype is dt.bool and mode != "circular":
        kernel = "reflection_pad" if mode == "reflect" else "replication_pad"
        raise NotImplementedError(f"\"{kernel}{len(pairs)}d\" not implemented for 'Bool'")
    xp = input._backend.xp
    lead = input.ndim - len(pairs)
    gathers = [(lead + i, _wrap(xp.asarray(_source_index(xp, mode, input.shape[lead + i], lo, hi),
                                           dtype=xp.int64), dt.int64, input))
               for i, (lo, hi) in enumerate(pairs)]
    if mode != "circular":  # one node, PyTorch's ReflectionPad2DBackward0 and the like
        return _conv.gather_dims(input, gathers, _conv.INDEX_PAD_NODES[mode, len(gathers)])
    out = input
    for (dim, index), (lo, hi) in zip(gathers, pairs):
        if lo or hi:
            out = out.index_select(dim, index)
    return out
