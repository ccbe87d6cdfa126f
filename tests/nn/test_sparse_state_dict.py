"""Compact (CSR / 2:4) state_dicts of pruned models: exact round trip, size, save/load."""
import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.utils import prune
from ember.nn.utils.sparse_state_dict import (compact_state_dict, dense_state_dict,
                                              load_compact_state_dict, state_dict_nbytes)


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(48, 32), nn.ReLU(), nn.Conv1d(32, 8, 1), nn.Flatten())


def test_csr_round_trip_is_exact_and_small(tmp_path):
    model = _mlp()
    prune.l1_unstructured(model[0], "weight", amount=0.9)
    prune.l1_unstructured(model[2], "weight", amount=0.9)
    compact = compact_state_dict(model)
    assert compact["0.weight"]["layout"] == "csr" and "0.weight_mask" not in compact
    assert compact["0.bias"] is not None and isinstance(compact["0.bias"], ember.Tensor)
    dense_bytes = sum(v.numel() * 4 for v in _mlp().state_dict().values())
    assert state_dict_nbytes(compact) < 0.3 * dense_bytes
    path = tmp_path / "pruned.pt"
    ember.save(compact, path)
    fresh = _mlp()
    load_compact_state_dict(fresh, ember.load(path))
    x = ember.randn(4, 48)
    np.testing.assert_array_equal(fresh[0](x).detach().numpy(), model[0](x).detach().numpy())
    np.testing.assert_array_equal(fresh[2].weight.detach().numpy(),
                                  model[2].weight.detach().numpy())


def test_two_four_layout():
    model = _mlp()
    prune.ember_semi_structured(model[0], "weight")
    prune.remove(model[0], "weight")
    compact = compact_state_dict(model, layout="2:4")
    entry = compact["0.weight"]
    assert entry["layout"] == "2:4"
    assert entry["values"].shape == (32 * 48 // 2,) or entry["values"].shape == (32 * 12, 2)
    assert state_dict_nbytes({"w": entry}) <= 0.57 * 32 * 48 * 4
    dense = dense_state_dict(compact)
    np.testing.assert_array_equal(dense["0.weight"].numpy(), model[0].weight.detach().numpy())
    # a tensor not 2:4-sparse and not sparse enough stays dense
    assert isinstance(compact["2.weight"], ember.Tensor)


def test_rows_with_few_nonzeros_and_errors():
    w = np.zeros((3, 8), dtype=np.float32)
    w[0, 1] = 2.0            # a group with one nonzero
    w[2, 4:6] = [1.0, -1.0]
    compact = compact_state_dict({"w": ember.tensor(w)}, layout="2:4")
    np.testing.assert_array_equal(dense_state_dict(compact)["w"].numpy(), w)
    compact = compact_state_dict({"w": ember.tensor(w)}, layout="csr")
    np.testing.assert_array_equal(dense_state_dict(compact)["w"].numpy(), w)
    with pytest.raises(ValueError, match="layout must be one of"):
        compact_state_dict({"w": ember.tensor(w)}, layout="coo")
