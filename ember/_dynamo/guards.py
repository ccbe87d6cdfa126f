"""Guards: the conditions under which a recorded graph may be replayed, as one generated Python
function per cache entry (``guard(a, s)``: ``a`` the flat input tensors, ``s`` the other leaves
of the arguments), so that checking them costs a few attribute reads, not a walk over objects.

What is guarded: each input tensor's type, shape, strides, dtype, device and ``requires_grad``,
the tensors' aliasing (which inputs are the same object), the other arguments' values (numbers,
strings, dtypes… by equality, other objects by identity), the argument structure, grad mode and
inference mode, autocast being off, every module the call ran (its ``training`` flag and plain
attributes by value; its parameters, buffers and submodules by identity, with their shapes,
dtypes and ``requires_grad``; its hooks), and the globals and attributes the user's code read
(``side_effects.Watcher``). Break outcomes are not guards: they are the keys of the path taken
(``eval_frame``)."""
from .side_effects import _SCALARS

__all__ = ["build_guard"]

_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


def _is_scalar(v):
    from .._dtype import dtype
    from .._device import device
    if isinstance(v, tuple):
        return all(_is_scalar(x) for x in v)
    return isinstance(v, _SCALARS + (dtype, device))


class _Builder:
    def __init__(self):
        self.consts = {}
        self.conds = []
        self.text = []

    def const(self, v):
        name = f"_c{len(self.consts)}"
        self.consts[name] = v
        return name

    def add(self, cond, text=None):
        self.conds.append(cond)
        self.text.append(text or cond)

    def value(self, expr, v, text):
        """``expr`` evaluates to ``v``: equal (same type) for plain values, else the same object."""
        if _is_scalar(v):
            c = self.const(v)
            self.add(f"(({expr}) is {c} or (type({expr}) is {self.const(type(v))} and "
                     f"({expr}) == {c}))", f"{text} == {v!r}")
        else:
            self.add(f"({expr}) is {self.const(v)}", f"{text} is {type(v).__name__}@{id(v):#x}")


def build_guard(flat, leaves, spec, modules, dict_guards, grad_state, dynamic=None):
    """The guard function for a recording made on ``flat`` tensors and ``leaves``, with the text
    of each condition (``ExplainOutput.out_guards``). ``dynamic``: ``{input index: dims}`` whose
    size is symbolic: guarded ``>= 2`` (torch's 0/1 specialisation: a size 0 or 1 is another
    graph), the rest of the shape by value and the strides by C-contiguity (they follow from the
    sizes)."""
    dynamic = dynamic or {}
    import sys
    from ..nn.modules import module as module_mod
    b = _Builder()
    b.add(f"s_spec == {b.const(spec)}", "argument structure")
    for i, t in enumerate(flat):
        a = f"a[{i}]"
        b.add(f"type({a}) is {b.const(type(t))}", f"type(input {i}) is {type(t).__name__}")
        if i in dynamic:
            _dynamic_input_guard(b, a, i, t, dynamic[i])
            continue
        want = (tuple(t._data.shape), tuple(t._data.strides), t._dtype, t._device,
                bool(t._requires_grad))
        b.add(f"({a}._data.shape, {a}._data.strides, {a}._dtype, {a}._device, "
              f"{a}._requires_grad) == {b.const(want)}",
              f"input {i}: shape == {want[0]}, strides == {want[1]}, dtype == {want[2]}, "
              f"device == {want[3]}, requires_grad == {want[4]}")
    if len(flat) > 1:
        b.add(f"_alias(a) == {b.const(_alias(flat))}", "input aliasing")
    for i, v in enumerate(leaves):
        b.value(f"s[{i}]", v, f"argument leaf {i}")
    g = b.const(grad_state)
    b.add(f"{g}.enabled is {bool(grad_state.enabled)}", f"grad_mode == {grad_state.enabled}")
    b.add(f"{g}.inference is {bool(grad_state.inference)}",
          f"inference_mode == {grad_state.inference}")
    mods = b.const(sys.modules)
    b.add(f"({mods}.get('ember.amp.autocast_mode') is None or "
          f"not {mods}['ember.amp.autocast_mode'].active)", "autocast is off")
    for name in ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                 "_global_backward_pre_hooks"):
        d = getattr(module_mod, name, None)
        if isinstance(d, dict):
            b.add(f"len({b.const(d)}) == {len(d)}", f"len(nn.modules.module.{name}) == {len(d)}")
    for m in modules:
        _module_guards(b, m)
    for d, key in dict_guards:
        if key in d:
            b.value(f"{b.const(d)}.get({key!r})", d[key], f"{_dict_name(d)}[{key!r}]")
        else:
            b.add(f"{key!r} not in {b.const(d)}", f"{key!r} not in {_dict_name(d)}")
    b.consts["_alias"] = _alias
    src = "def guard(a, s, s_spec):\n    return (" + "\n            and ".join(b.conds) + ")\n"
    namespace = dict(b.consts)
    exec(compile(src, "<ember._dynamo guard>", "exec"), namespace)
    return namespace["guard"], b.text


