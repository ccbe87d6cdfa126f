"""Quantized Dropout: the identity (quantized models run in eval mode)."""
import ember

__all__ = ["Dropout"]


class Dropout(ember.nn.Dropout):
    """Dropout on a quantized tensor at inference: returns the input as it is."""

    def forward(self, input):
        return input

    def _get_name(self):
        return "QuantizedDropout"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(mod.p, mod.inplace)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.p, mod.inplace)
