"""``ember.device``: a device type plus an optional index, parsed like PyTorch's."""

__all__ = ["device"]


class device:
    __slots__ = ("type", "index", "_str")

    def __new__(cls, type_or_str, index=None):
        if isinstance(type_or_str, device):
            if index is not None:
                raise TypeError("device(): cannot pass an index together with a device")
            return type_or_str
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            # ember.device(0) means the first accelerator, as in PyTorch.
            type_or_str, index = "cuda", type_or_str
        if not isinstance(type_or_str, str):
            raise TypeError(f"device() received an invalid combination of arguments - got ({type(type_or_str).__name__})")
        key = (type_or_str, index)
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        text = type_or_str.strip()
        dev_type, sep, idx_text = text.partition(":")
        if sep:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {text}")
            if not idx_text.isdigit():
                raise RuntimeError(f"Invalid device string: '{text}'")
            index = int(idx_text)
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index}")
        from .backends import is_known_device_type
        if not is_known_device_type(dev_type):
            raise RuntimeError(
                f"Expected one of cpu, cuda or a registered backend's device type at start of device string: {text}")
        text = dev_type if index is None else f"{dev_type}:{index}"
        self = _CACHE.get(text)
        if self is None:
            self = object.__new__(cls)
            self.type = dev_type
            self.index = index
            self._str = text
            _CACHE[text] = self
        _CACHE[key] = self
        return self

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self._str

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except RuntimeError:
                return False
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self._str,))

    def __enter__(self):
        # `with ember.device("cuda"):` makes it the default device for factory functions.
        from . import _tensor
        _DEFAULT_STACK.append(_tensor._default_device)
        _tensor._default_device = self
        return self

    def __exit__(self, *exc):
        from . import _tensor
        _tensor._default_device = _DEFAULT_STACK.pop()


_CACHE = {}
_DEFAULT_STACK = []
