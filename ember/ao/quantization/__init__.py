"""``ember.ao.quantization``: observers and fake quantization, as ``torch.ao.quantization``.

The quantized dtypes (``qint8``, ``quint8``, ``qint32``, ember's dtypes of quantized tensors)
and the qschemes (``per_tensor_affine`` & co.) are top-level names in torch; they are named
here too, before the submodules are imported, which take them from this package. Observers
and fake quantization accept ember's int8/uint8/int32 dtypes as well.
"""
from ..._dtype import qint8, quint8, qint32  # noqa: F401
from ..._qscheme import (qscheme, per_tensor_affine, per_tensor_symmetric,  # noqa: F401
                         per_channel_affine, per_channel_symmetric,
                         per_channel_affine_float_qparams)

_QTYPES = ["qscheme", "per_tensor_affine", "per_tensor_symmetric", "per_channel_affine",
           "per_channel_symmetric", "per_channel_affine_float_qparams",
           "qint8", "quint8", "qint32"]


from .fake_quantize import *  # noqa: E402,F401,F403
from .observer import *  # noqa: E402,F401,F403
from .qconfig import *  # noqa: E402,F401,F403
from .qconfig_mapping import *  # noqa: E402,F401,F403
from .stubs import *  # noqa: E402,F401,F403
from .fuser_method_mappings import *  # noqa: E402,F401,F403
from .fuse_modules import *  # noqa: E402,F401,F403
from .quantization_mappings import *  # noqa: E402,F401,F403
from .quantize import *  # noqa: E402,F401,F403
from . import (fake_quantize, observer, qconfig, qconfig_mapping, stubs,  # noqa: E402
               fuser_method_mappings, quantization_mappings)
# the functions fuse_modules and quantize shadow their modules' names here, as in torch
from .fuse_modules import __all__ as _fuse_modules_all  # noqa: E402
from .quantize import __all__ as _quantize_all  # noqa: E402

__all__ = [*_QTYPES, *observer.__all__, *fake_quantize.__all__, *qconfig.__all__,
           *qconfig_mapping.__all__, *stubs.__all__, *fuser_method_mappings.__all__,
           *_fuse_modules_all, *quantization_mappings.__all__, *_quantize_all]
