"""``ember.layout``: how a tensor's elements are stored, as ``torch.layout``.

``strided`` is the ordinary dense array. ``sparse_coo`` and ``sparse_csr`` are implemented in
``ember.sparse``; the other sparse layouts exist as names (so code that compares layouts runs)
but Ember builds no tensors with them and says so.
"""

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
           "sparse_bsc"]


class _NamedSingleton:
    """torch's enum-like types (``layout`` here, ``memory_format``): each value is one instance,
    shown and pickled by the name it has in its class's module (which must define that name)."""
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"ember.{self._name}"

    def __reduce__(self):
        return self._name  # singletons: unpickle as the module attribute


class layout(_NamedSingleton):
    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")

UNSUPPORTED = (sparse_csc, sparse_bsr, sparse_bsc)


def check_supported(value):
    if value in UNSUPPORTED:
        raise NotImplementedError(
            f"layout {value} is not supported by Ember: its sparse tensors are {sparse_coo} and "
            f"{sparse_csr}")
