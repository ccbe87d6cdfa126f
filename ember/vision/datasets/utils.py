"""Dataset file handling, as ``torchvision.datasets.utils``: MD5 integrity checks,
downloads (through ``ember.hub``'s downloader: progress bar, a temporary file renamed into
place only when complete), archive extraction, and the restricted unpickler the pickled
datasets (CIFAR) are read with."""
import bz2
import gzip
import hashlib
import lzma
import os
import pickle
import shutil
import tarfile
import zipfile
from urllib.error import URLError

import numpy as np


class DownloadError(URLError, RuntimeError):
    """A dataset file could not be downloaded: names the URL and the cause. A ``URLError``
    (what urllib raises, and what torchvision's callers catch) and a ``RuntimeError``."""

    def __init__(self, url, cause):
        super().__init__(f"Error downloading {url}: {cause}. Dataset not found or corrupted, "
                         f"and it could not be downloaded (is the machine offline?)")
        self.url = url

    def __str__(self):
        return str(self.reason)


def calculate_md5(fpath, chunk_size=1024 * 1024):
    md5 = hashlib.md5(usedforsecurity=False)
    with open(fpath, "rb") as f:
        while chunk := f.read(chunk_size):
            md5.update(chunk)
    return md5.hexdigest()


def check_md5(fpath, md5, **kwargs):
    return md5 == calculate_md5(fpath, **kwargs)


def check_integrity(fpath, md5=None):
    """``fpath`` is a file and, when ``md5`` is given, its MD5 digest is ``md5``."""
    if not os.path.isfile(fpath):
        return False
    if md5 is None:
        return True
    return check_md5(fpath, md5)


def download_url(url, root, filename=None, md5=None, max_redirect_hops=3):
    """Download ``url`` to ``root/filename`` (the URL's basename by default) unless a file
    with the right ``md5`` is already there. The bytes land in a temporary file that is
    renamed into place when complete; a download whose MD5 is wrong is removed and raises
    ``RuntimeError("File not found or corrupted.")``. Network failures raise
    :class:`DownloadError` naming the URL. (urllib follows redirects itself;
    ``max_redirect_hops`` is accepted for torchvision's signature.)"""
    from ember.hub import download_url_to_file
    root = os.path.expanduser(root)
    if not filename:
        filename = os.path.basename(url)
    fpath = os.fspath(os.path.join(root, filename))
    os.makedirs(root, exist_ok=True)
    if check_integrity(fpath, md5):
        print("Using downloaded and verified file: " + fpath)
        return
    print(f"Downloading {url} to {fpath}")
    try:
        download_url_to_file(url, fpath, progress=True)
    except (URLError, OSError) as e:
        if isinstance(e, DownloadError):
            raise
        raise DownloadError(url, getattr(e, "reason", e)) from e
    if not check_integrity(fpath, md5):
        os.remove(fpath)
        raise RuntimeError("File not found or corrupted.")


def _safe_members(tar, to_path):
    # Refuse members that would land outside the extraction folder (absolute paths, ".."),
    # links to outside it, and device files.
    root = os.path.realpath(to_path)
    for member in tar.getmembers():
        target = os.path.realpath(os.path.join(root, member.name))
        if os.path.commonpath([root, target]) != root:
            raise RuntimeError(f"Refusing to extract {member.name!r}: outside {to_path}")
        if member.islnk() or member.issym():
            link = os.path.realpath(os.path.join(os.path.dirname(target), member.linkname))
            if os.path.commonpath([root, link]) != root:
                raise RuntimeError(f"Refusing to extract link {member.name!r} -> "
                                   f"{member.linkname!r}: outside {to_path}")
        if member.isdev():
            raise RuntimeError(f"Refusing to extract device file {member.name!r}")
        yield member


_DECOMPRESSORS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def _split_suffix(path):
    name = os.path.basename(path).lower()
    for suffix in (".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".txz", ".tar", ".zip",
                   ".gz", ".bz2", ".xz"):
        if name.endswith(suffix):
            return suffix
    raise RuntimeError(f"File '{path}' is not a recognized archive or compressed file: "
                       f"supported are .tar(.gz/.bz2/.xz), .tgz, .zip, .gz, .bz2, .xz")


