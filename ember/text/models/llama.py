"""A Llama-style decoder (Touvron et al., 2023) as Hugging Face writes it, so its checkpoints
load by key name: ``model.embed_tokens``, ``model.layers.N.self_attn.{q,k,v,o}_proj``,
``mlp.{gate,up,down}_proj``, ``input_layernorm``, ``post_attention_layernorm``, ``model.norm``,
``lm_head``. What sets it apart from GPT-2: RMSNorm instead of LayerNorm, rotary position
embeddings applied to queries and keys instead of a learned position table, a SwiGLU MLP, and
grouped-query attention (fewer key/value heads than query heads, each shared by a group).

``past_key_values`` is the KV cache: one ``(key, value)`` pair per layer, each
(batch, key_value_heads, past_length, head_dim), keys already rotated."""
import ember

from ... import nn
from ...nn import functional as F
from .activations import get_activation
from .configuration import LlamaConfig
from .generation import GenerationMixin
from .loss_utils import causal_lm_loss
from .masking_utils import causal_attention_mask
from .modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast
from .modeling_utils import PreTrainedModel, _no_attention_weights


class LlamaRMSNorm(nn.Module):
    """``weight * x / sqrt(mean(x^2) + eps)``, computed in float32 and cast back before the
    weight multiplies (HF's order, which matters in bfloat16)."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(ember.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(ember.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * ember.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)

    def extra_repr(self):
        return f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}"


class LlamaRotaryEmbedding(nn.Module):
    """cos and sin of ``position * theta^(-2i/d)`` for each pair of channels (RoFormer)."""

    def __init__(self, config):
        super().__init__()
        dim = config.head_dim
        theta = config.rope_parameters["rope_theta"]
        inv_freq = 1.0 / (theta ** (ember.arange(0, dim, 2, dtype=ember.float32) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        # Angles in float32 whatever the model's dtype: bfloat16 positions lose whole steps.
        freqs = position_ids[:, :, None].to(ember.float32) * self.inv_freq[None, None, :]
        emb = ember.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x):
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension."""
    half = x.shape[-1] // 2
    return ember.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # broadcast over heads
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class LlamaAttention(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        self.layer_idx = layer_idx
        self.head_dim = config.head_dim
        self.num_heads = config.num_attention_heads
        self.num_key_value_heads = config.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = config.attention_dropout
        bias = config.attention_bias
        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(config.hidden_size, self.num_key_value_heads * self.head_dim,
                                bias=bias)
        self.v_proj = nn.Linear(config.hidden_size, self.num_key_value_heads * self.head_dim,
                                bias=bias)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, config.hidden_size, bias=bias)

    def forward(self, hidden_states, position_embeddings, layer_past=None, attention_mask=None,
                use_cache=False):
        batch, length, _ = hidden_states.shape

        def heads(x):
            return x.view(batch, length, -1, self.head_dim).transpose(1, 2)

        query = heads(self.q_proj(hidden_states))
        key = heads(self.k_proj(hidden_states))
        value = heads(self.v_proj(hidden_states))
        query, key = apply_rotary_pos_emb(query, key, *position_embeddings)
        if layer_past is not None:
            key = ember.cat((layer_past[0], key), dim=-2)
            value = ember.cat((layer_past[1], value), dim=-2)
        present = (key, value) if use_cache else None
        # Grouped-query attention: query head h reads key/value head h // group.
        context = F.scaled_dot_product_attention(
            query, key, value, attn_mask=attention_mask,
            is_causal=attention_mask is None and query.shape[-2] > 1,
            dropout_p=self.attention_dropout if self.training else 0.0, scale=self.scaling,
            enable_gqa=self.num_key_value_heads != self.num_heads)
        context = context.transpose(1, 2).reshape(batch, length, -1)
        return self.o_proj(context), present


class LlamaMLP(nn.Module):
    """SwiGLU: ``down(act(gate(x)) * up(x))``."""

    def __init__(self, config):
        super().__init__()
        bias = config.mlp_bias
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=bias)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=bias)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=bias)
        self.act_fn = get_activation(config.hidden_act)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.self_attn = LlamaAttention(config, layer_idx)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, hidden_states, position_embeddings, layer_past=None, attention_mask=None,
                use_cache=False):
        attn_output, present = self.self_attn(self.input_layernorm(hidden_states),
                                              position_embeddings, layer_past, attention_mask,
                                              use_cache)
        hidden_states = hidden_states + attn_output
        hidden_states = hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))
        return hidden_states, present


