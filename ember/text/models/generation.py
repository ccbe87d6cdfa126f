"""``generate`` for the causal language models, with Hugging Face's arguments and order of
logits processing: the scores of the last position are divided by ``temperature``, then
filtered by ``top_k``, then by ``top_p`` (nucleus), and a token is drawn from their softmax —
or, without ``do_sample``, the highest-scoring token is taken (greedy search).

Sampling draws exactly one uniform number per sequence per step (``ember.rand``, from
``generator`` or the global generator) and takes the token where the cumulative probability
first exceeds it, so a run is reproducible from the seed and a re-implementation given the same
draws picks the same tokens.
"""
import ember

from ...autograd.grad_mode import no_grad

#: HF's GenerationConfig defaults
_DEFAULT_MAX_LENGTH = 20
_DEFAULT_TOP_K = 50


class TemperatureLogitsWarper:
    """``scores / temperature``: below 1 sharpens the distribution, above 1 flattens it."""

    def __init__(self, temperature):
        if not isinstance(temperature, (int, float)) or not temperature > 0:
            raise ValueError(f"`temperature` (={temperature}) has to be a strictly positive "
                             "float, otherwise your next token scores will be invalid.")
        self.temperature = float(temperature)

    def __call__(self, input_ids, scores):
        return scores / self.temperature


class TopKLogitsWarper:
    """Keep the ``top_k`` highest scores (ties with the k-th kept too); the rest become -inf."""

    def __init__(self, top_k, filter_value=-float("inf"), min_tokens_to_keep=1):
        if not isinstance(top_k, int) or top_k <= 0:
            raise ValueError(f"`top_k` has to be a strictly positive integer, but is {top_k}")
        self.top_k = max(top_k, min_tokens_to_keep)
        self.filter_value = filter_value

    def __call__(self, input_ids, scores):
        k = min(self.top_k, scores.shape[-1])
        kth = ember.topk(scores, k, dim=-1).values[..., -1:]
        return scores.masked_fill(scores < kth, self.filter_value)


class TopPLogitsWarper:
    """Nucleus filtering: keep the smallest set of highest-probability tokens whose total
    probability exceeds ``top_p`` (at least ``min_tokens_to_keep``)."""

    def __init__(self, top_p, filter_value=-float("inf"), min_tokens_to_keep=1):
        top_p = float(top_p)
        if not 0.0 <= top_p <= 1.0:
            raise ValueError(f"`top_p` has to be a float > 0 and < 1, but is {top_p}")
        self.top_p = top_p
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores):
        sorted_logits, sorted_indices = ember.sort(scores, descending=False, dim=-1)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove_sorted = cumulative <= (1 - self.top_p)
        remove_sorted[..., -self.min_tokens_to_keep:] = False
        remove = remove_sorted.scatter(1, sorted_indices, remove_sorted)
        return scores.masked_fill(remove, self.filter_value)


def sample_from_probs(probs, uniforms):
    """The token of each row where the cumulative probability first exceeds ``uniforms`` (one
    draw in [0, 1) per row): inverse-CDF sampling, vectorised over the batch."""
    cumulative = probs.cumsum(dim=-1)
    threshold = uniforms.unsqueeze(-1) * cumulative[..., -1:]  # the total, despite rounding
    return (cumulative <= threshold).sum(dim=-1)


def position_ids_from_attention_mask(attention_mask):
    """Positions that skip left padding: 0 at each sequence's first real token (HF's rule)."""
    positions = attention_mask.long().cumsum(-1) - 1
    return positions.masked_fill(attention_mask == 0, 1)


