"""Weight averaging, as ``torch.optim.swa_utils``: Stochastic Weight Averaging (SWA) and
exponential moving averages (EMA) of a model's parameters, the SWA learning-rate schedule, and
recomputing BatchNorm statistics for the averaged weights."""
import itertools
import math
import warnings
from copy import deepcopy

from .. import _dtype as dt
from .. import nn
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from ..ops.creation import tensor
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


_INTEGER_ADDCDIV_ERROR = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will "
    "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
    "implemented as (input + value * ember.trunc(tensor1 / tensor2)).to(input.dtype) for integer "
    "inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv "
    "behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all "
    "dtypes.")


def _is_inexact(t):
    return t.is_floating_point() or t.is_complex()


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. "
                         "Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """In-place update of lists of averaged tensors: ``ema = decay * ema + (1 - decay) * new``."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _num_averaged):
        if _is_inexact(ema_param_list[0]):
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place update of a list of averaged tensors to the running mean of all models seen."""

    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if _is_inexact(averaged_param_list[0]):
            # PyTorch hands the weight to its lerp as a Python scalar even when it is a tensor.
            weight = 1 / (num_averaged + 1)
            weight = weight.item() if isinstance(weight, Tensor) else weight
            for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                p_avg.lerp_(p_model, weight)
        else:
            diffs = [p_model - p_avg
                     for p_avg, p_model in zip(averaged_param_list, current_param_list,
                                               strict=True)]
            if isinstance(num_averaged, Tensor):
                # PyTorch divides by the tensor with addcdiv, which refuses integer tensors.
                raise RuntimeError(_INTEGER_ADDCDIV_ERROR)
            for p_avg, diff in zip(averaged_param_list, diffs):
                p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """``(ema, new, num_averaged) -> decay * ema + (1 - decay) * new``."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """``(average, new, num_averaged) -> average + (new - average) / (num_averaged + 1)``."""

    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` (under the attribute ``module``) whose parameters are an average of
    the parameters of ``model`` over the calls to :meth:`update_parameters`.

    The average is SWA's running mean unless ``avg_fn`` (one tensor at a time, returning the new
    average) or ``multi_avg_fn`` (lists of tensors of one device and dtype, updated in place) says
    otherwise. With ``use_buffers`` the buffers are averaged too; otherwise they are copied.
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=dt.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged_tensors(self, model):
        if self.use_buffers:
            return (itertools.chain(self.module.parameters(), self.module.buffers()),
                    itertools.chain(model.parameters(), model.buffers()))
        return self.parameters(), model.parameters()

    def update_parameters(self, model):
        """Fold the current parameters of ``model`` into the average."""
        averaged_tensors, model_tensors = self._averaged_tensors(model)
        first_update = bool(self.n_averaged == 0)
        pairs = []
        for p_averaged, p_model in zip(averaged_tensors, model_tensors):
            p_averaged = p_averaged.detach()
            p_model = p_model.detach().to(p_averaged.device)
            if first_update:
                p_averaged.copy_(p_model)
            pairs.append((p_averaged, p_model))

        if not first_update:
            if self.avg_fn is not None:
                for p_averaged, p_model in pairs:
                    n_averaged = self.n_averaged.to(p_averaged.device)
                    p_averaged.copy_(self.avg_fn(p_averaged, p_model, n_averaged))
            else:
                by_device_and_dtype = {}
                for p_averaged, p_model in pairs:
                    key = (p_averaged.device, p_averaged.dtype)
                    by_device_and_dtype.setdefault(key, ([], []))
                    by_device_and_dtype[key][0].append(p_averaged)
                    by_device_and_dtype[key][1].append(p_model)
                # Without a multi_avg_fn, PyTorch averages CPU tensors one at a time with the
                # formula of get_swa_avg_fn (its lerp-based kernel is for accelerators only);
                # Ember does so on every device, matching PyTorch's CPU results.
                swa_avg_fn = get_swa_avg_fn()
                for (device, _), (averaged_list, model_list) in by_device_and_dtype.items():
                    n_averaged = self.n_averaged.to(device)
                    if self.multi_avg_fn is not None:
                        self.multi_avg_fn(averaged_list, model_list, n_averaged)
                    else:
                        for p_averaged, p_model in zip(averaged_list, model_list):
                            p_averaged.copy_(swa_avg_fn(p_averaged, p_model, n_averaged))

        if not self.use_buffers:
            # Buffers (BatchNorm statistics) are not averaged; they follow the model, and
            # update_bn recomputes them for the averaged weights.
            for b_averaged, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                b_averaged.detach().copy_(b_model.detach().to(b_averaged.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader, model, device=None):
    """Recompute the running statistics of every BatchNorm layer of ``model`` with one pass over
    ``loader`` (batches, or tuples/lists whose first element is the input): the statistics
    collected while training belong to weights other than the averaged ones."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    # momentum None makes BatchNorm keep a cumulative (equal-weight) average over the pass.
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to its ``swa_lr`` over ``anneal_epochs`` epochs
    (``cos`` or ``linear``), then hold it there."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for swa_lr_of_group, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = swa_lr_of_group
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', "
                             f"instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The lr the schedule started from, given that ``lr`` is ``alpha`` of the way to
        ``swa_lr``: the schedule is chainable, so it only knows the current lr."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _progress(self, step):
        return max(0, min(1, step / max(1, self.anneal_epochs)))

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(self._progress(step - 1))
        start_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                     for group in self.optimizer.param_groups]
        alpha = self.anneal_func(self._progress(step))
        return [group["swa_lr"] * alpha + start_lr * (1 - alpha)
                for group, start_lr in zip(self.optimizer.param_groups, start_lrs, strict=True)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
