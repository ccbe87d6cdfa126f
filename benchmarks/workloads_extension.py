"""C++ extension workloads: a fused custom op against the Ember ops it replaces.

``fused_bias_gelu_ext`` runs ``examples/fused_bias_gelu.py``'s operator on Ember: ``gelu(x +
bias)`` and its backward as one C++ loop each (``load_inline``, registered with
``ember.library.custom_op``). ``bias_gelu_composed`` is the same step written as Ember ops
(``F.gelu(x + bias)``: an add, a GELU, their backward nodes and the bias-gradient
reduction). PyTorch runs its own composition in both rows (its GELU is one ATen kernel), so
the two Ember rows compare the fused op with the composition at the same reference. The
target asks the fused op to be no slower than PyTorch's composition by more than 2x."""
import os
import sys

import numpy as np

from workloads import workload

_EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def _bias_gelu_step(lib, fused):
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((256, 1024), dtype=np.float32)).requires_grad_()
    bias = lib.from_numpy(rng.standard_normal(1024, dtype=np.float32)).requires_grad_()
    grad = lib.from_numpy(rng.standard_normal((256, 1024), dtype=np.float32))
    if fused and lib.__name__ == "ember":
        sys.path.insert(0, _EXAMPLES)
        from fused_bias_gelu import fused_bias_gelu as op
        op(x, bias)  # builds (or loads the cached build) outside the timed steps
    else:
        def op(x, bias):
            return lib.nn.functional.gelu(x + bias)

    def step():
        x.grad = bias.grad = None
        y = op(x, bias)
        y.backward(grad)
        return y
    return step


@workload("fused_bias_gelu_ext", "gelu(x + bias) forward+backward, (256, 1024) float32: Ember's "
          "fused C++ custom op (examples/fused_bias_gelu.py) vs PyTorch's F.gelu(x + bias)",
          number=20, quick_number=2, target=("torch", 2.0))
def fused_bias_gelu_ext(lib):
    return _bias_gelu_step(lib, fused=True)


@workload("bias_gelu_composed", "gelu(x + bias) forward+backward, (256, 1024) float32, as "
          "F.gelu(x + bias) on both sides: the composition the fused op replaces",
          number=20, quick_number=2)
def bias_gelu_composed(lib):
    return _bias_gelu_step(lib, fused=False)
