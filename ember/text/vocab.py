"""A vocabulary of tokens, as torchtext's ``Vocab``: ``build_vocab_from_iterator`` counts the
tokens of an iterable of token lists, keeps those seen at least ``min_freq`` times, most frequent
first (ties in string order), and puts the ``specials`` first or last.

>>> vocab = build_vocab_from_iterator([["a", "b", "a"], ["c", "a", "b"]], specials=["<unk>"])
>>> vocab.get_itos()
['<unk>', 'a', 'b', 'c']
>>> vocab.set_default_index(vocab["<unk>"])
>>> vocab(["a", "z", "c"])
[1, 0, 3]
"""
import collections

__all__ = ["Vocab", "build_vocab_from_iterator", "vocab"]


class Vocab:
    """Maps tokens to indices and back. An unknown token raises RuntimeError (as torchtext)
    until ``set_default_index`` names the index to give it."""

    def __init__(self, tokens=()):
        self._itos = []
        self._stoi = {}
        self._default_index = None
        for token in tokens:
            self.append_token(token)

    def __len__(self):
        return len(self._itos)

    def __contains__(self, token):
        return token in self._stoi

    def __getitem__(self, token):
        index = self._stoi.get(token)
        if index is not None:
            return index
        if self._default_index is None:
            raise RuntimeError(f"Token {token} not found and default index is not set")
        return self._default_index

    def __call__(self, tokens):
        return self.lookup_indices(tokens)

    def __iter__(self):
        return iter(self._itos)

    def __eq__(self, other):
        return (isinstance(other, Vocab) and other._itos == self._itos
                and other._default_index == self._default_index)

    def __repr__(self):
        head = ", ".join(map(repr, self._itos[:8]))
        return f"Vocab({len(self)} tokens: [{head}{', …' if len(self) > 8 else ''}])"

    def set_default_index(self, index):
        """The index unknown tokens get (None: unknown tokens raise again)."""
        if index is not None and not isinstance(index, int):
            raise TypeError(f"default index must be an int or None, got {type(index).__name__}")
        self._default_index = index

    def get_default_index(self):
        return self._default_index

    def insert_token(self, token, index):
        """Puts a new ``token`` at ``index``, shifting the ones after it."""
        if token in self._stoi:
            raise RuntimeError(f"Token {token} already exists in the Vocab with index: "
                               f"{self._stoi[token]}")
        if not 0 <= index <= len(self._itos):
            raise RuntimeError(f"Specified index {index} is out of bounds of the size of stoi "
                               f"dictionary: {len(self._itos)}")
        self._itos.insert(index, token)
        self._stoi = {t: i for i, t in enumerate(self._itos)}

    def append_token(self, token):
        """Adds a new ``token`` at the end."""
        if token in self._stoi:
            raise RuntimeError(f"Token {token} already exists in the Vocab with index: "
                               f"{self._stoi[token]}")
        self._stoi[token] = len(self._itos)
        self._itos.append(token)

    def lookup_token(self, index):
        if not 0 <= index < len(self._itos):
            raise RuntimeError(f"Specified index {index} is out of bounds of the size of itos "
                               f"dictionary: {len(self._itos)}")
        return self._itos[index]

    def lookup_tokens(self, indices):
        if hasattr(indices, "tolist"):
            indices = indices.tolist()
        return [self.lookup_token(i) for i in indices]

    def lookup_indices(self, tokens):
        return [self[token] for token in tokens]

    def get_stoi(self):
        """A copy of the token → index dict."""
        return dict(self._stoi)

    def get_itos(self):
        """A copy of the index → token list."""
        return list(self._itos)


def vocab(ordered_dict, min_freq=1, specials=None, special_first=True):
    """A ``Vocab`` of the tokens of ``ordered_dict`` (token → frequency) seen at least
    ``min_freq`` times, in the dict's order, with ``specials`` first or last."""
    specials = list(specials or [])
    counts = collections.OrderedDict(ordered_dict)
    for token in specials:
        counts.pop(token, None)
    tokens = [token for token, freq in counts.items() if freq >= min_freq]
    tokens = specials + tokens if special_first else tokens + specials
    return Vocab(tokens)


def build_vocab_from_iterator(iterator, min_freq=1, specials=None, special_first=True,
                              max_tokens=None):
    """A ``Vocab`` from an iterable of token lists: tokens by descending frequency (ties in
    string order), those rarer than ``min_freq`` left out, at most ``max_tokens`` in all
    counting the specials."""
    counter = collections.Counter()
    for tokens in iterator:
        counter.update(tokens)
    specials = list(specials or [])
    by_frequency = sorted(counter.items(), key=lambda item: (-item[1], item[0]))
    if max_tokens is not None:
        if len(specials) >= max_tokens:
            raise ValueError("len(specials) >= max_tokens, so the vocab will be entirely "
                             "special tokens.")
        # torchtext cuts before it removes the specials from the counts: a special that also
        # occurs in the text uses up one of the places.
        by_frequency = by_frequency[:max_tokens - len(specials)]
    return vocab(collections.OrderedDict(by_frequency), min_freq=min_freq, specials=specials,
                 special_first=special_first)
