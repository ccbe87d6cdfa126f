"""Custom operators, as ``torch.library.custom_op``.

``@custom_op("mylib::op", mutates_args=())`` turns a type-annotated function into an operator:
its schema is inferred from the annotations (``mylib::op(Tensor x, float a) -> Tensor``), the
function becomes its kernel on every device (or on ``device_types``), and the operator is
reachable as ``ember.ops.mylib.op`` (``torch.ops.mylib.op``). Around the kernel the operator
adds what a kernel cannot know about:

* autograd: the kernel runs below autograd (under ``no_grad``, so the ops it runs record
  nothing); ``register_autograd(backward, setup_context=...)`` connects its outputs to the
  graph through an ``autograd.Function`` named as torch names it
  (``GeneratedBackwardFor_mylib_op_defaultBackward``); without one, a backward through the
  op raises, as in torch;
* mutation: each argument named in ``mutates_args`` gets its version bumped after the call
  (so saved-tensor checks see the write), and ``opcheck`` detects a write to an undeclared one;
* aliasing: an output that is, or shares memory with, an input is an error, as in torch;
* graph capture: under ``make_fx``/``jit.trace`` the op is one ``call_function`` node whose
  target is ``ember.ops.mylib.op.default``, and under ``fx.symbolic_trace`` a Proxy argument
  records the same node. Ember's traces run real kernels (it has no fake tensors), so the
  ``register_fake`` function is checked, not traced with: ``opcheck``'s ``test_faketensor``
  runs it on the inputs and compares its outputs' shapes, dtypes and devices with the kernel's.
"""
import collections.abc
import contextlib
import inspect
import sys
import threading
import types
import typing

__all__ = ["custom_op", "CustomOpDef", "register_kernel", "register_fake", "register_autograd",
           "opcheck", "infer_schema", "get_ctx"]

_OPS = {}  # "ns::name" -> CustomOpDef
_OPS_LOCK = threading.Lock()


# ---- schemas ---------------------------------------------------------------------------------

class _Arg:
    __slots__ = ("name", "type", "default", "kwarg_only", "alias")

    def __init__(self, name, type_, default=inspect.Parameter.empty, kwarg_only=False,
                 alias=None):
        self.name, self.type, self.default = name, type_, default
        self.kwarg_only, self.alias = kwarg_only, alias

    @property
    def is_mutable(self):
        return self.alias is not None and self.alias.endswith("!")

    @property
    def is_tensor_like(self):
        return self.type.startswith("Tensor")

    def __str__(self):
        t = self.type
        if self.alias is not None:
            t = f"Tensor({self.alias})" + t[len("Tensor"):]
        text = f"{t} {self.name}"
        if self.default is not inspect.Parameter.empty:
            text += f"={_default_text(self.default)}"
        return text


class FunctionSchema:
    """An operator's signature in torch's schema syntax; ``str()`` prints it as torch does."""

    def __init__(self, name, arguments, returns):
        self.name, self.arguments, self.returns = name, arguments, returns

    @property
    def is_mutable(self):
        return any(a.is_mutable for a in self.arguments)

    def __str__(self):
        parts, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(str(a))
        rets = self.returns
        ret = rets[0] if len(rets) == 1 else "(" + ", ".join(rets) + ")"
        return f"{self.name}({', '.join(parts)}) -> {ret}"

    __repr__ = __str__

    def signature(self):
        params = []
        for a in self.arguments:
            kind = inspect.Parameter.KEYWORD_ONLY if a.kwarg_only \
                else inspect.Parameter.POSITIONAL_OR_KEYWORD
            params.append(inspect.Parameter(a.name, kind, default=a.default))
        return inspect.Signature(params)


def _default_text(value):
    from .._dtype import dtype
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, dtype):
        return str(value).rsplit(".", 1)[-1]
    if isinstance(value, (int, float)):
        return repr(value)
    raise ValueError(f"unsupported default value type {type(value)}")


def _type_table():
    from .._tensor import Tensor
    from .._dtype import dtype
    from .._device import device
    scalar = typing.Union[int, float, bool]
    table = {Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", str: "str",
             dtype: "ScalarType", device: "Device", scalar: "Scalar"}
    out = {}
    for py, name in table.items():
        out[py] = name
        out[typing.Optional[py]] = name + "?"
        if py is not str and py is not dtype and py is not device:
            for seq in (typing.Sequence, typing.List, collections.abc.Sequence, list):
                out[seq[py]] = name + "[]"
                if py is Tensor:
                    out[seq[typing.Optional[py]]] = "Tensor?[]"
                else:
                    out[typing.Optional[seq[py]]] = name + "[]?"
    return out


