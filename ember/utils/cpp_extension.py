"""C++ extensions, as ``torch.utils.cpp_extension``: ``load_inline``, ``load`` and the
setuptools classes ``CppExtension``/``BuildExtension``.

Sources are written against ``<torch/extension.h>`` as in PyTorch's tutorials; the header
found there on the include path is Ember's own (``ember/include/torch/extension.h``): a
``torch::Tensor`` that views an Ember tensor's memory, the factories, ``TORCH_CHECK``,
``AT_DISPATCH_*`` and ``PYBIND11_MODULE``/``m.def``. The library is built with one call of the
system C++ compiler and loaded with ctypes — no pybind11, no Python headers — and each call
passes contiguous or strided tensors without copying (pointer, sizes, strides, dtype,
device). ``cuda_sources`` are CUDA kernels compiled by NVRTC through CuPy (see
``_cpp_extension/cuda.py``). What the header leaves out: docs/extending.md."""
import os
import threading

from ._cpp_extension import build as _build
from ._cpp_extension.abi import Library

__all__ = ["load", "load_inline", "include_paths", "get_default_build_root", "CppExtension",
           "CUDAExtension", "BuildExtension", "get_compiler_abi_compatibility_and_version",
           "verify_ninja_availability", "is_ninja_available"]

# Libraries already loaded by this process, by path: loading the same build again returns the
# same module, as importing an extension twice does.
_loaded = {}
_loaded_lock = threading.Lock()


def include_paths(device_type="cpu", torch_include_dirs=True):
    """The include directories an Ember extension is compiled with (the one holding
    ``torch/extension.h``)."""
    return [_build.INCLUDE_DIR]


def get_default_build_root():
    return _build.default_build_root()


def is_ninja_available():
    """Ember's builds need no ninja: one compiler call builds an extension."""
    import shutil
    return shutil.which("ninja") is not None


def verify_ninja_availability():
    if not is_ninja_available():
        raise RuntimeError("Ninja is required to load C++ extensions (pip install ninja)")


def get_compiler_abi_compatibility_and_version():
    import subprocess
    out = subprocess.run([_build.compiler(), "-dumpfullversion", "-dumpversion"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    from ..torch_version import TorchVersion
    return True, TorchVersion(out.strip() or "0")


def _as_list(x):
    if x is None:
        return []
    return [x] if isinstance(x, str) else list(x)


def _load_library(name, path, is_python_module):
    with _loaded_lock:
        entry = _loaded.get(path)
        if entry is None:
            import ctypes
            entry = Library(path, mode=ctypes.RTLD_LOCAL if is_python_module
                            else ctypes.RTLD_GLOBAL)
            _loaded[path] = entry
    return entry.module(name) if is_python_module else None


def _check_name(name):
    if not name.isidentifier():
        raise ValueError(f"extension name {name!r} must be a valid identifier: it becomes "
                         "TORCH_EXTENSION_NAME in the sources")


def _unsupported(**options):
    for option, (value, why) in options.items():
        if value:
            raise NotImplementedError(f"cpp_extension: {option}=True is not supported by "
                                      f"Ember: {why}")


def load_inline(name, cpp_sources, cuda_sources=None, sycl_sources=None, functions=None,
                extra_cflags=None, extra_cuda_cflags=None, extra_sycl_cflags=None,
                extra_ldflags=None, extra_include_paths=None, build_directory=None,
                verbose=False, with_cuda=None, with_sycl=None, is_python_module=True,
                with_pytorch_error_handling=True, keep_intermediates=True, use_pch=False,
                no_implicit_headers=False):
    """Build an extension from source strings, as ``torch.utils.cpp_extension.load_inline``.

    ``#include <torch/extension.h>`` is prepended to ``cpp_sources`` (unless
    ``no_implicit_headers``); ``functions`` (names, or {name: docstring}) generates the
    ``PYBIND11_MODULE`` that binds them. Returns a module whose attributes are the bound
    functions (and, with ``cuda_sources``, a launcher per kernel named in ``functions``).
    C++ exceptions always reach Python as torch's error types, so
    ``with_pytorch_error_handling`` changes nothing; ``keep_intermediates=False`` removes the
    generated source once the library is built."""
    _check_name(name)
    _unsupported(sycl_sources=(sycl_sources, "Ember has no SYCL backend"),
                 with_sycl=(with_sycl, "Ember has no SYCL backend"),
                 use_pch=(use_pch, "Ember's header is small enough to need no precompiling"))
    cpp = "\n".join(_as_list(cpp_sources))
    cuda = "\n".join(_as_list(cuda_sources))
    if isinstance(functions, str):
        functions = [functions]
    docs = dict(functions) if isinstance(functions, dict) else {f: f for f in functions or ()}
    kernels = {}
    if cuda or with_cuda:
        from ._cpp_extension import cuda as _cuda
        found = _cuda.kernel_names(cuda)
        kernels = _cuda.build(name, cuda, [f for f in docs if f in found] or None,
                              extra_cuda_cflags, verbose)
        docs = {f: d for f, d in docs.items() if f not in kernels}
    module = None
    if cpp.strip() or docs:
        text = cpp if no_implicit_headers else "#include <torch/extension.h>\n" + cpp
        if docs:
            defs = "".join(f'  m.def("{f}", &{f}, {_c_string(doc)});\n' for f, doc in docs.items())
            text += f"\n\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{\n{defs}}}\n"
        cflags, ldflags = _as_list(extra_cflags), _as_list(extra_ldflags)
        includes = _as_list(extra_include_paths)
        key = _build.build_key(name, [text], cflags, ldflags, includes)
        directory = build_directory or _build.build_directory(name)
        source = os.path.join(directory, f"{name}_{key}.cpp")

        def write():
            with open(source, "w") as f:
                f.write(text)
        path = _build.build(name, [source], directory, key, cflags, ldflags, includes, verbose,
                            write_sources=write)
        if not keep_intermediates and os.path.exists(source):
            os.remove(source)
        module = _load_library(name, path, is_python_module)
    if not is_python_module:
        return None
    if module is None:
        import types
        module = types.ModuleType(name)
    for kernel_name, launcher in kernels.items():
        setattr(module, kernel_name, launcher)
    return module


def _c_string(text):
    escaped = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def load(name, sources, extra_cflags=None, extra_cuda_cflags=None, extra_sycl_cflags=None,
         extra_ldflags=None, extra_include_paths=None, build_directory=None, verbose=False,
         with_cuda=None, with_sycl=None, is_python_module=True, is_standalone=False,
         keep_intermediates=True):
    """Build an extension from source files, as ``torch.utils.cpp_extension.load``. C++ files
    are compiled into one library (one of them holds the ``PYBIND11_MODULE``); ``.cu`` files
    are CUDA kernels, compiled by NVRTC (every ``__global__`` kernel becomes a launcher)."""
    _check_name(name)
    _unsupported(with_sycl=(with_sycl, "Ember has no SYCL backend"),
                 is_standalone=(is_standalone, "Ember builds extension libraries, not "
                                               "executables"))
    sources = [os.path.abspath(s) for s in _as_list(sources)]
    for s in sources:
        if not os.path.exists(s):
            raise FileNotFoundError(f"load(): source file {s} does not exist")
    cu = [s for s in sources if s.endswith((".cu", ".cuh"))]
    cpp = [s for s in sources if s not in cu]
    kernels = {}
    if cu or with_cuda:
        from ._cpp_extension import cuda as _cuda
        text = "\n".join(open(s).read() for s in cu)
        kernels = _cuda.build(name, text, None, extra_cuda_cflags, verbose)
    module = None
    if cpp:
        cflags, ldflags = _as_list(extra_cflags), _as_list(extra_ldflags)
        includes = _as_list(extra_include_paths)
        texts = []
        for s in cpp:
            with open(s, "rb") as f:
                texts.append(s.encode() + b"\0" + f.read())
        key = _build.build_key(name, texts, cflags, ldflags, includes)
        directory = build_directory or _build.build_directory(name)
        path = _build.build(name, cpp, directory, key, cflags, ldflags, includes, verbose)
        module = _load_library(name, path, is_python_module)
    if not is_python_module:
        return None
    if module is None:
        import types
        module = types.ModuleType(name)
    for kernel_name, launcher in kernels.items():
        setattr(module, kernel_name, launcher)
    return module


# ---- setuptools ----------------------------------------------------------------------------

_PYINIT_SHIM = r"""// Generated by ember.utils.cpp_extension.BuildExtension: the Python module entry
// point of an Ember extension. It creates the module and lets Ember fill it from this library's table.
#include <Python.h>
#include <dlfcn.h>

static struct PyModuleDef ember_module_def = {PyModuleDef_HEAD_INIT, "%(name)s", NULL, -1, NULL};

extern "C" PyObject* PyInit_%(name)s(void) {
    Dl_info info;
    if (!dladdr((void*)&PyInit_%(name)s, &info) || !info.dli_fname) {
        PyErr_SetString(PyExc_ImportError, "%(name)s: cannot find its own library path");
        return NULL;
    }
    PyObject* module = PyModule_Create(&ember_module_def);
    if (!module) return NULL;
    PyObject* helper = PyImport_ImportModule("ember.utils.cpp_extension");
    if (!helper) { Py_DECREF(module); return NULL; }
    PyObject* r = PyObject_CallMethod(helper, "_fill_built_extension", "Os", module,
                                      info.dli_fname);
    Py_DECREF(helper);
    if (!r) { Py_DECREF(module); return NULL; }
    Py_DECREF(r);
    return module;
}
"""


def _fill_built_extension(module, path):
    """Called by a setuptools-built extension's ``PyInit``: bind its functions onto it."""
    built = _load_library(module.__name__, path, is_python_module=True)
    for k, v in vars(built).items():
        if not k.startswith("__"):
            setattr(module, k, v)
    if built.__doc__:
        module.__doc__ = built.__doc__


def CppExtension(name, sources, *args, **kwargs):
    """A ``setuptools.Extension`` for C++ written against ``<torch/extension.h>``: Ember's
    include directory is added and the language is C++. Build it with ``BuildExtension``."""
    from setuptools import Extension
    kwargs["include_dirs"] = list(kwargs.get("include_dirs", [])) + include_paths()
    kwargs["language"] = "c++"
    return Extension(name, sources, *args, **kwargs)


def CUDAExtension(name, sources, *args, **kwargs):
    """Ember compiles no CUDA at install time (there is no nvcc step): its CUDA kernels are
    built at run time by NVRTC. This raises, naming the way that works."""
    raise NotImplementedError(
        "CUDAExtension: Ember compiles CUDA kernels at run time with NVRTC, not with nvcc at "
        "install time; ship the .cu sources and build them with "
        "ember.utils.cpp_extension.load(name, sources) (or load_inline(cuda_sources=...))")


def _make_build_extension():
    from setuptools.command.build_ext import build_ext as base

    class BuildExtension(base):
        """setuptools' ``build_ext`` for Ember extensions: compiles with C++17 and
        ``TORCH_EXTENSION_NAME``, and adds the module entry point that loads the library's
        ``PYBIND11_MODULE`` table into Python (``import my_extension`` then works)."""

        @classmethod
        def with_options(cls, **options):
            def init(self, *args, **kwargs):
                kwargs.update(options)
                cls.__init__(self, *args, **kwargs)
            return type(cls.__name__, (cls,), {"__init__": init})

        def __init__(self, *args, **kwargs):
            self.no_python_abi_suffix = kwargs.pop("no_python_abi_suffix", False)
            kwargs.pop("use_ninja", None)
            super().__init__(*args, **kwargs)

        def build_extensions(self):
            for ext in self.extensions:
                short = ext.name.rsplit(".", 1)[-1]
                args = ext.extra_compile_args
                if isinstance(args, dict):
                    args = list(args.get("cxx", []))
                ext.extra_compile_args = ["-std=c++17", f"-DTORCH_EXTENSION_NAME={short}",
                                          "-DTORCH_API_INCLUDE_EXTENSION_H", *(args or [])]
                if _build.INCLUDE_DIR not in ext.include_dirs:
                    ext.include_dirs.append(_build.INCLUDE_DIR)
                os.makedirs(self.build_temp, exist_ok=True)
                shim = os.path.join(self.build_temp, f"_ember_pyinit_{short}.cpp")
                with open(shim, "w") as f:
                    f.write(_PYINIT_SHIM % {"name": short})
                if shim not in ext.sources:
                    ext.sources.append(shim)
                ext.language = "c++"
            super().build_extensions()

        def get_ext_filename(self, ext_name):
            filename = super().get_ext_filename(ext_name)
            if self.no_python_abi_suffix:
                import sysconfig
                suffix = sysconfig.get_config_var("EXT_SUFFIX")
                if filename.endswith(suffix):
                    filename = filename[: -len(suffix)] + ".so"
            return filename

    return BuildExtension


def __getattr__(name):
    # setuptools is imported only by a build that uses it, not by every load_inline user.
    if name == "BuildExtension":
        cls = globals()["BuildExtension"] = _make_build_extension()
        return cls
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
