"""API coverage: which of PyTorch's public functions Ember has, namespace by namespace.

    python tools/api_coverage.py            # writes docs/api-coverage.md
    python tools/api_coverage.py --check 90 # also exits 1 if torch or torch.Tensor is below 90%

A name counts as covered when Ember's namespace has an attribute of that name (the op table
checks behaviour; this report checks reach). Functions that belong to a feature Ember
deliberately leaves out are listed as excluded, each with its reason,
and do not count against the percentage; everything else missing is listed by name.
"""
import argparse
import inspect
import re
import sys
import types
from pathlib import Path

import torch
import torch.nn.functional

import ember

ROOT = Path(__file__).resolve().parent.parent

# (pattern on the name, reason). The first match wins; a name matching none is "in scope".
EXCLUSIONS = [
    (r"sparse|^to_sparse|_csr|_csc|_bsr|_bsc|crow_|ccol_|col_indices|row_indices|^indices|"
     r"^values$|coalesce|^smm$|^sspaddmm$|^hspmm$|^dsmm$|^hsmm$|^saddmm$|sparse_dim|dense_dim|"
     r"^nnz$|^to_dense$|^is_coalesced$|_nnz",
     "sparse tensors: Ember has only the strided layout"),
    (r"quantiz|^q_|^int_repr$|qparams|^qscheme$|fbgemm|fake_quant|^quantized_|_per_channel|"
     r"_per_tensor|^empty_quantized$",
     "quantized tensors: quantization is a later milestone (the roadmap's quantization work)"),
    (r"^rename_?$|refine_names|align_to|align_as|^names$|^has_names$|unflatten_dense",
     "named tensors: a prototype feature in PyTorch itself"),
    (r"^chalf$", "complex32 (chalf): NumPy has no complex dtype of two float16s"),
    (r"^index$", "functorch's first-class dimensions (Tensor.index), a prototype"),
    (r"cudnn|miopen|mkldnn|vulkan|^mps|xpu|hpu|ipu|mtia|xla|^is_cuda$|^cuda$|nested|padded_tensor|"
     r"^pin_memory$|^is_pinned$|^record_stream$|^share_memory_$|^is_shared$|_autocast|"
     r"^autocast|^set_autocast|^is_autocast|^clear_autocast",
     "device-library bindings (cuDNN, MKL-DNN, MPS, XLA…) and device memory management: Ember "
     "reaches devices through its backends; CUDA arrives with the CuPy backend"),
    (r"^(compile|compiled_with_cxx11_abi|cond|fork|wait|jit|import_ir_module.*|vmap|"
     r"while_loop|export|_?dynamo|get_file_path|from_file|save|load|is_distributed|"
     r"set_flush_denormal|init_num_threads|get_num_interop_threads|set_num_interop_threads|"
     r"classproperty|sym_.*|unravel_index_.*|use_deterministic_algorithms|"
     r"are_deterministic_algorithms_enabled|is_deterministic_algorithms_warn_only_enabled|"
     r"get_deterministic_debug_mode|set_deterministic_debug_mode|get_float32_matmul_precision|"
     r"set_float32_matmul_precision|is_warn_always_enabled|set_warn_always|typename|"
     r"get_device_module|hash_tensor|lobpcg|pca_lowrank|svd_lowrank|lu_unpack|"
     r"module_load|storage.*|untyped_storage|_typed_storage|set_$|resize_as_sparse_|"
     r"is_set_to|data_ptr|element_size|nbytes|itemsize|apply_|map_|map2_|new|"
     r"dim_order|is_nonzero|smm|ndimension|nelement)$",
     "compiler, TorchScript, threading internals and storage-level APIs outside the tensor "
     "library's scope"),
    (r"^(solve|symeig|eig|lstsq|matrix_rank)$",
     "removed from PyTorch (calling them raises 'deprecated since version 1.9 and is now "
     "removed'); torch.linalg has their successors"),
    (r"^(merge_type_from_type_comment|parse_ir|parse_schema|parse_type_comment|"
     r"unify_type_list|prepare_multiprocessing_environment|profiler_.*|thread_safe_generator|"
     r"set_default_tensor_type|norm_except_dim|slice_inverse|nonzero_static|resize_as_|"
     r"can_cast_.*)$",
     "TorchScript/compiler and profiler internals, and the deprecated default-tensor-type "
     "switch"),
    (r"^(Optional|assert_int_or_pair|boolean_dispatch|handle_torch_function|"
     r"has_torch_function.*)$",
     "typing and __torch_function__ plumbing that nn.functional happens to export"),
    (r"^(grouped_mm|scaled_mm|scaled_grouped_mm)$",
     "low-precision (float8) GPU matrix-product kernels"),
    (r"^native_|^_|_backward|_forward$|batch_norm_(elemt|stats|gather|update|backward)|"
     r"^(rnn_tanh|rnn_relu|lstm|gru)(_cell)?$|^quantized|^fused_|^segment_reduce$|"
     r"^affine_grid_generator$|^grid_sampler(_2d|_3d)?$|^embedding_renorm_$|"
     r"^embedding_bag$|^feature_dropout_?$|^constant_pad_nd$|^convolution$|"
     r"^frobenius_norm$|^nuclear_norm$|^choose_qparams_optimized$|"
     r"^resolve_neg$|^is_neg$|^_?neg_view$|^alias_copy$|_copy$|_scatter$",
     "ATen kernels PyTorch exposes for its own autograd and layers, deprecated aliases, and "
     "the '*_copy'/'*_scatter' functional variants of views used by its compiler"),
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


def _exclusion(name):
    for pattern, reason in EXCLUSIONS:
        if re.search(pattern, name):
            return reason
    return None


def _namespaces():
    import ember.nn.functional  # noqa: F401
    pairs = [
        ("torch", torch, ember, False),
        ("torch.Tensor", torch.Tensor, ember.Tensor, True),
        ("torch.nn.functional", torch.nn.functional, ember.nn.functional, False),
    ]
    for sub in ("linalg", "special", "fft"):
        pairs.append((f"torch.{sub}", getattr(torch, sub), getattr(ember, sub, None), False))
    return pairs


def coverage():
    rows = []
    for label, theirs, ours, methods in _namespaces():
        names = _public_functions(theirs, methods=methods)
        have, missing, excluded = [], [], {}
        for name in names:
            if ours is not None and hasattr(ours, name):
                have.append(name)
                continue
            reason = _exclusion(name)
            if reason:
                excluded.setdefault(reason, []).append(name)
            else:
                missing.append(name)
        in_scope = len(have) + len(missing)
        rows.append({"namespace": label, "have": have, "missing": missing, "excluded": excluded,
                     "percent": 100.0 * len(have) / in_scope if in_scope else 100.0})
    return rows


def _markdown(rows):
    lines = [
        "# API coverage",
        "",
        "Which public functions of PyTorch "
        f"{torch.__version__.split('+')[0]} Ember {ember.__version__} provides, by name. "
        "Generated by `python tools/api_coverage.py`; the op table (`tests/opinfo/`) checks "
        "that what is here behaves like PyTorch.",
        "",
        "Functions belonging to features Ember deliberately leaves "
        "out are excluded from the percentage and listed below with the reason.",
        "",
        "| Namespace | Provided | Missing | Excluded | Coverage |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        excluded = sum(len(v) for v in row["excluded"].values())
        lines.append(f"| `{row['namespace']}` | {len(row['have'])} | {len(row['missing'])} | "
                     f"{excluded} | {row['percent']:.1f}% |")
    for row in rows:
        lines += ["", f"## `{row['namespace']}`", ""]
        if row["missing"]:
            lines.append(f"Missing ({len(row['missing'])}): " +
                         ", ".join(f"`{n}`" for n in row["missing"]))
        else:
            lines.append("Nothing missing.")
        for reason, names in row["excluded"].items():
            lines += ["", f"Excluded — {reason} ({len(names)}): " +
                      ", ".join(f"`{n}`" for n in names)]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "api-coverage.md"))
    parser.add_argument("--check", type=float, default=None,
                        help="exit 1 if torch or torch.Tensor coverage is below this percent")
    args = parser.parse_args(argv)
    rows = coverage()
    out = Path(args.out)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(_markdown(rows))
    tmp.replace(out)
    for row in rows:
        print(f"{row['namespace']:22s} {row['percent']:5.1f}%  ({len(row['have'])} provided, "
              f"{len(row['missing'])} missing)")
    if args.check is not None:
        low = [r for r in rows if r["namespace"] in ("torch", "torch.Tensor")
               and r["percent"] < args.check]
        return 1 if low else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
