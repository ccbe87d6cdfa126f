"""Pre-trained tokenizers through Hugging Face's ``tokenizers`` library, called as
``transformers``' tokenizers are: ``tokenizer(texts, padding=True, truncation=True,
max_length=128, return_tensors="pt")`` gives a ``BatchEncoding`` of Ember tensors.

``Tokenizer.from_pretrained(local_dir)`` reads what people have on disk:

- ``tokenizer.json`` (any ``tokenizers`` pipeline), or
- ``vocab.txt`` (a BERT WordPiece vocabulary), or
- ``vocab.json`` + ``merges.txt`` (a GPT-2 byte-level BPE),

with ``tokenizer_config.json`` and ``special_tokens_map.json`` for the special tokens, the
maximum length and the padding side. The ``tokenizers`` package does the tokenizing itself
(Rust, batched); this file decides padding and truncation per call the way ``transformers``
does, so the ids, masks and offsets are the same as ``transformers.AutoTokenizer``'s.
"""
import copy
import json
import os
import warnings

import numpy as np

from .batch_encoding import BatchEncoding

__all__ = ["Tokenizer", "PreTrainedTokenizerFast", "AutoTokenizer"]

# transformers' "no limit" value for model_max_length.
VERY_LARGE_INTEGER = int(1e30)

_NO_PAD_TOKEN = ("Asking to pad but the tokenizer does not have a padding token. Please select a "
                 "token to use as `pad_token` `(tokenizer.pad_token = tokenizer.eos_token e.g.)` "
                 "or add a new pad token via `tokenizer.add_special_tokens({'pad_token': "
                 "'[PAD]'})`.")

SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                       "cls_token", "mask_token")

# The special tokens a tokenizer class has when its config names none (transformers' defaults),
# and whether its models take token_type_ids.
_CLASS_DEFAULTS = {
    "bert": ({"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
              "cls_token": "[CLS]", "mask_token": "[MASK]"},
             ["input_ids", "token_type_ids", "attention_mask"]),
    "gpt2": ({"unk_token": "<|endoftext|>", "bos_token": "<|endoftext|>",
              "eos_token": "<|endoftext|>"}, ["input_ids", "attention_mask"]),
    "llama": ({"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"},
              ["input_ids", "attention_mask"]),
    "roberta": ({"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                 "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
                 "mask_token": "<mask>"}, ["input_ids", "attention_mask"]),
}


def _tokenizers():
    try:
        import tokenizers
    except ImportError as exc:
        raise ImportError("ember.text.Tokenizer needs the 'tokenizers' package: "
                          "pip install 'ember[text]'") from exc
    return tokenizers


def _class_family(tokenizer_class):
    name = (tokenizer_class or "").lower()
    for family in ("roberta", "bert", "gpt2", "llama"):  # roberta before bert: it contains it
        if name.startswith(family) or (family == "bert" and "bert" in name):
            return family
    return None


def _token_content(value):
    """A special token as written in the config files: a string or an AddedToken dict."""
    if isinstance(value, dict):
        return value.get("content")
    return value


def _read_json(path):
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def _bert_wordpiece(vocab_file, config, special):
    tk = _tokenizers()
    unk = special.get("unk_token") or "[UNK]"
    backend = tk.Tokenizer(tk.models.WordPiece.from_file(
        vocab_file, unk_token=unk, max_input_chars_per_word=100))
    backend.normalizer = tk.normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=config.get("tokenize_chinese_chars", True),
        strip_accents=config.get("strip_accents"), lowercase=config.get("do_lower_case", True))
    backend.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
    cls, sep = special.get("cls_token") or "[CLS]", special.get("sep_token") or "[SEP]"
    backend.post_processor = tk.processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0", pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, backend.token_to_id(cls)), (sep, backend.token_to_id(sep))])
    backend.decoder = tk.decoders.WordPiece(prefix="##")
    return backend


def _gpt2_bpe(vocab_file, merges_file, config):
    tk = _tokenizers()
    backend = tk.Tokenizer(tk.models.BPE.from_file(
        vocab_file, merges_file, continuing_subword_prefix="", end_of_word_suffix="",
        fuse_unk=False))
    backend.pre_tokenizer = tk.pre_tokenizers.ByteLevel(
        add_prefix_space=config.get("add_prefix_space", False))
    backend.decoder = tk.decoders.ByteLevel()
    # GPT-2 adds no special tokens around a text; offsets keep the leading space's byte.
    backend.post_processor = tk.processors.ByteLevel(trim_offsets=False)
    return backend


