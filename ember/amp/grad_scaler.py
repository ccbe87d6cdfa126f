"""``GradScaler``: dynamic loss scaling for mixed-precision training, as ``torch.amp.GradScaler``.

The loss is multiplied by a scale before ``backward`` so small float16 gradients do not flush to
zero; ``unscale_`` divides the gradients back and records whether any is inf/NaN; ``step`` skips
the optimizer's step when one is; ``update`` backs the scale off after a skipped step and grows
it after ``growth_interval`` consecutive good ones.

The scale, the growth tracker and the found-inf flags are 0-d tensors on the gradients' device,
and everything up to ``step``'s decision runs there, so that a step costs one device-to-host
transfer whatever the number of parameters: ``unscale_`` computes one "all finite" flag per
gradient and reduces them (stacked) into one flag per device, with no transfer; ``step`` sums
the per-device flags onto the scale's device and reads that single value (PyTorch reads one
value per device); ``update`` computes the new scale and tracker with ``where`` on the device.
"""
import inspect
import warnings
from collections import abc, defaultdict
from enum import Enum

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops import full, isfinite, logical_not, stack, where

__all__ = ["OptState", "GradScaler"]


class _MultiDeviceReplicator:
    """A tensor and its copies on other devices, each made once, on first request."""

    def __init__(self, master_tensor):
        self.master = master_tensor
        self._per_device_tensors = {}

    def get(self, device):
        retval = self._per_device_tensors.get(device)
        if retval is None:
            retval = self.master.to(device=device, copy=True)
            self._per_device_tensors[device] = retval
        return retval


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    # A module-level factory rather than a lambda: the scaler's defaultdict must pickle.
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _cuda_definitely_not_available():
    from ..cuda import is_available
    return not is_available()


