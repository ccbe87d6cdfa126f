"""Values handed to a SummaryWriter made into NumPy arrays or Python numbers, without torch:
tensorboardX recognises torch tensors only, so Ember tensors are converted before it sees
them."""
import numpy as np

__all__ = ["make_np", "make_scalar"]


def make_np(x):
    """An Ember tensor (any device, any dtype, with or without grad), a NumPy array, a Python
    number or a list of them as a NumPy array."""
    from ..._tensor import Tensor
    if isinstance(x, Tensor):
        x = x.detach()
        if x.dtype.is_floating_point and x.dtype.itemsize < 4:
            x = x.float()  # bfloat16 has no NumPy dtype TensorBoard's encoders know
        return x.cpu().numpy()
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (list, tuple)):
        return np.stack([make_np(v) for v in x]) if x and isinstance(x[0], Tensor) \
            else np.asarray(x)
    if np.isscalar(x):
        return np.array([x])
    raise NotImplementedError(f"Got {type(x).__name__}, but expected an Ember tensor, a "
                              "NumPy array or a number")


def make_scalar(x):
    """A one-element tensor or array, or a number, as a Python number."""
    from ..._tensor import Tensor
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise ValueError(f"a scalar summary needs one value, got a tensor of shape "
                             f"{tuple(x.shape)}")
        return x.item()
    if isinstance(x, np.ndarray):
        return x.item()
    return x
