"""API coverage: which of PyTorch's public functions and classes Ember has, in every public torch
namespace and submodule.

    python tools/api_coverage.py            # writes docs/api-coverage.md
    python tools/api_coverage.py --check 90 # also exits 1 if torch or torch.Tensor is below 90%

A name counts as covered when Ember's module at torch's path has an attribute of that name (the
op table and the tests check behaviour; this report checks reach). Names that belong to a
feature Ember deliberately leaves out, and whole submodules outside its scope, are listed as
excluded, each with its reason, and do not count against the percentage; everything else
missing is listed by name, including what later work is to build.
"""
import argparse
import importlib
import inspect
import pkgutil
import re
import sys
import types
import warnings
from pathlib import Path

import torch
import torch.nn.functional

import ember

ROOT = Path(__file__).resolve().parent.parent

# (pattern on the name, reason). The first match wins; a name matching none is "in scope".
EXCLUSIONS = [
    (r"^(rename_?|refine_names|align_to|align_as|names|has_names|unflatten_dense_tensors)$",
     "named tensors: a prototype feature in PyTorch itself"),
    (r"^chalf$", "complex32 (chalf): NumPy has no complex dtype of two float16s"),
    (r"^index$", "functorch's first-class dimensions (Tensor.index), a prototype"),
    (r"cudnn_|miopen|mkldnn_|vulkan|_mps_|^is_mps$|^mps$|xpu|hpu|ipu|mtia|xla",
     "bindings to one vendor's kernel library or device (cuDNN/MIOpen/MKL-DNN kernels, Vulkan, "
     "MPS, XPU, HPU, IPU, MTIA, XLA): Ember reaches devices through its backends"),
    (r"^(solve|symeig|eig|lstsq|matrix_rank)$",
     "removed from PyTorch (calling them raises 'deprecated since version 1.9 and is now "
     "removed'); torch.linalg has their successors"),
    (r"^(merge_type_from_type_comment|parse_ir|parse_schema|parse_type_comment|"
     r"unify_type_list|import_ir_module.*|compiled_with_cxx11_abi|classproperty|"
     r"profiler_allow_cudagraph_cupti_lazy_reinit_cuda12|thread_safe_generator)$",
     "TorchScript's IR parser and C++-build internals"),
    (r"^(Optional|assert_int_or_pair|boolean_dispatch|handle_torch_function|"
     r"has_torch_function.*)$",
     "typing and __torch_function__ plumbing that nn.functional happens to export"),
    (r"^native_|^_|_backward$|batch_norm_(elemt|stats|gather|update|backward)|"
     r"^(rnn_tanh|rnn_relu|lstm|gru)(_cell)?$|^segment_reduce$|"
     r"^affine_grid_generator$|^grid_sampler(_2d|_3d)?$|^embedding_renorm_$|"
     r"^feature_dropout_?$|^constant_pad_nd$|^convolution$|"
     r"^frobenius_norm$|^nuclear_norm$|^choose_qparams_optimized$|"
     r"^resolve_neg$|^is_neg$|^_?neg_view$|^alias_copy$|_copy$|_scatter$",
     "ATen kernels PyTorch exposes for its own autograd and layers, deprecated aliases, and "
     "the '*_copy'/'*_scatter' functional variants of views used by its compiler"),
]

# Whole torch submodules outside Ember's scope, with the reason; everything else is reported.
EXCLUDED_MODULES = [
    (r"^torch\.(mps|xpu|mtia|backends\.(mha|mkl|nnpack|opt_einsum|quantized|xeon|kleidiai|"
     r"cusparselt|xnnpack|miopen))(\.|$)",
     "one vendor's device or kernel library, or a switch for a kernel Ember does not use"),
    (r"^torch\.(contrib|nativert|numa|_?C)(\.|$)",
     "PyTorch-internal or experimental runtimes with no user-facing Python API of their own"),
    (r"^torch\.(testing\._internal|utils\.(benchmark\.utils|hipify|bottleneck|jit|model_dump|"
     r"viz|show_pickle|bundled_inputs|mobile_optimizer|cpp_backtrace|cpp_extension_versioner)|"
     r"fx\.experimental|distributed\.(elastic\.(rendezvous|timer|multiprocessing)|"
     r"_composable|_shard|_sharded_tensor|_sharding_spec))(\.|$)",
     "developer tooling of PyTorch's own build, CI and mobile deployment"),
]

