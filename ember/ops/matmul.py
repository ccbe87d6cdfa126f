"""Matrix products. All reach BLAS through ``backend.matmul`` (which also keeps float16/bfloat16
exact by multiplying in float32). The kernels (``dot``, ``mv``, ``mm``, ``bmm``) are one node
each; ``matmul`` and ``einsum`` are ATen's composites over them, step for step, so their graphs
are PyTorch's and their gradients come from the kernels and views they are made of."""
from .. import _dtype as dt
from ._dispatch import CompositeBackward, record_composite
from ._dispatch import (Tensor, Node, needs_grad, record, _wrap, device_mismatch, dtype_name,
                        wrap_dim_no_scalar, checked_int_scalar)
from ._dispatch import check_same_device as _check_same_device
from .elementwise import _conj, _scaled, fill, logical_and, logical_or
from .._layout import strided as _STRIDED
from .shape import transposed_gradient, unsafe_view, SqueezeBackward4
from ..amp import autocast_mode as _autocast

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "inner", "addmm", "addmv",
           "baddbmm", "addbmm", "tensordot", "einsum", "kron", "addr"]
METHODS = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "inner", "addmm", "addmv",
           "baddbmm", "addbmm", "kron", "addr"]
INPLACE = ["addbmm", "addmm", "addmv", "baddbmm", "addr"]


class MmBackward0(Node):
    """Backward of the product kernels (``dot``, ``mv``, ``mm``, ``bmm``): vector operands are
    lifted to matrices so one rule serves every rank."""
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

    def jvp(self, ta, tb):
        # d(a b) = da b + a db; for these kernels' ranks matmul is the kernel itself
        a, b = self.saved_tensors
        return _product_tangent(a, b, ta, tb)


def _product_tangent(a, b, ta, tb):
    out = None if ta is None else ta.matmul(b)
    if tb is not None:
        term = a.matmul(tb)
        out = term if out is None else out + term
    return out


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


# The ranks ``matmul`` hands straight to one kernel, as ATen's composite does.
_NODE_BY_RANKS = {(1, 1): DotBackward0, (2, 1): MvBackward0, (2, 2): MmBackward0}


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


def _check_kernel_dtypes(a, b, node_cls):
    """The dtype errors of the kernel ``node_cls`` names (its operands must share a dtype)."""
    # bmm dispatches on its first operand's dtype before comparing; the others compare first.
    if a._dtype is dt.bool and (a._dtype is b._dtype or node_cls is BmmBackward0):
        raise NotImplementedError(f"\"{_KERNEL_NAMES[node_cls]}\" not implemented for 'Bool'")
    if node_cls is DotBackward0:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{dtype_name(a._dtype)} and {dtype_name(b._dtype)}")
    if node_cls is MvBackward0:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{dtype_name(b._dtype)}, {dtype_name(a._dtype)}, and "
                           f"{dtype_name(b._dtype)}")
    if node_cls is BmmBackward0:
        raise RuntimeError(f"expected scalar type {dtype_name(a._dtype)} but found "
                           f"{dtype_name(b._dtype)}")
    raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                       f"{_cpp_name(a._dtype)} != {_cpp_name(b._dtype)}")


_KERNEL_NAMES = {DotBackward0: "dot", MvBackward0: "addmv_impl_cpu",
                 MmBackward0: "addmm_impl_cpu_", BmmBackward0: "bmm"}


def _product(input, other, node_cls):
    """The kernel of ``dot``, ``mv``, ``mm`` and ``bmm`` (``node_cls`` says which): one
    backend product and one node. Shapes are checked by the caller."""
    if input._dtype is not other._dtype or input._dtype is dt.bool:
        _check_kernel_dtypes(input, other, node_cls)
    a, b = input._data, other._data
    res = _wrap(input._backend.matmul(a, b), input._dtype, input)
    if needs_grad(input, other):
        record(node_cls, (input, other), res,
               save=(input if other._requires_grad else None,
                     other if input._requires_grad else None),
               a_vec=a.ndim == 1, b_vec=b.ndim == 1, mat2_transposed=_transposed_matrix(other))
    return res


def _into_out(res, out):
    if out is None:
        return res
    from .inplace import copy_into_out
    return copy_into_out(out, res)


def _cpp_name(d):
    return dt.TYPE_META_NAMES[d.name]


