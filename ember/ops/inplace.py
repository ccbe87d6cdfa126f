"""In-place ops with PyTorch's autograd rules.

An in-place op computes its result out of place (through the ordinary, differentiable op), then
writes it into the tensor's memory and bumps the shared version counter. When the graph is being
recorded, the tensor takes over the result's history; a view written in place gives its base a
``CopySlices`` node, so gradients reach both the base's old history and the written value. Every
other live view of that base then replays itself on the base, so its ``grad_fn`` sees the write
(PyTorch does the same lazily, on the next access of the view's ``grad_fn``).
"""
from .. import _dtype as dt
from .._layout import strided as _STRIDED
from . import _dispatch
from ._dispatch import Tensor, Node, record, needs_grad, _wrap, dtype_name, device_mismatch
from ..autograd import forward_ad as _forward_ad
from ..autograd.grad_mode import _state as _grad_state
from ..amp import autocast_mode as _autocast

__all__ = ["fill_", "zero_"]
METHODS = ["copy_", "fill_", "zero_"]
INPLACE = []


def check_inplace(self):
    if not _grad_state.enabled:
        return
    if self._requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    base = self._base
    if base is not None and base._requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if base is not None and base._requires_grad and not self._requires_grad:
        raise RuntimeError(
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You "
            "can clarify your code by moving both the view and the inplace either both inside the "
            "no_grad block (if you don't want the inplace to be tracked) or both outside (if you "
            "want the inplace to be tracked).")
    if base is not None and self._requires_grad and self.grad_fn is not None \
            and self.grad_fn.num_outputs > 1:
        raise RuntimeError(
            f"Output {self._output_nr} of {self.grad_fn.name()} is a view and is being modified "
            "inplace. This view is the output of a function that returns multiple views. Such "
            "functions do not allow the output views to be modified inplace. You should replace "
            "the inplace operation by an out-of-place one.")


def _recording(self, args):
    if _dispatch._dual_active and _forward_ad.any_tangent(
            [self] + [a for a in args if isinstance(a, Tensor)]):
        return True  # the out-of-place op computes the tangent the write then carries over
    if not _grad_state.enabled:
        return False
    if self._requires_grad or (self._base is not None and self._base._requires_grad):
        return True
    for a in args:
        if isinstance(a, Tensor) and a._requires_grad:
            return True
    return False


def _snapshot(self):
    """A copy of ``self``'s values that carries ``self``'s autograd identity: the out-of-place op
    may save its input for backward (PyTorch saves a clone of the original ``self`` then), and
    ``self`` is about to be overwritten."""
    snap = _wrap(self._data.copy(), self._dtype, self)
    if self._fw_grad is not None:
        _forward_ad.set_tangent(snap, self._fw_grad)
    snap._requires_grad = self._requires_grad
    snap.grad_fn = self.grad_fn
    if self._output_nr:
        snap._output_nr = self._output_nr
    return snap


#: op function -> the array ufunc that computes it, for ops whose in-place form may write
#: straight into the tensor's memory when nothing is recorded (filled by ``ops/__init__``).
UFUNC_OF = {}
_SCALARS = (int, float)


def inplace(self, fn, *args, **kwargs):
    """Run ``fn(self, *args, **kwargs)`` out of place and write the result into ``self``."""
    if _autocast.active and _autocast.enabled_for(self, None):
        # PyTorch's autocast lists no in-place op: ``x.index_copy_`` is not ``index_copy``'s
        return _autocast.run_excluded(inplace, self, fn, *args, **kwargs)
    check_inplace(self)
    if _recording(self, args):
        result = fn(_snapshot(self), *args, **kwargs)
    else:
        ufunc = UFUNC_OF.get(fn)
        if ufunc is not None and len(args) == 1 and _ufunc_in_place(self, ufunc, args[0], kwargs):
            return self
        result = fn(self, *args, **kwargs)
    return write_result(self, result)


def _ufunc_in_place(self, ufunc, other, kwargs):
    """``self <ufunc>= other`` computed into ``self``'s own memory (``out=``), skipping the
    temporary and the copy of the general path; False where that would not be exactly the
    general path's result (integer or mixed dtypes, broadcasting ``self``, overlapping memory).
    Optimizer updates (``p.add_(g, alpha=-lr)``, ``p -= lr * g``) take this path."""
    alpha = kwargs.get("alpha", 1)
    if len(kwargs) > ("alpha" in kwargs) or self._dtype._kind != 2:
        return False
    data = self._data
    if 0 in data.strides and data.size > 1:
        return False
    if isinstance(other, Tensor):
        if other._dtype is not self._dtype or other._device is not self._device:
            return False
        if other._layout is not _STRIDED:  # dense += sparse: a scatter-add of the stored values
            if ufunc not in ("add", "subtract") or other._data.shape != data.shape:
                return False
            from .sparse import scatter_add_into
            scatter_add_into(data, other, alpha if ufunc == "add" else -alpha)
            self._bump_version()
            return True
        shape, target = other._data.shape, data.shape
        if len(shape) > len(target) or any(o != t and o != 1 for o, t in
                                           zip(reversed(shape), reversed(target))):
            return False
        operand = other._data if alpha == 1 else other._data * alpha
    elif type(other) in _SCALARS and type(alpha) in _SCALARS:
        operand = other * alpha
    else:
        return False
    getattr(self._backend.xp, ufunc)(data, operand, out=data)
    self._bump_version()
    return True


