"""The lever behind ``numpy_backend._few_rows_times_transposed``: a Linear's product ``x @ W.T``
at a few rows, as NumPy hands it to OpenBLAS, against the same product written
``(W @ x.T).T`` (then made C-contiguous, as Ember returns it).

    python benchmarks/blas_small_batch.py

Prints one line per weight shape: rows ``M: plain / rewritten`` in microseconds (best of 15
repeats of 100 calls, this process's BLAS threads as set). The rewrite is a choice about
OpenBLAS; with MKL computing the products (``EMBER_BLAS``) Ember does not make it.
"""
import timeit

import numpy as np


def main():
    try:
        import threadpoolctl
        blas = ", ".join(f"{i['internal_api']} {i.get('version')} ({i.get('num_threads')} "
                         "threads)" for i in threadpoolctl.threadpool_info()
                         if i.get("user_api") == "blas")
    except ImportError:
        blas = "unknown (threadpoolctl is not installed: pip install 'ember[bench]')"
    print(f"BLAS: {blas}")
    rng = np.random.default_rng(0)
    for k, n in ((784, 512), (512, 512), (128, 512), (256, 1024), (1024, 4096), (512, 10)):
        w = rng.standard_normal((n, k), dtype=np.float32)
        row = []
        for m in (2, 4, 8, 16, 32, 48, 64, 128):
            x = rng.standard_normal((m, k), dtype=np.float32)
            plain = min(timeit.repeat(lambda: np.matmul(x, w.T), number=100, repeat=15)) / 100
            rewritten = min(timeit.repeat(
                lambda: np.ascontiguousarray(np.matmul(w, x.T).T), number=100, repeat=15)) / 100
            row.append(f"{m}: {plain * 1e6:.0f} / {rewritten * 1e6:.0f}")
        print(f"K={k} N={n}  " + "  ".join(row))


if __name__ == "__main__":
    main()
