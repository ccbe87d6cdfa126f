"""ember.vision.datasets against torchvision's datasets on the same small synthetic files
(IDX, CIFAR pickles, SVHN .mat, image folders): lengths, PIL modes, pixels, targets,
classes. Downloads run against a local HTTP server on 127.0.0.1 that the test starts and
stops, serving the synthetic files; their MD5s are patched into the classes' resource lists
(class attributes, as torchvision's)."""
import functools
import gzip
import hashlib
import http.server
import io
import os
import pickle
import struct
import tarfile
import threading

import numpy as np
import pytest

from tests.vision.torchvision_oracle import import_torchvision

tv = import_torchvision()
PIL = pytest.importorskip("PIL.Image")
import ember.vision.datasets as ED  # noqa: E402
from ember.vision.datasets import utils as EU  # noqa: E402

RNG = np.random.default_rng(0)


def _idx(arr):
    code = {np.dtype(np.uint8): 8}[arr.dtype]
    header = struct.pack(">I", (code << 8) | arr.ndim) + b"".join(
        struct.pack(">I", s) for s in arr.shape)
    return header + arr.tobytes()


def _mnist_files(n_train=7, n_test=4, size=28):
    files = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        files[f"{prefix}-images-idx3-ubyte"] = _idx(
            RNG.integers(0, 256, (n, size, size), dtype=np.uint8))
        files[f"{prefix}-labels-idx1-ubyte"] = _idx(RNG.integers(0, 10, n, dtype=np.uint8))
    return files


def _write(folder, files, gz=False):
    os.makedirs(folder, exist_ok=True)
    for name, data in files.items():
        if gz:
            with gzip.open(os.path.join(folder, name + ".gz"), "wb") as f:
                f.write(data)
        else:
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)


def _same_samples(ours, theirs):
    assert len(ours) == len(theirs)
    for i in range(len(theirs)):
        (a, y), (b, z) = ours[i], theirs[i]
        assert y == z and type(y) is type(z)
        assert a.mode == b.mode and a.size == b.size
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("name", ["MNIST", "FashionMNIST", "KMNIST"])
@pytest.mark.parametrize("train", [True, False])
def test_mnist_family_matches_torchvision(tmp_path, name, train):
    _write(tmp_path / name / "raw", _mnist_files())
    ours = getattr(ED, name)(str(tmp_path), train=train)
    theirs = getattr(tv.datasets, name)(str(tmp_path), train=train)
    _same_samples(ours, theirs)
    assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
    assert ours.data.tolist() == theirs.data.tolist()
    assert ours.targets.tolist() == theirs.targets.tolist()
    assert repr(ours).splitlines()[1:] == repr(theirs).splitlines()[1:]


def test_mnist_reads_gzipped_files_and_transforms(tmp_path):
    files = _mnist_files()
    _write(tmp_path / "MNIST" / "raw", files, gz=True)
    ours = ED.MNIST(str(tmp_path), train=True, transform=lambda im: np.asarray(im).sum(),
                    target_transform=lambda t: t + 100)
    imgs = np.frombuffer(files["train-images-idx3-ubyte"][16:], np.uint8).reshape(-1, 28, 28)
    labels = np.frombuffer(files["train-labels-idx1-ubyte"][8:], np.uint8)
    assert len(ours) == 7
    assert ours[3] == (imgs[3].sum(), int(labels[3]) + 100)


def test_emnist_split(tmp_path):
    raw = tmp_path / "EMNIST" / "raw"
    files = _mnist_files()
    _write(raw, {f"emnist-letters-{'train' if k.startswith('train') else 'test'}-"
                 f"{k.split('-', 1)[1]}": v for k, v in files.items()})
    ours = ED.EMNIST(str(tmp_path), split="letters", train=False)
    theirs = tv.datasets.EMNIST(str(tmp_path), split="letters", train=False)
    _same_samples(ours, theirs)
    assert ours.classes == theirs.classes
    with pytest.raises(ValueError, match="Unknown value 'nope' for argument split"):
        ED.EMNIST(str(tmp_path), split="nope")


