"""``ember.qscheme``: how a quantized tensor maps its integers to floats (torch's
``c10::QScheme``), and its five constants, top-level names in torch (``torch.per_tensor_affine``).

``quantized = clamp(round(x / scale) + zero_point)`` with one ``scale``/``zero_point`` for the
whole tensor (per_tensor_*) or one per slice along an axis (per_channel_*); the symmetric
schemes are the affine ones with the zero point fixed at the middle of the range, and
``per_channel_affine_float_qparams`` keeps a float zero point (embedding tables).
"""

__all__ = ["qscheme", "per_tensor_affine", "per_tensor_symmetric", "per_channel_affine",
           "per_channel_symmetric", "per_channel_affine_float_qparams"]


class qscheme:
    """One of the five quantization schemes below (compare them with ``is`` or ``==``)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        # pickled as the module-level constant of the same name, as torch pickles them
        return self.name


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")
