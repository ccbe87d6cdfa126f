"""A fused C++ operator with a hand-written backward, registered as a custom op.

``gelu(x + bias)`` is two Ember ops (an add and a GELU, each a pass over memory, plus their
backward passes and the bias-gradient reduction). Here one C++ loop computes the forward and
one the backward — the input gradient and the bias gradient together — written against
``<torch/extension.h>`` exactly as for PyTorch, compiled by ``load_inline`` and made an
operator with ``ember.library.custom_op`` so autograd, ``opcheck`` and graph capture see one op::

    python examples/fused_bias_gelu.py             # builds (cached), checks against F.gelu(x + b)
"""
import argparse
import os
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
from ember import Tensor  # noqa: E402
from ember.library import custom_op, opcheck  # noqa: E402
from ember.utils.cpp_extension import load_inline  # noqa: E402

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>

// GELU with the exact (erf) form, as F.gelu's default: y = h * Phi(h), h = x + bias.
template <typename scalar_t>
static void forward_kernel(const scalar_t* x, const scalar_t* bias, scalar_t* y,
                           int64_t rows, int64_t cols) {
  const scalar_t inv_sqrt2 = 0.70710678118654752440;
  for (int64_t r = 0; r < rows; ++r) {
    const scalar_t* xr = x + r * cols;
    scalar_t* yr = y + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const scalar_t h = xr[c] + bias[c];
      yr[c] = h * scalar_t(0.5) * (scalar_t(1) + std::erf(h * inv_sqrt2));
    }
  }
}

// d/dh [h Phi(h)] = Phi(h) + h phi(h); the bias gradient sums the input gradient over rows.
template <typename scalar_t>
static void backward_kernel(const scalar_t* grad, const scalar_t* x, const scalar_t* bias,
                            scalar_t* dx, scalar_t* dbias, int64_t rows, int64_t cols) {
  const scalar_t inv_sqrt2 = 0.70710678118654752440;
  const scalar_t inv_sqrt2pi = 0.39894228040143267794;
  std::vector<double> acc(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const scalar_t* xr = x + r * cols;
    const scalar_t* gr = grad + r * cols;
    scalar_t* dr = dx + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const scalar_t h = xr[c] + bias[c];
      const scalar_t cdf = scalar_t(0.5) * (scalar_t(1) + std::erf(h * inv_sqrt2));
      const scalar_t pdf = inv_sqrt2pi * std::exp(scalar_t(-0.5) * h * h);
      dr[c] = gr[c] * (cdf + h * pdf);
      acc[c] += dr[c];
    }
  }
  for (int64_t c = 0; c < cols; ++c) dbias[c] = static_cast<scalar_t>(acc[c]);
}

static void check_inputs(const torch::Tensor& x, const torch::Tensor& bias) {
  TORCH_CHECK(x.is_cpu() && bias.is_cpu(), "fused_bias_gelu: CPU tensors expected");
  TORCH_CHECK(x.is_contiguous() && bias.is_contiguous(),
              "fused_bias_gelu: contiguous inputs expected");
  TORCH_CHECK(bias.dim() == 1 && x.dim() >= 1 && x.size(-1) == bias.size(0),
              "fused_bias_gelu: bias of shape (", x.size(-1), ",) expected, got ", bias.sizes());
  TORCH_CHECK(x.scalar_type() == bias.scalar_type(), "fused_bias_gelu: x is ", x.scalar_type(),
              " but bias is ", bias.scalar_type());
}

torch::Tensor fused_bias_gelu_forward(torch::Tensor x, torch::Tensor bias) {
  check_inputs(x, bias);
  auto y = torch::empty_like(x);
  const int64_t cols = bias.size(0), rows = cols ? x.numel() / cols : 0;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_bias_gelu_forward", ([&] {
    forward_kernel<scalar_t>(x.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(),
                             y.data_ptr<scalar_t>(), rows, cols);
  }));
  return y;
}