class LlamaPreTrainedModel(PreTrainedModel):
    config_class = LlamaConfig
    base_model_prefix = "model"
    _keys_to_ignore_on_load_unexpected = (r"rotary_emb\.inv_freq",)

    def _init_weights(self, module):
        if isinstance(module, LlamaRMSNorm):
            nn.init.ones_(module.weight)
        else:
            super()._init_weights(module)


class LlamaModel(LlamaPreTrainedModel):
    """The Llama decoder stack: ``last_hidden_state`` and, with ``use_cache``, the
    ``past_key_values`` to continue from."""

    def __init__(self, config):
        super().__init__(config)
        self.padding_idx = config.pad_token_id
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        self.layers = nn.ModuleList(LlamaDecoderLayer(config, i)
                                    for i in range(config.num_hidden_layers))
        self.norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config)
        self.post_init()

    def get_input_embeddings(self):
        return self.embed_tokens

    def set_input_embeddings(self, value):
        self.embed_tokens = value

    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                past_key_values=None, inputs_embeds=None, use_cache=None,
                output_hidden_states=None, return_dict=None, output_attentions=None):
        _no_attention_weights(output_attentions)
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("LlamaModel: give exactly one of input_ids and inputs_embeds")
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)
        batch, length = inputs_embeds.shape[:2]
        device = inputs_embeds.device
        past_length = 0 if past_key_values is None else past_key_values[0][0].shape[-2]
        if position_ids is None:
            position_ids = ember.arange(past_length, past_length + length,
                                        device=device).unsqueeze(0)
        hidden = inputs_embeds
        mask = causal_attention_mask(attention_mask, length, past_length + length, hidden.dtype,
                                     device)
        position_embeddings = self.rotary_emb(hidden, position_ids)
        use_cache = self.config.use_cache if use_cache is None else use_cache
        output_hidden_states = (self.config.output_hidden_states if output_hidden_states is None
                                else output_hidden_states)
        presents, all_hidden = [], []
        for i, layer in enumerate(self.layers):
            if output_hidden_states:
                all_hidden.append(hidden)
            layer_past = None if past_key_values is None else past_key_values[i]
            hidden, present = layer(hidden, position_embeddings, layer_past, mask, use_cache)
            presents.append(present)
        hidden = self.norm(hidden)
        if output_hidden_states:
            all_hidden.append(hidden)
        presents = tuple(presents) if use_cache else None
        all_hidden = tuple(all_hidden) if output_hidden_states else None
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if not return_dict:
            return tuple(x for x in (hidden, presents, all_hidden) if x is not None)
        return BaseModelOutputWithPast(last_hidden_state=hidden, past_key_values=presents,
                                       hidden_states=all_hidden)


class LlamaForCausalLM(LlamaPreTrainedModel, GenerationMixin):
    """Llama with its language-model head: ``logits``, the shifted next-token ``loss`` when
    ``labels`` are given, and ``generate``. The head is tied to the embeddings only when
    ``tie_word_embeddings`` (False by default for Llama)."""

    def __init__(self, config):
        super().__init__(config)
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_output_embeddings(self):
        return self.lm_head

    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                past_key_values=None, inputs_embeds=None, labels=None, use_cache=None,
                output_hidden_states=None, return_dict=None, output_attentions=None):
        _no_attention_weights(output_attentions)
        outputs = self.model(input_ids, attention_mask=attention_mask,
                             position_ids=position_ids, past_key_values=past_key_values,
                             inputs_embeds=inputs_embeds, use_cache=use_cache,
                             output_hidden_states=output_hidden_states, return_dict=True)
        logits = self.lm_head(outputs.last_hidden_state)
        loss = causal_lm_loss(logits, labels) if labels is not None else None
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if not return_dict:
            return tuple(x for x in (loss, logits, outputs.past_key_values,
                                     outputs.hidden_states) if x is not None)
        return CausalLMOutputWithPast(loss=loss, logits=logits,
                                      past_key_values=outputs.past_key_values,
                                      hidden_states=outputs.hidden_states)
