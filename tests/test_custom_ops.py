"""ember.library.custom_op against torch.library.custom_op: schemas, eager calls, kernels per
device, autograd (gradcheck), mutation, aliasing errors, graph capture, torch.ops namespaces
and opcheck."""
import itertools

import numpy as np
import pytest
import torch

import ember
import ember.library as L
from ember import Tensor

_ids = itertools.count()


def _name(stem):
    # Operators are process-wide, as torch's are: each test defines its own names.
    return f"h5test::{stem}{next(_ids)}"


def _torch_name(stem):
    return f"h5torch::{stem}{next(_ids)}"


def test_schema_inference_matches_torch():
    def f(x: Tensor, n: int, s: list[int], o: Tensor | None = None, b: bool = True,
          fl: float = 1.0, st: str = "a", dt: ember.dtype = ember.float32) -> tuple[Tensor, Tensor]:
        return x.clone(), x.clone()

    def tf(x: torch.Tensor, n: int, s: list[int], o: torch.Tensor | None = None, b: bool = True,
           fl: float = 1.0, st: str = "a",
           dt: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
        return x.clone(), x.clone()
    assert L.infer_schema(f, mutates_args=()) == torch.library.infer_schema(tf, mutates_args=())

    def g(x: Tensor, y: Tensor) -> None:
        x.add_(y)

    def tg(x: torch.Tensor, y: torch.Tensor) -> None:
        x.add_(y)
    assert L.infer_schema(g, mutates_args={"x"}) == \
        torch.library.infer_schema(tg, mutates_args={"x"})
    assert str(L.custom_op(_name("g"), g, mutates_args={"x"})._schema).endswith(
        "(Tensor(a0!) x, Tensor y) -> ()")


def test_schema_errors_are_value_errors_like_torch():
    def bad(x, y: float) -> Tensor:
        return x
    with pytest.raises(ValueError, match="Parameter x must have a type annotation"):
        L.custom_op(_name("bad"), bad, mutates_args=())
    with pytest.raises(ValueError, match="Parameter x must have a type annotation"):
        torch.library.custom_op(_torch_name("bad"), bad, mutates_args=())

    def ok(x: Tensor) -> Tensor:
        return x.clone()
    with pytest.raises(ValueError, match="not found"):
        L.custom_op(_name("ok"), ok, mutates_args={"y"})
    with pytest.raises(ValueError, match="qualified name"):
        L.custom_op("nonamespace", ok, mutates_args=())


def test_eager_call_kernels_and_torch_ops_namespace():
    qual = _name("scale")
    ns, op_name = qual.split("::")

    @L.custom_op(qual, mutates_args=())
    def scale(x: Tensor, a: float) -> Tensor:
        return x * a
    x = ember.arange(4.0)
    assert scale(x, 2.0).tolist() == [0.0, 2.0, 4.0, 6.0]
    packet = getattr(getattr(ember.ops, ns), op_name)
    assert packet(x, a=3.0).tolist() == [0.0, 3.0, 6.0, 9.0]
    assert packet.default(x, 1.0).tolist() == x.tolist()
    assert repr(packet.default) == f"{ns}.{op_name}.default"
    with pytest.raises(AttributeError, match="has no attribute 'nosuch'"):
        getattr(ember.ops, ns).nosuch
    with pytest.raises(AttributeError):
        ember.ops.h5_no_such_namespace
    # A kernel per device: "testdev" gets its own, the CPU keeps the function.
    scale.register_kernel("testdev")(lambda x, a: x * (a + 100))
    assert scale(x.to("testdev"), 1.0).tolist() == [0.0, 101.0, 202.0, 303.0]
    with scale.set_kernel_enabled("testdev", False):
        assert scale(x.to("testdev"), 1.0).tolist() == x.tolist()
    with pytest.raises(RuntimeError, match=r"expected at most 2 argument\(s\) but received 3"):
        scale(x, 1.0, 2)


def test_a_second_definition_replaces_the_first_as_in_torch():
    qual = _name("redef")
    ns, op_name = qual.split("::")

    def first(x: Tensor) -> Tensor:
        return x + 1

    def second(x: Tensor) -> Tensor:
        return x + 2
    L.custom_op(qual, first, mutates_args=())
    op = L.custom_op(qual, second, mutates_args=())
    assert getattr(getattr(ember.ops, ns), op_name)(ember.zeros(1)).tolist() == [2.0]
    assert op(ember.zeros(1)).tolist() == [2.0]


def test_device_types_limit_the_function():
    @L.custom_op(_name("cudaonly"), mutates_args=(), device_types="cuda")
    def f(x: Tensor) -> Tensor:
        return x.clone()
    with pytest.raises(NotImplementedError, match="Could not run .* from the 'cpu' backend"):
        f(ember.ones(2))
    L.register_kernel(f, "cpu", lambda x: x + 1)
    assert f(ember.ones(2)).tolist() == [2.0, 2.0]


def test_output_aliasing_an_input_is_an_error_as_in_torch():
    def ident(x: Tensor) -> Tensor:
        return x
    with pytest.raises(RuntimeError, match="may not alias any inputs"):
        L.custom_op(_name("alias"), ident, mutates_args=())(ember.ones(2))

    def view(x: Tensor) -> Tensor:
        return x[:1]
    with pytest.raises(RuntimeError, match="may not alias any inputs"):
        L.custom_op(_name("view"), view, mutates_args=())(ember.ones(2))


def _mul_op(lib, name, custom_op):
    @custom_op(name, mutates_args=())
    def mul(x: lib.Tensor, y: lib.Tensor, a: float) -> lib.Tensor:
        return x * y * a

    def setup_context(ctx, inputs, output):
        x, y, a = inputs
        ctx.save_for_backward(x, y)
        ctx.a = a

    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y * ctx.a, grad * x * ctx.a, None
    mul.register_autograd(backward, setup_context=setup_context)
    return mul


def test_autograd_matches_torch_and_gradchecks():
    qual = _name("mul")  # torch's registry is its own: the same name in both
    mul = _mul_op(ember, qual, L.custom_op)
    tmul = _mul_op(torch, qual, torch.library.custom_op)
    rng = np.random.default_rng(0)
    xn, yn, gn = (rng.standard_normal((3, 4)) for _ in range(3))
    x, y = (ember.tensor(v, requires_grad=True) for v in (xn, yn))
    tx, ty = (torch.tensor(v, requires_grad=True) for v in (xn, yn))
    out, tout = mul(x, y, 1.5), tmul(tx, ty, 1.5)
    assert type(out.grad_fn).__name__ == type(tout.grad_fn).__name__
    out.backward(ember.tensor(gn))
    tout.backward(torch.tensor(gn))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy())
    assert ember.autograd.gradcheck(lambda a, b: mul(a, b, 0.5), (x, y))
    # Only one input requiring grad: the other gets none, as in torch.
    y2 = ember.tensor(yn)
    mul(x, y2, 1.0).sum().backward()
    assert y2.grad is None


