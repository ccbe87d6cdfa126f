"""The Python half of the C ABI in ``ember/include/ember_pybind.h``.

A built library exports a table of functions (``PYBIND11_MODULE``'s ``m.def`` entries). Each
call boxes its arguments as ``ember_value`` structs — a tensor as its data pointer, sizes and
strides (in elements), dtype and device, pointing at the Ember tensor's own memory — and calls
``ember_ext_call``. Tensors the C++ code creates (``torch::empty``…) are allocated by Ember
through a callback, so what comes back is an ordinary Ember tensor, named by a handle: the
index of the tensor in the call's list of known tensors (its inputs first)."""
import ctypes
import inspect
import threading
import types

ABI_VERSION = 1

# c10::ScalarType's numbering, as the header declares it.
_DTYPE_CODES = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5,
                "float32": 6, "float64": 7, "complex64": 9, "complex128": 10, "bool": 11,
                "bfloat16": 15}
# c10::DeviceType's: CPU and CUDA have fixed codes; any other Ember device is numbered from
# PrivateUse1 (20) up in the order first seen.
_DEVICE_CODES = {"cpu": 0, "cuda": 1}
_device_lock = threading.Lock()

_ERRORS = {1: RuntimeError, 2: ValueError, 3: TypeError, 4: IndexError, 5: NotImplementedError,
           6: MemoryError}


# at::get_num_threads() in every loaded extension: ember.get_num_threads() when the first one
# loads, then whatever ember.set_num_threads sets.
_threads_lock = threading.Lock()
_threaded_libraries = []
_intra_op_threads = None


def intra_op_threads():
    global _intra_op_threads
    if _intra_op_threads is None:
        from ember import get_num_threads
        _intra_op_threads = get_num_threads()
    return _intra_op_threads


def set_num_threads(n):
    """Called by ember.set_num_threads: every loaded extension's at::parallel_for uses ``n``."""
    global _intra_op_threads
    with _threads_lock:
        _intra_op_threads = n
        for lib in _threaded_libraries:
            lib.ember_ext_set_num_threads(n)


class EmberTensorDesc(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("sizes", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("ndim", ctypes.c_int64),
                ("dtype", ctypes.c_int32), ("device_type", ctypes.c_int32),
                ("device_index", ctypes.c_int32), ("requires_grad", ctypes.c_int32),
                ("handle", ctypes.c_int64)]


class EmberValue(ctypes.Structure):
    pass


EmberValue._fields_ = [("kind", ctypes.c_int32), ("_pad", ctypes.c_int32),
                       ("i", ctypes.c_int64), ("d", ctypes.c_double), ("t", EmberTensorDesc),
                       ("items", ctypes.POINTER(EmberValue)), ("nitems", ctypes.c_int64),
                       ("s", ctypes.c_char_p)]

ALLOC_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                            ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                            ctypes.c_double, ctypes.c_int32, ctypes.POINTER(EmberTensorDesc))


_dtype_codes = {}  # ember dtype -> code, filled as dtypes are first seen


def _dtype_code(dtype):
    code = _dtype_codes.get(dtype)
    if code is None:
        code = _DTYPE_CODES.get(str(dtype).rsplit(".", 1)[-1])
        if code is None:
            raise TypeError(f"C++ extensions: Ember has no C++ scalar type for {dtype}")
        _dtype_codes[dtype] = code
    return code


_dtypes_of_codes = {}


def _dtype_of_code(code):
    dtype = _dtypes_of_codes.get(code)
    if dtype is not None:
        return dtype
    import ember
    for name, c in _DTYPE_CODES.items():
        if c == code:
            dtype = _dtypes_of_codes[code] = getattr(ember, name)
            return dtype
    raise TypeError(f"C++ extensions: unknown scalar type code {code}")


def _device_code(device_type):
    code = _DEVICE_CODES.get(device_type)
    if code is None:
        with _device_lock:
            code = _DEVICE_CODES.setdefault(device_type, 20 + len(_DEVICE_CODES) - 2)
    return code


_devices_of_codes = {}


def _device_of_code(code, index):
    device = _devices_of_codes.get((code, index))
    if device is not None:
        return device
    import ember
    for name, c in _DEVICE_CODES.items():
        if c == code:
            device = ember.device(name) if index < 0 else ember.device(name, index)
            _devices_of_codes[code, index] = device
            return device
    raise RuntimeError(f"C++ extensions: unknown device type code {code}")


