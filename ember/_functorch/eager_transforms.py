"""torch.func's reverse-mode transforms: ``grad``, ``grad_and_value``, ``vjp``, ``jacrev``.

Each call of a transform differentiates on Ember's tape. Its inputs become fresh graph roots
(a detached leaf, or a view of the input when something outside also differentiates through
it), the function runs under ``enable_grad``, and ``autograd.grad`` reads the gradient back:
with ``create_graph=True`` when an enclosing transform (or ordinary autograd outside) needs to
differentiate the result again (``grad(grad(f))``, ``jacrev(jacrev(f))``), and detached
otherwise, so what a transform returns does not require grad.

Inside ``vmap`` an input is first made batched at every running vmap level (an unbatched
parameter is expanded, with no copy): the function then runs as one batched computation, and
the gradient of the sum over the batch with respect to that batched leaf holds one gradient per
example, since the batching rules never mix examples. This is how ``vmap(grad(f))`` computes
per-sample gradients with batched array ops, backward included.

``jacrev`` is ``vmap`` over the rows of the identity (the cotangent basis) of a function that
runs ``vjp`` inside, in chunks of ``chunk_size`` rows; a function vmap cannot batch falls back
to one backward pass per row on a retained graph.
"""
import functools

from .._tensor import Tensor
from ..autograd import grad_mode
from . import vmap as _vmap

__all__ = ["grad", "grad_and_value", "vjp", "jacrev"]

# How many reverse-mode transforms are running: an inner one keeps its graph for the outer.
_depth = [0]


def _flatten(tree):
    return _vmap._flatten(tree)


def _tree_pprint(tree):
    """A pytree's structure as torch's ``treespec_pprint`` writes it: ``(*, [*, *])``."""
    if isinstance(tree, tuple) and not hasattr(tree, "_fields"):
        inner = ", ".join(_tree_pprint(t) for t in tree)
        return f"({inner},)" if len(tree) == 1 else f"({inner})"
    if isinstance(tree, list):
        return "[" + ", ".join(_tree_pprint(t) for t in tree) + "]"
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_tree_pprint(v)}" for k, v in tree.items()) + "}"
    return "*"


def _check_argnums(argnums, nargs):
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        if not -nargs <= argnums < nargs:
            raise RuntimeError(f"Got argnum={argnums}, but only {nargs} positional inputs")
        return argnums % nargs
    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in argnums):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        fixed = tuple(_check_argnums(a, nargs) for a in argnums)
        if len(set(fixed)) != len(fixed):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        return fixed
    raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


def _check_tensors(leaves):
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(leaf)}")


class _Inputs:
    """The differentiated inputs as fresh graph roots, in the form the function sees them."""

    def __init__(self, tree):
        leaves, self.rebuild = _flatten(tree)
        _check_tensors(leaves)
        self.levels = _vmap.active_levels()
        self.batched = bool(self.levels)
        self.connected = False
        self.roots = []   # the plain tensors gradients are taken against (one per input)
        for leaf in leaves:
            plain = _vmap.batch_at_all_levels(leaf) if self.batched else leaf
            if not (plain.is_floating_point() or plain.is_complex()):
                raise RuntimeError("only Tensors of floating point dtype can require gradients")
            if plain.requires_grad or plain._fw_grad is not None:
                # Something outside differentiates through this input (reverse mode, or a
                # forward-mode tangent, as jacfwd(jacrev(f)) carries): stay on its graph.
                root = plain.view_as(plain)
                if not root.requires_grad:
                    root.requires_grad_()
                self.connected = True
            else:
                root = plain.detach().requires_grad_()
            self.roots.append(root)
        self.tree = self.rebuild([_vmap.rewrap_all_levels(r) if self.batched else r
                                  for r in self.roots])

    @property
    def create_graph(self):
        return self.connected or _depth[0] > 1

    def as_user(self, grads):
        """Gradients against the roots, shaped as the inputs."""
        out = []
        for g, r in zip(grads, self.roots):
            if g is None:
                from ..ops.creation import zeros_like
                g = zeros_like(r)
            if not self.create_graph:
                g = g.detach()
            out.append(_vmap.rewrap_all_levels(g, self.levels) if self.batched else g)
        return self.rebuild(out)