def _public_functions(namespace, *, methods=False):
    names = []
    for name in dir(namespace):
        if name.startswith("_") and not (methods and name.startswith("__") and name.endswith("__")):
            continue
        try:
            obj = getattr(namespace, name)
        except Exception:  # some attributes raise on access (deprecated properties)
            continue
        if isinstance(obj, types.ModuleType) or inspect.isclass(obj):
            continue
        if methods:
            if name.startswith("__"):
                continue  # protocol methods are checked by the op table, not by name
            names.append(name)
        elif callable(obj):
            names.append(name)
    return sorted(set(names))


def _public_names(module):
    """The functions and classes a torch submodule offers: its ``__all__`` where it declares one,
    else the public callables it defines itself (not what it merely imports from elsewhere)."""
    declared = getattr(module, "__all__", None)
    if declared is not None:
        names = []
        for name in declared:
            obj = getattr(module, name, None)
            if obj is not None and not isinstance(obj, types.ModuleType):
                names.append(name)
        return sorted(set(names))
    names = []
    for name, obj in vars(module).items():
        if name.startswith("_") or isinstance(obj, types.ModuleType) or not callable(obj):
            continue
        if str(getattr(obj, "__module__", "")).startswith(module.__name__):
            names.append(name)
    return sorted(names)


def _exclusion(name):
    for pattern, reason in EXCLUSIONS:
        if re.search(pattern, name):
            return reason
    return None


def _module_exclusion(path):
    for pattern, reason in EXCLUDED_MODULES:
        if re.search(pattern, path):
            return reason
    return None


def _ember_module(path):
    """Ember's module at torch's path (``torch.nn.utils.rnn`` -> ``ember.nn.utils.rnn``), or None."""
    try:
        return importlib.import_module("ember" + path[len("torch"):])
    except ImportError:
        return None


def _torch_submodules(max_depth):
    """Every public torch submodule up to ``max_depth`` dots (``torch.nn.utils`` has 2), each
    importable here; private parts (a name starting with '_') are not public API."""
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(torch.__path__, "torch.", onerror=lambda name: None):
            parts = info.name.split(".")
            if len(parts) - 1 > max_depth or any(p.startswith("_") for p in parts[1:]):
                continue
            try:
                found.append(importlib.import_module(info.name))
            except Exception:  # needs an optional library (onnxscript, triton…): not here
                continue
    return found


def _namespaces(max_depth):
    import ember.nn.functional  # noqa: F401
    pairs = [
        ("torch", torch, ember, "functions"),
        ("torch.Tensor", torch.Tensor, ember.Tensor, "methods"),
        ("torch.nn.functional", torch.nn.functional, ember.nn.functional, "functions"),
    ]
    for sub in ("linalg", "special", "fft"):
        pairs.append((f"torch.{sub}", getattr(torch, sub), getattr(ember, sub, None),
                      "functions"))
    listed = {label for label, *_ in pairs}
    for module in _torch_submodules(max_depth):
        if module.__name__ not in listed:
            pairs.append((module.__name__, module, None, "names"))
    return pairs


def coverage(max_depth=3):
    rows = []
    for label, theirs, ours, kind in _namespaces(max_depth):
        module_reason = _module_exclusion(label)
        if kind == "names":
            if module_reason:
                rows.append({"namespace": label, "excluded_module": module_reason})
                continue
            names = _public_names(theirs)
            if not names:
                continue  # a module of types or constants only: nothing to count
            ours = _ember_module(label)
        else:
            names = _public_functions(theirs, methods=kind == "methods")
        have, missing, excluded = [], [], {}
        for name in names:
            if ours is not None and _has(ours, name):
                have.append(name)
                continue
            reason = _exclusion(name)
            if reason:
                excluded.setdefault(reason, []).append(name)
            else:
                missing.append(name)
        in_scope = len(have) + len(missing)
        rows.append({"namespace": label, "have": have, "missing": missing, "excluded": excluded,
                     "module_missing": ours is None,
                     "percent": 100.0 * len(have) / in_scope if in_scope else 100.0})
    return rows


def _has(namespace, name):
    try:
        return hasattr(namespace, name)
    except Exception:  # a hasattr that raises is itself a defect, but not a covered name
        return False


