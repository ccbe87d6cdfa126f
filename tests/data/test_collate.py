"""default_collate and default_convert against PyTorch's: result types, dtypes, values and
errors."""
import collections

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as eud
from torch_compare import assert_same

Point = collections.namedtuple("Point", "x y")


def _samples(lib):
    """A batch of samples built from the same NumPy data for either library."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    return [
        {"tensor": lib.from_numpy(a.copy()), "array": a, "float": 0.5 * i, "int": i,
         "bool": i % 2 == 0, "str": f"s{i}", "bytes": b"b%d" % i,
         "np_scalar": np.float32(i), "np_int": np.int16(i), "np_bool": np.bool_(i),
         "tuple": (i, float(i)), "list": [i, [i, 2 * i]], "point": Point(i, a[0]),
         "nested": {"deep": [np.arange(3) + i]}}
        for i, a in enumerate(arrays)
    ]


def test_default_collate_matches_torch():
    expected = tud.default_collate(_samples(torch))
    got = eud.default_collate(_samples(ember))
    assert list(got) == list(expected)
    for key in expected:
        assert type(got[key]).__name__ == type(expected[key]).__name__, key
        assert_same(expected[key], got[key])
    assert got["float"].dtype == ember.float64 and got["int"].dtype == ember.int64
    assert got["bool"].dtype == ember.bool and got["np_int"].dtype == ember.int16
    assert isinstance(got["point"], Point)


@pytest.mark.parametrize("batch", [
    [0.5, 1.5], [1, 2], [True, False], ["a", "b"], [b"a", b"b"], [np.float64(1), np.float64(2)],
    [(1, 2), (3, 4)], [[1, 2], [3, 4]], [np.array([1, 2], dtype=np.uint8)] * 2,
    [np.array(3.0)] * 2,
])
def test_default_collate_leaves_match_torch(batch):
    assert_same(tud.default_collate(batch), eud.default_collate(batch))


@pytest.mark.parametrize("batch", [
    [np.zeros(3, np.float32), np.zeros(4, np.float32)],
    [[1, 2], [3]],
    [np.array(["a"]), np.array(["b"])],
    [object(), object()],
    [None, None],
])
def test_default_collate_errors_match_torch(batch):
    with pytest.raises(Exception) as expected:
        tud.default_collate(batch)
    with pytest.raises(Exception) as actual:
        eud.default_collate(batch)
    assert type(actual.value) is type(expected.value)
    assert str(actual.value).replace("ember", "torch") == str(expected.value)


def test_default_collate_tensor_size_mismatch_as_torch():
    with pytest.raises(RuntimeError) as expected:
        tud.default_collate([torch.zeros(3), torch.zeros(4)])
    with pytest.raises(RuntimeError) as actual:
        eud.default_collate([ember.zeros(3), ember.zeros(4)])
    assert str(actual.value) == str(expected.value)


def test_default_convert_matches_torch():
    def sample(lib):
        return {"array": np.arange(4.0), "scalar": np.int32(3), "strings": np.array(["a"]),
                "tuple": (np.arange(2), "x"), "point": Point(np.float32(1), [np.arange(2)]),
                "tensor": lib.ones(2), "number": 1.5}
    expected = tud.default_convert(sample(torch))
    got = eud.default_convert(sample(ember))
    assert list(got) == list(expected)
    for key in expected:
        assert type(got[key]).__name__ == type(expected[key]).__name__, key
    assert_same(expected["array"], got["array"])
    assert_same(expected["scalar"], got["scalar"])
    assert_same(expected["tuple"], got["tuple"])
    assert_same(list(expected["point"]), list(got["point"]))
    assert got["strings"] is not None and isinstance(got["strings"], np.ndarray)
