"""``Parameter``, ``Buffer`` and their uninitialized (lazy) forms, as ``torch.nn.parameter``."""
from .._tensor import Tensor
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


class UninitializedTensorMixin:
    """A placeholder without a shape; ``materialize(shape)`` turns it into ``cls_to_become``."""
    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        if device is None:
            device = self.data.device
        if dtype is None:
            dtype = self.data.dtype
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

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.data.device, self.data.dtype)
        memo[id(self)] = result
        return result


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

