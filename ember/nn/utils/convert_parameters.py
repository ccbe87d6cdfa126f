"""Flattening parameters into one vector and back, as ``torch.nn.utils``."""
import ember
from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param, device):
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return param.device


def parameters_to_vector(parameters):
    """All ``parameters`` flattened and concatenated into one 1-D tensor (differentiable)."""
    device = None
    flat = []
    for param in parameters:
        device = _check_same_device(param, device)
        flat.append(param.view(-1))
    return ember.cat(flat)


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of ``vec`` into ``parameters`` (replacing each one's data)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected ember.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_same_device(param, device)
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