def _return_type(annotation, table, error):
    from .._tensor import Tensor
    if annotation is None or annotation is type(None):
        return []
    if typing.get_origin(annotation) is tuple:
        return [_return_type(a, table, error)[0] for a in typing.get_args(annotation)]
    name = table.get(annotation)
    if name is None:
        error(f"Return has unsupported type {annotation}.")
    return [name]


def _hints(fn):
    try:
        return typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - an unresolvable string annotation: fall back to raw ones
        return dict(getattr(fn, "__annotations__", {}))


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """The schema of ``prototype_function`` from its type annotations, as
    ``torch.library.infer_schema``: ``"(Tensor x, float a) -> Tensor"`` (prefixed by
    ``op_name`` when given). ``mutates_args`` names the arguments the function writes to
    (``"unknown"``: every Tensor argument)."""
    sig = inspect.signature(prototype_function)

    def error(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    hints = _hints(prototype_function)
    table = _type_table()
    if mutates_args != "unknown":
        if isinstance(mutates_args, str):
            raise ValueError("mutates_args must be a sequence of argument names or 'unknown', "
                             f"got the string {mutates_args!r}")
        mutates_args = set(mutates_args)
        unknown = mutates_args - set(sig.parameters)
        if unknown:
            error(f"{sorted(unknown)} in mutates_args were not found in the custom op's "
                  "signature.")
    args, alias = [], 0
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            error("We do not support calling custom ops with *args or **kwargs.")
        if p.kind == p.POSITIONAL_ONLY:
            error("We do not support positional-only parameters.")
        if p.name not in hints:
            error(f"Parameter {p.name} must have a type annotation.")
        schema_type = table.get(hints[p.name])
        if schema_type is None:
            error(f"Parameter {p.name} has unsupported type {hints[p.name]}. The valid types "
                  f"are Tensor, int, float, bool, str, dtype, device, Optional of these and "
                  f"lists of Tensor/int/float/bool.")
        mutated = (mutates_args == "unknown" and schema_type.startswith("Tensor")) or \
            (mutates_args != "unknown" and p.name in mutates_args)
        if mutated and not schema_type.startswith("Tensor"):
            error(f"Parameter {p.name} is in mutates_args but only Tensors can be mutated.")
        if p.default is not p.empty:
            try:
                _default_text(p.default)
            except ValueError:
                error(f"Parameter {p.name} has an unsupported default value type "
                      f"{type(p.default)}.")
        a = _Arg(p.name, schema_type, p.default, p.kind == p.KEYWORD_ONLY,
                 f"a{alias}!" if mutated else None)
        alias += mutated
        args.append(a)
    if "return" not in hints:
        error("No return type annotation was provided. Please add one.")
    returns = _return_type(hints["return"], table, error)
    return str(FunctionSchema(op_name or "", args, returns))


def _parse_default(text):
    import ember
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith('"') or text.startswith("'"):
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    value = getattr(ember, text, None)
    if value is None:
        raise ValueError(f"schema default {text!r} is not understood")
    return value


def _parse_schema(name, text):
    """A schema string ``"(Tensor(a!) x, float a=1.0, *, bool flag=False) -> Tensor"``."""
    text = text.strip()
    if not text.startswith("("):
        raise ValueError(f"schema for {name}: expected '(args) -> returns', got {text!r}")
    depth, end = 0, None
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            end = i
            break
    if end is None or "->" not in text[end:]:
        raise ValueError(f"schema for {name}: expected '(args) -> returns', got {text!r}")
    params_text, ret_text = text[1:end], text[end + 1:].split("->", 1)[1].strip()
    args, kwarg_only = [], False
    for piece in _split_top(params_text):
        piece = piece.strip()
        if not piece:
            continue
        if piece == "*":
            kwarg_only = True
            continue
        decl, eq, default = piece.partition("=")
        type_text, _, arg_name = decl.strip().rpartition(" ")
        alias = None
        if type_text.startswith("Tensor("):
            close = type_text.index(")")
            alias = type_text[len("Tensor("):close]
            type_text = "Tensor" + type_text[close + 1:]
        args.append(_Arg(arg_name, type_text,
                         _parse_default(default.strip()) if eq else inspect.Parameter.empty,
                         kwarg_only, alias))
    if ret_text == "()":
        returns = []
    elif ret_text.startswith("("):
        returns = [r.strip() for r in _split_top(ret_text[1:-1])]
    else:
        returns = [ret_text]
    return FunctionSchema(name, args, returns)


def _split_top(text):
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "(["
        depth -= ch in ")]"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


# ---- operator objects: ember.ops.<ns>.<name>[.default] --------------------------------------

class OpOverload:
    """``ember.ops.mylib.op.default``: the operator itself, the target graph capture records."""

    def __init__(self, op):
        self._op = op
        self._schema = op._schema
        self.__name__ = f"{op._name}.default"
        self.__qualname__ = f"{op._name}.default"
        self.__module__ = f"ember.ops.{op._namespace}"
        self._overloadname = "default"
        self.namespace = op._namespace

    def name(self):
        return self._op._qualname

    @property
    def overloadpacket(self):
        return self._op._packet

    def __call__(self, *args, **kwargs):
        return self._op._call(args, kwargs)

    def __repr__(self):
        return f"{self._op._namespace}.{self._op._name}.default"

    def __reduce__(self):
        return _resolve_overload, (self._op._qualname,)


def _resolve_overload(qualname):
    return _lookup(qualname)._opoverload


class OpOverloadPacket:
    """``ember.ops.mylib.op``: callable, with its overloads as attributes (``.default``)."""

    def __init__(self, op):
        self._op = op
        self.__name__ = op._name
        self.__qualname__ = op._name
        self.__module__ = f"ember.ops.{op._namespace}"
        self.default = op._opoverload

    def overloads(self):
        return ["default"]

    @property
    def _schemas(self):
        return {"": self._op._schema}

    def __call__(self, *args, **kwargs):
        return self._op._call(args, kwargs)

    def __getattr__(self, name):
        raise AttributeError(f"The underlying op of '{self._op._namespace}.{self._op._name}' has "
                             f"no overload name '{name}'")

    def __repr__(self):
        return f"{self._op._namespace}.{self._op._name}"


class _OpNamespace(types.ModuleType):
    """``ember.ops.mylib``: the operators defined under one namespace."""

    def __init__(self, name):
        super().__init__(f"ember.ops.{name}")
        self.name = name

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        op = _lookup(f"{self.name}::{op_name}", missing_ok=True)
        if op is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                                 f"'{op_name}'")
        return op._packet

    def __dir__(self):
        return sorted(q.split("::", 1)[1] for q in _OPS if q.startswith(self.name + "::"))


