"""Running saved programs in a fresh interpreter, for the jit and export tests."""
import os
import subprocess
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Runs in a fresh interpreter: only ember is importable (cwd and sys.path hold no tests).
_LOADER = r"""
import sys, numpy as np, ember
kind = sys.argv[1]
for i, path in enumerate(sys.argv[2:]):
    data = np.load(f"inputs{i}.npz")
    args = tuple(ember.from_numpy(data[f"arg{j}"]) for j in range(len(data.files)))
    m = ember.jit.load(path) if kind == "jit" else ember.export.load(path).module()
    with ember.no_grad():
        out = m(*args)
    flat = []
    def walk(o):
        if isinstance(o, (tuple, list)):
            for x in o: walk(x)
        else:
            flat.append(o.numpy())
    walk(out)
    np.savez(f"outputs{i}.npz", *flat)
assert not [k for k in sys.modules if "jit_models" in k], "the model module was imported"
"""


def flat_tensors(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flat_tensors(o)]
    return [out]


def run_in_fresh_process(kind, programs, tmp_path):
    """For each (path, args) in ``programs``, the outputs of the saved program on ``args``,
    computed by one other interpreter (``kind``: "jit" or "export")."""
    for i, (_, args) in enumerate(programs):
        np.savez(tmp_path / f"inputs{i}.npz", **{f"arg{j}": a.numpy() for j, a in enumerate(args)})
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = REPO
    subprocess.run([sys.executable, "-c", _LOADER, kind, *[str(p) for p, _ in programs]],
                   check=True, cwd=str(tmp_path), env=env, timeout=120)
    results = []
    for i in range(len(programs)):
        data = np.load(tmp_path / f"outputs{i}.npz")
        results.append([data[f"arr_{j}"] for j in range(len(data.files))])
    return results
