"""``ember.save`` / ``ember.load`` in PyTorch's zip format: round trips with PyTorch in both
directions, shared storages, map_location, mmap, and the checkpoint's safety properties
(restricted unpickling, atomic replace, truncated and corrupted files)."""
import collections
import io
import mmap
import os
import pathlib
import pickle
import struct
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch

import ember
from ember import serialization
from ember.backends.numpy_backend import memory_owner

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128"]


def _values(dtype_name, shape, seed=0):
    """A torch tensor of ``dtype_name`` with varied values (not just zeros and ones)."""
    g = torch.Generator().manual_seed(seed)
    values = torch.randn(shape, generator=g, dtype=torch.float64) * 50
    if dtype_name == "bool":
        return values > 0
    if dtype_name.startswith("complex"):
        return torch.complex(values, -values).to(getattr(torch, dtype_name))
    return values.to(getattr(torch, dtype_name))


def _as_ember(t):
    """An Ember tensor with ``t``'s values, built through a float32 bridge for bfloat16."""
    if t.dtype == torch.bfloat16:
        return ember.tensor(t.float().numpy()).to(ember.bfloat16)
    return ember.tensor(t.numpy())


def _torch_values(e):
    """The values of Ember tensor ``e`` as a torch tensor of the same dtype."""
    if e.dtype is ember.bfloat16:
        return torch.from_numpy(e.float().numpy()).to(torch.bfloat16)
    return torch.from_numpy(np.array(e.detach().numpy()))


def _assert_tensor_equal(torch_t, ember_t):
    assert isinstance(ember_t, ember.Tensor)
    assert ember_t.dtype.name == str(torch_t.dtype).split(".")[-1]
    assert tuple(ember_t.shape) == tuple(torch_t.shape)
    assert ember_t.requires_grad == torch_t.requires_grad
    assert torch.equal(_torch_values(ember_t.detach()), torch_t.detach())


def _shares_memory(a, b):
    return np.shares_memory(a.detach()._data, b.detach()._data)


# ---------------------------------------------------------------------------------------------
# Round trips with PyTorch
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_ember_to_torch_and_back(tmp_path, dtype):
    reference = {"matrix": _values(dtype, (3, 5)), "scalar": _values(dtype, (), seed=1),
                 "empty": _values(dtype, (0, 4))}
    ember.save({k: _as_ember(v) for k, v in reference.items()}, tmp_path / "e.pt")
    loaded = torch.load(tmp_path / "e.pt", weights_only=True)
    for key, expected in reference.items():
        assert loaded[key].dtype == expected.dtype
        assert torch.equal(loaded[key], expected), key
    back = ember.load(tmp_path / "e.pt")
    for key, expected in reference.items():
        _assert_tensor_equal(expected, back[key])


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_torch_to_ember(tmp_path, dtype):
    reference = {"matrix": _values(dtype, (4, 3)), "scalar": _values(dtype, (), seed=2),
                 "empty": _values(dtype, (2, 0))}
    torch.save(reference, tmp_path / "t.pt")
    loaded = ember.load(tmp_path / "t.pt")
    for key, expected in reference.items():
        _assert_tensor_equal(expected, loaded[key])


def _non_contiguous_views(lib, base):
    return {"base": base, "transposed": base.t(), "stepped": base[1:, ::2],
            "row": base[2], "column": base[:, 3], "element": base[1, 1],
            "expanded": base[0:1, :].expand(3, 6)}


