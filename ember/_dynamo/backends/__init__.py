"""Compiler backends of ``ember.compile``: the registry (``registry.py``) and the debugging
backends (``debugging.py``)."""
