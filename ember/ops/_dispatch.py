"""What every op shares: turning arguments into arrays on one backend, PyTorch's result dtype,
and recording the op in the autograd graph.

An op is a plain function that computes arrays through ``tensor._backend`` and, when a gradient
is needed, records a ``Node`` subclass whose ``backward`` (written in Ember ops) sits next to it.
"""
import dis
import functools
import sys

from .. import _dtype as dt
from .. import _layout as _layouts
from .._tensor import Tensor, _wrap, _wrap_with, _new, wrap_dim, wrap_dim_no_scalar
from ..autograd import grad_mode
from ..autograd.graph import Node, SavedTensor, init_node
from ..autograd import forward_ad as _forward_ad

_state = grad_mode._state
_BOOL = dt.bool
_PY_SCALARS = (int, float, bool, complex)
# True while a forward AD level is active (set by ember.autograd.forward_ad): the single test
# eager dispatch pays for forward-mode AD.
_dual_active = False


def needs_grad(*tensors):
    """Whether an op over ``tensors`` must record a Node: for backward (grad mode on and an
    input requires grad) or, in a dual level, to give its output a tangent."""
    if _dual_active:
        return _forward_ad.needs_node(tensors, _state.enabled)
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
        # A loop, not a comprehension: a comprehension is a frame of its own, per op.
        saved = []
        for t in save:
            saved.append(SavedTensor(t) if t is not None else None)
        if save_out:
            saved.append(SavedTensor(out, True))
        node._saved = tuple(saved)
    if _dual_active:
        return _record_dual(node, inputs, (out,))[0]
    out.grad_fn = node
    out._requires_grad = True
    return out


def record_multi(node_cls, inputs, outs, save=(), **attrs):
    """Like ``record`` for a node with several differentiable outputs."""
    node = _new(node_cls)
    init_node(node, inputs)
    node.__dict__.update(attrs)
    node._saved = tuple(SavedTensor(t) if t is not None else None for t in save)
    node.num_outputs = len(outs)
    if _dual_active:
        return _record_dual(node, inputs, outs)
    for i, out in enumerate(outs):
        out.grad_fn = node
        out._requires_grad = True
        if i:
            out._output_nr = i
    return outs


def _record_dual(node, inputs, outs):
    """``record`` inside a dual level: the node joins the graph only if backward needs it,
    and computes the outputs' tangents (ember/autograd/forward_ad.py)."""
    fw_edges = _forward_ad.restore_flags(node, inputs)
    if _state.enabled and any(t is not None and t._requires_grad for t in inputs):
        for i, out in enumerate(outs):
            if out is None:
                continue
            out.grad_fn = node
            out._requires_grad = True
            if i:
                out._output_nr = i
    _forward_ad.propagate(node, inputs, outs, fw_edges)
    return outs


def device_mismatch(a, b):
    return RuntimeError("Expected all tensors to be on the same device, but found at least two "
                        f"devices, {a._device} and {b._device}!")


def check_same_device(first, *others):
    """PyTorch's device-mismatch error unless every tensor of ``others`` (None skipped) is on
    ``first``'s device."""
    for t in others:
        if t is not None and t._device is not first._device:
            raise device_mismatch(first, t)


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
    elif rt._kind == 1 and tb is not float:
        b = wrap_int(b, rt)
    elif rt is dt.bfloat16:  # ml_dtypes has no weak Python scalars: cast it as PyTorch does
        b = rt.np.type(b)
    return cast(a._data, rt), b, rt


def wrap_int(value, dtype):
    """A Python int as integer ``dtype`` stores it: PyTorch casts an out-of-range scalar operand
    with two's-complement wraparound (``uint8 tensor - 1`` subtracts 255), where NumPy raises."""
    bits = dtype.itemsize * 8
    value = int(value) & ((1 << bits) - 1)
    if dtype.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


_C_INT_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
                "int64": "int64_t"}


def checked_int_scalar(value, dtype):
    """A Python number argument (a fill value, ``alpha``) as integer ``dtype`` receives it, by
    PyTorch's checked conversion: a float is truncated and must lie in the dtype's range; an int
    must too, except that a negative one down to ``-max`` wraps into an unsigned dtype."""
    bits = dtype.itemsize * 8
    if dtype.is_signed:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    else:
        lo, hi = 0, (1 << bits) - 1
    if isinstance(value, int):  # bool included: True is 1
        if not dtype.is_signed:
            lo = -hi
        if lo <= value <= hi:
            return wrap_int(value, dtype)
    elif lo <= value <= hi:  # False for NaN
        return int(value)
    raise RuntimeError(f"value cannot be converted to type {_C_INT_NAMES[dtype.name]} without "
                       "overflow")


