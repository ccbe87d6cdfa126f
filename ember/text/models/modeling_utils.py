"""``PreTrainedModel``: the part every Hugging Face architecture shares — reading a checkpoint
folder (``config.json`` + ``model.safetensors`` or ``pytorch_model.bin``) with HF's key names,
writing one back, weight initialisation and tied embeddings.

Loading follows ``transformers``: a head model (``BertForMaskedLM``) accepts a checkpoint of its
base model (keys without the ``bert.`` prefix) and a base model accepts a head model's checkpoint
(the prefix is stripped and the head's weights are reported unexpected). TF-era names
``LayerNorm.gamma``/``beta`` are renamed to ``weight``/``bias``. Missing and unexpected keys are
logged, and returned with ``output_loading_info=True``.
"""
import logging
import os
import re

from ... import nn
from ..._dtype import dtype as _dtype_class
from ...autograd.grad_mode import no_grad
from .configuration import CONFIG_NAME, PretrainedConfig

logger = logging.getLogger("ember.text")

SAFE_WEIGHTS_NAME = "model.safetensors"
WEIGHTS_NAME = "pytorch_model.bin"


def _resolve_dtype(dtype, config):
    """An ember dtype from ``dtype=`` (an ember dtype, its name, or "auto": the config's)."""
    import ember
    if dtype == "auto":
        dtype = getattr(config, "dtype", None)
        if dtype is None:
            return None
    if dtype is None or isinstance(dtype, _dtype_class):
        return dtype
    name = str(dtype).replace("torch.", "").replace("ember.", "")
    resolved = getattr(ember, name, None)
    if not isinstance(resolved, _dtype_class):
        raise ValueError(f"dtype={dtype!r} is not an Ember dtype")
    return resolved


def _read_checkpoint(folder):
    """The state dict in ``folder``: model.safetensors first, then pytorch_model.bin."""
    safe = os.path.join(folder, SAFE_WEIGHTS_NAME)
    if os.path.isfile(safe):
        from ...utils.safetensors import load_file
        return load_file(safe)
    binary = os.path.join(folder, WEIGHTS_NAME)
    if os.path.isfile(binary):
        from ...serialization import load
        return load(binary, map_location="cpu", weights_only=True)
    if any(name.endswith(".index.json") for name in os.listdir(folder)):
        raise OSError(f"{folder} holds a sharded checkpoint (*.index.json), which Ember's "
                      "from_pretrained does not read yet; merge the shards into one "
                      f"{SAFE_WEIGHTS_NAME}")
    raise OSError(f"{folder} has neither {SAFE_WEIGHTS_NAME} nor {WEIGHTS_NAME}")


def _rename_legacy_key(key):
    # TF-converted BERT checkpoints name LayerNorm's parameters gamma/beta.
    if key.endswith("LayerNorm.gamma"):
        return key[:-len("gamma")] + "weight"
    if key.endswith("LayerNorm.beta"):
        return key[:-len("beta")] + "bias"
    return key


