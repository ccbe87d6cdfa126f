"""Datasets and samplers against torch.utils.data; random orders against themselves
(Ember's random streams differ from PyTorch's by design)."""
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as eud


def _tensor(lib, array):
    return lib.from_numpy(np.asarray(array))


def test_tensor_dataset_matches_torch():
    x, y = np.arange(12.0).reshape(6, 2), np.arange(6)
    for lib, ud in ((torch, tud), (ember, eud)):
        ds = ud.TensorDataset(_tensor(lib, x), _tensor(lib, y))
        assert len(ds) == 6
        row = ds[4]
        np.testing.assert_array_equal(np.asarray(row[0]), x[4])
        assert int(row[1]) == 4
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        eud.TensorDataset(ember.zeros(3), ember.zeros(4))


def test_concat_chain_subset_stack_match_torch():
    def build(ud):
        a, b = list(range(5)), list(range(10, 13))

        class Map(ud.Dataset):
            def __init__(self, items):
                self.items = items

            def __len__(self):
                return len(self.items)

            def __getitem__(self, i):
                return self.items[i]

        class Stream(ud.IterableDataset):
            def __init__(self, items):
                self.items = items

            def __iter__(self):
                return iter(self.items)

            def __len__(self):
                return len(self.items)

        cat = ud.ConcatDataset([Map(a), Map(b)])
        added = Map(a) + Map(b)
        chain = ud.ChainDataset([Stream(a), Stream(b)])
        sub = ud.Subset(cat, [7, 0, 3])
        stacked = ud.StackDataset(Map(a), Map([x * 2 for x in a]))
        named = ud.StackDataset(p=Map(a), q=Map(a))
        return ([cat[i] for i in range(len(cat))], cat[-1], cat.cumulative_sizes, len(added),
                list(chain), len(chain), list(Stream(a) + Stream(b)), [sub[i] for i in range(3)],
                sub.__getitems__([0, 2]), stacked[3], stacked.__getitems__([1, 2]), named[2],
                named.__getitems__([0]), len(stacked))
    assert build(eud) == build(tud)


@pytest.mark.parametrize("make", [
    lambda ud: ud.ConcatDataset([]),
    lambda ud: ud.ConcatDataset([[1, 2]])[-5],
    lambda ud: ud.StackDataset([1], [1, 2]),
    lambda ud: ud.StackDataset(),
    lambda ud: ud.StackDataset([1], b=[1]),
    lambda ud: ud.Dataset()[0],
    lambda ud: list(ud.ChainDataset([[1, 2]])),
])
def test_dataset_errors_match_torch(make):
    with pytest.raises(Exception) as expected:
        make(tud)
    with pytest.raises(Exception) as actual:
        make(eud)
    assert type(actual.value) is type(expected.value)
    assert str(actual.value) == str(expected.value)


def test_subset_overriding_getitem_only_raises_as_torch():
    for ud in (tud, eud):
        class Doubled(ud.Subset):
            def __getitem__(self, i):
                return 2 * super().__getitem__(i)
        with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
            Doubled([1, 2], [0])


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.33, 0.33, 0.34], [0.5, 0.5, 0.0]])
def test_random_split_lengths_as_torch_and_deterministic(lengths):
    data = list(range(10))
    with warnings.catch_warnings(record=True) as torch_warned:
        warnings.simplefilter("always")
        expected = tud.random_split(data, lengths, generator=torch.Generator().manual_seed(0))
    with warnings.catch_warnings(record=True) as ember_warned:
        warnings.simplefilter("always")
        got = eud.random_split(data, lengths, generator=ember.Generator().manual_seed(0))
    assert [len(s) for s in got] == [len(s) for s in expected]
    assert [str(w.message) for w in ember_warned] == [str(w.message) for w in torch_warned]
    assert sorted(i for s in got for i in s) == data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = eud.random_split(data, lengths, generator=ember.Generator().manual_seed(0))
    assert [list(s) for s in again] == [list(s) for s in got]


