"""``torch.utils.data`` per rank on 2 real ranks: ``DistributedSampler`` reads its rank and
world size from the default process group, and a ``DataLoader`` over it gives each rank its
own shard: disjoint across ranks, together the whole dataset (padded by repetition to equal
length as torch pads), reshuffled by ``set_epoch`` identically on every rank."""
from ranks import run_ranks

_BODY = """
import ember
import ember.distributed as dist
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("mpi")
rank, ws = dist.get_rank(), dist.get_world_size()
data = TensorDataset(ember.arange(11))

def shards(epoch, **kwargs):
    sampler = DistributedSampler(data, **kwargs)
    assert (sampler.num_replicas, sampler.rank) == (ws, rank)
    sampler.set_epoch(epoch)
    mine = [int(v) for (batch,) in DataLoader(data, batch_size=4, sampler=sampler)
            for v in batch]
    every = [None] * ws
    dist.all_gather_object(every, mine)
    return every

for epoch in (0, 1):
    every = shards(epoch)
    assert all(len(s) == 6 for s in every), every          # ceil(11 / 2), padded
    assert sorted(set(every[0]) | set(every[1])) == list(range(11)), every
    assert len(set(every[0]) & set(every[1])) == 1, every  # the one padding repeat
first, second = shards(0), shards(1)
assert first != second                                     # set_epoch reshuffles
every = shards(0, drop_last=True)
assert all(len(s) == 5 for s in every) and not set(every[0]) & set(every[1]), every
every = shards(0, shuffle=False)
assert every == [[0, 2, 4, 6, 8, 10], [1, 3, 5, 7, 9, 0]], every   # torch's strided split
dist.destroy_process_group()
print(f"PASS data rank{rank}")
"""


def test_distributed_sampler_and_dataloader_per_rank():
    job = run_ranks(_BODY, nprocs=2, timeout=120)
    assert "PASS data rank0" in job.stdout and "PASS data rank1" in job.stdout