class _AtenPacket:
    """``ember.ops.aten.<name>``: Ember's own op of that name (every overload is the same
    function, which takes torch's overloads' argument forms itself)."""

    def __init__(self, name, fn):
        self.__name__ = self.__qualname__ = name
        self._fn = fn

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload):
        if overload.startswith("_"):
            raise AttributeError(overload)
        return self._fn

    def __repr__(self):
        return f"aten.{self.__name__}"


class _AtenNamespace(types.ModuleType):
    def __init__(self):
        super().__init__("ember.ops.aten")

    def __getattr__(self, name):
        import ember
        if not name.startswith("_"):
            fn = getattr(ember, name, None)
            if fn is None:
                from ..nn import functional
                fn = getattr(functional, name, None)
            if callable(fn):
                return _AtenPacket(name, fn)
        raise AttributeError(f"'_OpNamespace' 'aten' object has no attribute '{name}'")


_NAMESPACES = {}


def op_namespace(name):
    """``ember.ops.<name>``: the namespace object, or None when no operator lives there."""
    ns = _NAMESPACES.get(name)
    if ns is not None:
        return ns
    if name == "aten":
        ns = _AtenNamespace()
    elif any(q.startswith(name + "::") for q in _OPS) or _defined_in_registry(name):
        ns = _OpNamespace(name)
    else:
        return None
    _NAMESPACES[name] = ns
    return ns


def _defined_in_registry(namespace):
    from ._registry import _SCHEMAS
    return any(q.startswith(namespace + "::") for q in _SCHEMAS)


