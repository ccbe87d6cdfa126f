"""Facts about this build of Ember, under the names of ``torch.version``.

Ember is pure Python on NumPy: it has no compiled debug build and no CUDA or ROCm toolkit it
was built against, so ``debug`` is False and ``cuda``/``hip``/``rocm``/``xpu`` are None (a CUDA
device, where present, is reached at run time through CuPy). ``git_version`` is the commit of
the source checkout Ember is imported from, or ``"Unknown"`` for an installed copy without its
git metadata, as torch reports when it was built outside git.
"""
import os

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

__version__ = "0.1.0"
debug = False
cuda = None
hip = None
rocm = None
xpu = None


def _git_commit():
    """The commit HEAD names in the checkout above this package, read from .git's files (no
    git process is started)."""
    git_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".git")
    try:
        if os.path.isfile(git_dir):  # a worktree: ".git" holds "gitdir: <path>"
            with open(git_dir) as f:
                git_dir = os.path.join(os.path.dirname(git_dir), f.read().split(":", 1)[1].strip())
        with open(os.path.join(git_dir, "HEAD")) as f:
            head = f.read().strip()
        if not head.startswith("ref:"):
            return head  # a detached HEAD holds the commit itself
        ref = head.split(":", 1)[1].strip()
        ref_path = os.path.join(git_dir, ref)
        if not os.path.exists(ref_path):
            common = os.path.join(git_dir, "commondir")
            if os.path.exists(common):
                with open(common) as f:
                    git_dir = os.path.join(git_dir, f.read().strip())
                ref_path = os.path.join(git_dir, ref)
        if os.path.exists(ref_path):
            with open(ref_path) as f:
                return f.read().strip()
        with open(os.path.join(git_dir, "packed-refs")) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1] == ref:
                    return parts[0]
    except (OSError, IndexError):
        pass
    return "Unknown"


git_version = _git_commit()
