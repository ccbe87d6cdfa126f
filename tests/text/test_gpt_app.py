"""ember-gpt: a few training steps on a small text, a checkpoint, --resume continuing the step
count, --amp, the saved model loading with from_pretrained, and a sample that decodes."""
import os

import numpy as np

import ember
from ember.text.apps import gpt
from ember.text.models import GPT2LMHeadModel

TINY = ["--batch-size", "4", "--block-size", "16", "--n-layer", "1", "--n-embd", "16",
        "--n-head", "2", "--sample-tokens", "20", "--no-progress"]


def test_train_checkpoint_resume_and_sample(tmp_path, capsys):
    text = tmp_path / "text.txt"
    text.write_text("to be or not to be, that is the question.\n" * 20, encoding="utf-8")
    out = str(tmp_path / "run")
    first = gpt.main(["--text", str(text), "--steps", "3", "--out", out, "--checkpoint-every",
                      "2", *TINY])
    assert first["step"] == 3 and len(first["losses"]) == 3
    state = ember.load(os.path.join(out, "checkpoint.pt"), weights_only=True)
    assert state["step"] == 3
    second = gpt.main(["--text", str(text), "--steps", "5", "--out", out, "--resume", "--amp",
                       "--prompt", "to be", *TINY])
    assert "resumed from" in capsys.readouterr().out
    assert second["step"] == 5 and second["losses"][:3] == first["losses"]
    assert all(np.isfinite(second["losses"]))
    sample = second["sample"]
    assert sample.startswith("to be") and len(sample) == len("to be") + 20
    assert set(sample) <= set(text.read_text(encoding="utf-8"))
    assert open(os.path.join(out, "samples.txt"), encoding="utf-8").read() == sample
    assert os.path.getsize(os.path.join(out, "loss.png")) > 0
    model = GPT2LMHeadModel.from_pretrained(os.path.join(out, "model"))
    assert model.config.vocab_size == second["tokenizer"].vocab_size
    assert model.config.n_positions == 16


def test_bundled_text_and_batches():
    text = gpt.load_text()
    assert "Shall I compare thee" in text and len(text.encode("utf-8")) < 200_000
    data = ember.arange(100)
    batch = gpt.get_batch(data, 3, 8, "cpu")
    assert batch.shape == (3, 8)
    assert (batch[:, 1:] - batch[:, :-1] == 1).all()  # consecutive windows of the data