def _dynamic_input_guard(b, a, i, t, dims):
    shape = tuple(t._data.shape)
    fixed = tuple((d, s) for d, s in enumerate(shape) if d not in dims)
    want = (len(shape), tuple(s for _, s in fixed), t._dtype, t._device, bool(t._requires_grad))
    sizes = ", ".join(f"{a}._data.shape[{d}]" for d, _ in fixed)
    cond = (f"(len({a}._data.shape), ({sizes}{',' if fixed else ''}), {a}._dtype, {a}._device, "
            f"{a}._requires_grad) == {b.const(want)}")
    cond += "".join(f" and {a}._data.shape[{d}] >= 2" for d in sorted(dims))
    cond += f" and {a}._data.flags.c_contiguous"
    sym = tuple(f"s{i}_{d}" if d in dims else s for d, s in enumerate(shape))
    b.add(cond, f"input {i}: shape == ({', '.join(map(str, sym))}) with "
          f"{', '.join(f's{i}_{d} >= 2' for d in sorted(dims))}, contiguous, dtype == "
          f"{want[2]}, device == {want[3]}, requires_grad == {want[4]}")


def _alias(a):
    """Which inputs are the same object: for each, the index of its first occurrence."""
    first = {}
    return tuple(first.setdefault(id(x), i) for i, x in enumerate(a))


def _dict_name(d):
    name = d.get("__name__") if isinstance(d.get("__name__", None), str) else None
    return f"globals of {name}" if name else f"dict@{id(d):#x}"


def _module_guards(b, m):
    """A module's guards, folded into a few tuple comparisons (they run on every call)."""
    from .._tensor import Tensor
    name = type(m).__name__
    d = m.__dict__
    dn = b.const(d)
    scalars = [(k, v) for k, v in d.items() if _is_scalar(v)]
    if scalars:
        keys = ", ".join(f"{dn}.get({k!r})" for k, _ in scalars)
        b.add(f"({keys},) == {b.const(tuple(v for _, v in scalars))}",
              ", ".join(f"{name}.{k} == {v!r}" for k, v in scalars))
    metas = []
    for attr in ("_parameters", "_buffers", "_modules") + _HOOK_DICTS:
        sub = d.get(attr)
        if not isinstance(sub, dict):
            continue
        sn = b.const(sub)
        conds = [f"len({sn}) == {len(sub)}"]
        for k, v in sub.items():
            c = b.const(v)
            conds.append(f"{sn}.get({k!r}) is {c}")
            if isinstance(v, Tensor):
                # the same object was checked just before: read its metadata directly
                metas.append((c, k, v))
        b.add(" and ".join(conds), f"{name}.{attr}: {len(sub)} entries, the same objects")
    if metas:
        expr = ", ".join(f"{c}._data.shape, {c}._dtype, {c}._requires_grad" for c, _, _ in metas)
        want = tuple(x for _, _, v in metas
                     for x in (tuple(v._data.shape), v._dtype, v._requires_grad))
        b.add(f"({expr},) == {b.const(want)}",
              ", ".join(f"{name}.{k}: shape {tuple(v._data.shape)}, {v._dtype}, requires_grad="
                        f"{v._requires_grad}" for _, k, v in metas))
