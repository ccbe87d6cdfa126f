"""The forward-forward algorithm (Hinton, 2022), in the shape of pytorch/examples
``mnist_forward_forward/main.py``: each layer is trained on its own, with its own optimizer,
to give high "goodness" (mean squared activation) to positive data (an image with its true
label written into the first pixels) and low goodness to negative data (a wrong label).

Synthetic 6x6 images of 4 classes (NumPy templates plus noise, ``--seed``).
Deterministic: the negative data's wrong labels are drawn from a seeded NumPy generator
(instead of ``torch.randperm``), and ``--load-init`` replaces the initial weights.
"""
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
from torch.optim import Adam

NUM_CLASSES = 4


def overlay_y_on_x(x, y):
    x_ = x.clone()
    x_[:, :NUM_CLASSES] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, lr, epochs, threshold=2.0):
        super().__init__(in_features, out_features)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=lr)
        self.threshold = threshold
        self.num_epochs = epochs

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train_layer(self, x_pos, x_neg, losses):
        for _ in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log(1 + torch.exp(torch.cat([
                -g_pos + self.threshold,
                g_neg - self.threshold]))).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            losses.append(loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


class Net(torch.nn.Module):
    def __init__(self, dims, lr, epochs):
        super().__init__()
        self.layers = nn.ModuleList(Layer(dims[d], dims[d + 1], lr, epochs)
                                    for d in range(len(dims) - 1))

    def predict(self, x):
        goodness_per_label = []
        for label in range(NUM_CLASSES):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness += [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        return torch.cat(goodness_per_label, 1).argmax(1)

    def train_net(self, x_pos, x_neg, losses):
        h_pos, h_neg = x_pos, x_neg
        for i, layer in enumerate(self.layers):
            print("training layer", i, "...")
            h_pos, h_neg = layer.train_layer(h_pos, h_neg, losses)


def make_data(rng, templates, count):
    y = rng.integers(0, NUM_CLASSES, count)
    x = templates[y] + 0.3 * rng.standard_normal((count, templates.shape[1]))
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)


def main():
    parser = argparse.ArgumentParser(description="Forward-forward example")
    parser.add_argument("--epochs", type=int, default=100, help="training steps per layer")
    parser.add_argument("--lr", type=float, default=0.03)
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
    templates = np.abs(rng.standard_normal((NUM_CLASSES, 36)))
    x, y = make_data(rng, templates, 128)
    x_te, y_te = make_data(rng, templates, 64)
    x, y, x_te, y_te = x.to(device), y.to(device), x_te.to(device), y_te.to(device)

    net = Net([36, 32, 32], args.lr, args.epochs).to(device)
    if args.save_init:
        torch.save(net.state_dict(), args.save_init)
    if args.load_init:
        net.load_state_dict(torch.load(args.load_init, weights_only=True))
    x_pos = overlay_y_on_x(x, y)
    wrong = (y.cpu().numpy() + rng.integers(1, NUM_CLASSES, len(y))) % NUM_CLASSES
    x_neg = overlay_y_on_x(x, torch.from_numpy(wrong).to(device))

    losses = []
    net.train_net(x_pos, x_neg, losses)
    with torch.no_grad():
        train_error = 1.0 - net.predict(x).eq(y).float().mean().item()
        test_error = 1.0 - net.predict(x_te).eq(y_te).float().mean().item()
    print("train error:", train_error)
    print("test error:", test_error)

    if args.save_model:
        torch.save(net.state_dict(), args.save_model)
    if args.log:
        with open(args.log, "w") as f:
            json.dump({"losses": losses,
                       "metrics": {"train_error": train_error, "test_error": test_error}}, f)


if __name__ == "__main__":
    main()
