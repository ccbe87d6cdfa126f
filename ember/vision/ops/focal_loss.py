"""Sigmoid focal loss (Lin et al., RetinaNet): binary cross-entropy scaled by
``(1 - p_t) ** gamma`` so easy examples count less, with class weight ``alpha``."""
import ember
from ember.nn import functional as F


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2, reduction="none"):
    """``inputs`` are logits, ``targets`` the same shape in ``[0, 1]``; ``alpha < 0`` turns
    the class weighting off. ``reduction`` is ``"none"``, ``"mean"`` or ``"sum"``."""
    p = ember.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"Invalid Value for arg 'reduction': '{reduction} \n Supported reduction "
                     f"modes: 'none', 'mean', 'sum'")
