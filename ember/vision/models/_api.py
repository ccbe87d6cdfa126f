"""The model registry and pretrained weights, as ``torchvision.models._api``.

A builder (``resnet18``…) is registered under its name by ``@register_model()``; its
``weights=`` argument takes a member of its ``WeightsEnum`` (``ResNet18_Weights.IMAGENET1K_V1``,
or ``.DEFAULT``, or the member's name as a string). Each member's ``Weights`` holds torchvision's
checkpoint URL, the preprocessing preset its accuracy was measured with (``transforms``) and
its ``meta`` (categories, parameter count, metrics…). ``get_state_dict`` goes through
``ember.hub.load_state_dict_from_url``, so a checkpoint that torchvision already downloaded into
``$TORCH_HOME/hub/checkpoints`` is used as it is.
"""
import fnmatch
import inspect
import typing
from dataclasses import dataclass
from enum import Enum
from functools import partial

__all__ = ["WeightsEnum", "Weights", "get_model", "get_model_builder", "get_model_weights",
           "get_weight", "list_models", "register_model"]


@dataclass
class Weights:
    """A checkpoint: ``url``, ``transforms`` (a callable building the inference preset, called
    on use because a preset may hold state) and ``meta``."""

    url: str
    transforms: typing.Callable
    meta: dict

    def __eq__(self, other):
        # Enum members are found again by equality when deep-copied or unpickled, and a deep
        # copy of a functools.partial is a different object: compare partials by content.
        if not isinstance(other, Weights):
            return NotImplemented
        if self.url != other.url or self.meta != other.meta:
            return False
        if isinstance(self.transforms, partial) and isinstance(other.transforms, partial):
            return (self.transforms.func == other.transforms.func
                    and self.transforms.args == other.transforms.args
                    and self.transforms.keywords == other.transforms.keywords)
        return self.transforms == other.transforms


# Every WeightsEnum subclass by class name, for get_weight("ResNet50_Weights.IMAGENET1K_V2").
_WEIGHTS_ENUMS = {}


class WeightsEnum(Enum):
    """The base of every model's weights enum; its members' values are ``Weights``."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _WEIGHTS_ENUMS[cls.__name__] = cls

    @classmethod
    def verify(cls, obj):
        """``obj`` as a member of this enum: a member passes, a name (``"IMAGENET1K_V1"`` or
        ``"ResNet18_Weights.IMAGENET1K_V1"``) is looked up, None stays None."""
        if obj is None:
            return None
        if type(obj) is str:
            return cls[obj.replace(cls.__name__ + ".", "")]
        if not isinstance(obj, cls):
            raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} but "
                            f"received {obj.__class__.__name__}.")
        return obj

    def get_state_dict(self, *args, **kwargs):
        """The checkpoint's state dict, downloaded into the hub cache unless already there
        (arguments as ``ember.hub.load_state_dict_from_url``'s after ``url``)."""
        from ember.hub import load_state_dict_from_url
        return load_state_dict_from_url(self.url, *args, **kwargs)

    def __repr__(self):
        return f"{self.__class__.__name__}.{self._name_}"

    @property
    def url(self):
        return self.value.url

    @property
    def transforms(self):
        return self.value.transforms

    @property
    def meta(self):
        return self.value.meta


def get_weight(name):
    """The weights enum member named ``"<Enum>.<MEMBER>"``, e.g. ``"ResNet50_Weights.DEFAULT"``."""
    try:
        enum_name, value_name = name.split(".")
    except ValueError:
        raise ValueError(f"Invalid weight name provided: '{name}'.") from None
    _import_builtin_models()
    weights_enum = _WEIGHTS_ENUMS.get(enum_name)
    if weights_enum is None:
        raise ValueError(f"The weight enum '{enum_name}' for the specific method couldn't be "
                         "retrieved.")
    return weights_enum[value_name]


def get_model_weights(name):
    """The weights enum class of a model builder, given the builder or its registered name."""
    builder = get_model_builder(name) if isinstance(name, str) else name
    return _get_enum_from_fn(builder)


def _get_enum_from_fn(fn):
    """The ``WeightsEnum`` that the annotation of ``fn``'s ``weights`` parameter names."""
    parameters = inspect.signature(fn).parameters
    if "weights" not in parameters:
        raise ValueError("The method is missing the 'weights' argument.")
    annotation = parameters["weights"].annotation
    candidates = (annotation, *typing.get_args(annotation))
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, WeightsEnum):
            return candidate
    raise ValueError("The WeightsEnum class for the specific method couldn't be retrieved. Make "
                     "sure the typing info is correct.")


BUILTIN_MODELS = {}


def register_model(name=None):
    """Register a model builder under ``name`` (default: the function's name)."""
    def wrapper(fn):
        key = name if name is not None else fn.__name__
        if key in BUILTIN_MODELS:
            raise ValueError(f"An entry is already registered under the name '{key}'.")
        BUILTIN_MODELS[key] = fn
        return fn
    return wrapper


def _import_builtin_models():
    # The registry fills as the family files are imported; ember.vision.models imports them all.
    import ember.vision.models  # noqa: F401


def list_models(module=None, include=None, exclude=None):
    """The sorted names of registered models, optionally only those defined in ``module`` and
    filtered by ``include``/``exclude`` shell-style patterns (``"resnet*"``)."""
    _import_builtin_models()
    all_models = {key for key, fn in BUILTIN_MODELS.items()
                  if module is None or fn.__module__.rsplit(".", 1)[0] == module.__name__}
    if include:
        include = [include] if isinstance(include, str) else include
        models = set()
        for pattern in include:
            models |= set(fnmatch.filter(all_models, pattern))
    else:
        models = all_models
    if exclude:
        exclude = [exclude] if isinstance(exclude, str) else exclude
        for pattern in exclude:
            models -= set(fnmatch.filter(all_models, pattern))
    return sorted(models)


def get_model_builder(name):
    """The builder function registered under ``name`` (case-insensitive)."""
    _import_builtin_models()
    name = name.lower()
    try:
        return BUILTIN_MODELS[name]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name, **config):
    """``get_model_builder(name)(**config)``: e.g. ``get_model("resnet50", weights="DEFAULT")``."""
    return get_model_builder(name)(**config)
