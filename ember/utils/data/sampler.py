"""Samplers: iterables of dataset keys (or of lists of keys), as ``torch.utils.data.sampler``.
Random samplers draw from an ``ember.Generator``, so one seed gives one order."""
import itertools

from ... import _dtype as dt
from ..._random import Generator
from ...ops.creation import as_tensor, empty, multinomial, randint, randperm

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


class Sampler:
    """Base class: subclasses define ``__iter__`` (and ``__len__`` where the length is known)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _fresh_generator():
    """A generator seeded from the default stream, so that unseeded sampling still follows
    ``ember.manual_seed``."""
    seed = int(empty((), dtype=dt.int64).random_().item())
    return Generator().manual_seed(seed)


class RandomSampler(Sampler):
    """A permutation of the dataset's keys (repeated for ``num_samples`` beyond its length), or
    ``num_samples`` keys drawn with replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        # The dataset may grow or shrink between epochs.
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            # Drawn in chunks so that a huge num_samples needs no huge tensor.
            for _ in range(self.num_samples // 32):
                yield from randint(high=n, size=(32,), dtype=dt.int64, generator=generator).tolist()
            yield from randint(high=n, size=(self.num_samples % 32,), dtype=dt.int64,
                               generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator).tolist()
            yield from randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given keys in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` keys drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = as_tensor(weights, dtype=dt.float64)
        if len(weights.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given "
                             f"weights have shape {tuple(weights.shape)}")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        drawn = multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from iter(drawn.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's keys into lists of ``batch_size``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        keys = iter(self.sampler)
        if self.drop_last:
            # zip over one iterator repeated stops at the first incomplete batch.
            for batch in zip(*[keys] * self.batch_size):
                yield [*batch]
        else:
            batch = [*itertools.islice(keys, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(keys, self.batch_size)]

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
