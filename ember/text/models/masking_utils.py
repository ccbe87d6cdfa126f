"""Attention masks in the additive form ``F.scaled_dot_product_attention`` takes: 0 where a
query may attend a key, the dtype's lowest value where it may not (HF's convention, which keeps
a fully masked row finite)."""
import ember


def additive_attention_mask(attention_mask, dtype):
    """A (batch, 1, 1, keys) float mask from HF's (batch, keys) 1/0 mask: 0 where a token is
    attended, the dtype's lowest value where it is padding (HF's "extended" mask)."""
    mask = attention_mask[:, None, None, :].to(dtype)
    return (1.0 - mask) * ember.finfo(dtype).min


def causal_attention_mask(attention_mask, query_length, key_length, dtype, device):
    """The additive (batch or 1, 1, query, key) mask of a decoder: query i (at absolute position
    ``key_length - query_length + i``) sees keys up to its own position and, with a (batch, key)
    ``attention_mask``, only keys whose mask is 1.

    None when there is no padding and either one new token (it sees every key) or no cache
    (plain causal attention): the attention layers then pass ``is_causal`` for more than one
    query, which spares building the mask and lets the fused kernel skip the masked blocks."""
    past = key_length - query_length
    if attention_mask is not None and bool((attention_mask != 0).all()):
        attention_mask = None
    if attention_mask is None and (query_length == 1 or past == 0):
        return None
    rows = ember.arange(query_length, device=device).unsqueeze(1) + past
    allowed = (ember.arange(key_length, device=device).unsqueeze(0) <= rows)[None, None]
    if attention_mask is not None:
        allowed = allowed & (attention_mask[:, None, None, :] != 0)
    zero = ember.zeros((), dtype=dtype, device=device)
    return ember.where(allowed, zero, ember.finfo(dtype).min)
