"""Which BLAS the CPU backend's products use (``ember/backends/_mkl.py``): MKL's gemm where the
``mkl`` wheel is installed and chosen, NumPy's OpenBLAS otherwise, with the same results. Each
choice runs in a child process, since the choice is made once per process."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

_CHILD = r"""
import json, numpy as np, ember
from ember.backends import _mkl
rng = np.random.default_rng(0)
out = {"active": _mkl.active()}
a = rng.standard_normal((33, 17)).astype(np.float32)
b = rng.standard_normal((17, 9)).astype(np.float32)
out["mm"] = (ember.from_numpy(a) @ ember.from_numpy(b)).tolist()
out["mm_t"] = (ember.from_numpy(a.T.copy()).T @ ember.from_numpy(b)).tolist()
out["mm64"] = (ember.from_numpy(a.astype(np.float64)) @ ember.from_numpy(b.astype(np.float64))).tolist()
ember.manual_seed(0)
lstm = ember.nn.LSTM(6, 5, proj_size=3)
x = ember.from_numpy(rng.standard_normal((4, 2, 6)).astype(np.float32))
y, _ = lstm(x)
y.sum().backward()
out["lstm"] = y.tolist()
out["lstm_grad"] = lstm.weight_hh_l0.grad.tolist()
from threadpoolctl import threadpool_info
out["pools"] = {p["internal_api"]: p["num_threads"] for p in threadpool_info()
                if p["user_api"] == "blas"}
ember.set_num_threads(1)
out["threads_after_set_1"] = ember.get_num_threads()
print(json.dumps(out))
"""


def _run(choice):
    env = dict(os.environ, EMBER_BLAS=choice)
    done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _mkl_installed():
    from ember.backends import _mkl
    return any(True for _ in _mkl._library_paths())


def test_openblas_choice_never_uses_mkl():
    assert _run("openblas")["active"] is False


def test_mkl_and_openblas_give_the_same_products_and_lstm_gradients():
    openblas = _run("openblas")
    if not _mkl_installed():
        # Without the wheel, asking for MKL must fall back to NumPy's products, not fail.
        mkl = _run("mkl")
        assert mkl["active"] is False
    else:
        mkl = _run("mkl")
        assert mkl["active"] is True
        # one spinning pool, not two: OpenBLAS is held at one thread while MKL computes
        assert mkl["pools"]["openblas"] == 1
        assert mkl["threads_after_set_1"] == 1
    for key in ("mm", "mm_t", "mm64", "lstm", "lstm_grad"):
        np.testing.assert_allclose(mkl[key], openblas[key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_a_bad_choice_is_a_clear_error():
    done = subprocess.run([sys.executable, "-c", "import ember; ember.ones(2, 2) @ ember.ones(2, 2)"],
                          env=dict(os.environ, EMBER_BLAS="atlas"), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "EMBER_BLAS must be 'auto', 'mkl' or 'openblas', not 'atlas'" in done.stderr
