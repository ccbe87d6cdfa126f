"""Matrix products. All reach BLAS through ``backend.matmul`` (which also keeps float16/bfloat16
exact by multiplying in float32); the composite ones (``tensordot``, ``einsum``) are permutes and
reshapes around ``matmul``, so their gradients come from it."""
from .. import _dtype as dt
from ._dispatch import CompositeBackward, record_composite
from ._dispatch import (Tensor, Node, needs_grad, record, _wrap, device_mismatch, dtype_name,
                        wrap_dim_no_scalar, checked_int_scalar)
from .elementwise import _conj
from .._layout import strided as _STRIDED
from .shape import transposed_gradient

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "inner", "addmm", "addmv",
           "baddbmm", "addbmm", "tensordot", "einsum"]


class MmBackward0(Node):
    """Backward of ``matmul`` for operands of any rank (1-D operands were promoted in forward)."""
    __slots__ = ()

    def backward(self, grad):
        a, b = self.saved_tensors
        a_vec, b_vec = self.a_vec, self.b_vec
        if a_vec and b_vec:
            return (None if b is None else grad * _conj(b)), (None if a is None else grad * _conj(a))
        # Lift vectors to matrices so one rule serves every other case.
        if a_vec:
            a = None if a is None else a.unsqueeze(0)
            grad = grad.unsqueeze(-2)
        if b_vec:
            b = None if b is None else b.unsqueeze(-1)
            grad = grad.unsqueeze(-1)
        ga = gb = None
        if self._edges[0] is not None:
            ga = grad.matmul(_conj(b).mT)
            if a_vec:
                ga = ga.squeeze(-2)
        if self._edges[1] is not None:
            gb = _mat2_grad(a, grad, self.__dict__.get("mat2_transposed"))
            if b_vec:
                gb = gb.squeeze(-1)
        return ga, gb


def _transposed_matrix(t):
    """Whether ``t`` is a matrix stored transposed (``weight.t()``, as ``linear`` passes it)."""
    return t.ndim == 2 and not t.is_contiguous() and t.mT.is_contiguous()


def _mat2_grad(a, grad, mat2_transposed):
    """``a^H @ grad``, laid out like the second operand was (as PyTorch's mm_mat2_backward): for
    a transposed operand it is computed as ``(grad^T @ conj(a))^T``, so the gradient that
    reaches the untransposed tensor (a layer's weight) is contiguous."""
    if mat2_transposed:
        return transposed_gradient(transposed_gradient(grad).matmul(_conj(a)))
    return _conj(a).mT.matmul(grad)


# PyTorch names the node after the kernel a rank combination dispatches to.
class DotBackward0(MmBackward0):
    __slots__ = ()


class MvBackward0(MmBackward0):
    __slots__ = ()


class BmmBackward0(MmBackward0):
    __slots__ = ()


_NODE_BY_RANKS = {(1, 1): DotBackward0, (2, 1): MvBackward0, (3, 3): BmmBackward0}


def _check_operands(a, b, name, arg="other"):
    if not isinstance(b, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position 2) must be Tensor, not "
                        f"{type(b).__name__}")
    if a._device is not b._device:
        raise device_mismatch(a, b)


def _sparse_product(input, other, name, out):
    """``mm``/``matmul`` with a sparse operand (``ember/ops/sparse.py``): a dense result."""
    from . import sparse
    if out is not None:
        raise NotImplementedError(f"{name}: out= with a sparse operand is not supported")
    if input._layout is not _STRIDED:
        return sparse.mm(input, other, name)
    if other.ndim != 2 or input.ndim != 2:
        raise NotImplementedError(f"{name}: Ember multiplies a dense and a sparse tensor as "
                                  f"matrices only, got {input.ndim}-D and {other.ndim}-D")
    return sparse.dense_mm(input, other)


def _check_same_dtype(a, b):
    if a._dtype is dt.bool or b._dtype is dt.bool:
        kernel = "dot" if a._data.ndim == 1 and b._data.ndim == 1 else "addmm_impl_cpu_"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if a._dtype is not b._dtype:
        if a._data.ndim == 1 and b._data.ndim == 1:
            raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                               f"{dtype_name(a._dtype)} and {dtype_name(b._dtype)}")
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_cpp_name(a._dtype)} != {_cpp_name(b._dtype)}")


