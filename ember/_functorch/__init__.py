"""``ember._functorch``: torch's functorch internals that Ember needs — AOT autograd
(``aot_autograd.py``), the forward/backward split ``ember.compile`` trains through."""
