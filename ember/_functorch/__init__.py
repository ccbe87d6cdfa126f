"""``ember._functorch``: torch's functorch internals that Ember needs — AOT autograd
(``aot_autograd.py``), the forward/backward split ``ember.compile`` trains through — and the
machinery behind ``ember.func``: ``vmap.py`` with its ``batch_rules_<family>.py``,
``eager_transforms.py`` (reverse mode), ``forward_transforms.py`` (forward mode),
``functional_call.py``."""