@pytest.mark.parametrize("direction", ["ember_to_torch", "torch_to_ember"])
def test_views_and_non_contiguous_layouts(tmp_path, direction):
    values = np.arange(24, dtype=np.float32).reshape(4, 6)
    source = ember if direction == "ember_to_torch" else torch
    target = torch if direction == "ember_to_torch" else ember
    views = _non_contiguous_views(source, source.from_numpy(values.copy()))
    source.save(views, tmp_path / "v.pt")
    loaded = target.load(tmp_path / "v.pt", weights_only=True)
    reference = _non_contiguous_views(torch, torch.from_numpy(values.copy()))
    for key, expected in reference.items():
        got = loaded[key]
        assert tuple(got.shape) == tuple(expected.shape), key
        assert tuple(got.stride()) == tuple(expected.stride()), key
        got_values = got if target is torch else _torch_values(got)
        assert torch.equal(got_values, expected), key
    # One storage for all of them: written once, and still one block of memory after loading.
    with zipfile.ZipFile(tmp_path / "v.pt") as archive:
        records = [n for n in archive.namelist() if "/data/" in n]
    assert len(records) == 1
    if target is torch:
        ptrs = {t.untyped_storage().data_ptr() for t in loaded.values()}
        assert len(ptrs) == 1
        loaded["base"][0, 0] = 100.0
        assert loaded["transposed"][0, 0] == 100.0
    else:
        assert all(_shares_memory(loaded["base"], t) for t in loaded.values())
        loaded["base"][1, 2] = -7.0
        assert loaded["stepped"][0, 1].item() == -7.0
        assert loaded["transposed"][2, 1].item() == -7.0


def test_separate_tensors_stay_separate(tmp_path):
    a, b = ember.ones(3), ember.ones(3)
    ember.save([a, b, a], tmp_path / "s.pt")
    x, y, z = ember.load(tmp_path / "s.pt")
    assert not _shares_memory(x, y)
    assert x is z  # the same tensor saved twice is one tensor again, as in PyTorch
    with zipfile.ZipFile(tmp_path / "s.pt") as archive:
        assert len([n for n in archive.namelist() if "/data/" in n]) == 2


def test_views_of_one_block_as_different_dtypes_raise_as_in_torch(tmp_path):
    base = ember.zeros(4)
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        ember.save([base, base.view(ember.int32)], tmp_path / "x.pt")
    torch_base = torch.zeros(4)
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        torch.save([torch_base, torch_base.view(torch.int32)], io.BytesIO())


def test_containers_scalars_and_metadata_objects(tmp_path):
    obj = {
        "nested": {"list": [1, 2.5, "text", b"\x00bytes", None, True, 3 + 4j],
                   "tuple": (ember.tensor([1, 2]), ("deep", [ember.tensor(3.5)]))},
        "ordered": collections.OrderedDict([("b", 1), ("a", ember.zeros(2))]),
        "size": ember.Size([2, 3]), "dtype": ember.bfloat16, "device": ember.device("cpu"),
        "set": {1, 2, 3}, "param": ember.nn.Parameter(ember.ones(2)),
        "grad": ember.ones(2, requires_grad=True), "int_key": {0: "zero", 7: "seven"},
    }
    ember.save(obj, tmp_path / "c.pt")
    t = torch.load(tmp_path / "c.pt", weights_only=True)
    assert t["nested"]["list"] == [1, 2.5, "text", b"\x00bytes", None, True, 3 + 4j]
    assert torch.equal(t["nested"]["tuple"][0], torch.tensor([1, 2]))
    assert t["nested"]["tuple"][1][0] == "deep"
    assert type(t["ordered"]) is collections.OrderedDict and list(t["ordered"]) == ["b", "a"]
    assert t["size"] == torch.Size([2, 3]) and type(t["size"]) is torch.Size
    assert t["dtype"] is torch.bfloat16 and t["device"] == torch.device("cpu")
    assert t["set"] == {1, 2, 3} and t["int_key"] == {0: "zero", 7: "seven"}
    assert isinstance(t["param"], torch.nn.Parameter) and t["param"].requires_grad
    assert t["grad"].requires_grad and t["grad"].is_leaf

    torch.save(t, tmp_path / "t.pt")
    for path in (tmp_path / "c.pt", tmp_path / "t.pt"):
        e = ember.load(path)
        assert e["nested"]["list"] == obj["nested"]["list"]
        assert e["nested"]["tuple"][1][1][0].item() == 3.5
        assert type(e["ordered"]) is collections.OrderedDict and list(e["ordered"]) == ["b", "a"]
        assert type(e["size"]) is ember.Size and e["size"] == (2, 3)
        assert e["dtype"] is ember.bfloat16 and e["device"] == ember.device("cpu")
        assert e["set"] == {1, 2, 3} and e["int_key"] == {0: "zero", 7: "seven"}
        assert isinstance(e["param"], ember.nn.Parameter) and e["param"].requires_grad
        assert e["grad"].requires_grad and e["grad"].is_leaf


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_pickle_protocols(protocol):
    buffer = io.BytesIO()
    ember.save({"x": ember.arange(5), "dtype": ember.float16}, buffer, pickle_protocol=protocol)
    buffer.seek(0)
    # PyTorch's own weights_only reader stops at protocol 4's FRAME opcode, for its files too.
    t = torch.load(buffer, weights_only=protocol == 2)
    assert torch.equal(t["x"], torch.arange(5)) and t["dtype"] is torch.float16
    buffer.seek(0)
    e = ember.load(buffer)
    assert e["x"].tolist() == [0, 1, 2, 3, 4] and e["dtype"] is ember.float16
    from_torch = io.BytesIO()
    torch.save({"x": torch.arange(3)}, from_torch, pickle_protocol=protocol)
    from_torch.seek(0)
    assert ember.load(from_torch)["x"].tolist() == [0, 1, 2]