# ---- Reusing a temporary's buffer -----------------------------------------------------------
# NumPy evaluates ``x * 1.5 + y`` with one allocation, not two: when the left operand of a Python
# operator is a large temporary that nothing else references, it writes the result into that
# operand's buffer ("temporary elision"). A Tensor holds a second reference to its array, which
# hides the temporary from NumPy, so Ember's operators make the same check on the Tensor.
ELIDE_MIN_BYTES = 256 * 1024  # NumPy's threshold: below it a fresh allocation costs little
_BINARY_OP = dis.opmap.get("BINARY_OP")


def _called_by_operator_syntax(frame):
    # An explicit ``Tensor.__add__(x, y)`` call hands over the caller's reference to ``x``, so
    # only a call made by the BINARY_OP instruction itself has the reference count read below.
    return frame.f_code.co_code[frame.f_lasti] == _BINARY_OP


def _temporary_refcount():
    """The reference count an operator's temporary left operand shows inside ``reuse_temporary``.

    Measured on a probe with the same call structure (caller -> ``__add__`` -> function). None
    (never reuse) unless every way of naming an operand shows a higher count: not on other
    interpreters, nor on CPythons that load local variables as borrowed references."""
    if sys.implementation.name != "cpython" or _BINARY_OP is None:
        return None

    def count(operand, other):
        return sys.getrefcount(operand), _called_by_operator_syntax(sys._getframe(2))

    class Probe:
        def __add__(self, other):
            return count(self, other)

    def samples():
        local, holder = Probe(), [Probe()]
        return Probe() + 0, [local + 0, holder[0] + 0, _probe_global + 0]

    global _probe_global
    _probe_global = Probe()
    (temporary, by_operator), named = samples()
    del _probe_global
    if not by_operator or any(refs <= temporary for refs, _ in named):
        return None
    return temporary


_TEMPORARY_REFS = _temporary_refcount()


def reuse_temporary(t, other, ufunc_name):
    """``t <op> other`` computed in ``t``'s own buffer when ``t`` is a large temporary that nothing
    else can see; None otherwise. Call it only directly from a binary operator method."""
    data = t._data
    # Integer division changes dtype and bool arithmetic raises: floating types only.
    if (data.nbytes < ELIDE_MIN_BYTES or _TEMPORARY_REFS is None or type(t) is not Tensor
            or t._dtype._kind < 2 or t._requires_grad or t.__dict__
            or sys.getrefcount(t) != _TEMPORARY_REFS
            or sys.getrefcount(data) != 3  # held by t, by `data` and by getrefcount: no views
            or data.base is not None
            or not getattr(data.flags, "writeable", True)
            or not _called_by_operator_syntax(sys._getframe(2))):
        return None
    if isinstance(other, Tensor):
        if ((other._requires_grad and _state.enabled) or other._layout is not _layouts.strided
                or other._device is not t._device):
            return None  # a sparse operand goes to its own op (ember/ops/sparse.py), a CPU
            # scalar on another device's op to the op's own handling
        shape = other._data.shape
        if shape != data.shape and (other._data.size != 1 or len(shape) > data.ndim):
            return None
    elif not isinstance(other, _PY_SCALARS):
        return None
    a, b, rt = binary_operands(t, other)
    if rt is not t._dtype or a is not data:
        return None
    getattr(t._backend.xp, ufunc_name)(a, b, out=a)
    return _wrap(a, rt, t)


def dtype_name(d):
    """The name PyTorch's messages give dtype ``d`` ("Float", "Long")."""
    return dt.SCALAR_TYPE_NAMES[d.name]


def wrap_dims(dims, ndim):
    if isinstance(dims, int):
        dims = (dims,)
    out = tuple(wrap_dim(d, ndim) for d in dims)
    for i, d in enumerate(out):
        if d in out[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out


# ---- NumPy's keyword names ---------------------------------------------------------------
# torch's argument parser accepts NumPy's name for four parameters of every op it binds
# natively (python_arg_parser.cpp): ``x.sum(axis=0, keepdims=True)``, ``torch.max(x, axis=1)``.
NUMPY_KEYWORDS = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input",
                  "x1": "input", "x2": "other"}


def accept_numpy_keywords(fn):
    """``fn``, also accepting NumPy's keyword names for its ``dim``, ``keepdim``, ``input`` and
    ``other`` parameters. The wrapper only looks at keywords, so a positional call pays one
    extra frame."""
    renames, position = numpy_keyword_renames(fn)
    if not renames:
        return fn

    @functools.wraps(fn)
    def op(*args, **kwargs):
        if kwargs and not renames.keys().isdisjoint(kwargs):
            kwargs = rename_keywords(fn.__name__, renames, position, len(args), kwargs)
        return fn(*args, **kwargs)
    return op


