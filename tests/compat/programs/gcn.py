"""A two-layer graph convolutional network (Kipf & Welling), in the shape of pytorch/examples
``gcn/main.py``: node classification with a sparse normalised adjacency matrix.

The graph is a stochastic block model (3 communities, 60 nodes) with community-dependent
node features, drawn with NumPy from ``--seed``. The adjacency ``D^-1/2 (A + I) D^-1/2`` is a
``torch.sparse_coo_tensor`` built from an unordered edge list (coalesced, degrees from
``torch.sparse.sum``, values rescaled through ``indices()``/``values()``), and every
propagation is ``torch.sparse.mm(adj, X W)``.
Deterministic: the graph is NumPy's, dropout is 0 and ``--load-init`` replaces the initial
weights (drawn by ``nn.init.xavier_uniform_``).
"""
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim, use_bias=True):
        super().__init__()
        self.kernel = nn.Parameter(torch.empty(input_dim, output_dim))
        nn.init.xavier_uniform_(self.kernel)
        self.bias = nn.Parameter(torch.zeros(output_dim)) if use_bias else None

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.sparse.mm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, dropout=0.0):
        super().__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim)
        self.gc2 = GraphConv(hidden_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input_tensor, adj_mat):
        x = F.relu(self.gc1(input_tensor, adj_mat))
        x = self.dropout(x)
        return F.log_softmax(self.gc2(x, adj_mat), dim=1)


def make_graph(rng, nodes=60, classes=3, features=12):
    labels = rng.integers(0, classes, nodes)
    p = np.where(labels[:, None] == labels[None, :], 0.2, 0.02)
    upper = np.triu(rng.random((nodes, nodes)) < p, 1)
    adjacency = upper | upper.T | np.eye(nodes, dtype=bool)
    means = rng.standard_normal((classes, features))
    x = means[labels] + 1.5 * rng.standard_normal((nodes, features))
    # Edges in random order, as an edge list read from a file would be.
    edges = np.stack(np.nonzero(adjacency))[:, rng.permutation(int(adjacency.sum()))]
    return x.astype(np.float32), labels, edges


def normalized_adjacency(edge_index, n):
    """D^-1/2 (A + I) D^-1/2 as a sparse COO matrix (``edge_index`` includes the self-loops)."""
    adj = torch.sparse_coo_tensor(edge_index, torch.ones(edge_index.shape[1]), (n, n)).coalesce()
    degree = torch.sparse.sum(adj, dim=1).to_dense()
    d_inv_sqrt = degree.pow(-0.5)
    row, col = adj.indices()
    values = d_inv_sqrt[row] * adj.values() * d_inv_sqrt[col]
    return torch.sparse_coo_tensor(adj.indices(), values, adj.shape)


def main():
    parser = argparse.ArgumentParser(description="GCN example")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--l2", type=float, default=5e-4)
    parser.add_argument("--hidden-dim", type=int, default=16)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--save-init", metavar="PATH")
    parser.add_argument("--load-init", metavar="PATH")
    parser.add_argument("--save-model", metavar="PATH")
    parser.add_argument("--log", metavar="PATH")
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    torch.manual_seed(args.seed)
    x, labels, edges = make_graph(np.random.default_rng(args.seed))
    features = torch.from_numpy(x).to(device)
    labels = torch.from_numpy(labels).to(device)
    n = len(labels)
    adj_mat = normalized_adjacency(torch.from_numpy(edges), n).to(device)
    idx_train, idx_val = torch.arange(0, 30), torch.arange(30, n)

    model = GCN(features.shape[1], args.hidden_dim, int(labels.max()) + 1).to(device)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.load_init:
        model.load_state_dict(torch.load(args.load_init, weights_only=True))
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.l2)
    criterion = nn.NLLLoss()

    losses = []
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj_mat)
        loss = criterion(output[idx_train], labels[idx_train])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    model.eval()
    with torch.no_grad():
        output = model(features, adj_mat)
        val_loss = criterion(output[idx_val], labels[idx_val]).item()
        val_acc = (output[idx_val].argmax(1) == labels[idx_val]).float().mean().item()
    print(f"Validation: loss {val_loss:.4f} accuracy {val_acc:.4f}")

    if args.save_model:
        torch.save(model.state_dict(), args.save_model)
    if args.log:
        with open(args.log, "w") as f:
            json.dump({"losses": losses,
                       "metrics": {"val_loss": val_loss, "val_accuracy": val_acc}}, f)


if __name__ == "__main__":
    main()
