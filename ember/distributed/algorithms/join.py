"""Training with uneven inputs across ranks, as ``torch.distributed.algorithms.join``.

A rank that runs out of data leaves the ``with Join([...])`` body early and, in ``__exit__``,
keeps *shadowing* the collectives the ranks still training issue: every iteration it takes
part in one all-reduce counting the ranks not yet joined (the training ranks contribute 1
through ``Join.notify_join_context``, a joined rank 0), then runs each joinable's
``JoinHook.main_hook`` (which issues the matching collectives, e.g. DDP's all-reduce of zero
gradients). When the count reaches 0 every rank runs ``post_hook(is_last_joiner)``.
"""
import warnings
from abc import ABC, abstractmethod
from typing import NamedTuple

from ... import ops as _ops

__all__ = ["JoinHook", "Joinable", "Join"]


def _dist():
    # Imported when used: ember.distributed imports this package while it initialises.
    from ... import distributed
    return distributed


class JoinHook:
    """What a joinable does once its rank has joined: ``main_hook()`` each iteration while
    other ranks still train (shadowing their collectives), ``post_hook(is_last_joiner)`` once
    every rank has joined. Both default to doing nothing."""

    def main_hook(self):
        pass

    def post_hook(self, is_last_joiner):
        pass


class Joinable(ABC):
    """A class that can take part in ``Join`` (an abstract base, as torch's): its
    constructor calls ``Joinable.__init__``, and it provides ``join_hook(**kwargs)``,
    ``join_device`` and ``join_process_group``."""

    @abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs):
        """The ``JoinHook`` this joinable runs once its rank has joined."""

    @property
    @abstractmethod
    def join_device(self):
        """The device of the tensors Join's own all-reduces use."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The process group Join's own all-reduces use."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(enable=False, throw_on_early_termination=False,
                           is_first_joinable=False)


class Join:
    """Context manager for uneven inputs: ``with Join([ddp_model, ...]):`` around the training
    loop; ranks that finish early shadow the others' collectives until all have finished.
    With ``throw_on_early_termination=True`` every rank raises once any rank runs out.
    ``kwargs`` go to each joinable's ``join_hook``."""

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [joinable.join_hook(**kwargs) for joinable in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        self._extract_dist_info()

    def _set_joinable_configs(self):
        is_first_joinable = True
        for joinable in self._joinables:
            joinable._join_config = _JoinConfig(
                enable=self._enable, throw_on_early_termination=self._throw_on_early_termination,
                is_first_joinable=is_first_joinable)
            is_first_joinable = False

    def _extract_dist_info(self):
        process_group = None
        device = None
        for joinable in self._joinables:
            if process_group is None:
                process_group = joinable.join_process_group
            elif process_group != joinable.join_process_group:
                raise ValueError("Using join context manager with multiple process groups")
            if device is None:
                device = joinable.join_device
        self._process_group = process_group
        self._rank = _dist().get_rank(self._process_group)
        self._device = device

    def __enter__(self):
        pass

    def __exit__(self, type, value, traceback):
        # An exception inside the body propagates; shadowing would only hang the others.
        if not self._enable or type:
            return
        all_procs_joined = False
        is_last_joiner = True
        i = 0
        warn_threshold = 1000
        while not all_procs_joined:
            if i == warn_threshold + 1:
                warnings.warn(f"Detected uneven input skew of greater than {warn_threshold}. "
                              f"This means that rank {self._rank} has at least "
                              f"{warn_threshold} fewer inputs than other currently-active "
                              "ranks. This level of skew could lead to performance degradation "
                              "during training.", stacklevel=2)
            if self._get_num_nonjoined_procs() == 0:
                all_procs_joined = True
            else:
                if self._throw_on_early_termination:
                    self._notify_procs_to_terminate()
                for join_hook in self._join_hooks:
                    join_hook.main_hook()
                is_last_joiner = False
                i += 1
        for join_hook in self._join_hooks:
            join_hook.post_hook(is_last_joiner)

    def _get_num_nonjoined_procs(self):
        # Matches notify_join_context's all-reduce of ones on the ranks still training.
        num_nonjoined_procs = _ops.zeros(1, device=self._device)
        _dist().all_reduce(num_nonjoined_procs, group=self._process_group)
        return num_nonjoined_procs.item()

    def _notify_procs_to_terminate(self):
        ones = _ops.ones(1, device=self._device)
        _dist().all_reduce(ones, group=self._process_group)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable):
        """Called by the first joinable at the start of each iteration on a rank still
        training: all-reduces a 1 (async) to count it as not joined, and returns that Work
        (None unless ``joinable`` is the first joinable of an enabled Join). With
        ``throw_on_early_termination``, raises here once some rank has run out of inputs."""
        if not hasattr(joinable, "_join_config"):
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the "
                                 "``Joinable`` constructor")
        join_config = joinable._join_config
        if not join_config.is_first_joinable or not join_config.enable:
            return None
        device = joinable.join_device
        process_group = joinable.join_process_group
        ones = _ops.ones(1, device=device)
        work = _dist().all_reduce(ones, group=process_group, async_op=True)
        if join_config.throw_on_early_termination:
            zeros = _ops.zeros(1, device=device)
            _dist().all_reduce(zeros, group=process_group)
            if zeros.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing "
                                   "across all ranks.")
        return work
