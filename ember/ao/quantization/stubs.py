"""QuantStub / DeQuantStub: where a float model's tensors enter and leave int8 (eager mode).

Before ``convert`` they are identities (``prepare`` gives a QuantStub the observer that
calibrates the input's qparams); ``convert`` swaps them for ``nnq.Quantize`` and
``nnq.DeQuantize``.
"""
from ... import nn

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


class QuantStub(nn.Module):
    """Marks where float input becomes quantized; ``qconfig`` overrides the propagated one."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class DeQuantStub(nn.Module):
    """Marks where quantized values become float again."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantWrapper(nn.Module):
    """``dequant(module(quant(x)))``: wraps a whole module between the two stubs, carrying its
    ``qconfig`` onto them."""

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X):
        return self.dequant(self.module(self.quant(X)))
