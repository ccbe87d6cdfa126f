"""torch.func's forward-mode transforms: ``jvp``, ``jacfwd``, ``linearize`` and ``hessian``,
built on ``ember.autograd.forward_ad`` (dual tensors). ``ember.func`` re-exports them.

``jacfwd`` is ``vmap`` of ``jvp`` over the basis tangents, as torch's: inside ``vmap`` a dual
tensor's tangent may be a ``BatchedTensor`` (its primal is not), so each op's forward
derivative runs once through the batching rules for every column at once.
Levels do not nest (as torch.autograd.forward_ad), so ``jvp(jvp(f))`` and ``jacfwd(jacfwd(f))``
raise; ``jacfwd(jacrev(f))`` (``hessian``) works, forward over reverse.
"""
from .. import _tensor
from ..autograd import forward_ad as fwAD

__all__ = ["jvp", "jacfwd", "linearize", "hessian"]

Tensor = _tensor.Tensor


# ---- a minimal pytree over tuples, lists and dicts ------------------------------------------
def _flatten(tree):
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for item in tree:
            sub, spec = _flatten(item)
            leaves.extend(sub)
            specs.append((len(sub), spec))
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for key, item in tree.items():
            sub, spec = _flatten(item)
            leaves.extend(sub)
            specs.append((key, len(sub), spec))
        return leaves, (dict, specs)
    return [tree], None


def _unflatten(leaves, spec):
    if spec is None:
        return leaves[0]
    kind, specs = spec
    if kind is dict:
        out, i = {}, 0
        for key, n, sub in specs:
            out[key] = _unflatten(leaves[i:i + n], sub)
            i += n
        return out
    items, i = [], 0
    for n, sub in specs:
        items.append(_unflatten(leaves[i:i + n], sub))
        i += n
    return kind(items) if kind in (tuple, list) else kind(*items)


def _zeros_tangent(t):
    return t.new_zeros(t.shape)


# ---- jvp ------------------------------------------------------------------------------------
def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)``, as ``torch.func.jvp``: the outputs and their
    tangents, in ``func``'s output structure (plus ``aux`` with ``has_aux=True``)."""
    if strict:
        raise RuntimeError("jvp(f, primals, tangents, strict=True): strict=True is not "
                           "implemented yet")
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    flat_p, p_spec = _flatten(primals)
    flat_t, t_spec = _flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           f"the same python structure. For example, if primals is a tuple of 3 "
                           "tensors, tangents also must be. Got primals with structure "
                           f"{p_spec} and tangents with structure {t_spec}")
    for p, t in zip(flat_p, flat_t):
        if not isinstance(p, Tensor) or not isinstance(t, Tensor):
            bad = p if not isinstance(p, Tensor) else t
            raise RuntimeError(f"Expected tensors, got unsupported type {type(bad)}")
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, t) for p, t in zip(flat_p, flat_t)]
        result = func(*_unflatten(duals, p_spec))
        if has_aux:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError("jvp(f, primals, tangents): output of function f should be "
                                   "a tuple: (output, aux) if has_aux is True")
            result, aux = result
        flat_out, out_spec = _flatten(result)
        outs, out_tangents = [], []
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError("jvp(f, primals, tangents): Expected f(*primals) to return "
                                   f"only tensors, got unsupported type {type(o)}")
            primal, tangent = fwAD.unpack_dual(o)
            outs.append(primal.detach() if primal._fw_grad is None else primal)
            out_tangents.append(tangent if tangent is not None else _zeros_tangent(o))
        if has_aux:
            aux_leaves, aux_spec = _flatten(aux)
            for a in aux_leaves:
                if not isinstance(a, Tensor):
                    raise RuntimeError(f"Expected tensors, got unsupported type {type(a)}")
            aux = _unflatten([fwAD.unpack_dual(a).primal.detach() for a in aux_leaves],
                             aux_spec)
    if not any(t.requires_grad for t in flat_p + flat_t):
        # graphs built inside func (a jacrev under jacfwd) are internal to the transform
        outs = [o.detach() for o in outs]
        out_tangents = [t.detach() for t in out_tangents]
    primals_out = _unflatten(outs, out_spec)
    tangents_out = _unflatten(out_tangents, out_spec)
    if has_aux:
        return primals_out, tangents_out, aux
    return primals_out, tangents_out


