"""Compiling an extension with the system C++ compiler, and the build cache.

One compiler call builds a shared library from all the sources (about 0.3 s for a small
extension: no pybind11, no ATen headers). The library's file name carries a key — a hash of
the sources, the flags, Ember's headers and the compiler's identity — so a second load of the
same extension finds its library and compiles nothing, while a changed source builds a new
file beside the old one (a process cannot reload a library under the same path). Concurrent
builds of one extension take a file lock in its build directory."""
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys

from .abi import ABI_VERSION

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "include")
HEADERS = ("torch/extension.h", "ember_pybind.h")
DEFAULT_CFLAGS = ["-O2", "-pthread"]  # -pthread: at::parallel_for starts std::threads


def default_build_root():
    """``~/.cache/ember_extensions`` (``$XDG_CACHE_HOME`` honoured)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.realpath(os.path.join(cache, "ember_extensions"))


def build_directory(name):
    """As torch chooses it: ``$TORCH_EXTENSIONS_DIR/<name>``, else
    ``<default root>/py311_cpu/<name>``."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if root:
        return os.path.join(root, name)
    tag = f"py{sys.version_info.major}{sys.version_info.minor}{getattr(sys, 'abiflags', '')}_cpu"
    return os.path.join(default_build_root(), tag, name)


def compiler():
    """The C++ compiler (``$CXX``, as setuptools and torch read it, else ``c++``), resolved."""
    cxx = os.environ.get("CXX", "c++")
    path = shutil.which(cxx)
    if path is None:
        raise RuntimeError(f"C++ extensions need a C++ compiler: {cxx!r} was not found on PATH "
                           "(install g++ or clang, or set CXX)")
    return path


def _compiler_identity(path):
    # The resolved binary and its size and time stand for its version without running it, so
    # a cache hit starts no process at all.
    real = os.path.realpath(path)
    st = os.stat(real)
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"


def _header_digest():
    h = hashlib.sha256()
    for rel in HEADERS:
        with open(os.path.join(INCLUDE_DIR, rel), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def command(name, sources, output, extra_cflags, extra_ldflags, extra_include_paths):
    cxx = compiler()
    includes = [f"-I{p}" for p in [INCLUDE_DIR, *extra_include_paths]]
    return [cxx, "-shared", "-fPIC", "-std=c++17", *DEFAULT_CFLAGS,
            f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H", *includes,
            *extra_cflags, *sources, "-o", output, *extra_ldflags]


def build_key(name, source_texts, extra_cflags, extra_ldflags, extra_include_paths):
    h = hashlib.sha256()
    for part in [f"abi{ABI_VERSION}", name, _compiler_identity(compiler()), _header_digest(),
                 *DEFAULT_CFLAGS, "|", *extra_cflags, "|", *extra_ldflags, "|",
                 *extra_include_paths, "|"]:
        h.update(part.encode() + b"\0")
    for text in source_texts:
        h.update(hashlib.sha256(text.encode() if isinstance(text, str) else text).digest())
    return h.hexdigest()[:16]


def run_compiler(cmd):
    """Run one compiler command; (returncode, combined output). Tests patch this to prove a
    cached load compiles nothing."""
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout


@contextlib.contextmanager
def _locked(directory):
    import fcntl
    with open(os.path.join(directory, "lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build(name, sources, directory, key, extra_cflags, extra_ldflags, extra_include_paths,
          verbose, write_sources=None):
    """The path of ``name``'s library for ``key``, compiling it first if it is not built.
    ``write_sources`` (inline sources) writes the source files, only when a build runs."""
    os.makedirs(directory, exist_ok=True)
    output = os.path.join(directory, f"{name}_{key}.so")
    if os.path.exists(output):
        if verbose:
            print(f"Loading extension module {name} from {output} (no build needed)...")
        return output
    with _locked(directory):
        if os.path.exists(output):  # another process built it while we waited
            return output
        if write_sources is not None:
            write_sources()
        partial = f"{output}.{os.getpid()}.tmp"
        cmd = command(name, sources, partial, extra_cflags, extra_ldflags, extra_include_paths)
        if verbose:
            print(f"Using {directory} as the build directory of extension {name}")
            print(f"Building extension module {name}...\n{' '.join(cmd)}")
        rc, out = run_compiler(cmd)
        if rc != 0:
            with contextlib.suppress(FileNotFoundError):
                os.remove(partial)
            raise RuntimeError(f"Error building extension '{name}':\n{' '.join(cmd)}\n{out}")
        if verbose and out:
            print(out)
        os.replace(partial, output)
    if verbose:
        print(f"Loading extension module {name}...")
    return output
