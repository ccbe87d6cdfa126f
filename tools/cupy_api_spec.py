"""Write CuPy's public API, as installed, to tests/conformance/cupy14_api.json.

Run with a Python that has CuPy (no GPU needed): ``python tools/cupy_api_spec.py [out.json]``.
The CuPy conformance device (tests/conformance/strict_cupy.py) refuses every name, keyword and
ufunc method absent from this file, so the facts come from CuPy itself, never from memory.
Where CuPy's own probes need a GPU (ufunc methods), they are run on a Python int: CuPy raises
NotImplementedError before touching the device for the methods it lacks.
"""
import importlib
import inspect
import json
import re
import sys
from pathlib import Path

import numpy

import cupy
import cupy.fft
import cupy.linalg
import cupy.random
import cupy.lib.stride_tricks
import cupy._core._routines_linalg
import cupy.cuda
import cupy.cuda.graph
import cupy.cuda.memory
import cupy.cuda.nvtx
import cupy.cuda.pinned_memory
import cupy.cuda.runtime
import cupy.cuda.stream
import cupyx  # noqa: F401 - the modules are read back from sys.modules
import cupyx.scipy.special
import cupyx.scipy.sparse

try:
    import ml_dtypes
except ImportError:  # the bfloat16 facts need it: CuPy adds its bfloat16 loops only with it
    ml_dtypes = None

MODULES = ["cupy", "cupy.linalg", "cupy.fft", "cupy.random", "cupy.lib.stride_tricks", "cupyx",
           "cupyx.scipy.special", "cupyx.scipy.sparse",
           # Beyond the array namespace: what Ember's CUDA backend calls for devices, streams,
           # events, memory pools, pinned memory, profiling ranges and graphs.
           "cupy.cuda", "cupy.cuda.runtime", "cupy.cuda.memory", "cupy.cuda.pinned_memory",
           "cupy.cuda.stream", "cupy.cuda.nvtx", "cupy.cuda.graph",
           # cuBLAS compute types (TF32...): set_compute_type/get_compute_type and constants.
           "cupy._core._routines_linalg"]
# Classes whose members (methods, properties, singletons) are recorded one by one, because the
# conformance device emulates them and its tests check each emulated member against CuPy's.
CLASSES = ["cupy.cuda.Device", "cupy.cuda.Stream", "cupy.cuda.ExternalStream", "cupy.cuda.Event",
           "cupy.cuda.MemoryPool", "cupy.cuda.PinnedMemoryPool", "cupy.cuda.MemoryPointer",
           "cupy.cuda.PinnedMemoryPointer", "cupy.cuda.PinnedMemory", "cupy.cuda.graph.Graph",
           "cupy.cuda.memory.OutOfMemoryError", "cupy.random.RandomState",
           "cupy.random._generator_api.Generator", "cupy.random.BitGenerator",
           "cupy.random.XORWOW", "cupy.random.MRG32k3a", "cupy.random.Philox4x3210",
           "cupyx.scipy.sparse.coo_matrix", "cupyx.scipy.sparse.csr_matrix",
           "cupyx.scipy.sparse.csc_matrix"]
DTYPE_NAMES = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64", "complex64", "complex128", "bfloat16"]
_HEAD = re.compile(r"^\s*(?:[\w.]+\.)?(\w+)\((.*)\)\s*(?:->.*)?$")


def _params_of(sig):
    names = [p.name for p in sig.parameters.values()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in ("self", "cls")]
    has_kwargs = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    has_varargs = any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())
    positional_only = [p.name for p in sig.parameters.values() if p.kind == p.POSITIONAL_ONLY
                       and p.name != "self"]
    return {"params": names, "kwargs": has_kwargs, "varargs": has_varargs,
            "positional_only": positional_only}


def _signature_from_doc(obj):
    """Cython functions have no inspect.signature: parse their docstring's ``name(args)`` head."""
    for line in (obj.__doc__ or "").strip().splitlines()[:1]:
        match = _HEAD.match(line.replace("\\*", "*"))
        if match is None:
            return None
        # Cython heads carry C types ("_ndarray_base b", "int axis=-1") and optional groups
        # ("x2[, out1, out2]"): drop both so the head parses as a Python signature.
        args = re.sub(r"[\[\]]", "", match.group(2))
        args = re.sub(r"(^|,)\s*(?:[A-Za-z_][\w.]*\s+)+(?=\*{0,2}[A-Za-z_]\w*\s*(?:=|,|$))",
                      r"\1 ", args)
        args = re.sub(r",\s*,", ",", args)
        try:
            namespace = {}
            exec(f"def _f({args}): pass", {"numpy": numpy, "cupy": cupy}, namespace)
            return inspect.signature(namespace["_f"])
        except Exception:
            return None
    return None


