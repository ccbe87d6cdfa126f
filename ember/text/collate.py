"""Collating variable-length sequences into one padded batch, for ``DataLoader(collate_fn=...)``.

A batch item is a sequence (a 1-D or ``L x *`` tensor, a NumPy array or a list of ids), or a
tuple whose first element is the sequence and whose others (labels…) are collated by
``default_collate``. The result is ``(padded, lengths)``, with ``attention_mask`` after them when
asked for, then the other fields:

>>> padded, lengths = pad_collate([[5, 6, 7], [8]])
>>> padded.tolist(), lengths.tolist()
([[5, 6, 7], [8, 0, 0]], [3, 1])
"""
import numpy as np

__all__ = ["pad_collate", "PadCollate"]


def _as_sequence_tensor(item):
    from .._tensor import Tensor
    from ..ops.creation import as_tensor
    if isinstance(item, Tensor):
        return item
    array = np.asarray(item)
    if array.ndim == 0:
        raise TypeError(f"pad_collate: a batch item must be a sequence, got a scalar {item!r}")
    if array.dtype.kind in "iub":
        array = array.astype(np.int64)
    return as_tensor(array)


def pad_collate(batch, *, padding_value=0, batch_first=True, padding_side="right",
                return_attention_mask=False):
    """Pads ``batch``'s sequences to the longest (``nn.utils.rnn.pad_sequence``) and returns
    ``(padded, lengths[, attention_mask], *other_fields)``.

    ``padded`` is ``B x T x *`` (``T x B x *`` unless ``batch_first``); ``lengths`` an int64
    tensor of the true lengths; ``attention_mask`` (``B x T``, int64, 1 on real positions, as
    ``transformers`` models expect) follows ``padding_side``.
    """
    from ..nn.utils.rnn import pad_sequence
    from ..ops.creation import as_tensor
    from ..utils.data import default_collate
    batch = list(batch)
    if not batch:
        raise ValueError("pad_collate: the batch is empty")
    if isinstance(batch[0], tuple):
        width = len(batch[0])
        if any(not isinstance(item, tuple) or len(item) != width for item in batch):
            raise ValueError("pad_collate: every item of the batch must be a tuple of the same "
                             "length as the first")
        sequences = [_as_sequence_tensor(item[0]) for item in batch]
        rest = [default_collate([item[k] for item in batch]) for k in range(1, width)]
    else:
        sequences = [_as_sequence_tensor(item) for item in batch]
        rest = []
    lengths_np = np.asarray([s.shape[0] for s in sequences], dtype=np.int64)
    padded = pad_sequence(sequences, batch_first=batch_first, padding_value=padding_value,
                          padding_side=padding_side)
    out = [padded, as_tensor(lengths_np)]
    if return_attention_mask:
        longest = int(lengths_np.max())
        position = np.arange(longest)[None, :]
        if padding_side == "left":
            mask = position >= (longest - lengths_np)[:, None]
        else:
            mask = position < lengths_np[:, None]
        out.append(as_tensor(mask.astype(np.int64)).to(padded.device))
    return tuple(out + rest)


class PadCollate:
    """``pad_collate`` with its options fixed: ``DataLoader(ds, collate_fn=PadCollate(...))``.
    A class rather than a lambda so that worker processes can unpickle it."""

    def __init__(self, padding_value=0, batch_first=True, padding_side="right",
                 return_attention_mask=False):
        self.padding_value = padding_value
        self.batch_first = batch_first
        self.padding_side = padding_side
        self.return_attention_mask = return_attention_mask

    def __call__(self, batch):
        return pad_collate(batch, padding_value=self.padding_value,
                           batch_first=self.batch_first, padding_side=self.padding_side,
                           return_attention_mask=self.return_attention_mask)

    def __repr__(self):
        return (f"PadCollate(padding_value={self.padding_value}, batch_first={self.batch_first}, "
                f"padding_side='{self.padding_side}', "
                f"return_attention_mask={self.return_attention_mask})")
