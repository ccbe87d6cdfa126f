"""``AutoConfig`` / ``AutoModel`` / ``AutoModelForCausalLM`` / ``AutoModelForMaskedLM``: the
class is chosen by ``model_type`` in config.json, as in ``transformers``. (``AutoTokenizer`` is
``ember.text.AutoTokenizer``.)"""
import importlib
import json
import os

from .configuration import CONFIG_CLASSES, CONFIG_NAME

# model_type -> (module, class name); modules are imported only when a model is built
_MODEL_MAPPING = {"bert": ("bert", "BertModel"), "gpt2": ("gpt2", "GPT2Model"),
                  "llama": ("llama", "LlamaModel")}
_CAUSAL_LM_MAPPING = {"gpt2": ("gpt2", "GPT2LMHeadModel"),
                      "llama": ("llama", "LlamaForCausalLM")}
_MASKED_LM_MAPPING = {"bert": ("bert", "BertForMaskedLM")}


class AutoConfig:
    """``AutoConfig.from_pretrained(dir)``: the configuration class of config.json's
    ``model_type``."""

    def __init__(self):
        raise EnvironmentError("AutoConfig is instantiated with AutoConfig.from_pretrained(dir) "
                               "or AutoConfig.for_model(model_type)")

    @staticmethod
    def for_model(model_type, **kwargs):
        return _config_class(model_type)(**kwargs)

    @staticmethod
    def from_pretrained(pretrained_model_name_or_path, **kwargs):
        return _read_config(pretrained_model_name_or_path, **kwargs)


def _config_class(model_type):
    try:
        return CONFIG_CLASSES[model_type]
    except KeyError:
        raise ValueError(f"model_type {model_type!r} is not one Ember's text models know; "
                         f"known: {sorted(CONFIG_CLASSES)}") from None


def _read_config(path, **kwargs):
    folder = os.fspath(path)
    file = os.path.join(folder, CONFIG_NAME) if os.path.isdir(folder) else folder
    if not os.path.isfile(file):
        raise OSError(f"{path!r} has no {CONFIG_NAME}: Ember reads local folders only")
    with open(file, encoding="utf-8") as handle:
        config_dict = json.load(handle)
    kind = config_dict.get("model_type")
    if kind is None:
        raise ValueError(f"{file} has no 'model_type', so the Auto classes cannot choose an "
                         "architecture; build the model class directly")
    return _config_class(kind).from_dict(config_dict, **kwargs)


class _AutoModelBase:
    _mapping = {}

    def __init__(self):
        raise EnvironmentError(f"{type(self).__name__} is instantiated with "
                               f"{type(self).__name__}.from_pretrained(dir) or from_config(config)")

    @classmethod
    def _model_class(cls, config):
        entry = cls._mapping.get(config.model_type)
        if entry is None:
            raise ValueError(f"{cls.__name__} has no model for model_type "
                             f"{config.model_type!r}; known: {sorted(cls._mapping)}")
        module = importlib.import_module(f"{__package__}.{entry[0]}")
        return getattr(module, entry[1])

    @classmethod
    def from_config(cls, config, **kwargs):
        return cls._model_class(config).from_config(config, **kwargs)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, **kwargs):
        config = kwargs.pop("config", None) or _read_config(pretrained_model_name_or_path)
        return cls._model_class(config).from_pretrained(
            pretrained_model_name_or_path, *model_args, config=config, **kwargs)


class AutoModel(_AutoModelBase):
    _mapping = _MODEL_MAPPING


class AutoModelForCausalLM(_AutoModelBase):
    _mapping = _CAUSAL_LM_MAPPING


class AutoModelForMaskedLM(_AutoModelBase):
    _mapping = _MASKED_LM_MAPPING
