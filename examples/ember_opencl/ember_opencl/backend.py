"""An OpenCL device for Ember, in one file: PyOpenCL buffers and the registry's primitive set.

Ember's registry (``ember.library``) turns a payload type plus kernels into a whole backend:
this file says how a flat array goes to the device and back (``upload``/``download``) and
registers one OpenCL kernel per primitive (``ember.library.PRIMITIVES`` gives each one's
arguments). Every operation without a kernel here runs on the CPU, with a warning the first
time (``ember.library.fallback_report()`` lists what ran where).

The device is the first OpenCL device PyOpenCL finds (``PYOPENCL_CTX`` chooses another); on a
machine without a GPU that is PoCL's CPU device (``pip install "pyopencl[pocl]"``). Kernels
are compiled on first use and cached by PyOpenCL, in memory and on disk.
"""
import functools

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.elementwise import ElementwiseKernel
from pyopencl.tools import dtype_to_ctype

from ember.library import DeviceArray, RegistryBackend, impl

DEVICE = "opencl"
_SUPPORTED = frozenset(np.dtype(n) for n in ("bool", "uint8", "int8", "int16", "int32", "int64",
                                             "uint16", "uint32", "uint64", "float32", "float64"))
# OpenCL buffers cannot hold C's bool: bool arrays are stored as uchar 0/1
_UCHAR = np.dtype(np.uint8)
# numpy's float32 division and square root are correctly rounded; OpenCL's need not be
_OPTIONS = ["-cl-fp32-correctly-rounded-divide-sqrt"]
_MAX_RANK = 8


@functools.lru_cache(maxsize=None)
def _runtime():
    """The context and queue, made on first use (not at import: a machine without OpenCL can
    still import the package and register the device)."""
    context = cl.create_some_context(interactive=False)
    return context, cl.CommandQueue(context)


def _store(dtype):
    return _UCHAR if dtype == np.bool_ else np.dtype(dtype)


def _ctype(dtype):
    return dtype_to_ctype(_store(dtype))


@functools.lru_cache(maxsize=None)
def _elementwise(arguments, operation, name, preamble=""):
    return ElementwiseKernel(_runtime()[0], arguments, operation, name, preamble=preamble,
                             options=_OPTIONS)


def _empty(n, dtype):
    return cla.empty(_runtime()[1], n, _store(dtype))


def _launch(kernel, n, *args):
    if n:
        kernel(*args, range=slice(n), queue=_runtime()[1])


class OpenCLBackend(RegistryBackend):
    """Ember's backend for device type "opencl"."""
    device_type = DEVICE
    supported_dtypes = _SUPPORTED
    dtype_support_note = ("this OpenCL device holds bool, integer, float32 and float64 arrays; "
                          "float16, bfloat16 and complex are not implemented")

    def __init__(self, index=0):
        if index != 0:
            raise RuntimeError(f"Invalid device: opencl:{index}; the OpenCL backend uses one "
                               f"device, opencl:0 (choose it with PYOPENCL_CTX)")
        super().__init__(index)

    def upload(self, host):
        if host.size == 0:
            return _empty(0, host.dtype)
        return cla.to_device(_runtime()[1], host.view(_UCHAR) if host.dtype == np.bool_ else host)

    def download(self, payload, dtype, numel):
        if numel == 0:
            return np.empty(0, dtype)
        host = payload.get()
        return host.view(np.bool_) if dtype == np.bool_ else host

    def synchronize(self):
        _runtime()[1].finish()


# ---- element-wise -----------------------------------------------------------------------------

_FLOAT_ONLY = frozenset({"exp", "log", "sqrt", "tanh", "sin", "cos", "floor", "ceil", "log1p",
                         "expm1", "reciprocal", "erf", "div", "pow"})
_UNARY = {"neg": "-X", "abs": "ABS(X)", "exp": "exp(X)", "log": "log(X)", "sqrt": "sqrt(X)",
          "tanh": "tanh(X)", "sin": "sin(X)", "cos": "cos(X)", "floor": "floor(X)",
          "ceil": "ceil(X)", "log1p": "log1p(X)", "expm1": "expm1(X)",
          "reciprocal": "(T)1 / X", "erf": "erf(X)",
          "sign": "(X != X) ? X : (T)((X > 0) - (X < 0))"}


def _unary(name, expr):
    def kernel(x):
        if name in _FLOAT_ONLY and x.dtype.kind != "f" or x.dtype == np.bool_:
            return NotImplemented
        t = _ctype(x.dtype)
        absolute = "fabs" if x.dtype.kind == "f" else f"({t})abs"
        code = expr.replace("ABS", absolute).replace("X", "x[i]").replace("(T)", f"({t})")
        out = _empty(x.size, x.dtype)
        _launch(_elementwise(f"{t} *out, const {t} *x", f"out[i] = {code}", f"ember_{name}"),
                x.size, out, x.payload)
        return out
    kernel.__name__ = name
    return kernel


