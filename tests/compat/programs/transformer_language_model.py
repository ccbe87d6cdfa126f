"""A Transformer language model, in the shape of pytorch/examples ``word_language_model``
(``--model Transformer``) and the "language modeling with nn.Transformer" tutorial.

Tokens come from a random Markov chain over 24 symbols drawn with NumPy from ``--seed``.
As in the example, the model subclasses ``nn.Transformer`` (its decoder stack replaced by a
``Linear``): an embedding, a sinusoidal positional-encoding buffer, the encoder stack with a
causal float mask ``log(tril(ones))`` (0 or -inf), trained with Adam, gradient clipping and a
StepLR schedule. Deterministic:
the data are NumPy's, dropout is 0 and ``--load-init`` replaces the initial weights.
"""
import argparse
import json
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.0, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0), :])


class TransformerModel(nn.Transformer):
    """Container module with an encoder, a Transformer encoder stack and a decoder. As in the
    example, it subclasses nn.Transformer and replaces its decoder stack with a Linear."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.0):
        super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                         num_encoder_layers=nlayers, dropout=dropout)
        self.model_type = "Transformer"
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)
        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                self.src_mask = self._generate_square_subsequent_mask(len(src)).to(device)
        else:
            self.src_mask = None
        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.encoder(src, mask=self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


def markov_tokens(rng, transitions, count):
    tokens, state = np.empty(count, dtype=np.int64), 0
    for i in range(count):
        state = rng.choice(len(transitions), p=transitions[state])
        tokens[i] = state
    return torch.from_numpy(tokens)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data[:nbatch * bsz].view(bsz, -1).t().contiguous()


def main():
    parser = argparse.ArgumentParser(description="Transformer language model")
    parser.add_argument("--ntokens", type=int, default=24)
    parser.add_argument("--emsize", type=int, default=16)
    parser.add_argument("--nhead", type=int, default=2)
    parser.add_argument("--nhid", type=int, default=32)
    parser.add_argument("--nlayers", type=int, default=2)
    parser.add_argument("--bptt", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--save-init", metavar="PATH")
    parser.add_argument("--load-init", metavar="PATH")
    parser.add_argument("--save-model", metavar="PATH")
    parser.add_argument("--log", metavar="PATH")
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    transitions = rng.dirichlet(np.full(args.ntokens, 0.1), size=args.ntokens)
    train_data = batchify(markov_tokens(rng, transitions, 400), args.batch_size).to(device)
    val_data = batchify(markov_tokens(rng, transitions, 120), 4).to(device)

    model = TransformerModel(args.ntokens, args.emsize, args.nhead, args.nhid, args.nlayers)
    model = model.to(device)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.load_init:
        model.load_state_dict(torch.load(args.load_init, weights_only=True))
    criterion = nn.NLLLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.9)

    losses = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        for i in range(0, train_data.size(0) - 1, args.bptt):
            seq_len = min(args.bptt, train_data.size(0) - 1 - i)
            data, targets = train_data[i:i + seq_len], train_data[i + 1:i + 1 + seq_len]
            optimizer.zero_grad()
            output = model(data)
            loss = criterion(output.view(-1, args.ntokens), targets.reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()

        model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for i in range(0, val_data.size(0) - 1, args.bptt):
                seq_len = min(args.bptt, val_data.size(0) - 1 - i)
                data, targets = val_data[i:i + seq_len], val_data[i + 1:i + 1 + seq_len]
                output = model(data)
                loss = criterion(output.view(-1, args.ntokens), targets.reshape(-1))
                total += seq_len * loss.item()
                count += seq_len
        val_loss = total / count
        print(f"| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} "
              f"| valid ppl {math.exp(val_loss):8.2f}")

    if args.save_model:
        torch.save(model.state_dict(), args.save_model)
    if args.log:
        with open(args.log, "w") as f:
            json.dump({"losses": losses, "metrics": {"valid_loss": val_loss}}, f)


if __name__ == "__main__":
    main()
