"""``ember.backends.mps``: torch.backends.mps's queries. Ember has no Metal backend, so MPS is
neither built nor available, and the queries about a Metal device raise saying so."""

__all__ = ["is_available", "is_built", "is_macos13_or_newer", "is_macos_or_newer", "get_name",
           "get_core_count"]


def is_built():
    """False: Ember has no Metal (MPS) backend."""
    return False


def is_available():
    """False: Ember has no Metal (MPS) backend."""
    return False


def is_macos_or_newer(major, minor):
    raise RuntimeError("Cannot execute isOnMacOSorNewer() without MPS backend.")


def is_macos13_or_newer(minor=0):
    return is_macos_or_newer(13, minor)


def get_name():
    raise RuntimeError("MPS is not available: Ember has no Metal (MPS) backend, so there is no "
                       "MPS device to name.")


def get_core_count():
    raise RuntimeError("MPS is not available: Ember has no Metal (MPS) backend, so there is no "
                       "MPS device to count the cores of.")
