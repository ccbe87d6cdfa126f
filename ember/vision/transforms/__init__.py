"""``ember.vision.transforms``, as ``torchvision.transforms``: v1 transforms here,
``transforms.v2`` beside them, the functional forms in ``transforms.functional``."""
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _transforms_all
from .autoaugment import AutoAugment, AutoAugmentPolicy, AugMix, RandAugment, TrivialAugmentWide

__all__ = [*_transforms_all, "AutoAugment", "AutoAugmentPolicy", "AugMix", "RandAugment",
           "TrivialAugmentWide"]
