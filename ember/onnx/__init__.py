"""``ember.onnx``: export to ONNX, as ``torch.onnx`` (the TorchScript exporter's interface).

The model is traced by Ember's concrete tracer (the one under ``jit.trace`` and ``export``) and
written through the ``onnx`` package, Ember's optional extra ``onnx`` (``pip install
'ember[onnx]'``), imported only when ``export`` runs."""
from ._export import (DEFAULT_OPSET, OnnxExporterError, OperatorExportTypes,  # noqa: F401
                      TrainingMode, UnsupportedOperatorError, export)

__all__ = ["export", "OnnxExporterError", "UnsupportedOperatorError", "TrainingMode",
           "OperatorExportTypes"]
