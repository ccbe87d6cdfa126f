"""Ember's BERT against transformers' on a small random configuration: checkpoints saved by
transformers (safetensors and .bin) load by HF's key names and give the same hidden states,
pooler output, MLM logits and gradients."""
import numpy as np
import pytest
import torch

import ember
from ember.text.models import AutoModel, BertConfig, BertForMaskedLM, BertModel, mean_pooling
from _hf_oracle import transformers

SMALL = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=37, max_position_embeddings=64, type_vocab_size=2)


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, 99, (2, 7))
    mask = np.ones((2, 7), dtype=np.int64)
    mask[1, 5:] = 0
    types = rng.integers(0, 2, (2, 7))
    return ids, mask, types


@pytest.fixture(scope="module")
def hf_bert_dir(tmp_path_factory):
    tf = transformers()
    torch.manual_seed(0)
    model = tf.BertModel(tf.BertConfig(**SMALL)).eval()
    folder = tmp_path_factory.mktemp("bert")
    model.save_pretrained(folder / "safe")
    model.save_pretrained(folder / "bin", safe_serialization=False)
    return model, folder


@pytest.mark.parametrize("fmt", ["safe", "bin"])
def test_bert_model_matches_transformers(hf_bert_dir, fmt):
    hf, folder = hf_bert_dir
    ids, mask, types = _batch()
    with torch.no_grad():
        want = hf(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                  token_type_ids=torch.tensor(types))
    model = BertModel.from_pretrained(folder / fmt)
    assert not model.training
    got = model(input_ids=ember.tensor(ids), attention_mask=ember.tensor(mask),
                token_type_ids=ember.tensor(types))
    np.testing.assert_allclose(got.last_hidden_state.detach().numpy(),
                               want.last_hidden_state.numpy(), atol=1e-5)
    np.testing.assert_allclose(got["pooler_output"].detach().numpy(), want.pooler_output.numpy(),
                               atol=1e-5)
    np.testing.assert_allclose(got[0].detach().numpy(), want[0].numpy(), atol=1e-5)


def test_bert_gradients_match_transformers(hf_bert_dir):
    hf, folder = hf_bert_dir
    ids, mask, types = _batch(1)
    out = hf(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask))
    mean_pooling_torch = ((out.last_hidden_state * torch.tensor(mask)[..., None]).sum(1)
                          / torch.tensor(mask).sum(1, keepdim=True))
    (mean_pooling_torch ** 2).sum().backward()
    model = AutoModel.from_pretrained(folder / "safe")
    assert isinstance(model, BertModel)
    got = model(input_ids=ember.tensor(ids), attention_mask=ember.tensor(mask))
    (mean_pooling(got.last_hidden_state, ember.tensor(mask)) ** 2).sum().backward()
    own = dict(model.named_parameters())
    for name, p in hf.named_parameters():
        if name.startswith("pooler."):
            continue
        np.testing.assert_allclose(own[name].grad.numpy(), p.grad.numpy(), atol=2e-5,
                                   err_msg=name)
    hf.zero_grad()


def test_masked_lm_prefix_tied_weights_and_roundtrip(tmp_path):
    tf = transformers()
    torch.manual_seed(1)
    hf = tf.BertForMaskedLM(tf.BertConfig(**SMALL)).eval()
    hf.save_pretrained(tmp_path / "mlm")
    ids, mask, _ = _batch(2)
    labels = np.where(np.arange(7) % 3 == 0, ids, -100)
    with torch.no_grad():
        want = hf(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                  labels=torch.tensor(labels))
    model, info = BertForMaskedLM.from_pretrained(tmp_path / "mlm", output_loading_info=True)
    assert info["missing_keys"] == [] and info["unexpected_keys"] == []
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    got = model(input_ids=ember.tensor(ids), attention_mask=ember.tensor(mask),
                labels=ember.tensor(labels))
    np.testing.assert_allclose(got.logits.detach().numpy(), want.logits.numpy(), atol=1e-5)
    np.testing.assert_allclose(got.loss.item(), want.loss.item(), rtol=1e-5)
    # The MLM checkpoint into the base model: "bert." is stripped, the head is unexpected.
    base, info = BertModel.from_pretrained(tmp_path / "mlm", output_loading_info=True)
    assert any(k.startswith("cls.") for k in info["unexpected_keys"])
    assert all(k.startswith("pooler.") for k in info["missing_keys"]) and info["missing_keys"]
    # Ember's save_pretrained is read back by transformers.
    model.save_pretrained(tmp_path / "ember")
    again = tf.BertForMaskedLM.from_pretrained(tmp_path / "ember").eval()
    with torch.no_grad():
        logits = again(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits
    np.testing.assert_allclose(logits.detach().numpy(), want.logits.numpy(), atol=1e-5)


def test_config_roundtrip_keeps_hf_fields(tmp_path):
    config = BertConfig(**SMALL, id2label={0: "a"})
    config.save_pretrained(tmp_path)
    again = BertConfig.from_pretrained(tmp_path)
    assert again.hidden_size == 32 and again.layer_norm_eps == 1e-12 and again.id2label
    assert transformers().BertConfig.from_pretrained(tmp_path).intermediate_size == 37