def test_paths_and_file_objects(tmp_path):
    x = ember.arange(6).reshape(2, 3)
    for target in (str(tmp_path / "a.pt"), tmp_path / "b.pt"):
        ember.save(x, target)
        assert ember.load(target).tolist() == x.tolist()
        assert torch.load(target).tolist() == x.tolist()
    with open(tmp_path / "c.pt", "wb") as f:
        ember.save(x, f)
    with open(tmp_path / "c.pt", "rb") as f:
        assert ember.load(f).tolist() == x.tolist()
    buffer = io.BytesIO()
    torch.save(torch.arange(4), buffer)
    buffer.seek(0)
    assert ember.load(buffer).tolist() == [0, 1, 2, 3]


def test_members_are_aligned_and_uncompressed(tmp_path):
    ember.save({"a": ember.ones(3), "b": ember.zeros(5, dtype=ember.float64)}, tmp_path / "x.pt")
    raw = (tmp_path / "x.pt").read_bytes()
    with zipfile.ZipFile(tmp_path / "x.pt") as archive:
        assert archive.testzip() is None
        names = archive.namelist()
        assert names[0] == "archive/data.pkl" and "archive/version" in names
        assert archive.read("archive/byteorder") == b"little"
        for info in archive.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            name_len, extra_len = np.frombuffer(raw[info.header_offset + 26:
                                                    info.header_offset + 30], np.uint16)
            assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0, info.filename


def test_zip64_archives_read_by_torch_and_zipfile():
    buffer = io.BytesIO()
    serialization._write_archive({"x": ember.arange(10)}, buffer, 2, force_zip64=True)
    buffer.seek(0)
    assert zipfile.ZipFile(buffer).testzip() is None
    buffer.seek(0)
    assert torch.load(buffer, weights_only=True)["x"].tolist() == list(range(10))
    buffer.seek(0)
    assert ember.load(buffer)["x"].tolist() == list(range(10))


# ---------------------------------------------------------------------------------------------
# Modules, optimizers and a full training checkpoint
# ---------------------------------------------------------------------------------------------

def _torch_mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                               torch.nn.Linear(8, 3))


def _ember_mlp():
    return ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.BatchNorm1d(8), ember.nn.ReLU(),
                               ember.nn.Linear(8, 3))