class PreTrainedModel(nn.Module):
    """Base class of the models in ``ember.text.models`` (``transformers.PreTrainedModel``)."""

    config_class = PretrainedConfig
    #: the attribute holding the base model in a head model ("bert", "transformer", "model")
    base_model_prefix = ""
    #: checkpoint keys that are expected to be absent or extra (regular expressions)
    _keys_to_ignore_on_load_missing = ()
    _keys_to_ignore_on_load_unexpected = ()

    def __init__(self, config):
        super().__init__()
        if not isinstance(config, PretrainedConfig):
            raise TypeError(f"{type(self).__name__}(config): config must be a PretrainedConfig, "
                            f"got {type(config).__name__}")
        self.config = config

    def post_init(self):
        """Initialise every weight as HF does, then tie the embeddings (end of ``__init__``)."""
        self.apply(self._init_weights)
        self.tie_weights()

    def _init_weights(self, module):
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.padding_idx is not None:
                with no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.RMSNorm):
            nn.init.ones_(module.weight)

    # -- embeddings ----------------------------------------------------------------------------
    @property
    def base_model(self):
        return getattr(self, self.base_model_prefix, self)

    def get_input_embeddings(self):
        base = self.base_model
        if base is self:
            raise NotImplementedError(f"{type(self).__name__} must define get_input_embeddings")
        return base.get_input_embeddings()

    def get_output_embeddings(self):
        return None

    def _tied_weight_names(self):
        """The state-dict names that share the input embedding's storage when tied."""
        output = self.get_output_embeddings()
        if output is None or not getattr(self.config, "tie_word_embeddings", False):
            return set()
        return {name for name, module in self.named_modules() if module is output}

    def tie_weights(self):
        """Make the output embedding the input embedding's parameter (``tie_word_embeddings``)."""
        if self._tied_weight_names():
            self.get_output_embeddings().weight = self.get_input_embeddings().weight

    # -- properties ----------------------------------------------------------------------------
    @property
    def device(self):
        return next(self.parameters()).device

    @property
    def dtype(self):
        return next(self.parameters()).dtype

    def num_parameters(self, only_trainable=False):
        seen = {}
        for p in self.parameters():
            if p.requires_grad or not only_trainable:
                seen[id(p)] = p.numel()
        return sum(seen.values())

    # -- loading -------------------------------------------------------------------------------
    @classmethod
    def from_config(cls, config, dtype=None):
        model = cls(config)
        dtype = _resolve_dtype(dtype, config)
        return model.to(dtype) if dtype is not None else model

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, config=None,
                        dtype=None, device=None, output_loading_info=False, state_dict=None,
                        torch_dtype=None, **kwargs):
        """Build the model from ``config.json`` in a local folder and load its weights.

        ``dtype``: an Ember dtype, its name, or ``"auto"`` (the dtype in config.json); the
        default keeps float32 parameters. ``device``: where the model goes. Extra keyword
        arguments update the configuration, as in HF (``from_pretrained(d, num_labels=3)``).
        """
        folder = os.fspath(pretrained_model_name_or_path)
        if not os.path.isdir(folder):
            raise OSError(f"{folder!r} is not a local folder: Ember's from_pretrained reads a "
                          f"folder holding {CONFIG_NAME} and {SAFE_WEIGHTS_NAME} (or "
                          f"{WEIGHTS_NAME}); it does not download")
        if config is None:
            config = cls.config_class.from_pretrained(folder, **kwargs)
        elif kwargs:
            for key, value in kwargs.items():
                setattr(config, key, value)
        config._name_or_path = folder
        model = cls(config, *model_args)
        if state_dict is None:
            state_dict = _read_checkpoint(folder)
        info = model._load_pretrained_state_dict(state_dict)
        dtype = _resolve_dtype(dtype if dtype is not None else torch_dtype, config)
        if dtype is not None:
            model = model.to(dtype)
        if device is not None:
            model = model.to(device)
        model.eval()  # HF returns models ready for inference (dropout off)
        if output_loading_info:
            return model, info
        return model

    def _load_pretrained_state_dict(self, state_dict):
        state_dict = {_rename_legacy_key(k): v for k, v in state_dict.items()}
        expected = set(self.state_dict().keys())
        prefix = self.base_model_prefix + "." if self.base_model_prefix else ""
        if prefix:
            has_prefix = any(k.startswith(prefix) for k in state_dict)
            expects_prefix = any(k.startswith(prefix) for k in expected)
            if has_prefix and not expects_prefix:  # a head checkpoint into the base model
                state_dict = {k[len(prefix):] if k.startswith(prefix) else k: v
                              for k, v in state_dict.items()}
            elif expects_prefix and not has_prefix:  # a base checkpoint into a head model
                state_dict = {prefix + k: v for k, v in state_dict.items()}
        tied = self._tied_weight_names()
        tied_keys = {f"{name}.weight" for name in tied}
        missing = sorted(expected - set(state_dict) - tied_keys)
        unexpected = sorted(set(state_dict) - expected)
        missing = [k for k in missing
                   if not any(re.search(p, k) for p in self._keys_to_ignore_on_load_missing)]
        unexpected = [k for k in unexpected
                      if not any(re.search(p, k) for p in self._keys_to_ignore_on_load_unexpected)]
        mismatched = []
        own = self.state_dict()
        for key in sorted(set(state_dict) & expected):
            if tuple(state_dict[key].shape) != tuple(own[key].shape):
                mismatched.append((key, tuple(state_dict[key].shape), tuple(own[key].shape)))
        if mismatched:
            lines = "\n".join(f"\t{k}: checkpoint {a}, model {b}" for k, a, b in mismatched)
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}: "
                               f"size mismatch\n{lines}")
        loadable = {k: v for k, v in state_dict.items() if k in expected}
        self.load_state_dict(loadable, strict=False)
        self.tie_weights()
        if unexpected:
            logger.warning("Some weights of the checkpoint were not used when initializing %s: "
                           "%s", type(self).__name__, unexpected)
        if missing:
            logger.warning("Some weights of %s were not initialized from the checkpoint and are "
                           "newly initialized: %s", type(self).__name__, missing)
        return {"missing_keys": missing, "unexpected_keys": unexpected,
                "mismatched_keys": [], "error_msgs": []}

    # -- saving --------------------------------------------------------------------------------
    def save_pretrained(self, save_directory, safe_serialization=True, state_dict=None):
        """Write ``config.json`` and the weights (``model.safetensors``, or
        ``pytorch_model.bin`` with ``safe_serialization=False``) with HF's key names; a tied
        output embedding is written once, under the input embedding's name, as HF does."""
        os.makedirs(save_directory, exist_ok=True)
        self.config.architectures = [type(self).__name__]
        self.config.save_pretrained(save_directory)
        if state_dict is None:
            state_dict = self.state_dict()
            for name in self._tied_weight_names():
                state_dict.pop(f"{name}.weight", None)
        state_dict = {k: v.detach().contiguous() for k, v in state_dict.items()}
        if safe_serialization:
            from ...utils.safetensors import save_file
            save_file(state_dict, os.path.join(save_directory, SAFE_WEIGHTS_NAME),
                      metadata={"format": "pt"})
        else:
            from ...serialization import save
            save(state_dict, os.path.join(save_directory, WEIGHTS_NAME))


def _no_attention_weights(output_attentions):
    # Attention runs fused (scaled_dot_product_attention), so the weights never exist as a
    # tensor; saying so beats returning attentions=None as if they had been asked for.
    if output_attentions:
        raise NotImplementedError("output_attentions=True is not supported by Ember's text "
                                  "models: attention runs as one fused "
                                  "scaled_dot_product_attention, which does not return the "
                                  "attention weights")
