"""Type aliases for annotating code written against Ember's API, as ``torch.types``.

``Number``, ``FileLike`` and ``Device`` are the unions torch names (usable in annotations and,
for the tuple ``_Number``, in ``isinstance``). ``Storage`` is, as in torch, the interface a
storage offers, written as a class for annotations: its methods are the names a storage has,
and this class itself holds no memory (each raises NotImplementedError, as torch's do).
"""
import os
from typing import IO, Any, TypeAlias, Union

from ._device import device as _device
from ._dtype import dtype as _dtype

__all__ = ["Number", "Device", "FileLike", "Storage"]

Number: TypeAlias = int | float | bool
# The tuple form, for isinstance(x, _Number).
_Number = (int, float, bool)
FileLike: TypeAlias = Union[str, os.PathLike[str], IO[bytes]]
Device: TypeAlias = _device | str | int | None


class Storage:
    """The storage interface, for annotations."""
    device: _device
    dtype: _dtype

    def __deepcopy__(self, memo: dict) -> "Storage":
        raise NotImplementedError

    def element_size(self) -> int:
        raise NotImplementedError

    def is_shared(self) -> bool:
        raise NotImplementedError

    def share_memory_(self) -> "Storage":
        raise NotImplementedError

    def nbytes(self) -> int:
        raise NotImplementedError

    def cpu(self) -> "Storage":
        raise NotImplementedError

    def data_ptr(self) -> int:
        raise NotImplementedError

    def from_file(self, filename: str, shared: bool = False, nbytes: int = 0) -> "Storage":
        raise NotImplementedError

    def _new_with_file(self, f: Any, element_size: int) -> "Storage":
        raise NotImplementedError