def _cpp_name(d):
    return {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int", "int16": "short int",
            "int8": "signed char", "uint8": "unsigned char"}.get(d.name, d.name)


def matmul(input, other, *, out=None):
    _check_operands(input, other, "matmul")
    if input._layout is not _STRIDED or other._layout is not _STRIDED:
        return _sparse_product(input, other, "matmul", out)
    a, b = input._data, other._data
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    _check_matmul_shapes(a.shape, b.shape)
    _check_same_dtype(input, other)
    res = _wrap(input._backend.matmul(a, b), input._dtype, input)
    if needs_grad(input, other):
        node_cls = _NODE_BY_RANKS.get((a.ndim, b.ndim), MmBackward0)
        record(node_cls, (input, other), res,
               save=(input if other._requires_grad else None,
                     other if input._requires_grad else None),
               a_vec=a.ndim == 1, b_vec=b.ndim == 1, mat2_transposed=_transposed_matrix(other))
    if out is not None:
        from .inplace import copy_into_out
        return copy_into_out(out, res)
    return res


def _check_matmul_shapes(a_shape, b_shape):
    """PyTorch's errors for ``a @ b``, which depend on how it lowers the product: a batch times
    a matrix or vector folds into one ``mm``/``mv``; otherwise batches broadcast into a ``bmm``."""
    k_a = a_shape[-1]
    k_b = b_shape[-2] if len(b_shape) > 1 else b_shape[0]
    if len(b_shape) <= 2:
        if k_a != k_b:
            raise _shape_error(a_shape, b_shape)
        return
    batch = _broadcast_batch(a_shape[:-2], b_shape[:-2])
    if k_a != k_b:
        n = _prod(batch)
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{n}, {k_a}] but got: [{n}, {k_b}].")


def _broadcast_batch(a_batch, b_batch):
    ndim = max(len(a_batch), len(b_batch))
    a_batch = (1,) * (ndim - len(a_batch)) + tuple(a_batch)
    b_batch = (1,) * (ndim - len(b_batch)) + tuple(b_batch)
    out = []
    for i, (x, y) in enumerate(zip(a_batch, b_batch)):
        if x != y and 1 not in (x, y):
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {i}")
        out.append(max(x, y))
    return out


def _shape_error(a_shape, b_shape):
    if len(a_shape) == 1 and len(b_shape) == 1:
        return RuntimeError(f"inconsistent tensor size, expected tensor [{a_shape[0]}] and src "
                            f"[{b_shape[0]}] to have the same number of elements, but got "
                            f"{a_shape[0]} and {b_shape[0]} elements respectively")
    rows = _prod(a_shape[:-1])
    if len(b_shape) == 1:
        return RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{a_shape[-1]}), vec "
                            f"({b_shape[0]})")
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{a_shape[-1]} and "
                        f"{b_shape[-2]}x{b_shape[-1]})")


def mm(input, mat2, *, out=None):
    if input._layout is not _STRIDED or getattr(mat2, "_layout", _STRIDED) is not _STRIDED:
        return _sparse_product(input, mat2, "mm", out)
    _check_mm_args(input, mat2)
    return matmul(input, mat2, out=out)


def _check_mm_args(input, mat2):
    _check_operands(input, mat2, "mm", "mat2")
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if input.shape[1] != mat2.shape[0]:
        raise _shape_error(input.shape, mat2.shape)


def bmm(input, mat2, *, out=None):
    _check_bmm_args(input, mat2)
    return matmul(input, mat2, out=out)


def _check_bmm_args(input, mat2):
    _check_operands(input, mat2, "bmm", "mat2")
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if (mat2.shape[0], mat2.shape[1]) != (input.shape[0], input.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: "
                           f"[{mat2.shape[0]}, {mat2.shape[1]}].")


def mv(input, vec, *, out=None):
    _check_operands(input, vec, "mv", "vec")
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    return matmul(input, vec, out=out)


def dot(input, other, *, out=None):
    _check_operands(input, other, "dot", "tensor")
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input._dtype is dt.bool:
        raise NotImplementedError("\"dot\" not implemented for 'Bool'")
    return matmul(input, other, out=out)


def vdot(input, other, *, out=None):
    """``dot`` with ``input`` conjugated first."""
    res = record_composite(VdotBackward0, (input, other), lambda a, b: dot(_conj(a), b))
    if out is None:
        return res
    from .inplace import copy_into_out
    return copy_into_out(out, res)


