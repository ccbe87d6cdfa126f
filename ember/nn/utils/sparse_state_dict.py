"""Saving a pruned model compactly: its state_dict with sparse tensors stored as CSR or as
2:4-compressed values, and back to the dense state_dict the unpruned architecture loads.

``prune`` leaves a module with ``weight_orig`` and ``weight_mask`` (or, after
``prune.remove``, a dense ``weight`` full of zeros), so a 90%-pruned model saves as large as
the float one. ``compact_state_dict`` folds each mask into its weight and stores a tensor
whose zeros reach ``min_sparsity`` as

- ``"csr"``: the nonzero values, their column indices (int16 when the row is short enough)
  and row pointers, over the tensor viewed as ``(shape[0], -1)``;
- ``"2:4"``: for weights pruned 2-in-4 along the last dimension
  (``prune.ember_semi_structured``), the two kept values of every group of four and a 4-bit
  mask per group, two groups to a byte: 56% of float32 bytes.

Everything else stays a dense tensor. The result is a plain dict of tensors and dicts, so
``ember.save`` writes it; ``dense_state_dict`` or ``load_compact_state_dict`` rebuild the
dense tensors exactly.
"""
import numpy as np

import ember

__all__ = ["compact_state_dict", "dense_state_dict", "load_compact_state_dict",
           "state_dict_nbytes"]

_LAYOUTS = ("csr", "2:4")


def _effective(state_dict):
    """``weight_orig * weight_mask`` under ``weight``: the tensors a dense model loads."""
    out = {}
    for key, value in state_dict.items():
        if key.endswith("_mask") and key[:-5] + "_orig" in state_dict:
            continue
        if key.endswith("_orig") and key[:-5] + "_mask" in state_dict:
            mask = state_dict[key[:-5] + "_mask"]
            out[key[:-5]] = (value * mask.to(value.dtype)).detach()
        else:
            out[key] = value
    return out


def _to_csr(a):
    rows = a.reshape(a.shape[0], -1) if a.ndim > 1 else a.reshape(1, -1)
    nz_rows, nz_cols = np.nonzero(rows)
    index_dtype = np.int16 if rows.shape[1] <= np.iinfo(np.int16).max else np.int32
    crow = np.zeros(rows.shape[0] + 1, dtype=np.int32)
    np.cumsum(np.bincount(nz_rows, minlength=rows.shape[0]), out=crow[1:])
    return {"layout": "csr", "shape": list(a.shape),
            "values": ember.tensor(rows[nz_rows, nz_cols]),
            "col_indices": ember.tensor(nz_cols.astype(index_dtype)),
            "crow_indices": ember.tensor(crow)}


def _is_two_four(a):
    if a.ndim < 2 or a.shape[-1] % 4:
        return False
    return bool(((a.reshape(-1, 4) != 0).sum(axis=1) <= 2).all())


def _to_two_four(a):
    groups = a.reshape(-1, 4)
    keep = groups != 0
    # groups with fewer than two nonzeros keep zeros to fill their two slots (first free ones)
    short = 2 - keep.sum(axis=1)
    for _ in range(2):
        fill = (short > 0)[:, None] & ~keep & (np.cumsum(~keep, axis=1) == 1)
        keep |= fill
        short -= fill.sum(axis=1)
    values = groups[keep].reshape(-1, 2)
    nibbles = (keep * np.array([1, 2, 4, 8], dtype=np.uint8)).sum(axis=1).astype(np.uint8)
    if nibbles.size % 2:
        nibbles = np.append(nibbles, np.uint8(0))
    packed = nibbles[0::2] | (nibbles[1::2] << 4)
    return {"layout": "2:4", "shape": list(a.shape), "values": ember.tensor(values),
            "mask": ember.tensor(packed.astype(np.uint8))}


def compact_state_dict(model_or_state_dict, layout="csr", min_sparsity=0.5):
    """The state_dict of a (pruned) model with its sparse float tensors compressed.

    Args:
        model_or_state_dict: a Module or its ``state_dict()``
        layout: ``"csr"`` or ``"2:4"`` (tensors not 2:4-sparse fall back to CSR when sparse
            enough, else stay dense)
        min_sparsity: the fraction of zeros from which a tensor is stored sparse
    """
    if layout not in _LAYOUTS:
        raise ValueError(f"layout must be one of {_LAYOUTS}, got {layout!r}")
    state_dict = (model_or_state_dict.state_dict() if hasattr(model_or_state_dict, "state_dict")
                  else model_or_state_dict)
    out = {}
    for key, value in _effective(state_dict).items():
        if not isinstance(value, ember.Tensor) or not value.dtype.is_floating_point \
                or value.numel() == 0:
            out[key] = value
            continue
        a = value.detach().cpu().numpy()
        if layout == "2:4" and _is_two_four(a):
            out[key] = _to_two_four(a)
        elif 1.0 - np.count_nonzero(a) / a.size >= min_sparsity:
            out[key] = _to_csr(a)
        else:
            out[key] = value.detach()
    return out


def _from_csr(entry):
    shape = tuple(entry["shape"])
    crow = entry["crow_indices"].numpy()
    values = entry["values"].numpy()
    n_rows = len(crow) - 1
    dense = np.zeros((n_rows, int(np.prod(shape)) // max(n_rows, 1)), dtype=values.dtype)
    rows = np.repeat(np.arange(n_rows), np.diff(crow))
    dense[rows, entry["col_indices"].numpy().astype(np.int64)] = values
    return dense.reshape(shape)


def _from_two_four(entry):
    shape = tuple(entry["shape"])
    values = entry["values"].numpy()
    packed = entry["mask"].numpy()
    nibbles = np.stack([packed & 0xF, packed >> 4], axis=1).reshape(-1)[:values.shape[0]]
    keep = (nibbles[:, None] >> np.arange(4, dtype=np.uint8)) & 1 == 1
    groups = np.zeros((values.shape[0], 4), dtype=values.dtype)
    groups[keep] = values.reshape(-1)
    return groups.reshape(shape)


def dense_state_dict(compact):
    """The dense state_dict of a ``compact_state_dict`` result (exact values)."""
    out = {}
    for key, value in compact.items():
        if isinstance(value, dict) and value.get("layout") == "csr":
            out[key] = ember.tensor(_from_csr(value))
        elif isinstance(value, dict) and value.get("layout") == "2:4":
            out[key] = ember.tensor(_from_two_four(value))
        else:
            out[key] = value
    return out


def load_compact_state_dict(model, compact, strict=True):
    """Load a compact state_dict into ``model`` (an unpruned model of the same architecture)."""
    return model.load_state_dict(dense_state_dict(compact), strict=strict)


def state_dict_nbytes(state_dict):
    """Bytes of tensor data in a (compact or dense) state_dict, nested dicts included."""
    total = 0
    for value in state_dict.values():
        if isinstance(value, dict):
            total += state_dict_nbytes(value)
        elif isinstance(value, ember.Tensor):
            total += value.numel() * value.element_size()
    return total
