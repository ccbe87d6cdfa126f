"""``functional_call`` and ``stack_module_state``: a Module run as a function of its state.

``functional_call(module, {name: tensor}, args)`` puts the given tensors in place of the named
parameters and buffers (the entries of the modules' ``_parameters``/``_buffers`` dicts, so
nothing else the module holds changes), calls the module, and puts the originals back, also
when the call raises. The tensors may be anything the ops accept: tensors requiring grad that
``grad``/``vjp`` differentiate, or the batched tensors of ``vmap`` (model ensembling over the
stacked state of ``stack_module_state``).
"""
__all__ = ["functional_call", "stack_module_state"]

_MISSING = object()


def _merge(parameter_and_buffer_dicts):
    if isinstance(parameter_and_buffer_dicts, dict):
        return dict(parameter_and_buffer_dicts)
    if isinstance(parameter_and_buffer_dicts, (tuple, list)):
        merged, repeated = {}, []
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                                 f"dictionaries, got {type(d)}")
            for k, v in d.items():
                if k in merged:
                    repeated.append(k)
                merged[k] = v
        if repeated:
            raise ValueError(f"{sorted(set(repeated))} appeared in multiple dictionaries; "
                             "behavior of functional call is ambiguous")
        return merged
    raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                     f"dicts, but got {type(parameter_and_buffer_dicts)}")


def _tied_names(module):
    """name -> every name of the same tensor (parameters and buffers shared between paths)."""
    by_id = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        by_id.setdefault(id(t), []).append(name)
    return {n: names for names in by_id.values() if len(names) > 1 for n in names}


def _owner(module, name):
    *path, attr = name.split(".")
    for p in path:
        module = getattr(module, p)
    return module, attr


def _swap(module, name, value):
    """Put ``value`` at ``name``; return what undoes it."""
    owner, attr = _owner(module, name)
    d = owner.__dict__
    for table_name in ("_parameters", "_buffers"):
        table = d.get(table_name)
        if table is not None and attr in table:
            old = table[attr]
            table[attr] = value

            def undo(table=table, attr=attr, old=old):
                table[attr] = old
            return undo
    old = d.get(attr, _MISSING)
    object.__setattr__(owner, attr, value)

    def undo_attr(owner=owner, attr=attr, old=old):
        if old is _MISSING:
            owner.__dict__.pop(attr, None)
        else:
            object.__setattr__(owner, attr, old)
    return undo_attr


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``torch.func.functional_call``: ``module(*args, **kwargs)`` with its parameters and
    buffers replaced by the tensors named in ``parameter_and_buffer_dicts`` (a dict, or a
    tuple of dicts with distinct keys) for the duration of the call."""
    values = _merge(parameter_and_buffer_dicts)
    if tie_weights:
        tied = _tied_names(module)
        for name in list(values):
            group = tied.get(name)
            if not group:
                continue
            given = [n for n in group if n in values]
            if len({id(values[n]) for n in given}) > 1:
                raise ValueError(f"functional_call got multiple values for keys {sorted(given)}, "
                                 "which are tied. Consider using tie_weights=False")
            for n in group:
                values.setdefault(n, values[name])
    if strict:
        expected = [n for n, _ in module.named_parameters(remove_duplicate=False)] + \
            [n for n, _ in module.named_buffers(remove_duplicate=False)]
        missing = [n for n in expected if n not in values]
        unexpected = [n for n in values if n not in set(expected)]
        if missing or unexpected:
            lines = []
            if unexpected:
                lines.append("Unexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected)
                             + ".")
            if missing:
                lines.append("Missing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               + "\n\t".join(lines))
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    undo = []
    try:
        for name, value in values.items():
            undo.append(_swap(module, name, value))
        return module(*args, **(kwargs or {}))
    finally:
        while undo:
            undo.pop()()


def stack_module_state(models):
    """``torch.func.stack_module_state``: the parameters and buffers of identically shaped
    ``models``, each stacked along a new dim 0, as ``(params, buffers)`` dicts. The stacked
    parameters are fresh leaves (requiring grad where the models' do), for ``vmap`` over
    ``functional_call`` of one of the models."""
    from ..ops.shape import stack
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/"
                           "eval mode.")
    first = models[0]
    kinds = (type(m) for m in models)
    if len(set(kinds)) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {}
    for name, p in first.named_parameters():
        leaf = stack([ps[name] for ps in all_params]).detach()
        params[name] = leaf.requires_grad_(p.requires_grad)
    buffers = {name: stack([bs[name] for bs in all_buffers]).detach()
               for name, _ in first.named_buffers()}
    return params, buffers
