"""What every op shares: turning arguments into arrays on one backend, PyTorch's result dtype,
and recording the op in the autograd graph.

An op is a plain function that computes arrays through ``tensor._backend`` and, when a gradient
is needed, records a ``Node`` subclass whose ``backward`` (written in Ember ops) sits next to it.
"""
from .. import _dtype as dt
from .._tensor import Tensor, _wrap, _wrap_with, _new, _default_device
from ..autograd import grad_mode
from ..autograd.graph import Node, SavedTensor, init_node

_state = grad_mode._state
_BOOL = dt.bool
_PY_SCALARS = (int, float, bool, complex)


def needs_grad(*tensors):
    if not _state.enabled:
        return False
    for t in tensors:
        if t is not None and t._requires_grad:
            return True
    return False


def record(node_cls, inputs, out, save=(), save_out=False, **attrs):
    """Make ``out`` the result of a ``node_cls`` node over ``inputs`` (tensors or None)."""
    node = _new(node_cls)
    init_node(node, inputs)
    if attrs:
        node.__dict__.update(attrs)
    if save or save_out:
        saved = [SavedTensor(t) if t is not None else None for t in save]
        if save_out:
            saved.append(SavedTensor(out, True))
        node._saved = tuple(saved)
    out.grad_fn = node
    out._requires_grad = True
    return out


def record_multi(node_cls, inputs, outs, save=(), **attrs):
    """Like ``record`` for a node with several differentiable outputs."""
    node = _new(node_cls)
    init_node(node, inputs)
    node.__dict__.update(attrs)
    node._saved = tuple(SavedTensor(t) for t in save)
    node.num_outputs = len(outs)
    for i, out in enumerate(outs):
        out.grad_fn = node
        out._requires_grad = True
        if i:
            out._output_nr = i
    return outs


def device_mismatch(a, b):
    return RuntimeError("Expected all tensors to be on the same device, but found at least two "
                        f"devices, {a._device} and {b._device}!")


def as_tensor_on(value, like, dtype=None):
    """``value`` (a tensor or a Python/NumPy scalar) as a tensor on ``like``'s device."""
    if isinstance(value, Tensor):
        if value._device is not like._device:
            raise device_mismatch(like, value)
        return value if dtype is None or value._dtype is dtype else value.to(dtype)
    if dtype is None:
        dtype = dt.scalar_dtype(value) if isinstance(value, _PY_SCALARS) else None
    backend = like._backend
    data = backend.asarray(value, None if dtype is None else dtype.np)
    if dtype is None:
        dtype = dt.from_numpy_dtype(data.dtype)
    return _wrap(data, dtype, like)


def cast(data, dtype):
    return data if data.dtype == dtype.np else data.astype(dtype.np)


def binary_operands(a, b):
    """Arrays of ``a`` and ``b`` (tensor and tensor-or-scalar) in their PyTorch result dtype.

    A Python scalar stays a Python scalar: NumPy 2 treats it as weakly typed, like PyTorch, once
    the tensor has the result dtype."""
    if isinstance(b, Tensor):
        if a._device is not b._device:
            raise device_mismatch(a, b)
        da, db = a._dtype, b._dtype
        if da is db:
            return a._data, b._data, da
        rt = dt.result_type(a, b)
        return cast(a._data, rt), cast(b._data, rt), rt
    if not isinstance(b, _PY_SCALARS):
        if hasattr(b, "dtype") and hasattr(b, "shape"):  # a NumPy scalar or array
            return binary_operands(a, as_tensor_on(b, a))
        raise TypeError(f"unsupported operand type for a tensor op: '{type(b).__name__}'")
    da = a._dtype
    kind = da._kind
    tb = type(b)
    if (tb is float and kind >= 2) or (tb is int and kind >= 1) or (tb is bool):
        rt = da
    else:
        rt = dt.result_type(a, b)
    if rt is dt.bool:
        b = bool(b)
    return cast(a._data, rt), b, rt


def scalar_or_data(x):
    return x._data if isinstance(x, Tensor) else x


def check_out_dtype(result_dtype, out_dtype, inplace=True):
    if not dt.can_cast(result_dtype, out_dtype):
        raise RuntimeError(f"result type {_short(result_dtype)} can't be cast to the desired "
                           f"output type {_short(out_dtype)}")


def _short(d):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}[d.name]


def dtype_name(d):
    return _short(d)


def wrap_dim(dim, ndim):
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


def wrap_dims(dims, ndim):
    if isinstance(dims, int):
        dims = (dims,)
    out = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {out} appears multiple times in the list of dims")
    return out


def to_float_dtype(d):
    """The dtype a float-only op computes in for input dtype ``d`` (ints become default float)."""
    return d if d._kind >= 2 else dt.get_default_dtype()


__all__ = ["Tensor", "Node", "needs_grad", "record", "record_multi", "binary_operands", "cast",
           "as_tensor_on", "wrap_dim", "wrap_dims", "device_mismatch", "_wrap", "_wrap_with",
           "_default_device", "to_float_dtype", "dtype_name", "check_out_dtype",
           "scalar_or_data"]
