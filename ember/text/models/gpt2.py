"""GPT-2 (Radford et al., 2019) as Hugging Face writes it, so its checkpoints load by key name:
``wte``, ``wpe``, ``h.N.{ln_1,attn.c_attn,attn.c_proj,ln_2,mlp.c_fc,mlp.c_proj}``, ``ln_f``;
``lm_head`` is tied to ``wte``. GPT-2's projections are ``Conv1D``: a linear layer whose weight
is stored (in, out), the transpose of ``nn.Linear``'s, which is why they are not nn.Linear.

``past_key_values`` is the KV cache: one ``(key, value)`` pair per layer, each
(batch, heads, past_length, head_dim) — HF's legacy tuple format."""
import math

import ember

from ... import nn
from ...nn import functional as F
from .activations import get_activation
from .configuration import GPT2Config
from .generation import GenerationMixin
from .loss_utils import causal_lm_loss
from .masking_utils import causal_attention_mask
from .modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast
from .modeling_utils import PreTrainedModel, _no_attention_weights


class Conv1D(nn.Module):
    """``y = x @ weight + bias`` with ``weight`` of shape (nx, nf): HF's ``Conv1D``."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(ember.empty(nx, nf))
        self.bias = nn.Parameter(ember.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        return F.linear(x, self.weight.t(), self.bias)

    def extra_repr(self):
        return f"nf={self.nf}, nx={self.weight.shape[0]}"


class GPT2Attention(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        self.embed_dim = config.n_embd
        self.num_heads = config.n_head
        self.head_dim = self.embed_dim // self.num_heads
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError(f"n_embd ({self.embed_dim}) is not a multiple of n_head "
                             f"({self.num_heads})")
        self.scale = 1.0 / math.sqrt(self.head_dim) if config.scale_attn_weights else 1.0
        if config.scale_attn_by_inverse_layer_idx:
            self.scale /= float(layer_idx + 1)
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_pdrop = config.attn_pdrop
        self.resid_dropout = nn.Dropout(config.resid_pdrop)

    def _heads(self, x):
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
        query, key, value = self.c_attn(hidden_states).split(self.embed_dim, dim=2)
        query, key, value = self._heads(query), self._heads(key), self._heads(value)
        if layer_past is not None:
            key = ember.cat((layer_past[0], key), dim=-2)
            value = ember.cat((layer_past[1], value), dim=-2)
        present = (key, value) if use_cache else None
        context = F.scaled_dot_product_attention(
            query, key, value, attn_mask=attention_mask,
            is_causal=attention_mask is None and query.shape[-2] > 1,
            dropout_p=self.attn_pdrop if self.training else 0.0, scale=self.scale)
        batch, _, length, _ = context.shape
        context = context.transpose(1, 2).reshape(batch, length, self.embed_dim)
        return self.resid_dropout(self.c_proj(context)), present


class GPT2MLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        self.c_fc = Conv1D(intermediate_size, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, intermediate_size)
        self.act = get_activation(config.activation_function)
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        return self.dropout(self.c_proj(self.act(self.c_fc(hidden_states))))


class GPT2Block(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        inner = config.n_inner if config.n_inner is not None else 4 * config.n_embd
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config, layer_idx)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(inner, config)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False):
        attn_output, present = self.attn(self.ln_1(hidden_states), layer_past, attention_mask,
                                         use_cache)
        hidden_states = hidden_states + attn_output
        hidden_states = hidden_states + self.mlp(self.ln_2(hidden_states))
        return hidden_states, present


class GPT2PreTrainedModel(PreTrainedModel):
    config_class = GPT2Config
    base_model_prefix = "transformer"
    # the causal-mask buffers older transformers saved with every checkpoint
    _keys_to_ignore_on_load_unexpected = (r"\.attn\.bias$", r"\.attn\.masked_bias$")

    def _init_weights(self, module):
        if isinstance(module, Conv1D):
            nn.init.normal_(module.weight, std=self.config.initializer_range)
            nn.init.zeros_(module.bias)
        else:
            super()._init_weights(module)

    def post_init(self):
        super().post_init()
        # GPT-2's paper scales the residual projections by 1/sqrt(2 * layers) at init.
        std = self.config.initializer_range / math.sqrt(2 * self.config.n_layer)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, std=std)


class GPT2Model(GPT2PreTrainedModel):
    """The GPT-2 decoder stack: ``last_hidden_state`` and, with ``use_cache``, the
    ``past_key_values`` to continue from."""

    def __init__(self, config):
        super().__init__(config)
        self.embed_dim = config.n_embd
        self.wte = nn.Embedding(config.vocab_size, self.embed_dim)
        self.wpe = nn.Embedding(config.n_positions, self.embed_dim)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList(GPT2Block(config, layer_idx=i) for i in range(config.n_layer))
        self.ln_f = nn.LayerNorm(self.embed_dim, eps=config.layer_norm_epsilon)
        self.post_init()

    def get_input_embeddings(self):
        return self.wte

    def set_input_embeddings(self, value):
        self.wte = value

    def forward(self, input_ids=None, past_key_values=None, attention_mask=None,
                token_type_ids=None, position_ids=None, inputs_embeds=None, use_cache=None,
                output_hidden_states=None, return_dict=None, output_attentions=None):
        _no_attention_weights(output_attentions)
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("GPT2Model: give exactly one of input_ids and inputs_embeds")
        if inputs_embeds is None:
            inputs_embeds = self.wte(input_ids)
        batch, length = inputs_embeds.shape[:2]
        device = inputs_embeds.device
        past_length = 0 if past_key_values is None else past_key_values[0][0].shape[-2]
        if past_length + length > self.config.n_positions:
            raise ValueError(f"GPT2Model: {past_length + length} positions exceed n_positions "
                             f"({self.config.n_positions})")
        if position_ids is None:
            position_ids = ember.arange(past_length, past_length + length,
                                        device=device).unsqueeze(0)
        hidden = inputs_embeds + self.wpe(position_ids)
        if token_type_ids is not None:
            hidden = hidden + self.wte(token_type_ids)
        hidden = self.drop(hidden)
        mask = causal_attention_mask(attention_mask, length, past_length + length, hidden.dtype,
                                     device)
        use_cache = self.config.use_cache if use_cache is None else use_cache
        output_hidden_states = (self.config.output_hidden_states if output_hidden_states is None
                                else output_hidden_states)
        presents, all_hidden = [], []
        for i, block in enumerate(self.h):
            if output_hidden_states:
                all_hidden.append(hidden)
            layer_past = None if past_key_values is None else past_key_values[i]
            hidden, present = block(hidden, layer_past, mask, use_cache)
            presents.append(present)
        hidden = self.ln_f(hidden)
        if output_hidden_states:
            all_hidden.append(hidden)
        presents = tuple(presents) if use_cache else None
        all_hidden = tuple(all_hidden) if output_hidden_states else None
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if not return_dict:
            return tuple(x for x in (hidden, presents, all_hidden) if x is not None)
        return BaseModelOutputWithPast(last_hidden_state=hidden, past_key_values=presents,
                                       hidden_states=all_hidden)


class GPT2LMHeadModel(GPT2PreTrainedModel, GenerationMixin):
    """GPT-2 with its language-model head (tied to ``wte``): ``logits`` over the vocabulary,
    the shifted next-token ``loss`` when ``labels`` are given, and ``generate``."""

    def __init__(self, config):
        super().__init__(config)
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.post_init()

    def get_output_embeddings(self):
        return self.lm_head

    def forward(self, input_ids=None, past_key_values=None, attention_mask=None,
                token_type_ids=None, position_ids=None, inputs_embeds=None, labels=None,
                use_cache=None, output_hidden_states=None, return_dict=None,
                output_attentions=None):
        _no_attention_weights(output_attentions)
        outputs = self.transformer(input_ids, past_key_values=past_key_values,
                                   attention_mask=attention_mask, token_type_ids=token_type_ids,
                                   position_ids=position_ids, inputs_embeds=inputs_embeds,
                                   use_cache=use_cache, output_hidden_states=output_hidden_states,
                                   return_dict=True)
        logits = self.lm_head(outputs.last_hidden_state)
        loss = causal_lm_loss(logits, labels) if labels is not None else None
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if not return_dict:
            return tuple(x for x in (loss, logits, outputs.past_key_values,
                                     outputs.hidden_states) if x is not None)
        return CausalLMOutputWithPast(loss=loss, logits=logits,
                                      past_key_values=outputs.past_key_values,
                                      hidden_states=outputs.hidden_states)
