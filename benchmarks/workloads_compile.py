"""``compile`` workloads (issue 19): ``ember.compile``d models against PyTorch eager, the eager
rows they are read against, ``jit.trace`` inference, and compile time.

Goals, as the rows' targets say: compiled MLP inference at batch 1 and 8 at least 1.2x PyTorch
eager (``compile_mlp_infer_b*`` Ember time at most 0.83x torch's); compiled training steps of the
MLP and the Transformer at least PyTorch eager's speed, and at least Ember eager's (compare the
Ember cells of ``compile_mlp_train_step`` with ``mlp_train_step``, and of
``compile_transformer_train_step`` with ``transformer_train_step``, which run the same step
eagerly); ``jit_trace_mlp_infer_b8`` at least Ember eager (its Ember cell against
``mlp_infer_b8_eager``'s). In the compiled rows only Ember is compiled (PyTorch runs eagerly: the
reference the issue names). ``compile_time_mlp`` is a fresh capture and compile plus the first
call, both frameworks with their default backend (PyTorch's inductor runs a C++ compiler;
Ember's generates Python)."""
import numpy as np

from workloads import workload
from workloads_transformer import _batch, _encoder


def _mlp(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def _images(lib, batch):
    rng = np.random.default_rng(0)
    return lib.from_numpy(rng.standard_normal((batch, 784), dtype=np.float32))


def _compiled(lib, model, **kwargs):
    """Ember's model compiled; PyTorch's as it is (eager)."""
    return lib.compile(model, **kwargs) if lib.__name__ == "ember" else model


def _inference(lib, batch, compile_ember):
    model = _mlp(lib).eval()
    model = _compiled(lib, model) if compile_ember else model
    x = _images(lib, batch)

    def step():
        with lib.no_grad():
            return model(x)
    with lib.no_grad():
        step()  # the recording (and compile) happens on the first call, outside the timing
    return step


@workload("compile_mlp_infer_b1", "MLP 784-512-512-10 inference, batch 1, no_grad: Ember "
          "`compile`d (inductor) vs PyTorch eager", number=2000, quick_number=50,
          target=("torch", 0.83))  # 1 / 1.2
def compile_mlp_infer_b1(lib):
    return _inference(lib, 1, True)


@workload("compile_mlp_infer_b8", "MLP 784-512-512-10 inference, batch 8, no_grad: Ember "
          "`compile`d (inductor) vs PyTorch eager", number=1000, quick_number=50,
          target=("torch", 0.83))
def compile_mlp_infer_b8(lib):
    return _inference(lib, 8, True)


@workload("mlp_infer_b1_eager", "MLP 784-512-512-10 inference, batch 1, no_grad, both eager "
          "(the baseline of compile_mlp_infer_b1)", number=2000, quick_number=50)
def mlp_infer_b1_eager(lib):
    return _inference(lib, 1, False)


@workload("mlp_infer_b8_eager", "MLP 784-512-512-10 inference, batch 8, no_grad, both eager "
          "(the baseline of compile_mlp_infer_b8 and jit_trace_mlp_infer_b8)", number=1000,
          quick_number=50)
def mlp_infer_b8_eager(lib):
    return _inference(lib, 8, False)


@workload("jit_trace_mlp_infer_b8", "MLP 784-512-512-10 inference, batch 8, no_grad, through "
          "`jit.trace` in both frameworks", number=1000, quick_number=50)
def jit_trace_mlp_infer_b8(lib):
    x = _images(lib, 8)
    with lib.no_grad():
        traced = lib.jit.trace(_mlp(lib).eval(), (x,))

    def step():
        with lib.no_grad():
            return traced(x)
    return step


@workload("compile_mlp_train_step", "MLP 784-512-512-10 training step, batch 128 (as "
          "mlp_train_step): Ember's model `compile`d (inductor: the graph's own backward), "
          "cross-entropy, backward, hand-written SGD; PyTorch eager", number=20, quick_number=3,
          target=("torch", 1.0))
def compile_mlp_train_step(lib):
    nn = lib.nn
    model = _mlp(lib)
    compiled = _compiled(lib, model)
    images = _images(lib, 128)
    labels = lib.from_numpy(np.random.default_rng(0).integers(0, 10, 128))
    params = list(model.parameters())

    def step():
        for p in params:
            p.grad = None
        loss = nn.functional.cross_entropy(compiled(images), labels)
        loss.backward()
        with lib.no_grad():
            for p in params:
                p -= 0.01 * p.grad
        return loss
    step()
    return step


@workload("compile_transformer_train_step", "2-layer TransformerEncoder training step (as "
          "transformer_train_step: dropout 0.1, MSE, backward, SGD): Ember's encoder `compile`d "
          "(inductor), PyTorch eager", number=2, quick_number=1, target=("torch", 1.0))
def compile_transformer_train_step(lib):
    model = _encoder(lib, 0.1)
    model.train()
    compiled = _compiled(lib, model)
    src, target = _batch(lib, 0), _batch(lib, 1)
    params = list(model.parameters())

    def step():
        for p in params:
            p.grad = None
        loss = lib.nn.functional.mse_loss(compiled(src), target)
        loss.backward()
        with lib.no_grad():
            for p in params:
                p -= 0.01 * p.grad
        return loss
    step()
    return step


@workload("compile_time_mlp", "a fresh `compile` of the MLP 784-512-512-10 and its first call "
          "(capture, backend compile, run), batch 8, no_grad, default backend of each",
          number=1, quick_number=1)
def compile_time_mlp(lib):
    model = _mlp(lib).eval()
    x = _images(lib, 8)

    def step():
        lib._dynamo.reset()
        compiled = lib.compile(model)
        with lib.no_grad():
            return compiled(x)
    return step

