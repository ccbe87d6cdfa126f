"""torch.serialization's settings and helpers in ember.serialization, against torch: CRC and
endianness switches wired to the loader and saver, skip_data, mmap flags, the package registry,
the unsafe-globals scan, and the small utilities."""
import argparse
import io
import mmap
import os
import types
import zipfile

import pytest
import torch

import ember
from ember import serialization as es
from torch import serialization as ts


@pytest.fixture(autouse=True)
def _restore_settings():
    saved = (es.get_crc32_options(), es.get_default_load_endianness(),
             es.get_default_mmap_options(), list(es._package_registry))
    torch_saved = (ts.get_crc32_options(), ts.get_default_load_endianness())
    yield
    es.set_crc32_options(saved[0])
    es.set_default_load_endianness(saved[1])
    es.config.mmap_flags = saved[2]
    es._package_registry[:] = saved[3]
    ts.set_crc32_options(torch_saved[0])
    ts.set_default_load_endianness(torch_saved[1])


def _state():
    return {"w": ember.arange(6.0).reshape(2, 3), "i": ember.tensor([1, 2, 3])}


def _crcs(data):
    infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    return {i.filename.split("/", 1)[1]: i.CRC for i in infos}


def test_names_and_defaults_match_torch():
    for name in ("get_crc32_options", "get_default_load_endianness", "get_default_mmap_options"):
        assert getattr(es, name)() == getattr(ts, name)()
    assert [(m.name, m.value) for m in es.LoadEndianness] == \
        [(m.name, m.value) for m in ts.LoadEndianness]
    assert issubclass(es.SourceChangeWarning, Warning)
    assert es.config.compute_crc32 is True


def test_crc32_switch_matches_torch_and_both_read_the_file():
    es.set_crc32_options(False)
    ts.set_crc32_options(False)
    assert es.get_crc32_options() is False
    buf = io.BytesIO()
    ember.save(_state(), buf)
    torch_buf = io.BytesIO()
    torch.save({"w": torch.arange(6.0).reshape(2, 3)}, torch_buf)
    assert set(_crcs(buf.getvalue()).values()) == {0}
    assert set(_crcs(torch_buf.getvalue()).values()) == {0}  # torch leaves them 0 too
    loaded = ember.load(io.BytesIO(buf.getvalue()))
    assert loaded["w"].tolist() == _state()["w"].tolist()
    assert torch.load(io.BytesIO(buf.getvalue()))["i"].tolist() == [1, 2, 3]
    assert ember.load(io.BytesIO(torch_buf.getvalue()))["w"].tolist() == \
        _state()["w"].tolist()
    es.set_crc32_options(True)
    crcs = _crcs(_saved_bytes(_state()))
    assert 0 not in crcs.values()


def _saved_bytes(obj):
    buf = io.BytesIO()
    ember.save(obj, buf)
    return buf.getvalue()


