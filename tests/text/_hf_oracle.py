"""transformers (the test oracle) beside this torch build. transformers imports torchvision when
it is installed, and torchvision's compiled-op registrations do not load against this torch
("operator torchvision::nms does not exist"); as tests/vision/torchvision_oracle.py does, the
registrations module is replaced by an empty one before the import, so torchvision (and the
vision tests in the same session) keep working."""
import importlib
import sys
import types


def transformers():
    if "torchvision" not in sys.modules:
        sys.modules.setdefault("torchvision._meta_registrations",
                               types.ModuleType("torchvision._meta_registrations"))
    return importlib.import_module("transformers")
