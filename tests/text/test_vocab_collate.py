"""ember.text's sequence utilities: Vocab / build_vocab_from_iterator with torchtext's rules,
pad_collate against torch's pad_sequence, and BucketBatchSampler (every index once per epoch,
batches of similar lengths, reproducible under a generator, usable by DataLoader)."""
import collections

import numpy as np
import pytest
import torch

import ember
from ember.text import (BucketBatchSampler, PadCollate, Vocab, build_vocab_from_iterator,
                        pad_collate, vocab)
from ember.utils.data import DataLoader, Dataset


def _token_lists(rng, n=40):
    words = [f"w{i}" for i in range(30)]
    # Zipf-like frequencies so counts differ and ties happen.
    p = 1.0 / np.arange(1, 31)
    return [list(rng.choice(words, size=int(rng.integers(1, 10)), p=p / p.sum()))
            for _ in range(n)]


def _expected_itos(lists, min_freq, specials, special_first, max_tokens):
    # torchtext's documented rule, written out directly.
    counts = collections.Counter(t for tokens in lists for t in tokens)
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if max_tokens is not None:
        ordered = ordered[:max_tokens - len(specials)]
    kept = [t for t, c in ordered if c >= min_freq and t not in specials]
    return specials + kept if special_first else kept + specials


@pytest.mark.parametrize("min_freq,specials,special_first,max_tokens", [
    (1, [], True, None), (2, ["<unk>", "<pad>"], True, None), (3, ["<unk>"], False, None),
    (1, ["<unk>", "w0"], True, 8), (1, ["<pad>"], False, 5)])
def test_build_vocab_follows_torchtext(min_freq, specials, special_first, max_tokens):
    lists = _token_lists(np.random.default_rng(min_freq + len(specials)))
    v = build_vocab_from_iterator(iter(lists), min_freq=min_freq, specials=specials,
                                  special_first=special_first, max_tokens=max_tokens)
    itos = _expected_itos(lists, min_freq, specials, special_first, max_tokens)
    assert v.get_itos() == itos and len(v) == len(itos)
    assert v.get_stoi() == {t: i for i, t in enumerate(itos)}
    assert all(t in v for t in itos) and "never-seen" not in v
    assert v.lookup_indices(itos[::-1]) == list(range(len(itos)))[::-1]
    assert v.lookup_tokens(list(range(len(itos)))) == itos


def test_vocab_default_index_and_edits():
    v = vocab(collections.OrderedDict([("a", 3), ("b", 1), ("c", 2)]), min_freq=2,
              specials=["<unk>"])
    assert v.get_itos() == ["<unk>", "a", "c"]
    with pytest.raises(RuntimeError, match="not found and default index is not set"):
        v["zzz"]
    v.set_default_index(v["<unk>"])
    assert v["zzz"] == 0 and v(["a", "zzz", "c"]) == [1, 0, 2] and v.get_default_index() == 0
    v.insert_token("b", 1)
    assert v.get_itos() == ["<unk>", "b", "a", "c"] and v["c"] == 3
    v.append_token("d")
    assert v["d"] == 4
    with pytest.raises(RuntimeError, match="already exists"):
        v.append_token("a")
    with pytest.raises(RuntimeError, match="out of bounds"):
        v.lookup_token(10)
    assert v.lookup_tokens(ember.tensor([1, 4])) == ["b", "d"]
    with pytest.raises(ValueError, match="max_tokens"):
        build_vocab_from_iterator([["a"]], specials=["x", "y"], max_tokens=2)
    assert Vocab(["x", "y"]) == Vocab(["x", "y"]) and Vocab(["x"]) != Vocab(["y"])


@pytest.mark.parametrize("batch_first,padding_side", [(True, "right"), (False, "right"),
                                                       (True, "left")])
