"""All op rows, gathered from the per-family tables."""
import importlib

_FAMILIES = ["elementwise", "reduce", "shape", "indexing", "matmul", "creation",
             # the op catalogue: one table per ember/ops/ family file
             "sorting", "special", "spectral", "complex", "cumulative", "linalg",
             # the layers' ops, called through nn.functional and torch's top-level names
             "conv", "pooling", "normalization", "activation", "recurrent", "loss",
             "linear", "embedding", "distance", "dropout", "attention", "sampling"]
ALL_OPS = []
for _family in _FAMILIES:
    # A family listed here without its table is an error: skipping it would hide a missing test.
    ALL_OPS.extend(importlib.import_module(f"opinfo.ops_{_family}").OPS)
