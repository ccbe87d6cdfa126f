"""Matrix products. All reach BLAS through ``backend.matmul`` (which also keeps float16/bfloat16
exact by multiplying in float32)."""
from .. import _dtype as dt
from ._dispatch import Tensor, Node, needs_grad, record, _wrap, device_mismatch, dtype_name


class MmBackward0(Node):
    """Backward of ``matmul`` for operands of any rank (1-D operands were promoted in forward)."""
    __slots__ = ()

    def backward(self, grad):
        a, b = self.saved_tensors
        a_vec, b_vec = self.a_vec, self.b_vec
        # Lift vectors to matrices so one rule serves every case.
        if a_vec:
            a = a.unsqueeze(0)
            grad = grad.unsqueeze(-2)
        if b_vec:
            b = b.unsqueeze(-1)
            grad = grad.unsqueeze(-1)
        ga = gb = None
        if self.next_functions[0] is not None:
            ga = grad.matmul(b.mT)
            if a_vec:
                ga = ga.squeeze(-2)
        if self.next_functions[1] is not None:
            gb = a.mT.matmul(grad)
            if b_vec:
                gb = gb.squeeze(-1)
        return ga, gb


def _check_mm(a, b, name):
    if not isinstance(b, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type(b).__name__}")
    if a._device is not b._device:
        raise device_mismatch(a, b)
    if a._dtype is not b._dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_lower(a._dtype)} != {_lower(b._dtype)}")
    if a._data.ndim == 0 or b._data.ndim == 0:
        raise RuntimeError(f"both arguments to {name} need to be at least 1D, but they are "
                           f"{a._data.ndim}D and {b._data.ndim}D")


def _lower(d):
    return {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int"}.get(d.name, d.name)


def matmul(input, other, *, out=None):
    _check_mm(input, other, "matmul")
    a, b = input._data, other._data
    k_a = a.shape[-1]
    k_b = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if k_a != k_b:
        if a.ndim == 1 and b.ndim == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                               f"[{b.shape[0]}] to have the same number of elements, but got "
                               f"{a.shape[0]} and {b.shape[0]} elements respectively")
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({_rows(a)}x{k_a} and {k_b}x{b.shape[-1] if b.ndim > 1 else 1})")
    if input._dtype is dt.bool:
        raise RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    res = _wrap(input._backend.matmul(a, b), input._dtype, input)
    if needs_grad(input, other):
        record(MmBackward0, (input, other), res,
               save=(input if other._requires_grad else None, other if input._requires_grad else None),
               a_vec=a.ndim == 1, b_vec=b.ndim == 1)
    if out is not None:
        from .inplace import copy_into_out
        return copy_into_out(out, res)
    return res


def _rows(a):
    if a.ndim == 1:
        return 1
    n = 1
    for s in a.shape[:-1]:
        n *= s
    return n


def mm(input, mat2, *, out=None):
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"self must be a matrix" if input.ndim != 2 else "mat2 must be a matrix")
    return matmul(input, mat2, out=out)


def bmm(input, mat2, *, out=None):
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor" if input.ndim != 3 else "batch2 must be a 3D tensor")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    return matmul(input, mat2, out=out)


def mv(input, vec):
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {vec.ndim}, 1")
    return matmul(input, vec)


def dot(input, other):
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input._dtype is not other._dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{dtype_name(input._dtype)} and {dtype_name(other._dtype)}")
    return matmul(input, other)


vdot = dot


def outer(input, vec2):
    return input.reshape(-1, 1) * vec2.reshape(1, -1)


ger = outer