def _plain_output(t):
    """An output as the plain batched tensor its graph holds."""
    return _vmap.batch_at_all_levels(t) if _vmap.active_levels() else t


def _detach_tree(tree, keep):
    if keep:
        return tree
    leaves, rebuild = _flatten(tree)
    return rebuild([leaf.detach() if isinstance(leaf, Tensor) else leaf for leaf in leaves])


def _take_argnums(args, argnums):
    if isinstance(argnums, int):
        return args[argnums]
    return tuple(args[a] for a in argnums)


def _put_argnums(args, argnums, values):
    args = list(args)
    if isinstance(argnums, int):
        args[argnums] = values
    else:
        for a, v in zip(argnums, values):
            args[a] = v
    return args


def grad_and_value(func, argnums=0, has_aux=False):
    """``torch.func.grad_and_value``: ``(gradient, value)`` of scalar-valued ``func`` with
    respect to the positional arguments ``argnums`` (an int or a tuple of ints); with
    ``has_aux``, ``func`` returns ``(value, aux)`` and the result is ``(gradient, (value,
    aux))``."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        _depth[0] += 1
        try:
            with grad_mode.enable_grad():
                inputs = _Inputs(_take_argnums(args, nums))
                out = func(*_put_argnums(args, nums, inputs.tree), **kwargs)
                aux = None
                if has_aux:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise RuntimeError("grad_and_value(f)(*args): output of function f "
                                           "should be a tuple: (output, aux) if has_aux is True")
                    out, aux = out
                if not isinstance(out, Tensor):
                    raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                       f"Tensor, got {type(out)}")
                if out.dim() != 0:
                    raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                       f"scalar Tensor, got tensor with {out.dim()} dims. Maybe "
                                       "you wanted to use the vjp or jacrev APIs instead?")
                grads = _gradients([_plain_output(out)], None, inputs)
                keep = inputs.create_graph
                return inputs.as_user(grads), (_detach_tree(out, keep) if not has_aux else
                                               (_detach_tree(out, keep), _detach_tree(aux, keep)))
        finally:
            _depth[0] -= 1
    return wrapper


def _gradients(outputs, cotangents, inputs):
    """``autograd.grad`` of the plain ``outputs`` against ``inputs.roots`` (None where an input
    is unused), keeping the graph when an enclosing transform needs it."""
    from .. import autograd
    from ..ops.creation import ones_like
    pairs = [(o, ones_like(o) if cotangents is None else c)
             for o, c in zip(outputs, cotangents or outputs) if o.requires_grad]
    if not pairs:
        return [None] * len(inputs.roots)
    create = inputs.create_graph
    return autograd.grad([p[0] for p in pairs], inputs.roots, [p[1] for p in pairs],
                         retain_graph=True, create_graph=create, allow_unused=True)


def grad(func, argnums=0, has_aux=False):
    """``torch.func.grad``: the gradient of scalar-valued ``func`` with respect to its
    ``argnums`` positional arguments (with ``has_aux``: ``(gradient, aux)``)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """``torch.func.vjp``: ``(func(*primals), vjp_fn)`` (and ``aux`` with ``has_aux``), where
    ``vjp_fn(cotangents)`` gives the vector-Jacobian products for each primal."""
    _depth[0] += 1
    try:
        with grad_mode.enable_grad():
            inputs = _Inputs(primals)
            out = func(*inputs.tree)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")
                out, aux = out
            out_leaves, _ = _flatten(out)
            for leaf in out_leaves:
                if not isinstance(leaf, Tensor):
                    raise RuntimeError("vjp(f, *primals): expected f(*primals) to return only "
                                       f"tensors, got unsupported type {type(leaf)}")
            plain_outs = [_plain_output(o) for o in out_leaves]
        keep = inputs.create_graph
        levels = _vmap.active_levels()
    finally:
        _depth[0] -= 1
    created_max = levels[-1][0] if levels else 0

    def vjp_fn(cotangents):
        ct_leaves, _ = _flatten(cotangents)
        if len(ct_leaves) != len(out_leaves):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree "
                               f"structure of outputs to the function. cotangents: "
                               f"{_tree_pprint(cotangents)}, primal output: "
                               f"{_tree_pprint(out)}")
        level = _vmap._max_level(ct_leaves, {})
        if level is not None and level > created_max:
            # Cotangents batched by a vmap the forward did not run under: one backward per
            # example of that batch (jacrev avoids this by running vjp inside its vmap).
            return _vmap.fallback(_vmap._Op("vjp_fn", vjp_fn), level, (cotangents,), {},
                                  "vjp_fn")
        for i, (c, o) in enumerate(zip(ct_leaves, out_leaves)):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{c.shape} and output[{i}] has a shape of {o.shape}.")
        _depth[0] += 1
        try:
            with grad_mode.enable_grad():
                cts = [_vmap.batch_at_all_levels(c, inputs.levels).to(p.dtype)
                       for c, p in zip(ct_leaves, plain_outs)]
                grads = _gradients(plain_outs, cts, inputs)
                result = inputs.as_user(grads)
        finally:
            _depth[0] -= 1
        return tuple(result)

    out = _detach_tree(out, keep)
    if has_aux:
        return out, vjp_fn, _detach_tree(aux, keep)
    return out, vjp_fn


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """``torch.func.jacrev``: the Jacobian of ``func`` with respect to its ``argnums``
    positional arguments, by reverse mode: one vjp per output element, batched through
    ``vmap`` over the cotangent basis (``chunk_size`` rows at a time)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from ..ops.creation import eye
        nums = _check_argnums(argnums, len(args))
        diff = _take_argnums(args, nums)
        diff_tuple = diff if isinstance(nums, tuple) else (diff,)

        def f_diff(*d):
            return func(*_put_argnums(args, nums, d if isinstance(nums, tuple) else d[0]),
                        **kwargs)
        result = vjp(f_diff, *diff_tuple, has_aux=has_aux)
        out, vjp_fn = result[0], result[1]
        out_leaves, out_rebuild = _flatten(out)
        sizes = [o.numel() for o in out_leaves]
        total = sum(sizes)
        ref = out_leaves[0]
        basis = eye(total, dtype=ref.dtype, device=ref.device)
        cts, start = [], 0
        for o, n in zip(out_leaves, sizes):
            cts.append(basis[:, start:start + n].reshape(total, *o.shape))
            start += n
        ct_tree = out_rebuild(cts)

        def row(ct):
            return vjp(f_diff, *diff_tuple, has_aux=has_aux)[1](ct)
        try:
            rows = _vmap.vmap(row, chunk_size=chunk_size)(ct_tree)
        except RuntimeError as e:
            if "vmap" not in str(e) and "batch" not in str(e):
                raise
            rows = _rows_by_loop(vjp_fn, cts, out_rebuild, total)
        # rows[j]: (total, *input_j.shape); split by output, reshaped (*out_i, *in_j).
        jac_per_input = []
        for j, inp in enumerate(diff_tuple):
            r = rows[j]
            parts, start = [], 0
            for o, n in zip(out_leaves, sizes):
                parts.append(r[start:start + n].reshape(*o.shape, *inp.shape))
                start += n
            jac_per_input.append(out_rebuild(parts))
        if isinstance(nums, tuple):
            # torch nests as output structure of argnums tuples.
            if len(out_leaves) == 1 and not isinstance(out, (tuple, list, dict)):
                jac = tuple(jac_per_input)
            else:
                jac = out_rebuild([tuple(_flatten(jac_per_input[j])[0][i]
                                         for j in range(len(diff_tuple)))
                                   for i in range(len(out_leaves))])
        else:
            jac = jac_per_input[0]
        if has_aux:
            return jac, result[2]
        return jac
    return wrapper


def _rows_by_loop(vjp_fn, cts, out_rebuild, total):
    from ..ops.shape import stack
    per_row = [vjp_fn(out_rebuild([c[i] for c in cts])) for i in range(total)]
    return tuple(stack([p[j] for p in per_row]) for j in range(len(per_row[0])))
