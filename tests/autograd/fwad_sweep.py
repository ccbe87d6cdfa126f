"""The op table's forward-gradient sweep, shared by tests/autograd/test_forward_ad.py: one
float64 sample per row, tangents propagated by Ember's forward AD, compared with torch's
forward AD on the same inputs and tangents and with central finite differences."""
import os
import sys

import numpy as np
import torch

import ember
import ember.autograd.forward_ad as fwAD

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from opinfo import core  # noqa: E402
from opinfo.registry import ALL_OPS  # noqa: E402

TOL = (1e-6, 1e-6)
# Rows whose sample sits where the op is not differentiable (ties, zeros, bounds, rounding):
# there the forward derivative is PyTorch's convention, which finite differences cannot see.
FD_NONSMOOTH = {"round_half_to_even", "sign_at_zero", "clamp_at_bounds", "frexp_zeros",
                "pow_at_zero", "median_ties_all", "mode", "mode_method", "quantile_ties",
                "index_reduce_amax_exclude_self"}
FD_TOL = (1e-4, 1e-4)


def first_float64_sample(op):
    if not op.grad or "float64" not in op.dtypes or not op.values:
        return None
    for sample in op.samples:
        if not sample.noncontig:
            return sample
    return None


def _tensor_outputs(out):
    return [o for o in core.flatten_outputs(out)]


def _dual_inputs(lib, fw, inputs, tangents):
    return [fw.make_dual(x, v) if v is not None else x for x, v in zip(inputs, tangents)]


def run_row(op, sample, against_torch=True):
    """'skip:<why>' when torch refuses or there is nothing to check, else None (asserts)."""
    t_in, e_in = core.build_inputs(op, sample, "float64", "cpu", False)
    rng = np.random.default_rng(7)
    t_tan, e_tan = [], []
    for i, t in enumerate(t_in):
        if t.dtype == torch.float64 and (op.grad_inputs is None or i in op.grad_inputs):
            v = rng.uniform(-1, 1, size=tuple(t.shape))
            t_tan.append(torch.from_numpy(v.copy()))
            e_tan.append(ember.tensor(v.copy()))
        else:
            t_tan.append(None)
            e_tan.append(None)
    if all(v is None for v in t_tan):
        return "skip:no float input"

    def call(lib, xs):
        return op.fn(lib, *xs, *sample.args, **sample.kwargs)

    refused = None
    try:
        with torch.autograd.forward_ad.dual_level():
            t_out = call(torch, _dual_inputs(torch, torch.autograd.forward_ad, t_in, t_tan))
            t_res = [(torch.autograd.forward_ad.unpack_dual(o).tangent
                      if isinstance(o, torch.Tensor) else None) for o in _tensor_outputs(t_out)]
    except Exception as exc:  # noqa: BLE001 - torch refuses: finite differences only
        refused = f"skip:torch:{type(exc).__name__}:{str(exc)[:80]}"
    try:
        with fwAD.dual_level():
            e_out = call(ember, _dual_inputs(ember, fwAD, e_in, e_tan))
            e_res = [(fwAD.unpack_dual(o).tangent if isinstance(o, ember.Tensor) else None)
                     for o in _tensor_outputs(e_out)]
    except NotImplementedError:
        if refused is None:
            raise
        return refused + " (Ember refuses too)"
    if refused is not None:
        # torch has no forward derivative here; Ember's must still match finite differences
        t_res = [e if e is not None and e.dtype is ember.float64 else None for e in e_res]
        against_torch = False
    assert len(e_res) == len(t_res), f"{len(e_res)} outputs vs torch {len(t_res)}"
    eps = 1e-6
    plus = [x + eps * v if v is not None else x for x, v in zip(e_in, e_tan)]
    minus = [x - eps * v if v is not None else x for x, v in zip(e_in, e_tan)]
    fd_plus, fd_minus = _tensor_outputs(call(ember, plus)), _tensor_outputs(call(ember, minus))
    for k, (et, tt) in enumerate(zip(e_res, t_res)):
        if tt is None:
            continue
        if isinstance(tt, ember.Tensor):
            t_np = core.ember_to_numpy(tt)
        else:
            if tt._is_zerotensor():  # torch's symbolic zero (slogdet's sign)
                tt = torch.zeros(tt.shape, dtype=tt.dtype)
            t_np = core.torch_to_numpy(tt)
        if not np.isfinite(t_np).all():
            continue
        assert et is not None, f"output {k}: no tangent, torch has one"
        e_np = core.ember_to_numpy(et)
        if against_torch:
            np.testing.assert_allclose(e_np, t_np, *TOL, err_msg=f"output {k} tangent vs torch")
        if fd_plus[k].dtype is ember.float64:  # differences in a lower precision are noise
            fd = (core.ember_to_numpy(fd_plus[k]) - core.ember_to_numpy(fd_minus[k])) / (2 * eps)
            if op.name in FD_NONSMOOTH or not np.isfinite(fd).all():
                continue
            np.testing.assert_allclose(e_np, fd, *FD_TOL,
                                       err_msg=f"output {k} tangent vs finite differences")
    return None if refused is None else "checked:fd-only"
