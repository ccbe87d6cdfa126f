"""Attention, as ``torch.nn.functional``: ``scaled_dot_product_attention`` and
``multi_head_attention_forward``.

``scaled_dot_product_attention`` on 4-D ``(N, H, L, E)`` inputs is one op: two batched matrix
products with the scaling, the mask and a softmax applied in place on the ``(..., L, S)`` score
array between them, and a backward node that reuses the saved probabilities. Other ranks run
what PyTorch's CPU build runs for them, its math fallback, op for op (so the graph is
PyTorch's). Like PyTorch's CPU kernels, a query row whose every key is masked out attends to
nothing (its output and gradients are zero), where a plain softmax would give NaN.

``multi_head_attention_forward`` follows PyTorch's function step by step (in-projection, bias_k
/ bias_v, zero attention, mask merging), so masks, shapes and errors are PyTorch's. With
``need_weights=True`` it computes the weights with an ordinary softmax, as PyTorch does, so a
fully masked row is NaN there; otherwise it runs ``scaled_dot_product_attention``.
"""
import math
import warnings

import ember
from ... import _dtype as dt
from ...autograd import grad_mode
from ...ops._dispatch import (Node, Tensor, needs_grad, record, _wrap, device_mismatch,
                              dtype_name)
from ...ops.elementwise import mul_scalar
from ...ops.matmul import _cpp_name
from ...ops.reduce import _quiet, SoftmaxBackward0
from ._linear import linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_NEG_INF = float("-inf")


# ---------------------------------------------------------------------------------------------
# scaled_dot_product_attention
# ---------------------------------------------------------------------------------------------

class ScaledDotProductAttentionBackward0(Node):
    """Backward of the fused attention op.

    With ``P`` the probabilities (after dropout ``D``, so ``P_d = P * D``) and ``g`` the output
    gradient: ``dV = P_d^T g``, ``dP = (g V^T) * D``, ``dS = P * (dP - rowsum(dP * P))``,
    ``dQ = scale * dS K``, ``dK = scale * dS^T Q`` and the float mask's gradient is ``dS``
    (the engine sums it down to the mask's broadcast shape)."""

    def backward(self, grad):
        q, k, v, bias, probs, keep = self.saved_tensors
        if grad_mode.is_grad_enabled():
            # Double backward: the saved probabilities carry no graph, so rebuild them from the
            # inputs with differentiable ops.
            probs = _probabilities_differentiable(q, k, bias, self.scale, self.causal,
                                                  self.nan_rows)
        dropped = probs if keep is None else probs * keep
        g_q = g_k = g_v = g_bias = None
        if self._edges[2] is not None:
            g_v = _bmm(dropped.mT, grad)
        wants_mask = len(self._edges) > 3 and self._edges[3] is not None
        if self._edges[0] is not None or self._edges[1] is not None or wants_mask:
            g_probs = _bmm(grad, v.mT)
            if keep is not None:
                g_probs = g_probs * keep
            g_scores = probs * (g_probs - (g_probs * probs).sum(-1, keepdim=True))
            if self._edges[0] is not None:
                g_q = _bmm(g_scores, k) * self.scale
            if self._edges[1] is not None:
                g_k = _bmm(g_scores.mT, q) * self.scale
            if wants_mask:
                g_bias = g_scores
        return (g_q, g_k, g_v, g_bias)[:len(self._edges)]


class ScaledDotProductFlashAttentionForCpuBackward0(ScaledDotProductAttentionBackward0):
    """The same backward under the name of the kernel PyTorch's CPU build runs for
    (batch, heads, L, E) inputs without dropout and with a mask that needs no gradient; the
    edges are (query, key, value)."""


def _batched_matmul(backend, a, b):
    """``a @ b`` for stacked matrices, on C-contiguous copies: NumPy's stacked product over a
    permuted head view or a transposed key ran several times slower (measured 5x for
    (16, 8, 128, 32) heads) than copying the operand first, which costs a fraction of it."""
    xp = backend.xp
    return backend.matmul(xp.ascontiguousarray(a), xp.ascontiguousarray(b))


def _bmm(a, b):
    """``_batched_matmul`` for Ember tensors (differentiable; used by the backward)."""
    return a.contiguous().matmul(b.contiguous())


def _causal_keep(xp, target_len, source_len):
    """True where query ``i`` may see key ``j``: ``j <= i``, aligned at the top left as in
    PyTorch (for L != S the diagonal starts at (0, 0))."""
    return xp.tril(xp.ones((target_len, source_len), dtype=bool))


def _mask_to_bias(xp, mask, work):
    """An additive float array for ``mask``: booleans become 0 (take part) or -inf."""
    if mask.dtype == bool:
        return xp.where(mask, work.type(0), work.type(_NEG_INF))
    return mask.astype(work, copy=False)