def extract_archive(from_path, to_path=None, remove_finished=False):
    """Extract an archive (tar, optionally compressed, or zip) into ``to_path``, or
    decompress a single ``.gz``/``.bz2``/``.xz`` file next to it. Returns the folder
    extracted to, or the decompressed file's path."""
    from_path = os.fspath(from_path)
    if to_path is None:
        to_path = os.path.dirname(from_path)
    suffix = _split_suffix(from_path)
    if suffix in _DECOMPRESSORS:
        out = os.path.join(to_path, os.path.basename(from_path)[:-len(suffix)])
        with _DECOMPRESSORS[suffix](from_path, "rb") as src, open(out + ".partial", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.replace(out + ".partial", out)
        result = out
    elif suffix == ".zip":
        with zipfile.ZipFile(from_path) as z:
            root = os.path.realpath(to_path)
            for name in z.namelist():
                target = os.path.realpath(os.path.join(root, name))
                if os.path.commonpath([root, target]) != root:
                    raise RuntimeError(f"Refusing to extract {name!r}: outside {to_path}")
            z.extractall(to_path)
        result = to_path
    else:
        with tarfile.open(from_path, "r:*") as tar:
            tar.extractall(to_path, members=list(_safe_members(tar, to_path)))
        result = to_path
    if remove_finished:
        os.remove(from_path)
    return result


def download_and_extract_archive(url, download_root, extract_root=None, filename=None,
                                 md5=None, remove_finished=False):
    """``download_url`` then ``extract_archive`` (into ``download_root`` by default)."""
    download_root = os.path.expanduser(download_root)
    if extract_root is None:
        extract_root = download_root
    if not filename:
        filename = os.path.basename(url)
    download_url(url, download_root, filename, md5)
    archive = os.path.join(download_root, filename)
    print(f"Extracting {archive} to {extract_root}")
    extract_archive(archive, extract_root, remove_finished)


def verify_str_arg(value, arg=None, valid_values=None, custom_msg=None):
    if not isinstance(value, str):
        msg = "Expected type str" if arg is None else f"Expected type str for argument {arg},"
        raise ValueError(f"{msg} but got type {type(value)}.")
    if valid_values is None:
        return value
    if value not in valid_values:
        if custom_msg is not None:
            raise ValueError(custom_msg)
        raise ValueError(f"Unknown value '{value}' for argument {arg}. Valid values are "
                         f"{{{', '.join(repr(v) for v in valid_values)}}}.")
    return value


# ---- pickled datasets ----------------------------------------------------------------------

def _reconstruct_array(subtype, shape, dtype):
    if subtype is not np.ndarray:
        raise pickle.UnpicklingError(f"refused to rebuild an array of type {subtype!r}")
    try:
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import _reconstruct
    return _reconstruct(subtype, shape, dtype)


def _numpy_scalar(dtype, *args):
    if not isinstance(dtype, np.dtype) or dtype.hasobject:
        raise pickle.UnpicklingError("refused a numpy scalar of Python objects")
    try:
        from numpy._core.multiarray import scalar
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import scalar
    return scalar(dtype, *args)


def _numpy_dtype(*args):
    dtype = np.dtype(*args)
    if dtype.hasobject:
        raise pickle.UnpicklingError("refused a numpy array of Python objects")
    return dtype


_ARRAY_GLOBALS = {
    f"{module}.{name}": obj
    for module in ("numpy.core.multiarray", "numpy._core.multiarray")
    for name, obj in (("_reconstruct", _reconstruct_array), ("scalar", _numpy_scalar))
}
_ARRAY_GLOBALS.update({"numpy.ndarray": np.ndarray, "numpy.dtype": _numpy_dtype})


def _array_unpickler():
    from ember.serialization import _WeightsOnlyUnpickler

    class _ArrayUnpickler(_WeightsOnlyUnpickler):
        """Ember's ``weights_only`` unpickler, also admitting plain NumPy arrays (no object
        dtype): what pickled datasets such as CIFAR hold, and nothing that runs code."""
        dispatch = _WeightsOnlyUnpickler.dispatch.copy()

        def find_class(self, module, name):
            obj = _ARRAY_GLOBALS.get(f"{module}.{name}")
            return obj if obj is not None else super().find_class(module, name)

        def _load_build(self):
            inst = self.stack[-2] if len(self.stack) >= 2 else None
            if type(inst) is np.ndarray or isinstance(inst, np.dtype):
                return pickle._Unpickler.load_build(self)
            return _WeightsOnlyUnpickler._load_build(self)

        dispatch[pickle.BUILD[0]] = _load_build

    return _ArrayUnpickler


def load_pickle(path, encoding="latin1"):
    """Unpickle a dataset file with the restricted unpickler: dicts, lists, strings, bytes,
    numbers and NumPy arrays only. ``encoding="latin1"`` reads Python 2 pickles (CIFAR's)."""
    with open(path, "rb") as f:
        try:
            return _array_unpickler()(f, encoding=encoding).load()
        except pickle.UnpicklingError as e:
            raise pickle.UnpicklingError(f"{path} is not a plain dataset pickle (dicts, lists, "
                                         f"strings, numbers, NumPy arrays): {e}") from e