# ---- jacfwd ---------------------------------------------------------------------------------
def _argnums_tuple(argnums, n):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")
    return tuple(a % n for a in nums)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` with respect to argument(s) ``argnums`` by forward-mode AD, as
    ``torch.func.jacfwd``: for an output of shape ``O`` and an input of shape ``I``, a tensor
    of shape ``O + I``. As torch does, it is ``vmap`` of ``jvp`` over the basis tangents (the
    rows of an identity), so every column comes from one batched forward pass; ``randomness``
    is vmap's. A function vmap cannot batch (an op without a batched forward derivative)
    falls back to one forward pass per column."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")

    def wrapper(*args):
        nums = _argnums_tuple(argnums, len(args))
        diff = [args[a] for a in nums]
        flat_diff, diff_spec = _flatten(tuple(diff))
        for p in flat_diff:
            if not isinstance(p, Tensor):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(p)}")
        sizes = [p.numel() for p in flat_diff]

        def run(*tangent_leaves):
            tangents = tuple(_unflatten(list(tangent_leaves), diff_spec))

            def partial(*ps):
                call = list(args)
                for a, p in zip(nums, ps):
                    call[a] = p
                return func(*call)
            res = jvp(partial, tuple(diff), tangents, has_aux=has_aux)
            out_flat, out_spec = _flatten(res[0])
            holder["spec"] = out_spec
            tangent_flat = tuple(_flatten(res[1])[0])
            return (tuple(out_flat), tangent_flat) + ((res[2],) if has_aux else ())

        holder = {}
        total = sum(sizes)
        columns = None
        if total:
            columns = _batched_columns(run, flat_diff, sizes, total, has_aux, randomness)
        if columns is None:
            columns = _looped_columns(run, flat_diff, sizes, total)
        out_flat, tangents = columns[0], columns[1]  # tangents[i]: (total, *out_i.shape)
        per_out = []
        for o, t in zip(out_flat, tangents):
            per_in, start = [], 0
            for p, n in zip(flat_diff, sizes):
                block = t.narrow(0, start, n) if n else t.new_zeros((0,) + tuple(o.shape))
                start += n
                per_in.append(block.movedim(0, -1).reshape(tuple(o.shape) + tuple(p.shape)))
            per_in = _unflatten(per_in, diff_spec)
            per_out.append(per_in if isinstance(argnums, tuple) else per_in[0])
        jac = _unflatten(per_out, holder["spec"])
        if has_aux:
            return jac, columns[2]
        return jac
    return wrapper


def _basis(flat_diff, sizes, total):
    """Row k of the identity, split into one tangent per input: ``total`` tangents at once."""
    from ..ops import eye
    out, start = [], 0
    for p, n in zip(flat_diff, sizes):
        rows = eye(total, dtype=p.dtype, device=p.device).narrow(1, start, n)
        out.append(rows.reshape((total,) + tuple(p.shape)))
        start += n
    return out


def _batched_columns(run, flat_diff, sizes, total, has_aux, randomness):
    from .vmap import vmap
    out_dims = (None, 0, None) if has_aux else (None, 0)
    try:
        return vmap(run, out_dims=out_dims, randomness=randomness)(
            *_basis(flat_diff, sizes, total))
    except RuntimeError as exc:
        # an op whose forward derivative reads a tangent's array (no batching rule on that
        # path): the same columns, one forward pass each
        if "has no batching rule" not in str(exc):
            raise
        return None


def _looped_columns(run, flat_diff, sizes, total):
    from ..ops import stack
    if not total:  # every input empty: evaluate once for the output's structure
        res = run(*[q.new_zeros(q.shape) for q in flat_diff])
        empty = tuple(o.new_zeros((0,) + tuple(o.shape)) for o in res[0])
        return (res[0], empty) + tuple(res[2:])
    basis = _basis(flat_diff, sizes, total)
    results = [run(*[b[k] for b in basis]) for k in range(total)]
    tangents = tuple(stack([r[1][i] for r in results]) for i in range(len(results[0][1])))
    return (results[0][0], tangents) + tuple(results[0][2:])


# ---- linearize ------------------------------------------------------------------------------
def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the Jacobian-vector product
    at ``primals``, as ``torch.func.linearize``: the jvp is traced once with ``make_fx`` (the
    tangents the graph's inputs, everything computed from the primals its constants) and
    ``jvp_fn`` replays that graph, so ``func`` runs once, here."""
    from ..fx.experimental.proxy_tensor import make_fx
    frozen = tuple(p.detach() if isinstance(p, Tensor) else p for p in primals)
    flat_p, p_spec = _flatten(frozen)
    for p in flat_p:
        if not isinstance(p, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(p)}")
    captured = {}

    def tangent_fn(*flat_t):
        out, tangents_out = jvp(func, frozen, _unflatten(list(flat_t), p_spec))
        captured["out"], captured["spec"] = out, _flatten(tangents_out)[1]
        return tuple(_flatten(tangents_out)[0])

    with _tangents_recorded():
        graph = make_fx(tangent_fn)(*[p.new_ones(p.shape) for p in flat_p])
    out_spec = captured["spec"]

    def jvp_fn(*tangents):
        flat_t, t_spec = _flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"Expected the tangents {t_spec} to have the same structure as "
                               f"the primals {p_spec}")
        for p, t in zip(flat_p, flat_t):
            if not isinstance(t, Tensor) or tuple(p.shape) != tuple(t.shape) or \
                    p.dtype != t.dtype:
                got = (f"{tuple(t.shape)} ({t.dtype})" if isinstance(t, Tensor)
                       else type(t).__name__)
                raise RuntimeError(f"Mismatch in tangent shape or dtype: expected "
                                   f"{tuple(p.shape)} ({p.dtype}), got {got}")
        return _unflatten(list(graph(*flat_t)), out_spec)
    return captured["out"], jvp_fn


class _tangents_recorded:
    """While ``make_fx`` traces a jvp, an op's forward derivative (which runs inside the op,
    where the tracer records nothing) is recorded too: the tangent is what the graph
    computes, and the ops on the primals alone stay constants."""

    def __enter__(self):
        from ..fx.experimental import proxy_tensor
        self._propagate = propagate = fwAD.propagate
        state = proxy_tensor._state

        def recorded_propagate(*args, **kwargs):
            depth = getattr(state, "depth", 0)
            state.depth = 0
            try:
                return propagate(*args, **kwargs)
            finally:
                state.depth = depth
        fwAD.propagate = recorded_propagate
        return self

    def __exit__(self, *exc):
        fwAD.propagate = self._propagate
        return False


# ---- hessian --------------------------------------------------------------------------------
def hessian(func, argnums=0):
    """``jacfwd(jacrev(func, argnums), argnums)``, as ``torch.func.hessian``: forward mode over
    a reverse-mode Jacobian."""
    return jacfwd(_jacrev_rows(func, argnums), argnums)


def _jacrev_rows(func, argnums=0):
    """The reverse-mode Jacobian, one ``autograd.grad`` (with ``create_graph``) per output
    element, on aliases of the inputs that keep their forward AD tangents, so that forward mode
    runs through it. (``ember.func.jacrev`` takes detached copies of its inputs, which drops a
    dual input's tangent, so ``jacfwd`` cannot run over it yet.)"""
    def wrapper(*args):
        from ..autograd import grad as autograd_grad
        from ..autograd import grad_mode
        from ..ops import stack
        nums = _argnums_tuple(argnums, len(args))
        with grad_mode.enable_grad():
            call = list(args)
            for a in nums:
                call[a] = args[a].view_as(args[a]).requires_grad_() \
                    if not args[a].requires_grad else args[a]
            out = func(*call)
            inputs = [call[a] for a in nums]
            rows = []
            flat = out.reshape(-1)
            for k in range(flat.numel()):
                rows.append(autograd_grad(flat[k], inputs, retain_graph=True, create_graph=True,
                                          allow_unused=True, materialize_grads=True))
        jacs = [stack([r[i] for r in rows]).reshape(tuple(out.shape) + tuple(inp.shape))
                for i, inp in enumerate(inputs)]
        return tuple(jacs) if isinstance(argnums, tuple) else jacs[0]
    return wrapper
