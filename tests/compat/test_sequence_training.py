"""PyTorch-idiom sequence scripts, run unmodified on torch and on Ember (``torch_like`` stands
for ``import ... as torch``): an LSTM tagger over padded, packed variable-length sequences and a
GRU regressor with gradient clipping and a scheduler. Same initial weights, same data: the
losses must agree step by step."""
import numpy as np
import torch

import ember


def tagger_run(torch_like, state=None, epochs=3):
    nn = torch_like.nn
    from_lengths = torch_like.nn.utils.rnn

    class Tagger(nn.Module):
        def __init__(self, vocab=20, embed=8, hidden=12, tags=4):
            super().__init__()
            self.embed = nn.Embedding(vocab, embed, padding_idx=0)
            self.lstm = nn.LSTM(embed, hidden, num_layers=2, batch_first=True,
                                bidirectional=True)
            self.out = nn.Linear(2 * hidden, tags)

        def forward(self, tokens, lengths):
            packed = from_lengths.pack_padded_sequence(self.embed(tokens), lengths,
                                                       batch_first=True, enforce_sorted=False)
            hidden, _ = self.lstm(packed)
            padded, _ = from_lengths.pad_packed_sequence(hidden, batch_first=True)
            return self.out(padded)

    model = Tagger()
    if state is not None:
        model.load_state_dict({k: torch_like.tensor(v) for k, v in state.items()})
    rng = np.random.default_rng(0)
    lengths = [7, 3, 5, 6]
    tokens = np.zeros((4, 7), dtype=np.int64)
    tags = np.full((4, 7), -100, dtype=np.int64)  # ignore_index on the padding
    for i, n in enumerate(lengths):
        tokens[i, :n] = rng.integers(1, 20, n)
        tags[i, :n] = tokens[i, :n] % 4
    tokens, tags = torch_like.tensor(tokens), torch_like.tensor(tags)
    optimizer = torch_like.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(epochs):
        optimizer.zero_grad()
        logits = model(tokens, torch_like.tensor(lengths))
        loss = nn.functional.cross_entropy(logits.reshape(-1, 4), tags.reshape(-1),
                                           ignore_index=-100)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model


def gru_run(torch_like, state=None, steps=4):
    nn = torch_like.nn
    model = nn.ModuleDict({"gru": nn.GRU(3, 10, batch_first=False), "head": nn.Linear(10, 1)})
    if state is not None:
        model.load_state_dict({k: torch_like.tensor(v) for k, v in state.items()})
    rng = np.random.default_rng(1)
    x = torch_like.tensor(rng.standard_normal((15, 6, 3)).astype(np.float32))
    y = torch_like.tensor(rng.standard_normal((6, 1)).astype(np.float32))
    optimizer = torch_like.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch_like.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        _, last = model["gru"](x)
        loss = nn.functional.mse_loss(model["head"](last[-1]), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses, model


def test_lstm_tagger_on_packed_sequences_matches_torch():
    torch.manual_seed(0)
    initial = {k: v.detach().numpy().copy() for k, v in tagger_run(torch, epochs=0)[1]
               .state_dict().items()}
    expected, torch_model = tagger_run(torch, state=initial)
    losses, model = tagger_run(ember, state=initial)
    np.testing.assert_allclose(losses, expected, rtol=1e-4, atol=1e-5)
    assert list(model.state_dict()) == list(torch_model.state_dict())


def test_gru_regressor_with_clipping_and_scheduler_matches_torch():
    torch.manual_seed(0)
    initial = {k: v.detach().numpy().copy() for k, v in gru_run(torch, steps=0)[1]
               .state_dict().items()}
    expected, _ = gru_run(torch, state=initial)
    losses, _ = gru_run(ember, state=initial)
    np.testing.assert_allclose(losses, expected, rtol=1e-4, atol=1e-5)
