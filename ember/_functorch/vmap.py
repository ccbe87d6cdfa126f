"""``vmap``: run a function written for one example on a batch of them, as batched array ops.

How it works. Inside ``vmap`` each mapped input is a ``BatchedTensor``: a ``Tensor`` whose
*logical* shape (what ``f`` sees: ``shape``, ``dim()``, ``size()``) is the example's, holding a
plain tensor ``_value`` whose dimension 0 is the batch. ``vmap`` swaps every Ember op for a
dispatching wrapper (``fx.experimental.proxy_tensor._patch_everything``, the op swap make_fx
and the profiler use, undone on exit, so eager code outside vmap runs the unwrapped ops). A
wrapper that sees no BatchedTensor calls the op itself; otherwise it runs the op's *batching
rule* (``batch_rules_<family>.py``), which rewrites the call as one op on the batched values
(a reduction's ``dim`` shifted by one, ``mm`` as a broadcast ``matmul``, a convolution with the
batch folded into N or into groups) and wraps the result. Ops without a rule run once per
example and are stacked (a UserWarning, once per op, names them).

Levels. Each ``vmap`` call has a level, one more than the enclosing one; a BatchedTensor of an
inner level may hold one of an outer level, so nested vmaps peel one level per dispatch: a rule
calls ops on its level's values, which dispatch again for the outer levels.

Autograd. The rules call Ember ops on the batched values, so the graph autograd records is the
graph of batched arrays, and its backward runs batched too. ``grad`` inside ``vmap``
(``eager_transforms.py``) makes every input batched at every active level before it becomes a
leaf, so the gradient it reads back holds one gradient per example (per-sample gradients).
"""
import functools
import threading
import warnings

from .._tensor import Tensor, Size

__all__ = ["vmap", "BatchedTensor"]

_RANDOMNESS = ("error", "different", "same")


class _Level:
    __slots__ = ("level", "size", "randomness")

    def __init__(self, level, size, randomness):
        self.level, self.size, self.randomness = level, size, randomness


_state = threading.local()


def _levels():
    levels = getattr(_state, "levels", None)
    if levels is None:
        levels = _state.levels = []
    return levels


def _find_level(level):
    for lv in _levels():
        if lv.level == level:
            return lv
    raise RuntimeError(f"vmap: a batched tensor of level {level} escaped its vmap")


# ---- the batched tensor ----------------------------------------------------------------------

class BatchedTensor(Tensor):
    """A tensor as ``f`` sees it inside ``vmap``: ``_value`` has the batch of ``_level`` in
    front; every shape query answers the logical (per-example) shape."""

    __slots__ = ("_value", "_level")

    # Ops reach a batched tensor's data only through a batching rule: an Ember internal reading
    # ``_data`` here would otherwise compute with the batch dimension as an example dimension.
    @property
    def _data(self):
        raise RuntimeError("vmap: an Ember internal read the array of a batched tensor directly; "
                           "this code path has no batching rule")

    @property
    def shape(self):
        return Size(tuple(self._value.shape)[1:])

    def size(self, dim=None):
        shape = tuple(self._value.shape)[1:]
        if dim is None:
            return Size(shape)
        from .._tensor import wrap_dim_no_scalar
        return shape[wrap_dim_no_scalar(dim, len(shape))]

    @property
    def ndim(self):
        return self._value.dim() - 1

    def dim(self):
        return self._value.dim() - 1

    ndimension = dim

    def numel(self):
        n = 1
        for s in tuple(self._value.shape)[1:]:
            n *= s
        return n

    nelement = numel

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._value.shape[1]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def is_complex(self):
        return self._dtype.is_complex

    def element_size(self):
        return self._dtype.itemsize

    def is_contiguous(self, memory_format=None):
        return True

    def is_signed(self):
        return self._dtype.is_signed

    def get_device(self):
        return self._value.get_device()

    def is_same_size(self, other):
        return tuple(self.shape) == tuple(other.shape)

    @property
    def requires_grad(self):
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._value.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        self._value.requires_grad_(requires_grad)
        return self

    @property
    def is_leaf(self):
        return self._value.is_leaf

    @property
    def grad(self):
        return None

    @grad.setter
    def grad(self, value):
        raise RuntimeError("vmap: setting .grad of a batched tensor is not supported; use "
                           "torch.func.grad inside vmap for per-sample gradients")

    @property
    def T(self):
        return self.permute(*reversed(range(self.dim())))

    @property
    def mT(self):
        return self.transpose(-2, -1)

    @property
    def H(self):
        return self.T.conj()

    @property
    def mH(self):
        return self.mT.conj()

    @property
    def real(self):
        return _make(self._value.real, self._level)

    @property
    def imag(self):
        return _make(self._value.imag, self._level)

    @property
    def data(self):
        return _make(self._value.data, self._level)

    # Data-dependent Python: torch's messages, since the value differs per example.
    def item(self):
        raise RuntimeError(
            "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
            "calling .item() on a Tensor, please try to rewrite what you're doing with other "
            "operations. If error is occurring somewhere inside PyTorch internals, please file "
            "a bug report.")

    def _data_dependent(self, *args, **kwargs):
        raise RuntimeError(
            "vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
            "flow. We don't support that yet, please file an issue at "
            "https://github.com/pytorch/pytorch/issues .")

    __bool__ = __float__ = __int__ = __complex__ = __index__ = _data_dependent
    tolist = numpy = __array__ = _data_dependent

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def backward(self, *args, **kwargs):
        raise RuntimeError("vmap: backward() on a batched tensor is not supported inside vmap; "
                           "use torch.func.grad or torch.func.vjp inside the vmapped function")

    def __hash__(self):
        return id(self)

    def __format__(self, spec):
        return object.__format__(self, spec)

    def __repr__(self, *, tensor_contents=None):
        return (f"BatchedTensor(lvl={self._level}, bdim=0, value=\n"
                f"{self._value!r}\n)")

    __str__ = __repr__

    def __deepcopy__(self, memo):
        return _make(self._value.clone(), self._level)