def inner(input, other):
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    return tensordot(input, other, ([-1], [-1]))


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    prod = mm(mat1, mat2)
    return _scaled_sum(input, prod, beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _scaled_sum(input, bmm(batch1, batch2).sum(0), beta, alpha)


def _scaled_sum(input, prod, beta, alpha):
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        # beta=0 ignores input entirely (NaN in input does not propagate), as in PyTorch.
        return prod
    return prod + (input if beta == 1 else input * beta)


def tensordot(a, b, dims=2):
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a = list(range(a.ndim - dims, a.ndim))
        dims_b = list(range(dims))
    elif isinstance(dims, Tensor):
        return tensordot(a, b, dims.tolist() if dims.ndim else int(dims.item()))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    dims_a = [d % a.ndim for d in dims_a]
    dims_b = [d % b.ndim for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[da]} in dim {da} and second has size {b.shape[db]} in dim {db}")
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    k = 1
    for d in dims_a:
        k *= a.shape[d]
    am = a.permute(free_a + dims_a).reshape(-1, k)
    bm = b.permute(dims_b + free_b).reshape(k, -1)
    out_shape = [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b]
    return am.matmul(bm).reshape(out_shape)


def einsum(equation, *operands):
    """``einsum`` as a sequence of differentiable permute/reshape/matmul/sum steps: pairs of
    operands are contracted through matrix products so large contractions reach BLAS."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the equation")
    # Expand '...' into explicit letters not used elsewhere.
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in eq]
    ell_len = 0
    for t, op in zip(terms, operands):
        if "..." in t:
            ell_len = max(ell_len, op.ndim - (len(t) - 3))
    ell = "".join(spare[:ell_len])
    terms = [t.replace("...", ell[len(ell) - (op.ndim - (len(t) - 3)):] if "..." in t else "")
             for t, op in zip(terms, operands)]
    if rhs is None:
        counts = {}
        for t in terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    ops = []
    for t, op in zip(terms, operands):
        if len(t) != op.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) does "
                               f"not match the number of dimensions ({op.ndim}) for operand "
                               f"{len(ops)} and no ellipsis was given")
        op, t = _diag_repeated(op, t)
        ops.append((op, t))
    sizes = {}
    for op, t in ops:
        for c, s in zip(t, op.shape):
            if c in sizes and sizes[c] != s and s != 1 and sizes[c] != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes "
                                   f"(original->remapped)")
            sizes[c] = max(sizes.get(c, 1), s)
    # Contract left to right.
    cur, cur_t = ops[0]
    for op, t in ops[1:]:
        later = set(rhs) | {c for _, tt in ops[ops.index((op, t)) + 1:] for c in tt}
        cur, cur_t = _contract_pair(cur, cur_t, op, t, later)
    # Sum letters absent from the output, then order as rhs.
    drop = [i for i, c in enumerate(cur_t) if c not in rhs]
    if drop:
        cur = cur.sum(drop)
        cur_t = "".join(c for c in cur_t if c in rhs)
    perm = [cur_t.index(c) for c in rhs]
    return cur.permute(perm) if perm != list(range(len(perm))) else cur


def _diag_repeated(op, t):
    # A letter repeated inside one operand ('ii') takes the diagonal.
    while len(set(t)) != len(t):
        for c in t:
            if t.count(c) > 1:
                i = t.index(c)
                j = t.index(c, i + 1)
                op = op.diagonal(0, i, j)
                t = t[:i] + t[i + 1:j] + t[j + 1:] + c
                break
    return op, t


def _contract_pair(a, ta, b, tb, keep):
    batch = [c for c in ta if c in tb and c in keep]
    contract = [c for c in ta if c in tb and c not in keep]
    only_a = [c for c in ta if c not in tb]
    only_b = [c for c in tb if c not in ta]
    # Letters only in one operand and not kept are summed first.
    sa = [i for i, c in enumerate(ta) if c in only_a and c not in keep]
    if sa:
        a = a.sum(sa)
        ta = "".join(c for c in ta if not (c in only_a and c not in keep))
        only_a = [c for c in only_a if c in keep]
    sb = [i for i, c in enumerate(tb) if c in only_b and c not in keep]
    if sb:
        b = b.sum(sb)
        tb = "".join(c for c in tb if not (c in only_b and c not in keep))
        only_b = [c for c in only_b if c in keep]
    a = a.permute([ta.index(c) for c in batch + only_a + contract])
    b = b.permute([tb.index(c) for c in batch + contract + only_b])
    nb, na_, nc = len(batch), len(only_a), len(contract)
    bshape = [max(a.shape[i], b.shape[i]) for i in range(nb)]
    a_free = list(a.shape[nb:nb + na_])
    b_free = list(b.shape[nb + nc:])
    k = 1
    for s in a.shape[nb + na_:]:
        k *= s
    am = a.expand(bshape + list(a.shape[nb:])).reshape(bshape + [_prod(a_free), k])
    bm = b.expand(bshape + list(b.shape[nb:])).reshape(bshape + [k, _prod(b_free)])
    out = am.matmul(bm).reshape(bshape + a_free + b_free)
    return out, "".join(batch + only_a + only_b)


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n
