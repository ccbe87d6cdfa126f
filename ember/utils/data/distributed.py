"""``DistributedSampler``: each of ``num_replicas`` processes gets its own share of a dataset,
as ``torch.utils.data.distributed``.

The shuffled order is PyTorch's own, index for index: PyTorch draws it with
``torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch))``, and a script
that mixes Ember and PyTorch processes, or resumes a PyTorch run, must see the same shards.
``ember.randperm`` cannot give it: Ember's generators are PCG64 streams, PyTorch's CPU
generator is a Mersenne Twister (MT19937, seeded with the seed's low 32 bits by the reference
``init_genrand``) and its ``randperm`` is a Fisher-Yates shuffle that swaps position ``i`` with
``i + random() % (n - i)``. ``torch_randperm`` below reproduces exactly that: NumPy's legacy
``RandomState`` is the same MT19937 with the same seeding, and its full-range ``uint32`` draws
are the raw outputs. The shuffle itself is sequential, so it is not run swap by swap in Python:
it is resolved with whole-array operations (see ``torch_randperm``).
"""
import math

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler"]

# PyTorch switches to another shuffle (on 64-bit draws) from this many elements on.
_TORCH_RANDPERM_SMALL_N = 0xffff_ffff // 20


def torch_randperm(n, seed):
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed))`` as a NumPy array.

    Step ``i`` of the shuffle swaps positions ``i`` and ``t_i = i + z_i``. Position ``p`` is
    written only by step ``p`` and by the steps ``m < p`` with ``t_m = p``, so the value
    position ``k`` holds just before step ``k`` is ``before[k] = before[m]`` for the last such
    step ``m`` (it moved position ``m``'s value there), or ``k`` itself if there is none:
    chains of links resolved by pointer jumping. Step ``i`` then fixes ``out[i]``: ``before[i]``
    if ``z_i = 0``, otherwise what position ``t_i`` holds at that time, ``before[m]`` of the
    last earlier step ``m`` with the same target, or ``t_i`` itself if there is none.
    """
    if n >= _TORCH_RANDPERM_SMALL_N:
        raise NotImplementedError(
            f"DistributedSampler reproduces torch.randperm's order for datasets of fewer than "
            f"{_TORCH_RANDPERM_SMALL_N} samples; PyTorch shuffles {n} with another algorithm "
            "that Ember does not implement")
    if n <= 1:
        return np.zeros(n, dtype=np.int64)
    draws = np.random.RandomState(seed & 0xffff_ffff).randint(0, 2 ** 32, size=n - 1,
                                                             dtype=np.uint32)
    steps = np.arange(n - 1, dtype=np.int64)
    targets = steps + draws.astype(np.int64) % (n - steps)
    moving = targets != steps
    move_steps, move_targets = steps[moving], targets[moving]

    last_writer = np.full(n, -1, dtype=np.int64)
    np.maximum.at(last_writer, move_targets, move_steps)
    before = np.where(last_writer >= 0, last_writer, np.arange(n, dtype=np.int64))
    while True:
        jumped = before[before]
        if np.array_equal(jumped, before):
            break
        before = jumped

    out = before.copy()
    # The moving steps grouped by target, in step order within a group.
    order = np.argsort(move_targets * n + move_steps)
    group_targets, group_steps = move_targets[order], move_steps[order]
    has_earlier = np.zeros(len(order), dtype=bool)
    has_earlier[1:] = group_targets[1:] == group_targets[:-1]
    earlier = np.roll(group_steps, 1)
    out[group_steps] = np.where(has_earlier, before[earlier], group_targets)
    return out


class DistributedSampler(Sampler):
    """The indices of ``dataset`` for process ``rank`` of ``num_replicas``, as
    ``torch.utils.data.DistributedSampler``: every ``num_replicas``-th index of one order
    shared by all processes (PyTorch's shuffle for ``seed + epoch``, or ``0..n-1``), padded by
    repeating its start so all shares are equally long, or cut short with ``drop_last``.
    Call ``set_epoch`` before each epoch for a new order.

    ``num_replicas`` and ``rank`` default to the process group's world size and rank, so
    without a process group they must be given.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            from ... import distributed as dist
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas)
                                         / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = torch_randperm(n, self.seed + self.epoch).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match total_size "
                                 f"({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not match "
                                 f"num_samples ({self.num_samples})")
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Use the order of ``seed + epoch`` from the next iteration on."""
        self.epoch = epoch
