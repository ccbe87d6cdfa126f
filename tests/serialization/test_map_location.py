"""``ember.load(map_location=...)`` across devices (issue 16), with torch as the oracle.

torch answers on a CPU for files whose storages are tagged "cpu", and for files tagged
"cuda:N" (made here by retagging a CPU checkpoint, byte for byte torch's format), which a
CPU-only machine loads only through ``map_location``. The other device is the CuPy
conformance device ("cupyconf"): a conformance device, not a GPU.
"""
import io
import zipfile

import numpy as np
import pytest
import torch

import ember
from ember.serialization import _Storage, default_restore_location


def _retag(path, old, new):
    """Rewrite the storage location ``old`` as ``new`` in a checkpoint's pickle (a
    BINUNICODE string: opcode, 4-byte length, bytes), keeping the zip's other records."""
    def string(s):
        return b"X" + len(s).to_bytes(4, "little") + s.encode()
    with zipfile.ZipFile(path) as src:
        records = [(info, src.read(info.filename)) for info in src.infolist()]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info, data in records:
            if info.filename.endswith("/data.pkl"):
                assert string(old) in data
                data = data.replace(string(old), string(new))
            dst.writestr(info, data)
    path.write_bytes(out.getvalue())


@pytest.fixture
def cpu_file(tmp_path):
    t = torch.arange(6.0).reshape(2, 3)
    path = tmp_path / "cpu.pt"
    torch.save({"w": t, "row": t[1], "n": 3}, path)
    return path


@pytest.fixture
def cuda_file(cpu_file):
    _retag(cpu_file, "cpu", "cuda:0")
    return cpu_file


def _same(mine, theirs):
    assert mine.keys() == theirs.keys()
    for key in ("w", "row"):
        np.testing.assert_array_equal(mine[key].cpu().numpy(), theirs[key].numpy())
    assert mine["n"] == theirs["n"]


@pytest.mark.parametrize("where", ["cpu", "device", "dict", "callable", "none", "bytes"])
def test_cpu_checkpoint_with_each_map_location_kind(cpu_file, where):
    def kind(lib):
        return {"cpu": "cpu", "device": lib.device("cpu"), "dict": {"cpu": "cpu"},
                "callable": lambda storage, location: storage, "none": None,
                "bytes": b"cpu"}[where]
    if where == "bytes":  # torch takes str, device, dict or callable only
        with pytest.raises((TypeError, ValueError, AttributeError, RuntimeError)):
            torch.load(cpu_file, map_location=kind(torch))
        theirs = torch.load(cpu_file)
    else:
        theirs = torch.load(cpu_file, map_location=kind(torch))
    mine = ember.load(cpu_file, map_location=kind(ember))
    _same(mine, theirs)
    assert mine["w"].device == ember.device("cpu")


def test_cuda_checkpoint_on_a_cpu_only_machine_needs_map_location(cuda_file):
    if ember.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(RuntimeError) as theirs:
        torch.load(cuda_file)
    with pytest.raises(RuntimeError) as mine:
        ember.load(cuda_file)
    assert str(mine.value) == str(theirs.value).replace("torch", "ember")
    assert str(mine.value).startswith("Attempting to deserialize object on a CUDA device but ")


@pytest.mark.parametrize("where", ["cpu", "dict", "callable"])
def test_cuda_checkpoint_maps_to_the_cpu(cuda_file, where):
    seen = {"torch": [], "ember": []}

    def kind(lib, name):
        if where == "callable":
            return lambda storage, location: seen[name].append(location) or storage
        return {"cpu": lib.device("cpu"), "dict": {"cuda:0": "cpu"}}[where]
    theirs = torch.load(cuda_file, map_location=kind(torch, "torch"))
    mine = ember.load(cuda_file, map_location=kind(ember, "ember"))
    _same(mine, theirs)
    assert mine["w"].device == ember.device("cpu")
    assert seen["ember"] == seen["torch"]  # the callable sees the saved location
    if where == "callable":
        assert seen["torch"] == ["cuda:0"]


