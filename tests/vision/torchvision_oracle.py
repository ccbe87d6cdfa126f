"""torchvision 0.28 as the test oracle, imported beside the CPU torch build.

torchvision's compiled ops do not load against this torch build: importing it fails while
``torchvision._meta_registrations`` registers fake kernels for ``torchvision::nms`` & co. Its
pure-Python models and transforms need none of that, so the module is replaced by an empty one
before the import. The compiled ops (``torchvision.ops.nms``, ``roi_align``…) still do not run;
tests check Ember's against their definitions instead."""
import sys
import types

import pytest


def import_torchvision():
    """torchvision with its meta registrations skipped, or a skip naming why it is missing."""
    if "torchvision" not in sys.modules:
        sys.modules.setdefault("torchvision._meta_registrations",
                               types.ModuleType("torchvision._meta_registrations"))
    return pytest.importorskip("torchvision", reason="torchvision 0.28.0 is the vision oracle: "
                               "pip install --no-deps torchvision==0.28.0 pillow")
