"""An LSTM that learns to continue a noisy compound wave, in plain PyTorch style on Ember.

Each training example is a window of a signal made of two sines with random frequencies and
phases plus noise; a 2-layer LSTM reads the window and predicts the next value at every step
(``batch_first`` input, a ``Linear`` head on every output, MSE, Adam, gradient clipping). The
script prints the training loss as it falls, compares the validation error with the naive
"repeat the last value" forecast, then forecasts 24 steps ahead by feeding its own predictions
back in, carrying the LSTM state ``(h, c)`` from step to step.

The full run (``python examples/lstm_sequence.py``) takes about a minute on 2 cores;
``--steps 20`` runs a quick check.
"""
import argparse
import math
import time

import numpy as np

import ember as torch
from ember import nn


def compound_waves(batch, length, rng, noise=0.05):
    """``[batch, length, 1]`` float32 signals: two sines with random frequencies, phases and
    amplitudes, plus Gaussian noise."""
    t = np.arange(length)[None, :]
    f1 = rng.uniform(0.05, 0.15, (batch, 1))
    f2 = rng.uniform(0.2, 0.4, (batch, 1))
    p1, p2 = rng.uniform(0, 2 * math.pi, (2, batch, 1))
    a2 = rng.uniform(0.2, 0.6, (batch, 1))
    wave = np.sin(f1 * t + p1) + a2 * np.sin(f2 * t + p2)
    wave += noise * rng.standard_normal(wave.shape)
    return torch.from_numpy(wave[..., None].astype(np.float32))


class Predictor(nn.Module):
    def __init__(self, hidden=64, layers=2, dropout=0.1):
        super().__init__()
        self.lstm = nn.LSTM(1, hidden, num_layers=layers, batch_first=True, dropout=dropout)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x, state=None):
        out, state = self.lstm(x, state)
        return self.head(out), state


def forecast(model, history, horizon):
    """Continue each series in ``history`` (``[batch, T, 1]``) for ``horizon`` steps."""
    with torch.no_grad():
        prediction, state = model(history)
        value = prediction[:, -1:]
        outputs = [value]
        for _ in range(horizon - 1):
            value, state = model(value, state)
            outputs.append(value)
    return torch.cat(outputs, dim=1)


def train(steps=600, batch=64, window=48, hidden=64, lr=3e-3, seed=0, log_every=50):
    """Train and return a summary: the logged losses, validation and forecast errors."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = Predictor(hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    start = time.perf_counter()
    for step in range(1, steps + 1):
        series = compound_waves(batch, window + 1, rng)
        inputs, targets = series[:, :-1], series[:, 1:]
        prediction, _ = model(inputs)
        loss = nn.functional.mse_loss(prediction, targets)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if step == 1 or step % log_every == 0 or step == steps:
            recent = np.mean(losses[-log_every:])
            print(f"step {step:4d}  loss {loss.item():.5f}  (mean of last {min(log_every, step)}: "
                  f"{recent:.5f})  {time.perf_counter() - start:5.1f}s")

    model.eval()
    series = compound_waves(256, window + 1 + 24, np.random.default_rng(seed + 1))
    with torch.no_grad():
        prediction, _ = model(series[:, :window])
        val_mse = nn.functional.mse_loss(prediction, series[:, 1:window + 1]).item()
    naive_mse = nn.functional.mse_loss(series[:, :window], series[:, 1:window + 1]).item()
    ahead = forecast(model, series[:, :window], 24)
    forecast_mse = nn.functional.mse_loss(ahead, series[:, window:window + 24]).item()
    print(f"validation MSE (next step): {val_mse:.5f}   repeat-last-value baseline: "
          f"{naive_mse:.5f}")
    print(f"24-step free-running forecast MSE: {forecast_mse:.5f}   "
          f"(signal variance {series.var().item():.3f})")
    return {"losses": losses, "val_mse": val_mse, "naive_mse": naive_mse,
            "forecast_mse": forecast_mse}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600, help="training steps (default 600)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    return train(steps=args.steps, batch=args.batch, hidden=args.hidden, seed=args.seed,
                 log_every=max(1, min(50, args.steps // 4)))


if __name__ == "__main__":
    main()