def test_module_state_dict_both_directions(tmp_path):
    torch_model = _torch_mlp()
    torch_model.train()(torch.randn(16, 4))  # moves the BatchNorm running statistics
    torch.save(torch_model.state_dict(), tmp_path / "t.pt")
    ember_model = _ember_mlp()
    state = ember.load(tmp_path / "t.pt")
    assert list(state) == list(torch_model.state_dict())
    assert state._metadata[""]["version"] == torch_model.state_dict()._metadata[""]["version"]
    ember_model.load_state_dict(state)
    x = np.random.default_rng(0).standard_normal((5, 4), dtype=np.float32)
    ember_model.eval()
    torch_model.eval()
    np.testing.assert_allclose(ember_model(ember.from_numpy(x)).detach().numpy(),
                               torch_model(torch.from_numpy(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)

    ember.save(ember_model.state_dict(), tmp_path / "e.pt")
    fresh = _torch_mlp()
    with torch.no_grad():
        for p in fresh.parameters():
            p.zero_()
    fresh.load_state_dict(torch.load(tmp_path / "e.pt", weights_only=True))
    fresh.eval()
    np.testing.assert_allclose(fresh(torch.from_numpy(x)).detach().numpy(),
                               torch_model(torch.from_numpy(x)).detach().numpy(), rtol=1e-6)


def _torch_tanh_mlp():
    # No BatchNorm here: the bias before a BatchNorm gets a ~0 gradient, which Adam's
    # normalisation turns into rounding noise, so the two libraries could not be compared.
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def test_optimizer_state_dict_both_directions(tmp_path):
    """A torch Adam's state loads into Ember's Adam (and back), and both continue alike."""
    torch_model = _torch_tanh_mlp()
    torch_opt = torch.optim.Adam(torch_model.parameters(), lr=1e-2)
    data = torch.randn(8, 4)
    for _ in range(3):
        torch_opt.zero_grad()
        torch_model(data).pow(2).mean().backward()
        torch_opt.step()
    torch.save({"model": torch_model.state_dict(), "optimizer": torch_opt.state_dict()},
               tmp_path / "t.pt")

    checkpoint = ember.load(tmp_path / "t.pt")
    assert set(checkpoint["optimizer"]["state"]) == set(torch_opt.state_dict()["state"])
    ember_model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.Tanh(),
                                      ember.nn.Linear(8, 3))
    ember_model.load_state_dict(checkpoint["model"])
    ember_opt = ember.optim.Adam(ember_model.parameters(), lr=1e-2)
    ember_opt.load_state_dict(checkpoint["optimizer"])
    ember.save({"optimizer": ember_opt.state_dict()}, tmp_path / "e.pt")
    round_trip = torch.load(tmp_path / "e.pt", weights_only=True)["optimizer"]
    torch_groups = torch_opt.state_dict()["param_groups"]
    assert round_trip["param_groups"][0]["params"] == torch_groups[0]["params"]
    for index, state in torch_opt.state_dict()["state"].items():
        for key, value in state.items():
            assert torch.equal(round_trip["state"][index][key], value), (index, key)

    for _ in range(2):
        torch_opt.zero_grad()
        torch_model(data).pow(2).mean().backward()
        torch_opt.step()
        ember_opt.zero_grad()
        ember_model(ember.from_numpy(data.numpy())).pow(2).mean().backward()
        ember_opt.step()
    for (name, tp), ep in zip(torch_model.named_parameters(), ember_model.parameters()):
        np.testing.assert_allclose(ep.detach().numpy(), tp.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)


def _train(model, optimizer, scheduler, steps, data, targets, log):
    for _ in range(steps):
        optimizer.zero_grad()
        # Dropout draws from the global generator, so resuming must restore the RNG state.
        hidden = ember.nn.functional.dropout(model(data), p=0.2, training=True)
        loss = ember.nn.functional.mse_loss(hidden, targets)
        loss.backward()
        optimizer.step()
        scheduler.step()
        log.append(loss.item())


def _training_setup():
    ember.manual_seed(1)
    model = _ember_mlp()
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = ember.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    return model, optimizer, scheduler


def test_training_checkpoint_resumes_the_same_trajectory(tmp_path):
    rng = np.random.default_rng(3)
    data = ember.from_numpy(rng.standard_normal((16, 4), dtype=np.float32))
    targets = ember.from_numpy(rng.standard_normal((16, 3), dtype=np.float32))

    model, optimizer, scheduler = _training_setup()
    uninterrupted = []
    _train(model, optimizer, scheduler, 10, data, targets, uninterrupted)

    model, optimizer, scheduler = _training_setup()
    first_half = []
    _train(model, optimizer, scheduler, 5, data, targets, first_half)
    ember.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "epoch": 5,
                "rng_state": ember.get_rng_state()}, tmp_path / "ckpt.pt")
    del model, optimizer, scheduler
    ember.manual_seed(12345)  # whatever happened in between must not matter

    model, optimizer, scheduler = _training_setup()
    checkpoint = ember.load(tmp_path / "ckpt.pt")  # weights_only: the default
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    ember.set_rng_state(checkpoint["rng_state"])
    assert checkpoint["epoch"] == 5
    second_half = []
    _train(model, optimizer, scheduler, 5, data, targets, second_half)

    assert first_half + second_half == uninterrupted  # bit-identical losses
    # And the checkpoint is a PyTorch checkpoint too.
    torch_view = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    assert torch_view["epoch"] == 5 and set(torch_view) == set(checkpoint)
    assert torch_view["rng_state"].dtype == torch.uint8


