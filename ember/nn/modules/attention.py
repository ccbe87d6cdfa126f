"""``MultiheadAttention``, as ``torch.nn`` (same parameters, ``state_dict`` keys and defaults).

PyTorch runs an eval-mode self-attention call without gradients through a fused kernel when
its conditions hold (``batch_first``, query is key is value, even head count, packed weights
with bias, no bias_k / zero attention, boolean masks). Its results agree with the ordinary
path except for a query row whose every key is masked: the fused kernel gives NaN where
``scaled_dot_product_attention`` gives zeros. Ember takes the same decision and reproduces that
row behaviour; the arithmetic is the same in both cases."""
from ... import ops as _ops
from ...autograd import grad_mode
from ..parameter import Parameter
from .. import init
from ..functional._attention import _multi_head_attention, _canonical_mask, _none_or_dtype
from .linear import NonDynamicallyQuantizableLinear  # noqa: F401  (out_proj's class, as torch)
from .module import Module

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(_ops.empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(_ops.empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(_ops.empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(_ops.empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_ops.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(_ops.empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(_ops.empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def __setstate__(self, state):
        # Checkpoints pickled before kdim/vdim existed.
        if "_qkv_same_embed_dim" not in state:
            state["_qkv_same_embed_dim"] = True
        super().__setstate__(state)

    def _takes_fused_path(self, query, key, value, attn_mask, key_padding_mask):
        """PyTorch's conditions for its fused inference kernel (see the module docstring)."""
        if (attn_mask is not None and attn_mask.is_floating_point()) or (
                key_padding_mask is not None and key_padding_mask.is_floating_point()):
            return False
        if query.dim() != 3 or query is not key or key is not value:
            return False
        if self.in_proj_weight is None or self.in_proj_bias is None:
            return False
        if query.dtype != self.in_proj_bias.dtype or query.dtype != self.in_proj_weight.dtype:
            return False
        if (self.training or self.num_heads % 2 or not self.batch_first
                or self.bias_k is not None or self.bias_v is not None or self.add_zero_attn):
            return False
        tensors = (query, self.in_proj_weight, self.in_proj_bias, self.out_proj.weight,
                   self.out_proj.bias)
        return not (grad_mode.is_grad_enabled()
                    and any(t is not None and t.requires_grad for t in tensors))

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        return self._attend(query, key, value, key_padding_mask, need_weights, attn_mask,
                            average_attn_weights, is_causal)

    def _attend(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False, fused=None):
        """``forward``; ``fused`` set by a caller (the encoder layer) that decided for PyTorch's
        fused kernel itself, None to apply this module's own conditions."""
        if fused is None:
            fused = self._takes_fused_path(query, key, value, attn_mask, key_padding_mask)
        is_batched = query.dim() == 3
        if fused:
            # The fused kernel takes the masks themselves and ignores the is_causal hint.
            key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                               _none_or_dtype(attn_mask), "attn_mask",
                                               query.dtype)
            attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                        check_other=False)
            is_causal = False
        if self.batch_first and is_batched:
            # Transposed views that keep ``query is key is value`` as it was.
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        out, weights = _multi_head_attention(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, self.training, key_padding_mask,
            need_weights, attn_mask, separate, self.q_proj_weight if separate else None,
            self.k_proj_weight if separate else None, self.v_proj_weight if separate else None,
            None, None, average_attn_weights, is_causal, nan_rows=fused)
        if self.batch_first and is_batched:
            out = out.transpose(1, 0)
        return out, weights

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """The one mask (and PyTorch's mask-type code 0, 1 or 2) its fused kernel would get."""
        mask_type = merged = None
        if key_padding_mask is not None:
            mask_type, merged = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                expanded = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                expanded = attn_mask.view(1, 1, seq_len, seq_len).expand(
                    batch_size, self.num_heads, -1, -1)
            merged = expanded
            if key_padding_mask is not None:
                merged = expanded + key_padding_mask.view(batch_size, 1, 1, seq_len).expand(
                    -1, self.num_heads, -1, -1)
        return merged, mask_type
