"""``FloatFunctional`` (float ops with an observer on the result, what ``prepare`` observes),
``FXFloatFunctional`` (the same for FX mode) and ``QFunctional`` (the quantized ops
``convert`` puts in their place)."""
import ember
from ember.nn.modules.module import Module
from ember.nn.modules.linear import Identity
from ember.ops import quantized as _ops

__all__ = ["FloatFunctional", "FXFloatFunctional", "QFunctional"]


class FloatFunctional(Module):
    """Float ``add``/``mul``/``cat``/... whose results pass ``activation_post_process`` (an
    Identity until ``prepare`` puts an observer there). Call the methods, not ``forward``."""

    def __init__(self):
        super().__init__()
        self.activation_post_process = Identity()

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use "
                           "the underlying operation")

    def add(self, x, y):
        return self.activation_post_process(ember.add(x, y))

    def add_scalar(self, x, y):
        # not observed: the quantized op derives its qparams from the input's
        return ember.add(x, y)

    def mul(self, x, y):
        return self.activation_post_process(ember.mul(x, y))

    def mul_scalar(self, x, y):
        return ember.mul(x, y)

    def cat(self, x, dim=0):
        return self.activation_post_process(ember.cat(x, dim=dim))

    def add_relu(self, x, y):
        return self.activation_post_process(ember.relu(ember.add(x, y)))

    def matmul(self, x, y):
        return self.activation_post_process(ember.matmul(x, y))


class FXFloatFunctional(Module):
    """``FloatFunctional`` for FX graph mode: the observers are inserted into the graph."""

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use "
                           "the underlying operation")

    def add(self, x, y):
        return ember.add(x, y)

    def add_scalar(self, x, y):
        return ember.add(x, y)

    def mul(self, x, y):
        return ember.mul(x, y)

    def mul_scalar(self, x, y):
        return ember.mul(x, y)

    def cat(self, x, dim=0):
        return ember.cat(x, dim=dim)

    def add_relu(self, x, y):
        return ember.relu(ember.add(x, y))

    def matmul(self, x, y):
        return ember.matmul(x, y)


class QFunctional(Module):
    """The quantized ops of ``FloatFunctional``, their results quantized to ``scale`` and
    ``zero_point`` (from the observer, by ``from_float``)."""

    def __init__(self):
        super().__init__()
        self.scale = 1.0
        self.zero_point = 0
        self.activation_post_process = Identity()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = ember.tensor(self.scale)
        destination[prefix + "zero_point"] = ember.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def _get_name(self):
        return "QFunctional"

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def forward(self, x):
        raise RuntimeError("Functional is not intended to use the 'forward'. Please use the "
                           "underlying operation")

    def add(self, x, y):
        return self.activation_post_process(_ops.add(x, y, self.scale, self.zero_point))

    def add_scalar(self, x, y):
        return self.activation_post_process(_ops.add_scalar(x, y))

    def mul(self, x, y):
        return self.activation_post_process(_ops.mul(x, y, self.scale, self.zero_point))

    def mul_scalar(self, x, y):
        return self.activation_post_process(_ops.mul_scalar(x, y))

    def cat(self, x, dim=0):
        return self.activation_post_process(_ops.cat(x, dim, self.scale, self.zero_point))

    def add_relu(self, x, y):
        return self.activation_post_process(_ops.add_relu(x, y, self.scale, self.zero_point))

    def matmul(self, x, y):
        return self.activation_post_process(_ops.matmul(x, y, self.scale, self.zero_point))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) is not FloatFunctional:
            raise AssertionError("QFunctional.from_float expects an instance of FloatFunctional")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        new_mod = QFunctional()
        new_mod.scale = float(scale)
        new_mod.zero_point = int(zero_point)
        return new_mod