@pytest.mark.parametrize("where", ["str", "device", "dict", "callable"])
def test_a_checkpoint_maps_onto_another_device(cupyconf_accelerator, cuda_file, where):
    target = {"str": "cupyconf", "device": ember.device("cupyconf", 0),
              "dict": {"cuda:0": "cupyconf:0"},
              "callable": lambda storage, location: storage.to("cupyconf:0")}[where]
    mine = ember.load(cuda_file, map_location=target)
    _same(mine, torch.load(cuda_file, map_location="cpu"))
    assert mine["w"].device == mine["row"].device == ember.device("cupyconf", 0)
    mine["w"][1, 0] = 100.0  # the view still shares its storage on the new device
    assert mine["row"].cpu().tolist() == [100.0, 4.0, 5.0]


def test_device_checkpoint_records_its_location_and_torch_reads_it(cupyconf_accelerator,
                                                                   tmp_path):
    path = tmp_path / "dev.pt"
    ember.save({"w": ember.arange(4.0, device=cupyconf_accelerator)}, path)
    with zipfile.ZipFile(path) as z:
        pickle = z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))
    assert b"cupyconf:0" in pickle  # torch's "<device type>:<index>" location
    assert ember.load(path)["w"].device == ember.device("cupyconf", 0)
    assert torch.load(path, map_location="cpu")["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match=r"don't know how to restore data location of .* "
                                           r"\(tagged with cupyconf:0\)"):
        torch.load(path)  # torch has no such device: it says so, as Ember does for one it lacks


def test_a_device_index_this_machine_lacks(cupyconf_accelerator, tmp_path):
    path = tmp_path / "dev.pt"
    ember.save({"w": ember.ones(2, device=cupyconf_accelerator)}, path)
    _retag(path, "cupyconf:0", "cupyconf:1")
    with pytest.raises(RuntimeError, match=r"^Attempting to deserialize object on CUPYCONF device 1 "
                                           r"but ember.cupyconf.device_count\(\) is 1\. Please use "
                                           r"ember.load with map_location"):
        ember.load(path)
    assert ember.load(path, map_location={"cupyconf:1": "cupyconf:0"})["w"].tolist() == [1.0, 1.0]


def test_unknown_location_raises_as_torch(cpu_file):
    _retag(cpu_file, "cpu", "nowhere:0")
    with pytest.raises(RuntimeError, match=r"tagged with nowhere:0"):
        torch.load(cpu_file)
    with pytest.raises(RuntimeError, match=r"don't know how to restore data location of .* "
                                           r"\(tagged with nowhere:0\)"):
        ember.load(cpu_file)


def test_default_restore_location(cupyconf_accelerator):
    storage = _Storage(np.arange(3, dtype=np.float32), ember.float32, ember.device("cpu"))
    assert default_restore_location(storage, "cpu") is storage
    moved = default_restore_location(storage, "cupyconf:0")
    assert moved.device == ember.device("cupyconf", 0)
    assert moved.cpu().array.tolist() == [0.0, 1.0, 2.0]
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
            storage.cuda()


def test_map_location_type_errors_as_torch(cpu_file):
    with pytest.raises(TypeError, match="map_location must return a storage or None"):
        ember.load(cpu_file, map_location=lambda storage, location: 3)
    with pytest.raises(ValueError, match="map_location should be"):
        ember.load(cpu_file, map_location=3.5)


@pytest.mark.cuda
def test_cuda_round_trip(tmp_path):
    path = tmp_path / "gpu.pt"
    ember.save({"w": ember.arange(4.0).cuda()}, path)
    assert ember.load(path)["w"].device == ember.device("cuda", 0)
    assert ember.load(path, map_location="cpu")["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert torch.load(path, map_location="cpu")["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