def signature_record(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        sig = _signature_from_doc(obj)
    if sig is None:
        return {"params": "unknown", "kwargs": True, "varargs": True, "positional_only": []}
    return _params_of(sig)


def _method_supported(ufunc, method):
    args = {"reduceat": (1, [0]), "outer": (1, 1), "at": (1, [0], 1)}.get(method, (1,))
    try:
        getattr(ufunc, method)(*args)
    except NotImplementedError:
        return False
    except Exception:  # failed later, on the int or the missing GPU: the method exists
        return True
    return True


def _keyword_supported(ufunc, keyword):
    try:
        ufunc(*([1.0] * ufunc.nin), **{keyword: None})
    except TypeError as exc:
        return "Wrong arguments" not in str(exc)
    except Exception:  # got past argument parsing, to the missing GPU
        return True
    return True


def ufunc_record(ufunc):
    record = {"kind": "ufunc", "nin": ufunc.nin, "nout": ufunc.nout, **signature_record(ufunc)}
    # The docstring head is prose; the keywords __call__ really parses are probed.
    record["keywords"] = [k for k in ("out", "dtype", "casting", "where", "order", "subok",
                                      "signature", "axes", "axis", "keepdims")
                          if _keyword_supported(ufunc, k)]
    record["methods"] = [m for m in ("reduce", "accumulate", "reduceat", "outer")
                         if _method_supported(ufunc, m)]
    # The loops, as NumPy's type characters ("EE->E" is bfloat16, present only with ml_dtypes):
    # an operand dtype no loop takes is CuPy's TypeError "Wrong type ... of arguments".
    record["types"] = list(ufunc.types)
    if getattr(ufunc, "_scatter_op", None) is not None:
        record["methods"].append("at")
    return record


def module_record(module):
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    out = {}
    for name in sorted(set(names)):
        try:
            value = getattr(module, name)
        except AttributeError:
            continue
        if inspect.ismodule(value):
            out[name] = {"kind": "module"}
        elif isinstance(value, cupy.ufunc):
            out[name] = ufunc_record(value)
        elif inspect.isclass(value):
            out[name] = {"kind": "type"}
        elif callable(value):
            out[name] = {"kind": "function", **signature_record(value)}
        else:
            out[name] = {"kind": "constant"}
    return out


def _resolve(qualname):
    module_name, _, rest = qualname.partition(".")
    value = sys.modules[module_name]
    parts = rest.split(".")
    for i, part in enumerate(parts):
        if not hasattr(value, part):  # a submodule not imported yet
            value = importlib.import_module(".".join([module_name] + parts[:i + 1]))
        else:
            value = getattr(value, part)
    return value


def class_record(cls):
    """A class's constructor and its public members: methods with their signatures,
    properties and class-level singletons (``Stream.null``) as attributes."""
    members = {}
    for name in sorted(set(dir(cls)) | {"__init__", "__enter__", "__exit__", "__call__"}):
        if name.startswith("_") and name not in ("__init__", "__enter__", "__exit__",
                                                   "__call__"):
            continue
        if name.startswith("__") and name not in vars(cls) and not any(
                name in vars(base) for base in cls.__mro__[:-1]):
            continue  # inherited from object only
        try:
            value = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if callable(value) and not inspect.isclass(value):
            members[name] = {"kind": "method", **signature_record(value)}
        else:
            members[name] = {"kind": "attribute"}
    init = signature_record(cls)
    return {"kind": "type", "init": init,
            "bases": [b.__module__ + "." + b.__qualname__ for b in cls.__mro__[1:-1]],
            "members": members}


def _probe_error(call):
    """What CuPy raises before it touches a GPU: on this GPU-less machine a CUDA runtime error
    means the arguments were accepted, anything else is CuPy refusing them."""
    try:
        call()
    except Exception as exc:
        if "CUDA" in type(exc).__name__ or "cuda" in (type(exc).__module__ or ""):
            return {"accepted": True}
        return {"accepted": False, "error": type(exc).__name__, "message": str(exc)}
    return {"accepted": True}


def bfloat16_record():
    """Where CuPy takes ``ml_dtypes.bfloat16`` (type character "E"): CuPy 14 adds bfloat16
    loops to its ufuncs and reduction kernels when ml_dtypes is importable. The ufunc loops
    are in each ufunc's "types"; here are the reduction kernels (by their internal name) and
    what the creation functions do with the dtype."""
    if ml_dtypes is None:
        return None
    bf16 = numpy.dtype(ml_dtypes.bfloat16)
    kernels, ufuncs = {}, {}
    for module_name, module in sorted(sys.modules.items()):
        if module is None or not module_name.startswith(("cupy.", "cupyx.")):
            continue
        for name in dir(module):
            try:
                value = getattr(module, name)
            except Exception:
                continue
            # Kernels are keyed by their own name ("cupy_sum", "cupy_where"): one kernel is
            # named by several modules, and the public function's name often differs.
            if isinstance(value, cupy.ufunc):
                ufuncs.setdefault(value.name, list(value.types))
                continue
            ops = getattr(getattr(value, "_ops", None), "ops", None)
            if ops is None:
                continue
            chars = sorted({numpy.dtype(t).char for op in ops for t in op.in_types})
            kernels.setdefault(getattr(value, "name", f"{module_name}.{name}"), "".join(chars))
    creation = {
        "empty": _probe_error(lambda: cupy.empty(2, dtype=bf16)),
        "ndarray": _probe_error(lambda: cupy.ndarray((2,), dtype=bf16)),
        "asarray": _probe_error(lambda: cupy.asarray(numpy.zeros(2, dtype=bf16))),
    }
    unsupported = _probe_error(lambda: cupy.empty(2, dtype=object))
    return {"ml_dtypes_version": ml_dtypes.__version__, "char": bf16.char,
            "cupy_has_name": hasattr(cupy, "bfloat16"),
            "reduction_kernels": kernels, "ufunc_kernels": ufuncs,
            "creation": creation, "unsupported_dtype_creation": unsupported}


def cuda_facts():
    """CuPy's words for the CUDA errors and constants the emulated runtime raises and takes:
    CUDARuntimeError's text per status (the CUDA runtime's own), OutOfMemoryError's text, the
    stream capture modes and pointer memory types."""
    from cupy.cuda import runtime
    statuses = {"cudaErrorInvalidValue": 1, "cudaErrorMemoryAllocation": 2,
                "cudaErrorInvalidDevice": 101, "cudaErrorInvalidResourceHandle": 400,
                "cudaErrorNotReady": 600, "cudaErrorStreamCaptureUnsupported": 900,
                "cudaErrorStreamCaptureInvalidated": 901, "cudaErrorIllegalState": 401}
    oom = cupy.cuda.memory.OutOfMemoryError
    return {
        "runtime_errors": {str(code): str(runtime.CUDARuntimeError(code))
                           for code in statuses.values()},
        "out_of_memory": {"with_limit": str(oom(1024, 2048, 4096)),
                          "without_limit": str(oom(1024, 2048))},
        "constants": {name: getattr(runtime, name) for name in dir(runtime)
                      if name.startswith(("streamCapture", "memoryType", "stream"))
                      and isinstance(getattr(runtime, name), int)},
        "null_stream_ptr": cupy.cuda.Stream.null.ptr, "ptds_stream_ptr": cupy.cuda.Stream.ptds.ptr,
        # MemoryPool rounds every request up to this unit (used_bytes counts rounded sizes).
        "memory_pool_rounding": cupy.cuda.memory._round_size(1),
    }


def ndarray_record():
    out = {}
    for name in dir(cupy.ndarray):
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue
        value = getattr(cupy.ndarray, name)
        if callable(value) and not inspect.isclass(value):
            out[name] = {"kind": "method", **signature_record(value)}
        else:
            out[name] = {"kind": "attribute"}
    return out


def main(path):
    spec = {
        "cupy_version": cupy.__version__,
        "numpy_version": numpy.__version__,
        "modules": {name: module_record(sys.modules[name]) for name in MODULES},
        "ndarray": ndarray_record(),
        "dtypes": sorted(n.rstrip("_") for n in DTYPE_NAMES if hasattr(cupy, n)),
        "classes": {name: class_record(_resolve(name)) for name in CLASSES},
        "bfloat16": bfloat16_record(),
        "cuda": cuda_facts(),
    }
    Path(path).write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}: CuPy {cupy.__version__}, "
          f"{sum(len(m) for m in spec['modules'].values())} names")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else
         Path(__file__).resolve().parent.parent / "tests" / "conformance" / "cupy14_api.json")
