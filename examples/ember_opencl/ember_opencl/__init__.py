"""Ember on OpenCL: ``pip install -e examples/ember_opencl``, then ``device="opencl"``.

Ember finds the device through this package's ``ember.backends`` entry point the first time a
program names "opencl"; importing ``ember_opencl`` registers it too.
"""
from ember.backends import is_known_device_type, register_backend

from .backend import OpenCLBackend

__all__ = ["OpenCLBackend"]

if not is_known_device_type("opencl", load_entry_points=False):
    register_backend("opencl", OpenCLBackend)
