"""``nn`` workloads: a two-layer ``TransformerEncoder`` (d_model 256, 8 heads, feed-forward
1024, batch_first), batch 16 of 128-token sequences, float32, Ember vs PyTorch.

Training (dropout 0.1, forward + MSE loss + backward + hand-written SGD) is dominated by the
linear layers' matrix products, which both frameworks hand to BLAS; attention is a batched
matmul over (16, 8, 128, 32) arrays and a fused softmax. The target is at least 0.7x PyTorch's
samples/s. Inference (eval, no_grad) compares against PyTorch's fused encoder-layer kernel,
which Ember does not have; it is measured without a target."""
import contextlib

import numpy as np

from workloads import workload

BATCH, SEQ, D_MODEL, HEADS, FF, LAYERS = 16, 128, 256, 8, 1024, 2


def _encoder(lib, dropout):
    nn = lib.nn
    lib.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=dropout, batch_first=True)
    # enable_nested_tensor only matters for padding masks, which these workloads do not use.
    return nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)


def _batch(lib, seed=0):
    rng = np.random.default_rng(seed)
    return lib.from_numpy(rng.standard_normal((BATCH, SEQ, D_MODEL), dtype=np.float32))


def _train_step(lib, autocast=False):
    model = _encoder(lib, 0.1)
    model.train()
    src, target = _batch(lib, 0), _batch(lib, 1)
    params = list(model.parameters())
    lr = 0.01
    region = (lambda: lib.autocast("cpu", dtype=lib.bfloat16)) if autocast else contextlib.nullcontext

    def step():
        for p in params:
            p.grad = None
        with region():
            loss = lib.nn.functional.mse_loss(model(src), target)
        loss.backward()
        with lib.no_grad():
            for p in params:
                p -= lr * p.grad
        return loss
    return step


@workload("transformer_encoder_train_step",
          "TransformerEncoder 2 layers (d_model 256, 8 heads, ff 1024, dropout 0.1) training "
          "step, batch 16 x seq 128, float32: forward, MSE, backward, SGD",
          number=3, quick_number=1, target=("torch", 1.43))  # 1 / 0.7: >= 0.7x the samples/s
def transformer_encoder_train_step(lib):
    return _train_step(lib)


@workload("transformer_encoder_train_step_bf16_autocast",
          "The same training step under CPU autocast (bfloat16: the linear layers and attention "
          "products in bfloat16, softmax/losses/norms in float32; issue 17)",
          number=3, quick_number=1)
def transformer_encoder_train_step_bf16_autocast(lib):
    return _train_step(lib, autocast=True)


@workload("transformer_encoder_inference",
          "TransformerEncoder 2 layers (d_model 256, 8 heads, ff 1024) forward in eval mode "
          "under no_grad, batch 16 x seq 128, float32", number=5, quick_number=2)
def transformer_encoder_inference(lib):
    model = _encoder(lib, 0.1)
    model.eval()
    src = _batch(lib)

    def step():
        with lib.no_grad():
            return model(src)
    return step
