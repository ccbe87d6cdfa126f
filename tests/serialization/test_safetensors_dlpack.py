"""safetensors files through ``ember.utils.safetensors``, and zero-copy exchange with NumPy and
PyTorch through DLPack, ``Tensor.numpy()`` and ``ember.from_numpy``."""
import numpy as np
import pytest
import torch

import ember
from ember.utils import dlpack as ember_dlpack
from ember.utils import safetensors as est

safetensors = pytest.importorskip("safetensors")
import safetensors.numpy as snp  # noqa: E402
import safetensors.torch as stt  # noqa: E402

SAFETENSORS_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                      "float32", "float64", "complex64"]
DLPACK_DTYPES = SAFETENSORS_DTYPES + ["complex128"]


def _torch_tensor(dtype_name, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    values = torch.randn(shape, generator=g, dtype=torch.float64) * 20
    if dtype_name == "bool":
        return values > 0
    if dtype_name.startswith("complex"):
        return torch.complex(values, values.flip(-1)).to(getattr(torch, dtype_name))
    return values.to(getattr(torch, dtype_name))


def _to_torch(t):
    if t.dtype is ember.bfloat16:
        return torch.from_numpy(t.float().numpy()).to(torch.bfloat16)
    return torch.from_numpy(np.array(t.numpy()))


def _to_ember(t):
    if t.dtype == torch.bfloat16:
        return ember.tensor(t.float().numpy()).to(ember.bfloat16)
    return ember.tensor(t.numpy())


# ---------------------------------------------------------------------------------------------
# safetensors
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", SAFETENSORS_DTYPES)
def test_save_file_is_read_by_safetensors_torch_and_back(tmp_path, dtype):
    reference = {"w": _torch_tensor(dtype, (3, 4)), "s": _torch_tensor(dtype, (), seed=1),
                 "e": _torch_tensor(dtype, (0, 2))}
    est.save_file({k: _to_ember(v) for k, v in reference.items()}, tmp_path / "e.safetensors",
                  metadata={"format": "pt"})
    loaded = stt.load_file(tmp_path / "e.safetensors")
    for key, expected in reference.items():
        assert loaded[key].dtype == expected.dtype and torch.equal(loaded[key], expected), key
    back = est.load_file(tmp_path / "e.safetensors")
    for key, expected in reference.items():
        assert back[key].dtype.name == dtype and torch.equal(_to_torch(back[key]), expected)
    with safetensors.safe_open(tmp_path / "e.safetensors", framework="np") as f:
        assert f.metadata() == {"format": "pt"}


@pytest.mark.parametrize("dtype", SAFETENSORS_DTYPES)
def test_files_from_safetensors_torch_load(tmp_path, dtype):
    reference = {"a.weight": _torch_tensor(dtype, (5, 2)), "b": _torch_tensor(dtype, (7,))}
    stt.save_file(reference, tmp_path / "t.safetensors")
    loaded = est.load_file(tmp_path / "t.safetensors")
    assert set(loaded) == set(reference)
    for key, expected in reference.items():
        assert torch.equal(_to_torch(loaded[key]), expected), key
    as_bytes = est.load(stt.save(reference))
    for key, expected in reference.items():
        assert torch.equal(_to_torch(as_bytes[key]), expected), key


def test_files_written_by_safetensors_numpy_read_back(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"f32": rng.standard_normal((4, 3), dtype=np.float32),
              "f64": rng.standard_normal(5), "i16": np.arange(-6, 6, dtype=np.int16).reshape(3, 4),
              "u8": np.arange(10, dtype=np.uint8), "flag": np.array([True, False, True]),
              "c64": (rng.standard_normal(3) + 1j).astype(np.complex64)}
    snp.save_file(arrays, tmp_path / "n.safetensors")
    for loaded in (est.load_file(tmp_path / "n.safetensors"),
                   est.load((tmp_path / "n.safetensors").read_bytes()),
                   ember.load(tmp_path / "n.safetensors")):  # as torch.load does for the suffix
        assert set(loaded) == set(arrays)
        for key, expected in arrays.items():
            assert loaded[key].numpy().dtype == expected.dtype
            np.testing.assert_array_equal(loaded[key].numpy(), expected)
    # Ember's bytes read by safetensors.numpy, the other way round.
    back = snp.load(est.save({k: ember.from_numpy(v) for k, v in arrays.items()}))
    for key, expected in arrays.items():
        np.testing.assert_array_equal(back[key], expected)


def test_loaded_tensors_are_writable_and_on_the_requested_device(tmp_path):
    est.save_file({"x": ember.arange(4.0)}, tmp_path / "x.safetensors")
    x = est.load_file(tmp_path / "x.safetensors")["x"]
    x.add_(1)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0]
    y = est.load_file(tmp_path / "x.safetensors", device="testdev")["x"]
    assert y.device.type == "testdev" and y.tolist() == [0.0, 1.0, 2.0, 3.0]
    z = est.load(est.save({"x": ember.ones(2)}))["x"]
    z.mul_(3)
    assert z.tolist() == [3.0, 3.0]


