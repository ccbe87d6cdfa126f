"""``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` / ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` as torch 2.13's
``torch.load`` honours them, and a file that is no checkpoint raising
``pickle.UnpicklingError`` as torch's does."""
import pickle
import warnings

import pytest
import torch

import ember


class Custom:
    """Not on the weights_only allowlist: loading it needs weights_only=False."""

    def __init__(self, value):
        self.value = value


@pytest.fixture
def checkpoint(tmp_path):
    """The same object saved by each library: a tensor beside a non-allowlisted object."""
    paths = {}
    for lib in (torch, ember):
        path = tmp_path / f"{lib.__name__}.pt"
        lib.save({"w": lib.ones(2), "custom": Custom(3)}, path)
        paths[lib] = path
    return paths


def _outcome(lib, path, **kwargs):
    """("ok", warnings) or (exception type, warnings) for lib.load(path, **kwargs)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = lib.load(path, **kwargs)
            outcome = ("ok", result["custom"].value)
        except Exception as exc:
            outcome = (type(exc).__name__,)
    messages = sorted(str(w.message).replace("torch.load", "ember.load") for w in caught
                      if "WEIGHTS_ONLY" in str(w.message))
    return outcome, messages


_ENVIRONMENTS = [{}, {"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1"},
                 {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"},
                 {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "true"},
                 {"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "YES"},
                 {"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "0", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "y"},
                 {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "no"},
                 {"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}]


@pytest.mark.parametrize("env", _ENVIRONMENTS, ids=lambda env: ",".join(
    f"{k[6:]}={v}" for k, v in env.items()) or "unset")
@pytest.mark.parametrize("weights_only", [None, True, False])
def test_switches_decide_weights_only_as_torch(checkpoint, monkeypatch, env, weights_only):
    for key in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    kwargs = {} if weights_only is None else {"weights_only": weights_only}
    expected = _outcome(torch, checkpoint[torch], **kwargs)
    assert _outcome(ember, checkpoint[ember], **kwargs) == expected
    # Ember reads torch's file under the same rules.
    assert _outcome(ember, checkpoint[torch], **kwargs)[0][0] == expected[0][0]


def test_both_switches_set_is_an_error_as_torch(checkpoint, monkeypatch):
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(RuntimeError) as torch_error:
        torch.load(checkpoint[torch])
    with pytest.raises(RuntimeError) as ember_error:
        ember.load(checkpoint[ember])
    assert str(ember_error.value) == str(torch_error.value)


def test_forcing_off_warns_as_torch_and_points_at_the_caller(checkpoint, monkeypatch):
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected") as record:
        assert ember.load(checkpoint[ember])["custom"].value == 3
    assert record[0].filename == __file__


def test_a_file_that_is_no_checkpoint_raises_unpickling_error(tmp_path):
    path = tmp_path / "junk.pt"
    path.write_bytes(b"this is not a checkpoint at all")
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=False)
    for weights_only in (True, False):
        with pytest.raises(pickle.UnpicklingError, match="not a checkpoint"):
            ember.load(path, weights_only=weights_only)
    # A zip cut off in its first bytes is still reported as a truncated checkpoint.
    path.write_bytes(b"PK\x03")
    with pytest.raises(RuntimeError, match="truncated or corrupted"):
        ember.load(path)
