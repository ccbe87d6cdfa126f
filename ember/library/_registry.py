"""The operator registry: kernels looked up by PyTorch's operator name, per device type.

A registry-backed device (``ember.library.RegistryBackend``, ``_fallback.py``) asks this table
for each operation its array namespace is called with; what it finds runs on the device, what
it does not find runs on the CPU (the fallback) and is counted. CPU and CUDA never read the
table: their ops compute through NumPy and CuPy directly, so an ordinary device pays nothing
for the registry.

Names are PyTorch's ATen names (``"aten::add.Tensor"``, ``"aten::mm"``, ``"aten::sin"``), so a
backend author can read them off PyTorch's schema list; ``PRIMITIVES`` lists the ones Ember's
namespace maps its operations onto, each with the calling convention its kernel gets.
"""
import os
import threading
import time
import warnings

__all__ = ["Library", "impl", "register_kernel", "lookup", "has_kernel", "registered_kernels",
           "set_strict_fallback", "is_strict_fallback", "fallback_report", "reset_fallback_report",
           "FallbackReport", "PRIMITIVES"]

# (qualname, device type) -> kernel
_KERNELS = {}
# qualname -> schema text given to Library.define
_SCHEMAS = {}
# the (namespace, kind) of every Library(kind="DEF") made, as torch refuses a second one
_DEFINED_NAMESPACES = set()

# The primitive set: what Ember's registry namespace maps NumPy-style calls onto, and the
# arguments each kernel receives. "compact" means a DeviceArray that is C-contiguous, starts at
# offset 0 and spans its whole storage, so ``a.payload`` is exactly its elements in order; the
# namespace makes arguments compact (with ``aten::clone``) and of one dtype (with
# ``aten::_to_copy``) before calling, so a kernel never sees broadcasting, strides or mixed
# dtypes. Every kernel returns a new payload for a compact result unless noted.
PRIMITIVES = {
    # memory, copies, views (views themselves are metadata: no kernel)
    "aten::empty.memory_format": "(shape, dtype) -> payload of prod(shape) elements",
    "aten::full": "(shape, fill_value, dtype) -> payload",
    "aten::clone": "(x: any strided DeviceArray) -> compact payload of x's elements in C order",
    "aten::copy_": "(dst: strided DeviceArray view, src: compact, same shape and dtype) -> None, "
                   "writes src into dst's storage",
    "aten::_to_copy": "(x: compact, dtype) -> payload of x cast to dtype",
    "aten::arange": "(start, step, count, dtype) -> payload: start + i * step",
    # element-wise unary: (x: compact floating) -> payload, same dtype
    **{f"aten::{name}": "(x: compact) -> payload" for name in (
        "neg", "abs", "exp", "log", "sqrt", "tanh", "sin", "cos", "sign",
        "floor", "ceil", "log1p", "expm1", "reciprocal", "erf")},
    # element-wise binary: (a, b) -> payload; each is compact of the result shape, or a Python
    # scalar; both of the computation dtype. Comparisons return bool payloads.
    **{f"aten::{name}.Tensor": "(a, b: compact or Python scalar) -> payload" for name in (
        "add", "sub", "mul", "div", "eq", "ne", "lt", "le", "gt",
        "ge", "bitwise_and", "bitwise_or")},
    "aten::pow.Tensor_Tensor": "(a, b: compact or Python scalar) -> payload",
    "aten::logical_and": "(a, b: compact bool or Python bool) -> bool payload",
    "aten::logical_or": "(a, b: compact bool or Python bool) -> bool payload",
    "aten::maximum": "(a, b: compact or Python scalar) -> payload",
    "aten::minimum": "(a, b: compact or Python scalar) -> payload",
    # ternary
    "aten::where.self": "(cond: compact bool, a, b: compact or Python scalar) -> payload",
    # reductions over the last axis of a compact (M, K) array -> (M,) payload
    "aten::sum.dim_IntList": "(x: compact (M, K)) -> payload (M,)",
    "aten::amax": "(x: compact (M, K)) -> payload (M,)",
    "aten::amin": "(x: compact (M, K)) -> payload (M,)",
    "aten::argmax": "(x: compact (M, K)) -> int64 payload (M,)",
    # matrix products
    "aten::mm": "(a: compact (M, K), b: compact (K, N)) -> payload (M, N)",
    "aten::bmm": "(a: compact (B, M, K), b: compact (B, K, N)) -> payload (B, M, N)",
    # gather / scatter along the last axis of (M, K) arrays
    "aten::gather": "(x: compact (M, K), index: compact int64 (M, J)) -> payload (M, J)",
    "aten::index_select": "(x: compact (N, D), index: compact int64 (J,)) -> payload (J, D): "
                          "rows of x (x[index] for integer-array keys, embeddings)",
    "aten::index_put_": "(x: compact (N, D), index: compact int64 (J,), values: compact (J, D)) "
                        "-> payload (N, D): x with those rows replaced",
    "aten::scatter.src": "(target: compact (M, K), index: compact int64 (M, J), src: compact "
                         "(M, J)) -> payload (M, K): target with src written at index",
}