# ---------------------------------------------------------------------------------------------
# map_location and mmap
# ---------------------------------------------------------------------------------------------

def test_map_location_forms(tmp_path):
    ember.save({"a": ember.arange(4.0), "b": ember.ones(2, device="testdev")}, tmp_path / "m.pt")
    plain = ember.load(tmp_path / "m.pt")
    assert plain["a"].device == ember.device("cpu")
    assert plain["b"].device.type == "testdev"  # the saved location, by default
    for location in ("cpu", ember.device("cpu"), {"testdev:0": "cpu"},
                     lambda storage, loc: storage.cpu()):
        loaded = ember.load(tmp_path / "m.pt", map_location=location)
        assert loaded["b"].device == ember.device("cpu"), location
        assert loaded["b"].tolist() == [1.0, 1.0]
    moved = ember.load(tmp_path / "m.pt", map_location="testdev")
    assert moved["a"].device.type == "testdev" and moved["a"].tolist() == [0.0, 1.0, 2.0, 3.0]
    seen = []
    ember.load(tmp_path / "m.pt", map_location=lambda storage, loc: seen.append(loc))
    assert sorted(seen) == ["cpu", "testdev:0"]
    torch.save(torch.arange(3), tmp_path / "t.pt")
    assert ember.load(tmp_path / "t.pt", map_location="testdev").device.type == "testdev"


def test_cuda_location_without_cuda_says_to_map_to_cpu(tmp_path):
    if ember.cuda.is_available():
        pytest.skip("CUDA is available here")
    ember.save(ember.ones(2), tmp_path / "x.pt")
    with pytest.raises(RuntimeError, match="map_location"):
        ember.load(tmp_path / "x.pt", map_location={"cpu": "cuda:0"})