def _store(self, data, allow_overlap=False):
    """``self[...] = data``. Like PyTorch, only a fill may write into memory that several elements
    of ``self`` share (an expanded tensor)."""
    target = self._data
    # An empty array may report stride 0 (NumPy's choice); it has no element to overlap.
    if not allow_overlap and target.size and any(
            stride == 0 and size > 1 for size, stride in zip(target.shape, target.strides)):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor "
                           "refers to a single memory location. Please clone() the tensor before "
                           "performing the operation.")
    target[...] = data
    self._bump_version()


def write_result(self, result, allow_overlap=False, written=None):
    """Write ``result`` into ``self``'s memory; rebase ``self``'s history on ``result``'s.
    ``written`` (``copy_``'s source) is what a view's region takes its gradient from instead:
    as in PyTorch, the base's ``CopySlices`` then has the source's own edge, not the copy's."""
    if result._device is not self._device:
        raise device_mismatch(self, result)
    if result._layout is not _STRIDED:  # dense.mul_(sparse): the dense tensor takes it densified
        result = result.to_dense()
    if result._data.shape != self._data.shape:
        try:
            result = result.expand(self._data.shape)
        except RuntimeError:
            raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                               f"broadcast shape {list(result._data.shape)}") from None
    if result._dtype is not self._dtype:
        if not dt.can_cast(result._dtype, self._dtype):
            raise RuntimeError(f"result type {dtype_name(result._dtype)} can't be cast to the "
                               f"desired output type {dtype_name(self._dtype)}")
        result = result.to(self._dtype)
    _store(self, result._data, allow_overlap)
    if _dispatch._dual_active and (self._fw_grad is not None or result._fw_grad is not None):
        _forward_ad.write_tangent(self, result)
    if _grad_state.enabled and (result._requires_grad or self._requires_grad or
                                (self._base is not None and self._base._requires_grad)):
        if result._requires_grad:
            _adopt_saved_result(self, result)
        _rebase_history(self, result if result._requires_grad else None, written)
    return self


def _adopt_saved_result(self, result):
    """``result`` now lives in ``self``'s memory: where its node saved it (``exp_`` saves its
    output), the saved copy follows ``self``'s version counter, so a later in-place write to
    ``self`` makes backward fail as in PyTorch instead of silently using stale values."""
    saved = result.grad_fn._saved if result.grad_fn is not None else ()
    if not isinstance(saved, tuple) or result._vc is None:
        return
    vc = self._ensure_vc()
    for s in saved:
        if s is not None and s.vc is result._vc:
            s.vc = vc
            s.version = vc.value


class CopyBackwards(Node):
    """``self.copy_(src)``: the old values of ``self`` get a zero gradient, ``src`` all of it (the
    engine sums it back to ``src``'s shape and casts it to ``src``'s dtype and device)."""
    __slots__ = ()

    def backward(self, grad):
        g_self = grad.new_zeros(grad.shape) if self._edges[0] is not None else None
        return g_self, grad

    def jvp(self, t_self, t_src):
        # the result is src's values: its tangent (the forward AD hand-off broadcasts and casts)
        return t_src if t_src is not None else t_self.new_zeros(t_self.shape)


class CopySlices(Node):
    """The base's new history after a view of it was written in place."""
    __slots__ = ()

    def backward(self, grad):
        from .shape import _NoGrad
        replay = self.replay
        with _NoGrad():
            keep = _wrap(grad._backend.xp.ones(grad._data.shape, dtype=grad._data.dtype),
                         grad._dtype, grad)
            if grad._dtype._kind == 3:  # a .real/.imag view covers one part: mask parts apart
                keep._data.imag = 1
            replay(keep)._data[...] = 0
        if grad._dtype._kind == 3 and self._edges[0] is not None:
            from .complex import view_as_real, view_as_complex
            g_base = view_as_complex(view_as_real(grad) * view_as_real(keep))
        else:
            g_base = grad * keep if self._edges[0] is not None else None
        g_value = replay(grad) if self._edges[1] is not None else None
        return g_base, g_value


class FillBackward0(Node):
    """History of a tensor overwritten by values that carry no gradient (``y.eq_(0)``): the old
    values get a zero gradient."""
    __slots__ = ()

    def backward(self, grad):
        return grad * 0