class VdotBackward0(CompositeBackward):
    __slots__ = ()


def outer(input, vec2):
    if input.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return input.reshape(-1, 1) * vec2.reshape(1, -1)


ger = outer


def inner(input, other):
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    return tensordot(input, other, ([-1], [-1]))


# ---------------------------------------------------------------------------------------------
# input * beta + (mat1 @ mat2) * alpha
# ---------------------------------------------------------------------------------------------

class AddmmBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        a, b = self.saved_tensors
        beta, alpha = self.beta, self.alpha
        g_input = g_a = g_b = None
        if self._edges[0] is not None:
            g_input = grad if beta == 1 else grad * beta
        scaled = grad if alpha == 1 else grad * alpha
        if self._edges[1] is not None:
            g_a = scaled.matmul(_conj(b).mT)
        if self._edges[2] is not None:
            g_b = _mat2_grad(a, scaled, self.__dict__.get("mat2_transposed"))
        return g_input, g_a, g_b


class BaddbmmBackward0(AddmmBackward0):
    __slots__ = ()


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    if mat1._layout is not _STRIDED:
        if out is not None:
            raise NotImplementedError("addmm: out= with a sparse operand is not supported")
        from .sparse import addmm as sparse_addmm
        return sparse_addmm(input, mat1, mat2, beta=beta, alpha=alpha)
    _check_add_product(input, mat1, mat2)
    _check_mm_args(mat1, mat2)
    return _add_product(input, mat1, mat2, beta, alpha, AddmmBackward0, out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    _check_add_product(input, batch1, batch2)
    low = min(batch1.ndim, batch2.ndim)
    if low < 3:
        # PyTorch reads batch sizes before checking ranks: fewer than 3 dims is an IndexError.
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(low, 1)}, "
                         f"{max(low, 1) - 1}], but got 2)")
    _check_bmm_args(batch1, batch2)
    return _add_product(input, batch1, batch2, beta, alpha, BaddbmmBackward0, out)


def _check_add_product(input, a, b):
    for other in (a, b):
        if not isinstance(other, Tensor):
            raise TypeError(f"expected Tensor as argument, but got {type(other).__name__}")
        if other._device is not input._device:
            raise device_mismatch(input, other)
    if input._dtype is not a._dtype or input._dtype is not b._dtype:
        odd = a if a._dtype is not input._dtype else b
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{dtype_name(input._dtype)} and {dtype_name(odd._dtype)}")


def _add_product(input, a, b, beta, alpha, node_cls, out):
    """One node for the whole expression. Half precision is computed in float32 and rounded
    once at the end, as PyTorch's CPU kernels do."""
    backend = input._backend
    if input._dtype is dt.bool:
        kernel = "addmm_impl_cpu_" if node_cls is AddmmBackward0 else "baddbmm"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if input._dtype._kind == 1:  # integer products take alpha and beta as that integer type
        beta, alpha = checked_int_scalar(beta, input._dtype), checked_int_scalar(alpha, input._dtype)
    work = dt.float32.np if input._dtype in (dt.float16, dt.bfloat16) else input._dtype.np
    data = backend.matmul(a._data.astype(work, copy=False), b._data.astype(work, copy=False))
    shape = data.shape
    in_shape = input._data.shape
    _check_expandable(in_shape, shape)
    if alpha != 1:
        data = data * alpha
    if beta != 0:  # beta=0 ignores input entirely (its NaNs do not propagate), as in PyTorch
        c = input._data.astype(work, copy=False)
        data = data + (c if beta == 1 else c * beta)
    res = _wrap(data.astype(input._dtype.np, copy=False), input._dtype, input)
    if needs_grad(input, a, b):
        record(node_cls, (input, a, b), res,
               save=(a if b._requires_grad else None, b if a._requires_grad else None),
               beta=beta, alpha=alpha, mat2_transposed=_transposed_matrix(b))
    if out is not None:
        from .inplace import copy_into_out
        return copy_into_out(out, res)
    return res


