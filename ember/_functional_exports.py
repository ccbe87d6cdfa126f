"""Layer functions that ``torch`` exposes at its top level (``torch.conv2d``, ``torch.layer_norm``…).

PyTorch binds these straight to its ATen kernels, so several take ATen's argument list rather
than ``nn.functional``'s: losses take ``reduction`` as an int (0 none, 1 mean, 2 sum),
``torch.dropout(input, p, train)`` has no defaults, ``torch.embedding`` takes the weight first,
the normalisations take a trailing ``cudnn_enabled`` flag. Code written against ``torch.*``
calls them that way. Their default ``reduction`` is 0 (none): ATen declares ``Mean``, but
``torch.kl_div(a, b)`` and its siblings return the unreduced loss, and Ember follows what torch
does. The wrappers here translate to the ``nn.functional`` implementation
and add no maths of their own."""
from .nn import functional as F
from .ops import dropout as _dropout
from .ops.dropout import check_aten_p

# Same argument list as nn.functional: the function itself.
_SAME_SIGNATURE = [
    "adaptive_avg_pool1d", "avg_pool1d", "bilinear", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "hardshrink",
    "max_pool1d_with_indices", "pixel_shuffle", "pixel_unshuffle", "prelu", "rrelu", "rrelu_",
    "rms_norm", "conv_tbc",
]
__all__ = list(_SAME_SIGNATURE) + [
    "native_channel_shuffle", "adaptive_max_pool1d", "max_pool1d", "max_pool2d", "max_pool3d",
    "dropout", "alpha_dropout", "feature_alpha_dropout", "feature_dropout", "embedding",
    "batch_norm", "instance_norm", "layer_norm", "group_norm", "binary_cross_entropy_with_logits",
    "cosine_embedding_loss", "hinge_embedding_loss", "kl_div", "margin_ranking_loss",
    "poisson_nll_loss", "triplet_margin_loss", "ctc_loss",
]
globals().update({name: getattr(F, name) for name in _SAME_SIGNATURE})
native_channel_shuffle = F.channel_shuffle  # torch has no derivative for it; Ember's is free

_REDUCTION_NAMES = ("none", "mean", "sum")


def _reduction(code):
    """ATen's reduction enum as nn.functional's string."""
    if isinstance(code, str):
        return code
    if code not in (0, 1, 2):
        raise ValueError(f"{code} is not a valid value for reduction")
    return _REDUCTION_NAMES[code]


def adaptive_max_pool1d(input, output_size):
    # ATen returns the indices as well, always.
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def dropout(input, p, train):
    check_aten_p(p)  # ATen's RuntimeError, where nn.functional raises ValueError
    return F.dropout(input, p, train)


def alpha_dropout(input, p, train):
    check_aten_p(p)
    return F.alpha_dropout(input, p, train)


def feature_alpha_dropout(input, p, train):
    check_aten_p(p)
    return F.feature_alpha_dropout(input, p, train)


def feature_dropout(input, p, train):
    check_aten_p(p)  # nn.functional has no feature_dropout: dropout1d/2d/3d reach it
    return _dropout.feature_dropout(input, p, train)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    # The ATen op itself, without nn.functional's Python checks (torch.embedding has none):
    # a negative padding_idx (ATen's -1) means no padding index.
    from .ops.embedding import embedding as _embedding
    return _embedding(indices, weight, None if padding_idx < 0 else padding_idx, None, 2.0,
                      scale_grad_by_freq, sparse)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    # ATen reads the batch and channel sizes before any check: an IndexError below 2-D
    input.size(0), input.size(1)
    return F.group_norm(input, num_groups, weight, bias, eps)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def kl_div(input, target, reduction=0, log_target=False):
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        reduction=0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction), zero_infinity)
