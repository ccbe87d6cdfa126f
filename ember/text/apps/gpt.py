"""``ember-gpt``: train a small GPT-2 on a text file, character by character, then sample from it.

    ember-gpt [--text FILE] [--steps 300] [--batch-size 16] [--block-size 64] [--device cpu]
              [--out ember-gpt] [--resume] [--amp] [--sample-tokens 300] [--seed 0]

Without ``--text`` it trains on a bundled public-domain text (``ember/text/data/shakespeare.txt``:
Shakespeare's sonnets and speeches, ~15 KB). The model is ``ember.text.models.GPT2LMHeadModel``
over a ``CharTokenizer`` vocabulary, trained with AdamW on random windows of ``--block-size``
characters. In ``--out`` it writes:

- ``checkpoint.pt`` (``ember.save``, atomic: model, optimizer, step, loss history, RNG state)
  every ``--checkpoint-every`` steps and at the end; ``--resume`` continues from it up to
  ``--steps`` in total;
- ``tokenizer.json`` and ``model/`` (``save_pretrained``: config.json + model.safetensors, which
  transformers' GPT2LMHeadModel loads too);
- ``loss.png`` (matplotlib) and ``samples.txt`` (text generated with top-k sampling).

``--amp`` trains under ``ember.autocast`` in bfloat16 (on the CPU too). tqdm and matplotlib are
optional (``pip install 'ember[demo]'``); without them it trains and says what each would add.
"""
import argparse
import math
import os
import sys
import time
from importlib import resources

import ember
from ember.text import CharTokenizer

__all__ = ["load_text", "make_model", "get_batch", "sample", "train", "console_main"]

BUNDLED_TEXT = "shakespeare.txt"
CHECKPOINT = "checkpoint.pt"


def load_text(path=None):
    """The training text: ``path``, or the bundled public-domain excerpt."""
    if path is None:
        return resources.files("ember.text").joinpath("data", BUNDLED_TEXT).read_text("utf-8")
    with open(path, encoding="utf-8") as file:
        return file.read()


def make_model(vocab_size, block_size, n_layer=2, n_embd=64, n_head=4, dropout=0.0):
    from ember.text.models import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(vocab_size=vocab_size, n_positions=block_size, n_embd=n_embd,
                        n_layer=n_layer, n_head=n_head, resid_pdrop=dropout,
                        embd_pdrop=dropout, attn_pdrop=dropout, bos_token_id=None,
                        eos_token_id=None)
    return GPT2LMHeadModel(config)


def get_batch(data, batch_size, block_size, device, generator=None):
    """``batch_size`` random windows of ``block_size`` ids from ``data`` (a 1-D id tensor),
    gathered in one indexing operation. They are inputs and labels at once: the model shifts
    the labels, so position i learns character i + 1 (HF's convention)."""
    starts = ember.randint(0, len(data) - block_size + 1, (batch_size,), generator=generator)
    offsets = starts[:, None] + ember.arange(block_size)[None, :]
    windows = data[offsets]
    return windows.to(device)


def sample(model, tokenizer, prompt, max_new_tokens, block_size, temperature=0.8, top_k=20):
    """Continue ``prompt`` by ``max_new_tokens`` characters. GPT-2's positions stop at
    ``block_size``, so it generates in chunks, each conditioned on the last half block."""
    device = model.device
    ids = ember.tensor([tokenizer.encode(prompt)], dtype=ember.long, device=device)
    produced = 0
    context = max(1, block_size // 2)
    while produced < max_new_tokens:
        window = ids[:, -context:]
        steps = min(block_size - window.shape[1], max_new_tokens - produced)
        out = model.generate(window, max_new_tokens=steps, do_sample=True,
                             temperature=temperature, top_k=min(top_k, tokenizer.vocab_size))
        ids = ember.cat([ids, out[:, window.shape[1]:]], dim=1)
        produced += steps
    return tokenizer.decode(ids[0].tolist())


def _optional(module, extra_use):
    try:
        return __import__(module)
    except ImportError:
        print(f"({module} is not installed: `pip install 'ember[demo]'` adds {extra_use}.)")
        return None


def save_plot(path, losses, matplotlib):
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(range(1, len(losses) + 1), losses, lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats/char)")
    ax.set_title("ember-gpt training loss")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    tmp = f"{path}.tmp.png"
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)


def _save_checkpoint(path, model, optimizer, step, losses, args):
    ember.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "losses": losses, "rng_state": ember.get_rng_state(),
                "model_args": {"n_layer": args.n_layer, "n_embd": args.n_embd,
                               "n_head": args.n_head, "block_size": args.block_size}}, path)


