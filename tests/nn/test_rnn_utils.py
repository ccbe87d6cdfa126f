"""``nn.utils.rnn`` against PyTorch: packing, padding and their inverses (values, batch sizes,
index tensors, gradients), ``PackedSequence`` as a named tuple with ``to()`` and friends, the
errors, and the round-trip laws as property tests."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import ember
from torch_compare import assert_same, compare_error


def _randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _packed_fields(packed):
    return [packed.data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices]


def _with_grad(fn, arrays, seed=1):
    """A function of ``lib`` running ``fn(lib, *leaves)`` then backward of a weighted sum of
    its tensor results; returns results and the leaves' gradients."""
    def run(lib):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        results = fn(lib, *leaves)
        rng = np.random.default_rng(seed)
        loss = 0
        for r in results:
            if r is not None and r.dtype.is_floating_point and r.requires_grad:
                loss = loss + (r * lib.tensor(rng.standard_normal(tuple(r.shape))
                                              .astype(np.float32))).sum()
        loss.backward()
        return list(results) + [leaf.grad for leaf in leaves]
    return run


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,enforce_sorted", [([5, 3, 3, 1], True), ([2, 5, 1, 4], False),
                                                    ([4, 4, 4, 4], True), ([3, 1, 2, 2], False)])
@pytest.mark.parametrize("trailing", [(), (2,), (2, 3)])
def test_pack_padded_sequence_matches_torch(batch_first, lengths, enforce_sorted, trailing):
    shape = (4, 6) if batch_first else (6, 4)
    x = _randn(*shape, *trailing)

    def fn(lib, x):
        packed = lib.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=batch_first,
                                                       enforce_sorted=enforce_sorted)
        assert isinstance(packed, lib.nn.utils.rnn.PackedSequence)
        return _packed_fields(packed)
    run = _with_grad(fn, [x])
    assert_same(run(torch), run(ember))


def test_pack_padded_sequence_accepts_tensor_lengths():
    x = _randn(3, 3, 2)
    for lengths in ([3, 2, 1], (3, 2, 1)):
        assert_same(_packed_fields(torch.nn.utils.rnn.pack_padded_sequence(
            torch.tensor(x), torch.tensor(lengths))),
            _packed_fields(ember.nn.utils.rnn.pack_padded_sequence(
                ember.tensor(x), ember.tensor(lengths))))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
@pytest.mark.parametrize("padding_value,total_length", [(0.0, None), (-7.5, 8)])
def test_pad_packed_sequence_matches_torch(batch_first, enforce_sorted, padding_value,
                                           total_length):
    lengths = [6, 4, 4, 1] if enforce_sorted else [4, 1, 6, 4]
    x = _randn(6, 4, 3)

    def fn(lib, x):
        rnn_utils = lib.nn.utils.rnn
        packed = rnn_utils.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
        packed = rnn_utils.PackedSequence(packed.data * 2, packed.batch_sizes,
                                          packed.sorted_indices, packed.unsorted_indices)
        padded, out_lengths = rnn_utils.pad_packed_sequence(
            packed, batch_first=batch_first, padding_value=padding_value,
            total_length=total_length)
        return padded, out_lengths
    run = _with_grad(fn, [x])
    assert_same(run(torch), run(ember))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("padding_value", [0.0, 2.5])
@pytest.mark.parametrize("trailing", [(), (3,), (2, 2)])
def test_pad_sequence_matches_torch(batch_first, padding_side, padding_value, trailing):
    arrays = [_randn(n, *trailing, seed=n) for n in (3, 5, 1, 5)]

    def fn(lib, *seqs):
        return [lib.nn.utils.rnn.pad_sequence(list(seqs), batch_first=batch_first,
                                              padding_value=padding_value,
                                              padding_side=padding_side)]
    run = _with_grad(fn, arrays)
    assert_same(run(torch), run(ember))


def test_pad_sequence_takes_first_dtype_and_any_iterable():
    def fn(lib):
        seqs = (lib.ones(2, 3), lib.ones(3, 3, dtype=lib.float64), lib.ones(1, 3))
        return [lib.nn.utils.rnn.pad_sequence(iter(seqs)),
                lib.nn.utils.rnn.pad_sequence(lib.ones(2, 4)),
                lib.nn.utils.rnn.pad_sequence([lib.tensor([1, 2]), lib.tensor([3])],
                                              padding_value=-1)]
    assert_same(fn(torch), fn(ember))


@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pack_and_unpack_sequence_match_torch(enforce_sorted):
    lengths = [5, 3, 2] if enforce_sorted else [2, 5, 3]
    arrays = [_randn(n, 2, seed=n) for n in lengths]

    def fn(lib, *seqs):
        packed = lib.nn.utils.rnn.pack_sequence(list(seqs), enforce_sorted=enforce_sorted)
        return _packed_fields(packed) + lib.nn.utils.rnn.unpack_sequence(packed)
    run = _with_grad(fn, arrays)
    assert_same(run(torch), run(ember))


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence_matches_torch(batch_first):
    x = _randn(5, 3, 2)
    lengths = [2, 5, 3]

    def fn(lib, x):
        padded = x.transpose(0, 1) if batch_first else x * 1
        return lib.nn.utils.rnn.unpad_sequence(padded, lib.tensor(lengths),
                                               batch_first=batch_first)
    run = _with_grad(fn, [x])
    assert_same(run(torch), run(ember))


