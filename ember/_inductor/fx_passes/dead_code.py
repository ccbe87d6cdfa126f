"""Dead-code elimination: erase every node whose value nobody reads, unless it has an effect.

Effects are fx's (in-place writes, ``setitem``) plus random draws: an unused ``dropout`` still
advances the generator, and erasing it would change every later random number, so the compiled
graph would stop matching eager."""

__all__ = ["eliminate_dead_code", "is_random", "has_side_effect"]

# Ops that draw from the random generator (by their public name).
_RANDOM = {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
           "bernoulli", "multinomial", "normal", "poisson", "rrelu", "dropout", "dropout1d",
           "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
           "native_dropout", "gumbel_softmax"}
_DROPOUTS = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
             "feature_alpha_dropout"}


def is_random(node):
    """Whether ``node`` draws random numbers (a dropout only when it is active)."""
    if node.op not in ("call_function", "call_method"):
        return False
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    if name.endswith("_") and name.rstrip("_") in ("uniform", "normal", "bernoulli", "random",
                                                  "exponential", "geometric", "cauchy",
                                                  "log_normal"):
        return True
    if name not in _RANDOM:
        return False
    if name in _DROPOUTS:
        args = list(node.args) + [None] * 3
        p = node.kwargs.get("p", args[1] if args[1] is not None else 0.5)
        training = node.kwargs.get("training", args[2] if args[2] is not None else True)
        return bool(training) and p != 0
    return True


def has_side_effect(node):
    return node.is_impure() or is_random(node)


def eliminate_dead_code(graph):
    """Erase the dead pure nodes of ``graph``; returns whether any were erased."""
    changed = False
    for node in reversed(graph.nodes):
        if node.op not in ("placeholder", "output") and not node.users and \
                not has_side_effect(node):
            graph.erase_node(node)
            changed = True
    return changed
