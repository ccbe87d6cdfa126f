"""The language-modelling loss the causal models share (HF's ``ForCausalLMLoss``)."""
from ...nn import functional as F


def causal_lm_loss(logits, labels):
    """Next-token cross-entropy: position i predicts label i + 1; -100 labels are ignored."""
    shifted = logits[..., :-1, :].reshape(-1, logits.shape[-1])
    return F.cross_entropy(shifted.float(), labels[..., 1:].reshape(-1), ignore_index=-100)