def _without_byteorder(data, swap_to_big=False):
    """The checkpoint rewritten without its byteorder record (optionally with big-endian data),
    as old or foreign writers leave it."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            if info.filename.endswith("byteorder"):
                continue
            payload = source.read(info)
            if swap_to_big and "/data/" in info.filename:
                import numpy as np
                payload = np.frombuffer(payload, "<f4").astype(">f4").tobytes()
            target.writestr(info.filename, payload)
    return out.getvalue()


@pytest.mark.parametrize("endianness", [None, "LITTLE", "BIG", "NATIVE"])
def test_default_load_endianness_matches_torch(endianness):
    data = _without_byteorder(_saved_bytes({"w": ember.tensor([1.5, -2.0, 3.25])}),
                              swap_to_big=endianness == "BIG")
    es.set_default_load_endianness(None if endianness is None
                                   else es.LoadEndianness[endianness])
    ts.set_default_load_endianness(None if endianness is None
                                   else ts.LoadEndianness[endianness])
    assert ember.load(io.BytesIO(data))["w"].tolist() == \
        torch.load(io.BytesIO(data))["w"].tolist() == [1.5, -2.0, 3.25]


def test_set_default_load_endianness_rejects_as_torch():
    for lib in (es, ts):
        with pytest.raises(TypeError, match="Invalid argument type in function "
                                            "set_default_load_endianness"):
            lib.set_default_load_endianness("little")


def test_unknown_byteorder_record_raises_as_torch():
    data = _saved_bytes({"w": ember.ones(2)})
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            payload = b"middle" if info.filename.endswith("byteorder") else source.read(info)
            target.writestr(info.filename, payload)
    for lib in (ember, torch):
        with pytest.raises(ValueError, match="Unknown endianness type: middle"):
            lib.load(io.BytesIO(out.getvalue()))


def test_skip_data_saves_sizes_without_bytes_as_torch():
    state = {"w": ember.arange(4.0), "b": ember.ones(3, dtype=ember.int64)}
    buf = io.BytesIO()
    with es.skip_data():
        ember.save(state, buf)
    torch_buf = io.BytesIO()
    with ts.skip_data():
        torch.save({"w": torch.arange(4.0), "b": torch.ones(3, dtype=torch.int64)}, torch_buf)
    infos = {i.filename.split("/", 1)[1]: i for i in
             zipfile.ZipFile(io.BytesIO(buf.getvalue())).infolist()}
    torch_infos = {i.filename.split("/", 1)[1]: i for i in
                   zipfile.ZipFile(io.BytesIO(torch_buf.getvalue())).infolist()}
    data_records = sorted(n for n in infos if n.startswith("data/"))
    assert [(infos[n].file_size, infos[n].CRC) for n in data_records] == \
        [(torch_infos[n].file_size, torch_infos[n].CRC) for n in data_records]
    loaded, torch_loaded = ember.load(io.BytesIO(buf.getvalue())), \
        torch.load(io.BytesIO(buf.getvalue()))
    assert loaded["w"].tolist() == torch_loaded["w"].tolist() == [0.0] * 4
    assert loaded["b"].tolist() == torch_loaded["b"].tolist() == [0] * 3
    with es.skip_data():
        skipped = ember.load(io.BytesIO(_saved_bytes(state)))
    assert skipped["w"].shape == (4,) and skipped["b"].dtype is ember.int64
    assert ember.load(io.BytesIO(_saved_bytes(state)))["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(NotImplementedError, match="no fake tensors"):
        es.skip_data(materialize_fake_tensors=True)


def test_mmap_options_match_torch(tmp_path):
    for lib in (es, ts):
        with pytest.raises(ValueError, match="expected mmap.MAP_PRIVATE or mmap.MAP_SHARED, "
                                             "but got 12345"):
            lib.set_default_mmap_options(12345)
    path = tmp_path / "w.pt"
    ember.save({"w": ember.zeros(4)}, path)
    with es.set_default_mmap_options(mmap.MAP_SHARED):
        assert es.get_default_mmap_options() == mmap.MAP_SHARED
        loaded = ember.load(path, mmap=True)
        loaded["w"][0] = 7.0  # shared: written through to the file
        del loaded
    assert es.get_default_mmap_options() == mmap.MAP_PRIVATE
    assert ember.load(path, mmap=True)["w"].tolist() == [7.0, 0.0, 0.0, 0.0]
    assert torch.load(path)["w"].tolist() == [7.0, 0.0, 0.0, 0.0]  # torch checks no CRC
    with pytest.raises(RuntimeError, match="fails its CRC-32 check"):
        ember.load(path)  # the bytes changed after saving, and Ember's default load checks
    private = ember.load(path, mmap=True)
    private["w"][1] = 5.0  # private (the default): the file keeps its bytes
    del private
    assert ember.load(path, mmap=True)["w"].tolist() == [7.0, 0.0, 0.0, 0.0]


def test_location_tag_and_restore_match_torch():
    assert es.location_tag(ember.ones(2)) == ts.location_tag(torch.ones(2)) == "cpu"
    storage = es._Storage(ember.ones(2)._data.ravel(), ember.float32, ember.device("cpu"))
    assert es.location_tag(storage) == "cpu"
    assert es.default_restore_location(storage, "cpu") is storage
    with pytest.raises(RuntimeError, match=r"don't know how to restore data location of "
                                           r"ember\.serialization\._Storage \(tagged with "
                                           r"nowhere\)"):
        es.default_restore_location(storage, "nowhere")
    with pytest.raises(RuntimeError, match="don't know how to restore data location of "
                                           "torch.storage.UntypedStorage"):
        ts.default_restore_location(torch.ones(2).untyped_storage(), "nowhere")
    with pytest.raises(RuntimeError, match="don't know how to determine data location of int"):
        es.location_tag(3)


def test_register_package_is_used_by_load():
    seen = []

    def deserializer(storage, location):
        if location.startswith("vault"):
            seen.append(location)
            return storage  # kept on the CPU
        return None

    es.register_package(5, lambda storage: None, deserializer)
    assert es._package_registry[0][0] == 5
    data = _saved_bytes({"w": ember.ones(2)})
    loaded = ember.load(io.BytesIO(data), map_location={"cpu": "vault:1"})
    assert seen == ["vault:1"] and loaded["w"].tolist() == [1.0, 1.0]
    # torch's loader goes through its registry the same way.
    torch_seen = []

    def torch_deserializer(storage, location):
        if location.startswith("vault"):
            torch_seen.append(location)
            return storage
        return None

    ts.register_package(5, lambda storage: None, torch_deserializer)
    try:
        torch.load(io.BytesIO(data), map_location={"cpu": "vault:1"})
    finally:
        ts._package_registry[:] = [e for e in ts._package_registry if e[2] is not
                                   torch_deserializer]
    assert torch_seen == seen


def test_get_unsafe_globals_in_checkpoint_matches_torch():
    obj = {"w": torch.ones(2), "args": argparse.Namespace(lr=0.1),
           "od": __import__("collections").OrderedDict(a=1)}
    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    assert sorted(es.get_unsafe_globals_in_checkpoint(io.BytesIO(data))) == \
        sorted(ts.get_unsafe_globals_in_checkpoint(io.BytesIO(data))) == ["argparse.Namespace"]
    with es.safe_globals([argparse.Namespace]):
        assert es.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == []
    assert es.get_unsafe_globals_in_checkpoint(io.BytesIO(_saved_bytes(_state()))) == []
    proto4 = io.BytesIO()
    ember.save({"args": argparse.Namespace(x=1), "w": ember.ones(1)}, proto4, pickle_protocol=4)
    assert es.get_unsafe_globals_in_checkpoint(io.BytesIO(proto4.getvalue())) == \
        ["argparse.Namespace"]
    for lib in (es, ts):
        with pytest.raises(ValueError, match="Expected input to be a checkpoint returned by "
                                             "torch.save"):
            lib.get_unsafe_globals_in_checkpoint(io.BytesIO(b"not a zip file at all"))


def test_check_module_version_matches_torch():
    Module = types.ModuleType("fake")
    Module.__version__ = "1.12.3"
    Malformed = types.ModuleType("fake")
    Malformed.__version__ = "1.x"

    for req in [(1, 12), (1, 13), (1,), (1, 12, 3), (2, 0), ("1", "12")]:
        assert es.check_module_version_greater_or_equal(Module, req) == \
            ts.check_module_version_greater_or_equal(Module, req)
    for lib in (es, ts):
        with pytest.raises(RuntimeError, match="'fake' module version string is malformed "
                                               r"'1.x' and cannot be compared with tuple \(1, 2\)"):
            lib.check_module_version_greater_or_equal(Malformed, (1, 2))
        with pytest.warns(UserWarning, match="but continuing assuming that requirement is met"):
            assert lib.check_module_version_greater_or_equal(Malformed, (1, 2),
                                                             error_if_malformed=False)


def test_mkdtemp_makes_and_removes_a_directory():
    with es.mkdtemp() as path:
        assert os.path.isdir(path)
        open(os.path.join(path, "f"), "w").close()
    assert not os.path.exists(path)
    with ts.mkdtemp() as torch_path:
        assert os.path.isdir(torch_path)
    assert not os.path.exists(torch_path)