_strict = os.environ.get("EMBER_STRICT_FALLBACK", "") not in ("", "0")


def set_strict_fallback(strict):
    """Make an operation a registry-backed device has no kernel for raise (True) instead of
    running on the CPU with a warning (False, the default). ``EMBER_STRICT_FALLBACK=1`` sets it
    at start-up."""
    global _strict
    _strict = bool(strict)


def is_strict_fallback():
    return _strict


# ---- the kernel table -----------------------------------------------------------------------

def _device_type_of(key):
    """A device type for a dispatch key or device type as torch.library takes them: "CPU" ->
    "cpu", "PrivateUse1" -> the renamed private-use backend, a device type as it is."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"expected a device type or dispatch key, got {key!r}")
    if key == "PrivateUse1":
        from ..utils.backend_registration import _get_privateuse1_backend_name
        return _get_privateuse1_backend_name()
    if key in ("CompositeImplicitAutograd", "CompositeExplicitAutograd", "Autograd", "Meta",
               "AutogradCPU", "AutogradCUDA", "AutogradPrivateUse1", "Python",
               "FuncTorchBatched", "BackendSelect"):
        raise NotImplementedError(
            f"dispatch key '{key}' is not supported by ember.library: Ember's registry holds "
            f"per-device kernels for registry-backed devices; autograd and composite "
            f"definitions are written as Ember ops (see ember.library.custom_op)")
    return key.lower() if key in ("CPU", "CUDA", "XPU", "MPS") else key


def _check_registry_device(qualname, device_type):
    if device_type in ("cpu", "cuda") and qualname.startswith("aten::"):
        raise NotImplementedError(
            f"cannot register a kernel for {qualname} on '{device_type}': Ember runs ATen "
            f"operators on {device_type} through its own "
            f"{'NumPy' if device_type == 'cpu' else 'CuPy'} code, not through the operator "
            f"registry; kernels for ATen operators are for registry-backed devices "
            f"(ember.library.RegistryBackend)")


def register_kernel(qualname, device_type, fn, *, allow_override=False):
    """Put ``fn`` in the table as ``qualname``'s kernel on ``device_type``."""
    if not callable(fn):
        raise TypeError(f"a kernel must be callable, got {type(fn).__name__}")
    if "::" not in qualname:
        raise ValueError(f"expected a qualified operator name 'namespace::name[.overload]', "
                         f"got {qualname!r}")
    _check_registry_device(qualname, device_type)
    key = (qualname, device_type)
    if key in _KERNELS and not allow_override:
        raise RuntimeError(f"a kernel for {qualname} on '{device_type}' is already registered "
                           f"(pass allow_override=True to replace it)")
    _KERNELS[key] = fn
    return fn


def lookup(qualname, device_type):
    """The kernel registered for ``qualname`` on ``device_type``, or None."""
    return _KERNELS.get((qualname, device_type))


def has_kernel(qualname, device_type):
    return (qualname, device_type) in _KERNELS


def registered_kernels(device_type):
    """The operator names with a kernel on ``device_type``, sorted."""
    return sorted(name for name, dev in _KERNELS if dev == device_type)


def _unregister_device(device_type):
    for key in [k for k in _KERNELS if k[1] == device_type]:
        del _KERNELS[key]