def _lookup(qualname, missing_ok=False):
    """The CustomOpDef of ``qualname``; an operator given only a schema with
    ``ember.library.define``/``Library.define`` gets one (without kernels) on first use."""
    op = _OPS.get(qualname)
    if op is None:
        from ._registry import _SCHEMAS
        schema = _SCHEMAS.get(qualname)
        if schema is not None:
            ns, name = qualname.split("::", 1)
            op = CustomOpDef(ns, name, _parse_schema(name, schema[schema.index("("):]), None)
    if op is None and not missing_ok:
        raise ValueError(f"Operator '{qualname}' does not exist: define it with "
                         "ember.library.custom_op (or ember.library.define)")
    return op


def _to_op(op):
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, (OpOverload, OpOverloadPacket)):
        return op._op
    if isinstance(op, str):
        return _lookup(op)
    raise TypeError(f"expected an operator (a CustomOpDef, ember.ops.ns.op[.default] or "
                    f"'ns::op'), got {type(op).__name__}")


# ---- the operator ---------------------------------------------------------------------------

# The kernel and bound arguments of the call entering autograd.Function.apply, read at once by
# its forward (apply's own arguments are the op's inputs only, so ctx.needs_input_grad and the
# gradients line up with the op's arguments).
_pending = threading.local()


def _normalize_device_types(device_types):
    if device_types is None:
        return [None]
    names = [device_types] if isinstance(device_types, str) else list(device_types)
    out = []
    for n in names:
        if not isinstance(n, str) or not n:
            raise ValueError(f"device_types must be device type names, got {n!r}")
        n = n.split(":", 1)[0]
        out.append(n.lower() if n in ("CPU", "CUDA") else n)
    return out


