"""Positional encodings: an Ember addition (PyTorch leaves them to its tutorials).

``SinusoidalPositionalEncoding`` adds the fixed encoding of "Attention Is All You Need"::

    PE[pos, 2i]     = sin(pos / base ** (2i / d_model))
    PE[pos, 2i + 1] = cos(pos / base ** (2i / d_model))

``RotaryEmbedding`` (RoFormer, Su et al. 2021) rotates each pair of features of a query or key
by the angle ``pos * base ** (-2i / dim)``. Rotations compose, so the dot product of a query
rotated for position ``m`` with a key rotated for position ``n`` depends on ``m - n`` only:
attention scores become relative-position aware while the embeddings stay absolute.

Pairs are ``(x[i], x[i + dim/2])`` (the "rotate half" layout of GPT-NeoX and LLaMA) unless
``interleaved=True``, which pairs ``(x[2i], x[2i + 1])`` as the RoFormer paper writes it.
"""
import math

from ... import _dtype as dt
from ... import ops as _ops
from .dropout import Dropout
from .module import Module

__all__ = ["SinusoidalPositionalEncoding", "RotaryEmbedding", "apply_rotary_emb"]


def _sinusoid_table(num_positions, d_model, base, device=None, dtype=None):
    position = _ops.arange(num_positions, dtype=dt.float64, device=device).unsqueeze(1)
    frequency = _ops.exp(_ops.arange(0, d_model, 2, dtype=dt.float64, device=device)
                         * (-math.log(base) / d_model))
    angles = position * frequency
    table = _ops.zeros(num_positions, d_model, dtype=dt.float64, device=device)
    table[:, 0::2] = angles.sin()
    table[:, 1::2] = angles.cos()[:, :d_model // 2]  # an odd d_model has one more sine column
    return table.to(dtype if dtype is not None else dt.get_default_dtype())


class SinusoidalPositionalEncoding(Module):
    """``dropout(x + PE[:seq_len])`` for ``x`` of shape ``(seq, batch, d_model)``
    (``(batch, seq, d_model)`` with ``batch_first=True``, ``(seq, d_model)`` unbatched).
    An Ember addition: ``torch.nn`` has no such layer (its tutorials write one).

    The table is a non-persistent buffer (recomputed, not saved in ``state_dict``)."""

    def __init__(self, d_model, max_len=5000, dropout=0.0, base=10000.0, batch_first=False,
                 device=None, dtype=None):
        super().__init__()
        if d_model <= 0 or max_len <= 0:
            raise ValueError(f"d_model and max_len must be positive, got d_model={d_model} and "
                             f"max_len={max_len}")
        self.d_model = d_model
        self.max_len = max_len
        self.base = base
        self.batch_first = batch_first
        self.dropout = Dropout(dropout)
        self.register_buffer("pe", _sinusoid_table(max_len, d_model, base, device, dtype),
                             persistent=False)

    def forward(self, x):
        if x.shape[-1] != self.d_model:
            raise RuntimeError(f"expected the last dimension of the input to be d_model="
                               f"{self.d_model}, but got {x.shape[-1]}")
        seq_dim = 1 if self.batch_first and x.dim() == 3 else 0
        seq_len = x.shape[seq_dim]
        if seq_len > self.max_len:
            raise RuntimeError(f"sequence length {seq_len} exceeds max_len={self.max_len}")
        table = self.pe[:seq_len]
        if x.dim() == 3 and not self.batch_first:
            table = table.unsqueeze(1)
        return self.dropout(x + table)

    def extra_repr(self):
        return f"d_model={self.d_model}, max_len={self.max_len}, batch_first={self.batch_first}"


def _rotate_half(x):
    first, second = x.chunk(2, -1)
    return _ops.cat([-second, first], -1)


def _rotate_pairs(x):
    pairs = x.unflatten(-1, (-1, 2))
    return _ops.stack([-pairs[..., 1], pairs[..., 0]], -1).flatten(-2)


def apply_rotary_emb(x, cos, sin, interleaved=False):
    """``x`` rotated pairwise: ``x * cos + rotate(x) * sin``.

    ``cos`` and ``sin`` hold each feature's angle (a pair's two features share it) and
    broadcast against ``x``, e.g. ``(seq, dim)`` for ``x`` of shape ``(..., seq, dim)``;
    ``RotaryEmbedding.cos_sin`` makes them."""
    if x.shape[-1] % 2:
        raise RuntimeError(f"rotary embeddings need an even feature size, got {x.shape[-1]}")
    rotated = _rotate_pairs(x) if interleaved else _rotate_half(x)
    return x * cos + rotated * sin


class RotaryEmbedding(Module):
    """Rotary position embedding over the last ``dim`` features of a ``(..., seq, dim)``
    tensor; ``forward(x, offset=0)`` treats ``x[..., j, :]`` as position ``offset + j``
    (an offset serves decoding with a cache), ``positions`` gives them explicitly. An Ember
    addition, as is ``apply_rotary_emb``: ``torch.nn`` has neither."""

    def __init__(self, dim, base=10000.0, interleaved=False, device=None):
        super().__init__()
        if dim <= 0 or dim % 2:
            raise ValueError(f"RotaryEmbedding needs a positive even dim, got {dim}")
        self.dim = dim
        self.base = base
        self.interleaved = interleaved
        inv_freq = 1.0 / base ** (_ops.arange(0, dim, 2, dtype=dt.float64, device=device) / dim)
        self.register_buffer("inv_freq", inv_freq.to(dt.float32), persistent=False)

    def cos_sin(self, seq_len=None, offset=0, positions=None, dtype=None):
        """``cos`` and ``sin`` of shape ``(seq, dim)`` for ``apply_rotary_emb``."""
        if positions is None:
            positions = _ops.arange(offset, offset + seq_len, device=self.inv_freq.device)
        angles = positions.to(dt.float64).unsqueeze(-1) * self.inv_freq.to(dt.float64)
        if self.interleaved:
            angles = angles.repeat_interleave(2, -1)
        else:
            angles = _ops.cat([angles, angles], -1)
        dtype = dtype if dtype is not None else dt.get_default_dtype()
        return angles.cos().to(dtype), angles.sin().to(dtype)

    def forward(self, x, offset=0, positions=None):
        if x.shape[-1] != self.dim:
            raise RuntimeError(f"expected the last dimension of the input to be dim={self.dim}, "
                               f"but got {x.shape[-1]}")
        cos, sin = self.cos_sin(x.shape[-2], offset, positions, x.dtype)
        return apply_rotary_emb(x, cos, sin, self.interleaved)

    def extra_repr(self):
        return f"dim={self.dim}, base={self.base}, interleaved={self.interleaved}"