def impl(qualname, types, func=None, *, lib=None):
    """Register ``func`` as ``qualname``'s kernel for the device type(s) ``types`` (a device
    type such as "opencl", a dispatch key such as "PrivateUse1", or a sequence of them), as
    ``torch.library.impl``; without ``func``, a decorator::

        @ember.library.impl("aten::mm", "opencl")
        def mm(a, b): ...
    """
    names = (types,) if isinstance(types, str) else tuple(types)
    if not names:
        raise ValueError("impl: no device types given")

    def register(fn):
        for name in names:
            register_kernel(qualname, _device_type_of(name), fn)
            if lib is not None:
                lib._registered.append((qualname, _device_type_of(name)))
        return fn

    return register if func is None else register(func)


class Library:
    """A set of operator definitions and kernels under one namespace, as ``torch.library.
    Library(ns, kind)``: kind "DEF" (defines the namespace's operators, once per namespace),
    "IMPL" (kernels for operators defined elsewhere, e.g. ``Library("aten", "IMPL")``) or
    "FRAGMENT" (more definitions for an existing namespace). ``_destroy()`` removes what the
    library registered."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if ns in ("prim",) and kind == "DEF":
            raise ValueError(f"{ns} is a reserved namespace. Please try creating a library "
                             f"with another name.")
        if kind == "DEF":
            if ns in _DEFINED_NAMESPACES or ns == "aten":
                raise RuntimeError(
                    f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; "
                    f"please put all of your definitions in a single TORCH_LIBRARY block. If "
                    f"you were trying to specify implementations, consider using "
                    f"TORCH_LIBRARY_IMPL (which can be duplicated). If you really intended to "
                    f"define operators for a single namespace in a distributed way, you can "
                    f"use TORCH_LIBRARY_FRAGMENT to explicitly indicate this.")
            _DEFINED_NAMESPACES.add(ns)
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._defined = []
        self._registered = []

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})"

    def define(self, schema, alias_analysis="", *, tags=()):
        """Record an operator's schema ``"name(Tensor x) -> Tensor"`` under this namespace;
        returns its name (``ns::name``). The schema is kept for kernels to be registered
        against; the calling convention of Ember's registry is the Python call itself."""
        if self.kind == "IMPL":
            raise RuntimeError(f"define() is not allowed on a Library of kind IMPL ({self.ns})")
        name, paren, _ = schema.partition("(")
        if not paren or not name.strip():
            raise ValueError(f"expected a schema 'name(args) -> returns', got {schema!r}")
        qualname = f"{self.ns}::{name.strip()}"
        if qualname in _SCHEMAS:
            raise RuntimeError(f"Tried to register an operator ({qualname}) with the same name "
                               f"and overload name multiple times.")
        _SCHEMAS[qualname] = schema
        self._defined.append(qualname)
        return name.strip()

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False, allow_override=False):
        """Register ``fn`` as the kernel of ``op_name`` (this namespace's, or ``ns::name``) for
        ``dispatch_key`` (a device type or dispatch key; the library's own if empty)."""
        if with_keyset:
            raise NotImplementedError("impl(with_keyset=True): Ember's kernels get no dispatch "
                                      "key set")
        key = dispatch_key or self.dispatch_key
        if not key:
            raise ValueError(f"impl({op_name!r}): give a dispatch key or device type "
                             f"(e.g. 'PrivateUse1' or 'opencl')")
        qualname = op_name if "::" in op_name else f"{self.ns}::{op_name}"
        device_type = _device_type_of(key)
        register_kernel(qualname, device_type, fn, allow_override=allow_override)
        self._registered.append((qualname, device_type))

    def _destroy(self):
        for key in self._registered:
            _KERNELS.pop(key, None)
        for qualname in self._defined:
            _SCHEMAS.pop(qualname, None)
        if self.kind == "DEF":
            _DEFINED_NAMESPACES.discard(self.ns)
        self._registered = []
        self._defined = []


# ---- the fallback report --------------------------------------------------------------------

class _Counter:
    __slots__ = ("calls", "seconds")

    def __init__(self):
        self.calls = 0
        self.seconds = 0.0