def test_pad_collate_matches_pad_sequence(batch_first, padding_side):
    rng = np.random.default_rng(0)
    seqs = [rng.integers(1, 50, size=int(n)) for n in rng.integers(1, 9, size=6)]
    labels = rng.integers(0, 3, size=6)
    padded, lengths, mask, collated_labels = pad_collate(
        [(s, int(y)) for s, y in zip(seqs, labels)], padding_value=-1, batch_first=batch_first,
        padding_side=padding_side, return_attention_mask=True)
    ref = torch.nn.utils.rnn.pad_sequence([torch.from_numpy(s) for s in seqs],
                                          batch_first=batch_first, padding_value=-1,
                                          padding_side=padding_side)
    np.testing.assert_array_equal(padded.numpy(), ref.numpy())
    assert padded.dtype == ember.int64
    np.testing.assert_array_equal(lengths.numpy(), [len(s) for s in seqs])
    batch_major = ref.numpy() if batch_first else ref.numpy().T
    np.testing.assert_array_equal(mask.numpy(), (batch_major != -1).astype(np.int64))
    np.testing.assert_array_equal(collated_labels.numpy(), labels)


def test_pad_collate_float_features_and_errors():
    rng = np.random.default_rng(1)
    seqs = [ember.tensor(rng.standard_normal((int(n), 3)).astype(np.float32)) for n in (4, 2, 3)]
    padded, lengths = PadCollate(padding_value=0.5)(seqs)
    ref = torch.nn.utils.rnn.pad_sequence([torch.from_numpy(s.numpy()) for s in seqs],
                                          batch_first=True, padding_value=0.5)
    np.testing.assert_allclose(padded.numpy(), ref.numpy())
    assert lengths.tolist() == [4, 2, 3]
    with pytest.raises(ValueError, match="empty"):
        pad_collate([])
    with pytest.raises(TypeError, match="scalar"):
        pad_collate([3, 4])


def test_bucket_sampler_covers_every_index_once_with_similar_lengths():
    rng = np.random.default_rng(2)
    lengths = rng.integers(1, 200, size=203)
    sampler = BucketBatchSampler(lengths, batch_size=8, bucket_size_multiplier=5,
                                 generator=ember.Generator().manual_seed(0))
    epoch = list(sampler)
    assert len(epoch) == len(sampler) == 26
    assert sorted(i for batch in epoch for i in batch) == list(range(203))
    assert sum(len(b) < 8 for b in epoch) == 1
    # Batches cut from sorted buckets spread far less than random batches do.
    spread = np.mean([np.ptp(lengths[b]) for b in epoch if len(b) == 8])
    random_spread = np.mean([np.ptp(lengths[rng.permutation(203)[:8]]) for _ in range(50)])
    assert spread < random_spread / 3
    # A seeded generator repeats its epochs; the next epoch differs.
    again = list(BucketBatchSampler(lengths, 8, 5, generator=ember.Generator().manual_seed(0)))
    assert again == epoch and list(sampler) != epoch
    dropped = BucketBatchSampler(lengths, 8, 5, drop_last=True)
    assert all(len(b) == 8 for b in dropped) and len(list(dropped)) == len(dropped) == 25
    ordered = list(BucketBatchSampler(lengths, 8, 5, shuffle=False))
    assert [i for b in ordered for i in b][:8] == sorted(range(40), key=lambda i: lengths[i])[:8]
    with pytest.raises(ValueError, match="batch_size"):
        BucketBatchSampler(lengths, 0)


def test_bucket_sampler_drives_a_dataloader():
    rng = np.random.default_rng(3)
    seqs = [rng.integers(1, 9, size=int(n)) for n in rng.integers(1, 12, size=30)]

    class Sequences(Dataset):
        def __len__(self):
            return len(seqs)

        def __getitem__(self, i):
            return ember.tensor(seqs[i]), i

    loader = DataLoader(Sequences(), batch_sampler=BucketBatchSampler(
        [len(s) for s in seqs], batch_size=4, bucket_size_multiplier=2),
        collate_fn=PadCollate(return_attention_mask=True))
    seen = []
    for padded, lengths, mask, index in loader:
        assert padded.shape == (len(index), int(lengths.max()))
        assert mask.sum().item() == lengths.sum().item()
        for row, i in enumerate(index.tolist()):
            np.testing.assert_array_equal(padded[row, :len(seqs[i])].numpy(), seqs[i])
        seen.extend(index.tolist())
    assert sorted(seen) == list(range(30))
