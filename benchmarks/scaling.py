"""Where framework overhead stops mattering: training throughput of the MLP and the Transformer
encoder as the batch grows (1 … 512) and as the model widens, Ember and PyTorch on one chart.

    python benchmarks/scaling.py                 # writes docs/scaling.png and docs/scaling.json
    python benchmarks/scaling.py --quick         # fewer points, a smoke run

Each framework runs in its own process with 2 threads (as benchmarks/run.py does, for the same
reasons), alternating Ember, PyTorch, Ember, PyTorch; each point is the best of the rounds'
medians. Small batches measure per-op overhead, large ones the matrix products.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import child_env, REPO  # noqa: E402

SERIES = {
    # name: (model, what varies, values, fixed settings)
    "mlp_batch": ("mlp", "batch", [1, 4, 16, 64, 128, 256, 512], {"width": 512}),
    "mlp_width": ("mlp", "width", [64, 128, 256, 512, 1024, 2048], {"batch": 128}),
    "transformer_batch": ("transformer", "batch", [1, 2, 4, 8, 16, 32], {"width": 256}),
    "transformer_width": ("transformer", "width", [64, 128, 256, 512], {"batch": 8}),
}


def _mlp_step(lib, batch, width):
    import numpy as np
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, 10))
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((batch, 784), dtype=np.float32))
    y = lib.from_numpy(rng.integers(0, 10, batch))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01)

    def step():
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return step


def _transformer_step(lib, batch, width, seq=64):
    import numpy as np
    nn = lib.nn
    lib.manual_seed(0)
    layer = nn.TransformerEncoderLayer(width, max(1, width // 32), 4 * width, dropout=0.0,
                                       batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((batch, seq, width), dtype=np.float32))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01)

    def step():
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
    return step


def child(framework, series, budget):
    """Measure every point of ``series`` ({name: [model, varied, values, fixed]}) in this
    process; print JSON."""
    import importlib
    lib = importlib.import_module(framework)
    if framework == "torch":
        lib.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    results = {}
    for name, (model, varied, values, fixed) in series.items():
        points = []
        for value in values:
            settings = dict(fixed, **{varied: value})
            step = (_mlp_step if model == "mlp" else _transformer_step)(lib, **settings)
            step()
            step()
            samples, spent = [], 0.0
            while len(samples) < 3 or (spent < budget and len(samples) < 50):
                start = time.perf_counter()
                step()
                samples.append(time.perf_counter() - start)
                spent += samples[-1]
            samples.sort()
            points.append({varied: value, "median_s": samples[len(samples) // 2],
                           "samples_per_s": settings["batch"] / samples[len(samples) // 2]})
        results[name] = points
    print(json.dumps(results))


def _plot(results, series, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.8))
    for ax, (name, by_framework) in zip(axes, results.items()):
        model, varied, _, fixed = series[name]
        for framework, style in (("ember", "o-"), ("torch", "s--")):
            points = by_framework[framework]
            ax.plot([p[varied] for p in points], [p["samples_per_s"] for p in points], style,
                    label="Ember" if framework == "ember" else "PyTorch")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        other = ", ".join(f"{k} {v}" for k, v in fixed.items())
        ax.set(title=f"{model} ({other})", xlabel=varied, ylabel="training samples/s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--out", default=os.path.join(REPO, "docs"))
    parser.add_argument("--child", nargs=2, metavar=("FRAMEWORK", "SERIES_JSON"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=float, default=1.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], json.loads(args.child[1]), args.budget)
        return 0
    rounds = args.rounds or (1 if args.quick else 2)
    budget = 0.1 if args.quick else 1.0
    series = {name: (model, varied, [values[0], values[-1]] if args.quick else values, fixed)
              for name, (model, varied, values, fixed) in SERIES.items()}
    best = {name: {} for name in series}
    for round_index in range(rounds):
        for framework in ("ember", "torch"):
            cmd = [sys.executable, os.path.abspath(__file__), "--child", framework,
                   json.dumps(series), "--budget", str(budget)]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), cwd=REPO)
            if proc.returncode != 0:
                raise RuntimeError(f"{framework} failed:\n{proc.stderr}")
            for name, points in json.loads(proc.stdout.strip().splitlines()[-1]).items():
                kept = best[name].setdefault(framework, points)
                for i, point in enumerate(points):
                    if point["median_s"] < kept[i]["median_s"]:
                        kept[i] = point
            print(f"round {round_index + 1}/{rounds}: {framework} done", file=sys.stderr)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "scaling.json.tmp"), "w") as f:
        json.dump({"series": series, "results": best}, f,
                  indent=1)
    os.replace(os.path.join(args.out, "scaling.json.tmp"), os.path.join(args.out, "scaling.json"))
    _plot(best, series, os.path.join(args.out, "scaling.png"))
    for name, by_framework in best.items():
        model, varied, _, _ = series[name]
        ratios = [e["samples_per_s"] / t["samples_per_s"]
                  for e, t in zip(by_framework["ember"], by_framework["torch"])]
        print(f"{name:18s} Ember/PyTorch throughput by {varied}: " + ", ".join(
            f"{p[varied]}: {r:.2f}" for p, r in zip(by_framework["ember"], ratios)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
