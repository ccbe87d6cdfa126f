"""Buffer planning: which values of a compiled graph write into a preallocated buffer, and which
buffer.

A graph traced by ``make_fx`` is specialised to its example shapes, so every intermediate's
shape and dtype is known before the first call. The planner walks the nodes in order with each
value's liveness (the position of its last read, through any view of it: a reshape of a buffer
is the buffer), and gives each ``out=``-capable value a buffer slot: a slot whose value died
earlier is reused by a later value of the same shape and dtype. Slots are allocated once, with
the compiled graph, and reused on every call — so a steady-state call allocates only what it
hands out. Each thread calling the graph gets its own set (``ThreadBuffers``), so concurrent
calls — requests served on a thread pool — never share a buffer. Values that escape a call (graph outputs, and in training what the backward reads
later) never get a slot: a caller holding one would see it overwritten by the next call."""
import ast
import threading

from ..fx.node import map_arg

__all__ = ["BufferPlan", "ThreadBuffers", "plan_buffers", "release_dead_locals"]


class BufferPlan:
    """``slots``: a list of ``(shape, dtype)``; ``assignment``: node name → slot index."""

    def __init__(self):
        self.slots = []
        self.assignment = {}

    def allocate(self, xp):
        """The buffers, one per slot, on the device of ``xp``."""
        return [xp.empty(shape, dtype=dtype.np) for shape, dtype in self.slots]

    def __repr__(self):
        return f"BufferPlan({len(self.assignment)} values in {len(self.slots)} buffers)"


class ThreadBuffers:
    """``buffers()``: the calling thread's buffers of ``plan``, allocated on its first call."""
    __slots__ = ("plan", "xp", "_local")

    def __init__(self, plan, xp):
        self.plan, self.xp = plan, xp
        self._local = threading.local()

    def __call__(self):
        try:
            return self._local.buffers
        except AttributeError:
            buffers = self._local.buffers = self.plan.allocate(self.xp)
            return buffers


def _readers(node):
    found = []
    map_arg((node.args, node.kwargs), found.append)
    return found


def plan_buffers(nodes, can_use_buffer, is_view, escapes):
    """Plan the buffers for ``nodes`` (a graph's nodes in order).

    ``can_use_buffer(node)``: the node's lowering writes into ``out=``; ``is_view(node)``: its
    result may share its first input's memory; ``escapes``: nodes whose value outlives the call.
    """
    nodes = list(nodes)
    position = {n: i for i, n in enumerate(nodes)}
    # The storage each value lives in: a view's is its source's.
    root = {}
    for n in nodes:
        root[n] = n
        if is_view(n):
            src = _readers(n)
            if src:
                root[n] = root.get(src[0], src[0])
    last_use = {}
    escaped = set()
    for n in nodes:
        for r in _readers(n):
            base = root.get(r, r)
            last_use[base] = max(last_use.get(base, -1), position[n])
        if n in escapes or n.op == "output":
            for r in ([n] if n in escapes else _readers(n)):
                escaped.add(root.get(r, r))
    plan = BufferPlan()
    free = {}  # (shape, dtype) -> slots whose value is dead
    holders = []  # (last use, key, slot) of live slotted values
    for i, n in enumerate(nodes):
        # Values whose last read came before this node give their slot back.
        still = []
        for end, key, slot in holders:
            if end < i:
                free.setdefault(key, []).append(slot)
            else:
                still.append((end, key, slot))
        holders = still
        if not can_use_buffer(n) or n in escaped:
            continue
        meta = n.meta.get("tensor_meta")
        if not hasattr(meta, "shape"):
            continue
        key = (tuple(meta.shape), meta.dtype)
        pool = free.get(key)
        if pool:
            slot = pool.pop()
        else:
            slot = len(plan.slots)
            plan.slots.append(key)
        plan.assignment[n.name] = slot
        holders.append((last_use.get(n, i), key, slot))
    return plan


def release_dead_locals(source):
    """``source`` (one generated function) with a ``del`` after the statement that last reads
    each local, as eager frees a temporary when its last reader is done. Names bound only
    inside a branch, and functions defining functions, are left as they are."""
    tree = ast.parse(source)
    fn = tree.body[0]
    # (a lambda or def could read a local after its del; a comprehension runs where it stands)
    if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
           for n in ast.walk(fn) if n is not fn):
        return source
    args = fn.args
    safe = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    safe |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    for stmt in fn.body:
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.With)):
            safe |= {n.id for n in _outside_comprehensions(stmt)
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    last = {}
    for i, stmt in enumerate(fn.body):
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and n.id in safe:
                last[n.id] = i
    body = []
    for i, stmt in enumerate(fn.body):
        body.append(stmt)
        if isinstance(stmt, (ast.Return, ast.Raise)) or i == len(fn.body) - 1:
            continue
        dead = sorted(name for name, j in last.items() if j == i)
        if dead:
            body.append(ast.Delete(targets=[ast.Name(id=name, ctx=ast.Del()) for name in dead]))
    fn.body = body
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _outside_comprehensions(node):
    """``ast.walk(node)`` without the insides of comprehensions, whose variables are their own
    scope's."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
            todo.extend(ast.iter_child_nodes(n))