def _make(value, level):
    t = object.__new__(BatchedTensor)
    t._value = value
    t._level = level
    t._dtype = value._dtype
    t._device = value._device
    t._backend = value._backend
    t._requires_grad = False
    t.grad_fn = None
    return t


def batched_level(x):
    return x._level if type(x) is BatchedTensor else None


def unwrap(x, level):
    """``(value, True)`` for a tensor batched at ``level`` (batch in front), else ``(x, False)``."""
    if type(x) is BatchedTensor and x._level == level:
        return x._value, True
    return x, False


def wrap_outputs(out, level):
    if isinstance(out, Tensor):
        return _make(out, level)
    if isinstance(out, (tuple, list)):
        items = [wrap_outputs(o, level) for o in out]
        if isinstance(out, list):
            return items
        if hasattr(out, "_fields"):  # torch.return_types: the same record, batched
            return type(out)(items)
        return tuple(items)
    return out


def _max_level(args, kwargs):
    best = None
    for a in args:
        if type(a) is BatchedTensor:
            if best is None or a._level > best:
                best = a._level
        elif type(a) in (list, tuple):
            for b in a:
                if type(b) is BatchedTensor and (best is None or b._level > best):
                    best = b._level
    if kwargs:
        for a in kwargs.values():
            if type(a) is BatchedTensor and (best is None or a._level > best):
                best = a._level
    return best


# ---- dispatch --------------------------------------------------------------------------------

# name -> rule(op, level, args, kwargs, name); filled by the batch_rules_<family> modules.
RULES = {}
# The ops that draw random numbers, by name: randomness='error' refuses them inside vmap.
RANDOM_OPS = set()
_warned = set()


def batch_rule(*names):
    def register(rule):
        for n in names:
            RULES[n] = rule
        return rule
    return register


def _load_rules():
    from . import (batch_rules_elementwise, batch_rules_reduction, batch_rules_shape,  # noqa
                   batch_rules_indexing, batch_rules_matmul, batch_rules_conv,
                   batch_rules_normalization, batch_rules_loss, batch_rules_random,
                   batch_rules_pooling, batch_rules_recurrent)


class _Op:
    """An op as a rule calls it: dispatching again, for the outer levels its values carry."""
    __slots__ = ("name", "fn")

    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def __call__(self, *args, **kwargs):
        return dispatch(self.name, self.fn, args, kwargs)


