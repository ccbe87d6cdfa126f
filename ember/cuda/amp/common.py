__all__ = ["amp_definitely_not_available"]


def amp_definitely_not_available():
    """True when no CUDA device can run here: what makes a "cuda" GradScaler disable itself.
    (PyTorch also counts an installed torch_xla; Ember has no XLA backend.)"""
    from .. import is_available
    return not is_available()
