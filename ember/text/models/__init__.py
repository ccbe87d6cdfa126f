"""Transformer models that load Hugging Face checkpoints, written in plain ``ember.nn``: BERT,
GPT-2 and Llama, the ``Auto*`` classes, ``generate`` and sentence embeddings (MiniLM).

Class, argument and output names are HF's, so code written for ``transformers`` reads the same::

    from ember.text.models import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained("path/to/gpt2")
    out = model.generate(input_ids, max_new_tokens=20, do_sample=True, top_p=0.9)
"""
from .auto import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM
from .bert import BertForMaskedLM, BertModel, BertPreTrainedModel, mean_pooling
from .configuration import BertConfig, GPT2Config, LlamaConfig, PretrainedConfig
from .generation import GenerationMixin
from .gpt2 import GPT2LMHeadModel, GPT2Model, GPT2PreTrainedModel
from .llama import LlamaForCausalLM, LlamaModel, LlamaPreTrainedModel
from .modeling_outputs import (BaseModelOutput, BaseModelOutputWithPast,
                               BaseModelOutputWithPoolingAndCrossAttentions,
                               CausalLMOutputWithPast, MaskedLMOutput, ModelOutput)
from .modeling_utils import PreTrainedModel
from .sentence_embedding import SentenceEmbedder

__all__ = [
    "AutoConfig", "AutoModel", "AutoModelForCausalLM", "AutoModelForMaskedLM",
    "BertConfig", "BertForMaskedLM", "BertModel", "BertPreTrainedModel", "mean_pooling",
    "GPT2Config", "GPT2LMHeadModel", "GPT2Model", "GPT2PreTrainedModel",
    "LlamaConfig", "LlamaForCausalLM", "LlamaModel", "LlamaPreTrainedModel",
    "GenerationMixin", "PreTrainedModel", "PretrainedConfig", "SentenceEmbedder",
    "ModelOutput", "BaseModelOutput", "BaseModelOutputWithPast",
    "BaseModelOutputWithPoolingAndCrossAttentions", "CausalLMOutputWithPast", "MaskedLMOutput",
]
