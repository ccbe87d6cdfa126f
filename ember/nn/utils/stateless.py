"""``torch.nn.utils.stateless``: the pre-2.0 spelling of ``torch.func.functional_call``,
deprecated there and here; one implementation, in ``ember/_functorch/functional_call.py``."""
import warnings

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    warnings.warn("torch.nn.utils.stateless.functional_call is deprecated as of PyTorch 2.0 and "
                  "will be removed in a future version of PyTorch. Please use "
                  "torch.func.functional_call instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    from ..._functorch.functional_call import functional_call as call
    return call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
                strict=strict)