def _softmax_rows_inplace(xp, scores, nan_rows):
    """Softmax over the last axis, written into ``scores``. A row of only -inf becomes zeros
    unless ``nan_rows`` (PyTorch's fused inference kernels give NaN there)."""
    row_max = scores.max(axis=-1, keepdims=True)
    if not nan_rows:
        row_max[row_max == _NEG_INF] = 0
    scores -= row_max
    xp.exp(scores, out=scores)
    total = scores.sum(axis=-1, keepdims=True)
    if not nan_rows:
        total[total == 0] = 1
    scores /= total
    return scores


def _probabilities_differentiable(q, k, bias, scale, causal, nan_rows):
    """The attention probabilities from Ember ops, for higher-order gradients."""
    scores = q.matmul(k.mT) * scale
    if bias is not None:
        scores = scores + bias
    if causal:
        target_len, source_len = scores.shape[-2], scores.shape[-1]
        keep = ember.ones(target_len, source_len, dtype=ember.bool, device=q.device).tril()
        scores = scores.masked_fill(keep.logical_not(), _NEG_INF)
    if nan_rows:
        return scores.softmax(-1)
    dead = (scores == _NEG_INF).all(-1, keepdim=True)
    # Finite scores in dead rows keep the softmax (and its gradient) free of NaN.
    return scores.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)


def _check_sdpa_args(query, key, value, attn_mask, dropout_p, is_causal):
    for t in (key, value) + ((attn_mask,) if attn_mask is not None else ()):
        if t._device is not query._device:
            raise device_mismatch(query, t)
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError("Expected query, key, and value to all be  at least 2 dimensional, but "
                           f"got query.dim: {query.ndim} key.dim: {key.ndim} and value.dim: "
                           f"{value.ndim} instead.")
    if not (query._dtype is key._dtype is value._dtype):
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_cpp_name(query._dtype)} key.dtype: "
                           f"{_cpp_name(key._dtype)} and value.dtype: {_cpp_name(value._dtype)} "
                           "instead.")
    if query._dtype._kind < 2:
        raise RuntimeError(f"expected scalar type Float but found {dtype_name(query._dtype)}")
    if attn_mask is not None and attn_mask._dtype not in (dt.bool, dt.float32, query._dtype):
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, "
                           f"but got attn_mask.dtype: {_cpp_name(attn_mask._dtype)} and  "
                           f"query.dtype: {_cpp_name(query._dtype)} instead.")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if dropout_p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    k_batch, v_batch = key.shape[:-2], value.shape[:-2]
    if key.shape[-1] != query.shape[-1]:
        rows = math.prod(query.shape[:-2])
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{rows}, {query.shape[-1]}] but got: [{math.prod(k_batch)}, "
                           f"{key.shape[-1]}].")
    if key.shape[-2] != value.shape[-2]:
        rows = math.prod(query.shape[:-2])
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{rows}, {key.shape[-2]}] but got: [{math.prod(v_batch)}, "
                           f"{value.shape[-2]}].")


def _repeat_kv_heads(query, key, value):
    """Grouped-query attention: each key/value head serves ``Hq / Hkv`` consecutive query heads."""
    q_heads, k_heads, v_heads = query.shape[-3], key.shape[-3], value.shape[-3]
    if q_heads % k_heads or q_heads % v_heads:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
    if k_heads != q_heads:
        key = key.repeat_interleave(q_heads // k_heads, -3)
    if v_heads != q_heads:
        value = value.repeat_interleave(q_heads // v_heads, -3)
    return key, value


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(query @ key^T * scale + mask) @ value``; a boolean mask's True takes part."""
    return _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, False)


def _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, nan_rows):
    _check_sdpa_args(query, key, value, attn_mask, dropout_p, is_causal)
    if not nan_rows and not query.ndim == key.ndim == value.ndim == 4:
        # PyTorch's CPU kernels take only 4-D inputs; it computes the rest by its math fallback.
        return _sdpa_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if enable_gqa and query.ndim >= 3:
        key, value = _repeat_kv_heads(query, key, value)
    backend = query._backend
    xp = backend.xp
    d = query._dtype
    work = dt.float32.np if d._rank == 0 else d.np  # half types are computed in float32
    scale_value = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    q = query._data.astype(work, copy=False)
    k = key._data.astype(work, copy=False)
    v = value._data.astype(work, copy=False)

    scores = _batched_matmul(backend, q, xp.swapaxes(k, -1, -2))
    scores *= work.type(scale_value)
    bias = None
    if attn_mask is not None:
        bias = _mask_to_bias(xp, attn_mask._data, work)
        full_shape = xp.broadcast_shapes(scores.shape, bias.shape)
        if full_shape != scores.shape:
            raise RuntimeError(f"output with shape {list(scores.shape)} doesn't match the "
                               f"broadcast shape {list(full_shape)}")
        scores += bias
    if is_causal:
        keep = _causal_keep(xp, scores.shape[-2], scores.shape[-1])
        scores[..., ~keep] = _NEG_INF
    if scores.shape[-1] == 0:
        probs = scores
    else:
        with _quiet(xp):
            probs = _softmax_rows_inplace(xp, scores, nan_rows)

    keep_scaled = None
    if dropout_p > 0:
        keep_scaled = _dropout_keep(probs.shape, dt.from_numpy_dtype(xp.dtype(work)), query,
                                    dropout_p)
        out = _batched_matmul(backend, probs * keep_scaled._data, v)
    else:
        out = _batched_matmul(backend, probs, v)
    out = out.astype(d.np, copy=False)
    if query.ndim == 4 and not query.is_contiguous():
        # PyTorch's CPU flash kernel writes its output in the query's memory layout (so
        # multi-head attention's permute back to (L, N, H, head_dim) is free)
        laid_out = xp.empty_like(query._data, dtype=d.np)
        laid_out[...] = out
        out = laid_out
    res = _wrap(out, d, query)

    mask_input = attn_mask if attn_mask is not None and attn_mask._dtype._kind >= 2 else None
    if needs_grad(query, key, value, mask_input):
        bias_tensor = None
        if bias is not None:
            bias_tensor = mask_input if mask_input is not None else _wrap(bias, dt.from_numpy_dtype(
                bias.dtype), query)
        probs_tensor = _wrap(probs, dt.from_numpy_dtype(probs.dtype), query)
        if d._rank == 0:  # probabilities were kept in float32; gradients come back in d
            probs_tensor = probs_tensor.to(d)
            if keep_scaled is not None:
                keep_scaled = keep_scaled.to(d)
        inputs, node = (query, key, value, mask_input), ScaledDotProductAttentionBackward0
        if (query.ndim == 4 and dropout_p == 0
                and (mask_input is None or not mask_input.requires_grad)):
            inputs, node = (query, key, value), ScaledDotProductFlashAttentionForCpuBackward0
        record(node, inputs, res,
               save=(query, key, value, bias_tensor, probs_tensor, keep_scaled),
               scale=scale_value, causal=is_causal, nan_rows=nan_rows)
    return res


