"""Scaled dot-product attention as an op (``nn.functional/_attention.py`` holds its public
spelling and the multi-head attention composed from it).

Where PyTorch's CPU build runs its fused flash kernel (4-D ``(N, H, L, E)`` inputs of one head
dim, no dropout, a mask needing no gradient: ``_flash_applies``) it is one op: two batched
matrix products with the scaling, the mask and a softmax applied in place on the ``(..., L, S)``
score array between them, and a backward node that reuses the saved probabilities. Everything
else runs PyTorch's math fallback op for op, and inputs with no queries or no values its
zero-output shortcut (so the graph is PyTorch's). Like PyTorch's CPU
kernels, a query row whose every key is masked out attends to nothing (its output and
gradients are zero), where a plain softmax would give NaN.
"""
import math

from .. import _dtype as dt
from ..autograd import grad_mode
from ._dispatch import Node, needs_grad, record, _wrap, device_mismatch, dtype_name
from .creation import ones, empty, zeros
from .elementwise import mul_scalar
from .matmul import _cpp_name
from .reduce import _quiet, SoftmaxBackward0

__all__ = []

_NEG_INF = float("-inf")


class ScaledDotProductAttentionBackward0(Node):
    """Backward of the fused attention op.

    With ``P`` the probabilities (after dropout ``D``, so ``P_d = P * D``) and ``g`` the output
    gradient: ``dV = P_d^T g``, ``dP = (g V^T) * D``, ``dS = P * (dP - rowsum(dP * P))``,
    ``dQ = scale * dS K``, ``dK = scale * dS^T Q`` and the float mask's gradient is ``dS``
    (the engine sums it down to the mask's broadcast shape)."""

    def backward(self, grad):
        q, k, v, bias, probs, keep = self.saved_tensors
        groups = q.shape[-3] // k.shape[-3] if q.ndim >= 3 else 1
        if groups > 1:
            # Grouped-query heads: the kernel reads each key/value head for several query heads,
            # so their gradients are summed back over the group.
            k, v = k.repeat_interleave(groups, -3), v.repeat_interleave(groups, -3)
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
        if groups > 1:
            g_k, g_v = (None if g is None else g.unflatten(-3, (-1, groups)).sum(-3)
                        for g in (g_k, g_v))
        return (g_q, g_k, g_v, g_bias)[:len(self._edges)]

    def jvp(self, tq, tk, tv, t_bias=None):
        """``dS = scale (dQ K^T + Q dK^T) + dmask``, ``dP = P * (dS - rowsum(P dS))``,
        ``dOut = (dP * D) V + P_d dV``."""
        q, k, v, bias, probs, keep = self.saved_tensors
        groups = q.shape[-3] // k.shape[-3] if q.ndim >= 3 else 1
        if groups > 1:
            k, v = k.repeat_interleave(groups, -3), v.repeat_interleave(groups, -3)
            tk, tv = (None if t is None else t.repeat_interleave(groups, -3) for t in (tk, tv))
        if grad_mode.is_grad_enabled():  # reverse over forward: probabilities with a graph
            probs = _probabilities_differentiable(q, k, bias, self.scale, self.causal,
                                                  self.nan_rows)
        dropped = probs if keep is None else probs * keep
        out = None if tv is None else _bmm(dropped, tv)
        d_scores = None
        if tq is not None:
            d_scores = _bmm(tq, k.mT) * self.scale
        if tk is not None:
            term = _bmm(q, tk.mT) * self.scale
            d_scores = term if d_scores is None else d_scores + term
        if t_bias is not None:
            d_scores = t_bias if d_scores is None else d_scores + t_bias
        if d_scores is not None:
            d_probs = probs * (d_scores - (probs * d_scores).sum(-1, keepdim=True))
            if keep is not None:
                d_probs = d_probs * keep
            term = _bmm(d_probs, v)
            out = term if out is None else out + term
        return out


class ScaledDotProductFlashAttentionForCpuBackward0(ScaledDotProductAttentionBackward0):
    """The same backward under the name of the kernel PyTorch's CPU build runs for the inputs
    ``_flash_applies`` accepts; the edges are (query, key, value)."""


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
        keep = ones(target_len, source_len, dtype=dt.bool, device=q.device).tril()
        scores = scores.masked_fill(keep.logical_not(), _NEG_INF)
    if nan_rows:
        return scores.softmax(-1)
    dead = (scores == _NEG_INF).all(-1, keepdim=True)
    # Finite scores in dead rows keep the softmax (and its gradient) free of NaN.
    return scores.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)


def _check_sdpa_args(query, key, value, attn_mask):
    """The checks PyTorch makes before anything else, even on inputs with nothing to attend."""
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
    if attn_mask is not None and attn_mask._dtype not in (dt.bool, dt.float32, query._dtype):
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, "
                           f"but got attn_mask.dtype: {_cpp_name(attn_mask._dtype)} and  "
                           f"query.dtype: {_cpp_name(query._dtype)} instead.")


