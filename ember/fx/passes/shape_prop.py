"""``ShapeProp``: run a GraphModule on example inputs and record each node's tensor metadata
in ``node.meta["tensor_meta"]``, as ``torch.fx.passes.shape_prop``."""
from typing import Any, NamedTuple

from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    """What a pass needs to know about a tensor value without the tensor."""
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result, include_contiguity=True):
    from ... import contiguous_format, channels_last, channels_last_3d
    memory_format = None
    if include_contiguity:
        for fmt in (contiguous_format, channels_last, channels_last_3d):
            if result.is_contiguous(memory_format=fmt):
                memory_format = fmt
                break
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(),
                          memory_format, False, {})


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*args)`` runs ``gm`` and fills ``meta["tensor_meta"]`` (a
    TensorMetadata, or a tuple/list/dict of them for a node returning several tensors) and
    ``meta["type"]`` on every node."""

    def __init__(self, gm, fake_mode=None):
        if fake_mode is not None:
            raise NotImplementedError("ShapeProp: Ember has no fake tensors; propagate real "
                                      "example inputs instead")
        super().__init__(gm)

    def run_node(self, n):
        from ..._tensor import Tensor
        result = super().run_node(n)
        found = []

        def extract(obj):
            if isinstance(obj, Tensor):
                found.append(True)
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run the module on ``args``; returns its result."""
        return super().run(*args)
