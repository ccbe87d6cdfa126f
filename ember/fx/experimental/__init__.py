"""``ember.fx.experimental``: tracing tools beyond ``symbolic_trace``, as
``torch.fx.experimental``."""