def _rebase_history(self, result, written=None):
    base = self._base
    if base is None:
        if result is None:
            record(FillBackward0, (self,), self)
            self.__dict__.pop("_output_nr", None)
        else:
            if result.grad_fn is None:  # the result is a leaf: give self an edge to it
                result = _copy_from(self, result, keep_self=False)
            self.grad_fn = result.grad_fn
            self._requires_grad = True
            if result._output_nr:
                self._output_nr = result._output_nr
            else:
                self.__dict__.pop("_output_nr", None)
        _refresh_views(self, self)
        return
    if result is not None and written is not None:
        result = written  # the engine sums and casts the region's gradient to its shape
    record(CopySlices, (base, result), base, replay=self._view_fn)
    base.__dict__.pop("_output_nr", None)
    _regenerate(self, base)
    _refresh_views(base, self)


def _refresh_views(root, skip):
    """Give every live view of ``root`` (but ``skip``) the history of a fresh replay on ``root``."""
    refs = root.__dict__.get("_views")
    if not refs:
        return
    for ref in list(refs):
        view = ref()
        if view is not None and view is not skip:
            _regenerate(view, root)


def _regenerate(view, root):
    regenerated = view._view_fn(root)
    view.grad_fn = regenerated.grad_fn
    view._requires_grad = regenerated._requires_grad
    view.__dict__.pop("_output_nr", None)


def copy_into_out(out, result):
    """``out=`` semantics: resize an empty ``out``, else write into it."""
    if not isinstance(out, Tensor):
        raise TypeError(f"out must be a Tensor, got {type(out).__name__}")
    if out._data.shape != result._data.shape and out._data.size == 0:
        out._data = out._backend.xp.empty(result._data.shape, dtype=out._data.dtype)
    check_inplace(out)
    return write_result(out, result)


# ---- the in-place methods ----------------------------------------------------------------------

def _copy_from(self, src, keep_self=True):
    """``src`` broadcast to ``self``'s shape on ``self``'s device and dtype, recorded as a
    ``CopyBackwards`` node (whose first input, with ``keep_self``, is ``self``'s old history)."""
    from .shape import _NoGrad
    moved = src
    if src._device is not self._device or src._dtype is not self._dtype:
        with _NoGrad():
            moved = src.to(device=self._device, dtype=self._dtype)  # copy_ casts freely
    xp = self._backend.xp
    try:
        data = xp.broadcast_to(moved._data, self._data.shape)
    except ValueError:
        raise RuntimeError(_copy_shape_error(self._data.shape, src._data.shape)) from None
    out = _wrap(data, self._dtype, self)
    old = self if keep_self else None
    if needs_grad(old, src):
        record(CopyBackwards, (old, src), out)
    return out


def _copy_shape_error(shape, src_shape):
    """torch's message for a ``src`` that does not broadcast to ``self``: a size mismatch names
    the dimension of the broadcast shape; shapes that broadcast to something larger than
    ``self`` name both shapes."""
    ndim = max(len(shape), len(src_shape))
    for i in range(1, ndim + 1):
        a = shape[-i] if i <= len(shape) else 1
        b = src_shape[-i] if i <= len(src_shape) else 1
        if a != b and a != 1 and b != 1:
            return (f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                    f"non-singleton dimension {ndim - i}")
    broadcast = [max(shape[-i] if i <= len(shape) else 1,
                     src_shape[-i] if i <= len(src_shape) else 1) for i in range(ndim, 0, -1)]
    return (f"output with shape {list(shape)} doesn't match the broadcast shape "
            f"{broadcast}")


def copy_(self, src, non_blocking=False):
    return _copy(self, src)


def _copy(self, src, allow_overlap=False):
    check_inplace(self)
    if not isinstance(src, Tensor):
        from .creation import tensor as _tensor
        src = _tensor(src, dtype=self._dtype, device=self._device)
    return write_result(self, _copy_from(self, src), allow_overlap, written=src)


def fill_(self, value):
    check_inplace(self)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        return _copy(self, value, allow_overlap=True)
    if _grad_state.enabled and (self._requires_grad or
                                (self._base is not None and self._base._requires_grad)):
        return _copy(self, _full_like(self, value), allow_overlap=True)
    _store(self, _scalar_array(self, value), allow_overlap=True)
    return self


def zero_(self):
    return fill_(self, 0)


def _scalar_array(self, value):
    """``value`` as a 0-d array of ``self``'s dtype; out-of-range integers wrap, as in PyTorch."""
    xp = self._backend.xp
    np_dtype = self._data.dtype
    if isinstance(value, int) and not isinstance(value, bool) and np_dtype.kind in "iu":
        return xp.asarray(value).astype(np_dtype)
    return xp.asarray(value, dtype=np_dtype)


def _full_like(self, value):
    return _wrap(self._backend.xp.broadcast_to(_scalar_array(self, value), self._data.shape),
                 self._dtype, self)
