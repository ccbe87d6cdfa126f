"""Fused loss kernels.

``cross_entropy_indices`` is ``nll_loss(log_softmax(input))`` for class-index targets as one op:
the forward never materialises the log-probabilities' graph, and the backward is the closed form
``(softmax(input) - one_hot(target)) * weight[target] * grad``, so a training step spends one
node on its loss instead of five. ``nn.functional.cross_entropy`` checks its arguments and then
calls it.
"""
from .. import _dtype as dt
from ._dispatch import Node, needs_grad, record, _wrap
from .creation import zeros_like
from .reduce import softmax

__all__ = ["cross_entropy_indices"]


class NllLossBackward0(Node):
    """PyTorch's name for the loss's node; here it also holds the log_softmax before it."""
    __slots__ = ()

    def backward(self, grad):
        (input,) = self.saved_tensors
        cdim = self.cdim
        probs = softmax(input, cdim)
        one_hot = zeros_like(probs).scatter(cdim, self.safe_target.unsqueeze(cdim), 1.0)
        if self.reduction == "none":
            scale = grad
        else:
            scale = grad / self.divisor if self.reduction == "mean" else grad
        if self.target_weight is not None:
            scale = scale * self.target_weight
        if scale.ndim:
            scale = scale.unsqueeze(cdim)
        return (probs - one_hot) * scale


def cross_entropy_indices(input, target, weight, ignore_index, reduction):
    """Cross-entropy of ``input`` (N, C, ...) or (C,) against class indices ``target``, whose
    values have been checked to be classes or ``ignore_index``."""
    xp = input._backend.xp
    cdim = 0 if input.ndim == 1 else 1
    data = input._data
    if input._dtype._kind == 2 and input._dtype._rank == 0:  # half, bfloat16: float32 maths
        data = data.astype(dt.float32.np)
    logits = data if cdim == data.ndim - 1 else xp.moveaxis(data, cdim, -1)
    shifted = logits - logits.max(-1, keepdims=True)
    log_sum_exp = xp.log(xp.exp(shifted).sum(-1))
    labels = target._data.astype(dt.int64.np)
    ignored = labels == ignore_index
    any_ignored = bool(ignored.any())
    safe = xp.where(ignored, 0, labels) if any_ignored else labels
    picked = xp.take_along_axis(shifted, safe[..., None], -1)[..., 0]
    losses = log_sum_exp - picked
    target_weight = None
    if weight is not None:
        target_weight = weight._data[safe].astype(losses.dtype)
        if any_ignored:
            target_weight = xp.where(ignored, 0, target_weight)
    elif any_ignored:
        target_weight = (~ignored).astype(losses.dtype)
    if target_weight is not None:
        losses = losses * target_weight
    divisor = None
    if reduction == "none":
        out = losses
    elif reduction == "sum":
        out = losses.sum()
    else:
        total = float(target_weight.sum()) if target_weight is not None else losses.size
        out = losses.sum() / total if total else xp.asarray(float("nan"), losses.dtype)
        divisor = total if total else 1.0  # with no weight at all the gradient is zero
    res = _wrap(xp.asarray(out).astype(input._dtype.np), input._dtype, input)
    if needs_grad(input):
        record(NllLossBackward0, (input,), res, save=(input,), cdim=cdim,
               reduction=reduction, divisor=divisor,
               safe_target=_wrap(xp.asarray(safe), dt.int64, input),
               target_weight=(None if target_weight is None else
                              _wrap(target_weight.astype(input._dtype.np), input._dtype, input)))
    return res