def _cifar_batches(kind):
    if kind == 10:
        names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
        meta_name, meta = "batches.meta", {"label_names": [f"c{i}" for i in range(10)]}
        label_key = "labels"
    else:
        names, meta_name = ["train", "test"], "meta"
        meta = {"fine_label_names": [f"f{i}" for i in range(100)],
                "coarse_label_names": [f"k{i}" for i in range(20)]}
        label_key = "fine_labels"
    files = {}
    for name in names:
        n = 3
        entry = {"data": RNG.integers(0, 256, (n, 3072), dtype=np.uint8),
                 label_key: [int(v) for v in RNG.integers(0, kind, n)],
                 "batch_label": name, "filenames": [f"{name}_{i}.png" for i in range(n)]}
        files[name] = pickle.dumps(entry, protocol=2)
    files[meta_name] = pickle.dumps(meta, protocol=2)
    return files


def _md5(data):
    return hashlib.md5(data).hexdigest()


def _patch_cifar(monkeypatch, classes, files):
    for cls in classes:
        monkeypatch.setattr(cls, "train_list", [[n, _md5(files[n])] for n, _ in cls.train_list])
        monkeypatch.setattr(cls, "test_list", [[n, _md5(files[n])] for n, _ in cls.test_list])
        monkeypatch.setattr(cls, "meta", dict(cls.meta, md5=_md5(files[cls.meta["filename"]])))


@pytest.mark.parametrize("kind", [10, 100])
def test_cifar_matches_torchvision(tmp_path, monkeypatch, kind):
    ours_cls = getattr(ED, f"CIFAR{kind}")
    theirs_cls = getattr(tv.datasets, f"CIFAR{kind}")
    files = _cifar_batches(kind)
    _write(tmp_path / ours_cls.base_folder, files)
    _patch_cifar(monkeypatch, (ours_cls, theirs_cls), files)
    for train in (True, False):
        ours, theirs = ours_cls(str(tmp_path), train=train), theirs_cls(str(tmp_path),
                                                                         train=train)
        _same_samples(ours, theirs)
        assert ours.classes == theirs.classes and ours.targets == theirs.targets
    with open(tmp_path / ours_cls.base_folder / ours_cls.test_list[0][0], "ab") as f:
        f.write(b"corrupt")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted. You can use "
                                           "download=True to download it"):
        ours_cls(str(tmp_path), train=False)


