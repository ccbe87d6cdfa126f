"""Model outputs as Hugging Face returns them: a dataclass whose fields are also the keys of an
ordered dict and the items of a tuple, so ``out.logits``, ``out["logits"]`` and ``out[0]`` all
work. As in HF, fields left ``None`` are absent from the dict and the tuple view."""
from collections import OrderedDict
from dataclasses import dataclass, fields
from typing import Any, Optional


class ModelOutput(OrderedDict):
    """Base of the output dataclasses (``transformers.utils.ModelOutput``)."""

    def __post_init__(self):
        for field in fields(self):
            value = getattr(self, field.name)
            if value is not None:
                super().__setitem__(field.name, value)

    def __getitem__(self, key):
        if isinstance(key, str):
            return dict(self.items())[key]
        return self.to_tuple()[key]

    def __setattr__(self, name, value):
        if name in self.keys() and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def __reduce__(self):
        return type(self), tuple(getattr(self, field.name) for field in fields(self))

    def to_tuple(self):
        return tuple(self[key] for key in self.keys())


@dataclass(eq=False)
class BaseModelOutput(ModelOutput):
    last_hidden_state: Any = None
    hidden_states: Optional[tuple] = None
    attentions: Optional[tuple] = None


@dataclass(eq=False)
class BaseModelOutputWithPast(ModelOutput):
    last_hidden_state: Any = None
    past_key_values: Optional[tuple] = None
    hidden_states: Optional[tuple] = None
    attentions: Optional[tuple] = None


@dataclass(eq=False)
class BaseModelOutputWithPoolingAndCrossAttentions(ModelOutput):
    last_hidden_state: Any = None
    pooler_output: Any = None
    hidden_states: Optional[tuple] = None
    past_key_values: Optional[tuple] = None
    attentions: Optional[tuple] = None
    cross_attentions: Optional[tuple] = None


@dataclass(eq=False)
class CausalLMOutputWithPast(ModelOutput):
    loss: Any = None
    logits: Any = None
    past_key_values: Optional[tuple] = None
    hidden_states: Optional[tuple] = None
    attentions: Optional[tuple] = None


@dataclass(eq=False)
class MaskedLMOutput(ModelOutput):
    loss: Any = None
    logits: Any = None
    hidden_states: Optional[tuple] = None
    attentions: Optional[tuple] = None