def _top_level(label):
    parts = label.split(".")
    return ".".join(parts[:2])


def _summary(rows):
    """One row per top-level namespace (``torch.nn`` with all its submodules, …)."""
    groups = {}
    for row in rows:
        if "excluded_module" in row:
            continue
        group = groups.setdefault(_top_level(row["namespace"]), [0, 0, 0])
        group[0] += len(row["have"])
        group[1] += len(row["missing"])
        group[2] += 1
    return groups


def _markdown(rows):
    lines = [
        "# API coverage",
        "",
        "Which public functions and classes of PyTorch "
        f"{torch.__version__.split('+')[0]} Ember {ember.__version__} provides, by name, in every "
        "public torch namespace and submodule (three levels down: `torch.nn.utils.rnn`). Generated by "
        "`python tools/api_coverage.py`; the op table (`tests/opinfo/`) and the tests check that "
        "what is here behaves like PyTorch. A name counts as provided when Ember's module at "
        "torch's path has it.",
        "",
        "The first rows count functions (and `Tensor` methods); submodule rows count the "
        "functions and classes each module declares in `__all__` (or defines itself). Names "
        "belonging to the few features Ember deliberately leaves out are excluded from the "
        "percentage and listed with the reason; so are whole modules outside its scope, listed "
        "at the end. Everything else that is missing counts against the percentage, including "
        "the namespaces later work will build (`amp`, `jit`, `onnx`, `profiler`, `func`, "
        "`ao.quantization`…).",
        "",
        "## Summary by namespace",
        "",
        "| Namespace (with its submodules) | Modules | Provided | Missing | Coverage |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, (have, missing, count) in sorted(_summary(rows).items()):
        total = have + missing
        percent = 100.0 * have / total if total else 100.0
        lines.append(f"| `{name}` | {count} | {have} | {missing} | {percent:.1f}% |")
    lines += ["", "## By module", "",
              "| Module | Provided | Missing | Excluded | Coverage |",
              "| --- | --- | --- | --- | --- |"]
    for row in rows:
        if "excluded_module" in row:
            continue
        excluded = sum(len(v) for v in row["excluded"].values())
        absent = " (no such module in Ember)" if row.get("module_missing") else ""
        lines.append(f"| `{row['namespace']}`{absent} | {len(row['have'])} | "
                     f"{len(row['missing'])} | {excluded} | {row['percent']:.1f}% |")
    for row in rows:
        if "excluded_module" in row or not (row["missing"] or row["excluded"]):
            continue
        lines += ["", f"### `{row['namespace']}`", ""]
        if row["missing"]:
            lines.append(f"Missing ({len(row['missing'])}): " +
                         ", ".join(f"`{n}`" for n in row["missing"]))
        for reason, names in row["excluded"].items():
            lines += ["", f"Excluded — {reason} ({len(names)}): " +
                      ", ".join(f"`{n}`" for n in names)]
    excluded_modules = [r for r in rows if "excluded_module" in r]
    if excluded_modules:
        lines += ["", "## Modules outside Ember's scope", ""]
        by_reason = {}
        for row in excluded_modules:
            by_reason.setdefault(row["excluded_module"], []).append(row["namespace"])
        for reason, names in by_reason.items():
            lines.append(f"- {reason}: " + ", ".join(f"`{n}`" for n in names))
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "api-coverage.md"))
    parser.add_argument("--depth", type=int, default=3,
                        help="how many dots below torch to report submodules (default 3: "
                             "torch.nn.utils.rnn)")
    parser.add_argument("--check", type=float, default=None,
                        help="exit 1 if torch or torch.Tensor coverage is below this percent")
    args = parser.parse_args(argv)
    rows = coverage(args.depth)
    out = Path(args.out)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(_markdown(rows))
    tmp.replace(out)
    for name, (have, missing, count) in sorted(_summary(rows).items()):
        total = have + missing
        print(f"{name:28s} {100.0 * have / total if total else 100.0:5.1f}%  "
              f"({have} provided, {missing} missing, {count} modules)")
    if args.check is not None:
        low = [r for r in rows if r["namespace"] in ("torch", "torch.Tensor")
               and r["percent"] < args.check]
        return 1 if low else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
