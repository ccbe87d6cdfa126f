"""All op rows, gathered from the per-family tables."""
import importlib

_FAMILIES = ["elementwise", "reduce", "shape", "indexing", "linalg", "creation",
             # the op catalogue: one table per ember/ops/ family file
             "sorting", "special", "spectral", "complex", "cumulative", "extra", "decompositions", "tensor_api"]
ALL_OPS = []
for _family in _FAMILIES:
    try:
        _module = importlib.import_module(f"opinfo.ops_{_family}")
    except ModuleNotFoundError as exc:
        if exc.name != f"opinfo.ops_{_family}":
            raise
        continue
    ALL_OPS.extend(_module.OPS)
