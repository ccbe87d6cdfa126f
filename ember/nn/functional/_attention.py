"""Attention, as ``torch.nn.functional``: ``scaled_dot_product_attention`` (the op is
``ember.ops.attention``) and ``multi_head_attention_forward``.

``multi_head_attention_forward`` follows PyTorch's function step by step (in-projection, bias_k
/ bias_v, zero attention, mask merging), so masks, shapes and errors are PyTorch's. With
``need_weights=True`` it computes the weights with an ordinary softmax, as PyTorch does, so a
fully masked row is NaN there; otherwise it runs ``scaled_dot_product_attention``.
"""
import math
import warnings

import ember
from ... import _dtype as dt
from ...ops._dispatch import Tensor
from ...ops import attention as _ops
from ._linear import linear
from ...amp import autocast_mode as _autocast

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_NEG_INF = float("-inf")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(query @ key^T * scale + mask) @ value``; a boolean mask's True takes part."""
    if _autocast.active and _autocast.enabled_for(query, "scaled_dot_product_attention"):
        return _autocast.run(scaled_dot_product_attention, "scaled_dot_product_attention", query,
                             key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return _ops.sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, False)


# ---------------------------------------------------------------------------------------------
# multi_head_attention_forward
# ---------------------------------------------------------------------------------------------

def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A boolean mask (True = masked) as a float mask of 0 / -inf; a float mask as it is."""
    if mask is None:
        return None
    is_float = mask._dtype._kind == 2
    if mask._dtype is not dt.bool and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask._dtype is not other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      "same type for both instead.", stacklevel=3)
    if not is_float:
        mask = ember.zeros(mask.shape, dtype=target_type, device=mask.device).masked_fill_(
            mask, _NEG_INF)
    return mask


def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the input is batched, with PyTorch's errors for inconsistent ranks."""
    rank = query.dim()
    if rank in (2, 3):
        kind = "batched (3-D)" if rank == 3 else "unbatched (2-D)"
        if key.dim() != rank or value.dim() != rank:
            raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {rank}-D "
                                 f"but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != rank - 1:
            raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` "
                                 f"or {rank - 1}-D but found {key_padding_mask.dim()}-D tensor "
                                 "instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or "
                                 f"3-D but found {attn_mask.dim()}-D tensor instead")
        if rank == 2 and attn_mask is not None and attn_mask.dim() == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                     f"{attn_mask.shape}")
        return rank == 3
    raise AssertionError("query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


def _project(x, weight, bias):
    """``linear`` over the rows of ``x`` (which folds them into one 2-D product, as PyTorch)."""
    return linear(x, weight, bias)


def _in_projection_packed(q, k, v, w, b):
    """q, k, v projected by the packed ``(3E, E)`` weight: one product for self-attention, two
    when key is value (encoder-decoder attention)."""
    embed = q.shape[-1]
    if k is v:
        # As PyTorch: the packed projection is copied so that q, k and v are each contiguous
        # (a select of the leading dim), which the head views below then keep.
        if q is k:
            proj = _project(q, w, b)
            proj = proj.unflatten(-1, (3, embed)).unsqueeze(0).transpose(0, -2).squeeze(-2)
            proj = proj.contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([embed, 2 * embed])
        b_q, b_kv = (None, None) if b is None else b.split([embed, 2 * embed])
        kv = _project(k, w_kv, b_kv)
        kv = kv.unflatten(-1, (2, embed)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return _project(q, w_q, b_q), kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return _project(q, w_q, b_q), _project(k, w_k, b_k), _project(v, w_v, b_v)


def _pad_last(mask):
    """One more key column, set to 0 (attend), for bias_k/bias_v or the zero attention key."""
    return ember.cat([mask, mask.new_zeros(mask.shape[:-1] + (1,))], -1)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention on ``(L, N, E)`` inputs (``(L, E)`` unbatched), as PyTorch."""
    return _multi_head_attention(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
        bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training,
        key_padding_mask, need_weights, attn_mask, use_separate_proj_weight, q_proj_weight,
        k_proj_weight, v_proj_weight, static_k, static_v, average_attn_weights, is_causal,
        nan_rows=False)


def _multi_head_attention(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                          in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                          out_proj_weight, out_proj_bias, training, key_padding_mask,
                          need_weights, attn_mask, use_separate_proj_weight, q_proj_weight,
                          k_proj_weight, v_proj_weight, static_k, static_v,
                          average_attn_weights, is_causal, nan_rows):
    """``nan_rows``: fully masked query rows give NaN, as PyTorch's fused inference path does."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)

    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        # The hint stands for the mask: attention is computed causally and the mask unused.
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False  # the merged mask is no longer causal

    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight "
                                     "is None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q = _project(query, q_proj_weight, b_q)
        k = _project(key, k_proj_weight, b_k)
        v = _project(value, v_proj_weight, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            expected = (bsz * num_heads, tgt_len, src_len)
            if tuple(attn_mask.shape) != expected:
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {expected}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = ember.cat([k, bias_k.repeat(1, bsz, 1)])
        v = ember.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # Heads laid out as PyTorch does, (N * H, L, head_dim) views of the projections, so the
    # graph has its transpose/view/bmm nodes.
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, bsz, num_heads, head_dim, "k")
    v = _heads(v, static_v, bsz, num_heads, head_dim, "v")

    if add_zero_attn:
        zeros = k.new_zeros((bsz * num_heads, 1, head_dim))
        k = ember.cat([k, zeros], 1)
        v = ember.cat([v, zeros], 1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]

    # One additive mask broadcastable to (N * H, L, S).
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        padding = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
        padding = padding.reshape(bsz * num_heads, 1, src_len)
        attn_mask = padding if attn_mask is None else attn_mask + padding

    if not training:
        dropout_p = 0.0

    if need_weights:
        q_scaled = q * math.sqrt(1.0 / head_dim)
        if attn_mask is not None:
            weights = ember.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            weights = ember.bmm(q_scaled, k.transpose(-2, -1))
        weights = weights.softmax(-1)
        if dropout_p > 0.0:
            weights = ember.nn.functional.dropout(weights, p=dropout_p)
        out = ember.bmm(weights, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
    else:
        if attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else attn_mask.view(
                bsz, num_heads, -1, src_len)
        q = q.view(bsz, num_heads, tgt_len, head_dim)
        k = k.view(bsz, num_heads, src_len, head_dim)
        v = v.view(bsz, num_heads, src_len, head_dim)
        out = _ops.sdpa(q, k, v, attn_mask, dropout_p, is_causal, None, False, nan_rows)
        out = out.permute(2, 0, 1, 3).contiguous().view(bsz * tgt_len, embed_dim)
        weights = None

    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.size(1))
    if weights is not None and average_attn_weights:
        weights = weights.mean(dim=1)
    if not is_batched:
        out = out.squeeze(1)
        if weights is not None:
            weights = weights.squeeze(0)
    return out, weights


def _heads(x, static, bsz, num_heads, head_dim, name):
    """``(S, N, E)`` as ``(N * H, S, head_dim)``, or the given ``static_k``/``static_v`` (laid out
    so already)."""
    if static is None:
        return x.view(x.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.size(0) != bsz * num_heads:
        raise AssertionError(f"expecting static_{name}.size(0) of {bsz * num_heads}, but got "
                             f"{static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting static_{name}.size(2) of {head_dim}, but got "
                             f"{static.size(2)}")
    return static