class GradScaler:
    """Scales losses and unscales gradients so float16 training neither underflows nor
    corrupts parameters, with PyTorch's arguments and defaults::

        scaler = ember.amp.GradScaler("cuda")
        for input, target in data:
            optimizer.zero_grad()
            with ember.autocast("cuda"):
                loss = loss_fn(model(input), target)
            scaler.scale(loss).backward()
            scaler.step(optimizer)      # skipped if a gradient is inf/NaN
            scaler.update()

    ``device`` is the device type of the gradients ("cuda", "cpu"...). A "cuda" scaler on a
    machine without CUDA warns and disables itself, as PyTorch's does, so scripts written for
    GPUs still run. ``enabled=False`` makes every method a pass-through: ``scale`` returns its
    argument, ``step`` calls ``optimizer.step``, the rest do nothing.
    """

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and _cuda_definitely_not_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False

        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            # _scale and _growth_tracker are made by the first scale(), on its output's device.
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) earlier "
               "in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = full((), self._init_scale, dtype=dt.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=dt.int32, device=dev)

    def scale(self, outputs):
        """``outputs`` (a tensor, or a list/tuple/iterable of them, nested) times the scale;
        the outputs themselves when disabled."""
        if not self._enabled:
            return outputs

        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)

        stash = []  # the replicator of the scale, made at the first tensor met

        def apply_scale(val):
            if isinstance(val, Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, allow_fp16):
        """Multiplies the optimizer's gradients by ``inv_scale`` in place (leaves them alone when
        it is None) and returns ``{device: found_inf}``, a float32 0-d tensor per device that is
        1.0 if any of the (scaled) gradients there holds an inf or NaN.

        The check is fused per device: each gradient gives a 0-d "all finite" flag on its
        device, and the flags are stacked and reduced once; nothing is read back to the host.
        A sparse gradient is checked and unscaled through its values (coalesced first when
        float16, where summing duplicates can overflow)."""
        per_device_inv_scale = None if inv_scale is None else _MultiDeviceReplicator(inv_scale)
        per_device_grads = defaultdict(list)
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(
                            f"expected param to be torch.Tensor, got {type(param).__name__}")
                    grad = param.grad
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype is dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    if grad.is_sparse:
                        if grad.dtype is dt.float16:
                            param.grad = grad = grad.coalesce()
                        grad = grad._values()
                    per_device_grads[grad.device].append(grad)

            found_inf_per_device = {}
            for device, grads in per_device_grads.items():
                all_finite = stack([isfinite(g).all() for g in grads]).all()
                found_inf_per_device[device] = logical_not(all_finite).to(dt.float32)
                if per_device_inv_scale is not None:
                    inv = per_device_inv_scale.get(device)
                    for g in grads:
                        g.mul_(inv)
        return found_inf_per_device

    def unscale_(self, optimizer):
        """Divides ``optimizer``'s gradients by the scale in place and records whether any is
        inf/NaN, without a device-to-host transfer. Optional: ``step`` does it when not called,
        and calling it first lets the unscaled gradients be clipped or inspected. Once per
        optimizer per ``update``."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")

        # The reciprocal in float64, as PyTorch: float32 division can be off by an ulp.
        inv_scale = self._scale.double().reciprocal().float()
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _found_inf_combined(self, found_infs):
        """The found-inf flags summed on the scale's device (still a 0-d tensor)."""
        device = self._scale.device
        flags = [f.to(device=device) for f in found_infs]
        combined = flags[0]
        for flag in flags[1:]:
            combined = combined + flag
        return combined

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        # The one device-to-host transfer of a step, for all devices together.
        if not self._found_inf_combined(
                optimizer_state["found_inf_per_device"].values()).item():
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscales the gradients (unless ``unscale_`` already did) and runs
        ``optimizer.step(*args, **kwargs)`` if none is inf/NaN. Returns what it returns, or
        None when the step is skipped. A ``closure`` is refused, as in PyTorch: the scaler
        cannot check gradients that the closure is yet to compute."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")

        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return self._step_self_scaling(optimizer, optimizer_state, args, kwargs)

        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def _step_self_scaling(self, optimizer, optimizer_state, args, kwargs):
        """PyTorch's contract with an optimizer that unscales and skips by itself
        (``_step_supports_amp_scaling = True``): its ``step`` is given the scaler as a
        ``grad_scaler`` keyword if it takes one (deprecated), else finds ``grad_scale`` and
        ``found_inf`` tensors set on it for the call."""
        has_grad_scaler_kwarg = "grad_scaler" in inspect.signature(optimizer.step).parameters
        if has_grad_scaler_kwarg:
            warnings.warn(
                "GradScaler is going to stop passing itself as a keyword argument to the passed "
                "optimizer. In the near future GradScaler registers `grad_scale: Tensor` and "
                "`found_inf: Tensor` to the passed optimizer and let the optimizer use them "
                "directly.", FutureWarning, stacklevel=3)
            kwargs.update({"grad_scaler": self})
        else:
            if optimizer_state["stage"] is OptState.READY:
                self._check_inf_per_device(optimizer)
            scaler = self._get_scale_async()
            found_inf = sum(t.to(scaler.device) for t in
                            optimizer_state["found_inf_per_device"].values())
            # An UNSCALED optimizer's gradients are already divided: its own grad_scale (if the
            # user set one) stands; otherwise the scale multiplies whatever it had.
            optimizer.grad_scale = (getattr(optimizer, "grad_scale", None)
                                    if optimizer_state["stage"] is OptState.UNSCALED
                                    else scaler * getattr(optimizer, "grad_scale", 1))
            optimizer.found_inf = found_inf
        retval = optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        if not has_grad_scaler_kwarg:
            del optimizer.grad_scale
            del optimizer.found_inf
        return retval

    def update(self, new_scale=None):
        """Sets the scale for the next iteration: ``new_scale`` if given (a float, or a
        1-element tensor on the scaler's device type that does not require grad), otherwise
        the scale times ``backoff_factor`` if any optimizer's step was skipped, times
        ``growth_factor`` after ``growth_interval`` consecutive unskipped steps (a growth that
        would overflow to inf is dropped), unchanged between. Computed on the device."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")

        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale)
        else:
            found_infs = [found_inf for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale_(self._found_inf_combined(found_infs))

        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _update_scale_(self, found_inf):
        """PyTorch's ``_amp_update_scale_`` in tensor ops, so no value leaves the device. The
        products are taken in float64 and rounded to float32 once, as PyTorch's CPU kernel
        does, so a factor that float32 cannot hold (0.3) gives PyTorch's scale bit for bit."""
        scale, tracker = self._scale, self._growth_tracker
        with no_grad():
            found = found_inf != 0
            successful = tracker + 1
            grow = logical_not(found) & (successful == self._growth_interval)
            wide = scale.double()
            grown = (wide * self._growth_factor).float()
            backed_off = (wide * self._backoff_factor).float()
            kept_or_grown = where(grow & isfinite(grown), grown, scale)
            scale.copy_(where(found, backed_off, kept_or_grown))
            tracker.copy_(where(found | grow, 0, successful))

    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled); reads it from the device."""
        if self._enabled:
            scale = self._get_scale_async()
            return self._init_scale if scale is None else scale.item()
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            tracker = self._growth_tracker
            return self._init_growth_tracker if tracker is None else tracker.item()
        return 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
        ``_growth_tracker`` as Python numbers (PyTorch's keys); empty when disabled."""
        if self._enabled:
            return {"scale": self.get_scale(),
                    "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor,
                    "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            # The unpickled scaler rebuilds its tensors lazily, on the device of its first use.
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _check_inf_per_device(self, optimizer):
        self._check_scale_growth_tracker("_check_inf_per_device")
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = (
            self._unscale_grads_(optimizer, None, True))
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer):
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
