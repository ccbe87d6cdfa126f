"""Fused float modules: a Sequential of modules that quantization treats as one.

``fuse_modules`` builds these; ``prepare`` then observes only the output of the whole
sequence (no observer between a convolution and its ReLU), and ``convert`` swaps each for
the one quantized kernel that computes it. Each checks the types it holds, as torch's.
"""
from ..... import nn

__all__ = ["ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU", "ConvBn1d", "ConvBn2d",
           "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d", "BNReLU2d", "BNReLU3d",
           "LinearBn1d", "ConvAdd2d", "ConvAddReLU2d", "LinearLeakyReLU", "LinearTanh"]


class _FusedModule(nn.Sequential):
    """Marks a Sequential as fused: prepare and convert handle it as one leaf."""


def _fused(name, types, doc):
    """A fused module class holding modules of exactly ``types``, in order."""

    def __init__(self, *modules):
        if len(modules) != len(types) or not all(
                type(m) is t for m, t in zip(modules, types)):
            got = " and ".join(type(m).__name__ for m in modules)
            raise AssertionError(f"Incorrect types for input modules: {got} (expected "
                                 f"{' and '.join(t.__name__ for t in types)})")
        _FusedModule.__init__(self, *modules)

    return type(name, (_FusedModule,), {"__init__": __init__, "__doc__": doc,
                                         "__module__": __name__})


ConvReLU1d = _fused("ConvReLU1d", (nn.Conv1d, nn.ReLU), "Conv1d then ReLU.")
ConvReLU2d = _fused("ConvReLU2d", (nn.Conv2d, nn.ReLU), "Conv2d then ReLU.")
ConvReLU3d = _fused("ConvReLU3d", (nn.Conv3d, nn.ReLU), "Conv3d then ReLU.")
LinearReLU = _fused("LinearReLU", (nn.Linear, nn.ReLU), "Linear then ReLU.")
ConvBn1d = _fused("ConvBn1d", (nn.Conv1d, nn.BatchNorm1d), "Conv1d then BatchNorm1d.")
ConvBn2d = _fused("ConvBn2d", (nn.Conv2d, nn.BatchNorm2d), "Conv2d then BatchNorm2d.")
ConvBn3d = _fused("ConvBn3d", (nn.Conv3d, nn.BatchNorm3d), "Conv3d then BatchNorm3d.")
ConvBnReLU1d = _fused("ConvBnReLU1d", (nn.Conv1d, nn.BatchNorm1d, nn.ReLU),
                      "Conv1d, BatchNorm1d, ReLU.")
ConvBnReLU2d = _fused("ConvBnReLU2d", (nn.Conv2d, nn.BatchNorm2d, nn.ReLU),
                      "Conv2d, BatchNorm2d, ReLU.")
ConvBnReLU3d = _fused("ConvBnReLU3d", (nn.Conv3d, nn.BatchNorm3d, nn.ReLU),
                      "Conv3d, BatchNorm3d, ReLU.")
BNReLU2d = _fused("BNReLU2d", (nn.BatchNorm2d, nn.ReLU), "BatchNorm2d then ReLU.")
BNReLU3d = _fused("BNReLU3d", (nn.BatchNorm3d, nn.ReLU), "BatchNorm3d then ReLU.")
LinearBn1d = _fused("LinearBn1d", (nn.Linear, nn.BatchNorm1d), "Linear then BatchNorm1d.")
LinearLeakyReLU = _fused("LinearLeakyReLU", (nn.Linear, nn.LeakyReLU), "Linear then LeakyReLU.")
LinearTanh = _fused("LinearTanh", (nn.Linear, nn.Tanh), "Linear then Tanh.")


class ConvAdd2d(_FusedModule):
    """Conv2d whose output is combined with a second input by ``add`` (``add(conv(x1), x2)``)."""

    def __init__(self, conv, add):
        super().__init__(conv)
        self.add = add

    def forward(self, x1, x2):
        return self.add(self[0](x1), x2)


class ConvAddReLU2d(_FusedModule):
    """``relu(add(conv(x1), x2))``."""

    def __init__(self, conv, add, relu):
        super().__init__(conv)
        self.add = add
        self.relu = relu

    def forward(self, x1, x2):
        return self.relu(self.add(self[0](x1), x2))