def _op_name(kind, target, fn, reorder):
    if kind == "call_method":
        return target
    from ..fx.experimental.proxy_tensor import _OPERATOR_OF, _REFLECTED_OF, _INPLACE_OF
    tables = (_REFLECTED_OF,) if reorder is not None else (_INPLACE_OF, _OPERATOR_OF)
    for table in tables:
        for dunder, operator_fn in table.items():
            if operator_fn is target:
                return dunder
    return getattr(fn, "__name__", str(fn))


def dispatch(name, fn, args, kwargs):
    """Call ``fn`` (an unwrapped Ember op) on ``args``, batching through the rule of the
    innermost level among its batched arguments."""
    level = _max_level(args, kwargs)
    if level is None:
        # A random op the vmapped function itself calls on unbatched arguments (``rand(3)``)
        # follows ``randomness``; one that a rule runs on the batched values is plain.
        if name in RANDOM_OPS and _levels() and not getattr(_state, "in_rule", 0):
            from .batch_rules_random import unbatched_random
            return unbatched_random(_Op(name, fn), args, kwargs, name)
        return fn(*args, **kwargs)
    op = _Op(name, fn)
    rule = RULES.get(name)
    if rule is None:
        module = getattr(fn, "__module__", "") or ""
        if module.startswith("ember.nn") or module == "ember._functional_exports":
            # nn.functional composes ops (checks, then the op): its ops get batched one by one.
            return fn(*args, **kwargs)
        rule = fallback
    _state.in_rule = getattr(_state, "in_rule", 0) + 1
    try:
        return rule(op, level, args, kwargs, name)
    finally:
        _state.in_rule -= 1


def fallback(op, level, args, kwargs, name):
    """Run ``op`` once per example and stack: for ops without a batching rule."""
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"There is a performance drop because we have not yet implemented the "
                      f"batching rule for {name}. Please file us an issue on GitHub so that we "
                      f"can prioritize its implementation.", UserWarning, stacklevel=3)
    size = _find_level(level).size
    in_place = name.endswith("_") and not name.startswith("__") or name.startswith("__i")
    if in_place and not (type(args[0]) is BatchedTensor and args[0]._level == level):
        raise inplace_error()

    def take(a, i):
        if type(a) is BatchedTensor and a._level == level:
            return a._value[i]
        if type(a) in (list, tuple):
            return type(a)(take(b, i) for b in a)
        return a
    results = [op(*[take(a, i) for a in args], **{k: take(v, i) for k, v in kwargs.items()})
               for i in range(size)]
    if in_place:
        return args[0]  # the examples were written in place, one by one
    return _stack_results(results, level, name)


def _stack_results(results, level, name):
    from ..ops.shape import stack
    first = results[0]
    if isinstance(first, Tensor):
        if any(tuple(r.shape) != tuple(first.shape) for r in results):
            raise RuntimeError("vmap: We do not support batching operators that can output "
                               f"dynamic shape. Attempted to vmap over {name}. Please file an "
                               "issue at https://github.com/pytorch/pytorch/issues if you need "
                               "this feature.")
        return _make(stack(results), level)
    if isinstance(first, (tuple, list)):
        items = [_stack_results([r[j] for r in results], level, name) for j in range(len(first))]
        if hasattr(first, "_fields"):
            return type(first)(items)
        return type(first)(items) if isinstance(first, tuple) else items
    if all(r == first for r in results):
        return first
    raise RuntimeError(f"vmap: {name} returned a Python value that differs between the examples "
                       "of the batch; vmap cannot batch it")


def inplace_error():
    return RuntimeError(
        "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a "
        "Tensor `other` in extra_args that has more elements than `self`. This happened due to "
        "`other` being vmapped over but `self` not being vmapped over in a vmap. Please try to "
        "use out-of-place operators instead of inplace arithmetic. If said operator is being "
        "called inside the PyTorch framework, please file a bug report instead.")


def _batching_wrap(kind, target, fn, reorder):
    """The wrap factory vmap gives the op swap (``_patch_everything``, which makes each
    wrapper once and reuses it): a wrapper that dispatches to the op's batching rule."""
    name = _op_name(kind, target, fn, reorder)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return dispatch(name, fn, args, kwargs)
    return wrapper