def numpy_keyword_renames(fn):
    """``({alias: parameter}, {parameter: position})`` for the NumPy keyword names ``fn``'s
    parameters have and it does not take itself; ``({}, {})`` for a builtin."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return {}, {}
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    renames = {alias: name for alias, name in NUMPY_KEYWORDS.items()
               if name in names and alias not in names}
    # A parameter filled positionally makes its alias unexpected, as torch reports it.
    position = {name: i for i, name in enumerate(code.co_varnames[:code.co_argcount])}
    return renames, position


def rename_keywords(name, renames, position, n_positional, kwargs):
    out = {}
    for key, value in kwargs.items():
        target = renames.get(key)
        if target is not None:
            if (target in kwargs or target in out
                    or position.get(target, n_positional) < n_positional):
                raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
            key = target
        out[key] = value
    return out


def to_float_dtype(d):
    """The dtype a float-only op computes in for input dtype ``d`` (ints become default float)."""
    return d if d._kind >= 2 else dt.get_default_dtype()


__all__ = ["Tensor", "Node", "needs_grad", "record", "record_multi", "binary_operands", "cast",
           "as_tensor_on", "wrap_dim", "wrap_dims", "device_mismatch", "_wrap", "_wrap_with",
           "to_float_dtype", "dtype_name", "reuse_temporary", "wrap_int"]


_SAME_WIDTH_INT = {2: "int16", 4: "int32", 8: "int64"}


def keep_or_zero(xp, keep, values):
    """``values`` where the boolean array ``keep`` holds, +0 elsewhere — exactly, even where a
    dropped value is NaN or infinite (``values * keep`` would give NaN there). For float arrays
    of ``keep``'s shape this is an AND of the bits with an all-ones/all-zeros mask, several
    times faster than ``where`` on NumPy, which is the hot path of every ReLU backward."""
    int_name = _SAME_WIDTH_INT.get(values.dtype.itemsize)
    # 0-d arrays take the ``where`` path: NumPy turns their comparisons into scalars, which
    # cannot be written into with ``out=``.
    if values.dtype.kind != "f" or int_name is None or keep.shape != values.shape or not values.ndim:
        return xp.where(keep, values, values.dtype.type(0))
    int_type = getattr(xp, int_name)
    mask = keep.view(xp.int8).astype(int_type)
    xp.negative(mask, out=mask)  # True -> all bits set
    bits = xp.ascontiguousarray(values).view(int_type)
    return xp.bitwise_and(bits, mask, out=mask).view(values.dtype)



class CompositeBackward(Node):
    """The node of an op PyTorch runs as one kernel with its own backward (``DistBackward0``,
    ``CdistBackward0``…) and Ember computes as a composition of its own ops. A subclass carries
    PyTorch's name; ``record_composite`` runs the composition on detached copies of the inputs
    and keeps that inner graph, so the gradient is the composition's, exactly, at no more cost
    than recording the composition itself. Under ``create_graph`` the composition is evaluated
    again on the saved inputs, so higher-order gradients flow through it."""
    __slots__ = ()

    def release(self):
        super().release()
        self.__dict__.pop("inner", None)

    def backward(self, *grads):
        from ..autograd import grad as autograd_grad
        inputs = self.saved_tensors  # version-checked
        wanted = [i for i, edge in enumerate(self._edges) if edge is not None]
        if _state.enabled:
            outs, targets = self.composition(*inputs), inputs
        else:
            outs, targets = self.inner
        outs = outs if isinstance(outs, tuple) else (outs,)
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
        result = [None] * len(inputs)
        if pairs:
            found = autograd_grad([o for o, _ in pairs], [targets[i] for i in wanted],
                                  [g for _, g in pairs], retain_graph=True,
                                  create_graph=_state.enabled, allow_unused=True)
            for i, g in zip(wanted, found):
                result[i] = g
        return tuple(result) if len(result) > 1 else result[0]

    def jvp(self, *tangents):
        # The composition's own ops carry the tangents: rerun it with forward AD active.
        inputs = self.saved_tensors
        with _forward_ad.active():
            outs = self.composition(*inputs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return tuple(o._fw_grad for o in outs)


def record_composite(node_cls, inputs, composition):
    """``composition(*inputs)`` (a tensor or a tuple of them), recorded as one ``node_cls``
    node over ``inputs`` (tensors, or None where PyTorch's node has an input with no edge)."""
    if not needs_grad(*inputs):
        return composition(*inputs)
    leaves = tuple(t.detach().requires_grad_() if t is not None and t._requires_grad else t
                   for t in inputs)
    inner = composition(*leaves)
    outs = inner if isinstance(inner, tuple) else (inner,)
    results = tuple(o.detach() for o in outs)
    if len(results) == 1:
        record(node_cls, inputs, results[0], save=inputs, composition=composition)
    else:
        record_multi(node_cls, inputs, results, save=inputs, composition=composition)
    node = results[0].grad_fn
    if node is not None:  # None inside a dual level, when only tangents asked for the node
        node.inner = (inner, leaves)
    return results if isinstance(inner, tuple) else results[0]
