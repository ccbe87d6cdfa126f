"""DistributedSampler: PyTorch's indices, index for index, for every seed, epoch, replica count,
rank, padding and drop_last; PyTorch's errors; and the reason ``ember.randperm`` alone could not
give them (a different generator), checked rather than assumed."""
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as eud
from ember.utils.data.distributed import torch_randperm
from torch_compare import compare_error


@pytest.mark.parametrize("n", [0, 1, 2, 3, 10, 37, 100, 1000, 4099])
@pytest.mark.parametrize("seed", [0, 1, 42, 2 ** 31 + 7, 2 ** 40 + 3, -5])
def test_torch_randperm_matches_torch(n, seed):
    expected = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
    assert torch_randperm(n, seed).tolist() == expected


def test_torch_randperm_matches_torch_on_a_large_dataset():
    n = 200_003
    expected = torch.randperm(n, generator=torch.Generator().manual_seed(11)).numpy()
    assert (torch_randperm(n, 11) == expected).all()


def test_ember_randperm_is_a_different_stream_which_is_why_the_sampler_has_its_own():
    # Ember's generators are PCG64; torch's CPU generator is MT19937: same seed, other order.
    for seed in (0, 1, 2):
        ours = ember.randperm(50, generator=ember.Generator().manual_seed(seed)).tolist()
        theirs = torch.randperm(50, generator=torch.Generator().manual_seed(seed)).tolist()
        assert sorted(ours) == sorted(theirs) == list(range(50))
        assert ours != theirs


@pytest.mark.parametrize("n", [0, 1, 7, 10, 12, 33])
@pytest.mark.parametrize("num_replicas", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("drop_last", [False, True])
def test_indices_match_torch_for_every_rank(n, num_replicas, shuffle, drop_last):
    dataset = list(range(n))
    for rank in range(num_replicas):
        for seed in (0, 3):
            ours = eud.DistributedSampler(dataset, num_replicas, rank, shuffle=shuffle, seed=seed,
                                          drop_last=drop_last)
            theirs = tud.DistributedSampler(dataset, num_replicas, rank, shuffle=shuffle,
                                            seed=seed, drop_last=drop_last)
            assert (len(ours), ours.num_samples, ours.total_size) == \
                (len(theirs), theirs.num_samples, theirs.total_size)
            for epoch in (0, 1, 5):
                ours.set_epoch(epoch)
                theirs.set_epoch(epoch)
                assert list(ours) == list(theirs), (rank, seed, epoch)


def test_padding_repeats_the_order_when_replicas_outnumber_samples():
    # 3 samples over 8 replicas: the padding wraps round the order more than once.
    ours = [list(eud.DistributedSampler(range(3), 8, r, seed=2)) for r in range(8)]
    theirs = [list(tud.DistributedSampler(range(3), 8, r, seed=2)) for r in range(8)]
    assert ours == theirs


def test_drives_a_dataloader_like_torch():
    data = list(range(20))
    ours = eud.DataLoader(data, batch_size=3, sampler=eud.DistributedSampler(data, 2, 1, seed=9))
    theirs = tud.DataLoader(data, batch_size=3, sampler=tud.DistributedSampler(data, 2, 1, seed=9))
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]


def test_attributes_as_torch():
    ours = eud.DistributedSampler(range(10), 3, 2, shuffle=False, seed=4, drop_last=True)
    theirs = tud.DistributedSampler(range(10), 3, 2, shuffle=False, seed=4, drop_last=True)
    for name in ("num_replicas", "rank", "epoch", "drop_last", "num_samples", "total_size",
                 "shuffle", "seed"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert isinstance(ours, eud.Sampler)


@pytest.mark.parametrize("rank", [-1, 3, 4])
def test_invalid_rank_errors_as_torch(rank):
    compare_error(lambda lib: lib.utils.data.DistributedSampler(range(10), num_replicas=3,
                                                                rank=rank))


@pytest.mark.parametrize("kwargs", [{}, dict(num_replicas=2), dict(rank=0)])
def test_without_a_process_group_it_raises_torchs_error(kwargs):
    compare_error(lambda lib: lib.utils.data.DistributedSampler(range(10), **kwargs))