def test_mmap_maps_storages_copy_on_write(tmp_path):
    base = ember.arange(12.0).reshape(3, 4)
    ember.save({"base": base, "view": base[1:, 1:3]}, tmp_path / "m.pt")
    before = (tmp_path / "m.pt").read_bytes()
    loaded = ember.load(tmp_path / "m.pt", mmap=True)
    assert loaded["base"].tolist() == base.tolist()
    assert loaded["view"].tolist() == base[1:, 1:3].tolist()
    owner = memory_owner(loaded["base"]._data)
    assert isinstance(owner.base.obj, mmap.mmap)  # mapped from the file, not read into memory
    assert _shares_memory(loaded["base"], loaded["view"])
    loaded["base"][1, 1] = 99.0  # private pages: visible to the views, never to the file
    assert loaded["view"][0, 0].item() == 99.0
    assert (tmp_path / "m.pt").read_bytes() == before
    torch.save({"w": torch.arange(6).reshape(2, 3)}, tmp_path / "t.pt")
    assert ember.load(tmp_path / "t.pt", mmap=True)["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="file path"):
        ember.load(io.BytesIO(before), mmap=True)


# ---------------------------------------------------------------------------------------------
# Safety: restricted unpickling, atomic saves, damaged files
# ---------------------------------------------------------------------------------------------

class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    torch.save({"weights": torch.ones(2), "payload": _RunsCode(marker)}, tmp_path / "evil.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"(posix|os)\.system") as error:
        ember.load(tmp_path / "evil.pt")
    assert "weights_only=False" in str(error.value)
    with pytest.raises(pickle.UnpicklingError, match=r"(posix|os)\.system"):
        ember.load(tmp_path / "evil.pt", weights_only=True, map_location="cpu")
    assert not marker.exists()


def test_build_on_an_allowed_class_is_refused(tmp_path):
    # GLOBAL of an allowed class, then BUILD with a state: would overwrite the class's
    # attributes (here Size.numel) if BUILD were not restricted.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl",
                         b"\x80\x02ctorch\nSize\n}(X\x05\x00\x00\x00numelK\x01ub.")
        archive.writestr("archive/version", b"3\n")
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="not allowed"):
        ember.load(buffer)
    assert ember.Size([2, 3]).numel() == 6


