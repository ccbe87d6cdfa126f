"""``ember.vision``, as ``torchvision``: ``import ember.vision as torchvision``.

The submodules (``models``, ``datasets``, ``transforms``, ``ops``, ``utils``, ``io``) are
imported on first attribute access, as ``ember``'s own lazy namespaces are: ``import
ember.vision`` costs nothing beyond ``import ember``, and a script touching only
``torchvision.transforms`` never builds the model zoo's registry.
"""
import importlib as _importlib

#: The torchvision release whose API this package follows.
__version__ = "0.28.0"

_LAZY_SUBMODULES = frozenset({"models", "datasets", "transforms", "ops", "utils", "io"})

# torchvision's module-level switches: the image backend for datasets that open files, and
# the video backend (Ember decodes no video; "pyav" is only torchvision's default name).
_image_backend = "PIL"
_video_backend = "pyav"


def set_image_backend(backend):
    """The package datasets load images with: ``"PIL"`` (Pillow). torchvision's ``"accimage"``
    is not supported."""
    global _image_backend
    if backend not in ("PIL", "accimage"):
        raise ValueError(f"Invalid backend '{backend}'. Options are 'PIL' and 'accimage'")
    if backend == "accimage":
        raise NotImplementedError("ember.vision loads images with Pillow only: the accimage "
                                  "backend is not supported")
    _image_backend = backend


def get_image_backend():
    """The name of the package used to load images (``"PIL"``)."""
    return _image_backend


def get_video_backend():
    """The name of the video backend (torchvision's default, ``"pyav"``); Ember reads no video."""
    return _video_backend


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'ember.vision' has no attribute '{name}'")


def __dir__():
    return sorted({*globals(), *_LAZY_SUBMODULES})