class _OpSwap:
    """Holds the op swap while any vmap is running (entered once for nested vmaps)."""
    depth = 0
    patcher = None
    lock = threading.RLock()

    @classmethod
    def enter(cls, func):
        with cls.lock:
            if cls.depth == 0:
                from ..fx._symbolic_trace import _Patcher
                _load_rules()
                patcher = _Patcher().__enter__()
                try:
                    fns = [f for f in (func, getattr(func, "__wrapped__", None)) if f is not None]
                    if hasattr(func, "modules") and hasattr(func, "forward"):
                        # A Module: its classes' own modules may bind ops by name too.
                        fns += [type(m).forward for m in func.modules()]
                    from ..fx.experimental.proxy_tensor import _patch_everything
                    _patch_everything(
                        patcher, [g for g in (getattr(f, "__globals__", None) for f in fns)
                                  if g is not None],
                        [getattr(f, "__closure__", None) for f in fns], wrap=_batching_wrap)
                except BaseException:
                    patcher.__exit__(None, None, None)
                    raise
                cls.patcher = patcher
            cls.depth += 1

    @classmethod
    def exit(cls):
        with cls.lock:
            cls.depth -= 1
            if cls.depth == 0:
                patcher, cls.patcher = cls.patcher, None
                patcher.__exit__(None, None, None)


# ---- the user-facing transform ---------------------------------------------------------------

def _fname(func):
    return getattr(func, "__name__", repr(func))


def _flatten(tree):
    """Leaves and a rebuild function for tuples, lists and dicts (torch's pytrees)."""
    if isinstance(tree, (tuple, list)) and not hasattr(tree, "_fields"):
        parts = [_flatten(t) for t in tree]
        leaves = [leaf for p in parts for leaf in p[0]]

        def rebuild(values, parts=parts, kind=type(tree)):
            out, i = [], 0
            for p_leaves, p_rebuild in parts:
                out.append(p_rebuild(values[i:i + len(p_leaves)]))
                i += len(p_leaves)
            return kind(out)
        return leaves, rebuild
    if isinstance(tree, dict):
        keys = list(tree)
        parts = [_flatten(tree[k]) for k in keys]
        leaves = [leaf for p in parts for leaf in p[0]]

        def rebuild(values, parts=parts, keys=keys, kind=type(tree)):
            out, i = {}, 0
            for k, (p_leaves, p_rebuild) in zip(keys, parts):
                out[k] = p_rebuild(values[i:i + len(p_leaves)])
                i += len(p_leaves)
            return kind(out) if kind is not dict else out
        return leaves, rebuild
    return [tree], lambda values: values[0]


def _structure(tree, indent=2):
    """A pytree's structure as torch's ``TreeSpec`` repr prints it."""
    sep = ",\n" + " " * indent
    if isinstance(tree, (tuple, list)) and not hasattr(tree, "_fields"):
        inner = sep.join(_structure(t, indent + 2) for t in tree)
        return f"TreeSpec({type(tree).__name__}, None, [{inner}])"
    if isinstance(tree, dict):
        inner = sep.join(_structure(v, indent + 2) for v in tree.values())
        return f"TreeSpec(dict, {list(tree)}, [{inner}])"
    return "*"


def _broadcast_dims(dims, tree, what, where):
    """One dim per leaf of ``tree``: an int/None covers its whole subtree."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(_flatten(tree)[0])
    if isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)) \
            and len(dims) == len(tree):
        return [d for sub, t in zip(dims, tree) for d in _broadcast_dims(sub, t, what, where)]
    if isinstance(dims, dict) and isinstance(tree, dict) and set(dims) == set(tree):
        return [d for k in tree for d in _broadcast_dims(dims[k], tree[k], what, where)]
    raise ValueError(f"{where}: {what} is not compatible with the structure of `{what[:-5]}puts`. "
                     f"{what} has structure {_structure(dims)} but {what[:-5]}puts has "
                     f"structure {_structure(tree)}.")


def _check_dims_type(dims, what, where):
    if dims is None or isinstance(dims, int) and not isinstance(dims, bool):
        return
    if isinstance(dims, (tuple, list)):
        for d in dims:
            _check_dims_type(d, what, where)
        return
    if isinstance(dims, dict):
        for d in dims.values():
            _check_dims_type(d, what, where)
        return
    raise ValueError(f"{where}: expected `{what}` to be int or a (potentially nested) tuple "
                     f"matching the structure of {what[:-5]}puts, got: {type(dims)}.")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``torch.func.vmap``: ``func`` mapped over dimension ``in_dims`` of its inputs, stacked
    along ``out_dims`` of its outputs, computed as batched array operations."""
    if randomness not in _RANDOMNESS:
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)
    return wrapped


