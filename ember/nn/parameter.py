"""``Parameter``, ``Buffer`` and their uninitialized (lazy) forms, as ``torch.nn.parameter``."""
import sys

from .._tensor import Tensor, _wrap_with
from .. import ops as _ops

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer",
           "is_lazy"]


class Parameter(Tensor):
    """A tensor that a ``Module`` registers as a parameter when assigned as an attribute."""
    _is_param = True

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _ops.empty(0)
        if requires_grad and not (data.is_floating_point() or data.is_complex()):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        return Tensor._make_subclass(cls, data, requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.data, self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    # A Buffer is a plain tensor carrying a flag, so isinstance looks at the flag.
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Marks a tensor to be registered as a buffer when assigned to a ``Module`` attribute.

    ``persistent=False`` keeps it out of the ``state_dict``."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _ops.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


_ARRAY_SLOT = Tensor._data  # the slot descriptor, reached past the guard below


class UninitializedTensorMixin:
    """A placeholder without a shape; ``materialize(shape)`` turns it into ``cls_to_become``.

    Every op reads its operands' arrays through ``_data``; the placeholder's guards that read,
    so any op on it fails with PyTorch's ValueError, while metadata (dtype, device,
    requires_grad) and the casts a module's ``to()`` makes keep working."""
    cls_to_become = None

    @property
    def _data(self):
        op = sys._getframe(1).f_code.co_name
        raise ValueError(
            f"Attempted to use an uninitialized parameter in {op}. This error happens when you "
            "are using a `LazyModule` or explicitly manipulating "
            "`ember.nn.parameter.UninitializedParameter` objects. When using LazyModules Call "
            "`forward` with a dummy batch to initialize the parameters before calling ember "
            "functions")

    @_data.setter
    def _data(self, array):
        _ARRAY_SLOT.__set__(self, array)

    def _converted(self, method, *args, **kwargs):
        """A module's ``to()``/``double()``… on a placeholder: a placeholder of the new dtype and
        device (PyTorch lets these through too)."""
        plain = _wrap_with(_ARRAY_SLOT.__get__(self), self._dtype, self._device, self._backend)
        converted = getattr(plain, method)(*args, **kwargs)
        if converted is plain:
            return self
        return type(self)(self.requires_grad, converted._device, converted._dtype)

    @property
    def data(self):
        return _wrap_with(_ARRAY_SLOT.__get__(self), self._dtype, self._device, self._backend)

    @data.setter
    def data(self, value):
        if isinstance(value, UninitializedTensorMixin):
            value = value.data
        Tensor.data.fset(self, value)

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = self._converted("to", copy=True)
            if hasattr(self, "persistent"):
                memo[id(self)].persistent = self.persistent
        return memo[id(self)]

    def size(self, dim=None):
        plain = _wrap_with(_ARRAY_SLOT.__get__(self), self._dtype, self._device, self._backend)
        return plain.size(dim)

    def materialize(self, shape, device=None, dtype=None):
        device = self._device if device is None else device
        dtype = self._dtype if dtype is None else dtype
        self.data = _ops.empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing their "
            "attributes.")

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad,))


def _conversion(method):
    def convert(self, *args, **kwargs):
        return self._converted(method, *args, **kwargs)
    convert.__name__ = method
    return convert


for _method in ("to", "cpu", "cuda", "type", "half", "float", "double", "bfloat16"):
    setattr(UninitializedTensorMixin, _method, _conversion(_method))


def is_lazy(param):
    """Whether ``param`` is still an uninitialized placeholder."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is fixed by the first ``forward`` of a lazy module."""
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        data = _ops.empty(0, device=device, dtype=dtype)
        return Tensor._make_subclass(cls, data, requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is fixed by the first ``forward`` of a lazy module."""
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        data = _ops.empty(0, device=device, dtype=dtype)
        t = Tensor._make_subclass(cls, data, requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass

