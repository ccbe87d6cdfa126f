"""Loss functions, as ``torch.nn.functional``.

The losses PyTorch runs as one kernel (mean squared error, smooth L1, Huber, binary
cross-entropy with and without logits, soft margin, negative log-likelihood) are one op each in
``ops/loss.py``, recording PyTorch's node; cross-entropy is ``nll_loss(log_softmax(input))`` as
in PyTorch. The others are composed of differentiable Ember ops as PyTorch composes them, so
gradients with respect to the input and, where PyTorch has them, the target and weights come
from autograd (the multi-label margin and CTC compositions are ``ops/loss.py``'s, under
PyTorch's one node). Checks that PyTorch makes on values (class indices in range, probabilities in
[0, 1]) read the data on the host once.
"""
import math
import warnings

import ember
from ... import _dtype as dt
from ..._tensor import Tensor
from ...ops._dispatch import dtype_name
from ...ops.elementwise import add_scalar, sub_scalar, mul_scalar, div_scalar, number_minus
from ...ops import loss as fused
from ...ops.loss import _reduce
from ...ops.distance import pairwise_distance
from ._activation import logsigmoid
from ...amp import autocast_mode as _autocast

__all__ = [
    "l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
    "gaussian_nll_loss", "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss",
    "multilabel_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
    "soft_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss", "ctc_loss",
]

_REDUCTIONS = ("none", "mean", "sum")


# ---- reductions --------------------------------------------------------------------------------

def _legacy_reduction(size_average, reduce):
    """The ``reduction`` named by the deprecated ``size_average``/``reduce`` pair."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  f"reduction='{reduction}' instead.", stacklevel=3)
    return reduction


def _resolve_reduction(reduction, size_average=None, reduce=None):
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _size_warning(input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=3)


def _check_broadcastable(a, b):
    """PyTorch's message for two shapes that do not broadcast (tensor ``a`` against ``b``)."""
    sa, sb = tuple(a.shape), tuple(b.shape)
    n = max(len(sa), len(sb))
    for i in range(1, n + 1):
        x = sa[-i] if i <= len(sa) else 1
        y = sb[-i] if i <= len(sb) else 1
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {n - i}")


def _weighted_pointwise(loss, weight, reduction, weighted_mean_by_weight):
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != loss.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and weighted_mean_by_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


# ---- regression losses ------------------------------------------------------------------------

def _refuse_integers(kernel, *tensors):
    """PyTorch's fused loss kernels exist for floating point only (of the operands' common
    dtype)."""
    common = ember.result_type(*tensors) if len(tensors) > 1 else tensors[0].dtype
    if not common.is_floating_point and not common.is_complex:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(common)}'")


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if _autocast.active and _autocast.enabled_for(input, "l1_loss"):
        return _autocast.run(l1_loss, "l1_loss", input, target, size_average, reduce, reduction,
                             weight)
    _size_warning(input, target)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    _check_broadcastable(input, target)
    return _weighted_pointwise((input - target).abs(), weight, reduction, True)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if _autocast.active and _autocast.enabled_for(input, "mse_loss"):
        return _autocast.run(mse_loss, "mse_loss", input, target, size_average, reduce, reduction,
                             weight)
    _size_warning(input, target)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    _check_broadcastable(input, target)
    _refuse_integers("mse_cpu", input, target)
    if weight is None:
        return fused.mse_loss(input, target, reduction)
    diff = input - target
    return _weighted_pointwise(diff * diff, weight, reduction, True)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    if _autocast.active and _autocast.enabled_for(input, "smooth_l1_loss"):
        return _autocast.run(smooth_l1_loss, "smooth_l1_loss", input, target, size_average, reduce,
                             reduction, beta)
    _size_warning(input, target)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_broadcastable(input, target)
    _refuse_integers("smooth_l1_cpu", input, target)
    return fused.smooth_l1_loss(input, target, reduction, beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if _autocast.active and _autocast.enabled_for(input, "huber_loss"):
        return _autocast.run(huber_loss, "huber_loss", input, target, reduction, delta, weight)
    _size_warning(input, target)
    reduction = _resolve_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_broadcastable(input, target)
    _refuse_integers("huber_cpu", input, target)
    if weight is None:
        return fused.huber_loss(input, target, reduction, delta)
    diff = input - target
    absolute = diff.abs()
    loss = ember.where(absolute < delta, 0.5 * diff * diff, delta * (absolute - 0.5 * delta))
    return _weighted_pointwise(loss, weight, reduction, False)


# ---- classification: negative log-likelihood and cross-entropy --------------------------------

def _check_class_weight(weight, n_classes):
    if weight is not None and (weight.ndim != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes "
                           f"or no classes but got weight tensor of shape: {list(weight.shape)}")


def _check_class_target(input, target):
    """PyTorch's checks, in its order, for class-index ``target`` against ``input`` (N, C, ...)."""
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if input.ndim != 1 and target.ndim >= 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0]}).")
    if input.ndim <= 2 and target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.ndim == 1 and target.ndim != 0:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.ndim == 4:  # PyTorch's image-shaped path has its own messages
        if target.ndim != 3:
            raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                               f"targets of dimension: {target.ndim}")
        if tuple(target.shape[1:]) != tuple(input.shape[2:]):
            raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: "
                               f"{list(target.shape)}")
    elif input.ndim > 2:
        expected = [input.shape[0], *input.shape[2:]]
        if list(target.shape) != expected:
            raise RuntimeError(f"Expected target size {expected}, got {list(target.shape)}")
    if target._dtype not in (dt.int64, dt.uint8):
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{dtype_name(target._dtype)}")


def _check_target_range(target, n_classes, ignore_index):
    xp = target._backend.xp
    data = target._data
    bad = (data < 0) | (data >= n_classes)
    if ignore_index is not None:
        bad &= data != ignore_index
    if bool(xp.any(bad)):
        first = data[bad].reshape(-1)[0]
        raise IndexError(f"Target {int(first)} is out of bounds.")


def _class_dim(input):
    return 0 if input.ndim == 1 else 1


def _target_weights(target, weight, ignore_mask, dtype):
    """The weight of each target's class (0 where ignored), shaped like ``target``."""
    if weight is not None:
        safe = target if ignore_mask is None else target.masked_fill(ignore_mask, 0)
        w = weight[safe.reshape(-1)].reshape(target.shape)
        return w if ignore_mask is None else w.masked_fill(ignore_mask, 0)
    if ignore_mask is None:
        return None
    return (~ignore_mask).to(dtype)


def _check_nll_arguments(input, target, weight, ignore_index):
    _check_class_target(input, target)
    n_classes = input.shape[_class_dim(input)]
    _check_class_weight(weight, n_classes)
    if weight is not None and weight._dtype is not input._dtype:
        raise RuntimeError(f"expected scalar type {dtype_name(input._dtype)} but found "
                           f"{dtype_name(weight._dtype)}")
    _check_target_range(target, n_classes, ignore_index)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    if _autocast.active and _autocast.enabled_for(input, "nll_loss"):
        return _autocast.run(nll_loss, "nll_loss", input, target, weight, size_average,
                             ignore_index, reduce, reduction)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    _check_nll_arguments(input, target, weight, ignore_index)
    _refuse_integers("nll_loss_out_frame", input)
    fused.check_not_differentiable("nll_loss_forward", "weight", weight)
    target = target.long()
    ignore_mask = target == ignore_index
    if not bool(ignore_mask.any()):
        ignore_mask = None
    safe = target if ignore_mask is None else target.masked_fill(ignore_mask, 0)
    weights = _target_weights(target, weight, ignore_mask, input._dtype)
    return fused.nll_loss(input, safe, weights, reduction)


def _class_shaped(weight, input, cdim):
    shape = [1] * input.ndim
    shape[cdim] = weight.shape[0]
    return weight.reshape(shape)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    if _autocast.active and _autocast.enabled_for(input, "cross_entropy_loss"):
        return _autocast.run(cross_entropy, "cross_entropy_loss", input, target, weight,
                             size_average, ignore_index, reduce, reduction, label_smoothing)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    # PyTorch reads a target shaped like the input as class probabilities, whatever its dtype.
    probability_target = target.shape == input.shape
    if probability_target and not target.is_floating_point():
        raise RuntimeError("Expected floating point type for target with class probabilities, "
                           f"got {dtype_name(target.dtype)}")
    if probability_target and input.ndim == 0:
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")
    cdim = _class_dim(input)
    if not probability_target and label_smoothing == 0.0:
        return nll_loss(ember.log_softmax(input, cdim), target, weight, None, ignore_index,
                        None, reduction)
    log_probs = ember.log_softmax(input, cdim)
    if probability_target:
        return _cross_entropy_probabilities(log_probs, target, weight, reduction,
                                            label_smoothing, cdim)
    nll = nll_loss(log_probs, target, weight, None, ignore_index, None, reduction)
    n_classes = input.shape[cdim]
    ignore_mask = target.long() == ignore_index
    if weight is not None:
        smooth = -(log_probs * _class_shaped(weight, log_probs, cdim)).sum(cdim)
    else:
        smooth = -log_probs.sum(cdim)
    smooth = smooth.masked_fill(ignore_mask, 0.0)
    if reduction == "mean":
        weights = _target_weights(target.long(), weight, ignore_mask, input._dtype)
        smooth = smooth.sum() / weights.sum()
    else:
        smooth = _reduce(smooth, reduction)
    return mul_scalar(nll, 1 - label_smoothing) + mul_scalar(smooth, label_smoothing / n_classes)