def _check_expandable(shape, target):
    if len(shape) > len(target):
        raise RuntimeError(f"The expanded size of the tensor ({len(target)}) must be greater or "
                           f"equal to the number of dimensions in the tensor ({len(shape)})")
    offset = len(target) - len(shape)
    for i, (s, t) in enumerate(zip(shape, target[offset:])):
        if s != t and s != 1:
            raise RuntimeError(f"The expanded size of the tensor ({t}) must match the existing "
                               f"size ({s}) at non-singleton dimension {i + offset}.  Target "
                               f"sizes: {list(target)}.  Tensor sizes: {list(shape)}")


def addmv(input, mat, vec, *, beta=1, alpha=1):
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    product = bmm(batch1, batch2)
    return _scaled_sum(input, product.sum(0, dtype=product.dtype), beta, alpha)


def _scaled_sum(input, prod, beta, alpha):
    if prod._dtype._kind == 1:
        beta, alpha = checked_int_scalar(beta, prod._dtype), checked_int_scalar(alpha, prod._dtype)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return prod + (input if beta == 1 else input * beta)


# ---------------------------------------------------------------------------------------------
# tensordot and einsum: contractions lowered to matmul
# ---------------------------------------------------------------------------------------------

def tensordot(a, b, dims=2, out=None):
    if isinstance(dims, Tensor):
        dims = dims.tolist() if dims.ndim else int(dims.item())
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a = list(range(a.ndim - dims, a.ndim))
        dims_b = list(range(dims))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
        if len(dims_a) != len(dims_b):
            raise RuntimeError("both dimension lists should have same length")
    dims_a = [wrap_dim_no_scalar(d, a.ndim) for d in dims_a]
    dims_b = [wrap_dim_no_scalar(d, b.ndim) for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[da]} in dim {da} and second has size {b.shape[db]} "
                               f"in dim {db}")
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    k = _prod(a.shape[d] for d in dims_a)
    am = a.permute(free_a + dims_a).reshape(-1, k)
    bm = b.permute(dims_b + free_b).reshape(k, -1)
    out_shape = [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b]
    res = am.matmul(bm).reshape(out_shape)
    if out is not None:
        from .inplace import copy_into_out
        return copy_into_out(out, res)
    return res


# Ellipsis dimensions get labels outside the ASCII letters, so they never clash with the user's.
_ELLIPSIS_LABELS = [chr(0x100 + i) for i in range(64)]


def einsum(equation, *operands):
    """``einsum`` as differentiable diagonal/sum/permute/reshape steps around ``matmul``:
    operands are contracted left to right, so every contraction reaches BLAS."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, rhs = _parse_einsum(equation, operands)
    # Summing an integer operand promotes it to int64, as in PyTorch; operands that differ in
    # dtype to begin with are refused by the product.
    same_dtype = all(op._dtype is operands[0]._dtype for op in operands)
    ops = [_take_repeated_diagonals(op, t, i) for i, (op, t) in enumerate(zip(operands, terms))]
    _check_einsum_sizes(ops)
    # A label that appears in one operand only and not in the output is summed right away.
    for i, (op, t) in enumerate(ops):
        elsewhere = set(rhs).union(*(tt for j, (_, tt) in enumerate(ops) if j != i))
        ops[i] = _sum_labels(op, t, [c for c in t if c not in elsewhere])
    cur, cur_t = ops[0]
    for i in range(1, len(ops)):
        keep = set(rhs).union(*(t for _, t in ops[i + 1:]))
        op, t = ops[i]
        cur, cur_t = _contract_pair(cur, cur_t, op, t, keep, same_dtype)
    perm = [cur_t.index(c) for c in rhs]
    return cur.permute(perm) if perm != list(range(len(perm))) else cur


def _parse_einsum(equation, operands):
    """Per-operand label strings (ellipses expanded) and the output labels."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(operands) < len(terms):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(operands) > len(terms):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    for op in operands:
        if not isinstance(op, Tensor):
            raise TypeError(f"einsum(): operands must be Tensors, got {type(op).__name__}")
    for c in eq:
        if not (c.isascii() and c.isalpha()) and c not in ".,->":
            raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(c)} in the "
                               f"equation string, subscripts must be in [a-zA-Z]")
    ell_ndim = 0
    expanded = []
    for i, (t, op) in enumerate(zip(terms, operands)):
        explicit = len(t) - 3 if "..." in t else len(t)
        if "..." not in t and explicit != op.ndim or explicit > op.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({explicit}) "
                               f"does not match the number of dimensions ({op.ndim}) for operand "
                               f"{i}{'' if '...' in t else ' and no ellipsis was given'}")
        n = op.ndim - explicit if "..." in t else 0
        ell_ndim = max(ell_ndim, n)
        # The ellipsis dims of an operand broadcast against the trailing ellipsis labels.
        expanded.append((t, n))
    ell = "".join(_ELLIPSIS_LABELS[:ell_ndim])
    terms = [t.replace("...", ell[ell_ndim - n:]) for t, n in expanded]
    if arrow:
        for c in rhs.replace("...", ""):
            if not any(c in t for t in terms):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   f"equation for any input operand")
            if rhs.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the "
                                   f"output")
        rhs = rhs.replace("...", ell)
    else:
        counts = {}
        for t in terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return terms, rhs