def _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    name = _fname(func)
    where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple "
                         f"matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, "
                         "or you are trying to vmap over a function with no inputs. The latter "
                         "is unsupported.")
    _check_dims_type(in_dims, "in_dims", where)
    if isinstance(in_dims, tuple) and len(in_dims) != len(args):
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {_structure(in_dims)} but inputs has "
                         f"structure {_structure(args)}.")
    leaves, rebuild = _flatten(args)
    dims = _broadcast_dims(in_dims, args, "in_dims", where)
    sizes = []
    for leaf, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(leaf, Tensor):
            raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type "
                             f"{type(leaf)}. We cannot vmap over non-Tensor arguments, please "
                             "use None as the respective in_dim")
        n = leaf.dim()
        if not -n <= d < n:
            raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a Tensor "
                             f"of dimensionality {n} so expected in_dim to satisfy -{n} <= "
                             f"in_dim < {n}.")
        sizes.append(leaf.shape[d])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    batch = sizes[0]
    _OpSwap.enter(func)  # once for all the chunks
    try:
        return _vmap_chunks(func, leaves, dims, rebuild, batch, out_dims, randomness,
                            chunk_size, kwargs, name)
    finally:
        _OpSwap.exit()


def _vmap_chunks(func, leaves, dims, rebuild, batch, out_dims, randomness, chunk_size, kwargs,
                 name):
    if chunk_size is None or chunk_size >= batch:
        return _vmap_once(func, leaves, dims, rebuild, batch, out_dims, randomness, kwargs, name)
    # Chunks run one after another; their outputs are concatenated along out_dims.
    chunks = []
    for start in range(0, batch, chunk_size):
        n = min(chunk_size, batch - start)
        part = [leaf.narrow(d, start, n) if d is not None else leaf
                for leaf, d in zip(leaves, dims)]
        chunks.append(_vmap_once(func, part, dims, rebuild, n, out_dims, randomness, kwargs,
                                 name))
    out_leaves0, out_rebuild = _flatten(chunks[0])
    flat = [_flatten(c)[0] for c in chunks]
    odims = _broadcast_dims(out_dims, chunks[0], "out_dims",
                            f"vmap({name}, ..., out_dims={out_dims})(<inputs>)")
    from ..ops.shape import cat
    joined = [cat([f[j] for f in flat], dim=od) if od is not None else out_leaves0[j]
              for j, od in enumerate(odims)]
    return out_rebuild(joined)


def _vmap_once(func, leaves, dims, rebuild, batch, out_dims, randomness, kwargs, name):
    levels = _levels()
    level = (levels[-1].level + 1) if levels else 1
    _OpSwap.enter(func)
    levels.append(_Level(level, batch, randomness))
    try:
        inputs = [(_make(leaf.movedim(d, 0), level) if d is not None else leaf)
                  for leaf, d in zip(leaves, dims)]
        out = func(*rebuild(inputs), **kwargs)
        return _unwrap_outputs(out, level, batch, out_dims, name)
    finally:
        levels.pop()
        _OpSwap.exit()


def _check_out_dims(out_dims, name):
    try:
        _check_dims_type(out_dims, "out_dims", "")
    except ValueError:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                         "None or a python collection of ints representing where in the outputs "
                         "the vmapped dimension should appear.") from None


