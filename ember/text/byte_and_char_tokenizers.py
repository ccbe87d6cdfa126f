"""Two tokenizers that need no library, for training a model from scratch on raw text.

- ``ByteTokenizer``: UTF-8 bytes are ids 0..255, any special tokens come after; it can encode
  every text, and decodes invalid byte sequences with U+FFFD rather than failing (a model's
  samples need not be valid UTF-8).
- ``CharTokenizer``: one id per character seen in a text (``CharTokenizer.from_text(text)``),
  sorted so the same text always gives the same ids; characters it never saw map to the
  unknown token if it has one, else raise.

Both save to and load from a small JSON file (``save(path)`` / ``load(path)``).
"""
import json
import os
import re

import numpy as np

__all__ = ["ByteTokenizer", "CharTokenizer"]


def _split_specials(text, specials):
    """Yields (piece, is_special), matching the longest special token first; one regular
    expression does the scan, so a long text costs no Python loop over its characters."""
    if not specials:
        yield text, False
        return
    pattern = re.compile("(" + "|".join(map(re.escape, sorted(specials, key=len, reverse=True)))
                         + ")")
    for i, piece in enumerate(pattern.split(text)):
        if piece:
            yield piece, i % 2 == 1   # split() puts the captured separators at odd places


class _ScratchTokenizer:
    """What both tokenizers share: special tokens after the base vocabulary, list[int] ids."""

    kind = None

    def __init__(self, special_tokens=()):
        self.special_tokens = list(dict.fromkeys(special_tokens))
        self._special_ids = {token: self._base_size() + i
                             for i, token in enumerate(self.special_tokens)}

    def _base_size(self):
        raise NotImplementedError

    @property
    def vocab_size(self):
        return self._base_size() + len(self.special_tokens)

    def __len__(self):
        return self.vocab_size

    def token_to_id(self, token):
        """The id of a special token (or of a base token), None if there is none."""
        if token in self._special_ids:
            return self._special_ids[token]
        return self._base_token_to_id(token)

    def encode(self, text, add_special_tokens=False, parse_special_tokens=True):
        """The ids of ``text`` (a list of ints). Special tokens written in the text become
        their ids unless ``parse_special_tokens`` is False; ``add_special_tokens`` wraps the
        text in the ``bos``/``eos`` tokens when the tokenizer has them."""
        ids = []
        specials = self.special_tokens if parse_special_tokens else ()
        for piece, is_special in _split_specials(text, specials):
            ids.extend([self._special_ids[piece]] if is_special else self._encode_plain(piece))
        if add_special_tokens:
            if self.bos_token is not None:
                ids.insert(0, self._special_ids[self.bos_token])
            if self.eos_token is not None:
                ids.append(self._special_ids[self.eos_token])
        return ids

    def decode(self, ids, skip_special_tokens=False):
        """The text of a list of ids (or a 1-D tensor/array)."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        outside = (ids < 0) | (ids >= self.vocab_size)
        if outside.any():
            raise IndexError(f"token id {int(ids[np.argmax(outside)])} is out of range for a "
                             f"vocabulary of {self.vocab_size}")
        # Runs of base ids decode in one step each; only the special tokens are visited.
        base = self._base_size()
        pieces, start = [], 0
        for k in np.flatnonzero(ids >= base).tolist():
            pieces.append(self._decode_plain(ids[start:k]))
            if not skip_special_tokens:
                pieces.append(self.special_tokens[int(ids[k]) - base])
            start = k + 1
        pieces.append(self._decode_plain(ids[start:]))
        return "".join(pieces)

    def batch_decode(self, sequences, skip_special_tokens=False):
        if hasattr(sequences, "tolist"):
            sequences = sequences.tolist()
        return [self.decode(s, skip_special_tokens) for s in sequences]

    def __call__(self, text, add_special_tokens=False):
        if isinstance(text, str):
            return self.encode(text, add_special_tokens)
        return [self.encode(t, add_special_tokens) for t in text]

    def _role(self, names):
        for token in self.special_tokens:
            if token.strip("<>[]|").lower() in names:
                return token
        return None

    @property
    def bos_token(self):
        return self._role({"bos", "s", "start", "cls"})

    @property
    def eos_token(self):
        return self._role({"eos", "/s", "end", "endoftext", "sep"})

    @property
    def pad_token(self):
        return self._role({"pad"})

    @property
    def pad_token_id(self):
        token = self.pad_token
        return None if token is None else self._special_ids[token]

    def _state(self):
        return {"kind": self.kind, "special_tokens": self.special_tokens}

    def save(self, path):
        """Writes the tokenizer to a JSON file; returns the path."""
        path = os.fspath(path)
        with open(path, "w", encoding="utf-8") as file:
            json.dump(self._state(), file, ensure_ascii=False, indent=1)
            file.write("\n")
        return path

    @classmethod
    def load(cls, path):
        """The tokenizer a ``save`` wrote."""
        with open(os.fspath(path), encoding="utf-8") as file:
            state = json.load(file)
        if state.get("kind") != cls.kind:
            raise ValueError(f"{path} holds a {state.get('kind')!r} tokenizer, not a "
                             f"{cls.kind!r} one ({cls.__name__})")
        return cls._from_state(state)

    def __eq__(self, other):
        return type(other) is type(self) and other._state() == self._state()

    def __repr__(self):
        return (f"{type(self).__name__}(vocab_size={self.vocab_size}, "
                f"special_tokens={self.special_tokens})")


class ByteTokenizer(_ScratchTokenizer):
    """UTF-8 bytes as ids 0..255, then ``special_tokens`` (256, 257, …).

    >>> tokenizer = ByteTokenizer(special_tokens=["<eos>"])
    >>> tokenizer.encode("hé<eos>")
    [104, 195, 169, 256]
    >>> tokenizer.decode([104, 195, 169, 256])
    'hé<eos>'
    """

    kind = "byte"

    def _base_size(self):
        return 256

    def _base_token_to_id(self, token):
        encoded = token.encode("utf-8")
        return encoded[0] if len(encoded) == 1 else None

    def _encode_plain(self, text):
        return list(text.encode("utf-8"))

    def _decode_plain(self, ids):
        return ids.astype(np.uint8).tobytes().decode("utf-8", errors="replace")

    @classmethod
    def _from_state(cls, state):
        return cls(special_tokens=state["special_tokens"])


class CharTokenizer(_ScratchTokenizer):
    """One id per character of a vocabulary, then ``special_tokens``.

    >>> tokenizer = CharTokenizer.from_text("hello")
    >>> tokenizer.vocab_size, tokenizer.encode("hole")
    (4, [1, 3, 2, 0])
    >>> tokenizer.decode([1, 0, 2, 2, 3])
    'hello'
    """

    kind = "char"

    def __init__(self, chars, special_tokens=(), unk_token=None):
        self.chars = list(chars)
        if len(set(self.chars)) != len(self.chars) or any(len(c) != 1 for c in self.chars):
            raise ValueError("CharTokenizer's vocabulary must be distinct single characters")
        self._stoi = {c: i for i, c in enumerate(self.chars)}
        # Code points of the ids, and the same sorted: a binary search maps a whole text to
        # ids in one vectorised step (a long training text costs no Python loop).
        self._code_of_id = np.asarray([ord(c) for c in self.chars], dtype=np.uint32)
        self._id_of_sorted = np.argsort(self._code_of_id, kind="stable")
        self._sorted_codes = self._code_of_id[self._id_of_sorted]
        if unk_token is not None and unk_token not in special_tokens:
            special_tokens = [*special_tokens, unk_token]
        self.unk_token = unk_token
        super().__init__(special_tokens)

    @classmethod
    def from_text(cls, text, special_tokens=(), unk_token=None):
        """The tokenizer whose vocabulary is the characters of ``text``, in code-point order."""
        return cls(sorted(set(text)), special_tokens=special_tokens, unk_token=unk_token)

    def _base_size(self):
        return len(self.chars)

    def _base_token_to_id(self, token):
        return self._stoi.get(token)

    def get_vocab(self):
        return {**self._stoi, **self._special_ids}

    def _encode_plain(self, text):
        codes = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
        if len(self._sorted_codes):
            place = np.minimum(np.searchsorted(self._sorted_codes, codes),
                               len(self._sorted_codes) - 1)
            known = self._sorted_codes[place] == codes
            ids = self._id_of_sorted[place]
        else:
            known, ids = np.zeros(len(codes), bool), np.zeros(len(codes), np.int64)
        if not known.all():
            if self.unk_token is None:
                missing = chr(int(codes[np.argmin(known)]))
                raise KeyError(f"character {missing!r} is not in the vocabulary (build the "
                               f"tokenizer with unk_token=... to map unseen characters to it)")
            ids = np.where(known, ids, self._special_ids[self.unk_token])
        return ids.tolist()

    def _decode_plain(self, ids):
        return self._code_of_id[ids].astype("<u4").tobytes().decode("utf-32-le")

    def _state(self):
        return {**super()._state(), "chars": "".join(self.chars), "unk_token": self.unk_token}

    @classmethod
    def _from_state(cls, state):
        # unk_token is already among special_tokens, so the ids come back in the same order.
        return cls(state["chars"], special_tokens=state["special_tokens"],
                   unk_token=state.get("unk_token"))