for _name, _expr in _UNARY.items():
    impl(f"aten::{_name}", DEVICE, _unary(_name, _expr))

_BINARY = {"add.Tensor": "A + B", "sub.Tensor": "A - B", "mul.Tensor": "A * B",
           "div.Tensor": "A / B", "pow.Tensor_Tensor": "pow(A, B)",
           "maximum": "(ISNAN(A) || A > B) ? A : B", "minimum": "(ISNAN(A) || A < B) ? A : B",
           "eq.Tensor": "A == B", "ne.Tensor": "A != B", "lt.Tensor": "A < B",
           "le.Tensor": "A <= B", "gt.Tensor": "A > B", "ge.Tensor": "A >= B",
           "logical_and": "A && B", "logical_or": "A || B",
           "bitwise_and.Tensor": "A & B", "bitwise_or.Tensor": "A | B"}
_BOOL_RESULT = frozenset({"eq.Tensor", "ne.Tensor", "lt.Tensor", "le.Tensor", "gt.Tensor",
                          "ge.Tensor", "logical_and", "logical_or"})


def _binary(name, expr):
    short = name.partition(".")[0]

    def kernel(a, b):
        array = a if type(a) is DeviceArray else b
        dtype = array.dtype
        if (short in _FLOAT_ONLY and dtype.kind != "f") or \
                (short.startswith("bitwise") and dtype.kind == "f"):
            return NotImplemented
        t = _ctype(dtype)
        result = "uchar" if name in _BOOL_RESULT else t
        # NaN wins in maximum/minimum, as NumPy's; integers have none
        code = expr.replace("ISNAN(A)", "A != A" if dtype.kind == "f" else "0")
        args, values = [f"{result} *out"], []
        for letter, operand in (("A", a), ("B", b)):
            if type(operand) is DeviceArray:
                args.append(f"const {t} *{letter.lower()}")
                values.append(operand.payload)
                code = code.replace(letter, f"{letter.lower()}[i]")
            else:
                args.append(f"{t} {letter.lower()}")
                values.append(_store(dtype).type(operand))
                code = code.replace(letter, letter.lower())
        out = _empty(array.size, np.bool_ if name in _BOOL_RESULT else dtype)
        kernel_name = f"ember_{short}_{'s' if type(a) is not DeviceArray else 'v'}" \
                      f"{'s' if type(b) is not DeviceArray else 'v'}"
        _launch(_elementwise(", ".join(args), f"out[i] = {code}", kernel_name), array.size, out,
                *values)
        return out
    kernel.__name__ = short
    return kernel


for _name, _expr in _BINARY.items():
    impl(f"aten::{_name}", DEVICE, _binary(_name, _expr))


@impl("aten::where.self", DEVICE)
def where(cond, a, b):
    array = a if type(a) is DeviceArray else b if type(b) is DeviceArray else None
    dtype = array.dtype if array is not None else np.result_type(a, b)
    t = _ctype(dtype)
    args, values, picks = ["const uchar *c", f"{t} *out"], [cond.payload], []
    for letter, operand in (("a", a), ("b", b)):
        if type(operand) is DeviceArray:
            args.append(f"const {t} *{letter}")
            values.append(operand.payload)
            picks.append(f"{letter}[i]")
        else:
            args.append(f"{t} {letter}")
            values.append(_store(dtype).type(operand))
            picks.append(letter)
    out = _empty(cond.size, dtype)
    _launch(_elementwise(", ".join(args), f"out[i] = c[i] ? {picks[0]} : {picks[1]}",
                         f"ember_where_{len(picks)}"), cond.size, cond.payload, out, *values[1:])
    return out


# ---- memory: fill, cast, strided copies ---------------------------------------------------------

@impl("aten::empty.memory_format", DEVICE)
def empty(shape, dtype):
    return _empty(int(np.prod(shape)), dtype)


@impl("aten::full", DEVICE)
def full(shape, value, dtype):
    out = _empty(int(np.prod(shape)), dtype)
    if out.size:
        out.fill(_store(dtype).type(value))
    return out


@impl("aten::_to_copy", DEVICE)
def to_copy(x, dtype):
    t, source = _ctype(dtype), _ctype(x.dtype)
    code = "out[i] = x[i] != 0" if dtype == np.bool_ else f"out[i] = ({t}) x[i]"
    out = _empty(x.size, dtype)
    _launch(_elementwise(f"{t} *out, const {source} *x", code, "ember_cast"), x.size, out,
            x.payload)
    return out


