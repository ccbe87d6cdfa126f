"""A bidirectional LSTM sequence tagger over variable-length sentences, using
``torch.nn.utils.rnn`` as the PyTorch tutorials do: ``pad_sequence`` in a DataLoader
``collate_fn``, ``pack_padded_sequence(..., enforce_sorted=False)`` into the LSTM,
``pad_packed_sequence`` back, and a token-level cross-entropy that ignores the padding.

The task: tag every token of a random sentence (lengths 3..12, vocabulary of 20) with its
class (token id mod 3) XOR-ed with whether the previous token was larger — so both
directions of context matter. Sentences come from a NumPy generator seeded per index.
Deterministic: data are NumPy's, the DataLoader does not shuffle, dropout is 0 and
``--load-init`` replaces the initial weights.
"""
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from torch.utils.data import DataLoader, Dataset

VOCAB, PAD, NUM_TAGS, IGNORE = 21, 0, 6, -100


class TaggedSentences(Dataset):
    def __init__(self, count, seed):
        self.count, self.seed = count, seed

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        rng = np.random.default_rng(self.seed + index)
        tokens = rng.integers(1, VOCAB, int(rng.integers(3, 13)))
        previous_larger = np.concatenate([[0], tokens[:-1] > tokens[1:]])
        tags = tokens % 3 + 3 * previous_larger
        return torch.from_numpy(tokens), torch.from_numpy(tags)


def collate(batch):
    tokens, tags = zip(*batch)
    lengths = torch.tensor([len(t) for t in tokens])
    return (pad_sequence(tokens, batch_first=True, padding_value=PAD),
            pad_sequence(tags, batch_first=True, padding_value=IGNORE), lengths)


class LSTMTagger(nn.Module):
    def __init__(self, embedding_dim=12, hidden_dim=16):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, embedding_dim, padding_idx=PAD)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.hidden2tag = nn.Linear(2 * hidden_dim, NUM_TAGS)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embedding(tokens), lengths, batch_first=True,
                                      enforce_sorted=False)
        packed_out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(packed_out, batch_first=True, total_length=tokens.size(1))
        return self.hidden2tag(out)


def main():
    parser = argparse.ArgumentParser(description="LSTM tagger with packed sequences")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.02)
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
    train_loader = DataLoader(TaggedSentences(48, 100), batch_size=args.batch_size,
                              collate_fn=collate)
    test_loader = DataLoader(TaggedSentences(32, 9000), batch_size=16, collate_fn=collate)

    model = LSTMTagger().to(device)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.load_init:
        model.load_state_dict(torch.load(args.load_init, weights_only=True))
    loss_function = nn.CrossEntropyLoss(ignore_index=IGNORE)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=args.lr)

    losses = []
    for epoch in range(args.epochs):
        model.train()
        for tokens, tags, lengths in train_loader:
            tokens, tags = tokens.to(device), tags.to(device)
            optimizer.zero_grad()
            scores = model(tokens, lengths)
            loss = loss_function(scores.reshape(-1, NUM_TAGS), tags.reshape(-1))
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

    model.eval()
    correct = total = 0
    with torch.no_grad():
        for tokens, tags, lengths in test_loader:
            tokens, tags = tokens.to(device), tags.to(device)
            predicted = model(tokens, lengths).argmax(-1)
            mask = tags != IGNORE
            correct += (predicted[mask] == tags[mask]).sum().item()
            total += mask.sum().item()
    accuracy = correct / total
    print(f"Token accuracy: {correct}/{total}")

    if args.save_model:
        torch.save(model.state_dict(), args.save_model)
    if args.log:
        with open(args.log, "w") as f:
            json.dump({"losses": losses, "metrics": {"token_accuracy": accuracy}}, f)


if __name__ == "__main__":
    main()
