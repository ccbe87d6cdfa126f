"""An ordinary PyTorch training script, run unmodified on torch and on Ember (``lib`` stands for
``import ... as torch``): the same weights, data and optimizer must give the same losses."""
import numpy as np
import pytest
import torch

import ember


def training_run(torch_like, state=None, steps=4):
    nn, F = torch_like.nn, torch_like.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(4 * 4 * 4, 3)

        def forward(self, x):
            x = self.pool(F.relu(self.bn(self.conv(x))))
            return self.fc(torch_like.flatten(x, 1))

    model = Net()
    if state is not None:
        model.load_state_dict({k: torch_like.tensor(v) for k, v in state.items()})
    rng = np.random.default_rng(0)
    images = torch_like.tensor(rng.standard_normal((24, 1, 8, 8)).astype(np.float32))
    labels = torch_like.tensor(rng.integers(0, 3, 24))
    loader = torch_like.utils.data.DataLoader(
        torch_like.utils.data.TensorDataset(images, labels), batch_size=8)
    optimizer = torch_like.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
    scheduler = torch_like.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    losses = []
    for _ in range(steps):
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            torch_like.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    model.eval()
    with torch_like.no_grad():
        eval_out = model(images).numpy()
    return losses, eval_out, model


@pytest.mark.parametrize("steps", [4])
def test_cnn_training_matches_torch(steps):
    torch.manual_seed(0)
    expected_losses, expected_eval, torch_model = training_run(torch, steps=steps)
    torch.manual_seed(0)
    initial = training_run(torch, steps=0)[2].state_dict()
    state = {k: v.numpy() for k, v in initial.items()}
    losses, eval_out, model = training_run(ember, state=state, steps=steps)
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(eval_out, expected_eval, rtol=1e-3, atol=1e-4)
    assert list(model.state_dict()) == list(torch_model.state_dict())
