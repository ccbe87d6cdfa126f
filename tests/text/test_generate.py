"""``generate``: greedy search equals transformers' greedy generate (GPT-2 and Llama, with and
without left padding); the KV cache changes nothing; sampling with temperature, top-k and top-p
equals a torch re-implementation of HF's processing fed the same uniform draws."""
import numpy as np
import pytest
import torch

import ember
from ember.text.models import GPT2LMHeadModel, LlamaForCausalLM
from ember.text.models.generation import TopKLogitsWarper, TopPLogitsWarper
from _hf_oracle import transformers

GPT2 = dict(vocab_size=97, n_positions=48, n_embd=32, n_layer=2, n_head=4, bos_token_id=0,
            eos_token_id=3, pad_token_id=1)
LLAMA = dict(vocab_size=91, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, bos_token_id=0, eos_token_id=3,
             pad_token_id=1)


def _pair(kind, tmp_path_factory):
    tf = transformers()
    torch.manual_seed(0)
    if kind == "gpt2":
        hf = tf.GPT2LMHeadModel(tf.GPT2Config(**GPT2)).eval()
    else:
        hf = tf.LlamaForCausalLM(tf.LlamaConfig(**LLAMA)).eval()
    with torch.no_grad():  # sharper logits than the 0.02-std init, so greedy has clear winners
        hf.get_output_embeddings().weight.mul_(30.0)
    folder = tmp_path_factory.mktemp(kind)
    hf.save_pretrained(folder)
    own = (GPT2LMHeadModel if kind == "gpt2" else LlamaForCausalLM).from_pretrained(folder)
    return hf, own


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def models(request, tmp_path_factory):
    return _pair(request.param, tmp_path_factory)


PROMPT = np.array([[5, 17, 23, 42, 8], [9, 9, 64, 2, 30]])


def test_greedy_equals_transformers_and_cache_changes_nothing(models):
    hf, own = models
    want = hf.generate(torch.tensor(PROMPT), attention_mask=torch.ones(2, 5, dtype=torch.long),
                       max_new_tokens=12, do_sample=False, pad_token_id=1)
    cached = own.generate(ember.tensor(PROMPT), max_new_tokens=12, do_sample=False)
    uncached = own.generate(ember.tensor(PROMPT), max_new_tokens=12, use_cache=False)
    np.testing.assert_array_equal(cached.numpy(), want.numpy())
    np.testing.assert_array_equal(uncached.numpy(), cached.numpy())
    assert cached.shape[1] <= 5 + 12 and (cached[:, :5] == ember.tensor(PROMPT)).all()


def test_left_padded_batch_greedy_equals_transformers(models):
    hf, own = models
    ids = PROMPT.copy()
    mask = np.ones_like(ids)
    ids[1, :2], mask[1, :2] = 1, 0
    want = hf.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=6,
                       do_sample=False, pad_token_id=1)
    got = own.generate(ember.tensor(ids), attention_mask=ember.tensor(mask), max_new_tokens=6)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    inferred = own.generate(ember.tensor(ids), max_new_tokens=6)  # the mask from pad tokens
    np.testing.assert_array_equal(inferred.numpy(), want.numpy())


def _torch_sample(hf, prompt, draws, temperature, top_k, top_p, eos, pad):
    """HF's sampling written out in torch: temperature, top-k, top-p, softmax, and the token
    where the cumulative probability first exceeds the draw."""
    seq = torch.tensor(prompt)
    unfinished = torch.ones(len(prompt), dtype=torch.bool)
    for u in draws:
        with torch.no_grad():
            scores = hf(seq).logits[:, -1, :].float() / temperature
        kth = torch.topk(scores, top_k).values[:, -1:]
        scores = scores.masked_fill(scores < kth, -float("inf"))
        sorted_logits, order = torch.sort(scores)
        remove = sorted_logits.softmax(-1).cumsum(-1) <= 1 - top_p
        remove[:, -1] = False
        scores = scores.masked_fill(remove.scatter(1, order, remove), -float("inf"))
        cdf = scores.softmax(-1).cumsum(-1)
        token = (cdf <= torch.tensor(u)[:, None] * cdf[:, -1:]).sum(-1)
        token = torch.where(unfinished, token, torch.full_like(token, pad))
        seq = torch.cat([seq, token[:, None]], 1)
        unfinished &= token != eos
        if not unfinished.any():
            break
    return seq.numpy()


@pytest.mark.parametrize("use_cache", [True, False])
def test_sampling_equals_torch_reimplementation(models, use_cache):
    hf, own = models
    ember.manual_seed(123)
    got = own.generate(ember.tensor(PROMPT), max_new_tokens=10, do_sample=True,
                       temperature=0.7, top_k=12, top_p=0.8, use_cache=use_cache)
    ember.manual_seed(123)  # generate draws one uniform per sequence per step
    draws = [ember.rand(2).numpy() for _ in range(10)]
    want = _torch_sample(hf, PROMPT, draws, 0.7, 12, 0.8, eos=3, pad=1)
    np.testing.assert_array_equal(got.numpy(), want)


def test_warpers_match_transformers_processors():
    tf = transformers()
    scores = np.random.default_rng(0).standard_normal((3, 40)).astype(np.float32)
    for ours, theirs in ((TopKLogitsWarper(7), tf.TopKLogitsWarper(7)),
                         (TopPLogitsWarper(0.6), tf.TopPLogitsWarper(0.6))):
        got = ours(None, ember.tensor(scores)).numpy()
        want = theirs(None, torch.tensor(scores)).numpy()
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        np.testing.assert_allclose(got[~np.isinf(got)], want[~np.isinf(want)])


def test_generate_argument_errors(models):
    _, own = models
    with pytest.raises(ValueError, match="temperature"):
        own.generate(ember.tensor(PROMPT), max_new_tokens=2, do_sample=True, temperature=0.0)
    with pytest.raises(ValueError, match="not used"):
        own.generate(ember.tensor(PROMPT), max_new_tokens=2, num_beams_typo=3)
    with pytest.raises(NotImplementedError, match="output_attentions"):
        own(ember.tensor(PROMPT), output_attentions=True)


@pytest.mark.cuda
def test_generate_on_cuda_equals_cpu(models):
    _, own = models
    want = own.generate(ember.tensor(PROMPT), max_new_tokens=6)
    own.to("cuda")
    try:
        got = own.generate(ember.tensor(PROMPT, device="cuda"), max_new_tokens=6)
    finally:
        own.to("cpu")
    assert got.device.type == "cuda"
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