def _dropout_keep(shape, dtype, like, dropout_p):
    """Dropout's multiplier: 0 where dropped, ``1 / (1 - p)`` where kept. Drawn from Ember's
    random stream, so ``ember.manual_seed`` makes the dropped pattern reproducible."""
    keep = ember.empty(shape, dtype=dtype, device=like.device).bernoulli_(1 - dropout_p)
    return keep.mul_(1.0 / (1.0 - dropout_p) if dropout_p < 1 else 0.0)


class SafeSoftmaxBackward0(SoftmaxBackward0):
    """ATen's ``_safe_softmax``: a softmax whose rows of only -inf are zeros, not NaN. Its
    gradient is the softmax's, which is zero on those rows."""
    __slots__ = ()


def _safe_softmax(input):
    """``_safe_softmax`` over the last dimension of a float tensor."""
    xp = input._backend.xp
    probs = input._data.copy()
    if probs.shape[-1]:
        with _quiet(xp):
            _softmax_rows_inplace(xp, probs, nan_rows=False)
    res = _wrap(probs, input._dtype, input)
    if needs_grad(input):
        record(SafeSoftmaxBackward0, (input,), res, save_out=True, dim=input.ndim - 1)
    return res


def _sdpa_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """ATen's ``_scaled_dot_product_attention_math``, op for op: half types computed in
    float32; grouped key/value heads repeated; query and key each scaled by the square root
    of the scale (for stability) before their product; the mask (a causal one built as
    ``tril``, a boolean one as 0 / -inf) added in place; ``_safe_softmax``; dropout as a
    product with the scaled keep mask; the product with value. Both products are ``matmul``,
    whose composite gives PyTorch's bmm nodes."""
    d = query._dtype
    if d._rank == 0:
        query, key, value = query.to(dt.float32), key.to(dt.float32), value.to(dt.float32)
    if enable_gqa and query.ndim >= 3:
        key, value = _repeat_kv_heads(query, key, value)
    scale_value = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    factor = math.sqrt(abs(scale_value))
    scaled_query = mul_scalar(query, -factor if scale_value < 0 else factor)
    attn = scaled_query.matmul(mul_scalar(key.transpose(-2, -1), factor))
    xp = query._backend.xp
    if is_causal:
        keep = _causal_keep(xp, query.shape[-2], key.shape[-2])
        attn_mask = _wrap(xp.where(keep, 0.0, _NEG_INF).astype(query._dtype.np), query._dtype,
                          query)
    elif attn_mask is not None and attn_mask._dtype is dt.bool:
        attn_mask = _wrap(_mask_to_bias(xp, attn_mask._data, d.np), d, attn_mask)
    if attn_mask is not None:
        attn.add_(attn_mask)
    attn = _safe_softmax(attn)
    if dropout_p > 0:
        attn = attn * _dropout_keep(attn.shape, attn._dtype, attn, dropout_p)
    out = attn.matmul(value)
    return out.to(d) if out._dtype is not d else out


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
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D"
                                 f" but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor "
                                 "instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                                 f"2-D or 3-D but found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be "
                                 f"2-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 1-D but found {key_padding_mask.dim()}-D tensor "
                                 "instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                                     "instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"{attn_mask.shape}")
        return False
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
        out = _sdpa(q, k, v, attn_mask, dropout_p, is_causal, None, False, nan_rows)
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