def test_geometry_outside_the_storage_is_refused():
    buffer = io.BytesIO()
    ember.save(ember.arange(4.0), buffer)
    raw = bytearray(buffer.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as archive:
        pickled = archive.read("archive/data.pkl")
    # size (4,) -> (400,): the tensor would read far past its 4-element storage.
    tampered = pickled.replace(b"K\x04\x85", b"M\x90\x01\x85", 1)
    assert tampered != pickled
    rebuilt = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as source, zipfile.ZipFile(rebuilt, "w") as out:
        for info in source.infolist():
            out.writestr(info.filename, tampered if info.filename.endswith("data.pkl")
                         else source.read(info))
    rebuilt.seek(0)
    with pytest.raises(RuntimeError, match="past the end of its storage"):
        ember.load(rebuilt)


def test_weights_only_false_trusts_the_file(tmp_path):
    torch.save({"counts": collections.Counter("aab"), "obj": _Trusted(3)}, tmp_path / "x.pt")
    with pytest.raises(pickle.UnpicklingError, match="_Trusted"):
        ember.load(tmp_path / "x.pt")
    loaded = ember.load(tmp_path / "x.pt", weights_only=False)
    assert loaded["obj"].value == 3 and loaded["counts"]["a"] == 2
    with serialization.safe_globals([_Trusted]):
        assert ember.load(tmp_path / "x.pt")["obj"].value == 3
    with pytest.raises(pickle.UnpicklingError):
        ember.load(tmp_path / "x.pt")
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        ember.load(tmp_path / "x.pt", pickle_module=pickle, weights_only=True)


class _Trusted:
    def __init__(self, value):
        self.value = value


def test_truncated_files_raise_saying_so(tmp_path):
    ember.save({"w": ember.randn(64, 64), "b": ember.arange(10)}, tmp_path / "ok.pt")
    data = (tmp_path / "ok.pt").read_bytes()
    for cut in (1, 10, 100, len(data) // 3, len(data) // 2, len(data) - 30, len(data) - 1):
        (tmp_path / "cut.pt").write_bytes(data[:cut])
        with pytest.raises(RuntimeError, match="truncated or corrupted"):
            ember.load(tmp_path / "cut.pt")
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(EOFError):
        ember.load(tmp_path / "empty.pt")


def test_corrupted_bytes_raise_saying_so(tmp_path):
    # data/0 is 1 MiB (its CRC is checked on the helper thread), data/1 small (checked inline).
    ember.save({"w": ember.randn(512, 512), "b": ember.arange(10)}, tmp_path / "ok.pt")
    data = (tmp_path / "ok.pt").read_bytes()
    with zipfile.ZipFile(tmp_path / "ok.pt") as archive:
        infos = {i.filename: i for i in archive.infolist()}
    for record in ("archive/data.pkl", "archive/data/0", "archive/data/1"):
        info = infos[record]
        name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:
                                                        info.header_offset + 30])
        damaged = bytearray(data)
        damaged[info.header_offset + 30 + name_len + extra_len + info.file_size // 2] ^= 0x40
        (tmp_path / "bad.pt").write_bytes(damaged)
        with pytest.raises(RuntimeError, match="truncated or corrupted"):
            ember.load(tmp_path / "bad.pt")


def test_not_a_checkpoint(tmp_path):
    (tmp_path / "junk.pt").write_bytes(b"this is not a checkpoint at all")
    with pytest.raises(RuntimeError, match="not a zip archive"):
        ember.load(tmp_path / "junk.pt")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(RuntimeError, match="data.pkl"):
        ember.load(tmp_path / "other.zip")


def test_failed_save_leaves_the_previous_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    ember.save({"version": 1, "w": ember.ones(3)}, path)

    def crash(*args):
        raise KeyboardInterrupt("simulated crash between write and rename")
    monkeypatch.setattr(serialization.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        ember.save({"version": 2, "w": ember.zeros(3)}, path)
    monkeypatch.undo()
    assert ember.load(path)["version"] == 1
    assert os.listdir(tmp_path) == ["ckpt.pt"]  # no temporary file left behind

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("fails half-way through the pickle")
    with pytest.raises(RuntimeError, match="half-way"):
        ember.save({"version": 3, "w": ember.zeros(3), "bad": Unpicklable()}, path)
    assert ember.load(path)["version"] == 1 and os.listdir(tmp_path) == ["ckpt.pt"]


def test_process_killed_before_rename_leaves_the_previous_file_intact(tmp_path):
    path = tmp_path / "ckpt.pt"
    ember.save({"version": 1, "w": ember.ones(1000)}, path)
    child = (
        "import os, ember\n"
        "from ember import serialization\n"
        "serialization.os.replace = lambda *a: os._exit(17)\n"  # dies after the data is written
        f"ember.save({{'version': 2, 'w': ember.zeros(1000)}}, {str(path)!r})\n"
    )
    result = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                            cwd=pathlib.Path(__file__).parents[2])
    assert result.returncode == 17, result.stderr
    assert ember.load(path)["version"] == 1
    leftovers = [n for n in os.listdir(tmp_path) if n != "ckpt.pt"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".ckpt.pt.")
    # The leftover is the complete new checkpoint, written and synced before the rename.
    assert ember.load(tmp_path / leftovers[0])["version"] == 2


def test_save_into_a_missing_folder(tmp_path):
    with pytest.raises(RuntimeError, match="Parent directory .* does not exist"):
        ember.save(ember.ones(1), tmp_path / "missing" / "x.pt")


def test_safe_globals_helpers():
    assert serialization.get_safe_globals() == []
    serialization.add_safe_globals([_Trusted])
    try:
        assert serialization.get_safe_globals() == [_Trusted]
    finally:
        serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []


# ---------------------------------------------------------------------------------------------
# Property: any strided view of any dtype survives ember -> torch -> ember unchanged
# ---------------------------------------------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def _strided_views(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.integers(0, 5), min_size=0, max_size=3))
    slices = tuple(slice(draw(st.integers(0, 2)), None, draw(st.integers(1, 3))) for _ in shape)
    transpose = draw(st.booleans()) and len(shape) >= 2
    return dtype, tuple(shape), slices, transpose


@settings(max_examples=30, deadline=None)
@given(_strided_views())
def test_property_strided_views_round_trip_through_torch(case):
    dtype, shape, slices, transpose = case
    base = _values(dtype, shape)
    expected = base[slices]
    if transpose:
        expected = expected.transpose(0, -1)
    ember_base = _as_ember(base)
    view = ember_base[slices]
    if transpose:
        view = view.transpose(0, -1)
    buffer = io.BytesIO()
    ember.save({"base": ember_base, "view": view}, buffer)
    buffer.seek(0)
    in_torch = torch.load(buffer, weights_only=True)
    assert torch.equal(in_torch["view"], expected) and torch.equal(in_torch["base"], base)
    assert in_torch["view"].stride() == tuple(view.stride()) or expected.numel() <= 1
    again = io.BytesIO()
    torch.save(in_torch, again)
    again.seek(0)
    back = ember.load(again)
    _assert_tensor_equal(expected, back["view"])
    if expected.numel():
        assert _shares_memory(back["base"], back["view"])


def _rewritten(source, transform):
    """A copy of zip archive ``source`` (bytes) with each member's bytes passed through
    ``transform(name, data)``."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(source)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            dst.writestr(info.filename, transform(info.filename, src.read(info)))
    return out.getvalue()


def test_big_endian_checkpoints_are_byteswapped_on_load(tmp_path):
    values = np.arange(6, dtype=np.float32).reshape(2, 3) * 1.5
    buffer = io.BytesIO()
    ember.save({"w": ember.from_numpy(values.copy())}, buffer)

    def to_big_endian(name, data):
        if name.endswith("/byteorder"):
            return b"big"
        if "/data/" in name:
            return np.frombuffer(data, np.float32).byteswap().tobytes()
        return data
    (tmp_path / "big.pt").write_bytes(_rewritten(buffer.getvalue(), to_big_endian))
    np.testing.assert_array_equal(torch.load(tmp_path / "big.pt")["w"].numpy(), values)
    np.testing.assert_array_equal(ember.load(tmp_path / "big.pt")["w"].numpy(), values)
    np.testing.assert_array_equal(ember.load(tmp_path / "big.pt", mmap=True)["w"].numpy(),
                                  values)


def test_crc_check_can_be_switched_off(tmp_path, monkeypatch):
    ember.save({"w": ember.arange(8.0)}, tmp_path / "x.pt")
    with zipfile.ZipFile(tmp_path / "x.pt") as archive:
        info = archive.getinfo("archive/data/0")
    data = bytearray((tmp_path / "x.pt").read_bytes())
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:
                                                    info.header_offset + 30])
    data[info.header_offset + 30 + name_len + extra_len + 4] ^= 0x01  # element 1's low bits
    (tmp_path / "x.pt").write_bytes(data)
    with pytest.raises(RuntimeError, match="CRC-32"):
        ember.load(tmp_path / "x.pt")
    monkeypatch.setattr(serialization.config, "check_crc32", False)
    loaded = ember.load(tmp_path / "x.pt")["w"]  # as PyTorch does: the damage goes unseen
    assert loaded[1].item() != 1.0 and loaded[2].item() == 2.0


def _load_in_child(path, queue):
    queue.put(float(ember.load(path)["w"].sum()))


def test_load_in_a_forked_process_after_loading_in_the_parent(tmp_path):
    # The CRC thread pool of the parent does not exist in a forked child (a DataLoader worker
    # that reads checkpoints): the child must make its own instead of waiting forever.
    import multiprocessing
    path = tmp_path / "big.pt"
    ember.save({"w": ember.ones(1 << 19)}, path)  # 2 MiB: checked on the pool
    assert float(ember.load(path)["w"].sum()) == 1 << 19
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_load_in_child, args=(path, queue))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0, "the child hung or failed"
    assert queue.get(timeout=5) == 1 << 19
