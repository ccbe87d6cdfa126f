"""``ember.text``: tokenizers, sequence utilities and pre-trained Transformers.

- Tokenizers through Hugging Face's ``tokenizers`` (the ``text`` extra), called as
  ``transformers``' are: ``Tokenizer`` / ``AutoTokenizer.from_pretrained(local_dir)``,
  ``BatchEncoding``.
- Tokenizers with no dependency, for training from scratch: ``ByteTokenizer``, ``CharTokenizer``.
- Sequence utilities: ``Vocab`` / ``build_vocab_from_iterator`` (torchtext's), ``pad_collate`` /
  ``PadCollate`` for variable-length batches, ``BucketBatchSampler``.
- Models (``ember.text.models``: BERT, GPT-2, Llama, ``Auto*``, sentence embeddings), reachable
  here too: ``ember.text.BertModel`` imports them on first use.

Importing ``ember.text`` is light: it imports neither ``tokenizers`` nor ``ember.nn``.
"""
import importlib as _importlib

from .batch_encoding import BatchEncoding
from .bucket_sampler import BucketBatchSampler
from .byte_and_char_tokenizers import ByteTokenizer, CharTokenizer
from .collate import PadCollate, pad_collate
from .tokenizer import AutoTokenizer, PreTrainedTokenizerFast, Tokenizer
from .vocab import Vocab, build_vocab_from_iterator, vocab

__all__ = ["Tokenizer", "PreTrainedTokenizerFast", "AutoTokenizer", "BatchEncoding",
           "ByteTokenizer", "CharTokenizer", "Vocab", "build_vocab_from_iterator", "vocab",
           "pad_collate", "PadCollate", "BucketBatchSampler"]

# ----- models (ember.text.models) -----
# The model classes live in ember.text.models, which imports ember.nn; they are looked up
# there on first use so that `import ember.text` stays light.
_MODELS_MODULE = f"{__name__}.models"


def __getattr__(name):
    if not name.startswith("_"):
        try:
            models = _importlib.import_module(_MODELS_MODULE)
        except ImportError as exc:
            # An AttributeError, so hasattr() stays False rather than raising; the import
            # error is its cause.
            raise AttributeError(f"module 'ember.text' has no attribute '{name}' (ember.text"
                                 f".models could not be imported: {exc})") from exc
        if name == "models":
            return models
        if name in getattr(models, "__all__", ()):
            value = globals()[name] = getattr(models, name)
            return value
    raise AttributeError(f"module 'ember.text' has no attribute '{name}'")


def __dir__():
    names = set(globals()) | {"models"}
    try:
        names |= set(_importlib.import_module(_MODELS_MODULE).__all__)
    except ImportError:
        pass
    return sorted(names)
