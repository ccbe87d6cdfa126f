"""Time-series prediction with stacked LSTM cells trained by L-BFGS, in the shape of
pytorch/examples ``time_sequence_prediction`` (``generate_sine_wave.py`` + ``train.py``).

Sine waves with random phases (NumPy, ``--seed``); the model reads each sequence one step at a
time through two ``nn.LSTMCell`` layers, then keeps predicting ``--future`` steps from its own
output. Float64 throughout (``model.double()``), as in the example. ``optim.LBFGS`` calls the
closure several times per step; every closure loss is logged. Deterministic: the data are
NumPy's and ``--load-init`` replaces the initial weights.
"""
import argparse
import json

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double, device=input.device)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double, device=input.device)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double, device=input.device)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double, device=input.device)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def generate_sine_wave(rng, count, length, period=20):
    x = np.arange(length)[None, :] + rng.integers(-4 * period, 4 * period, (count, 1))
    return np.sin(x / period * 2 * np.pi)


def main():
    parser = argparse.ArgumentParser(description="Time sequence prediction")
    parser.add_argument("--steps", type=int, default=3, help="steps to run")
    parser.add_argument("--length", type=int, default=24)
    parser.add_argument("--future", type=int, default=8)
    parser.add_argument("--data", default="traindata.pt",
                        help="where the generated data set is saved")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--save-init", metavar="PATH")
    parser.add_argument("--load-init", metavar="PATH")
    parser.add_argument("--save-model", metavar="PATH")
    parser.add_argument("--log", metavar="PATH")
    opt = parser.parse_args()

    use_accel = not opt.no_accel and torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    torch.manual_seed(opt.seed)
    # generate_sine_wave.py's step: the data set is a NumPy array pickled with torch.save,
    # read back by the training step (a pickled array needs weights_only=False).
    torch.save(generate_sine_wave(np.random.default_rng(opt.seed), 8, opt.length),
               open(opt.data, "wb"))
    data = torch.load(opt.data, weights_only=False)
    input = torch.from_numpy(data[2:, :-1]).to(device)
    target = torch.from_numpy(data[2:, 1:]).to(device)
    test_input = torch.from_numpy(data[:2, :-1]).to(device)
    test_target = torch.from_numpy(data[:2, 1:]).to(device)

    seq = Sequence()
    seq.double().to(device)
    if opt.save_init:
        torch.save(seq.state_dict(), opt.save_init)
    if opt.load_init:
        seq.load_state_dict(torch.load(opt.load_init, weights_only=True))
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=6)

    losses = []
    for i in range(opt.steps):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            losses.append(loss.item())
            loss.backward()
            return loss
        optimizer.step(closure)
        with torch.no_grad():
            future = opt.future
            pred = seq(test_input, future=future)
            test_loss = criterion(pred[:, :-future], test_target).item()
            prediction = pred.detach().cpu().numpy()
        print(f"step {i}: closure evaluations {len(losses)}, test loss {test_loss:.6f}")

    if opt.save_model:
        torch.save(seq.state_dict(), opt.save_model)
    if opt.log:
        with open(opt.log, "w") as f:
            json.dump({"losses": losses,
                       "metrics": {"test_loss": test_loss,
                                   "last_prediction": float(prediction[0, -1])}}, f)


if __name__ == "__main__":
    main()