def _collapse(shape, strides):
    """Drop length-1 dimensions and merge those that step through memory as one, so a strided
    copy needs as few index computations (and kernel variants) as possible."""
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]
    merged = []
    for n, s in dims:
        if merged and merged[-1][1] == s * n:
            merged[-1] = (merged[-1][0] * n, s)
        else:
            merged.append((n, s))
    return merged or [(1, 1)]


def _strided_kernel(dtype, rank, gather):
    t = _ctype(dtype)
    dims = ", ".join(f"long n{d}, long s{d}" for d in range(rank))
    lines = ["long rest = i;", "long at = offset;"]
    for d in reversed(range(rank)):
        lines.append(f"at += (rest % n{d}) * s{d}; rest /= n{d};")
    lines.append("dst[i] = src[at];" if gather else "dst[at] = src[i];")
    return _elementwise(f"{t} *dst, const {t} *src, long offset, {dims}", " ".join(lines),
                        f"ember_{'gather' if gather else 'scatter'}_{rank}d")


def _strided_args(view):
    dims = _collapse(view.shape, view.elem_strides)
    if len(dims) > _MAX_RANK:
        return None
    return len(dims), [v for n, s in dims for v in (np.int64(n), np.int64(s))]


@impl("aten::clone", DEVICE)
def clone(x):
    """A compact copy of any strided view (transposes, broadcasts, convolution windows)."""
    strided = _strided_args(x)
    if strided is None:
        return NotImplemented
    rank, dims = strided
    out = _empty(x.size, x.dtype)
    _launch(_strided_kernel(x.dtype, rank, True), x.size, out, x.payload, np.int64(x.offset),
            *dims)
    return out


@impl("aten::copy_", DEVICE)
def copy_(dst, src):
    strided = _strided_args(dst)
    if strided is None:
        return NotImplemented
    rank, dims = strided
    _launch(_strided_kernel(dst.dtype, rank, False), dst.size, dst.payload, src.payload,
            np.int64(dst.offset), *dims)


# ---- reductions over the last axis of (M, K) -------------------------------------------------

_REDUCE = {
    "sum": ("ACC acc = 0;", "acc += v;", "out[r] = (T) acc;"),
    "amax": ("T acc = x[base];", "if (ISNAN(v) || (!ISNAN(acc) && v > acc)) acc = v;",
             "out[r] = acc;"),
    "amin": ("T acc = x[base];", "if (ISNAN(v) || (!ISNAN(acc) && v < acc)) acc = v;",
             "out[r] = acc;"),
    "argmax": ("T acc = x[base]; long best = 0;",
               "if (!ISNAN(acc) && (ISNAN(v) || v > acc)) { acc = v; best = j; }",
               "out[r] = best;"),
}


def _reduction(name):
    start, step, finish = _REDUCE[name]

    def kernel(x):
        rows, length = x.shape
        t = _ctype(x.dtype)
        # sums of floats accumulate in double: as accurate as NumPy's pairwise sums, or more
        acc = "double" if x.dtype.kind == "f" else ("long" if x.dtype.kind in "bi" else "ulong")
        result = np.dtype(np.int64) if name == "argmax" else x.dtype
        code = (f"long base = i * K; {start} for (long j = 0; j < K; j++) "
                f"{{ {t} v = x[base + j]; {step} }} long r = i; {finish}")
        code = code.replace("ACC", acc).replace("(T)", f"({t})").replace("T acc", f"{t} acc")
        # NaN wins, as in NumPy (the first one, for argmax); integers have none
        code = code.replace("!ISNAN(acc)", "(acc == acc)" if x.dtype.kind == "f" else "1")
        code = code.replace("ISNAN(v)", "(v != v)" if x.dtype.kind == "f" else "0")
        out = _empty(rows, result)
        _launch(_elementwise(f"{_ctype(result)} *out, const {t} *x, long K", code,
                             f"ember_{name}_rows"), rows, out, x.payload, np.int64(length))
        return out
    kernel.__name__ = name
    return kernel


impl("aten::sum.dim_IntList", DEVICE, _reduction("sum"))
impl("aten::amax", DEVICE, _reduction("amax"))
impl("aten::amin", DEVICE, _reduction("amin"))
impl("aten::argmax", DEVICE, _reduction("argmax"))


# ---- matrix products: one tiled GEMM kernel, batched over the third grid axis -----------------

