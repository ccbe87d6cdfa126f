"""A word-level LSTM language model, in the shape of pytorch/examples ``word_language_model``.

The corpus is a synthetic text: "words" w0..w29 emitted by a random Markov chain drawn with
NumPy from ``--seed``, split into train/valid streams and batchified as in the example:
truncated back-propagation through time, hidden state detached between batches, gradient
clipping, the decoder's weight tied to the embedding's, plain SGD written as
``p.data.add_(p.grad, alpha=-lr)``, the learning rate divided by 4 when validation loss stops
improving, the best model pickled whole with ``torch.save(model, f)`` and loaded back for the
final evaluation. Deterministic: the text is NumPy's, dropout is 0 and ``--load-init``
replaces the initial weights.
"""
import argparse
import json
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Dictionary:
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus:
    def __init__(self, rng, vocab=30, train_words=600, valid_words=200):
        self.dictionary = Dictionary()
        transitions = rng.dirichlet(np.full(vocab, 0.2), size=vocab)
        self.train = self.tokenize(self.generate(rng, transitions, train_words))
        self.valid = self.tokenize(self.generate(rng, transitions, valid_words))

    @staticmethod
    def generate(rng, transitions, count):
        words, state = [], 0
        for _ in range(count):
            state = rng.choice(len(transitions), p=transitions[state])
            words.append(f"w{state}")
        return " ".join(words).split(".")

    def tokenize(self, lines):
        ids = []
        for line in lines:
            for word in line.split() + ["<eos>"]:
                ids.append(self.dictionary.add_word(word))
        return torch.tensor(ids, dtype=torch.int64)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.0, tie_weights=False):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.nhid, self.nlayers = nhid, nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.decoder.out_features)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz, device):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


def evaluate(model, data_source, bptt, eval_batch_size, criterion):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i, bptt)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def main():
    parser = argparse.ArgumentParser(description="Word-level LSTM language model")
    parser.add_argument("--emsize", type=int, default=20)
    parser.add_argument("--nhid", type=int, default=20)
    parser.add_argument("--nlayers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=5.0)
    parser.add_argument("--clip", type=float, default=0.25)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--bptt", type=int, default=15)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--no-tied", dest="tied", action="store_false",
                        help="do not tie the decoder's weight to the embedding's")
    parser.add_argument("--seed", type=int, default=1111)
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--save-init", metavar="PATH")
    parser.add_argument("--load-init", metavar="PATH")
    parser.add_argument("--save-model", metavar="PATH")
    parser.add_argument("--save", type=str, default="model.pt", help="path to save the final model")
    parser.add_argument("--log", metavar="PATH")
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    torch.manual_seed(args.seed)
    corpus = Corpus(np.random.default_rng(args.seed))
    eval_batch_size = 4
    train_data = batchify(corpus.train, args.batch_size, device)
    val_data = batchify(corpus.valid, eval_batch_size, device)

    ntokens = len(corpus.dictionary)
    model = RNNModel(ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied)
    model = model.to(device)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.load_init:
        model.load_state_dict(torch.load(args.load_init, weights_only=True))
    criterion = nn.NLLLoss()

    lr, best_val_loss, losses = args.lr, None, []
    for epoch in range(1, args.epochs + 1):
        model.train()
        hidden = model.init_hidden(args.batch_size)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
            data, targets = get_batch(train_data, i, args.bptt)
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            losses.append(loss.item())
        val_loss = evaluate(model, val_data, args.bptt, eval_batch_size, criterion)
        print(f"| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} "
              f"| valid ppl {math.exp(val_loss):8.2f}")
        if best_val_loss is None or val_loss < best_val_loss:
            with open(args.save, "wb") as f:
                torch.save(model, f)
            best_val_loss = val_loss
        else:
            lr /= 4.0

    # Load the best saved model (the whole pickled module, so weights_only=False).
    with open(args.save, "rb") as f:
        model = torch.load(f, weights_only=False)
        model.rnn.flatten_parameters()
    val_loss = evaluate(model, val_data, args.bptt, eval_batch_size, criterion)
    print(f"| End of training | best valid loss {val_loss:5.2f}")

    if args.save_model:
        with open(args.save_model, "wb") as f:
            torch.save(model.state_dict(), f)
    if args.log:
        with open(args.log, "w") as f:
            json.dump({"losses": losses,
                       "metrics": {"valid_loss": val_loss, "valid_ppl": math.exp(val_loss)}}, f)


if __name__ == "__main__":
    main()
