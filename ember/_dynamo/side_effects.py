"""What the recording run watches besides tensor ops: Python effects a replay would skip, and
the Python values a replay silently depends on.

A compiled function is replayed from its graphs without running its Python again, so during the
one recording run this watcher (``sys.setprofile`` for calls, ``sys.settrace`` with opcode
events in the user's frames) looks for:

* effects a replay would not repeat — a C function such as ``print``, ``time.time`` or
  ``random.random``; a mutating method (``append``, ``update``…) or a store (``x.a = v``,
  ``x[k] = v``, ``global``/``nonlocal`` assignment, ``next(it)``) on an object that existed before
  the call; a call into the standard library outside a short list of pure modules; Ember's own
  state-changing calls (``manual_seed``, ``backward``, an optimizer's ``step``…). The first one
  found makes the function fall back to eager (``fullgraph=True`` raises ``Unsupported``).
  "Existed before the call" is decided with ``gc.freeze()`` when recording starts (what exists
  then moves to gc's permanent generation, what the call makes is in the young ones): an object
  created by the call itself (a local list filled with ``append``) may be changed freely.
  A store whose target the watcher cannot identify from the bytecode counts as an effect: an
  eager fallback is slower, never wrong.
* values read from outside — a global, or an attribute of a pre-existing object read in the
  user's code (``self.scale``), and the modules called (their ``training`` flag, their plain
  attributes, parameters, buffers, submodules and hooks, read by Ember's layers): each becomes a
  guard (``guards.py``), so that changing one makes the next call record again instead of
  replaying a graph that baked the old value in.

Inside a recorded op nothing is watched: an op is replayed whole.
"""
import builtins
import dis
import gc
import os
import sys
import sysconfig
import traceback
import types

from ..fx.experimental import proxy_tensor as _pt

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIB_DIRS = tuple({os.path.abspath(sysconfig.get_paths()[k]) + os.sep
                   for k in ("stdlib", "platstdlib")})
_USER, _EMBER, _LIB = 0, 1, 2

# Standard-library modules whose Python functions are pure (or only make new objects).
_PURE_LIB_MODULES = {"functools", "operator", "math", "cmath", "collections", "typing", "abc",
                     "enum", "dataclasses", "contextlib", "numbers", "copy", "types", "itertools",
                     "string", "re", "inspect", "warnings", "weakref", "_weakrefset",
                     "fractions", "decimal", "keyword", "reprlib", "textwrap", "posixpath",
                     "genericpath", "ntpath", "_collections_abc", "threading"}
_PURE_BUILTINS = {"len", "isinstance", "issubclass", "hasattr", "getattr", "iter", "min", "max",
                  "abs", "sum", "any", "all", "sorted", "round", "divmod", "pow", "callable",
                  "hash", "id", "repr", "format", "ord", "chr", "hex", "oct", "bin", "ascii",
                  "vars", "dir", "locals", "globals", "__build_class__", "__import__"}
_PURE_C_MODULES = {"math", "cmath", "_operator", "operator", "itertools", "_functools",
                   "_collections", "_abc", "_string", "_sre", "_weakref", "_warnings"}
_IMPURE_OPERATOR = {"setitem", "delitem", "iadd", "iand", "iconcat", "ifloordiv", "ilshift",
                    "imod", "imul", "imatmul", "ior", "ipow", "irshift", "isub", "itruediv",
                    "ixor", "__setitem__", "__delitem__"}
_MUTATING_METHODS = {"append", "extend", "insert", "pop", "remove", "clear", "update",
                     "setdefault", "popitem", "add", "discard", "sort", "reverse",
                     "difference_update", "intersection_update", "symmetric_difference_update",
                     "__setitem__", "__delitem__", "__iadd__", "__imul__", "appendleft",
                     "extendleft", "popleft", "rotate", "move_to_end", "send", "throw", "close",
                     "write", "writelines", "flush", "seek", "truncate"}
_IMMUTABLE = (str, bytes, int, float, complex, bool, tuple, frozenset, range, slice, type(None))
_SCALARS = (int, float, bool, str, bytes, complex, type(None))
_UNKNOWN = object()


def _kind(code, _cache={}):
    k = _cache.get(code)
    if k is None:
        f = code.co_filename
        absf = os.path.abspath(f) if not f.startswith("<") else f
        if absf.startswith(_EMBER_DIR) or absf.startswith(("<eval_with_key>", "<ember.")):
            k = _EMBER   # Ember's files, and the code it generates (GraphModule, guards)
        elif absf.startswith("<frozen ") or absf.startswith("namedtuple_"):
            k = _LIB
        elif absf.startswith(_LIB_DIRS) and "site-packages" not in absf:
            k = _LIB
        else:
            k = _USER
        _cache[code] = k
    return k


