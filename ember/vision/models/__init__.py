"""``ember.vision.models``, as ``torchvision.models``: the image classification model zoo.

Each builder (``resnet18(weights=ResNet18_Weights.DEFAULT)``…) makes the model with
torchvision's module names, so ``state_dict`` keys are torchvision's and its checkpoints load
as they are; ``weights=`` fetches them through ``ember.hub`` (see ``_api.py``).
"""
from .alexnet import *  # noqa: F401,F403
from .convnext import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .efficientnet import *  # noqa: F401,F403
from .googlenet import *  # noqa: F401,F403
from .mobilenetv2 import *  # noqa: F401,F403
from .mobilenetv3 import *  # noqa: F401,F403
from .regnet import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .shufflenetv2 import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .swin_transformer import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
from .vision_transformer import *  # noqa: F401,F403
from ._api import (Weights, WeightsEnum, get_model, get_model_builder,  # noqa: F401
                   get_model_weights, get_weight, list_models)

# torchvision's task packages that Ember does not provide: a clear error instead of a bare
# AttributeError, since scripts reach for them by attribute (torchvision.models.detection...).
_MISSING_TASKS = ("detection", "segmentation", "video", "optical_flow", "quantization",
                  "feature_extraction")
# torchvision's classifiers beyond this zoo.
_MISSING_MODELS = ("inception_v3", "mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3",
                   "maxvit_t", "efficientnet_v2_s", "efficientnet_v2_m", "efficientnet_v2_l",
                   "swin_v2_t", "swin_v2_s", "swin_v2_b")


def __getattr__(name):
    if name in _MISSING_TASKS:
        raise AttributeError(f"ember.vision.models has no '{name}': Ember provides torchvision's "
                             "image classification models only (torchvision.models."
                             f"{name} is not implemented)")
    if name in _MISSING_MODELS:
        raise AttributeError(f"ember.vision.models has no '{name}': this torchvision model is "
                             "not implemented in Ember")
    raise AttributeError(f"module 'ember.vision.models' has no attribute '{name}'")
