"""Ember as a newcomer installs it: build the sdist and wheel, check them, install the wheel into a
new virtual environment holding nothing else, and run the quickstart there.

    python tools/check_packaging.py            # in a temporary folder, removed afterwards
    python tools/check_packaging.py --keep DIR # keep the dists and the venv in DIR

Checks, each failing the run with a message:
1. ``python -m build`` makes one sdist and one wheel, and ``twine check`` accepts both;
2. the wheel holds the package data (the bundled digits) and no tests;
3. ``pip install <wheel>`` into a fresh ``python -m venv`` pulls in only NumPy and ml_dtypes;
4. the README's quickstart runs there and prints the recovered weights;
5. without the extras installed, each optional feature fails with an error (or, for the demo, a
   message) that names the extra to install.
It needs PyPI (or pip's cache) for the build backend and NumPy/ml_dtypes, as CI has.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

QUICKSTART = """
import ember as torch

x = torch.randn(64, 3)
w = torch.zeros(3, 1, requires_grad=True)
y = x @ torch.tensor([[1.0], [-2.0], [0.5]])
for _ in range(100):
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad = None
print(w.T)
assert torch.allclose(w.T, torch.tensor([[1.0, -2.0, 0.5]]), atol=1e-3), w
"""

# (what is tried without the extra, the extra its error must name)
EXTRA_PROBES = [
    ("import ember.utils.safetensors as s; s.save_file({}, 'x.safetensors')", "safetensors"),
    ("import ember; ember.zeros(1, device='cuda')", "cuda"),
    ("import ember; s = ember.eye(2).to_sparse(); print(s @ ember.ones(2, 1))", "sparse"),
    ("import ember.distributed as d; d.init_process_group('mpi', store=d.HashStore(), rank=0, "
     "world_size=1)", "distributed"),
    ("import ember; ember.onnx.export(ember.nn.Linear(2, 1), (ember.ones(1, 2),), 'm.onnx')",
     "onnx"),
]


def run(cmd, **kwargs):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, text=True, **kwargs)


def build(out):
    run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", out, ROOT])
    sdists, wheels = glob.glob(f"{out}/*.tar.gz"), glob.glob(f"{out}/*.whl")
    assert len(sdists) == 1 and len(wheels) == 1, os.listdir(out)
    run([sys.executable, "-m", "twine", "check", "--strict", *sdists, *wheels])
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "ember/data/digits.csv.gz" in names, "the wheel lacks the bundled digits"
    assert not any(n.startswith("tests/") for n in names), "the wheel ships the tests"
    return wheels[0]


def fresh_venv(folder, wheel):
    run([sys.executable, "-m", "venv", folder])
    python = os.path.join(folder, "bin", "python")
    run([python, "-m", "pip", "install", "-q", wheel])
    listed = run([python, "-m", "pip", "list", "--format=freeze"], capture_output=True).stdout
    installed = {re.split("==| @ ", line)[0].lower().replace("_", "-")
                 for line in listed.split()}
    unexpected = installed - {"ember", "numpy", "ml-dtypes", "pip", "setuptools", "wheel"}
    assert not unexpected, f"the wheel pulled in more than NumPy and ml_dtypes: {unexpected}"
    return python


def check_quickstart(python, cwd):
    out = run([python, "-c", QUICKSTART], capture_output=True, cwd=cwd).stdout
    print(out.strip())


def check_extra_errors(python, cwd):
    for code, extra in EXTRA_PROBES:
        result = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=cwd)
        assert result.returncode != 0, f"{code!r} worked without the '{extra}' extra"
        assert f"ember[{extra}]" in result.stderr, (
            f"{code!r} failed without naming 'ember[{extra}]':\n{result.stderr[-1500:]}")
        print(f"without '{extra}': {result.stderr.strip().splitlines()[-1]}")
    demo = run([python, "-m", "ember.demo", "--epochs", "1", "--out", cwd],
               capture_output=True, cwd=cwd).stdout
    assert demo.count("ember[demo]") == 2, f"the demo did not name its extra twice:\n{demo}"
    print("the demo without 'demo' trains and names the extra for the bar and the plot")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="a folder to keep the dists and the venv in")
    args = parser.parse_args(argv)
    folder = args.keep or tempfile.mkdtemp(prefix="ember_packaging_")
    os.makedirs(folder, exist_ok=True)
    try:
        wheel = build(os.path.join(folder, "dist"))
        python = fresh_venv(os.path.join(folder, "venv"), wheel)
        work = os.path.join(folder, "work")  # outside the checkout: the installed copy is used
        os.makedirs(work, exist_ok=True)
        check_quickstart(python, work)
        check_extra_errors(python, work)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print("packaging: all checks passed")


if __name__ == "__main__":
    main()