def _unwrap_outputs(out, level, batch, out_dims, name):
    where = f"vmap({name}, ..., out_dims={out_dims})(<inputs>)"
    _check_out_dims(out_dims, name)
    if isinstance(out_dims, tuple) and not isinstance(out, (tuple, list)) and len(out_dims) != 1:
        raise ValueError(f"{where}: out_dims is not compatible with the structure of `outputs`. "
                         f"out_dims has structure {_structure(out_dims)} but outputs has "
                         f"structure {_structure(out)}.")
    if isinstance(out_dims, tuple) and not isinstance(out, (tuple, list)):
        out_dims = out_dims[0]
    leaves, rebuild = _flatten(out)
    odims = _broadcast_dims(out_dims, out, "out_dims", where)
    result = []
    for leaf, od in zip(leaves, odims):
        if not isinstance(leaf, Tensor):
            if od is None:
                result.append(leaf)
                continue
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(leaf)}. Did you mean to set out_dims= to None for output?")
        value, batched = unwrap(leaf, level)
        if od is None:
            if batched:
                raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): Cannot "
                                 "return a BatchedTensor when out_dim is None")
            result.append(leaf)
            continue
        if not batched:
            # An output that does not depend on the mapped inputs is the same for every example.
            value = leaf.unsqueeze(0).expand(batch, *leaf.shape)
        n = value.dim()
        if not -n <= od < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}]"
                             f", but got {od})")
        result.append(value.movedim(0, od) if od not in (0, -n) else value)
    return rebuild(result)


# ---- for the other transforms (grad, vjp, jacrev inside vmap) -------------------------------

def active_levels():
    """The running vmaps' ``(level, size)``, outermost first."""
    return [(lv.level, lv.size) for lv in _levels()]


def peel(x):
    """``x``'s innermost plain tensor and the levels it is batched at, outermost first (its
    dimensions 0..k-1 are those levels' batches, in that order)."""
    levels = []
    while type(x) is BatchedTensor:
        levels.append(x._level)
        x = x._value
    return x, levels[::-1]


def batch_at_all_levels(x, levels=None):
    """``x`` as a plain tensor batched at every active level (or at ``levels``, as
    ``active_levels()`` gave them), expanded where it is not, with the levels' batches in
    front, outermost first."""
    plain, present = peel(x)
    for i, (level, size) in enumerate(active_levels() if levels is None else levels):
        if level not in present:
            plain = plain.unsqueeze(i).expand(*plain.shape[:i], size, *plain.shape[i:])
    return plain


def rewrap_all_levels(plain, levels=None):
    """Inverse of ``batch_at_all_levels``: a plain tensor with every active level's batch in
    front, as the nested BatchedTensor ``f`` sees."""
    for level, _ in (active_levels() if levels is None else levels):
        plain = _make(plain, level)
    return plain


# ---- helpers the batching rules share ----------------------------------------------------------

_signatures = {}


def bind(op, args, kwargs):
    """``args``/``kwargs`` bound to the parameters of the op behind ``op`` (defaults applied)."""
    import inspect
    fn = op.fn
    sig = _signatures.get(fn)
    if sig is None:
        sig = _signatures[fn] = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound


def call_bound(op, bound):
    return op(*bound.args, **bound.kwargs)


def logical_ndim(x):
    return x.dim() if isinstance(x, Tensor) else 0


def pad_value(v, rank):
    """A batched value (batch in front) with size-1 dims inserted after the batch, so that its
    example has ``rank`` dims: it then broadcasts against unbatched operands as its example
    would."""
    for _ in range(rank - (v.dim() - 1)):
        v = v.unsqueeze(1)
    return v


def align(level, args, kwargs):
    """Arguments with every tensor batched at ``level`` replaced by its value, padded to the
    largest example rank among the tensor arguments (broadcasting from the right then lines up
    the examples' dims; the batch stays in front)."""
    rank = 0
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor):
            rank = max(rank, a.dim())
        elif type(a) in (list, tuple):
            for b in a:
                if isinstance(b, Tensor):
                    rank = max(rank, b.dim())

    def fix(a):
        if type(a) is BatchedTensor and a._level == level:
            return pad_value(a._value, rank)
        if type(a) in (list, tuple):
            return type(a)(fix(b) for b in a)
        return a
    return [fix(a) for a in args], {k: fix(v) for k, v in kwargs.items()}


def shift_dim(d, ndim):
    """A logical dim as the value's dim (the batch is dim 0)."""
    from .._tensor import wrap_dim
    return wrap_dim(d, max(ndim, 1)) + 1


def level_size(level):
    return _find_level(level).size


def expand_to_level(x, level):
    """``x`` (not batched at ``level``) as a value batched at ``level``: expanded, no copy."""
    size = level_size(level)
    return x.unsqueeze(0).expand(size, *x.shape)


def value_at(x, level):
    """The value of ``x`` batched at ``level``, expanding it if it is not."""
    v, batched = unwrap(x, level)
    return v if batched else expand_to_level(x, level)
