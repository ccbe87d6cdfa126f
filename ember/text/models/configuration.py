"""Model configurations with Hugging Face's field names and defaults, read from and written to
the ``config.json`` that ``transformers`` writes beside a checkpoint.

A configuration is a bag of attributes: the fields an architecture knows get HF's defaults, and
any other key in a ``config.json`` (``architectures``, ``id2label``, ``_name_or_path``…) is kept
as an attribute and written back, so a file read and saved again loses nothing.
"""
import copy
import json
import os

CONFIG_NAME = "config.json"

# Fields every HF configuration carries (PretrainedConfig's own), with its defaults.
_COMMON_DEFAULTS = {
    "architectures": None,
    "output_hidden_states": False,
    "output_attentions": False,
    "return_dict": True,
    "dtype": None,
    "is_encoder_decoder": False,
    "is_decoder": False,
    "add_cross_attention": False,
    "tie_word_embeddings": True,
    "pad_token_id": None,
    "bos_token_id": None,
    "eos_token_id": None,
    "use_cache": True,
}


class PretrainedConfig:
    """The base configuration: ``from_pretrained(dir)``, ``from_dict``, ``to_dict``,
    ``save_pretrained(dir)``, as ``transformers.PretrainedConfig``."""

    model_type = ""
    #: HF's aliases: ``config.hidden_size`` reads ``n_embd`` on GPT-2, for instance
    attribute_map = {}
    _defaults = {}

    def __init__(self, **kwargs):
        # Older files name the dtype "torch_dtype"; HF 5 calls it "dtype".
        if "torch_dtype" in kwargs and kwargs.get("dtype") is None:
            kwargs["dtype"] = kwargs.pop("torch_dtype")
        kwargs.pop("model_type", None)
        values = {**_COMMON_DEFAULTS, **self._defaults}
        for key, value in kwargs.items():
            values[self.attribute_map.get(key, key)] = value
        for key, value in values.items():
            setattr(self, key, copy.deepcopy(value))
        self._post_init()

    def _post_init(self):
        """Fill fields whose default depends on others (HF computes them in ``__init__``)."""

    def __getattr__(self, name):
        # Only reached when ``name`` is not an attribute: follow HF's alias table.
        mapped = type(self).attribute_map.get(name)
        if mapped is not None:
            return getattr(self, mapped)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        super().__setattr__(type(self).attribute_map.get(name, name), value)

    def __eq__(self, other):
        return isinstance(other, PretrainedConfig) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return f"{type(self).__name__} {self.to_json_string()}"

    # -- dict / json ---------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, config_dict, **kwargs):
        return cls(**{**config_dict, **kwargs})

    def to_dict(self):
        out = {key: copy.deepcopy(value) for key, value in vars(self).items()
               if not key.startswith("_") or key == "_name_or_path"}
        out["model_type"] = self.model_type
        return out

    def to_json_string(self):
        def default(value):  # an ember dtype in ``dtype``
            return str(value).replace("ember.", "")
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, default=default) + "\n"

    @classmethod
    def from_json_file(cls, path):
        with open(path, encoding="utf-8") as file:
            return cls.from_dict(json.load(file))

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):
        """Read ``config.json`` from a local folder (or the file itself)."""
        path = os.fspath(pretrained_model_name_or_path)
        if os.path.isdir(path):
            path = os.path.join(path, CONFIG_NAME)
        if not os.path.isfile(path):
            raise OSError(f"{pretrained_model_name_or_path!r} has no {CONFIG_NAME}: Ember reads "
                          "local folders only (download the model first, e.g. with "
                          "`huggingface-cli download`)")
        with open(path, encoding="utf-8") as file:
            config_dict = json.load(file)
        kind = config_dict.get("model_type")
        if cls.model_type and kind and kind != cls.model_type:
            raise ValueError(f"{path} holds a {kind!r} configuration, not {cls.model_type!r}: "
                             "use ember.text.models.AutoConfig to pick the class")
        return cls.from_dict(config_dict, **kwargs)

    def save_pretrained(self, save_directory):
        os.makedirs(save_directory, exist_ok=True)
        with open(os.path.join(save_directory, CONFIG_NAME), "w", encoding="utf-8") as file:
            file.write(self.to_json_string())


class BertConfig(PretrainedConfig):
    model_type = "bert"
    _defaults = {
        "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
        "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": 512, "type_vocab_size": 2, "initializer_range": 0.02,
        "layer_norm_eps": 1e-12, "pad_token_id": 0, "classifier_dropout": None,
        "position_embedding_type": "absolute",
    }

    def _post_init(self):
        if self.position_embedding_type != "absolute":
            raise NotImplementedError(
                f"BertConfig: position_embedding_type={self.position_embedding_type!r} is not "
                "supported by Ember's BERT (only 'absolute')")


class GPT2Config(PretrainedConfig):
    model_type = "gpt2"
    attribute_map = {"hidden_size": "n_embd", "max_position_embeddings": "n_positions",
                     "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}
    _defaults = {
        "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
        "n_inner": None, "activation_function": "gelu_new", "resid_pdrop": 0.1,
        "embd_pdrop": 0.1, "attn_pdrop": 0.1, "layer_norm_epsilon": 1e-5,
        "initializer_range": 0.02, "summary_type": "cls_index", "summary_use_proj": True,
        "summary_activation": None, "summary_proj_to_labels": True,
        "summary_first_dropout": 0.1, "scale_attn_weights": True, "bos_token_id": 50256,
        "eos_token_id": 50256, "scale_attn_by_inverse_layer_idx": False,
        "reorder_and_upcast_attn": False,
    }


class LlamaConfig(PretrainedConfig):
    model_type = "llama"
    _defaults = {
        "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
        "hidden_act": "silu", "max_position_embeddings": 2048, "initializer_range": 0.02,
        "rms_norm_eps": 1e-6, "bos_token_id": 1, "eos_token_id": 2, "pretraining_tp": 1,
        "tie_word_embeddings": False, "rope_parameters": None, "attention_bias": False,
        "attention_dropout": 0.0, "mlp_bias": False, "head_dim": None,
    }

    def __init__(self, **kwargs):
        # HF 4.x files carry rope_theta / rope_scaling; HF 5 folds both into rope_parameters.
        theta = kwargs.pop("rope_theta", None)
        scaling = kwargs.pop("rope_scaling", None)
        rope = dict(kwargs.pop("rope_parameters", None) or scaling or {})
        rope.setdefault("rope_theta", float(10000.0 if theta is None else theta))
        rope.setdefault("rope_type", rope.pop("type", "default"))
        if rope["rope_type"] != "default":
            raise NotImplementedError(f"LlamaConfig: rope_type={rope['rope_type']!r} is not "
                                      "supported by Ember's Llama (only 'default')")
        super().__init__(rope_parameters=rope, **kwargs)

    def _post_init(self):
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"num_attention_heads ({self.num_attention_heads}) must be a "
                             f"multiple of num_key_value_heads ({self.num_key_value_heads})")

    @property
    def rope_theta(self):
        return self.rope_parameters["rope_theta"]


CONFIG_CLASSES = {cls.model_type: cls for cls in (BertConfig, GPT2Config, LlamaConfig)}