class FallbackReport:
    """Per device type and operator: the calls that ran on the device and those that fell back
    to the CPU, with the wall time spent in each, and the bytes moved between host and device.
    Times are host wall-clock time of the call (including the copies a fallback makes); work a
    device queues asynchronously is counted where the host waits for it (a download)."""

    def __init__(self, device, fallback, transfers):
        self.device = device          # {(device_type, op): (calls, seconds)}
        self.fallback = fallback
        self.transfers = transfers    # {(device_type, "upload"/"download"): (count, bytes, s)}

    def ops_on_device(self, device_type):
        return sorted(op for dev, op in self.device if dev == device_type)

    def ops_fallen_back(self, device_type):
        return sorted(op for dev, op in self.fallback if dev == device_type)

    def __str__(self):
        lines = []
        types = sorted({dev for dev, _ in self.device} | {dev for dev, _ in self.fallback})
        for dev in types:
            rows = [(op, "device", *v) for (d, op), v in self.device.items() if d == dev]
            rows += [(op, "CPU fallback", *v) for (d, op), v in self.fallback.items() if d == dev]
            rows.sort(key=lambda r: -r[3])
            on, off = len(self.ops_on_device(dev)), len(self.ops_fallen_back(dev))
            t_on = sum(v[1] for (d, _), v in self.device.items() if d == dev)
            t_off = sum(v[1] for (d, _), v in self.fallback.items() if d == dev)
            lines.append(f"device '{dev}': {on} ops ran on the device ({t_on:.3f} s), "
                         f"{off} fell back to the CPU ({t_off:.3f} s)")
            lines.append(f"  {'operator':<34}{'where':<14}{'calls':>8}{'seconds':>10}")
            for op, where, calls, seconds in rows:
                lines.append(f"  {op:<34}{where:<14}{calls:>8}{seconds:>10.4f}")
            for (d, kind), (count, nbytes, seconds) in sorted(self.transfers.items()):
                if d == dev:
                    lines.append(f"  {kind}s: {count} ({nbytes / 1e6:.2f} MB, {seconds:.3f} s)")
        return "\n".join(lines) if lines else "no registry-backed device has run an operator"


_lock = threading.Lock()
_on_device = {}
_fallen_back = {}
_transfers = {}
_warned = set()


def _count(table, device_type, op, seconds):
    key = (device_type, op)
    counter = table.get(key)
    if counter is None:
        with _lock:
            counter = table.setdefault(key, _Counter())
    counter.calls += 1
    counter.seconds += seconds


def count_device(device_type, op, seconds):
    _count(_on_device, device_type, op, seconds)


def count_fallback(device_type, op, seconds):
    _count(_fallen_back, device_type, op, seconds)


def count_transfer(device_type, kind, nbytes, seconds):
    key = (device_type, kind)
    entry = _transfers.get(key, (0, 0, 0.0))
    _transfers[key] = (entry[0] + 1, entry[1] + nbytes, entry[2] + seconds)


def enter_fallback(device_type, op):
    """Called before ``op`` runs on the CPU for ``device_type``: raises in strict mode, else
    warns the first time each operator falls back on that device (as PyTorch's MPS fallback)."""
    if _strict:
        raise NotImplementedError(
            f"The operator '{op}' is not currently implemented for the {device_type} device "
            f"and strict fallback is on (ember.library.set_strict_fallback(False) or "
            f"EMBER_STRICT_FALLBACK=0 lets it run on the CPU)")
    key = (device_type, op)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(f"The operator '{op}' is not currently supported on the {device_type} "
                      f"device and will fall back to run on the CPU. This may have performance "
                      f"implications.", UserWarning, stacklevel=4)


def fallback_report():
    """A snapshot of the counters (``print`` it for a table)."""
    def snap(table):
        return {k: (c.calls, c.seconds) for k, c in table.items()}
    return FallbackReport(snap(_on_device), snap(_fallen_back), dict(_transfers))


def reset_fallback_report(*, warnings_too=False):
    """Zero the counters (and, with ``warnings_too``, warn again for each op's next fallback)."""
    _on_device.clear()
    _fallen_back.clear()
    _transfers.clear()
    if warnings_too:
        _warned.clear()


perf_counter = time.perf_counter