def _check_one_mask(attn_mask, is_causal):
    """The math kernel builds the causal mask itself, so it refuses a second one (PyTorch's
    fused CPU kernel applies both)."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")


def _check_attention_args(query, key, value, dropout_p):
    """Matching shapes (in the order of the products' own errors), then a valid dropout."""
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
    if dropout_p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")


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


def sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, nan_rows):
    """``scaled_dot_product_attention``; ``nan_rows``: a query row whose every key is masked
    out is NaN, as in PyTorch's fused inference kernels (multi-head attention's fast path)."""
    _check_sdpa_args(query, key, value, attn_mask)
    if not nan_rows and (query.shape[-2] == 0 or value.numel() == 0):
        return _no_attention(query, key, value)
    if query._dtype._kind < 2:
        raise RuntimeError(f"expected scalar type Float but found {dtype_name(query._dtype)}")
    if nan_rows:
        _check_one_mask(attn_mask, is_causal)
    elif not _flash_applies(query, key, value, attn_mask, dropout_p, enable_gqa):
        return _sdpa_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    _check_attention_args(query, key, value, dropout_p)
    backend = query._backend
    xp = backend.xp
    d = query._dtype
    work = dt.float32.np if d._rank == 0 else d.np  # half types are computed in float32
    scale_value = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    q = query._data.astype(work, copy=False)
    k = key._data.astype(work, copy=False)
    v = value._data.astype(work, copy=False)
    groups = query.shape[-3] // key.shape[-3] if query.ndim >= 3 else 1
    if groups > 1:  # grouped-query attention; the kernel reads each key/value head G times
        k, v = xp.repeat(k, groups, axis=-3), xp.repeat(v, groups, axis=-3)

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
    if query.ndim == 4 and out.shape == query.shape and not query.is_contiguous():
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
            bias_tensor = mask_input if mask_input is not None else _wrap(
                bias, dt.from_numpy_dtype(bias.dtype), query)
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


def _no_attention(query, key, value):
    """PyTorch's answer when there are no queries or no values: zeros of the output's shape,
    joined to the graph through ``(sum(q) + sum(k) + sum(v)) * 0`` so that every input gets
    a (zero) gradient."""
    res = zeros(query.shape[:-1] + value.shape[-1:], dtype=query._dtype, device=query.device)
    return res + mul_scalar(query.sum() + key.sum() + value.sum(), 0)


def _flash_applies(query, key, value, attn_mask, dropout_p, enable_gqa):
    """Whether PyTorch's CPU build runs its fused flash kernel (else its math fallback): 4-D
    inputs without dropout, one batch size, equal heads (key/value heads dividing the query's
    under ``enable_gqa``), a mask that needs no gradient and is (L, S) or (B | 1, H | 1, L, S)
    up to broadcasting of its last two dims, one head dim, unit last strides. PyTorch reads the
    mask's last two sizes before the head dims, so a mask of fewer dims fails there."""
    if dropout_p > 0 or not query.ndim == key.ndim == value.ndim == 4:
        return False
    batch, heads, target_len = query.shape[:3]
    if key.shape[0] != batch or value.shape[0] != batch:
        return False
    k_heads, v_heads = key.shape[1], value.shape[1]
    if not (k_heads == v_heads == heads
            or enable_gqa and k_heads == v_heads and heads % k_heads == 0):
        return False
    if attn_mask is not None:
        if attn_mask.requires_grad:
            return False
        if attn_mask.ndim == 0:
            raise IndexError("Dimension specified as -2 but tensor has no dimensions")
        if attn_mask.ndim == 1:
            raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but "
                             "got -2)")
        if (attn_mask.shape[-2] not in (1, target_len)
                or attn_mask.shape[-1] not in (1, key.shape[-2])):
            return False
        if attn_mask.ndim == 4:
            if attn_mask.shape[0] not in (1, batch) or attn_mask.shape[1] not in (1, heads):
                return False
        elif attn_mask.ndim != 2:
            return False
    if not query.shape[-1] == key.shape[-1] == value.shape[-1]:
        return False
    return query.stride(-1) == key.stride(-1) == value.stride(-1) == 1


def _dropout_keep(shape, dtype, like, dropout_p):
    """Dropout's multiplier: 0 where dropped, ``1 / (1 - p)`` where kept. Drawn from Ember's
    random stream, so ``ember.manual_seed`` makes the dropped pattern reproducible."""
    keep = empty(shape, dtype=dtype, device=like.device).bernoulli_(1 - dropout_p)
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
    _check_one_mask(attn_mask, is_causal)
    d = query._dtype
    if d._rank == 0:
        query, key, value = query.to(dt.float32), key.to(dt.float32), value.to(dt.float32)
    if enable_gqa and query.ndim >= 3:
        key, value = _repeat_kv_heads(query, key, value)
    _check_attention_args(query, key, value, dropout_p)
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
