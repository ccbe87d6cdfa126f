"""Write CuPy's public API, as installed, to tests/conformance/cupy14_api.json.

Run with a Python that has CuPy (no GPU needed): ``python tools/cupy_api_spec.py [out.json]``.
The CuPy conformance device (tests/conformance/strict_cupy.py) refuses every name, keyword and
ufunc method absent from this file, so the facts come from CuPy itself, never from memory.
Where CuPy's own probes need a GPU (ufunc methods), they are run on a Python int: CuPy raises
NotImplementedError before touching the device for the methods it lacks.
"""
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
import cupyx  # noqa: F401 - the modules are read back from sys.modules
import cupyx.scipy.special

MODULES = ["cupy", "cupy.linalg", "cupy.fft", "cupy.random", "cupy.lib.stride_tricks", "cupyx",
           "cupyx.scipy.special"]
DTYPE_NAMES = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64", "complex64", "complex128", "bfloat16"]
_HEAD = re.compile(r"^\s*(?:[\w.]+\.)?(\w+)\((.*)\)\s*(?:->.*)?$")


def _params_of(sig):
    names = [p.name for p in sig.parameters.values()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]
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
    }
    Path(path).write_text(json.dumps(spec, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}: CuPy {cupy.__version__}, "
          f"{sum(len(m) for m in spec['modules'].values())} names")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else
         Path(__file__).resolve().parent.parent / "tests" / "conformance" / "cupy14_api.json")