_TILE = 16
_GEMM = """
#define TILE %(tile)d
__kernel void ember_gemm(__global const T *a, __global const T *b, __global T *c,
                         long m, long n, long k) {
    const long col = get_global_id(0), row = get_global_id(1), batch = get_global_id(2);
    const int lc = get_local_id(0), lr = get_local_id(1);
    __local T a_tile[TILE][TILE], b_tile[TILE][TILE];
    a += batch * m * k; b += batch * k * n; c += batch * m * n;
    T acc = 0;
    for (long t = 0; t < k; t += TILE) {
        a_tile[lr][lc] = (row < m && t + lc < k) ? a[row * k + t + lc] : 0;
        b_tile[lr][lc] = (t + lr < k && col < n) ? b[(t + lr) * n + col] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = 0; j < TILE; j++)
            acc += a_tile[lr][j] * b_tile[j][lc];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < m && col < n)
        c[row * n + col] = acc;
}
"""


@functools.lru_cache(maxsize=None)
def _gemm_program(ctype):
    source = f"#define T {ctype}\n" + _GEMM % {"tile": _TILE}
    program = cl.Program(_runtime()[0], source).build(options=_OPTIONS)
    kernel = program.ember_gemm
    kernel.set_scalar_arg_dtypes([None, None, None, np.int64, np.int64, np.int64])
    return kernel


def _gemm(a, b, batch, m, k, n):
    if a.dtype.kind != "f":
        return NotImplemented
    out = _empty(batch * m * n, a.dtype)
    if out.size and k:
        rounded = lambda v: -(-v // _TILE) * _TILE  # noqa: E731
        _gemm_program(_ctype(a.dtype))(_runtime()[1], (rounded(n), rounded(m), batch),
                                       (_TILE, _TILE, 1), a.payload.data, b.payload.data,
                                       out.data, m, n, k)
    elif out.size:
        out.fill(0)
    return out


@impl("aten::mm", DEVICE)
def mm(a, b):
    (m, k), n = a.shape, b.shape[1]
    return _gemm(a, b, 1, m, k, n)


@impl("aten::bmm", DEVICE)
def bmm(a, b):
    batch, m, k = a.shape
    return _gemm(a, b, batch, m, k, b.shape[2])


# ---- gather / scatter along the last axis ------------------------------------------------------

@impl("aten::gather", DEVICE)
def gather(x, index):
    (rows, length), picks = x.shape, index.shape[1]
    t = _ctype(x.dtype)
    out = _empty(rows * picks, x.dtype)
    code = "long j = ind[i]; if (j < 0) j += K; out[i] = x[(i / J) * K + j]"
    _launch(_elementwise(f"{t} *out, const {t} *x, const long *ind, long J, long K", code,
                         "ember_gather_rows"), out.size, out, x.payload, index.payload,
            np.int64(picks), np.int64(length))
    return out


@impl("aten::scatter.src", DEVICE)
def scatter(target, index, src):
    (rows, length), picks = target.shape, index.shape[1]
    t = _ctype(target.dtype)
    out = target.payload.copy()
    code = "long j = ind[i]; if (j < 0) j += K; out[(i / J) * K + j] = src[i]"
    _launch(_elementwise(f"{t} *out, const {t} *src, const long *ind, long J, long K", code,
                         "ember_scatter_rows"), rows * picks, out, src.payload, index.payload,
            np.int64(picks), np.int64(length))
    return out


@impl("aten::index_select", DEVICE)
def index_select(x, index):
    (rows, width), picks = x.shape, index.size
    t = _ctype(x.dtype)
    out = _empty(picks * width, x.dtype)
    code = "out[i] = x[ind[i / D] * D + i % D]"
    _launch(_elementwise(f"{t} *out, const {t} *x, const long *ind, long D", code,
                         "ember_index_rows"), out.size, out, x.payload, index.payload,
            np.int64(width))
    return out


@impl("aten::index_put_", DEVICE)
def index_put(x, index, values):
    width = x.shape[1]
    t = _ctype(x.dtype)
    out = x.payload.copy()
    code = "out[ind[i / D] * D + i % D] = v[i]"
    _launch(_elementwise(f"{t} *out, const {t} *v, const long *ind, long D", code,
                         "ember_put_rows"), values.size, out, values.payload, index.payload,
            np.int64(width))
    return out


@impl("aten::arange", DEVICE)
def arange(start, step, count, dtype):
    t = _ctype(dtype)
    out = _empty(count, dtype)
    kind = "double" if dtype.kind == "f" else "long"
    _launch(_elementwise(f"{t} *out, {kind} first, {kind} delta",
                         f"out[i] = ({t}) (first + i * delta)", "ember_arange"), count, out,
            np.dtype(kind.replace("long", "int64")).type(start),
            np.dtype(kind.replace("long", "int64")).type(step))
    return out
