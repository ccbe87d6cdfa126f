"""The documentation site builds with ``mkdocs build --strict`` (broken links and missing pages
fail it), and the API coverage page is generated from the current code."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_mkdocs_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                             "-d", str(tmp_path / "site")], cwd=ROOT, capture_output=True,
                            text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "pytorch-users" / "index.html").exists()


def test_api_coverage_tool_runs(tmp_path):
    out = tmp_path / "coverage.md"
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "api_coverage.py"), "--out",
                             str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    for namespace in ("torch", "torch.Tensor", "torch.nn.functional", "torch.linalg",
                      "torch.special", "torch.fft", "torch.amp", "torch.cuda",
                      "torch.distributed", "torch.utils.data", "torch.nn.utils.rnn",
                      "torch.optim.lr_scheduler", "torch.autograd.functional"):
        assert f"| `{namespace}`" in text, namespace
