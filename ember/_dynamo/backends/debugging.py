"""``ExplainOutput``, what ``ember._dynamo.explain`` returns, as
``torch._dynamo.backends.debugging``."""
import dataclasses

__all__ = ["ExplainOutput", "GraphCompileReason"]


@dataclasses.dataclass
class GraphCompileReason:
    """Why a graph ended: ``reason`` in words, ``user_stack`` the user's frames at that point."""
    reason: str
    user_stack: list
    graph_break: bool = True


@dataclasses.dataclass
class ExplainOutput:
    graphs: list
    graph_count: int
    graph_break_count: int
    break_reasons: list
    op_count: int
    ops_per_graph: list = None
    out_guards: list = None
    compile_times: str = None

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, r in enumerate(self.break_reasons):
            lines.append(f"  Break Reason {i + 1}:")
            lines.append(f"    Reason: {r.reason}")
            lines.append("    User Stack:")
            lines.extend(f"      {f.filename}:{f.lineno} in {f.name}" for f in r.user_stack)
        if self.ops_per_graph is not None:
            lines.append("Ops per Graph:")
            for i, ops in enumerate(self.ops_per_graph):
                lines.append(f"  Ops {i + 1}:")
                lines.extend(f"    {op}" for op in ops)
        if self.out_guards is not None:
            lines.append("Out Guards:")
            lines.extend(f"  {g}" for g in self.out_guards)
        return "\n".join(lines) + "\n"