class CustomOpDef:
    """A custom operator (what ``@custom_op`` returns): call it like the function it wraps."""

    def __init__(self, namespace, name, schema, fn):
        self._namespace, self._name = namespace, name
        self._qualname = f"{namespace}::{name}"
        self._schema = schema
        self._signature = schema.signature()
        params = list(self._signature.parameters.values())
        self._param_names = [p.name for p in params]
        # a call passing every parameter positionally binds without inspect's checks
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        self._plain_arity = len(params) if all(p.kind in positional for p in params) else -1
        self._init_fn = fn
        self._backend_fns = {}  # device type (None: every device) -> kernel
        self._disabled = set()
        self._abstract_fn = None
        self._backward_fn = None
        self._setup_context_fn = None
        self._autograd_cls = None
        self._mutated = [a.name for a in schema.arguments if a.is_mutable]
        self._opoverload = OpOverload(self)
        self._packet = OpOverloadPacket(self)
        self.__name__ = name
        self.__doc__ = getattr(fn, "__doc__", None)
        with _OPS_LOCK:
            # A second definition under the same name replaces the first, as torch's does
            # (re-running a notebook cell or re-importing a module).
            _OPS[self._qualname] = self

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    # -- registration --------------------------------------------------------------------------
    def register_kernel(self, device_types, fn=None, /):
        """Use ``fn`` as the kernel on ``device_types`` ("cpu", "cuda", any Ember device type,
        or a sequence); decorator form without ``fn``. It overrides the op's own function there."""
        names = _normalize_device_types(device_types)

        def register(f):
            for n in names:
                self._backend_fns[n] = f
            return f
        return register if fn is None else register(fn)

    def register_fake(self, fn, /):
        """The op's shape function: given the inputs, return outputs of the right shapes,
        dtypes and devices (``x.new_empty(...)``, ``ember.empty_like(x)``) without computing
        values. Checked by ``opcheck``'s ``test_faketensor``."""
        self._abstract_fn = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        """``setup_context(ctx, inputs, output)`` saves what ``backward(ctx, *grads)`` needs;
        backward returns one gradient per input (None for non-Tensor inputs)."""
        if self._schema.is_mutable:
            raise RuntimeError(f"Cannot register autograd formula for non-functional operator "
                               f"{self} with schema {self._schema}. Please create a functional "
                               f"operator and register an autograd formula for that.")
        self._backward_fn, self._setup_context_fn = backward, setup_context
        self._autograd_cls = None

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        raise NotImplementedError(f"{self}.register_torch_dispatch: Ember has no "
                                  "__torch_dispatch__ tensor subclasses")

    def register_vmap(self, func=None, /):
        raise NotImplementedError(f"{self}.register_vmap: Ember has no vmap transform")

    def register_autocast(self, device_type, cast_inputs):
        raise NotImplementedError(f"{self}.register_autocast: cast the inputs in the kernel; "
                                  "Ember's autocast lists are its own ops'")

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type, enabled=True):
        """Within the block, the kernel registered for ``device_type`` is (not) used; a
        disabled one falls back to the op's own function."""
        (device_type,) = _normalize_device_types(device_type)
        was_disabled = device_type in self._disabled
        (self._disabled.discard if enabled else self._disabled.add)(device_type)
        try:
            yield
        finally:
            (self._disabled.add if was_disabled else self._disabled.discard)(device_type)

    # -- calling -------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        pt = sys.modules.get("ember.fx.experimental.proxy_tensor")
        if pt is not None and getattr(pt._state, "tracer", None) is not None:
            # make_fx / jit.trace: one call_function node (the ops inside are not recorded)
            return pt._recorder("call_function", self._opoverload, self._call_eager)(
                *args, **kwargs)
        proxy_mod = sys.modules.get("ember.fx.proxy")
        if proxy_mod is not None:
            proxy = _first(args, kwargs, proxy_mod.Proxy)
            if proxy is not None:
                return proxy.tracer.create_proxy("call_function", self._opoverload, args, kwargs)
        return self._call_eager(*args, **kwargs)

    def _bind(self, args, kwargs):
        plain = self._plain_arity
        if not kwargs and len(args) == plain:  # every parameter given, in order
            return inspect.BoundArguments(self._signature, dict(zip(self._param_names, args)))
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError:
            n = len([a for a in self._schema.arguments if not a.kwarg_only])
            raise RuntimeError(f"{self._qualname}() expected at most {n} argument(s) but "
                               f"received {len(args) + len(kwargs)} argument(s). Declaration: "
                               f"{self._qualname}{str(self._schema)[len(self._schema.name):]}") \
                from None
        bound.apply_defaults()
        return bound

    def _kernel_for(self, device_type):
        for key in (device_type, None):
            fn = self._backend_fns.get(key)
            if fn is not None and key not in self._disabled:
                return fn
        if self._init_fn is not None and (None in self._device_types or
                                          device_type in self._device_types):
            return self._init_fn
        from ._registry import lookup
        fn = lookup(self._qualname, device_type)
        if fn is not None:
            return fn
        have = sorted(k for k in self._backend_fns if k is not None)
        if self._init_fn is not None:
            have += [d for d in self._device_types if d is not None]
        raise NotImplementedError(
            f"Could not run '{self._qualname}' with arguments from the '{device_type}' backend. "
            f"'{self._qualname}' is only available for these backends: {sorted(set(have))}. "
            f"Register a kernel with {self._name}.register_kernel('{device_type}', fn).")

    _device_types = (None,)

    def _call_eager(self, *args, **kwargs):
        from ..autograd import grad_mode
        from .._tensor import Tensor
        bound = self._bind(args, kwargs)
        tensors = [t for t in _flat(bound.arguments.values()) if isinstance(t, Tensor)]
        device_type = tensors[0].device.type if tensors else "cpu"
        kernel = self._kernel_for(device_type)
        requires_grad = grad_mode.is_grad_enabled() and any(t.requires_grad for t in tensors)
        if self._mutated:
            return self._call_mutable(kernel, bound, requires_grad)
        if requires_grad:
            _pending.call = (kernel, bound)
            return self._autograd_function().apply(*bound.args)
        with grad_mode.no_grad():
            out = kernel(*bound.args, **bound.kwargs)
        self._check_output(out, tensors, device_type)
        return out

    def _call_mutable(self, kernel, bound, requires_grad):
        from ..autograd import grad_mode
        from .._tensor import Tensor
        mutated = [t for name in self._mutated for t in _flat([bound.arguments[name]])
                   if isinstance(t, Tensor)]
        if requires_grad:
            for t in mutated:
                if t.requires_grad and t.grad_fn is None:
                    raise RuntimeError("a leaf Variable that requires grad is being used in an "
                                       "in-place operation.")
        with grad_mode.no_grad():
            out = kernel(*bound.args, **bound.kwargs)
        for t in mutated:
            t._bump_version()
        tensors = [t for t in _flat(bound.arguments.values()) if isinstance(t, Tensor)]
        self._check_output(out, tensors, tensors[0].device.type if tensors else "cpu")
        return out

    def _check_output(self, out, inputs, device_type):
        from .._tensor import Tensor
        rets = self._schema.returns
        if not rets:
            if out is not None:
                raise RuntimeError(f"{self._qualname}: the schema returns nothing, but the "
                                   f"kernel for '{device_type}' returned a "
                                   f"{type(out).__name__}")
            return
        outs = out if len(rets) > 1 else (out,)
        if len(rets) > 1 and (not isinstance(out, tuple) or len(out) != len(rets)):
            raise RuntimeError(f"{self._qualname}: the schema returns {len(rets)} values, the "
                               f"kernel for '{device_type}' returned {out!r:.80}")
        for r, o in zip(rets, outs):
            if r == "Tensor" and not isinstance(o, Tensor):
                raise RuntimeError(f"{self._qualname}: the schema returns a Tensor, the kernel "
                                   f"for '{device_type}' returned {type(o).__name__}")
        out_tensors = [o for o in _flat(outs) if isinstance(o, Tensor)]
        for i, o in enumerate(out_tensors):
            others = inputs + out_tensors[:i]
            if any(o is t or _shares_memory(o, t) for t in others):
                raise RuntimeError(
                    f"{self._name} (with implementation in {_where(self._init_fn)}): The output "
                    "of this custom operator (1) must not also be an input to this custom "
                    "operator and (2) may not alias any inputs to this custom operator or other "
                    "returns. The most common way to trigger this error is if we have y = "
                    "custom_op(x) and y and x are the same Tensor. Please instead return a clone "
                    "of the offending output tensor(s) (e.g. return x.clone()) or refactor the "
                    "custom operator to not return y.")

    def _autograd_function(self):
        cls = self._autograd_cls
        if cls is not None:
            return cls
        from ..autograd.function import Function
        op = self
        backward_fn, setup_fn = self._backward_fn, self._setup_context_fn
        overload = f"{self._namespace}.{self._name}.default"

        def forward(*args):
            from .._tensor import Tensor
            kernel, bound = _pending.call
            _pending.call = None
            out = kernel(*bound.args, **bound.kwargs)
            tensors = [t for t in _flat(bound.arguments.values()) if isinstance(t, Tensor)]
            op._check_output(out, tensors, tensors[0].device.type if tensors else "cpu")
            return out

        def setup_context(ctx, inputs, output):
            if setup_fn is not None:
                setup_fn(ctx, inputs, output)

        def backward(ctx, *grads):
            if backward_fn is None:
                raise RuntimeError(f"Trying to backward through {overload} but no autograd "
                                   "formula was registered. Please use register_autograd to "
                                   "add one.")
            result = backward_fn(ctx, *grads)
            if not isinstance(result, tuple):
                result = (result,)
            n = len(op._schema.arguments)
            if len(result) != n:
                raise RuntimeError(f"{op._qualname}: the backward registered with "
                                   f"register_autograd returned {len(result)} gradients, "
                                   f"expected one per input ({n}; None for non-Tensor inputs)")
            return result

        name = f"GeneratedBackwardFor_{self._namespace}_{self._name}_default"
        cls = type(name, (Function,), {"forward": staticmethod(forward),
                                       "setup_context": staticmethod(setup_context),
                                       "backward": staticmethod(backward)})
        self._autograd_cls = cls
        return cls


