"""torchvision's compatibility with its pre-0.13 builder interface, and the checks builders
make on arguments that pretrained weights fix.

Before 0.13 a builder took ``pretrained=True`` (and positional arguments); now it takes
``weights=``. ``handle_legacy_interface`` keeps old calls working with torchvision's
deprecation warnings: ``pretrained=True`` becomes the weights torchvision maps it to (the
original ``IMAGENET1K_V1``, not ``DEFAULT``), ``pretrained=False`` becomes ``weights=None``.
"""
import functools
import inspect
import warnings

from ._api import WeightsEnum


def _sequence_to_str(seq, separate_last=""):
    if not seq:
        return ""
    if len(seq) == 1:
        return f"'{seq[0]}'"
    head = "'" + "', '".join(str(item) for item in seq[:-1]) + "'"
    tail = f"{'' if separate_last and len(seq) == 2 else ','} {separate_last}'{seq[-1]}'"
    return head + tail


def kwonly_to_pos_or_kw(fn):
    """Accept ``fn``'s keyword-only parameters positionally too, with a deprecation warning."""
    params = tuple(inspect.signature(fn).parameters.values())
    try:
        first_kwonly = next(i for i, p in enumerate(params) if p.kind == p.KEYWORD_ONLY)
    except StopIteration:
        raise TypeError(f"Found no keyword-only parameter on function '{fn.__name__}'") from None
    kwonly_names = tuple(p.name for p in params[first_kwonly:])

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        args, extra = args[:first_kwonly], args[first_kwonly:]
        if extra:
            moved = dict(zip(kwonly_names, extra))
            warnings.warn(f"Using {_sequence_to_str(tuple(moved), separate_last='and ')} as "
                          "positional parameter(s) is deprecated since 0.13 and may be removed in "
                          "the future. Please use keyword parameter(s) instead.")
            kwargs.update(moved)
        return fn(*args, **kwargs)
    return wrapper


def handle_legacy_interface(**weights):
    """``weights={"weights": ("pretrained", DEFAULT_FOR_TRUE)}``: map the legacy keyword (or a
    positional boolean) to a weights member. The default may be a callable of the keyword
    arguments, for builders whose legacy weights depend on other arguments."""
    def outer(builder):
        @kwonly_to_pos_or_kw
        @functools.wraps(builder)
        def inner(*args, **kwargs):
            for weights_param, (pretrained_param, default) in weights.items():
                sentinel = object()
                weights_arg = kwargs.get(weights_param, sentinel)
                if ((weights_param not in kwargs and pretrained_param not in kwargs)
                        or isinstance(weights_arg, WeightsEnum)
                        or (isinstance(weights_arg, str) and weights_arg != "legacy")
                        or weights_arg is None):
                    continue
                # A positional `pretrained` lands under the weights parameter's name.
                pretrained_positional = weights_arg is not sentinel
                if pretrained_positional:
                    kwargs[pretrained_param] = pretrained_arg = kwargs.pop(weights_param)
                else:
                    pretrained_arg = kwargs[pretrained_param]
                if pretrained_arg:
                    default_weights = default(kwargs) if callable(default) else default
                    if not isinstance(default_weights, WeightsEnum):
                        raise ValueError(f"No weights available for model {builder.__name__}")
                else:
                    default_weights = None
                if not pretrained_positional:
                    warnings.warn(f"The parameter '{pretrained_param}' is deprecated since 0.13 "
                                  "and may be removed in the future, please use "
                                  f"'{weights_param}' instead.")
                msg = (f"Arguments other than a weight enum or `None` for '{weights_param}' are "
                       "deprecated since 0.13 and may be removed in the future. The current "
                       f"behavior is equivalent to passing `{weights_param}={default_weights}`.")
                if pretrained_arg:
                    msg += (f" You can also use `{weights_param}="
                            f"{type(default_weights).__name__}.DEFAULT` to get the most "
                            "up-to-date weights.")
                warnings.warn(msg)
                del kwargs[pretrained_param]
                kwargs[weights_param] = default_weights
            return builder(*args, **kwargs)
        return inner
    return outer


def _ovewrite_named_param(kwargs, param, new_value):
    """Set ``kwargs[param]`` to what the weights require, refusing a conflicting user value
    (torchvision's spelling of the name, kept for code that imports it)."""
    if param in kwargs:
        if kwargs[param] != new_value:
            raise ValueError(f"The parameter '{param}' expected value {new_value} but got "
                             f"{kwargs[param]} instead.")
    else:
        kwargs[param] = new_value


def _ovewrite_value_param(param, actual, expected):
    if actual is not None and actual != expected:
        raise ValueError(f"The parameter '{param}' expected value {expected} but got {actual} "
                         "instead.")
    return expected


def _load_weights(model, weights, progress):
    """Load ``weights``' checkpoint (hash-checked on download, as torchvision) into ``model``."""
    model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model