def test_invert_permutation_and_packed_sequence_construction():
    def fn(lib):
        rnn_utils = lib.nn.utils.rnn
        data, sizes = lib.arange(6.0), lib.tensor([3, 2, 1])
        a = rnn_utils.PackedSequence(data, sizes, lib.tensor([2, 0, 1]))
        b = rnn_utils.PackedSequence((data, sizes))
        return [rnn_utils.invert_permutation(lib.tensor([3, 0, 2, 1])),
                rnn_utils.invert_permutation(None), *_packed_fields(a), *_packed_fields(b)]
    assert_same(fn(torch), fn(ember))


def test_packed_sequence_is_a_named_tuple_with_conversions():
    packed = ember.nn.utils.rnn.pack_sequence([ember.ones(3), ember.ones(2)])
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert packed._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert packed.data is data and sorted_indices is None and unsorted_indices is None
    assert batch_sizes.dtype == ember.int64 and batch_sizes.tolist() == [2, 2, 1]
    assert packed.to(ember.float32) is packed
    assert packed.cpu() is packed
    assert packed.double().data.dtype == ember.float64
    assert packed.to(dtype=ember.float64).batch_sizes is packed.batch_sizes
    assert packed.long().data.dtype == ember.int64
    assert packed.half().data.dtype == ember.float16
    assert packed.is_cuda is False
    assert repr(packed).startswith("PackedSequence(data=tensor(")
    unsorted = ember.nn.utils.rnn.pack_sequence([ember.ones(2), ember.ones(3)],
                                                enforce_sorted=False)
    moved = unsorted.to("testdev")
    assert moved.data.device.type == "testdev"
    assert moved.sorted_indices.device.type == "testdev"
    assert moved.batch_sizes.device.type == "cpu"


def test_rnn_output_feeds_back_through_packing_gradients():
    """Gradient reaches the padded input through pack -> LSTM -> pad."""
    def fn(lib, x):
        torch.manual_seed(0)
        lstm = torch.nn.LSTM(2, 3)
        if lib is ember:
            module = ember.nn.LSTM(2, 3)
            module.load_state_dict({k: ember.tensor(v.detach().numpy())
                                    for k, v in lstm.state_dict().items()})
            lstm = module
        packed = lib.nn.utils.rnn.pack_padded_sequence(x, [1, 4, 2], enforce_sorted=False)
        out, _ = lstm(packed)
        return list(lib.nn.utils.rnn.pad_packed_sequence(out, padding_value=9.0))
    run = _with_grad(fn, [_randn(4, 3, 2)])
    assert_same(run(torch), run(ember), rtol=2e-5, atol=2e-6)


ERROR_CASES = [
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.randn(4, 3, 2), [3, 4, 2]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.randn(4, 3, 2), [3, 0, 0]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.randn(4, 3, 2), [4, 3]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.randn(4, 3, 2), [4, 3, -1]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.randn(4, 3, 2), [[4, 3, 1]]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.randn(4), [4]),
    lambda lib: lib.nn.utils.rnn.pack_sequence([lib.ones(2), lib.ones(3)]),
    lambda lib: lib.nn.utils.rnn.pad_sequence([]),
    lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2, 3), lib.ones(3, 3)],
                                              padding_side="up"),
    lambda lib: lib.nn.utils.rnn.pad_sequence(5),
    lambda lib: lib.nn.utils.rnn.pad_packed_sequence(
        lib.nn.utils.rnn.pack_sequence([lib.ones(4), lib.ones(2)]), total_length=3),
    lambda lib: lib.nn.utils.rnn.PackedSequence(lib.ones(3)),
]


@pytest.mark.parametrize("case", range(len(ERROR_CASES)))
def test_errors_match_torch(case):
    compare_error(ERROR_CASES[case])


def test_lengths_longer_than_input_are_refused():
    # PyTorch reads past the end of its input here; Ember raises instead.
    with pytest.raises(RuntimeError, match="longer than the input"):
        ember.nn.utils.rnn.pack_padded_sequence(ember.randn(4, 3, 2), [5, 3, 2])


@settings(max_examples=25, deadline=None)
@given(lengths=st.lists(st.integers(1, 6), min_size=1, max_size=5), batch_first=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_round_trips(lengths, batch_first, seed):
    """pad(pack(x)) recovers x inside the lengths; unpack(pack(seqs)) recovers the sequences;
    the packed data holds every element once; batch_sizes sum to the total length."""
    rng = np.random.default_rng(seed)
    seqs = [ember.tensor(rng.standard_normal((n, 2)).astype(np.float32)) for n in lengths]
    rnn_utils = ember.nn.utils.rnn
    padded = rnn_utils.pad_sequence(seqs, batch_first=batch_first)
    packed = rnn_utils.pack_padded_sequence(padded, lengths, batch_first=batch_first,
                                            enforce_sorted=False)
    assert int(packed.batch_sizes.sum()) == sum(lengths) == packed.data.shape[0]
    again, out_lengths = rnn_utils.pad_packed_sequence(packed, batch_first=batch_first)
    assert out_lengths.tolist() == lengths
    np.testing.assert_array_equal(again.numpy(), padded.numpy())
    for original, recovered in zip(seqs, rnn_utils.unpack_sequence(packed)):
        np.testing.assert_array_equal(original.numpy(), recovered.numpy())
    for original, recovered in zip(seqs, rnn_utils.unpad_sequence(again, out_lengths,
                                                                  batch_first=batch_first)):
        np.testing.assert_array_equal(original.numpy(), recovered.numpy())