def test_cifar_pickles_are_read_with_the_restricted_unpickler(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))
    path = tmp_path / "evil"
    path.write_bytes(pickle.dumps({"data": Evil()}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="posix.system"):
        EU.load_pickle(str(path))
    path.write_bytes(pickle.dumps({"a": np.array([object()])}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="Python objects"):
        EU.load_pickle(str(path))


def test_svhn_matches_torchvision(tmp_path, monkeypatch):
    sio = pytest.importorskip("scipy.io")
    X = RNG.integers(0, 256, (32, 32, 3, 5), dtype=np.uint8)
    y = np.array([[10], [1], [2], [10], [9]], dtype=np.uint8)
    sio.savemat(str(tmp_path / "test_32x32.mat"), {"X": X, "y": y})
    md5 = EU.calculate_md5(str(tmp_path / "test_32x32.mat"))
    for cls in (ED.SVHN, tv.datasets.SVHN):
        monkeypatch.setattr(cls, "split_list", dict(cls.split_list, test=[
            cls.split_list["test"][0], "test_32x32.mat", md5]))
    _same_samples(ED.SVHN(str(tmp_path), split="test"),
                  tv.datasets.SVHN(str(tmp_path), split="test"))


def test_image_folder_matches_torchvision(tmp_path):
    for cls, n in (("cat", 2), ("dog", 3)):
        (tmp_path / cls / "sub").mkdir(parents=True)
        for i in range(n):
            arr = RNG.integers(0, 256, (5 + i, 6, 3), dtype=np.uint8)
            PIL.fromarray(arr).save(tmp_path / cls / ("sub" if i else "") / f"{i}.png")
        (tmp_path / cls / "notes.txt").write_text("not an image")
    ours, theirs = ED.ImageFolder(str(tmp_path)), tv.datasets.ImageFolder(str(tmp_path))
    assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
    assert ([(os.path.relpath(p, tmp_path), t) for p, t in ours.samples]
            == [(os.path.relpath(p, tmp_path), t) for p, t in theirs.samples])
    _same_samples(ours, theirs)
    npy = ED.DatasetFolder(str(tmp_path), loader=lambda p: open(p).read(), extensions=".txt")
    assert [s[1] for s in npy.samples] == [0, 1] and npy[0][0] == "not an image"
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes empty"):
        ED.ImageFolder(str(tmp_path))
    assert len(ED.ImageFolder(str(tmp_path), allow_empty=True)) == 5


def test_fake_data_is_deterministic_per_index():
    ds = ED.FakeData(size=4, image_size=(3, 6, 5), num_classes=3)
    a, b = ds[2], ds[2]
    assert a[0].mode == "RGB" and a[0].size == (5, 6) and 0 <= a[1] < 3 and a[1] == b[1]
    np.testing.assert_array_equal(np.asarray(a[0]), np.asarray(b[0]))
    with pytest.raises(IndexError):
        ds[4]


@pytest.fixture
def http_root(tmp_path):
    """A local HTTP server on 127.0.0.1 serving ``tmp_path/www``; stopped after the test."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(www))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield www, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _closed_port_url():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/"


def test_mnist_download_from_local_server(tmp_path, http_root, monkeypatch):
    www, url = http_root
    files = _mnist_files()
    resources = []
    for name, data in files.items():
        gz = gzip.compress(data)
        (www / (name + ".gz")).write_bytes(gz)
        resources.append((name + ".gz", _md5(gz)))
    dead = _closed_port_url()
    monkeypatch.setattr(ED.MNIST, "resources", resources)
    monkeypatch.setattr(ED.MNIST, "mirrors", [dead, url])  # the first mirror is down
    root = tmp_path / "data"
    ours = ED.MNIST(str(root), train=False, download=True)
    raw = root / "MNIST" / "raw"
    assert sorted(os.listdir(raw)) == sorted([*files, *(n + ".gz" for n in files)])
    monkeypatch.setattr(tv.datasets.MNIST, "resources", resources)
    _same_samples(ours, tv.datasets.MNIST(str(root), train=False))
    ED.MNIST(str(root), train=True, download=True)  # already there: no download
    monkeypatch.setattr(ED.MNIST, "mirrors", [dead])
    with pytest.raises(RuntimeError, match="Error downloading train-images-idx3-ubyte.gz"):
        ED.MNIST(str(tmp_path / "offline"), download=True)
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True"):
        ED.MNIST(str(tmp_path / "offline"))


def test_cifar_download_and_checksums(tmp_path, http_root, monkeypatch):
    www, url = http_root
    files = _cifar_batches(10)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (www / "cifar-10-python.tar.gz").write_bytes(buf.getvalue())
    _patch_cifar(monkeypatch, (ED.CIFAR10, tv.datasets.CIFAR10), files)
    monkeypatch.setattr(ED.CIFAR10, "url", url + "cifar-10-python.tar.gz")
    monkeypatch.setattr(ED.CIFAR10, "tgz_md5", _md5(buf.getvalue()))
    ours = ED.CIFAR10(str(tmp_path / "d"), train=True, download=True)
    _same_samples(ours, tv.datasets.CIFAR10(str(tmp_path / "d"), train=True))
    monkeypatch.setattr(ED.CIFAR10, "tgz_md5", "0" * 32)
    with pytest.raises(RuntimeError, match="File not found or corrupted"):
        ED.CIFAR10(str(tmp_path / "bad"), download=True)
    assert not os.path.exists(tmp_path / "bad" / "cifar-10-python.tar.gz")
    dead = _closed_port_url() + "cifar-10-python.tar.gz"
    monkeypatch.setattr(ED.CIFAR10, "url", dead)
    with pytest.raises(RuntimeError) as info:
        ED.CIFAR10(str(tmp_path / "offline"), download=True)
    assert dead in str(info.value) and "Dataset not found or corrupted" in str(info.value)


def test_utils_integrity_and_safe_extraction(tmp_path):
    f = tmp_path / "a.bin"
    f.write_bytes(b"ember")
    assert EU.check_integrity(str(f)) and EU.check_integrity(str(f), _md5(b"ember"))
    assert not EU.check_integrity(str(f), "0" * 32) and not EU.check_integrity(str(tmp_path / "no"))
    assert EU.calculate_md5(str(f)) == tv.datasets.utils.calculate_md5(str(f))
    evil = tmp_path / "evil.tar"
    with tarfile.open(evil, "w") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(RuntimeError, match="outside"):
        EU.extract_archive(str(evil), str(tmp_path / "out"))
    assert not (tmp_path / "escaped.txt").exists()
    gz = tmp_path / "b.txt.gz"
    gz.write_bytes(gzip.compress(b"hello"))
    assert open(EU.extract_archive(str(gz)), "rb").read() == b"hello"