def test_backward_without_autograd_registration_raises_as_torch():
    @L.custom_op(_name("noad"), mutates_args=())
    def f(x: Tensor) -> Tensor:
        return x * 2
    out = f(ember.ones(2, requires_grad=True))
    assert out.requires_grad
    with pytest.raises(RuntimeError, match="no autograd formula was registered"):
        out.sum().backward()


def test_wrong_number_of_gradients_is_an_error():
    @L.custom_op(_name("badbw"), mutates_args=())
    def f(x: Tensor, a: float) -> Tensor:
        return x * a
    f.register_autograd(lambda ctx, g: g)
    with pytest.raises(RuntimeError, match="gradients"):
        f(ember.ones(2, requires_grad=True), 2.0).sum().backward()


def test_mutates_args_bumps_the_version_like_torch():
    @L.custom_op(_name("inc"), mutates_args={"x"})
    def inc(x: Tensor, v: int) -> None:
        x.add_(v)

    @torch.library.custom_op(_torch_name("inc"), mutates_args={"x"})
    def tinc(x: torch.Tensor, v: int) -> None:
        x.add_(v)
    t, tt = ember.zeros(2), torch.zeros(2)
    v0, tv0 = t._version, tt._version
    assert inc(t, 1) is None and tinc(tt, 1) is None
    assert t.tolist() == tt.tolist() == [1.0, 1.0]
    assert t._version - v0 == tt._version - tv0
    with pytest.raises(RuntimeError, match="non-functional operator"):
        inc.register_autograd(lambda ctx, g: None)
    # A write that invalidates a saved tensor is caught by the version check.
    w = ember.ones(2, requires_grad=True)
    saved = ember.zeros(2)
    out = (w * saved).sum()
    inc(saved, 1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_opcheck_detects_an_undeclared_mutation_and_a_missing_fake():
    @L.custom_op(_name("sneaky"), mutates_args=())
    def sneaky(x: Tensor) -> Tensor:
        x.add_(1)
        return x.clone()
    result = L.opcheck(sneaky, (ember.randn(3),), raise_exception=False)
    assert "is not defined as mutable but was mutated" in str(result["test_schema"])
    assert "no fake impl registered" in str(result["test_faketensor"])
    with pytest.raises(Exception, match="test_schema failed"):
        L.opcheck(sneaky, (ember.randn(3),), test_utils="test_schema")


def test_opcheck_passes_a_complete_op_and_checks_the_fake():
    mul = _mul_op(ember, _name("mulchk"), L.custom_op)
    mul.register_fake(lambda x, y, a: ember.empty_like(x))
    args = (ember.randn(2, 3, requires_grad=True), ember.randn(2, 3), 2.0)
    assert set(L.opcheck(mul, args).values()) == {"SUCCESS"}
    L.register_fake(mul, lambda x, y, a: ember.empty(1))
    result = L.opcheck(mul, args, test_utils=("test_faketensor",), raise_exception=False)
    assert "shape mismatch" in str(result["test_faketensor"])


def test_make_fx_records_one_node_and_replays():
    from ember.fx.experimental.proxy_tensor import make_fx
    mul = _mul_op(ember, _name("multrace"), L.custom_op)

    def f(a, b):
        return mul(a, b, 2.0).sin()
    x, y = ember.randn(3), ember.randn(3)
    gm = make_fx(f)(x, y)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets.count(mul._opoverload) == 1
    assert not any(getattr(t, "__name__", "") == "mul" for t in targets if t is not mul._opoverload)
    np.testing.assert_allclose(gm(x, y).numpy(), f(x, y).numpy())
    assert "ember.ops." in gm.code
    # jit.trace records through make_fx: the traced function differentiates through the op.
    traced = ember.jit.trace(f, (x, y))
    a = ember.randn(3, requires_grad=True)
    traced(a, y).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), (a.detach() * y * 2).cos().mul(y * 2).numpy(),
                               rtol=1e-5)


def test_symbolic_trace_records_the_op():
    mul = _mul_op(ember, _name("mulsym"), L.custom_op)
    gm = ember.fx.symbolic_trace(lambda a, b: mul(a, b, 3.0) + 1)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"][0] is mul._opoverload
    x, y = ember.randn(4), ember.randn(4)
    np.testing.assert_allclose(gm(x, y).numpy(), (x * y * 3 + 1).numpy(), rtol=1e-6)


def test_defined_schema_gets_kernels_through_the_functional_forms():
    qual = _name("defined")
    ns, op_name = qual.split("::")
    L.define(qual, "(Tensor x, float a=2.0) -> Tensor")
    L.register_kernel(qual, "cpu", lambda x, a=2.0: x * a)
    op = getattr(getattr(ember.ops, ns), op_name)
    assert op(ember.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match="does not exist"):
        L.register_fake("h5test::nosuch", lambda x: x)


def test_aten_namespace_names_embers_ops():
    x = ember.tensor([1.0, -2.0])
    assert ember.ops.aten.add.Tensor(x, x).tolist() == [2.0, -4.0]
    assert ember.ops.aten.relu(x).tolist() == [1.0, 0.0]
