"""In-place ops with PyTorch's autograd rules.

An in-place op computes its result out of place (through the ordinary, differentiable op), then
writes it into the tensor's memory and bumps the shared version counter. When the graph is being
recorded, the tensor takes over the result's history; a view written in place gives its base a
``CopySlices`` node, so gradients reach both the base's old history and the written value.
"""
from .. import _dtype as dt
from ._dispatch import Tensor, Node, record, _wrap, dtype_name, device_mismatch
from ..autograd.grad_mode import _state as _grad_state


def check_inplace(self):
    if not _grad_state.enabled:
        return
    if self._requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    base = self._base
    if base is not None and base._requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


def _recording(self, args):
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
    may save its input for backward, and ``self`` is about to be overwritten."""
    snap = _wrap(self._data.copy(), self._dtype, self)
    snap._requires_grad = self._requires_grad
    snap.grad_fn = self.grad_fn
    if self._output_nr:
        snap._output_nr = self._output_nr
    return snap


def inplace(self, fn, *args, **kwargs):
    """Run ``fn(self, *args, **kwargs)`` out of place and write the result into ``self``."""
    check_inplace(self)
    if _recording(self, args):
        result = fn(_snapshot(self), *args, **kwargs)
    else:
        result = fn(self, *args, **kwargs)
    return write_result(self, result)


def write_result(self, result):
    """Write ``result`` into ``self``'s memory; rebase ``self``'s history on ``result``'s."""
    if result._device is not self._device:
        raise device_mismatch(self, result)
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
    try:
        self._data[...] = result._data
    except ValueError as exc:
        if "read-only" in str(exc):
            raise RuntimeError("unsupported operation: more than one element of the written-to "
                               "tensor refers to a single memory location. Please clone() the "
                               "tensor before performing the operation.") from None
        raise
    self._bump_version()
    if _grad_state.enabled and (result._requires_grad or self._requires_grad or
                                (self._base is not None and self._base._requires_grad)):
        _rebase_history(self, result if result._requires_grad else None)
    return self


class CopySlices(Node):
    """The base's new history after a view of it was written in place."""
    __slots__ = ()

    def backward(self, grad):
        from .shape import _NoGrad
        replay = self.replay
        with _NoGrad():
            keep = _wrap(grad._backend.xp.ones(grad._data.shape, dtype=grad._data.dtype),
                         grad._dtype, grad)
            replay(keep)._data[...] = 0
        g_base = grad * keep if self.next_functions[0] is not None else None
        g_value = replay(grad) if self.next_functions[1] is not None else None
        return g_base, g_value


class FillBackward0(Node):
    """History of a tensor overwritten by a constant: no gradient reaches the old values."""
    __slots__ = ()

    def backward(self, grad):
        return grad * 0


def _rebase_history(self, result):
    base = self._base
    if base is None:
        if result is None:
            record(FillBackward0, (self,), self)
            self.__dict__.pop("_output_nr", None)
            return
        self.grad_fn = result.grad_fn
        self._requires_grad = True
        self._output_nr = result._output_nr
        return
    record(CopySlices, (base, result), base, replay=self._view_fn)
    base.__dict__.pop("_output_nr", None)
    regenerated = self._view_fn(base)
    self.grad_fn = regenerated.grad_fn
    self._requires_grad = True
    self._output_nr = regenerated._output_nr


def copy_into_out(out, result):
    """``out=`` semantics: resize an empty ``out``, else write into it."""
    if not isinstance(out, Tensor):
        raise TypeError(f"out must be a Tensor, got {type(out).__name__}")
    if out._data.shape != result._data.shape and out._data.size == 0:
        out._data = out._backend.xp.empty(result._data.shape, dtype=out._data.dtype)
    check_inplace(out)
    return write_result(out, result)


# ---- the in-place methods ----------------------------------------------------------------------

def copy_(self, src, non_blocking=False):
    check_inplace(self)
    if not isinstance(src, Tensor):
        from .creation import tensor as _tensor
        src = _tensor(src, dtype=self._dtype, device=self._device)
    if src._device is not self._device:
        src = src.to(self._device)
    if src._dtype is not self._dtype:
        src = src.to(self._dtype)  # copy_ casts freely, unlike other in-place ops
    return write_result(self, src.expand(self._data.shape) if src._data.shape != self._data.shape
                        else src)


def fill_(self, value):
    check_inplace(self)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        return copy_(self, value.expand(self._data.shape))
    if self._requires_grad or (self._base is not None and self._base._requires_grad):
        return copy_(self, _full_like(self, value))
    self._data[...] = value
    self._bump_version()
    return self


def zero_(self):
    return fill_(self, 0)


def _full_like(self, value):
    return _wrap(self._backend.xp.full(self._data.shape, value, dtype=self._data.dtype),
                 self._dtype, self)