def _where(fn):
    module = getattr(fn, "__module__", None)
    mod = sys.modules.get(module) if module else None
    return repr(mod) if mod is not None else repr(module)


def _shares_memory(a, b):
    if a._backend is not b._backend:
        return False
    may_share = getattr(a._backend.xp, "may_share_memory", None)
    return bool(may_share(a._data, b._data)) if may_share is not None else False


def _flat(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from v
        else:
            yield v


def _first(args, kwargs, cls):
    for v in _flat(list(args) + list(kwargs.values())):
        if isinstance(v, cls):
            return v
    return None


# ---- the public functions -------------------------------------------------------------------

def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """Make ``fn`` the operator ``name`` ("namespace::opname"), as
    ``torch.library.custom_op``; without ``fn``, a decorator. ``mutates_args`` names the
    arguments ``fn`` writes to (``()`` for none, ``"unknown"`` for any Tensor);
    ``device_types`` limits ``fn`` to those devices; ``schema`` gives the schema instead of
    inferring it from the annotations."""
    def inner(f):
        namespace, sep, opname = name.partition("::")
        if not sep or not namespace or not opname or "." in opname:
            raise ValueError(f"custom_op(name=...): expected a qualified name "
                             f"'namespace::opname' without an overload, got {name!r}")
        if schema is None:
            parsed = _parse_schema(opname, infer_schema(f, mutates_args=mutates_args))
        else:
            parsed = _parse_schema(opname, schema)
        op = CustomOpDef(namespace, opname, parsed, f)
        op._device_types = tuple(_normalize_device_types(device_types))
        op._tags = tuple(tags) if isinstance(tags, (list, tuple)) else (() if tags is None
                                                                        else (tags,))
        return op
    return inner if fn is None else inner(fn)


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """``op``'s kernel for ``device_types``, as ``torch.library.register_kernel``. An operator
    that is not a custom op (``"aten::mm"``) gets the kernel in the operator registry, for
    registry-backed devices (``ember.library.impl``)."""
    if isinstance(op, str) and _lookup(op, missing_ok=True) is None:
        from ._registry import impl
        return impl(op, device_types, func, lib=lib)
    return _to_op(op).register_kernel(device_types, func)


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1, allow_override=True):
    """``op``'s shape function, as ``torch.library.register_fake``; decorator without
    ``func``."""
    target = _to_op(op)

    def register(f):
        if target._abstract_fn is not None and not allow_override:
            raise RuntimeError(f"register_fake({target._qualname}): a fake impl is already "
                               "registered")
        return target.register_fake(f)
    return register if func is None else register(func)


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """``op``'s backward, as ``torch.library.register_autograd``."""
    _to_op(op).register_autograd(backward, setup_context=setup_context)


