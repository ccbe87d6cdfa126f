"""BERT (Devlin et al., 2018) as Hugging Face writes it, so its checkpoints load by key name:
``embeddings.*``, ``encoder.layer.N.attention.self.{query,key,value}``,
``attention.output.{dense,LayerNorm}``, ``intermediate.dense``, ``output.{dense,LayerNorm}``,
``pooler.dense``. MiniLM (sentence-transformers' all-MiniLM-L6-v2) is a small BERT."""
import math

import ember

from ... import nn
from ...nn import functional as F
from .activations import get_activation
from .configuration import BertConfig
from .masking_utils import additive_attention_mask
from .modeling_outputs import BaseModelOutputWithPoolingAndCrossAttentions, MaskedLMOutput
from .modeling_utils import PreTrainedModel, _no_attention_weights


def mean_pooling(token_embeddings, attention_mask):
    """The average of the token embeddings over the real (mask 1) tokens of each sequence:
    sentence-transformers' ``pooling_mode_mean_tokens``."""
    mask = attention_mask.unsqueeze(-1).to(token_embeddings.dtype)
    summed = (token_embeddings * mask).sum(1)
    return summed / mask.sum(1).clamp(min=1e-9)


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size,
                                            padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings,
                                                config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, past_key_values_length=0):
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)
        batch, length = inputs_embeds.shape[:2]
        device = inputs_embeds.device
        if position_ids is None:
            position_ids = ember.arange(past_key_values_length, past_key_values_length + length,
                                        device=device).unsqueeze(0)
        if token_type_ids is None:
            token_type_ids = ember.zeros((batch, length), dtype=ember.long, device=device)
        embeddings = (inputs_embeds + self.token_type_embeddings(token_type_ids)
                      + self.position_embeddings(position_ids))
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        if config.hidden_size % config.num_attention_heads:
            raise ValueError(f"hidden_size ({config.hidden_size}) is not a multiple of "
                             f"num_attention_heads ({config.num_attention_heads})")
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout_prob = config.attention_probs_dropout_prob

    def _heads(self, x):  # (batch, length, hidden) -> (batch, heads, length, head_size)
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_attention_heads,
                      self.attention_head_size).transpose(1, 2)

    def forward(self, hidden_states, attention_mask=None):
        q, k, v = (self._heads(f(hidden_states)) for f in (self.query, self.key, self.value))
        context = F.scaled_dot_product_attention(
            q, k, v, attn_mask=attention_mask,
            dropout_p=self.dropout_prob if self.training else 0.0,
            scale=1.0 / math.sqrt(self.attention_head_size))
        batch, _, length, _ = context.shape
        return context.transpose(1, 2).reshape(batch, length, -1)


class BertSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states, attention_mask=None):
        return self.output(self.self(hidden_states, attention_mask), hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = get_activation(config.hidden_act)

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states, attention_mask=None):
        attention_output = self.attention(hidden_states, attention_mask)
        return self.output(self.intermediate(attention_output), attention_output)


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))

    def forward(self, hidden_states, attention_mask=None, output_hidden_states=False):
        all_hidden = [hidden_states] if output_hidden_states else None
        for layer in self.layer:
            hidden_states = layer(hidden_states, attention_mask)
            if output_hidden_states:
                all_hidden.append(hidden_states)
        return hidden_states, (tuple(all_hidden) if output_hidden_states else None)


class BertPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class BertPreTrainedModel(PreTrainedModel):
    config_class = BertConfig
    base_model_prefix = "bert"
    # position_ids / token_type_ids were persistent buffers in older transformers
    _keys_to_ignore_on_load_unexpected = (r"embeddings\.position_ids",
                                          r"embeddings\.token_type_ids")


class BertModel(BertPreTrainedModel):
    """BERT's encoder: ``last_hidden_state`` (batch, length, hidden) and the ``pooler_output``
    (tanh of a dense layer on the first token)."""

    def __init__(self, config, add_pooling_layer=True):
        super().__init__(config)
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value):
        self.embeddings.word_embeddings = value

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, inputs_embeds=None, output_hidden_states=None,
                return_dict=None, output_attentions=None):
        _no_attention_weights(output_attentions)
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("BertModel: give exactly one of input_ids and inputs_embeds")
        hidden = self.embeddings(input_ids=input_ids, token_type_ids=token_type_ids,
                                 position_ids=position_ids, inputs_embeds=inputs_embeds)
        mask = None
        if attention_mask is not None and not bool((attention_mask != 0).all()):
            mask = additive_attention_mask(attention_mask, hidden.dtype)
        output_hidden_states = (self.config.output_hidden_states if output_hidden_states is None
                                else output_hidden_states)
        sequence, all_hidden = self.encoder(hidden, mask, output_hidden_states)
        pooled = self.pooler(sequence) if self.pooler is not None else None
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if not return_dict:
            return tuple(x for x in (sequence, pooled, all_hidden) if x is not None)
        return BaseModelOutputWithPoolingAndCrossAttentions(
            last_hidden_state=sequence, pooler_output=pooled, hidden_states=all_hidden)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.transform_act_fn = get_activation(config.hidden_act)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states):
        return self.LayerNorm(self.transform_act_fn(self.dense(hidden_states)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        # The decoder's weight is tied to the word embeddings; its bias is HF's
        # ``cls.predictions.bias`` (HF also aliases it as decoder.bias).
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(ember.zeros(config.vocab_size))

    def forward(self, hidden_states):
        return self.decoder(self.transform(hidden_states)) + self.bias


class BertOnlyMLMHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)

    def forward(self, sequence_output):
        return self.predictions(sequence_output)


class BertForMaskedLM(BertPreTrainedModel):
    """BERT with its masked-language-model head: ``logits`` over the vocabulary, and the
    cross-entropy ``loss`` when ``labels`` are given (-100 marks positions to ignore)."""

    _keys_to_ignore_on_load_unexpected = BertPreTrainedModel._keys_to_ignore_on_load_unexpected + (
        r"cls\.predictions\.decoder\.bias", r"^pooler\.", r"bert\.pooler\.")

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(config)
        self.post_init()

    def get_output_embeddings(self):
        return self.cls.predictions.decoder

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, inputs_embeds=None, labels=None, output_hidden_states=None,
                return_dict=None, output_attentions=None):
        _no_attention_weights(output_attentions)
        outputs = self.bert(input_ids, attention_mask=attention_mask,
                            token_type_ids=token_type_ids, position_ids=position_ids,
                            inputs_embeds=inputs_embeds,
                            output_hidden_states=output_hidden_states, return_dict=True)
        logits = self.cls(outputs.last_hidden_state)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                   ignore_index=-100)
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if not return_dict:
            return tuple(x for x in (loss, logits, outputs.hidden_states) if x is not None)
        return MaskedLMOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states)
