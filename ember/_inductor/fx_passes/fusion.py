"""Element-wise fusion: a chain of element-wise ops, each the only reader of the one before,
becomes one node computing the whole chain in place in one buffer.

``relu(x * 0.5 + y)`` is three ops and, eagerly, three result arrays; fused it is one
``FusedElementwise`` node whose generated code is three NumPy/CuPy ufunc calls writing
``out=`` into the same (preallocated) buffer: no intermediate array is allocated. Only ops
whose every step keeps the chain's shape and dtype are fused, so writing each step over the
last is exact. The fused node is also callable on tensors (through Ember's ops), so a graph
holding one still runs anywhere."""
from ...fx.node import Node
from ..lowering import lowering_for, bind_args

__all__ = ["fuse_elementwise", "FusedElementwise"]


class FusedElementwise:
    """``steps``: ``(ufunc name, operands)`` in order; an operand is ``("in", k)`` (the fused
    node's k-th argument), ``("acc",)`` (the previous step's result) or ``("lit", value)``."""
    __name__ = "fused_elementwise"
    __qualname__ = "FusedElementwise"

    def __init__(self, steps, names):
        self.steps = tuple(steps)
        self.names = tuple(names)  # the fused nodes' names, for reading generated code
        self.__name__ = "fused_" + "_".join(names)

    def expression(self, inputs):
        """The chain as one expression over ``inputs`` (source strings), for printing."""
        acc = None
        for ufunc, operands in self.steps:
            parts = [acc if o[0] == "acc" else inputs[o[1]] if o[0] == "in" else repr(o[1])
                     for o in operands]
            acc = f"{ufunc}({', '.join(parts)})"
        return acc

    def __call__(self, *tensors):
        import ember
        fns = {"add": ember.add, "subtract": ember.sub, "multiply": ember.mul,
               "true_divide": ember.div, "negative": ember.neg, "tanh": ember.tanh,
               "exp": ember.exp, "log": ember.log, "sqrt": ember.sqrt, "absolute": ember.abs,
               "maximum": ember.relu}
        acc = None
        for ufunc, operands in self.steps:
            vals = [acc if o[0] == "acc" else tensors[o[1]] if o[0] == "in" else o[1]
                    for o in operands]
            if ufunc == "maximum":
                vals = vals[:1]
            acc = fns[ufunc](*vals)
        return acc

    def __repr__(self):
        return f"FusedElementwise({self.expression([f'in{i}' for i in range(8)])})"


def _pointwise(node):
    low = lowering_for(node)
    if low is None or low.pointwise is None:
        return None
    args = bind_args(node)
    if args is None or not low.check(node, args):
        return None
    return low, args


def _same_value(a, b):
    ma, mb = a.meta.get("tensor_meta"), b.meta.get("tensor_meta")
    return ma is not None and mb is not None and tuple(ma.shape) == tuple(mb.shape) and \
        ma.dtype is mb.dtype


def fuse_elementwise(graph, min_length=2):
    """Replace each maximal chain of at least ``min_length`` element-wise nodes by one
    ``FusedElementwise`` node; returns whether anything was fused."""
    changed = False
    done = set()
    for start in list(graph.nodes):
        if start in done or _pointwise(start) is None:
            continue
        chain = [start]
        while True:
            last = chain[-1]
            if len(last.users) != 1:
                break
            (user,) = last.users
            if user in done or _pointwise(user) is None or not _same_value(user, last):
                break
            chain.append(user)
        if len(chain) < min_length or not _same_value(chain[0], chain[-1]):
            continue
        # The first node's result must already have the chain's shape: writing a step of
        # another shape into the buffer would broadcast it.
        inputs, steps = [], []
        index = {}

        def operand(x, prev):
            if isinstance(x, Node):
                if x is prev:
                    return ("acc",)
                if x not in index:
                    index[x] = len(inputs)
                    inputs.append(x)
                return ("in", index[x])
            return ("lit", x)
        prev = None
        for n in chain:
            low, args = _pointwise(n)
            ufunc, arity = low.pointwise
            ops = [operand(args["input"], prev)] + \
                ([operand(args["other"], prev)] if arity == 2 else [])
            if ufunc == "maximum":
                ops.append(("lit", 0))
            steps.append((ufunc, ops))
            prev = n
        last = chain[-1]
        fused = FusedElementwise(steps, [n.name for n in chain])
        with graph.inserting_before(last):
            node = graph.call_function(fused, tuple(inputs))
        node.meta = dict(last.meta)
        last.replace_all_uses_with(node)
        for n in reversed(chain):
            graph.erase_node(n)
        done.update(chain)
        changed = True
    return changed
