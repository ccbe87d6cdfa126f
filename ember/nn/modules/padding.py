"""Padding layers as ``torch.nn``: zero, constant, reflection, replication and circular
padding of the last 1, 2 or 3 dims."""
from .. import functional as F
from .module import Module
from .utils import _per_dim

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]
    _dims = 0

    def __init__(self, padding, value):
        super().__init__()
        self.padding = _per_dim(padding, 2 * self._dims)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    _dims = 3


class _ZeroPad:
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    pass


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    pass


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    pass


class _ModePadNd(Module):
    __constants__ = ["padding"]
    _dims = 0
    _mode = None

    def __init__(self, padding):
        super().__init__()
        self.padding = _per_dim(padding, 2 * self._dims)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _CircularPadNd(_ModePadNd):
    _mode = "circular"

    def forward(self, input):
        n = self._dims
        if input.ndim not in (n + 1, n + 2):
            raise ValueError(f"expected {n + 1}D or {n + 2}D input (got {input.ndim}D input)")
        return super().forward(input)


class _ReflectionPadNd(_ModePadNd):
    _mode = "reflect"


class _ReplicationPadNd(_ModePadNd):
    _mode = "replicate"


_PAD_BASES = {"circular": _CircularPadNd, "reflect": _ReflectionPadNd,
              "replicate": _ReplicationPadNd}


def _mode_pad(mode, dims, name):
    base = _PAD_BASES[mode]  # torch's base class for the mode, which code subclasses
    return type(name, (base,), {"_dims": dims, "_mode": mode, "__module__": __name__})


ReflectionPad1d = _mode_pad("reflect", 1, "ReflectionPad1d")
ReflectionPad2d = _mode_pad("reflect", 2, "ReflectionPad2d")
ReflectionPad3d = _mode_pad("reflect", 3, "ReflectionPad3d")
ReplicationPad1d = _mode_pad("replicate", 1, "ReplicationPad1d")
ReplicationPad2d = _mode_pad("replicate", 2, "ReplicationPad2d")
ReplicationPad3d = _mode_pad("replicate", 3, "ReplicationPad3d")
CircularPad1d = _mode_pad("circular", 1, "CircularPad1d")
CircularPad2d = _mode_pad("circular", 2, "CircularPad2d")
CircularPad3d = _mode_pad("circular", 3, "CircularPad3d")