def get_ctx():
    raise NotImplementedError("ember.library.get_ctx: Ember's fake functions run on real "
                              "tensors, so there is no fake-tensor context (data-dependent "
                              "output sizes are read from the inputs directly)")


# ---- opcheck --------------------------------------------------------------------------------

_DEFAULT_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor",
                  "test_aot_dispatch_dynamic")


def opcheck(op, args, kwargs=None, *, test_utils=_DEFAULT_TESTS, raise_exception=True,
            atol=None, rtol=None):
    """Check a custom op's registrations on example inputs, as ``torch.library.opcheck``;
    returns {test: "SUCCESS" or the exception}. Ember's tests, under torch's names:

    * ``test_schema``: the op writes to no argument outside ``mutates_args`` (inputs are
      compared before and after) and its outputs alias no input;
    * ``test_autograd_registration``: with inputs that require grad, the outputs are connected
      to them (``register_autograd`` exists) and backward runs, giving each input a gradient
      of its shape and dtype;
    * ``test_faketensor``: the ``register_fake`` function exists and, on the same inputs,
      returns outputs of the kernel's shapes, dtypes and devices;
    * ``test_aot_dispatch_dynamic``: ``make_fx`` records the op as one node and the captured
      graph recomputes the eager outputs (and gradients)."""
    target = _to_op(op)
    kwargs = kwargs or {}
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    results = {}
    for name in test_utils:
        check = _CHECKS.get(name)
        if check is None:
            raise ValueError(f"opcheck: unknown test {name!r}; choose from {list(_CHECKS)}")
        try:
            check(target, args, kwargs, atol, rtol)
            results[name] = "SUCCESS"
        except Exception as e:  # noqa: BLE001 - reported per test
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {e} (scroll up for "
                                   "stack trace)") from e
            results[name] = e
    return results


class OpCheckError(Exception):
    pass


def _clone_args(args, kwargs):
    from .._tensor import Tensor

    def c(v):
        if isinstance(v, Tensor):
            return v.detach().clone().requires_grad_(v.requires_grad)
        if isinstance(v, (list, tuple)):
            return type(v)(c(x) for x in v)
        return v
    return c(tuple(args)), {k: c(v) for k, v in kwargs.items()}


def _same(a, b):
    import ember
    a, b = a.detach(), b.detach()
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(ember.all((a == b) | (a.isnan() & b.isnan())))
    return bool(ember.equal(a, b))


