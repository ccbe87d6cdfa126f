"""``ember.ao.quantization``: observers and fake quantization, as ``torch.ao.quantization``.

Ember has no quantized tensors yet (so no ``prepare``/``convert``): ``qint8``/``quint8``/
``qint32`` here are markers that name a target integer range for observers and fake
quantization, not tensor dtypes; ember's int8/uint8/int32 dtypes are accepted as well. The
qschemes (``per_tensor_affine`` & co., top-level names in torch) live here too. They are
defined before the submodules are imported, which take them from this package.
"""

_QTYPES = ["qscheme", "per_tensor_affine", "per_tensor_symmetric", "per_channel_affine",
           "per_channel_symmetric", "per_channel_affine_float_qparams",
           "QuantizedDtype", "qint8", "quint8", "qint32"]


class qscheme:
    """How scale and zero point map floats to integers (one of the five constants below)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"ember.ao.quantization.{self.name}"

    def __reduce__(self):
        # pickled observers (state in a checkpoint) come back as the same constants
        return self.name


per_tensor_affine = qscheme("per_tensor_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_affine = qscheme("per_channel_affine")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")


class QuantizedDtype:
    """The name of a quantized dtype and the integer range it stores."""
    __slots__ = ("name", "min", "max")

    def __init__(self, name, lo, hi):
        self.name, self.min, self.max = name, lo, hi

    def __repr__(self):
        return f"ember.ao.quantization.{self.name}"

    def __reduce__(self):
        return self.name


qint8 = QuantizedDtype("qint8", -128, 127)
quint8 = QuantizedDtype("quint8", 0, 255)
qint32 = QuantizedDtype("qint32", -2**31, 2**31 - 1)


from .fake_quantize import *  # noqa: E402,F401,F403
from .observer import *  # noqa: E402,F401,F403
from . import fake_quantize, observer  # noqa: E402

__all__ = [*_QTYPES, *observer.__all__, *fake_quantize.__all__]