def build_parser():
    parser = argparse.ArgumentParser(prog="ember-gpt", description=__doc__.split("\n")[0])
    parser.add_argument("--text", default=None, help="training text file (default: bundled)")
    parser.add_argument("--steps", type=int, default=300, help="total optimizer steps")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--block-size", type=int, default=64, help="context length in chars")
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--n-embd", type=int, default=64)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default="ember-gpt", help="folder for checkpoints and outputs")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    parser.add_argument("--amp", action="store_true", help="train under bfloat16 autocast")
    parser.add_argument("--checkpoint-every", type=int, default=100)
    parser.add_argument("--sample-tokens", type=int, default=300)
    parser.add_argument("--prompt", default=None, help="start of the sample (default: text's "
                                                       "first line)")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-k", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    return parser


def train(args):
    """Train (or resume) as ``args`` says; returns a dict with the step reached, the loss
    history and the sample text."""
    device = ember.device(args.device)
    ember.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    checkpoint_path = os.path.join(args.out, CHECKPOINT)
    tokenizer_path = os.path.join(args.out, "tokenizer.json")
    text = load_text(args.text)
    resuming = args.resume and os.path.isfile(checkpoint_path)
    if args.resume and not resuming:
        print(f"--resume: no {checkpoint_path} yet, starting from scratch")
    if resuming:
        tokenizer = CharTokenizer.load(tokenizer_path)
        state = ember.load(checkpoint_path, weights_only=True)
        for name, value in state["model_args"].items():  # the architecture is the checkpoint's
            setattr(args, name, value)
    else:
        tokenizer = CharTokenizer.from_text(text)
        tokenizer.save(tokenizer_path)
    if len(text) < args.block_size:
        raise SystemExit(f"ember-gpt: the text has {len(text)} characters, fewer than "
                         f"--block-size ({args.block_size})")
    data = ember.tensor(tokenizer.encode(text), dtype=ember.long)
    model = make_model(tokenizer.vocab_size, args.block_size, args.n_layer, args.n_embd,
                       args.n_head).to(device)
    optimizer = ember.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    step, losses = 0, []
    if resuming:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, losses = state["step"], list(state["losses"])
        ember.set_rng_state(state["rng_state"])
        print(f"resumed from {checkpoint_path} at step {step}")
    print(f"{len(text):,} characters, vocabulary {tokenizer.vocab_size}, "
          f"{model.num_parameters():,} parameters, device {device}"
          f"{', bfloat16 autocast' if args.amp else ''}")

    tqdm = None if args.no_progress else _optional("tqdm", "a progress bar")
    bar = None
    if tqdm is not None and step < args.steps:
        bar = tqdm.tqdm(total=args.steps, initial=step, desc="ember-gpt", unit="step")
    model.train()
    started, tokens = time.perf_counter(), 0
    while step < args.steps:
        batch = get_batch(data, args.batch_size, args.block_size, device)
        with ember.autocast(device.type, dtype=ember.bfloat16, enabled=args.amp):
            loss = model(batch, labels=batch, use_cache=False).loss
        optimizer.zero_grad()
        loss.backward()
        ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        step += 1
        tokens += args.batch_size * args.block_size
        losses.append(float(loss))
        if bar is not None:
            bar.update(1)
            rate = tokens / max(time.perf_counter() - started, 1e-9)
            bar.set_postfix(loss=f"{losses[-1]:.3f}", tokens_per_s=f"{rate:,.0f}")
        if step % args.checkpoint_every == 0 or step == args.steps:
            _save_checkpoint(checkpoint_path, model, optimizer, step, losses, args)
    if bar is not None:
        bar.close()
    if losses:
        print(f"step {step}: loss {losses[-1]:.3f} (uniform guess: "
              f"{math.log(tokenizer.vocab_size):.3f}); checkpoint {checkpoint_path}")
    model.eval()
    model.save_pretrained(os.path.join(args.out, "model"))

    matplotlib = _optional("matplotlib", "the loss plot")
    if matplotlib is not None and losses:
        png = os.path.join(args.out, "loss.png")
        save_plot(png, losses, matplotlib)
        print(f"loss plot: {png}")

    prompt = args.prompt if args.prompt is not None else text.split("\n", 1)[0] + "\n"
    prompt = "".join(c for c in prompt if tokenizer.token_to_id(c) is not None) or text[0]
    generated = sample(model, tokenizer, prompt, args.sample_tokens, args.block_size,
                       args.temperature, args.top_k)
    with open(os.path.join(args.out, "samples.txt"), "w", encoding="utf-8") as file:
        file.write(generated)
    print("--- sample ---")
    print(generated)
    return {"step": step, "losses": losses, "sample": generated, "tokenizer": tokenizer}


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.steps < 0 or args.batch_size < 1 or args.block_size < 2:
        build_parser().error("--steps must be >= 0, --batch-size >= 1, --block-size >= 2")
    return train(args)


def console_main():
    """Entry point of the ``ember-gpt`` console script."""
    main()
    return 0


if __name__ == "__main__":
    sys.exit(console_main())