_int64_arrays = {}  # ndim -> ctypes.c_int64 * ndim


def _int64_array(values):
    n = len(values)
    array_type = _int64_arrays.get(n)
    if array_type is None:
        array_type = _int64_arrays[n] = ctypes.c_int64 * (n or 1)
    return array_type(*values)


class _Call:
    """One call's tensors (so handles resolve and memory stays alive) and any error raised
    in the allocation callback."""
    __slots__ = ("tensors", "keep", "error")

    def __init__(self):
        self.tensors = []
        self.keep = []
        self.error = None

    def describe(self, t, desc):
        data = t._data
        sizes, strides = _int64_array(data.shape), _int64_array(t.stride())
        self.keep.append(sizes)
        self.keep.append(strides)
        desc.data = t._backend.data_ptr(data) if data.size else None
        desc.sizes = sizes
        desc.strides = strides
        desc.ndim = data.ndim
        desc.dtype = _dtype_code(t._dtype)
        device = t._device
        desc.device_type = _device_code(device.type)
        desc.device_index = -1 if device.index is None else device.index
        desc.requires_grad = int(t._requires_grad)
        desc.handle = len(self.tensors)
        self.tensors.append(t)


_calls = threading.local()


@ALLOC_FN
def _allocate(ndim, sizes, dtype, device_type, device_index, fill, value, requires_grad, out):
    stack = getattr(_calls, "stack", None)
    if not stack:
        return 1  # not inside a call made by Ember: the C++ side raises
    call = stack[-1]
    try:
        import ember
        shape = tuple(sizes[:ndim])
        dt = _dtype_of_code(dtype)
        device = _device_of_code(device_type, device_index)
        if fill:
            t = ember.full(shape, value, dtype=dt, device=device)
        else:
            t = ember.empty(shape, dtype=dt, device=device)
        if requires_grad:
            t.requires_grad_()
        call.describe(t, out.contents)
        return 0
    except BaseException as e:  # noqa: BLE001 - re-raised in Python after the call returns
        call.error = e
        return 1


def _box(value, slot, call):
    from ..._tensor import Tensor
    if value is None:
        slot.kind = 0
    elif isinstance(value, Tensor):
        slot.kind = 1
        call.describe(value, slot.t)
    elif isinstance(value, bool):
        slot.kind, slot.i = 4, int(value)
    elif isinstance(value, int):
        slot.kind, slot.i = 2, value
    elif isinstance(value, float):
        slot.kind, slot.d = 3, value
    elif isinstance(value, str):
        encoded = value.encode()
        call.keep.append(encoded)
        slot.kind, slot.s = 6, encoded
    elif isinstance(value, (list, tuple)):
        items = (EmberValue * (len(value) or 1))()
        call.keep.append(items)
        for v, item in zip(value, items):
            _box(v, item, call)
        slot.kind, slot.nitems = 5, len(value)
        slot.items = ctypes.cast(items, ctypes.POINTER(EmberValue))
    else:
        raise TypeError(f"C++ extensions take Tensors, numbers, bools, strings, None and lists "
                        f"of these, not {type(value).__name__}")


def _unbox(v, call):
    kind = v.kind
    if kind == 0:
        return None
    if kind == 1:
        return call.tensors[v.t.handle]
    if kind == 2:
        return v.i
    if kind == 3:
        return v.d
    if kind == 4:
        return bool(v.i)
    if kind == 6:
        return v.s.decode()
    items = [_unbox(v.items[i], call) for i in range(v.nitems)]
    return tuple(items) if kind == 7 else items