def _take_repeated_diagonals(op, t, index):
    """A label repeated inside one operand ('ii') selects that operand's diagonal."""
    for c in dict.fromkeys(t):
        while t.count(c) > 1:
            i = t.index(c)
            j = t.index(c, i + 1)
            if op.shape[i] != op.shape[j]:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {index} but "
                                   f"the sizes don't match, {op.shape[j]} != {op.shape[i]}")
            op = op.diagonal(0, i, j)
            t = t[:i] + t[i + 1:j] + t[j + 1:] + c
    return op, t


def _check_einsum_sizes(ops):
    sizes = {}
    for i, (op, t) in enumerate(ops):
        for c, s in zip(t, op.shape):
            seen = sizes.get(c, 1)
            if s != seen and 1 not in (s, seen):
                if c in _ELLIPSIS_LABELS:
                    # (PyTorch's message lacks the space before "has".)
                    dim = _ELLIPSIS_LABELS.index(c)
                    raise RuntimeError(f"einsum(): dimension {dim} covered by "
                                       f"ellipsis in operand {i}has size {s} which does not "
                                       f"broadcast with previously seen ellipsis with size {seen} "
                                       f"for the respective dimension")
                raise RuntimeError(f"einsum(): subscript {c} has size {s} for operand {i} which "
                                   f"does not broadcast with previously seen size {seen}")
            sizes[c] = max(seen, s) if s != 1 else seen


def _sum_labels(op, t, labels):
    if not labels:
        return op, t
    op = op.sum([t.index(c) for c in labels])
    return op, "".join(c for c in t if c not in labels)


def _contract_pair(a, ta, b, tb, keep, promote):
    a, ta = _sum_labels(a, ta, [c for c in ta if c not in tb and c not in keep])
    b, tb = _sum_labels(b, tb, [c for c in tb if c not in ta and c not in keep])
    batch = [c for c in ta if c in tb and c in keep]
    contract = [c for c in ta if c in tb and c not in keep]
    # A contracted label of size 1 on one side broadcasts: sum the other side over it first.
    for c in contract:
        size_a, size_b = a.shape[ta.index(c)], b.shape[tb.index(c)]
        if size_a == 1 and size_b != 1:
            b = b.sum(tb.index(c), keepdim=True)
        elif size_b == 1 and size_a != 1:
            a = a.sum(ta.index(c), keepdim=True)
    if a._dtype is not b._dtype and promote:  # an integer operand summed above is int64
        common = dt.promote_types(a._dtype, b._dtype)
        a, b = a.to(common), b.to(common)
    only_a = [c for c in ta if c not in tb]
    only_b = [c for c in tb if c not in ta]
    a = a.permute([ta.index(c) for c in batch + only_a + contract])
    b = b.permute([tb.index(c) for c in batch + contract + only_b])
    nb, na = len(batch), len(only_a)
    a_batch, b_batch = list(a.shape[:nb]), list(b.shape[:nb])
    a_free, b_free = list(a.shape[nb:nb + na]), list(b.shape[nb + len(contract):])
    k = _prod(a.shape[nb + na:])
    am = a.reshape(a_batch + [_prod(a_free), k])
    bm = b.reshape(b_batch + [k, _prod(b_free)])
    out_batch = [max(x, y) for x, y in zip(a_batch, b_batch)]
    # Without a contracted label the product is an outer product: a broadcast multiply, which
    # (as in PyTorch) bool operands support and a matrix product does not.
    out = am.matmul(bm) if contract else am * bm
    out = out.reshape(out_batch + a_free + b_free)
    return out, "".join(batch + only_a + only_b)


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n
