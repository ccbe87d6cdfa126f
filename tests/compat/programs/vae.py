"""A variational autoencoder, in the shape of pytorch/examples ``vae/main.py``.

Synthetic 8x8 images in [0, 1] (blurred blobs) drawn with NumPy from ``--seed``.
Deterministic: the reparameterisation noise ``eps`` is drawn from a seeded NumPy generator
(instead of ``torch.randn_like``) and handed in through ``torch.from_numpy``; the DataLoader
does not shuffle; ``--load-init`` replaces the random initial weights.
"""
import argparse
import json

import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

PIXELS = 64


class VAE(nn.Module):
    def __init__(self, hidden=32, latent=4):
        super().__init__()
        self.fc1 = nn.Linear(PIXELS, hidden)
        self.fc21 = nn.Linear(hidden, latent)
        self.fc22 = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, PIXELS)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps):
        std = torch.exp(0.5 * logvar)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps):
        mu, logvar = self.encode(x.view(-1, PIXELS))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, PIXELS), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def make_images(rng, count):
    yy, xx = np.mgrid[0:8, 0:8]
    centres = rng.uniform(1.5, 6.5, (count, 2, 1, 1))
    images = np.exp(-((yy - centres[:, 0]) ** 2 + (xx - centres[:, 1]) ** 2) / 4.0)
    return torch.from_numpy(images[:, None].astype(np.float32))


def main():
    parser = argparse.ArgumentParser(description="VAE example")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=3)
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
    train_loader = DataLoader(TensorDataset(make_images(rng, 64)), batch_size=args.batch_size)
    test_images = make_images(rng, 32)

    model = VAE().to(device)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.load_init:
        model.load_state_dict(torch.load(args.load_init, weights_only=True))
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    noise = np.random.default_rng(args.seed + 1)

    losses = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        for (data,) in train_loader:
            data = data.to(device)
            eps = torch.from_numpy(noise.standard_normal((data.shape[0], 4)).astype(np.float32))
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data, eps.to(device))
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            optimizer.step()
            losses.append(loss.item() / len(data))
        print(f"====> Epoch: {epoch} loss: {losses[-1]:.4f}")

    model.eval()
    with torch.inference_mode():
        data = test_images.to(device)
        mu, logvar = model.encode(data.view(-1, PIXELS))
        recon = model.decode(mu)  # the posterior mean: no noise at evaluation
        test_loss = loss_function(recon, data, mu, logvar).item() / len(data)
    print(f"====> Test set loss: {test_loss:.4f}")

    if args.save_model:
        torch.save(model.state_dict(), args.save_model)
    if args.log:
        with open(args.log, "w") as f:
            json.dump({"losses": losses, "metrics": {"test_loss": test_loss}}, f)


if __name__ == "__main__":
    main()