def _instructions(code, _cache={}):
    entry = _cache.get(code)
    if entry is None:
        instrs = list(dis.get_instructions(code))
        entry = _cache[code] = (instrs, {ins.offset: i for i, ins in enumerate(instrs)})
    return entry


def _pops_pushes(ins):
    """How many values ``ins`` pops and pushes, for the instructions an operand is commonly
    built from; None for anything else (the walk then gives up)."""
    op, arg = ins.opname, ins.arg
    if op in _SIMPLE_LOADS or op == "PUSH_NULL":
        return 0, 1
    if op == "LOAD_GLOBAL":
        return 0, 1 + (arg & 1 if sys.version_info >= (3, 11) else 0)
    if op == "LOAD_ATTR":   # 3.12 folds LOAD_METHOD in, flagged by the low bit
        return 1, 1 + (arg & 1 if sys.version_info >= (3, 12) else 0)
    if op == "LOAD_METHOD":
        return 1, 2
    if op == "BINARY_SLICE":
        return 3, 1
    if op.startswith(("BINARY_", "INPLACE_")) or op in ("COMPARE_OP", "IS_OP", "CONTAINS_OP"):
        return 2, 1
    if op in ("CALL_FUNCTION", "CALL_METHOD"):   # 3.10
        return arg + (2 if op == "CALL_METHOD" else 1), 1
    if op.startswith("UNARY_") or op == "GET_ITER":
        return 1, 1
    if op in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET", "BUILD_SLICE", "BUILD_STRING"):
        return arg, 1
    if op == "BUILD_MAP":
        return 2 * arg, 1
    if op == "BUILD_CONST_KEY_MAP":
        return arg + 1, 1
    if op in ("PRECALL", "KW_NAMES", "NOP", "RESUME", "CACHE", "EXTENDED_ARG"):
        return 0, 0
    if op == "CALL":
        return arg + 2, 1
    if op == "FORMAT_VALUE":
        return (2 if (arg & 4) else 1), 1
    return None


_SIMPLE_LOADS = ("LOAD_FAST", "LOAD_CONST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_NAME",
                 "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR")
_CALLS = ("CALL", "CALL_FUNCTION", "CALL_METHOD")


def _producer(instrs, idx, depth):
    """The index of the instruction that pushed the value ``depth`` slots below the top of the
    stack just before ``instrs[idx]`` runs, if straight-line code shows it; else None."""
    i = idx - 1
    while i >= 0:
        ins = instrs[i]
        pp = _pops_pushes(ins)
        if pp is None:
            return None
        pops, pushes = pp
        if depth < pushes:
            # Of two values pushed (a NULL or method slot and the value), the top one.
            return i if pushes == 1 or (ins.opname in ("LOAD_GLOBAL", "LOAD_ATTR")
                                        and depth == 0) else None
        if ins.is_jump_target:
            return None
        depth = depth - pushes + pops
        i -= 1
    return None


def _value(frame, instrs, j):
    """The value instruction ``instrs[j]`` pushed, read back from the frame; _UNKNOWN if it
    cannot be."""
    ins = instrs[j]
    op, name = ins.opname, ins.argval
    if op in ("LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_FAST_CHECK"):
        return frame.f_locals.get(name, _UNKNOWN)
    if op in ("LOAD_GLOBAL", "LOAD_NAME"):
        if op == "LOAD_NAME" and name in frame.f_locals:
            return frame.f_locals[name]
        g = frame.f_globals
        return g[name] if name in g else vars(builtins).get(name, _UNKNOWN)
    if op == "LOAD_CONST":
        return name
    if op == "LOAD_ATTR":
        k = _producer(instrs, j, 0)
        base = _UNKNOWN if k is None else _value(frame, instrs, k)
        if base is _UNKNOWN:
            return _UNKNOWN
        try:
            return getattr(base, name)
        except Exception:
            return _UNKNOWN
    if op == "GET_ITER":
        k = _producer(instrs, j, 0)
        base = _UNKNOWN if k is None else _value(frame, instrs, k)
        if base is _UNKNOWN:
            return _UNKNOWN
        return base if hasattr(base, "__next__") else None  # iter() of a container is new
    return _UNKNOWN


def user_stack(frame=None):
    """The user's frames (no Ember frames) up to ``frame`` (the caller's by default), outermost
    first, as ``traceback.FrameSummary`` objects."""
    f = frame or sys._getframe(1)
    frames = []
    while f is not None:
        if f.f_code.co_name == "capture" and f.f_code.co_filename.endswith("convert_frame.py"):
            break   # the recording's entry: frames above it are the caller's, not the function's
        if _kind(f.f_code) == _USER:
            frames.append(traceback.FrameSummary(f.f_code.co_filename, f.f_lineno,
                                                 f.f_code.co_name, lookup_line=True))
        f = f.f_back
    frames.reverse()
    return frames