def _padding_strategy(padding):
    if padding is True or padding == "longest":
        return "longest"
    if padding is False or padding is None or padding == "do_not_pad":
        return None
    if padding == "max_length":
        return "max_length"
    raise ValueError(f"padding should be True, False, 'longest', 'max_length' or 'do_not_pad', "
                     f"got {padding!r}")


def _truncation_strategy(truncation):
    if truncation is True:
        return "longest_first"
    if truncation is False or truncation is None or truncation == "do_not_truncate":
        return None
    if truncation in ("longest_first", "only_first", "only_second"):
        return truncation
    raise ValueError(f"truncation should be True, False, 'longest_first', 'only_first', "
                     f"'only_second' or 'do_not_truncate', got {truncation!r}")


class Tokenizer:
    """A ``tokenizers.Tokenizer`` with ``transformers``' calling conventions.

    Build one with ``from_pretrained(local_dir)`` or ``from_file("tokenizer.json")``, or wrap a
    ``tokenizers.Tokenizer`` you built or trained: ``Tokenizer(backend, pad_token="[PAD]")``.
    """

    def __init__(self, tokenizer_object, *, model_max_length=None, model_input_names=None,
                 padding_side="right", truncation_side="right",
                 clean_up_tokenization_spaces=False, tokenizer_class=None,
                 additional_special_tokens=(), **special_tokens):
        # A copy, as transformers makes: each call re-configures padding and truncation, which
        # must not change the caller's own object.
        self._backend = tokenizer_object = copy.deepcopy(tokenizer_object)
        # The pipeline's own padding/truncation (tokenizer.json may fix both, e.g. MiniLM pads
        # to 128) is what save_pretrained writes back; calls set their own, as transformers.
        self._saved_truncation = tokenizer_object.truncation
        self._saved_padding = tokenizer_object.padding
        padding = self._saved_padding or {}
        if "pad_token" not in special_tokens and padding.get("pad_token"):
            special_tokens["pad_token"] = padding["pad_token"]
        unknown = set(special_tokens) - set(SPECIAL_TOKEN_NAMES)
        if unknown:
            raise TypeError(f"Tokenizer got unexpected keyword arguments {sorted(unknown)}")
        self.tokenizer_class = tokenizer_class
        family = _class_family(tokenizer_class)
        defaults, default_inputs = _CLASS_DEFAULTS.get(
            family, ({}, ["input_ids", "token_type_ids", "attention_mask"]))
        self.model_input_names = list(model_input_names or default_inputs)
        self.model_max_length = (VERY_LARGE_INTEGER if model_max_length is None
                                 else int(model_max_length))
        if padding_side not in ("right", "left") or truncation_side not in ("right", "left"):
            raise ValueError(f"padding_side and truncation_side are 'right' or 'left', got "
                             f"{padding_side!r} and {truncation_side!r}")
        self.padding_side = padding_side
        self.truncation_side = truncation_side
        self.clean_up_tokenization_spaces = bool(clean_up_tokenization_spaces)
        self._special = {}
        for name in SPECIAL_TOKEN_NAMES:
            value = _token_content(special_tokens.get(name, defaults.get(name)))
            if value is not None:
                self._special[name] = value
        self.additional_special_tokens = [_token_content(t) for t in additional_special_tokens]
        self._register_special_tokens(list(self._special.values()) + self.additional_special_tokens)

    def _register_special_tokens(self, contents):
        # Special tokens are never split nor normalised; tokenizer.json usually lists them
        # already, and adding one twice is a no-op in tokenizers.
        tk = _tokenizers()
        added = {t.content for t in self._backend.get_added_tokens_decoder().values()}
        new = [tk.AddedToken(c, special=True, normalized=False) for c in dict.fromkeys(contents)
               if c is not None and c not in added]
        if new:
            self._backend.add_special_tokens(new)

    # ----- construction -----

    @classmethod
    def from_file(cls, path, **kwargs):
        """A tokenizer from one ``tokenizer.json`` file."""
        return cls(_tokenizers().Tokenizer.from_file(os.fspath(path)), **kwargs)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):
        """A tokenizer from a local folder: ``tokenizer.json``, else ``vocab.txt`` (WordPiece),
        else ``vocab.json`` + ``merges.txt`` (byte-level BPE); ``tokenizer_config.json`` and
        ``special_tokens_map.json`` when present. Keyword arguments override the configs."""
        folder = os.fspath(pretrained_model_name_or_path)
        if not os.path.isdir(folder):
            raise OSError(f"{folder!r} is not a local folder: Ember reads tokenizers from disk "
                          "only (download the model's files first, e.g. with huggingface_hub)")
        config = _read_json(os.path.join(folder, "tokenizer_config.json"))
        special_map = _read_json(os.path.join(folder, "special_tokens_map.json"))
        tokenizer_class = kwargs.pop("tokenizer_class", config.get("tokenizer_class"))
        family = _class_family(tokenizer_class)
        special = dict(_CLASS_DEFAULTS.get(family, ({}, None))[0])
        for source in (config, special_map, kwargs):
            for name in SPECIAL_TOKEN_NAMES:
                if name in source:
                    special[name] = _token_content(source[name])
        additional = kwargs.pop("additional_special_tokens", None)
        if additional is None:
            additional = (special_map.get("additional_special_tokens")
                          or config.get("additional_special_tokens") or [])
        for name in SPECIAL_TOKEN_NAMES:
            kwargs.pop(name, None)

        files = {name: os.path.join(folder, name)
                 for name in ("tokenizer.json", "vocab.txt", "vocab.json", "merges.txt")}
        if os.path.isfile(files["tokenizer.json"]):
            backend = _tokenizers().Tokenizer.from_file(files["tokenizer.json"])
        elif os.path.isfile(files["vocab.txt"]):
            if family is None:
                tokenizer_class = tokenizer_class or "BertTokenizer"
                special = {**_CLASS_DEFAULTS["bert"][0], **special}
            backend = _bert_wordpiece(files["vocab.txt"], config, special)
        elif os.path.isfile(files["vocab.json"]) and os.path.isfile(files["merges.txt"]):
            if family is None:
                tokenizer_class = tokenizer_class or "GPT2Tokenizer"
                special = {**_CLASS_DEFAULTS["gpt2"][0], **special}
            backend = _gpt2_bpe(files["vocab.json"], files["merges.txt"], config)
        else:
            raise OSError(f"no tokenizer in {folder!r}: expected tokenizer.json, vocab.txt "
                          "(WordPiece) or vocab.json + merges.txt (BPE)")
        options = {"model_max_length": config.get("model_max_length"),
                   "model_input_names": config.get("model_input_names"),
                   "padding_side": config.get("padding_side", "right"),
                   "truncation_side": config.get("truncation_side", "right"),
                   "clean_up_tokenization_spaces": config.get("clean_up_tokenization_spaces",
                                                              False)}
        options.update(kwargs)
        return cls(backend, tokenizer_class=tokenizer_class,
                   additional_special_tokens=additional,
                   **{k: v for k, v in special.items() if v is not None}, **options)

    def save_pretrained(self, save_directory):
        """Writes ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json``
        (which ``transformers.AutoTokenizer`` reads too); returns their paths."""
        save_directory = os.fspath(save_directory)
        os.makedirs(save_directory, exist_ok=True)
        backend = self._backend_with(self._saved_truncation, self._saved_padding)
        paths = tuple(os.path.join(save_directory, name) for name in
                      ("tokenizer_config.json", "special_tokens_map.json", "tokenizer.json"))
        special_map = dict(self._special)
        if self.additional_special_tokens:
            special_map["additional_special_tokens"] = list(self.additional_special_tokens)
        config = {"tokenizer_class": self.tokenizer_class or "PreTrainedTokenizerFast",
                  "model_max_length": self.model_max_length,
                  "model_input_names": self.model_input_names,
                  "padding_side": self.padding_side, "truncation_side": self.truncation_side,
                  "clean_up_tokenization_spaces": self.clean_up_tokenization_spaces,
                  **special_map}
        for path, content in zip(paths[:2], (config, special_map)):
            with open(path, "w", encoding="utf-8") as file:
                json.dump(content, file, indent=2, ensure_ascii=False)
                file.write("\n")
        backend.save(paths[2])
        return paths

    def _backend_with(self, truncation, padding):
        backend = copy.deepcopy(self._backend)
        if truncation:
            backend.enable_truncation(**truncation)
        else:
            backend.no_truncation()
        if padding:
            padding = dict(padding)
            length = padding.pop("length", None)
            backend.enable_padding(length=length, **padding)
        else:
            backend.no_padding()
        return backend

    # ----- vocabulary and special tokens -----

    @property
    def backend_tokenizer(self):
        """The ``tokenizers.Tokenizer`` doing the work."""
        return self._backend

    @property
    def vocab_size(self):
        """The base vocabulary's size, without added tokens (``len(tokenizer)`` counts them)."""
        return self._backend.get_vocab_size(with_added_tokens=False)

    def __len__(self):
        return self._backend.get_vocab_size(with_added_tokens=True)

    def get_vocab(self):
        return self._backend.get_vocab(with_added_tokens=True)

    @property
    def added_tokens_decoder(self):
        return self._backend.get_added_tokens_decoder()

    def add_tokens(self, new_tokens, special_tokens=False):
        """Adds tokens that are never split; returns how many were new."""
        tk = _tokenizers()
        if isinstance(new_tokens, str):
            new_tokens = [new_tokens]
        tokens = [t if isinstance(t, tk.AddedToken) else tk.AddedToken(t, special=special_tokens)
                  for t in new_tokens]
        if special_tokens:
            return self._backend.add_special_tokens(tokens)
        return self._backend.add_tokens(tokens)

    def add_special_tokens(self, special_tokens_dict):
        """Sets special tokens by role (``{"pad_token": "[PAD]"}``), adding them to the
        vocabulary if needed; returns how many tokens were new."""
        before = len(self)
        for name, value in special_tokens_dict.items():
            if name == "additional_special_tokens":
                self.additional_special_tokens = [_token_content(t) for t in value]
                self._register_special_tokens(self.additional_special_tokens)
            elif name in SPECIAL_TOKEN_NAMES:
                setattr(self, name, _token_content(value))
            else:
                raise ValueError(f"{name!r} is not a special token role: use one of "
                                 f"{SPECIAL_TOKEN_NAMES + ('additional_special_tokens',)}")
        return len(self) - before

    @property
    def special_tokens_map(self):
        special = dict(self._special)
        if self.additional_special_tokens:
            special["additional_special_tokens"] = list(self.additional_special_tokens)
        return special

    @property
    def all_special_tokens(self):
        return list(dict.fromkeys([*self._special.values(), *self.additional_special_tokens]))

    @property
    def all_special_ids(self):
        return [self._backend.token_to_id(t) for t in self.all_special_tokens]

    def convert_tokens_to_ids(self, tokens):
        """Ids of token strings (the unknown token's id for those not in the vocabulary)."""
        if isinstance(tokens, str):
            index = self._backend.token_to_id(tokens)
            return self.unk_token_id if index is None else index
        return [self.convert_tokens_to_ids(t) for t in tokens]

    def convert_ids_to_tokens(self, ids, skip_special_tokens=False):
        """Token strings of ids; an int gives one string."""
        if isinstance(ids, int) or getattr(ids, "ndim", 1) == 0:
            return self._backend.id_to_token(int(ids))
        special = set(self.all_special_ids) if skip_special_tokens else ()
        return [self._backend.id_to_token(i) for i in map(int, _as_id_list(ids))
                if i not in special]

    # ----- encoding -----

    def tokenize(self, text, pair=None, add_special_tokens=False):
        """The token strings of a text (without special tokens unless asked)."""
        return self._backend.encode(text, pair, add_special_tokens=add_special_tokens).tokens

    def encode(self, text, text_pair=None, add_special_tokens=True, padding=False,
               truncation=None, max_length=None, stride=0, padding_side=None,
               return_tensors=None):
        """The ids of one text (or pair), as a list (or a (1, L) tensor with return_tensors)."""
        batch = self(text, text_pair, add_special_tokens=add_special_tokens, padding=padding,
                     truncation=truncation, max_length=max_length, stride=stride,
                     padding_side=padding_side, return_tensors=return_tensors)
        return batch["input_ids"]

    def __call__(self, text=None, text_pair=None, *, add_special_tokens=True, padding=False,
                 truncation=None, max_length=None, stride=0, is_split_into_words=False,
                 pad_to_multiple_of=None, padding_side=None, return_tensors=None,
                 return_token_type_ids=None, return_attention_mask=None,
                 return_overflowing_tokens=False, return_special_tokens_mask=False,
                 return_offsets_mapping=False, return_length=False, verbose=True):
        """Tokenizes a text, a pair, or a batch of either, as ``transformers`` does.

        ``padding``: False (none), True / ``"longest"`` (to the batch's longest),
        ``"max_length"`` (to ``max_length``, else the model's maximum). ``truncation``: True /
        ``"longest_first"``, ``"only_first"``, ``"only_second"``, False; a ``max_length`` given
        without padding or truncation truncates (transformers' rule). ``return_tensors``:
        ``"pt"`` (Ember tensors), ``"np"``, or None (lists).
        """
        if text is None:
            raise ValueError("You need to specify `text` (a string, a list of strings, or with "
                             "is_split_into_words a list of words)")
        batched = _is_batched(text, is_split_into_words)
        if text_pair is not None and _is_batched(text_pair, is_split_into_words) != batched:
            raise ValueError("text and text_pair must both be single texts or both be batches")
        texts = list(text) if batched else [text]
        if text_pair is not None:
            pairs = list(text_pair) if batched else [text_pair]
            if len(pairs) != len(texts):
                raise ValueError(f"batch length of `text`: {len(texts)} does not match batch "
                                 f"length of `text_pair`: {len(pairs)}.")
            inputs = list(zip(texts, pairs))
        else:
            inputs = texts

        pad = _padding_strategy(padding)
        if truncation is None and max_length is not None and pad is None:
            truncation = "longest_first"
        trunc = _truncation_strategy(truncation)
        if (pad == "max_length" or trunc) and max_length is None:
            if self.model_max_length >= VERY_LARGE_INTEGER:
                if verbose:
                    warnings.warn("Asking to pad to max_length or truncate, but no maximum length "
                                  "is given and the model has none: not padding/truncating.")
                pad = None if pad == "max_length" else pad
                trunc = None
            else:
                max_length = self.model_max_length
        if pad is not None and self.pad_token_id is None:
            raise ValueError(_NO_PAD_TOKEN)
        if pad_to_multiple_of is not None and max_length is not None and pad == "max_length" \
                and max_length % pad_to_multiple_of:
            raise ValueError(f"Truncation and padding are both activated but truncation length "
                             f"({max_length}) is not a multiple of pad_to_multiple_of "
                             f"({pad_to_multiple_of}).")

        # Each call sets the pipeline's padding and truncation, as transformers does: one
        # Tokenizer is not meant for concurrent calls from several threads.
        backend = self._backend
        if trunc:
            backend.enable_truncation(max_length, stride=stride, strategy=trunc,
                                      direction=self.truncation_side)
        else:
            backend.no_truncation()
        if pad:
            backend.enable_padding(
                direction=padding_side or self.padding_side, pad_id=self.pad_token_id,
                pad_type_id=0, pad_token=self.pad_token,
                length=max_length if pad == "max_length" else None,
                pad_to_multiple_of=pad_to_multiple_of)
        else:
            backend.no_padding()
        encodings = backend.encode_batch(inputs, add_special_tokens=add_special_tokens,
                                         is_pretokenized=is_split_into_words)

        rows, sample_of_row = [], []
        for sample, encoding in enumerate(encodings):
            windows = [encoding, *encoding.overflowing] if return_overflowing_tokens else [encoding]
            rows.extend(windows)
            sample_of_row.extend([sample] * len(windows))
        if return_overflowing_tokens and pad:
            # tokenizers pads the overflowing windows to their own encoding's length; a batch
            # of windows needs one length.
            longest = max(len(r.ids) for r in rows)
            for r in rows:
                r.pad(longest, direction=padding_side or self.padding_side,
                      pad_id=self.pad_token_id, pad_type_id=0, pad_token=self.pad_token)

        want_types = ("token_type_ids" in self.model_input_names if return_token_type_ids is None
                      else return_token_type_ids)
        want_mask = ("attention_mask" in self.model_input_names if return_attention_mask is None
                     else return_attention_mask)
        data = {"input_ids": [r.ids for r in rows]}
        if want_types:
            data["token_type_ids"] = [r.type_ids for r in rows]
        if want_mask:
            data["attention_mask"] = [r.attention_mask for r in rows]
        if return_special_tokens_mask:
            data["special_tokens_mask"] = [r.special_tokens_mask for r in rows]
        if return_offsets_mapping:
            data["offset_mapping"] = [r.offsets for r in rows]
        if return_length:
            data["length"] = [len(r.ids) for r in rows]
        if return_overflowing_tokens:
            data["overflow_to_sample_mapping"] = sample_of_row
        single = not batched and not return_overflowing_tokens
        if single:
            data = {key: value[0] for key, value in data.items()}
            if return_length:
                data["length"] = [data["length"]]  # transformers keeps the length a list
        result = BatchEncoding(data, encoding=rows, n_sequences=2 if text_pair is not None else 1)
        if return_tensors is not None:
            result.convert_to_tensors(return_tensors, prepend_batch_axis=single)
            if single and return_length:
                result["length"] = result["length"].reshape(-1)
        return result

    def pad(self, encoded_inputs, padding=True, max_length=None, pad_to_multiple_of=None,
            padding_side=None, return_attention_mask=None, return_tensors=None, verbose=True):
        """Pads already-encoded inputs (a dict of id lists, or a list of such dicts as a
        ``Dataset`` yields them) as ``transformers``' ``tokenizer.pad`` does: ``input_ids``
        with the pad token, ``attention_mask`` with 0 (made if missing), ``token_type_ids``
        with 0 and ``special_tokens_mask`` with 1; other keys are left as they are."""
        from .._tensor import Tensor
        if isinstance(encoded_inputs, (list, tuple)) and encoded_inputs \
                and isinstance(encoded_inputs[0], dict):
            encoded_inputs = {key: [item[key] for item in encoded_inputs]
                              for key in encoded_inputs[0]}
        if "input_ids" not in encoded_inputs:
            raise ValueError("You should supply an encoding or a list of encodings to this "
                             "method that includes input_ids, but you provided "
                             f"{list(encoded_inputs.keys())}")
        data = dict(encoded_inputs)
        first = data["input_ids"]
        while isinstance(first, (list, tuple)) and first:
            first = first[0]
        if return_tensors is None:
            # transformers answers in the kind of array it was given.
            return_tensors = ("pt" if isinstance(first, Tensor) else
                              "np" if isinstance(first, np.ndarray | np.generic) else None)
        for key, value in data.items():
            if isinstance(value, (Tensor, np.ndarray)):
                data[key] = value.tolist()
            elif isinstance(value, (list, tuple)):
                data[key] = [v.tolist() if hasattr(v, "tolist") else v for v in value]
        if not data["input_ids"]:
            return BatchEncoding(data, tensor_type=return_tensors)
        single = not isinstance(data["input_ids"][0], (list, tuple))
        if single:
            data = {key: [value] for key, value in data.items()}

        pad = _padding_strategy(padding)
        lengths = np.asarray([len(ids) for ids in data["input_ids"]], dtype=np.int64)
        if pad == "max_length" and max_length is None \
                and self.model_max_length < VERY_LARGE_INTEGER:
            max_length = self.model_max_length
        if pad == "longest" or (pad == "max_length" and max_length is None):
            max_length = int(lengths.max())
        if pad is not None and self.pad_token_id is None:
            raise ValueError(_NO_PAD_TOKEN)
        want_mask = ("attention_mask" in self.model_input_names if return_attention_mask is None
                     else return_attention_mask)
        if want_mask and "attention_mask" not in data:
            data["attention_mask"] = [[1] * int(n) for n in lengths]
        if pad is not None:
            if pad_to_multiple_of is not None and max_length % pad_to_multiple_of:
                max_length = (max_length // pad_to_multiple_of + 1) * pad_to_multiple_of
            left = (padding_side or self.padding_side) == "left"
            fills = {"input_ids": self.pad_token_id, "attention_mask": 0,
                     "token_type_ids": 0, "special_tokens_mask": 1}
            if not want_mask:
                del fills["attention_mask"]  # transformers leaves a given one as it is
            for key in [k for k in fills if k in data]:
                data[key] = _pad_rows(data[key], lengths, max_length, fills[key], left)
        if single:
            data = {key: value[0] for key, value in data.items()}
        return BatchEncoding(data, tensor_type=return_tensors)

    # ----- decoding -----

    def decode(self, token_ids, skip_special_tokens=False, clean_up_tokenization_spaces=None):
        """The text of a sequence of ids (a list, an array or a 1-D tensor)."""
        text = self._backend.decode([int(i) for i in _as_id_list(token_ids)],
                                    skip_special_tokens=skip_special_tokens)
        clean = (self.clean_up_tokenization_spaces if clean_up_tokenization_spaces is None
                 else clean_up_tokenization_spaces)
        return _clean_up_tokenization(text) if clean else text

    def batch_decode(self, sequences, skip_special_tokens=False,
                     clean_up_tokenization_spaces=None):
        """The texts of a batch of id sequences (a list of lists or a 2-D tensor)."""
        if hasattr(sequences, "tolist"):
            sequences = sequences.tolist()
        return [self.decode(s, skip_special_tokens, clean_up_tokenization_spaces)
                for s in sequences]

    def __repr__(self):
        return (f"Tokenizer(class={self.tokenizer_class}, vocab_size={self.vocab_size}, "
                f"model_max_length={self.model_max_length}, padding_side='{self.padding_side}', "
                f"special_tokens={self.special_tokens_map})")


def _make_special_token_properties():
    # pad_token / pad_token_id and the like for each role, as transformers names them.
    def make(name):
        def get_token(self):
            return self._special.get(name)

        def set_token(self, value):
            value = _token_content(value)
            if value is None:
                self._special.pop(name, None)
            else:
                self._special[name] = value
                self._register_special_tokens([value])

        def get_id(self):
            token = self._special.get(name)
            return None if token is None else self._backend.token_to_id(token)

        def set_id(self, value):
            set_token(self, None if value is None else self._backend.id_to_token(int(value)))

        return property(get_token, set_token), property(get_id, set_id)

    for name in SPECIAL_TOKEN_NAMES:
        token_property, id_property = make(name)
        setattr(Tokenizer, name, token_property)
        setattr(Tokenizer, f"{name}_id", id_property)


_make_special_token_properties()

# transformers' name for the same thing.
PreTrainedTokenizerFast = Tokenizer


def _is_batched(text, is_split_into_words):
    if isinstance(text, str):
        return False
    if not isinstance(text, (list, tuple)):
        raise TypeError(f"text input must be of type `str` (single example), `list[str]` "
                        f"(batch or single pretokenized example) or `list[list[str]]` (batch of "
                        f"pretokenized examples), got {type(text).__name__}")
    if is_split_into_words:
        return len(text) > 0 and isinstance(text[0], (list, tuple))
    return True


def _pad_rows(rows, lengths, length, fill, left):
    """``rows`` (lists of ints) padded with ``fill`` to ``length``; rows already longer stay
    as they are (transformers' ``pad`` does not truncate)."""
    if (lengths > length).any():
        return [list(r) if n >= length else
                ([fill] * (length - n) + list(r) if left else list(r) + [fill] * (length - n))
                for r, n in zip(rows, lengths.tolist())]
    # One vectorised fill: the rows' values, concatenated, land on the real positions in
    # row-major order; every other position is padding.
    position = np.arange(length)[None, :]
    real = position >= (length - lengths)[:, None] if left else position < lengths[:, None]
    out = np.full(real.shape, fill, dtype=np.int64)
    out[real] = np.concatenate([np.asarray(r, dtype=np.int64).reshape(-1) for r in rows])
    return out.tolist()


def _as_id_list(ids):
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if isinstance(ids, int):
        return [ids]
    return ids


def _clean_up_tokenization(text):
    """transformers' clean-up of the spaces a WordPiece decode leaves before punctuation."""
    for before, after in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
                          (" n't", "n't"), (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"),
                          (" 're", "'re")):
        text = text.replace(before, after)
    return text


class AutoTokenizer:
    """``AutoTokenizer.from_pretrained(local_dir)``: the tokenizer a model folder describes."""

    def __init__(self):
        raise EnvironmentError("AutoTokenizer is designed to be instantiated using the "
                               "`AutoTokenizer.from_pretrained(pretrained_model_name_or_path)` "
                               "method.")

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *inputs, **kwargs):
        if inputs:
            raise TypeError("AutoTokenizer.from_pretrained takes the folder and keyword arguments")
        kwargs.pop("use_fast", None)  # always the tokenizers-backed ("fast") one
        kwargs.pop("local_files_only", None)
        return Tokenizer.from_pretrained(pretrained_model_name_or_path, **kwargs)
