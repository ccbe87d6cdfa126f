"""How long ``import ember`` takes in a new process, against ``import torch``.

    python benchmarks/import_time.py                 # 7 alternating rounds, Markdown table
    python benchmarks/import_time.py --rounds 3 --json OUT.json

Each sample is a fresh interpreter running ``python -X importtime -c "import NAME"``; the figure
is the cumulative time CPython reports for the top-level package, so interpreter start-up is not
counted (for either framework). The frameworks alternate so that drift of the machine hits both.

Two states of the bytecode cache are measured, because they differ by more than the goal:
- ``bytecode cached``: every module already compiled to ``__pycache__``, as after a wheel install
  (pip compiles at install time) or after the first import anywhere bytecode may be written;
- ``from source``: no bytecode at all, as in an editable install run with
  ``PYTHONDONTWRITEBYTECODE=1`` — every import compiles the module first.
The second state is made by copying the package into a temporary folder without
``__pycache__`` and importing it from there with bytecode writing switched off.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def import_seconds(module, path_dir=None, write_bytecode=True):
    env = dict(os.environ)
    if path_dir is not None:
        env["PYTHONPATH"] = path_dir + os.pathsep + env.get("PYTHONPATH", "")
    if write_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                            env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True,
                            check=True)
    # the line for the top-level package is the last one naming it without indentation
    for line in reversed(result.stderr.splitlines()):
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S+)$", line)
        if match and match.group(2) == module:
            return int(match.group(1)) / 1e6
    raise RuntimeError(f"no import time line for {module}:\n{result.stderr[-2000:]}")


def _package_copy(package, with_bytecode):
    """A temporary folder holding a copy of ``package``; compiled first if ``with_bytecode``."""
    folder = tempfile.mkdtemp(prefix="ember_import_")
    source = os.path.dirname(__import__(package).__file__)
    shutil.copytree(source, os.path.join(folder, package),
                    ignore=shutil.ignore_patterns("__pycache__"))
    if with_bytecode:
        subprocess.run([sys.executable, "-m", "compileall", "-q", folder], check=True,
                       stdout=subprocess.DEVNULL)
    return folder


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", help="also write the samples to this file")
    args = parser.parse_args(argv)

    cached, source = _package_copy("ember", True), _package_copy("ember", False)
    try:
        import torch  # noqa: F401  (compiles torch's bytecode once if it is not yet cached)
        has_torch = True
    except ImportError:
        has_torch = False
    samples = {"ember, bytecode cached": [], "ember, from source": [], "torch": []}
    for _ in range(args.rounds):
        samples["ember, bytecode cached"].append(import_seconds("ember", cached))
        if has_torch:
            samples["torch"].append(import_seconds("torch"))
        samples["ember, from source"].append(import_seconds("ember", source, write_bytecode=False))
    shutil.rmtree(cached)
    shutil.rmtree(source)

    import ml_dtypes
    import numpy
    print(f"Python {sys.version.split()[0]}, NumPy {numpy.__version__}, "
          f"ml_dtypes {ml_dtypes.__version__}, {args.rounds} alternating rounds\n")
    print("| import | median | min | max |")
    print("| --- | --- | --- | --- |")
    for name, values in samples.items():
        if values:
            print(f"| `{name}` | {statistics.median(values):.3f} s | {min(values):.3f} s | "
                  f"{max(values):.3f} s |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(samples, f, indent=1)


if __name__ == "__main__":
    main()