@pytest.mark.parametrize("lengths", [[3, 3], [0.5, 0.6], [1.2, -0.2]])
def test_random_split_errors_as_torch(lengths):
    with pytest.raises(ValueError) as expected:
        tud.random_split(list(range(10)), lengths)
    with pytest.raises(ValueError) as actual:
        eud.random_split(list(range(10)), lengths)
    assert str(actual.value) == str(expected.value)


def test_sequential_and_batch_sampler_match_torch():
    for batch_size in (1, 3, 4, 10, 11):
        for drop_last in (False, True):
            got = eud.BatchSampler(eud.SequentialSampler(range(10)), batch_size, drop_last)
            expected = tud.BatchSampler(tud.SequentialSampler(range(10)), batch_size, drop_last)
            assert list(got) == list(expected)
            assert len(got) == len(expected)


@pytest.mark.parametrize("make", [
    lambda ud: ud.BatchSampler(range(3), 0, False),
    lambda ud: ud.BatchSampler(range(3), True, False),
    lambda ud: ud.BatchSampler(range(3), 2, 1),
    lambda ud: ud.RandomSampler(range(3), replacement=1),
    lambda ud: ud.RandomSampler(range(3), num_samples=0),
    lambda ud: ud.RandomSampler([]),
    lambda ud: ud.WeightedRandomSampler([1.0], 0),
    lambda ud: ud.WeightedRandomSampler([1.0], 2, replacement=None),
    lambda ud: ud.WeightedRandomSampler([[1.0]], 2),
])
def test_sampler_errors_match_torch(make):
    with pytest.raises(Exception) as expected:
        make(tud)
    with pytest.raises(Exception) as actual:
        make(eud)
    assert type(actual.value) is type(expected.value)
    assert str(actual.value) == str(expected.value)


def _seeded(seed):
    return ember.Generator().manual_seed(seed)


def test_random_sampler_is_a_permutation_and_deterministic():
    order = list(eud.RandomSampler(range(20), generator=_seeded(3)))
    assert sorted(order) == list(range(20))
    assert order == list(eud.RandomSampler(range(20), generator=_seeded(3)))
    assert order != list(eud.RandomSampler(range(20), generator=_seeded(4)))
    # Unseeded sampling follows ember.manual_seed, as PyTorch's follows torch.manual_seed.
    ember.manual_seed(7)
    first = list(eud.RandomSampler(range(20)))
    ember.manual_seed(7)
    assert list(eud.RandomSampler(range(20))) == first


def test_random_sampler_num_samples_and_replacement():
    more = list(eud.RandomSampler(range(5), num_samples=13, generator=_seeded(0)))
    assert len(more) == 13 and sorted(more[:5]) == sorted(more[5:10]) == list(range(5))
    drawn = eud.RandomSampler(range(5), replacement=True, num_samples=70, generator=_seeded(0))
    assert len(drawn) == 70 and len(list(drawn)) == 70 and set(drawn) <= set(range(5))
    assert list(drawn) != list(drawn)  # the generator moves on between epochs
    assert len(eud.RandomSampler(range(5), num_samples=13)) == len(tud.RandomSampler(range(5), num_samples=13))


def test_subset_and_weighted_samplers():
    indices = [3, 9, 27, 81]
    order = list(eud.SubsetRandomSampler(indices, generator=_seeded(1)))
    assert sorted(order) == indices and order == list(eud.SubsetRandomSampler(indices, generator=_seeded(1)))
    weighted = eud.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200, generator=_seeded(2))
    drawn = list(weighted)
    assert len(drawn) == len(weighted) == 200 and set(drawn) == {1, 3}
    assert 100 < drawn.count(3) < 190
    assert weighted.weights.dtype == ember.float64
    unique = list(eud.WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False, generator=_seeded(2)))
    assert sorted(unique) == [0, 1, 2]