def test_save_refuses_shared_and_non_contiguous_tensors(tmp_path):
    base = ember.zeros(4, 4)
    with pytest.raises(RuntimeError, match="share memory"):
        est.save_file({"a": base, "b": base[0]}, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="non contiguous"):
        est.save_file({"t": base.t()}, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="complex128"):
        est.save({"c": ember.zeros(2, dtype=ember.complex128)})
    # Disjoint slices of one block do not overlap, so they may be saved (as safetensors.torch).
    est.save_file({"r0": base[0], "r1": base[1]}, tmp_path / "rows.safetensors")
    assert est.load_file(tmp_path / "rows.safetensors")["r1"].shape == (4,)


def test_truncated_safetensors_file_raises(tmp_path):
    est.save_file({"x": ember.arange(100.0)}, tmp_path / "x.safetensors")
    data = (tmp_path / "x.safetensors").read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[:-50])
    with pytest.raises(Exception, match="(?i)incomplete|truncat|buffer|invalid"):
        est.load_file(tmp_path / "cut.safetensors")


class _Tied(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = ember.nn.Embedding(6, 4)
        self.head = ember.nn.Linear(4, 6, bias=False)
        self.head.weight = self.embed.weight


class _TorchTied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(6, 4)
        self.head = torch.nn.Linear(4, 6, bias=False)
        self.head.weight = self.embed.weight


def test_save_model_and_load_model_handle_tied_weights(tmp_path):
    model = _Tied()
    est.save_model(model, tmp_path / "m.safetensors")
    with safetensors.safe_open(tmp_path / "m.safetensors", framework="np") as f:
        assert list(f.keys()) == ["embed.weight"]
        assert f.metadata() == {"head.weight": "embed.weight"}
    fresh = _Tied()
    missing, unexpected = est.load_model(fresh, tmp_path / "m.safetensors")
    assert (missing, unexpected) == (set(), [])
    assert fresh.head.weight is fresh.embed.weight
    np.testing.assert_array_equal(fresh.head.weight.detach().numpy(),
                                  model.embed.weight.detach().numpy())
    # The same file, and the decision of which name to keep, as safetensors.torch.
    torch_model = _TorchTied()
    assert stt.load_model(torch_model, tmp_path / "m.safetensors") == (set(), [])
    np.testing.assert_array_equal(torch_model.head.weight.detach().numpy(),
                                  model.embed.weight.detach().numpy())
    stt.save_model(torch_model, tmp_path / "t.safetensors")
    assert est.load_model(_Tied(), tmp_path / "t.safetensors") == (set(), [])

    class Untied(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = ember.nn.Embedding(6, 4)
            self.head = ember.nn.Linear(4, 6, bias=False)
    with pytest.raises(RuntimeError, match="Missing key"):
        est.load_model(Untied(), tmp_path / "m.safetensors")
    assert est.load_model(Untied(), tmp_path / "m.safetensors", strict=False)[0] == {"head.weight"}


# ---------------------------------------------------------------------------------------------
# DLPack and NumPy
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DLPACK_DTYPES)
def test_dlpack_with_torch_shares_memory_both_ways(dtype):
    reference = _torch_tensor(dtype, (3, 5))
    e = _to_ember(reference)
    t = torch.from_dlpack(e)
    assert t.dtype == reference.dtype and torch.equal(t, reference)
    assert t.data_ptr() == e.data_ptr()
    back = ember.from_dlpack(t)
    assert back.dtype is e.dtype and back.data_ptr() == e.data_ptr()
    capsule_round_trip = ember_dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    assert capsule_round_trip.data_ptr() == e.data_ptr()
    to_torch = torch.utils.dlpack.from_dlpack(ember_dlpack.to_dlpack(e))
    assert to_torch.data_ptr() == e.data_ptr() and to_torch.dtype == reference.dtype
    # Writes through one are seen by the other.
    if dtype not in ("bool",):
        t[0, 0] = 1
        assert _to_torch(e)[0, 0] == 1


def test_dlpack_with_numpy_and_strided_views():
    array = np.arange(24, dtype=np.float32).reshape(4, 6)
    from_numpy = ember.from_dlpack(array[::2, 1::2])
    np.testing.assert_array_equal(from_numpy.numpy(), array[::2, 1::2])
    assert np.shares_memory(from_numpy.numpy(), array)
    transposed = ember.from_numpy(array).t()
    via_numpy = np.from_dlpack(transposed)
    np.testing.assert_array_equal(via_numpy, array.T)
    assert np.shares_memory(via_numpy, array)
    via_torch = torch.from_dlpack(transposed)
    assert via_torch.stride() == transposed.stride() == (1, 6)
    assert ember.from_numpy(array).__dlpack_device__() == (1, 0)


def test_dlpack_refuses_tensors_that_require_grad():
    with pytest.raises(BufferError, match="require gradient"):
        ember.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match="require gradient"):
        torch.ones(2, requires_grad=True).__dlpack__()
    assert torch.from_dlpack(ember.ones(2, requires_grad=True).detach()).tolist() == [1.0, 1.0]


def test_numpy_and_from_numpy_share_memory():
    array = np.zeros(5, dtype=np.float64)
    t = ember.from_numpy(array)
    array[2] = 7.0
    assert t[2].item() == 7.0
    t.add_(1)
    assert array.tolist() == [1.0, 1.0, 8.0, 1.0, 1.0]
    view = t.numpy()
    view[0] = -1.0
    assert t[0].item() == -1.0 and np.shares_memory(view, array)
