"""``BatchEncoding``: what a tokenizer call returns, as Hugging Face's ``transformers`` does — a
dict of ``input_ids``, ``attention_mask``, ``token_type_ids``… that also reads as attributes,
moves to a device with ``.to``, and keeps the ``tokenizers`` encodings for word/token lookups."""
import numpy as np

__all__ = ["BatchEncoding"]


class BatchEncoding(dict):
    """A dict (so ``model(**batch)`` works) whose keys are also attributes.

    ``encodings`` holds the ``tokenizers.Encoding`` of each row when the batch came from a
    tokenizer, for ``tokens(i)``, ``word_ids(i)`` and ``sequence_ids(i)``.
    """

    def __init__(self, data=None, encoding=None, tensor_type=None, n_sequences=None):
        super().__init__(data or {})
        self._encodings = encoding
        self._n_sequences = n_sequences
        if tensor_type is not None:
            self.convert_to_tensors(tensor_type)

    def __getattr__(self, name):
        # Only reached when normal lookup fails, so methods and _encodings are unaffected.
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"'BatchEncoding' object has no attribute '{name}'") from None

    def __getstate__(self):
        return {"data": dict(self), "encodings": self._encodings,
                "n_sequences": self._n_sequences}

    def __setstate__(self, state):
        self.update(state["data"])
        self._encodings = state["encodings"]
        self._n_sequences = state["n_sequences"]

    def __reduce__(self):
        return (BatchEncoding, (), self.__getstate__())

    @property
    def encodings(self):
        return self._encodings

    @property
    def n_sequences(self):
        return self._n_sequences

    @property
    def is_fast(self):
        return self._encodings is not None

    def _encoding(self, batch_index):
        if self._encodings is None:
            raise ValueError("this BatchEncoding has no tokenizers encodings (it was not made by a "
                             "tokenizer call), so tokens/word_ids are not available")
        return self._encodings[batch_index]

    def tokens(self, batch_index=0):
        """The token strings of row ``batch_index``."""
        return self._encoding(batch_index).tokens

    def word_ids(self, batch_index=0):
        """For each token of row ``batch_index``, the index of the word it came from (None for
        special and padding tokens)."""
        return self._encoding(batch_index).word_ids

    def sequence_ids(self, batch_index=0):
        """For each token, 0 or 1 for the first or second text of a pair, None for specials."""
        return self._encoding(batch_index).sequence_ids

    def convert_to_tensors(self, tensor_type="pt", prepend_batch_axis=False):
        """Turns the lists into arrays (``"np"``) or Ember tensors (``"pt"``, as with torch)."""
        if tensor_type not in ("pt", "np"):
            raise ValueError(f"return_tensors should be 'pt', 'np' or None, got {tensor_type!r}")
        for key, value in self.items():
            if prepend_batch_axis:
                value = [value]
            try:
                array = np.asarray(value)
                if array.dtype == object:
                    raise ValueError("ragged")
            except ValueError:
                raise ValueError(
                    "Unable to create tensor, you should probably activate truncation and/or "
                    "padding with 'padding=True' 'truncation=True' to have batched tensors with "
                    f"the same length. (`{key}` has rows of different lengths.)") from None
            if array.dtype.kind in "iu":
                array = array.astype(np.int64)
            if tensor_type == "pt":
                from ..ops.creation import from_numpy
                array = from_numpy(np.ascontiguousarray(array))
            self[key] = array
        return self

    def to(self, device, *, non_blocking=False):
        """Moves every tensor to ``device``; other values stay as they are."""
        from .._tensor import Tensor
        for key, value in self.items():
            if isinstance(value, Tensor):
                self[key] = value.to(device, non_blocking=non_blocking)
        return self

    def __repr__(self):
        return f"BatchEncoding({dict.__repr__(self)})"
