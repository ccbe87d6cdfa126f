"""``TorchVersion``: the version string that also compares as a version, as torch's does.

``ember.__version__ >= "0.1"`` and ``ember.__version__ > (0, 0, 9)`` compare release numbers
(PEP 440: ``1.10`` is after ``1.9``; pre-releases ``a``/``b``/``rc`` come before the release,
``.post`` after it, ``.dev`` before everything of the same release), while the object stays a
``str`` for code that prints or splits it. A string that is no version (``"parrot"``) compares
as a plain string, as in torch.
"""
import re
from collections.abc import Iterable

from .version import __version__ as _internal_version

__all__ = ["TorchVersion", "InvalidVersion"]

_PATTERN_TEXT = (
    r"^\s*v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d+)?)?"
    r"(?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?"
    r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$")
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_INFINITY = float("inf")


class InvalidVersion(ValueError):
    """A string that is not a PEP 440 version."""


def _sort_key(text):
    """The PEP 440 ordering key of version ``text``."""
    # re caches the compiled pattern: compiled on the first comparison, not at import
    match = re.match(_PATTERN_TEXT, str(text), re.IGNORECASE)
    if match is None:
        raise InvalidVersion(f"Invalid version: {text!r}")
    release = [int(part) for part in match["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()  # 1.0 == 1.0.0
    pre = (_PRE_RANK[match["pre_l"].lower()], int(match["pre_n"] or 0)) if match["pre_l"] else None
    post_number = match["post_n1"] or match["post_n2"]
    post = int(post_number or 0) if (match["post_l"] or match["post_n1"]) else None
    dev = int(match["dev_n"] or 0) if match["dev_l"] else None
    if pre is None and post is None and dev is not None:
        pre_key = (-_INFINITY, 0)  # 1.0.dev0 sorts before 1.0a0
    elif pre is None:
        pre_key = (_INFINITY, 0)
    else:
        pre_key = pre
    post_key = (-_INFINITY,) if post is None else (post,)
    dev_key = (_INFINITY,) if dev is None else (dev,)
    local = match["local"]
    local_key = () if local is None else tuple(
        (1, int(part), "") if part.isdigit() else (0, 0, part.lower())
        for part in re.split(r"[-_.]", local))
    return (int(match["epoch"] or 0), tuple(release), pre_key, post_key, dev_key, local_key)


def _version_text(other):
    if isinstance(other, str):
        return other
    if isinstance(other, Iterable):
        # (1, 20) -> "1.20", (1, 20, 1) -> "1.20.1"
        return ".".join(str(item) for item in other)
    if type(other).__name__ == "Version":  # packaging.version.Version prints its version
        return str(other)
    raise InvalidVersion(other)


class TorchVersion(str):
    """A ``str`` that compares to version strings, tuples of numbers and ``Version`` objects by
    PEP 440 version order."""
    __slots__ = ()

    def _compare(self, other, method):
        try:
            mine, theirs = _sort_key(self), _sort_key(_version_text(other))
        except InvalidVersion:
            return getattr(str, method)(self, other)  # e.g. 'parrot': plain string order
        return getattr(mine, method)(theirs)

    def __gt__(self, other):
        return self._compare(other, "__gt__")

    def __lt__(self, other):
        return self._compare(other, "__lt__")

    def __ge__(self, other):
        return self._compare(other, "__ge__")

    def __le__(self, other):
        return self._compare(other, "__le__")

    def __eq__(self, other):
        return self._compare(other, "__eq__")

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = str.__hash__


__version__ = TorchVersion(_internal_version)
