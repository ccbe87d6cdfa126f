"""Rows for ``ember/ops/attention.py``: ``F.scaled_dot_product_attention`` on 4-D inputs (the
fused op) and on other ranks (PyTorch's math fallback), with float and boolean masks (broadcast,
with fully masked rows), ``is_causal`` (square and not), ``scale``, ``dropout_p=0`` and
``enable_gqa``.

Tensor arguments are (query, key, value[, attn_mask]): a boolean mask is made by
``bool_mask``, a float one is an ordinary (differentiable) input.
"""
from .core import OpInfo, Sample

DTYPES = ("float32", "float64", "bfloat16")


def F(lib):
    return lib.nn.functional


def _sdpa(lib, q, k, v, mask=None, **kw):
    return F(lib).scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)


def bool_mask(rng, shape, dtype, index):
    """True (attend) with probability 0.7 for the mask; the first query row of a mask of at
    least 2 rows is all False (a row that attends to nothing gives zeros, not NaN)."""
    if index == 3:
        mask = rng.random(shape) > 0.3
        if len(shape) >= 2 and shape[-2] >= 2:
            mask[..., 0, :] = False
        return mask
    return rng.uniform(-2.0, 2.0, size=shape)


# Value's head dim equals the query's: PyTorch's fused CPU kernel takes only that case (its
# math fallback the rest, a different graph: SDPA_VALUE_DIM).
Q, K, V = (2, 2, 4, 5), (2, 2, 6, 5), (2, 2, 6, 5)
SDPA = [
    Sample([Q, K, V]),                                # the fused op
    Sample([Q, K, V], {"scale": 0.3}),
    Sample([Q, K, V], {"scale": -0.5}),
    Sample([Q, K, V], {"dropout_p": 0.0}),
    Sample([Q, (2, 2, 4, 5), (2, 2, 4, 5)], {"is_causal": True}),
    Sample([(2, 2, 3, 5), K, V], {"is_causal": True}),  # fewer queries than keys
    Sample([(2, 2, 6, 5), (2, 2, 3, 5), (2, 2, 3, 5)], {"is_causal": True}),  # more
    Sample([(3, 4, 5), (3, 6, 5), (3, 6, 3)]),        # the math fallback
    Sample([(3, 4, 5), (3, 6, 5), (3, 6, 3)], {"is_causal": True, "scale": 0.7}),
    Sample([(4, 5), (6, 5), (6, 3)]),                 # unbatched
    Sample([(2, 1, 2, 4, 5), (2, 1, 2, 6, 5), (2, 1, 2, 6, 3)]),
    Sample([(0, 2, 4, 5), (0, 2, 6, 5), (0, 2, 6, 5)]),  # empty batch
    Sample([(2, 2, 0, 5), K, V]),                     # no queries
    Sample([Q, K, V], noncontig=True),
    Sample([(3, 4, 5), (3, 6, 5), (3, 6, 3)], noncontig=True),
]
SDPA_VALUE_DIM = [
    Sample([Q, K, (2, 2, 6, 3)]),
    Sample([Q, K, (2, 2, 6, 8)], {"is_causal": True}),
    Sample([Q, K, (2, 2, 6, 3)], noncontig=True),
]
SDPA_FLOAT_MASK = [
    Sample([Q, K, V, (4, 6)]),                        # broadcast over batch and heads
    Sample([Q, K, V, (2, 1, 4, 6)], {"scale": 0.5}),
    Sample([Q, K, V, (2, 2, 4, 6)]),
    Sample([(3, 4, 5), (3, 6, 5), (3, 6, 3), (3, 4, 6)]),
    Sample([(4, 5), (6, 5), (6, 3), (4, 6)]),
    Sample([Q, K, V, (4, 6)], noncontig=True),
]
SDPA_BOOL_MASK = [
    Sample([Q, K, V, (4, 6)]),
    Sample([Q, K, V, (2, 1, 4, 6)]),
    Sample([Q, K, V, (6,)]),                          # one key mask for every query
    Sample([(3, 4, 5), (3, 6, 5), (3, 6, 3), (3, 4, 6)]),
    Sample([Q, K, V, (4, 6)], noncontig=True),
]
SDPA_GQA = [
    Sample([(2, 4, 4, 5), (2, 2, 6, 5), (2, 2, 6, 5)], {"enable_gqa": True}),
    Sample([(2, 4, 4, 5), (2, 1, 6, 5), (2, 1, 6, 5)], {"enable_gqa": True, "is_causal": True}),
    Sample([(4, 4, 5), (2, 6, 5), (2, 6, 3)], {"enable_gqa": True}),
]

OPS = [
    OpInfo("F.scaled_dot_product_attention", _sdpa, SDPA, dtypes=DTYPES),
    OpInfo("F.scaled_dot_product_attention_value_dim", _sdpa, SDPA_VALUE_DIM, dtypes=DTYPES),
    OpInfo("F.scaled_dot_product_attention_float_mask", _sdpa, SDPA_FLOAT_MASK, dtypes=DTYPES),
    OpInfo("F.scaled_dot_product_attention_bool_mask", _sdpa, SDPA_BOOL_MASK, dtypes=DTYPES,
           make_input=bool_mask),
    OpInfo("F.scaled_dot_product_attention_gqa", _sdpa, SDPA_GQA, dtypes=DTYPES),
    # PyTorch's CPU build accepts a mask together with is_causal.
    OpInfo("F.scaled_dot_product_attention_mask_and_causal", _sdpa,
           [Sample([Q, K, V, (4, 6)], {"is_causal": True})], dtypes=("float32", "float64")),
    OpInfo("F.scaled_dot_product_attention_errors", _sdpa, [
        Sample([(2, 2, 4, 5), (2, 2, 6, 4), (2, 2, 6, 3)]),        # query / key features
        Sample([(2, 2, 4, 5), (2, 2, 6, 5), (2, 2, 5, 3)]),        # key / value lengths
        Sample([(5,), (6, 5), (6, 3)]),                             # 1-D query
        Sample([Q, K, V, (3, 6)]),                                  # mask does not broadcast
        Sample([(2, 3, 4, 5), (2, 2, 6, 5), (2, 2, 6, 3)], {"enable_gqa": True}),
    ], dtypes=("float32",), grad=False, gradcheck=False),
]
