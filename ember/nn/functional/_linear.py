"""``linear`` and ``bilinear``.

``linear`` is one op: forward is a single matrix product (plus the bias added into its result),
and its backward node computes each gradient with a single matrix product over the flattened
batch, without the transposed copies or broadcasts a composition of ``matmul`` and ``add``
would make.
"""
from ... import _dtype as dt
from ...ops._dispatch import Node, needs_grad, record, _wrap, device_mismatch
from ...ops.linalg import _cpp_name

__all__ = ["linear", "bilinear"]


class AddmmBackward0(Node):
    """Backward of ``linear``; named as PyTorch names the node of its 2-D case."""
    __slots__ = ()

    def backward(self, grad):
        x, weight = self.saved_tensors
        g_x = g_w = g_b = None
        if self._edges[0] is not None:
            g_x = grad.matmul(weight)
        if self._edges[1] is not None:
            out_features, in_features = self.weight_shape
            g_w = grad.reshape(-1, out_features).mT.matmul(x.reshape(-1, in_features))
        if self._edges[2] is not None:
            g_b = grad.sum(tuple(range(grad.ndim - 1))) if grad.ndim > 1 else grad
        return g_x, g_w, g_b


def _check_linear(input, weight, bias):
    for other in (weight, bias):
        if other is not None and other._device is not input._device:
            raise device_mismatch(input, other)
    if input._dtype is not weight._dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_cpp_name(input._dtype)} != {_cpp_name(weight._dtype)}")
    if input.ndim == 0 or weight.ndim != 2 or input.shape[-1] != weight.shape[1]:
        cols = input.shape[-1] if input.ndim else 1
        rows = input.numel() // cols if cols else 0
        w_rows, w_cols = weight.shape[-1], (weight.shape[0] if weight.ndim == 2 else 1)
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and "
                           f"{w_rows}x{w_cols})")


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    _check_linear(input, weight, bias)
    backend = input._backend
    d = input._dtype
    work = dt.float32.np if d._rank == 0 and d._kind == 2 else d.np
    data = backend.matmul(input._data.astype(work, copy=False),
                          weight._data.astype(work, copy=False).T)
    if bias is not None:
        b = bias._data.astype(work, copy=False)
        if data.ndim and b.ndim <= 1:
            data += b  # matmul's result is a fresh array: add the bias in place, no copy
        else:
            data = data + b
    res = _wrap(data.astype(d.np, copy=False), d, input)
    if needs_grad(input, weight, bias):
        record(AddmmBackward0, (input, weight, bias), res,
               save=(input if weight._requires_grad else None,
                     weight if input._requires_grad else None),
               weight_shape=tuple(weight.shape))
    return res


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``."""
    out_features, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    for i, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if a != b:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {a} and {b}")
    batch = input1.shape[:-1]
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # One matrix product contracts i; the j contraction is a row-wise dot with input2.
    left = x1.matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2))
    out = (left.reshape(-1, out_features, in2) * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(*batch, out_features)