class Library:
    """A loaded extension library: its ctypes handle and function table."""

    def __init__(self, path, mode=ctypes.RTLD_LOCAL):
        self.path = path
        self.cdll = lib = ctypes.CDLL(path, mode=mode)
        try:
            lib.ember_ext_abi.restype = ctypes.c_int
        except AttributeError:
            raise ImportError(f"{path} has no Ember extension table: its sources need "
                              "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{ m.def(...); }} (or "
                              "load_inline's functions=) with #include <torch/extension.h>") \
                from None
        if lib.ember_ext_abi() != ABI_VERSION:
            raise ImportError(f"{path} was built for Ember's extension ABI "
                              f"{lib.ember_ext_abi()}, this Ember speaks {ABI_VERSION}: rebuild it")
        for fn, restype, argtypes in [
                ("ember_ext_init", ctypes.c_int, []),
                ("ember_ext_error", ctypes.c_char_p, []),
                ("ember_ext_module_doc", ctypes.c_char_p, []),
                ("ember_ext_count", ctypes.c_int64, []),
                ("ember_ext_fn_name", ctypes.c_char_p, [ctypes.c_int64]),
                ("ember_ext_fn_doc", ctypes.c_char_p, [ctypes.c_int64]),
                ("ember_ext_fn_arity", ctypes.c_int64, [ctypes.c_int64]),
                ("ember_ext_fn_named", ctypes.c_int64, [ctypes.c_int64]),
                ("ember_ext_fn_arg", ctypes.c_char_p, [ctypes.c_int64, ctypes.c_int64]),
                ("ember_ext_fn_default", ctypes.POINTER(EmberValue),
                 [ctypes.c_int64, ctypes.c_int64]),
                ("ember_ext_call", ctypes.c_int,
                 [ctypes.c_int64, ctypes.POINTER(EmberValue), ctypes.POINTER(EmberValue)]),
                ("ember_ext_set_allocator", None, [ALLOC_FN])]:
            f = getattr(lib, fn)
            f.restype, f.argtypes = restype, argtypes
        lib.ember_ext_set_allocator(_allocate)
        # at::parallel_for's thread count; libraries built before the header had it lack it
        if hasattr(lib, "ember_ext_set_num_threads"):
            lib.ember_ext_set_num_threads.restype = None
            lib.ember_ext_set_num_threads.argtypes = [ctypes.c_int]
            with _threads_lock:
                lib.ember_ext_set_num_threads(intra_op_threads())
                _threaded_libraries.append(lib)
        rc = lib.ember_ext_init()
        if rc:
            raise _ERRORS.get(rc, RuntimeError)(
                f"{path}: PYBIND11_MODULE failed: {lib.ember_ext_error().decode()}")

    def module(self, name):
        """A Python module with one function per ``m.def``."""
        lib = self.cdll
        mod = types.ModuleType(name, (lib.ember_ext_module_doc() or b"").decode() or None)
        mod.__file__ = self.path
        for i in range(lib.ember_ext_count()):
            fn_name = lib.ember_ext_fn_name(i).decode()
            setattr(mod, fn_name, self._function(i, fn_name))
        return mod

    def _function(self, index, name):
        lib = self.cdll
        arity = lib.ember_ext_fn_arity(index)
        named = lib.ember_ext_fn_named(index)
        params = []
        call_empty = _Call()
        for j in range(arity):
            if named:
                arg_name = lib.ember_ext_fn_arg(index, j).decode()
                default = lib.ember_ext_fn_default(index, j).contents
                value = inspect.Parameter.empty if default.kind == -1 \
                    else _unbox(default, call_empty)
                params.append(inspect.Parameter(arg_name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                default=value))
            else:
                params.append(inspect.Parameter(f"arg{j}", inspect.Parameter.POSITIONAL_ONLY))
        signature = inspect.Signature(params)
        call_fn = lib.ember_ext_call

        def function(*args, **kwargs):
            if kwargs or len(args) != arity:
                try:
                    bound = signature.bind(*args, **kwargs)
                except TypeError as e:
                    raise TypeError(f"{name}(): incompatible function arguments: {e}; "
                                    f"expected {name}{signature}") from None
                bound.apply_defaults()
                args = bound.args
            call = _Call()
            boxed = (EmberValue * (arity or 1))()
            for a, slot in zip(args, boxed):
                _box(a, slot, call)
            out = EmberValue()
            stack = getattr(_calls, "stack", None)
            if stack is None:
                stack = _calls.stack = []
            stack.append(call)
            try:
                rc = call_fn(index, boxed, ctypes.byref(out))
            finally:
                stack.pop()
            if rc:
                if call.error is not None:
                    raise call.error
                message = lib.ember_ext_error().decode()
                raise _ERRORS.get(rc, RuntimeError)(message)
            return _unbox(out, call)

        function.__name__ = function.__qualname__ = name
        function.__doc__ = lib.ember_ext_fn_doc(index).decode() or None
        function.__signature__ = signature
        return function