std::vector<torch::Tensor> fused_bias_gelu_backward(torch::Tensor grad, torch::Tensor x,
                                                    torch::Tensor bias) {
  check_inputs(x, bias);
  TORCH_CHECK(grad.sizes() == x.sizes() && grad.is_contiguous(),
              "fused_bias_gelu_backward: a contiguous gradient of the input's shape expected");
  auto dx = torch::empty_like(x);
  auto dbias = torch::empty_like(bias);
  const int64_t cols = bias.size(0), rows = cols ? x.numel() / cols : 0;
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_bias_gelu_backward", ([&] {
    backward_kernel<scalar_t>(grad.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),
                              bias.data_ptr<scalar_t>(), dx.data_ptr<scalar_t>(),
                              dbias.data_ptr<scalar_t>(), rows, cols);
  }));
  return {dx, dbias};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &fused_bias_gelu_forward, "gelu(x + bias), fused");
  m.def("backward", &fused_bias_gelu_backward, "gradients of gelu(x + bias) for x and bias");
}
"""

_ext = None


def extension(verbose=False):
    """The compiled extension (built once; later processes load the cached library)."""
    global _ext
    if _ext is None:
        _ext = load_inline("fused_bias_gelu_ext", CPP_SOURCE, extra_cflags=["-O3"],
                           no_implicit_headers=True, verbose=verbose)
    return _ext


@custom_op("ember_examples::fused_bias_gelu", mutates_args=())
def fused_bias_gelu(x: Tensor, bias: Tensor) -> Tensor:
    """``gelu(x + bias)`` over the last dimension, one C++ pass."""
    return extension().forward(x.contiguous(), bias.contiguous())


@fused_bias_gelu.register_fake
def _(x, bias):
    return ember.empty_like(x)


# The backward is an op of its own, so a captured graph of the backward shows it as one node.
@custom_op("ember_examples::fused_bias_gelu_backward", mutates_args=())
def fused_bias_gelu_backward(grad: Tensor, x: Tensor, bias: Tensor) -> tuple[Tensor, Tensor]:
    dx, dbias = extension().backward(grad.contiguous(), x.contiguous(), bias.contiguous())
    return dx, dbias


@fused_bias_gelu_backward.register_fake
def _(grad, x, bias):
    return ember.empty_like(x), ember.empty_like(bias)


def _setup_context(ctx, inputs, output):
    x, bias = inputs
    ctx.save_for_backward(x, bias)


def _backward(ctx, grad):
    x, bias = ctx.saved_tensors
    dx, dbias = fused_bias_gelu_backward(grad, x, bias)
    return (dx if ctx.needs_input_grad[0] else None,
            dbias if ctx.needs_input_grad[1] else None)


fused_bias_gelu.register_autograd(_backward, setup_context=_setup_context)


def composed_bias_gelu(x, bias):
    """What the fused op replaces: two Ember ops."""
    return ember.nn.functional.gelu(x + bias)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--cols", type=int, default=128)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    extension(verbose=args.verbose)

    ember.manual_seed(0)
    x = ember.randn(args.rows, args.cols, requires_grad=True)
    bias = ember.randn(args.cols, requires_grad=True)
    fused = fused_bias_gelu(x, bias)
    (fused * fused).sum().backward()
    grads_fused = (x.grad, bias.grad)
    x.grad = bias.grad = None
    composed = composed_bias_gelu(x, bias)
    (composed * composed).sum().backward()
    max_error = max(float((fused - composed).abs().max()),
                    float((grads_fused[0] - x.grad).abs().max()),
                    float((grads_fused[1] - bias.grad).abs().max()))

    x64 = ember.randn(3, 5, dtype=ember.float64, requires_grad=True)
    b64 = ember.randn(5, dtype=ember.float64, requires_grad=True)
    passed = ember.autograd.gradcheck(fused_bias_gelu, (x64, b64))
    checks = opcheck(fused_bias_gelu, (x64, b64))
    print(f"fused vs composed: max abs difference {max_error:.2e} (values and gradients)")
    print(f"gradcheck (float64): {passed}")
    print(f"opcheck: {checks}")
    return {"max_error": max_error, "gradcheck": passed, "opcheck": checks}


if __name__ == "__main__":
    main()