def matmul(input, other, *, out=None):
    """PyTorch's ``matmul``, the ATen composite over ``dot``/``mv``/``mm``/``bmm``
    (``_matmul_impl``). Without a graph to record, a product of other ranks is one backend
    call; with one, it is the composite's own chain of views and kernels, so the graph is
    PyTorch's."""
    if _autocast.active and _autocast.enabled_for(input, "matmul"):
        return _autocast.run(matmul, "matmul", input, other, out=out)
    _check_operands(input, other, "matmul")
    if input._layout is not _STRIDED or other._layout is not _STRIDED:
        return _sparse_product(input, other, "matmul", out)
    a, b = input._data, other._data
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    _check_matmul_shapes(a.shape, b.shape)
    if out is not None and needs_grad(input, other, out):
        raise RuntimeError("matmul(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    kernel = _NODE_BY_RANKS.get((a.ndim, b.ndim))
    if kernel is not None:
        res = _product(input, other, kernel)
    elif (needs_grad(input, other) or input._dtype is not other._dtype
          or input._dtype is dt.bool):  # (the composite raises the dtype error of its kernel)
        res = _matmul_impl(input, other)
    else:
        res = _wrap(input._backend.matmul(a, b), input._dtype, input)
    return _into_out(res, out)


def _matmul_impl(tensor1, tensor2):
    """ATen's ``_matmul_impl``, step for step: a vector times a matrix is ``unsqueeze``,
    ``mm``, ``squeeze_``; a batch times a matrix or vector is folded into one ``mm``/``mv``;
    the rest broadcasts the batches (``expand``), flattens them and calls ``bmm``."""
    d1, d2 = tensor1._data.ndim, tensor2._data.ndim
    kernel = _NODE_BY_RANKS.get((d1, d2))
    if kernel is not None:
        return _product(tensor1, tensor2, kernel)
    if d1 == 1 and d2 == 2:
        product = _product(tensor1.unsqueeze(0), tensor2, MmBackward0)
        return unsafe_view(product, product._data.shape[1:], SqueezeBackward4)
    if _should_fold(tensor1, tensor2):
        transpose = d2 > d1
        t1 = tensor2.mT if transpose else tensor1
        t2 = (tensor1.t() if d1 == 2 else tensor1) if transpose else tensor2
        out_shape = t1._data.shape[:-1]
        t1_folded = t1.reshape(_prod(out_shape), t1._data.shape[-1])
        if t2._data.ndim == 1:
            return unsafe_view(_product(t1_folded, t2, MvBackward0), out_shape)
        output = unsafe_view(_product(t1_folded, t2, MmBackward0),
                             out_shape + (t2._data.shape[1],))
        return output.mT.contiguous() if transpose else output
    shape1, shape2 = tensor1._data.shape, tensor2._data.shape
    n = shape1[-2] if d1 > 1 else 1
    m1 = shape1[-1]
    batch1 = shape1[:-2]
    m2 = shape2[-2] if d2 > 1 else shape2[0]
    p = shape2[-1] if d2 > 1 else 1
    batch2 = shape2[:-2]
    if d1 == 3 and d2 == 3 and batch1[0] != batch2[0]:
        # A batch of one that needs a gradient is squeezed rather than expanded.
        if batch1[0] == 1 and tensor1._requires_grad:
            return _matmul_impl(tensor1.squeeze(0), tensor2)
        if batch2[0] == 1 and tensor2._requires_grad:
            return _matmul_impl(tensor1, tensor2.squeeze(0))
    batch = tuple(_broadcast_batch(batch1, batch2))
    flat = _prod(batch)
    left = tensor1.expand(batch + (n, m1)).reshape(flat, n, m1)
    if d2 == 1:
        right = tensor2.expand(batch + (m2,)).reshape(flat, m2).unsqueeze(2)
        product = _product(left, right, BmmBackward0).squeeze(-1)
    else:
        right = tensor2.expand(batch + (m2, p)).reshape(flat, m2, p)
        product = _product(left, right, BmmBackward0)
    out_shape = batch + ((n,) if d1 > 1 else ()) + ((p,) if d2 > 1 else ())
    return unsafe_view(product, out_shape)


def _should_fold(tensor1, tensor2):
    """ATen's choice of folding the larger operand's batch into the rows of one ``mm``/``mv``:
    when the smaller operand needs a gradient (its gradient is then one product, not a sum
    over a broadcast batch), or when the fold needs no copy."""
    d1, d2 = tensor1._data.ndim, tensor2._data.ndim
    larger, smaller = (tensor1, tensor2) if d1 >= d2 else (tensor2, tensor1)
    if not (larger._data.ndim >= 3 and smaller._data.ndim <= 2):
        return False
    if smaller._requires_grad:
        return True
    if d1 == 2:
        return False
    if larger._data.size == 0:
        return True
    shape, strides = list(larger.shape), list(larger.stride())
    if d2 > d1:  # the fold is of tensor2.mT
        shape[-2:], strides[-2:] = shape[:-3:-1], strides[:-3:-1]
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


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
        out.append(y if x == 1 else x)  # not max(): a size 1 broadcasts to a size 0 too
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
    if _autocast.active and _autocast.enabled_for(input, "mm"):
        return _autocast.run(mm, "mm", input, mat2, out=out)
    if input._layout is not _STRIDED or getattr(mat2, "_layout", _STRIDED) is not _STRIDED:
        return _sparse_product(input, mat2, "mm", out)
    _check_mm_args(input, mat2)
    return _into_out(_product(input, mat2, MmBackward0), out)


def _check_mm_args(input, mat2):
    _check_operands(input, mat2, "mm", "mat2")
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if input.shape[1] != mat2.shape[0]:
        raise _shape_error(input.shape, mat2.shape)


def bmm(input, mat2, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "bmm"):
        return _autocast.run(bmm, "bmm", input, mat2, out=out)
    _check_bmm_args(input, mat2)
    return _into_out(_product(input, mat2, BmmBackward0), out)


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
    if _autocast.active and _autocast.enabled_for(input, "mv"):
        return _autocast.run(mv, "mv", input, vec, out=out)
    _check_operands(input, vec, "mv", "vec")
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    if input.shape[1] != vec.shape[0]:
        raise _shape_error(input.shape, vec.shape)
    return _into_out(_product(input, vec, MvBackward0), out)


def dot(input, other, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "dot"):
        return _autocast.run(dot, "dot", input, other, out=out)
    _check_operands(input, other, "dot", "tensor")
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input._dtype is not other._dtype:  # PyTorch checks dtypes before sizes here
        _check_kernel_dtypes(input, other, DotBackward0)
    if input.shape[0] != other.shape[0]:
        raise _shape_error(input.shape, other.shape)
    return _into_out(_product(input, other, DotBackward0), out)


def vdot(input, other, *, out=None):
    """``dot`` with ``input`` conjugated first."""
    if _autocast.active and _autocast.enabled_for(input, "vdot"):
        return _autocast.run(vdot, "vdot", input, other, out=out)
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
    # As ATen's composite: a column of ``input`` broadcast against ``vec2`` itself.
    return input.reshape(input.shape[0], 1) * vec2


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

    def jvp(self, t_input, ta, tb):
        a, b = self.saved_tensors
        product = _product_tangent(a, b, ta, tb)
        if product is not None and self.alpha != 1:
            product = product * self.alpha
        if t_input is not None and self.beta != 0:
            t_input = t_input if self.beta == 1 else t_input * self.beta
            return t_input if product is None else product + t_input
        return product


class BaddbmmBackward0(AddmmBackward0):
    __slots__ = ()


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    if _autocast.active and _autocast.enabled_for(input, "addmm"):
        return _autocast.run(addmm, "addmm", input, mat1, mat2, beta=beta, alpha=alpha, out=out)
    if mat1._layout is not _STRIDED:
        if out is not None:
            raise NotImplementedError("addmm: out= with a sparse operand is not supported")
        from .sparse import addmm as sparse_addmm
        return sparse_addmm(input, mat1, mat2, beta=beta, alpha=alpha)
    _check_add_product(input, mat1, mat2)
    _check_mm_args(mat1, mat2)
    return _add_product(input, mat1, mat2, beta, alpha, AddmmBackward0, out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    if _autocast.active and _autocast.enabled_for(input, "baddbmm"):
        return _autocast.run(baddbmm, "baddbmm", input, batch1, batch2, beta=beta, alpha=alpha,
                             out=out)
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
    if _autocast.active and _autocast.enabled_for(input, "addmv"):
        return _autocast.run(addmv, "addmv", input, mat, vec, beta=beta, alpha=alpha)
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    if _autocast.active and _autocast.enabled_for(input, "addbmm"):
        return _autocast.run(addbmm, "addbmm", input, batch1, batch2, beta=beta, alpha=alpha)
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
    if _autocast.active and _autocast.enabled_for(a, "tensordot"):
        return _autocast.run(tensordot, "tensordot", a, b, dims, out)
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
    """ATen's ``einsum``, step for step (so the graph is PyTorch's): each operand takes the
    diagonal of a repeated label, gains a size-1 dim for each label it lacks and is permuted
    to one common order (output labels, then contracted ones); operands are then contracted
    left to right by ``_sum_product`` (a ``bmm`` between permutes and views), each label
    summed as soon as no later operand has it."""
    if _autocast.active and _autocast.enabled_for(operands, "einsum"):
        return _autocast.run(einsum, "einsum", equation, *operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    terms, rhs = _parse_einsum(equation, operands)
    for op in operands[1:]:
        if op._device is not operands[0]._device:
            raise device_mismatch(operands[0], op)
    # Dims of the common order: the output's, then the ellipsis if the output lacks it, then
    # each contracted label (upper case before lower, as PyTorch numbers them).
    labels = set("".join(terms))
    ell = [c for c in _ELLIPSIS_LABELS if c in labels]
    order = (list(rhs) + [c for c in ell if c not in rhs]
             + sorted(c for c in labels if c not in rhs and c not in ell))
    position = {c: i for i, c in enumerate(order)}
    out_ndim = len(rhs)
    # How many operands have each dim with a size other than 1.
    counts = [0] * len(order)
    sizes = {}
    ops = [_aligned_operand(op, t, i, position, counts, sizes)
           for i, (op, t) in enumerate(zip(operands, terms))]
    while len(ops) > 1:
        a, b = ops[0], ops[1]
        sum_dims, a_sums, b_sums = [], [], []
        for d in range(out_ndim, len(order)):
            size_a, size_b = a._data.shape[d], b._data.shape[d]
            if size_a != 1 and size_b != 1:
                counts[d] -= 1
                if counts[d] == 1:  # no later operand has it: contract it in this product
                    sum_dims.append(d)
                    counts[d] = 0
            elif counts[d] == 1:  # only one of the two has it: sum it there first
                if size_a != 1:
                    a_sums.append(d)
                    counts[d] = 0
                elif size_b != 1:
                    b_sums.append(d)
                    counts[d] = 0
        if a_sums:
            a = a.sum(a_sums, True)
        if b_sums:
            b = b.sum(b_sums, True)
        ops = [_sum_product(a, b, sum_dims)] + ops[2:]
    result = ops[0]
    if len(order) == out_ndim:
        return result
    if len(operands) > 1:  # the contracted dims are all of size 1 by now
        return result.view(result.shape[:out_ndim])
    return result.sum(list(range(out_ndim, len(order))))


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


def _aligned_operand(op, term, index, position, counts, sizes):
    """Operand ``index`` with labels ``term`` laid out in the common order of ``position``:
    a repeated label's diagonal (moved back where the label first was), a size-1 dim for each
    missing label, then one permute. Checks that sizes broadcast and counts each label's
    dims of size other than 1 into ``counts``."""
    permutation = [-1] * len(position)
    dim = 0
    for c in term:
        p = position[c]
        if permutation[p] == -1:
            size = op._data.shape[dim]
            if size != 1:
                seen = sizes.get(c, 1)
                if seen not in (1, size):
                    raise _einsum_size_error(c, dim, index, size, seen)
                sizes[c] = size
                counts[p] += 1
            permutation[p] = dim
            dim += 1
        else:
            first = permutation[p]
            if op._data.shape[dim] != op._data.shape[first]:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {index} "
                                   f"but the sizes don't match, {op._data.shape[dim]} != "
                                   f"{op._data.shape[first]}")
            op = op.diagonal(0, first, dim).movedim(-1, first)
    for p, d in enumerate(permutation):
        if d == -1:
            op = op.unsqueeze(dim)
            permutation[p] = dim
            dim += 1
    return op.permute(permutation)


def _einsum_size_error(label, dim, index, size, seen):
    if label in _ELLIPSIS_LABELS:
        # (PyTorch's message lacks the space before "has".)
        return RuntimeError(f"einsum(): dimension {dim} covered by ellipsis in operand "
                            f"{index}has size {size} which does not broadcast with previously "
                            f"seen ellipsis with size {seen} for the respective dimension")
    return RuntimeError(f"einsum(): subscript {label} has size {size} for operand {index} "
                        f"which does not broadcast with previously seen size {seen}")


def _sum_product(left, right, sum_dims):
    """``(left * right).sum(sum_dims, keepdim=True)`` for operands of the same rank whose
    dims broadcast, as ATen's ``sumproduct_pair``: a broadcast ``mul`` when nothing is
    summed, otherwise one ``bmm`` over dims grouped as (in both, left only, summed, right
    only), viewed and permuted back to the operands' order."""
    if not sum_dims:
        return left * right
    summed = set(sum_dims)
    both, left_only, right_only = [], [], []
    sum_size = 1
    for d in range(left._data.ndim):
        size_l, size_r = left._data.shape[d], right._data.shape[d]
        if d in summed:
            if size_l != 1 and size_r != 1:
                sum_size *= size_l
            elif size_l != 1:
                left = left.sum(d, True)
            elif size_r != 1:
                right = right.sum(d, True)
        elif size_l != 1 and size_r != 1:
            both.append(d)
        elif size_l != 1:
            left_only.append(d)
        else:
            right_only.append(d)
    if left_only and right_only and right_only[-1] < left_only[0]:
        # The right operand's dims all come first: swapped, bmm writes them in that order.
        left, right, left_only, right_only = right, left, right_only, left_only
    l_shape, r_shape = left._data.shape, right._data.shape
    out_size = ([l_shape[d] for d in both + left_only] + [1] * len(sum_dims)
                + [r_shape[d] for d in right_only])
    out_order = both + left_only + sum_dims + right_only
    inverse = [0] * len(out_order)
    for i, d in enumerate(out_order):
        inverse[d] = i
    n_both = _prod(l_shape[d] for d in both)
    left = left.permute(out_order).reshape(n_both, _prod(l_shape[d] for d in left_only), sum_size)
    right = right.permute(both + sum_dims + right_only + left_only).reshape(
        n_both, sum_size, _prod(r_shape[d] for d in right_only))
    # bmm itself, not its kernel: under autocast this product is the op ATen's einsum reaches
    return bmm(left, right).view(out_size).permute(inverse)


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


# ---------------------------------------------------------------------------------------------
# The Kronecker product
# ---------------------------------------------------------------------------------------------

def kron(input, other):
    if input._device is not other._device:
        raise device_mismatch(input, other)
    nd = max(input.ndim, other.ndim)
    a_shape = (1,) * (nd - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (nd - other.ndim) + tuple(other.shape)
    # a[i1, i2, ...] * b[j1, j2, ...] laid out as (i1, j1, i2, j2, ...): one broadcast product,
    # between ATen's _unsafe_view reshapes (its graph).
    a = unsafe_view(input, tuple(x for s in a_shape for x in (s, 1)))
    b = unsafe_view(other, tuple(x for s in b_shape for x in (1, s)))
    product = a * b
    return unsafe_view(product, tuple(p * q for p, q in zip(a_shape, b_shape)))


# ---------------------------------------------------------------------------------------------
# addr: input + outer product
# ---------------------------------------------------------------------------------------------

def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    if _autocast.active and _autocast.enabled_for(input, "addr"):
        return _autocast.run(addr, "addr", input, vec1, vec2, beta=beta, alpha=alpha, out=out)
    _check_same_device(input, vec1, vec2)
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v._data.ndim}-D")
    from .creation import zeros_like
    rt = dt.promote_types(dt.promote_types(input._dtype, vec1._dtype), vec2._dtype)
    for name, scalar in (("beta", beta), ("alpha", alpha)):
        if rt._kind <= 1 and isinstance(scalar, float):
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                               "floating point number.")
    if all(t._dtype is dt.bool for t in (input, vec1, vec2)):
        input = input.expand(vec1._data.shape[0], vec2._data.shape[0])
        # PyTorch's boolean addr: (beta and input) or (alpha and vec1 outer vec2)
        prod = logical_and(vec1.unsqueeze(1), vec2.unsqueeze(0))
        res = logical_or(prod if alpha else zeros_like(prod),
                         input if beta else zeros_like(input))
    else:
        # the outer product is taken in the result dtype (a uint8 one against a float input
        # does not wrap around)
        def composition(input, vec1, vec2):
            input = input.expand(vec1._data.shape[0], vec2._data.shape[0])
            product = outer(vec1.to(rt), vec2.to(rt))
            if beta == 0:
                # beta == 0 ignores input entirely (NaN and infinity included), as in PyTorch.
                return _scaled(product, alpha) + fill(input, 0)
            return _scaled(input, beta) + _scaled(product, alpha)
        res = record_composite(AddrBackward0, (input, vec1, vec2), composition)
    return _into_out(res, out)


class AddrBackward0(CompositeBackward):
    __slots__ = ()
