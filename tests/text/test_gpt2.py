"""Ember's GPT-2 against transformers' on a small random configuration: logits, loss and
gradients from checkpoints transformers saved (safetensors and .bin), the tied head, and the
KV cache (a prompt fed in two pieces equals it fed at once)."""
import numpy as np
import pytest
import torch

import ember
from ember.text.models import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, GPT2Model
from _hf_oracle import transformers

SMALL = dict(vocab_size=97, n_positions=32, n_embd=32, n_layer=2, n_head=4, bos_token_id=0,
             eos_token_id=0)


@pytest.fixture(scope="module")
def hf_gpt2_dir(tmp_path_factory):
    tf = transformers()
    torch.manual_seed(0)
    model = tf.GPT2LMHeadModel(tf.GPT2Config(**SMALL)).eval()
    folder = tmp_path_factory.mktemp("gpt2")
    model.save_pretrained(folder / "safe")
    model.save_pretrained(folder / "bin", safe_serialization=False)
    return model, folder


def _ids(seed=0, shape=(2, 9)):
    return np.random.default_rng(seed).integers(0, 97, shape)


@pytest.mark.parametrize("fmt", ["safe", "bin"])
def test_lm_logits_and_loss_match_transformers(hf_gpt2_dir, fmt):
    hf, folder = hf_gpt2_dir
    ids = _ids()
    with torch.no_grad():
        want = hf(torch.tensor(ids), labels=torch.tensor(ids))
    model, info = GPT2LMHeadModel.from_pretrained(folder / fmt, output_loading_info=True)
    assert info["missing_keys"] == [] and info["unexpected_keys"] == []
    assert model.lm_head.weight is model.transformer.wte.weight
    got = model(ember.tensor(ids), labels=ember.tensor(ids))
    np.testing.assert_allclose(got.logits.detach().numpy(), want.logits.numpy(), atol=1e-5)
    np.testing.assert_allclose(got.loss.item(), want.loss.item(), rtol=1e-5)


def test_gradients_match_transformers(hf_gpt2_dir):
    hf, folder = hf_gpt2_dir
    ids = _ids(1)
    hf.zero_grad()
    hf(torch.tensor(ids), labels=torch.tensor(ids)).loss.backward()
    model = AutoModelForCausalLM.from_pretrained(folder / "safe")
    assert isinstance(model, GPT2LMHeadModel)
    model(ember.tensor(ids), labels=ember.tensor(ids)).loss.backward()
    own = dict(model.named_parameters())
    for name in ("transformer.wte.weight", "transformer.h.0.attn.c_attn.weight",
                 "transformer.h.1.mlp.c_proj.bias", "transformer.ln_f.weight"):
        want = dict(hf.named_parameters())[name].grad.numpy()
        np.testing.assert_allclose(own[name].grad.numpy(), want, atol=1e-5, err_msg=name)
    hf.zero_grad()


def test_padding_mask_and_kv_cache(hf_gpt2_dir):
    hf, folder = hf_gpt2_dir
    model = GPT2LMHeadModel.from_pretrained(folder / "safe")
    ids = ember.tensor(_ids(2))
    with ember.no_grad():
        full = model(ids, use_cache=False).logits
        first = model(ids[:, :5], use_cache=True)
        rest = model(ids[:, 5:], past_key_values=first.past_key_values,
                     attention_mask=ember.ones(2, 9, dtype=ember.long))
    np.testing.assert_allclose(ember.cat([first.logits, rest.logits], 1).numpy(), full.numpy(),
                               atol=1e-5)
    assert rest.past_key_values[0][0].shape == (2, 4, 9, 8)
    # Left padding with an attention mask, as transformers computes it.
    mask = np.ones((2, 9), dtype=np.int64)
    mask[0, :3] = 0
    positions = np.clip(mask.cumsum(-1) - 1, 0, None)
    with torch.no_grad():
        want = hf(torch.tensor(_ids(2)), attention_mask=torch.tensor(mask),
                  position_ids=torch.tensor(positions)).logits
    with ember.no_grad():
        got = model(ids, attention_mask=ember.tensor(mask),
                    position_ids=ember.tensor(positions)).logits
    np.testing.assert_allclose(got.numpy()[mask == 1], want.numpy()[mask == 1], atol=1e-5)


def test_base_model_from_lm_checkpoint_and_save(hf_gpt2_dir, tmp_path):
    hf, folder = hf_gpt2_dir
    base = GPT2Model.from_pretrained(folder / "safe")
    ids = _ids(3)
    with torch.no_grad():
        want = hf.transformer(torch.tensor(ids)).last_hidden_state
    np.testing.assert_allclose(base(ember.tensor(ids)).last_hidden_state.detach().numpy(),
                               want.numpy(), atol=1e-5)
    model = GPT2LMHeadModel(GPT2Config(**SMALL))
    model.save_pretrained(tmp_path)
    again = transformers().GPT2LMHeadModel.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        theirs = again(torch.tensor(ids)).logits.numpy()
    model.eval()
    np.testing.assert_allclose(model(ember.tensor(ids)).logits.detach().numpy(), theirs,
                               atol=1e-5)


def test_from_pretrained_dtype(hf_gpt2_dir):
    _, folder = hf_gpt2_dir
    ids = ember.tensor(_ids(5))
    full = GPT2LMHeadModel.from_pretrained(folder / "safe", dtype="auto")
    assert full.dtype == ember.float32  # transformers wrote "dtype": "float32"
    half = GPT2LMHeadModel.from_pretrained(folder / "safe", dtype=ember.bfloat16)
    assert half.dtype == ember.bfloat16
    assert half.lm_head.weight is half.transformer.wte.weight
    with ember.no_grad():
        want = full(ids).logits.numpy()
        got = half(ids).logits.float().numpy()
    np.testing.assert_allclose(got, want, atol=0.05)
    with pytest.raises(ValueError, match="not an Ember dtype"):
        GPT2LMHeadModel.from_pretrained(folder / "safe", dtype="float99")