def where(stack):
    """``file:line`` of the innermost user frame of ``stack``, for messages."""
    if not stack:
        return "an unknown location"
    f = stack[-1]
    line = f"\n    {f.line}" if f.line else ""
    return f"{f.filename}:{f.lineno} in {f.name}{line}"


def _denied_codes():
    """Ember's Python functions that change state a replay would not: calling one is an
    effect."""
    from .. import _random
    import ember
    fns = [_random.manual_seed, _random.seed, _random.set_rng_state, _random.Generator.manual_seed,
           _random.Generator.seed, _random.Generator.set_state, _random.Generator.set_offset,
           ember.Tensor.backward, ember.autograd.backward, ember.autograd.grad,
           ember.set_default_dtype, ember.set_printoptions]
    for name in ("set_default_device", "use_deterministic_algorithms", "set_num_threads",
                 "set_float32_matmul_precision", "set_default_tensor_type"):
        if hasattr(ember, name):
            fns.append(getattr(ember, name))
    codes = {}
    for fn in fns:
        code = getattr(fn, "__code__", None)
        if code is not None:
            codes[code] = getattr(fn, "__qualname__", fn.__name__)
    return codes


class Watcher:
    """Installed for one recording run (``with Watcher(...)``)."""

    def __init__(self, on_effect):
        self.on_effect = on_effect    # called with (reason, user_stack) for the first effect
        self.effect = None
        self.dict_guards = {}          # (id(dict), key) -> (dict, key): values read in guards
        self.modules = {}              # id -> Module called
        from ..nn import Module
        self._module_call_codes = {Module.__call__.__code__, Module._call_impl.__code__}
        self._denied = _denied_codes()
        self._optim_dir = os.path.join(_EMBER_DIR, "optim") + os.sep

    # ---- install -----------------------------------------------------------------------------
    def __enter__(self):
        # Every object alive now goes to gc's permanent generation; what the call creates is
        # in generations 0-2, so "new" is a membership test there (refreshed on a miss).
        gc.freeze()
        self._fresh = set()
        self._old = (sys.getprofile(), sys.gettrace())
        sys.setprofile(self._profile)
        sys.settrace(self._trace)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self._old[0])
        sys.settrace(self._old[1])
        gc.unfreeze()
        return False

    def _refresh(self):
        # Cumulative: an object made earlier in the call stays known when a re-freeze (below)
        # has moved it to the permanent generation. An id reused by a later object is fresh too.
        self._fresh.update(id(o) for g in (0, 1, 2) for o in gc.get_objects(generation=g))

    def is_new(self, obj):
        """Whether ``obj`` was created by the call being recorded."""
        i = id(obj)
        if i in self._fresh:
            return True
        self._refresh()
        if gc.is_tracked(obj) or not isinstance(obj, dict):
            return i in self._fresh
        # A dict of atomic values is not tracked by gc: it is new when everything that refers
        # to it is. get_referrers does not search the permanent generation: thaw it meanwhile.
        gc.unfreeze()
        try:
            referrers = gc.get_referrers(obj)
        finally:
            gc.freeze()
        return all(not gc.is_tracked(r) or id(r) in self._fresh for r in referrers)

    def flag(self, reason, frame):
        if self.effect is None:
            self.effect = (reason, user_stack(frame))
            self.on_effect(*self.effect)

    # ---- events ------------------------------------------------------------------------------
    def _profile(self, frame, event, arg):
        if _pt._state.depth or self.effect is not None:
            return
        if event == "call":
            code = frame.f_code
            if code in self._module_call_codes:
                m = frame.f_locals.get("self")
                if m is not None:
                    self.modules[id(m)] = m
                return
            denied = self._denied.get(code)
            if denied is None and code.co_name in ("step", "zero_grad") and \
                    code.co_filename.startswith(self._optim_dir):
                denied = f"Optimizer.{code.co_name}"
            if denied is not None:
                self.flag(f"call to {denied}(), which changes state a replay would not "
                          "change", frame)
                return
            caller = frame.f_back
            if _kind(code) == _LIB and caller is not None and _kind(caller.f_code) == _USER:
                mod = frame.f_globals.get("__name__", "")
                if mod.split(".")[0] not in _PURE_LIB_MODULES:
                    self.flag(f"call to {mod}.{code.co_name}() (standard library), whose "
                              "effects Ember cannot replay", caller)
        elif event == "c_call" and _kind(frame.f_code) == _USER:
            self._c_call(frame, arg)

    def _c_call(self, frame, fn):
        name = getattr(fn, "__name__", "?")
        owner = getattr(fn, "__self__", None)
        if owner is None or isinstance(owner, types.ModuleType):
            mod = getattr(owner, "__name__", None) or getattr(fn, "__module__", None) or ""
            if mod == "builtins":
                if name in _PURE_BUILTINS:
                    return
                if name in ("next", "setattr", "delattr"):
                    return self._call_target(frame, name)
            elif mod in _PURE_C_MODULES and name not in _IMPURE_OPERATOR:
                return
            self.flag(f"call to {mod + '.' if mod else ''}{name}(), whose effects Ember cannot "
                      "replay", frame)
            return
        if isinstance(owner, _IMMUTABLE):
            return
        if isinstance(owner, type):
            if owner.__module__ == "builtins":
                return
            self.flag(f"call to {owner.__name__}.{name}()", frame)
            return
        if name not in _MUTATING_METHODS and type(owner).__module__ in ("builtins",
                                                                       "collections"):
            return
        if self.is_new(owner) and type(owner).__module__ in ("builtins", "collections"):
            return
        self.flag(f"call to {type(owner).__name__}.{name}() on an object that exists outside "
                  "the compiled function", frame)

    def _call_target(self, frame, name):
        instrs, index = _instructions(frame.f_code)
        i = index.get(frame.f_lasti)
        if i is not None and instrs[i].opname in _CALLS:
            j = _producer(instrs, i, instrs[i].arg - 1)
            obj = _UNKNOWN if j is None else _value(frame, instrs, j)
            if obj is not _UNKNOWN and self.is_new(obj):
                return
        self.flag(f"{name}() on an object that exists outside the compiled function", frame)

    def _trace(self, frame, event, arg):
        if event == "call" and _kind(frame.f_code) == _USER:
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
            return self._opcode
        return None

    def _opcode(self, frame, event, arg):
        if event != "opcode" or _pt._state.depth or self.effect is not None:
            return self._opcode
        instrs, index = _instructions(frame.f_code)
        i = index.get(frame.f_lasti)
        if i is None:
            return self._opcode
        ins = instrs[i]
        op = ins.opname
        if op in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            self.flag(f"assignment to the global {ins.argval!r}", frame)
        elif op in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in frame.f_code.co_freevars:
            self.flag(f"assignment to the nonlocal {ins.argval!r}", frame)
        elif op in ("STORE_ATTR", "DELETE_ATTR"):
            self._store(frame, instrs, i, 0, f"attribute {ins.argval!r}")
        elif op in ("STORE_SUBSCR", "DELETE_SUBSCR"):
            self._store(frame, instrs, i, 1, "item")
        elif op == "STORE_SLICE":   # 3.12: container[start:stop] = value
            self._store(frame, instrs, i, 2, "slice")
        elif op == "FOR_ITER":
            j = _producer(instrs, i, 0)
            it = None if j is None else _value(frame, instrs, j)
            if it is not None and it is not _UNKNOWN and not self.is_new(it):
                self.flag("iteration over an iterator that exists outside the compiled "
                          "function", frame)
        elif op in ("LOAD_GLOBAL", "LOAD_NAME"):
            g = frame.f_globals
            d = g if ins.argval in g else vars(builtins)
            self.dict_guards[(id(d), ins.argval)] = (d, ins.argval)
        elif op == "LOAD_ATTR":
            j = _producer(instrs, i, 0)
            obj = _UNKNOWN if j is None else _value(frame, instrs, j)
            if obj is not _UNKNOWN and not self.is_new(obj):
                self._attr_guard(obj, ins.argval)
        return self._opcode

    def _store(self, frame, instrs, i, depth, what):
        from .._tensor import Tensor
        from ..nn import Module
        j = _producer(instrs, i, depth)
        obj = _UNKNOWN if j is None else _value(frame, instrs, j)
        if obj is _UNKNOWN:
            self.flag(f"store to an {what} of an object Ember cannot identify (it may exist "
                      "outside the compiled function)", frame)
        elif isinstance(obj, Tensor):
            if depth == 0:
                self.flag(f"store to the tensor {what}, which a replay would not repeat", frame)
            # x[k] = v on a tensor is recorded as an op
        elif isinstance(obj, Module) or not self.is_new(obj):
            self.flag(f"store to an {what} of a {type(obj).__name__} that exists outside the "
                      "compiled function", frame)

    def _attr_guard(self, obj, name):
        from ..nn import Module
        if isinstance(obj, Module):
            for d in (obj._parameters, obj._buffers, obj._modules):
                if name in d:
                    self.dict_guards[(id(d), name)] = (d, name)
                    return
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict) and name in d:
            self.dict_guards[(id(d), name)] = (d, name)
