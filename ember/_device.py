"""``ember.device``: a device type plus an optional index, parsed like PyTorch's."""

__all__ = ["device"]


class device:
    __slots__ = ("type", "index", "_str")

    def __new__(cls, type, index=None):  # noqa: A002  (PyTorch's keyword name)
        type_or_str = type
        if isinstance(type_or_str, device):
            if index is not None:
                raise TypeError("device(): cannot pass an index together with a device")
            return type_or_str
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            # ember.device(0) means the first accelerator, as in PyTorch.
            type_or_str, index = "cuda", type_or_str
        if not isinstance(type_or_str, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({type_or_str.__class__.__name__}), but expected one of: "
                            f"(ember.device device) or (str type, int index = -1)")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            raise TypeError(f"device(): argument 'index' (position 2) must be int, not "
                            f"{index.__class__.__name__}")
        key = (type_or_str, index)
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        index = _parse_index(type_or_str, index)
        dev_type = type_or_str.partition(":")[0]
        from .backends import is_known_device_type
        if not is_known_device_type(dev_type):
            raise RuntimeError(f"Expected one of cpu, cuda or a registered backend's device type "
                               f"at start of device string: {type_or_str}")
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
        # As in PyTorch, a device never equals a string: compare with ember.device("cpu").
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self._str,))

    def __enter__(self):
        # `with ember.device("cuda"):` makes it the default device for factory functions.
        global _default_device
        _DEFAULT_STACK.append(_default_device)
        _default_device = self
        return self

    def __exit__(self, *exc):
        global _default_device
        _default_device = _DEFAULT_STACK.pop()


def _parse_index(text, index):
    """The device index written in ``text`` ("cuda:1") or passed separately, validated."""
    if not text:
        raise RuntimeError("Device string must not be empty")
    dev_type, sep, idx_text = text.partition(":")
    if text != text.strip() or (sep and not _is_canonical_index(idx_text)):
        raise RuntimeError(f"Invalid device string: '{text}'")
    if sep:
        if index is not None:
            raise RuntimeError(f"type (string) must not include an index because index was "
                               f"passed explicitly: {text}")
        index = int(idx_text)
    if index is not None and index < 0:
        raise RuntimeError("Device index must not be negative")
    return index


def _is_canonical_index(text):
    return text.isdigit() and text.isascii() and (text == "0" or not text.startswith("0"))


_CACHE = {}
_DEFAULT_STACK = []
# Where factory functions put a tensor given no device: set by ember.set_default_device and,
# for a block, by ``with ember.device(...)``.
_default_device = device("cpu")
