"""Ember's Llama against transformers' on a small random configuration with grouped-query
attention (4 query heads sharing 2 key/value heads): logits, loss, gradients, KV cache."""
import numpy as np
import pytest
import torch

import ember
from ember.text.models import AutoConfig, AutoModel, LlamaConfig, LlamaForCausalLM, LlamaModel
from _hf_oracle import transformers

SMALL = dict(vocab_size=91, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
             rope_theta=500.0, bos_token_id=1, eos_token_id=2)


@pytest.fixture(scope="module")
def hf_llama_dir(tmp_path_factory):
    tf = transformers()
    torch.manual_seed(0)
    model = tf.LlamaForCausalLM(tf.LlamaConfig(**SMALL)).eval()
    with torch.no_grad():  # RMSNorm weights start at 1: make them matter
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)
    folder = tmp_path_factory.mktemp("llama")
    model.save_pretrained(folder / "safe")
    model.save_pretrained(folder / "bin", safe_serialization=False)
    return model, folder


def _ids(seed=0, shape=(2, 10)):
    return np.random.default_rng(seed).integers(0, 91, shape)


@pytest.mark.parametrize("fmt", ["safe", "bin"])
def test_logits_and_loss_match_transformers(hf_llama_dir, fmt):
    hf, folder = hf_llama_dir
    ids = _ids()
    with torch.no_grad():
        want = hf(torch.tensor(ids), labels=torch.tensor(ids))
    model, info = LlamaForCausalLM.from_pretrained(folder / fmt, output_loading_info=True)
    assert info["missing_keys"] == [] and info["unexpected_keys"] == []
    assert model.lm_head.weight is not model.model.embed_tokens.weight  # untied by default
    assert model.config.num_key_value_heads == 2 and model.config.rope_theta == 500.0
    got = model(ember.tensor(ids), labels=ember.tensor(ids))
    np.testing.assert_allclose(got.logits.detach().numpy(), want.logits.numpy(), atol=1e-5)
    np.testing.assert_allclose(got.loss.item(), want.loss.item(), rtol=1e-5)


def test_gradients_match_transformers(hf_llama_dir):
    hf, folder = hf_llama_dir
    ids = _ids(1)
    hf.zero_grad()
    hf(torch.tensor(ids), labels=torch.tensor(ids)).loss.backward()
    model = LlamaForCausalLM.from_pretrained(folder / "safe")
    model(ember.tensor(ids), labels=ember.tensor(ids)).loss.backward()
    own, theirs = dict(model.named_parameters()), dict(hf.named_parameters())
    for name in ("model.embed_tokens.weight", "model.layers.0.self_attn.k_proj.weight",
                 "model.layers.0.self_attn.q_proj.weight", "model.layers.1.mlp.gate_proj.weight",
                 "model.layers.1.input_layernorm.weight", "lm_head.weight"):
        np.testing.assert_allclose(own[name].grad.numpy(), theirs[name].grad.numpy(),
                                   atol=1e-5, err_msg=name)
    hf.zero_grad()


def test_kv_cache_and_base_model(hf_llama_dir):
    hf, folder = hf_llama_dir
    model = LlamaForCausalLM.from_pretrained(folder / "safe")
    ids = ember.tensor(_ids(2))
    with ember.no_grad():
        full = model(ids, use_cache=False).logits
        first = model(ids[:, :6], use_cache=True)
        second = model(ids[:, 6:8], past_key_values=first.past_key_values)
        third = model(ids[:, 8:], past_key_values=second.past_key_values)
    pieces = ember.cat([first.logits, second.logits, third.logits], 1)
    np.testing.assert_allclose(pieces.numpy(), full.numpy(), atol=1e-5)
    assert third.past_key_values[1][0].shape == (2, 2, 10, 8)  # key/value heads only
    base = AutoModel.from_pretrained(folder / "safe")
    assert isinstance(base, LlamaModel) and isinstance(AutoConfig.from_pretrained(folder / "safe"),
                                                       LlamaConfig)
    with torch.no_grad():
        want = hf.model(torch.tensor(_ids(2))).last_hidden_state
    np.testing.assert_allclose(base(ids).last_hidden_state.detach().numpy(), want.numpy(),
                               atol=1e-5)


def test_tied_llama_roundtrip(tmp_path):
    config = LlamaConfig(**SMALL, tie_word_embeddings=True)
    model = LlamaForCausalLM(config).eval()
    assert model.lm_head.weight is model.model.embed_tokens.weight
    model.save_pretrained(tmp_path)
    hf = transformers().LlamaForCausalLM.from_pretrained(tmp_path).eval()
    ids = _ids(4)
    with torch.no_grad():
        want = hf(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(model(ember.tensor(ids)).logits.detach().numpy(), want,
                               atol=1e-5)
