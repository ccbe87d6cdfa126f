"""``nn.utils.rnn``: packing variable-length sequences for the recurrent layers, as PyTorch.

A ``PackedSequence`` holds the steps of a batch of sequences, sorted longest first, stacked
time-major: step ``t`` contributes the first ``batch_sizes[t]`` sequences' elements. Every
conversion here is one gather (``index_select``) with an index computed from the lengths in
NumPy, so it is differentiable and has no loop over sequences or steps; padding reads a
one-row padding tensor appended to the data.
"""
from collections.abc import Iterable
from typing import NamedTuple, Optional

import numpy as np

import ember
from ..._tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Optional[Tensor]
    unsorted_indices: Optional[Tensor]


def bind(optional, fn):
    if optional is None:
        return None
    return fn(optional)


class PackedSequence(PackedSequence_):
    """The data and ``batch_sizes`` of a packed batch of sequences (made by ``pack_sequence``
    or ``pack_padded_sequence``, not by hand). ``batch_sizes`` is a CPU int64 tensor; the index
    tensors live on the data's device."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(data, batch_sizes,
                                                                 sorted_indices,
                                                                 unsorted_indices))

    def pin_memory(self):
        return type(self)(self.data.pin_memory(), self.batch_sizes,
                          bind(self.sorted_indices, lambda t: t.pin_memory()),
                          bind(self.unsorted_indices, lambda t: t.pin_memory()))

    def to(self, *args, **kwargs):
        """``data.to(*args, **kwargs)``; the index tensors follow the data's device. Returns
        ``self`` when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        non_blocking = kwargs.get("non_blocking", False)

        def call_to(t):
            return t.to(data.device, non_blocking=non_blocking)
        return type(self)(data, self.batch_sizes, bind(self.sorted_indices, call_to),
                          bind(self.unsorted_indices, call_to))

    def cuda(self, *args, **kwargs):
        kwargs.setdefault("device", "cuda")
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to(device="cpu")

    def double(self):
        return self.to(dtype=ember.double)

    def float(self):
        return self.to(dtype=ember.float)

    def half(self):
        return self.to(dtype=ember.half)

    def long(self):
        return self.to(dtype=ember.long)

    def int(self):
        return self.to(dtype=ember.int)

    def short(self):
        return self.to(dtype=ember.short)

    def char(self):
        return self.to(dtype=ember.int8)

    def byte(self):
        return self.to(dtype=ember.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None,
                               unsorted_indices=None):
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never "
                "be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices
    # PackedSequence((data, batch_sizes), sorted_indices=...)
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def invert_permutation(permutation):
    """The inverse of ``permutation`` (None stays None)."""
    if permutation is None:
        return None
    output = ember.empty_like(permutation)
    output.scatter_(0, permutation, ember.arange(0, permutation.numel(),
                                                 device=permutation.device))
    return output


def _lengths_list(lengths):
    if lengths.dim() != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.dim()}D {lengths.device.type} Long tensor")
    return np.asarray(lengths.tolist(), dtype=np.int64)


def _gather(source, index, device):
    return source.index_select(0, ember.as_tensor(index, dtype=ember.int64, device=device))


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded ``T x B x *`` (``B x T x *`` with ``batch_first``) batch of sequences of
    the given ``lengths``. With ``enforce_sorted=False`` the sequences may come in any order."""
    if not isinstance(lengths, Tensor):
        lengths = ember.as_tensor(lengths, dtype=ember.int64, device="cpu")
    else:
        lengths = lengths.to(dtype=ember.int64)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = ember.sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        batch_dim = 0 if batch_first else 1
        input = input.index_select(batch_dim, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def _pack_padded(input, lengths, batch_first):
    lens = _lengths_list(lengths)
    batch = input.size(0 if batch_first else 1)
    steps_in = input.size(1 if batch_first else 0)
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={batch})")
    if batch == 0 or lens.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if (np.diff(lens) > 0).any():
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
            "to sidestep this requirement if you do not need ONNX exportability.")
    steps = int(lens[0])
    if steps > steps_in:
        # PyTorch reads past the end of the input here; refuse instead.
        raise RuntimeError(f"lengths contains a length of {steps}, longer than the input's "
                           f"{steps_in} steps")
    active = np.arange(steps)[:, None] < lens[None, :]          # [T, B], time-major
    t_idx, b_idx = np.nonzero(active)
    flat = b_idx * steps_in + t_idx if batch_first else t_idx * batch + b_idx
    data = _gather(input.flatten(0, 1), flat, input.device)
    batch_sizes = ember.as_tensor(active.sum(1), dtype=ember.int64, device="cpu")
    return data, batch_sizes


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo ``pack_padded_sequence``: the padded batch (in the original order) and the
    lengths."""
    max_seq_length = sequence.batch_sizes.size(0)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             "sequence in input, but got "
                             f"total_length={total_length} and max sequence length being "
                             f"{max_seq_length}")
        max_seq_length = total_length
    data = sequence.data
    batch_sizes = np.asarray(sequence.batch_sizes.tolist(), dtype=np.int64)
    batch = int(batch_sizes[0])
    lens = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(1)
    rows = data.size(0)
    active = np.arange(max_seq_length)[:, None] < lens[None, :]   # [T, B]
    if batch_first:
        active = active.T
    # Packed row k is the k-th active (t, b) in time-major order; padding reads row `rows`.
    index = np.full(active.shape, rows, dtype=np.int64)
    if batch_first:
        index.T[active.T] = np.arange(rows)
    else:
        index[active] = np.arange(rows)
    pad = data.new_full((1,) + tuple(data.shape[1:]), padding_value)
    padded = _gather(ember.cat([data, pad]), index.ravel(), data.device)
    padded = padded.reshape(active.shape + tuple(data.shape[1:]))
    lengths = ember.as_tensor(lens, dtype=ember.int64)
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        return (padded.index_select(batch_dim, unsorted_indices),
                lengths[unsorted_indices.cpu()])
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack ``L_i x *`` sequences into ``T x B x *`` (``B x T x *`` with ``batch_first``),
    padded with ``padding_value`` on the right (or left)."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of "
                           f"type: {type(sequences)}".replace("ember", "torch"))
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    first = sequences[0]
    trailing = tuple(first.shape[1:])
    lens = np.asarray([s.size(0) for s in sequences], dtype=np.int64)
    # Like PyTorch, later sequences take the first one's dtype and broadcast to its trailing
    # shape.
    pieces = [s.to(first.dtype).expand((s.size(0),) + trailing) for s in sequences]
    pad = first.new_full((1,) + trailing, padding_value)
    rows = int(lens.sum())
    longest = int(lens.max())
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    position = np.arange(longest)[None, :]
    if padding_side == "left":
        position = position - (longest - lens)[:, None]
    source = np.where((position >= 0) & (position < lens[:, None]),
                      starts[:, None] + position, rows)              # [B, T]
    if not batch_first:
        source = source.T
    padded = _gather(ember.cat(pieces + [pad]), source.ravel(), first.device)
    return padded.reshape(source.shape + trailing)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into its sequences (a list of ``L_i x *`` tensors)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:length].clone()
            for seq, length in zip(padded_sequences, lengths.tolist(), strict=True)]


def pack_sequence(sequences, enforce_sorted=True):
    """``pack_padded_sequence(pad_sequence(sequences), lengths)``."""
    lengths = ember.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a ``PackedSequence`` holds, in their original order."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