def _check_schema(op, args, kwargs, atol, rtol):
    from .._tensor import Tensor
    from ..autograd import grad_mode
    a2, k2 = _clone_args(args, kwargs)
    before = _clone_args(a2, k2)
    with grad_mode.no_grad():
        op(*a2, **k2)
    bound_after = op._bind(a2, k2).arguments
    bound_before = op._bind(*before).arguments
    for name, value in bound_after.items():
        old = bound_before[name]
        pairs = zip(value, old) if isinstance(value, (list, tuple)) else [(value, old)]
        for new_t, old_t in pairs:
            if isinstance(new_t, Tensor) and not _same(new_t, old_t) and name not in op._mutated:
                raise RuntimeError(f"Argument {name} is not defined as mutable but was mutated")


def _outputs(out):
    from .._tensor import Tensor
    return [o for o in _flat(out if isinstance(out, (tuple, list)) else (out,))
            if isinstance(o, Tensor)]


def _check_autograd(op, args, kwargs, atol, rtol):
    import ember
    a2, k2 = _clone_args(args, kwargs)
    inputs = [t for t in _flat(list(a2) + list(k2.values()))
              if isinstance(t, ember.Tensor) and t.requires_grad]
    if not inputs or op._schema.is_mutable:
        return
    outs = [o for o in _outputs(op(*a2, **k2)) if o.dtype.is_floating_point]
    if not any(o.requires_grad for o in outs):
        raise RuntimeError(f"{op._qualname} was called with inputs that require grad but its "
                           "outputs do not: register a backward with register_autograd")
    diff = [o for o in outs if o.requires_grad]
    g = ember.Generator().manual_seed(0)
    cotangents = [ember.randn(o.shape, dtype=o.dtype, device=o.device, generator=g)
                  for o in diff]
    grads = ember.autograd.grad(diff, inputs, cotangents, allow_unused=True)
    for t, gr in zip(inputs, grads):
        if gr is not None and (gr.shape != t.shape or gr.dtype != t.dtype):
            raise RuntimeError(f"{op._qualname}: backward gave a gradient of shape "
                               f"{tuple(gr.shape)} and dtype {gr.dtype} for an input of shape "
                               f"{tuple(t.shape)} and dtype {t.dtype}")


def _check_fake(op, args, kwargs, atol, rtol):
    from ..autograd import grad_mode
    if op._abstract_fn is None:
        raise RuntimeError(f"There was no fake impl registered for {op}. This is necessary for "
                           f"torch.compile/export/fx tracing to work. Please use "
                           f"`{op._name}.register_fake` to add an fake impl.")
    a2, k2 = _clone_args(args, kwargs)
    with grad_mode.no_grad():
        real = _outputs(op(*a2, **k2))
        bound = op._bind(*_clone_args(args, kwargs))
        fake = _outputs(op._abstract_fn(*bound.args, **bound.kwargs))
    if len(real) != len(fake):
        raise RuntimeError(f"{op._qualname}: the fake impl returned {len(fake)} tensors, the "
                           f"kernel {len(real)}")
    for i, (r, f) in enumerate(zip(real, fake)):
        for what in ("shape", "dtype", "device"):
            if getattr(r, what) != getattr(f, what):
                raise RuntimeError(f"{op._qualname}: output {i}'s {what} mismatch: the fake "
                                   f"impl gives {getattr(f, what)}, the kernel "
                                   f"{getattr(r, what)}")


def _check_trace(op, args, kwargs, atol, rtol):
    import ember
    from ..fx.experimental.proxy_tensor import make_fx
    a2, k2 = _clone_args(args, kwargs)

    def call(*xs):
        return op(*xs, **k2)
    gm = make_fx(call)(*_clone_args(a2, {})[0])
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    if op._opoverload not in targets:
        raise RuntimeError(f"make_fx did not record {op._opoverload} as a node: {targets}")
    if op._schema.is_mutable:
        return
    eager = _outputs(call(*a2))
    traced = _outputs(gm(*_clone_args(a2, {})[0]))
    for e, t in zip(eager, traced):
        ember.testing.assert_close(t.detach(), e.detach(), atol=atol, rtol=rtol)


_CHECKS = {"test_schema": _check_schema, "test_autograd_registration": _check_autograd,
           "test_faketensor": _check_fake, "test_aot_dispatch_dynamic": _check_trace}