def _cross_entropy_probabilities(log_probs, target, weight, reduction, label_smoothing, cdim):
    n_classes = log_probs.shape[cdim]
    _check_class_weight(weight, n_classes)
    if label_smoothing > 0:
        # scalar operands, as torch's composite (MulBackward1, AddBackward1)
        target = add_scalar(mul_scalar(target, 1 - label_smoothing), label_smoothing / n_classes)
    terms = log_probs * target
    if weight is not None:
        terms = terms * _class_shaped(weight, log_probs, cdim)
    # PyTorch negates after summing (every term at once unless reduction is "none")
    if reduction == "mean":
        return div_scalar(-terms.sum(), log_probs.numel() // n_classes if n_classes else 0)
    if reduction == "sum":
        return -terms.sum()
    return -terms.sum(cdim)


# ---- binary classification --------------------------------------------------------------------

def _check_unit_interval(t, what):
    data = t._data
    if bool(t._backend.xp.any((data < 0) | (data > 1))):
        raise RuntimeError(f"all elements of {what} should be between 0 and 1")


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    if _autocast.active and _autocast.enabled_for(input, "binary_cross_entropy"):
        return _autocast.run(binary_cross_entropy, "binary_cross_entropy", input, target, weight,
                             size_average, reduce, reduction)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         "size.")
    _refuse_integers("binary_cross_entropy", input, target)
    _check_unit_interval(input, "input")
    _check_unit_interval(target, "target")
    fused.check_not_differentiable("binary_cross_entropy", "weight", weight)
    if weight is not None:
        weight = weight.expand(ember.broadcast_shapes(target.shape, weight.shape))
    return fused.binary_cross_entropy(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    if _autocast.active and _autocast.enabled_for(input, "binary_cross_entropy_with_logits"):
        return _autocast.run(binary_cross_entropy_with_logits, "binary_cross_entropy_with_logits",
                             input, target, weight, size_average, reduce, reduction, pos_weight)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    _refuse_integers("log_sigmoid_cpu", input, target)
    fused.check_not_differentiable("binary_cross_entropy_with_logits", "weight", weight)
    fused.check_not_differentiable("binary_cross_entropy_with_logits", "pos_weight",
                                   pos_weight)
    return fused.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if _autocast.active and _autocast.enabled_for(input, "kl_div"):
        return _autocast.run(kl_div, "kl_div", input, target, size_average, reduce, reduction,
                             log_target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    elif reduction not in ("none", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if any(t.dtype.is_signed and not t.dtype.is_floating_point and not t.dtype.is_complex
           or t.dtype is ember.uint8 for t in (input, target)):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = ember.xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim != 0 else total
    return _reduce(loss, reduction)


# ---- likelihood losses ------------------------------------------------------------------------

def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    if _autocast.active and _autocast.enabled_for(input, "poisson_nll_loss"):
        return _autocast.run(poisson_nll_loss, "poisson_nll_loss", input, target, log_input, full,
                             size_average, eps, reduce, reduction)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        # Stirling's approximation of log(target!), which PyTorch adds only where target > 1.
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ember.ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)  # one variance per sample, shared by the last dimension
        elif input.ndim == var.ndim and sum(
                v for i, v in zip(input.shape, var.shape) if i != v) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    # The clamp is not differentiated: the gradient reaches ``var`` as if unclamped.
    var = var.clone()
    with ember.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ---- margin and embedding losses --------------------------------------------------------------

_COSINE_EPSILON = 1e-12


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    if _autocast.active and _autocast.enabled_for(input1, "cosine_embedding_loss"):
        return _autocast.run(cosine_embedding_loss, "cosine_embedding_loss", input1, input2, target,
                             margin, size_average, reduce, reduction)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    tdim = target.ndim
    if tdim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if tdim == 1 and not (input1.ndim == 2 and input2.ndim == 2):
        raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    if tdim == 0 and not (input1.ndim == 1 and input2.ndim == 1):
        raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    dot = (input1 * input2).sum(tdim)
    norm1 = add_scalar((input1 * input1).sum(tdim), _COSINE_EPSILON)
    norm2 = add_scalar((input2 * input2).sum(tdim), _COSINE_EPSILON)
    cos = dot / (norm1 * norm2).sqrt()
    zeros = ember.zeros_like(cos)
    loss = (ember.where(target == 1, number_minus(1, cos), zeros)
            + ember.where(target == -1, ember.clamp_min(sub_scalar(cos, margin), 0), zeros))
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    if _autocast.active and _autocast.enabled_for(input1, "margin_ranking_loss"):
        return _autocast.run(margin_ranking_loss, "margin_ranking_loss", input1, input2, target,
                             margin, size_average, reduce, reduction)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ")
    # the margin is a C++ double in PyTorch, so integer inputs give a floating-point loss
    loss = ember.clamp_min(add_scalar(-target * (input1 - input2), float(margin)), 0)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    if _autocast.active and _autocast.enabled_for(input, "hinge_embedding_loss"):
        return _autocast.run(hinge_embedding_loss, "hinge_embedding_loss", input, target, margin,
                             size_average, reduce, reduction)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    if input.dtype._kind == 1:  # PyTorch keeps an integer input's dtype (margin truncated)
        margin = int(margin)
    zeros = ember.zeros_like(input)
    loss = (ember.where(target != 1, ember.clamp_min(number_minus(margin, input), 0), zeros)
            + ember.where(target != -1, input, zeros))
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    if _autocast.active and _autocast.enabled_for(input, "soft_margin_loss"):
        return _autocast.run(soft_margin_loss, "soft_margin_loss", input, target, size_average,
                             reduce, reduction)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    fused.check_not_differentiable("soft_margin_loss", "target", target)
    if input.dtype._kind == 1:  # PyTorch writes the float loss into an input-typed buffer
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{dtype_name(input.dtype)}")
    return fused.soft_margin_loss(input, target, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    reduction = _resolve_reduction(reduction, size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    if _autocast.active and _autocast.enabled_for(input, "multilabel_margin_loss"):
        return _autocast.run(multilabel_margin_loss, "multilabel_margin_loss", input, target,
                             size_average, reduce, reduction)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    x, y = fused.as_batch(input, target)
    n_classes = x.shape[1]
    if bool(((y < -1) | (y >= n_classes)).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    return fused.multilabel_margin_loss(input, target, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    if _autocast.active and _autocast.enabled_for(input, "multi_margin_loss"):
        return _autocast.run(multi_margin_loss, "multi_margin_loss", input, target, p, margin,
                             weight, size_average, reduce, reduction)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    batch = 1 if input.ndim <= 1 else input.shape[0]
    if target.numel() != batch or target.ndim > 1:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to "
                           "the number of input samples (batch size). Expected target size "
                           f"[{batch}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    # PyTorch's kernel checks, in its order: the input's dtype, the target's, then its range.
    if input._dtype._kind < 2:
        raise NotImplementedError("\"multi_margin_loss_cpu_kernel\" not implemented for "
                                  f"'{dtype_name(input._dtype)}'")
    if target._dtype is not dt.int64:
        raise RuntimeError(f"expected scalar type Long but found {dtype_name(target._dtype)}")
    x, y = fused.as_batch(input, target)
    n_classes = x.shape[1]
    if bool(y._backend.xp.any((y._data < 0) | (y._data >= n_classes))):
        raise RuntimeError("target out of range")
    y = y.reshape(-1, 1)
    fused.check_not_differentiable("multi_margin_loss", "weight", weight)
    weights = None if weight is None else weight[y.reshape(-1)]
    return fused.multi_margin_loss(input, x, y, p, margin, weights, reduction)


def _pairwise_distance(x1, x2, p=2.0, eps=1e-6):
    return pairwise_distance(x1, x2, p, eps)


def _check_triplet_dims(anchor, positive, negative):
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not a == p == n:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {p}D, and "
                           f"negative {n}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    if _autocast.active and _autocast.enabled_for(anchor, "triplet_margin_loss"):
        return _autocast.run(triplet_margin_loss, "triplet_margin_loss", anchor, positive, negative,
                             margin, p, eps, swap, size_average, reduce, reduction)
    reduction = _resolve_reduction(reduction, size_average, reduce)
    _check_triplet_dims(anchor, positive, negative)
    dist_pos = _pairwise_distance(anchor, positive, p, eps)
    dist_neg = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = ember.minimum(dist_neg, _pairwise_distance(positive, negative, p, eps))
    return _reduce(ember.clamp_min(add_scalar(dist_pos, margin) - dist_neg, 0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    distance = distance_function if distance_function is not None else _pairwise_distance
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = ember.minimum(dist_neg, distance(positive, negative))
    return _reduce(ember.clamp_min(margin + dist_pos - dist_neg, 0), reduction)


# ---- connectionist temporal classification ----------------------------------------------------

def _lengths(value, batch, what):
    if isinstance(value, Tensor):
        value = value.reshape(-1).tolist()
    elif isinstance(value, int):
        value = [value]
    value = [int(v) for v in value]
    if len(value) != batch:
        raise RuntimeError(f"{what} must be of size batch_size")
    return value


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Each sample's negative log-likelihood is ``ember.ops.loss.ctc_loss``; ``zero_infinity``
    and the reduction are applied to it here, as in PyTorch's composite."""
    if _autocast.active and _autocast.enabled_for(log_probs, "ctc_loss"):
        return _autocast.run(ctc_loss, "ctc_loss", log_probs, targets, input_lengths,
                             target_lengths, blank, reduction, zero_infinity)
    reduction = _resolve_reduction(reduction)
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0)
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss expects log_probs to be a 2-D or 3-D tensor, but got "
                           f"{log_probs.ndim}-D")
    n_time, batch, n_classes = log_probs.shape
    if not 0 <= blank < n_classes:
        raise RuntimeError("blank must be in label range")
    in_lens = _lengths(input_lengths, batch, "input_lengths")
    tgt_lens = _lengths(target_lengths, batch, "target_lengths")
    for length in in_lens:
        if length > n_time:
            raise RuntimeError(f"Expected input_lengths to have value at most {n_time}, but got "
                               f"value {length} (while checking arguments for "
                               "ctc_loss_allocate_outputs)")
    if targets.ndim == 2:  # padded (N, S)
        rows = targets.tolist()
        labels = [rows[n][:tgt_lens[n]] for n in range(batch)]
    else:  # the batch's targets concatenated
        flat = targets.tolist()
        offsets = [sum(tgt_lens[:n]) for n in range(batch)]
        labels = [flat[o:o + l] for o, l in zip(offsets, tgt_lens)]
    loss = fused.ctc_loss(log_probs, labels, in_lens, tgt_lens, blank)
    if zero_infinity:
        loss = ember.where(loss == math.inf, 0.0, loss)
    if reduction == "mean":
        divisor = ember.tensor([max(l, 1) for l in tgt_lens], dtype=log_probs.dtype,
                               device=log_probs.device)
        return (loss / divisor).mean()
    if unbatched:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)
