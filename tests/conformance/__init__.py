"""The CuPy conformance device: a NumPy-backed stand-in for CuPy 14.2 that refuses what CuPy lacks."""
