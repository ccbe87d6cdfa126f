"""``BucketBatchSampler``: batches of sequences of similar length, so that padding wastes
little. Use it as ``DataLoader(dataset, batch_sampler=BucketBatchSampler(lengths, 32),
collate_fn=PadCollate())``.

Each epoch the keys are shuffled (with ``shuffle``), cut into buckets of
``batch_size * bucket_size_multiplier``, each bucket is sorted by length and cut into batches,
and the order of the batches is shuffled. Every key appears exactly once per epoch; only one
batch, the last bucket's longest, can be short (``drop_last`` drops it), so there are as many
batches as ``BatchSampler`` makes.
"""
import numpy as np

from ..utils.data.sampler import Sampler, _fresh_generator

__all__ = ["BucketBatchSampler"]


class BucketBatchSampler(Sampler):
    """Yields lists of dataset keys whose ``lengths`` are close.

    ``lengths``: the length of each item (a list, array or 1-D tensor). ``generator``: an
    ``ember.Generator`` for the shuffles (default: drawn from ``ember.manual_seed``'s stream).
    """

    def __init__(self, lengths, batch_size, bucket_size_multiplier=100, shuffle=True,
                 drop_last=False, generator=None):
        if hasattr(lengths, "tolist"):
            lengths = lengths.tolist()
        self.lengths = np.asarray(lengths, dtype=np.int64)
        if self.lengths.ndim != 1:
            raise ValueError(f"lengths should be one length per item, got shape "
                             f"{tuple(self.lengths.shape)}")
        for name, value in (("batch_size", batch_size),
                            ("bucket_size_multiplier", bucket_size_multiplier)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} should be a positive integer value, but got "
                                 f"{name}={value}")
        for name, value in (("shuffle", shuffle), ("drop_last", drop_last)):
            if not isinstance(value, bool):
                raise ValueError(f"{name} should be a boolean value, but got {name}={value}")
        self.batch_size = batch_size
        self.bucket_size_multiplier = bucket_size_multiplier
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.generator = generator

    def _permutation(self, n, generator):
        from ..ops.creation import randperm
        return randperm(n, generator=generator).numpy()

    def __iter__(self):
        n = len(self.lengths)
        if n == 0:
            return
        generator = None
        if self.shuffle:
            generator = self.generator if self.generator is not None else _fresh_generator()
            order = self._permutation(n, generator)
        else:
            order = np.arange(n)
        bucket = self.batch_size * self.bucket_size_multiplier
        batches = []
        for start in range(0, n, bucket):
            keys = order[start:start + bucket]
            # A stable sort keeps equal lengths in their (shuffled) order.
            keys = keys[np.argsort(self.lengths[keys], kind="stable")]
            batches.extend(keys[i:i + self.batch_size] for i in range(0, len(keys),
                                                                      self.batch_size))
        if self.drop_last and len(batches[-1]) < self.batch_size:
            batches.pop()
        if self.shuffle and batches:
            batches = [batches[i] for i in self._permutation(len(batches), generator)]
        for batch in batches:
            yield batch.tolist()

    def __len__(self):
        n = len(self.lengths)
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size
