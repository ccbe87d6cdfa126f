"""``torch.utils.backend_registration``: naming a private-use device and generating its methods.

In PyTorch an out-of-tree device registers its C++ kernels under the PrivateUse1 dispatch key
and renames it. In Ember a device is any registered backend (``ember.backends.
register_backend``, or ``ember.library.RegistryBackend`` for one built from kernels), so
``rename_privateuse1_backend(name)`` names the backend that "PrivateUse1" kernels
(``ember.library.impl(op, "PrivateUse1")``) and ``ember.device("privateuseone")`` mean;
``generate_methods_for_privateuse1_backend`` adds ``Tensor.<name>()``, ``Tensor.is_<name>``,
``Module.<name>()`` and ``PackedSequence.<name>()``/``is_<name>``, as torch does.
"""
import sys

__all__ = ["rename_privateuse1_backend", "generate_methods_for_privateuse1_backend"]

_DEFAULT_NAME = "privateuseone"
_privateuse1_backend_name = _DEFAULT_NAME


def _get_privateuse1_backend_name():
    """The private-use device's name: "privateuseone" until renamed."""
    return _privateuse1_backend_name


def rename_privateuse1_backend(backend_name: str) -> None:
    """Name the private-use device ``backend_name``, once per process (torch's rule: renaming
    again to the same name is allowed, to another raises). A backend registered as
    "privateuseone" moves to the new name."""
    global _privateuse1_backend_name
    if not isinstance(backend_name, str) or not backend_name.isidentifier():
        raise ValueError(f"the private-use backend's name must be an identifier, got "
                         f"{backend_name!r}")
    if _privateuse1_backend_name != _DEFAULT_NAME:
        if backend_name == _privateuse1_backend_name:
            return
        raise RuntimeError(f"torch.register_privateuse1_backend() has already been set! "
                           f"Current backend: {_privateuse1_backend_name}")
    from .. import backends
    factory = backends._FACTORIES.get(_DEFAULT_NAME)
    if factory is not None:
        backends.unregister_backend(_DEFAULT_NAME)
        backends.register_backend(backend_name, factory, replace=True)
    _privateuse1_backend_name = backend_name


def _check_register_once(owner, attr):
    if hasattr(owner, attr):
        raise RuntimeError(f"The custom device module of {owner} has already been registered "
                           f"with {attr}")


def _normalization_device(name, device=None):
    """The device index ``device`` (None, an int, "name:1" or an ember.device) means."""
    import ember

    def current():
        module = getattr(ember, name, None)
        return module.current_device() if hasattr(module, "current_device") else 0

    if device is None:
        return current()
    if isinstance(device, str):
        device = ember.device(device)
    if isinstance(device, ember.device):
        if device.type != name:
            raise RuntimeError(f"Invalid device, must be {name} device")
        return current() if device.index is None else device.index
    return device


def _generate_tensor_methods(name):
    from .._tensor import Tensor

    def is_device(self):
        return self.device.type == name
    is_device.__name__ = f"is_{name}"
    _check_register_once(Tensor, f"is_{name}")
    setattr(Tensor, f"is_{name}", property(is_device))

    def to_device(self, device=None, non_blocking=False, **kwargs):
        """A copy of this tensor on the private-use device (``self`` if already there)."""
        import ember
        index = _normalization_device(name, device)
        return self.to(device=ember.device(f"{name}:{index}"), non_blocking=non_blocking,
                       **kwargs)
    to_device.__name__ = name
    _check_register_once(Tensor, name)
    setattr(Tensor, name, to_device)


def _generate_module_methods(name):
    from .._tensor import Tensor
    from ..nn import Module
    if not hasattr(Tensor, name):
        raise RuntimeError(f"Can not automatically generate {name}() method for torch.nn.Module."
                           f"Because torch.Tensor doesn't has the method {name}()."
                           f"For this error, you can try setting for_tensor=True.")

    def module_to_device(self, device=None):
        """Move every parameter and buffer to the private-use device (in place)."""
        return self._apply(lambda t: getattr(t, name)(device))
    module_to_device.__name__ = name
    _check_register_once(Module, name)
    setattr(Module, name, module_to_device)


def _generate_packed_sequence_methods(name):
    from .._tensor import Tensor
    from ..nn.utils.rnn import PackedSequence
    if not hasattr(Tensor, f"is_{name}") or not hasattr(Tensor, name):
        raise RuntimeError(f"Can not automatically generate is_{name}() or {name}() method for "
                           f"torch.nn.utils.rnn.PackedSequence.Because torch.Tensor doesn't has "
                           f"the method is_{name}()or {name}().For this error, you can try "
                           f"setting for_tensor=True.")

    def is_device(self):
        return self.data.device.type == name
    _check_register_once(PackedSequence, f"is_{name}")
    setattr(PackedSequence, f"is_{name}", property(is_device))

    def to_device(self, *args, **kwargs):
        import ember
        example = ember.empty(0, dtype=self.data.dtype, device=self.data.device)
        example = getattr(example, name)(*args, **kwargs)
        return self.to(example.device)
    to_device.__name__ = name
    _check_register_once(PackedSequence, name)
    setattr(PackedSequence, name, to_device)


def generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True,
                                             for_packed_sequence=True, for_storage=False,
                                             unsupported_dtype=None) -> None:
    """Add the private-use device's methods: ``Tensor.<name>()`` and ``Tensor.is_<name>``
    (``for_tensor``), ``Module.<name>()`` (``for_module``), ``PackedSequence.<name>()`` and
    ``is_<name>`` (``for_packed_sequence``). Each may be generated once."""
    name = _get_privateuse1_backend_name()
    if for_storage:
        raise NotImplementedError("generate_methods_for_privateuse1_backend(for_storage=True): "
                                  "Ember has no per-device storage classes to add methods to")
    if for_tensor:
        _generate_tensor_methods(name)
    if for_module:
        _generate_module_methods(name)
    if for_packed_sequence:
        _generate_packed_sequence_methods(name)


def _register_device_module(device_type, module):
    """Make ``module`` the runtime module of ``device_type``: ``ember.<device_type>`` and
    ``import ember.<device_type>`` (with ``is_available``, ``device_count``,
    ``current_device``, ``synchronize``, ``manual_seed_all``…, as the device provides)."""
    import ember
    device_type = ember.device(device_type).type  # a registered device type, or torch's error
    if hasattr(ember, device_type):
        raise RuntimeError(f"The runtime module of '{device_type}' has already been registered "
                           f"with '{getattr(ember, device_type)}'")
    setattr(ember, device_type, module)
    sys.modules[f"ember.{device_type}"] = module
