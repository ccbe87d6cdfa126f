"""Train the MLP and the digits CNN on the OpenCL device and on the CPU, and compare.

    pip install -e examples/ember_opencl
    python examples/ember_opencl/train.py [--steps 30] [--batch-size 64] [--strict]

Both models start from the same weights and see the same batches on both devices; the script
prints the losses side by side, their largest relative difference, and Ember's report of which
operators ran on the OpenCL device and which fell back to the CPU, with the time in each.
``--strict`` makes any fallback an error (``ember.library.set_strict_fallback``).
"""
import argparse
import time
import warnings

import numpy as np

import ember
from ember import nn
from ember.demo import DigitsCNN, load_digits, split


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64),
                         nn.ReLU(), nn.Linear(64, 10))


def train(make_model, device, images, labels, steps, batch_size, seed=0):
    """Losses of ``steps`` Adam steps on fixed batches; dropout draws the same masks on every
    device (they are sampled on the host from the same generator)."""
    ember.manual_seed(seed)
    model = make_model().to(device)
    optimizer = ember.optim.Adam(model.parameters(), lr=2e-3)
    order = np.random.default_rng(seed).permutation(len(labels))
    losses = []
    for step in range(steps):
        pick = order[(step * batch_size) % len(order):][:batch_size]
        x = ember.from_numpy(images[pick]).to(device)
        y = ember.from_numpy(labels[pick]).to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    model.eval()
    with ember.no_grad():
        x = ember.from_numpy(images[:256]).to(device)
        accuracy = float((model(x).argmax(1).cpu() == ember.from_numpy(labels[:256])).float()
                         .mean())
    return losses, accuracy


def compare(make_model, name, images, labels, steps, batch_size):
    import ember_opencl  # noqa: F401  (registers "opencl" where the entry point is absent)
    start = time.perf_counter()
    cpu, cpu_acc = train(make_model, "cpu", images, labels, steps, batch_size)
    cpu_s = time.perf_counter() - start
    start = time.perf_counter()
    ocl, ocl_acc = train(make_model, "opencl", images, labels, steps, batch_size)
    ember.library.RegistryBackend.synchronize(ember.backends.get_backend(ember.device("opencl")))
    ocl_s = time.perf_counter() - start
    worst = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(cpu, ocl))
    print(f"{name}: {steps} steps, batch {batch_size}")
    print(f"  loss first/last  cpu {cpu[0]:.6f} / {cpu[-1]:.6f}   opencl {ocl[0]:.6f} / "
          f"{ocl[-1]:.6f}   largest relative difference {worst:.2e}")
    print(f"  accuracy on 256 images: cpu {cpu_acc:.3f}, opencl {ocl_acc:.3f}")
    print(f"  wall time (this process, kernels compiled on first use): cpu {cpu_s:.2f} s, "
          f"opencl {ocl_s:.2f} s")
    return cpu, ocl


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--strict", action="store_true", help="make every fallback an error")
    parser.add_argument("--quick", action="store_true", help="3 steps of batch 16")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.batch_size = 3, 16
    ember.library.set_strict_fallback(args.strict)
    (images, labels), _ = split(*load_digits())
    ember.library.reset_fallback_report()
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        compare(mlp, "MLP", images, labels, args.steps, args.batch_size)
        compare(DigitsCNN, "digits CNN", images, labels, args.steps, args.batch_size)
    print(ember.library.fallback_report())


if __name__ == "__main__":
    main()