class GenerationMixin:
    """``generate`` for a model whose forward takes ``input_ids``, ``attention_mask``,
    ``position_ids``, ``past_key_values``, ``use_cache`` and returns ``logits`` and
    ``past_key_values``."""

    def _logits_warpers(self, temperature, top_k, top_p):
        warpers = []
        if temperature is not None and temperature != 1.0:
            warpers.append(TemperatureLogitsWarper(temperature))
        if top_k is not None and top_k != 0:
            warpers.append(TopKLogitsWarper(top_k))
        if top_p is not None and top_p < 1.0:
            warpers.append(TopPLogitsWarper(top_p))
        return warpers

    def generate(self, input_ids=None, attention_mask=None, max_new_tokens=None,
                 max_length=None, do_sample=False, temperature=1.0, top_k=_DEFAULT_TOP_K,
                 top_p=1.0, use_cache=True, eos_token_id=None, pad_token_id=None,
                 generator=None, **kwargs):
        """Continue ``input_ids`` (batch, prompt) and return (batch, prompt + new) token ids.

        ``max_new_tokens`` (or ``max_length``, the total, 20 by default as in HF) bounds the
        length; generation stops early once every sequence has produced ``eos_token_id``
        (the config's by default), later tokens of a finished sequence being
        ``pad_token_id``. ``attention_mask`` marks left padding in a batch of prompts.
        ``use_cache`` feeds only the new token at each step together with the KV cache. As in
        HF, the module's mode is left alone: call ``eval()`` first so dropout is off.
        """
        if kwargs:
            raise ValueError(f"The following `model_kwargs` are not used by generate: "
                             f"{sorted(kwargs)}")
        if input_ids is None or input_ids.dim() != 2:
            raise ValueError("generate needs input_ids of shape (batch, prompt_length), got "
                             f"{None if input_ids is None else tuple(input_ids.shape)}")
        prompt_length = input_ids.shape[1]
        if max_new_tokens is None:
            max_new_tokens = (max_length if max_length is not None
                              else _DEFAULT_MAX_LENGTH) - prompt_length
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
        if eos_token_id is None:
            eos_token_id = getattr(self.config, "eos_token_id", None)
        eos = list(eos_token_id) if isinstance(eos_token_id, (list, tuple)) else (
            [] if eos_token_id is None else [eos_token_id])
        if pad_token_id is None:
            pad_token_id = getattr(self.config, "pad_token_id", None)
        if pad_token_id is None and eos:
            pad_token_id = eos[0]  # HF: "Setting `pad_token_id` to `eos_token_id`"
        warpers = self._logits_warpers(temperature, top_k, top_p) if do_sample else []
        if attention_mask is None:
            # HF's inference: pad tokens in the prompt are padding, unless pad is also eos.
            if (pad_token_id is not None and pad_token_id not in eos
                    and bool((input_ids == pad_token_id).any())):
                attention_mask = (input_ids != pad_token_id).long()
            else:
                attention_mask = ember.ones_like(input_ids)
        batch = input_ids.shape[0]
        device = input_ids.device
        unfinished = ember.ones(batch, dtype=ember.bool, device=device)
        eos_tensor = ember.tensor(eos, dtype=input_ids.dtype, device=device) if eos else None
        past = None
        sequences = input_ids
        with no_grad():
            for _ in range(max_new_tokens):
                positions = position_ids_from_attention_mask(attention_mask)
                if use_cache and past is not None:
                    step_ids, positions = sequences[:, -1:], positions[:, -1:]
                else:
                    step_ids = sequences
                out = self(input_ids=step_ids, attention_mask=attention_mask,
                           position_ids=positions, past_key_values=past,
                           use_cache=use_cache, return_dict=True)
                past = out.past_key_values if use_cache else None
                scores = out.logits[:, -1, :].float()
                for warp in warpers:
                    scores = warp(sequences, scores)
                if do_sample:
                    probs = scores.softmax(dim=-1)
                    uniforms = ember.rand(batch, generator=generator, device=device)
                    next_tokens = sample_from_probs(probs, uniforms)
                else:
                    next_tokens = scores.argmax(dim=-1)
                if eos_tensor is not None:
                    next_tokens = ember.where(unfinished, next_tokens,
                                              ember.full_like(next_tokens, pad_token_id))
                sequences = ember.cat((sequences, next_tokens[:, None].to(sequences.dtype)),
                                      dim=1)
                attention_mask = ember.cat(
                    (attention_mask, ember.ones_like(attention_mask[:, :1])), dim=1)
                if eos_tensor is not None:
                    unfinished = unfinished & ~ember.isin(next_tokens, eos_tensor)
                    if not bool(unfinished.any()):
                        break
        return sequences
