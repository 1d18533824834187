"""SwiGLU: forward and gradients against float64, both wirings (autograd.Function and
the custom operator), torch.compile's view of the operator, and bad input."""

import pytest
import torch
from kernel_inputs import DEVICE, OTHER_DEVICE, assert_close_to_float64, randn

from kernels.operations import swiglu
from kernels.triton_helpers.runtime import interpreted

# Both ways into PyTorch compute the same thing with the same kernels.
WIRINGS = {"function": swiglu.swiglu, "op": swiglu.swiglu_op}
SHAPES = [(1,), (1000,), (swiglu.BLOCK_SIZE + 1,), (7, 300)]


def reference(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """SiLU-gated product written out in float64, independent of torch's silu."""
    gate, up = gate.double(), up.double()
    return gate / (1 + torch.exp(-gate)) * up


def inputs(shape: tuple[int, ...], dtype: torch.dtype, grad: bool = True):
    gate = (3 * randn(*shape, dtype=dtype, seed=1)).requires_grad_(grad)
    up = randn(*shape, dtype=dtype, seed=2).requires_grad_(grad)
    return gate, up


@pytest.mark.parametrize("wiring", WIRINGS)
@pytest.mark.parametrize("dtype", swiglu.SUPPORTED_DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_forward_and_gradients_match_float64(
    wiring: str, dtype: torch.dtype, shape: tuple[int, ...]
) -> None:
    # float64 is held to float32's tolerance here; the test below holds it tighter.
    tolerance = torch.float32 if dtype == torch.float64 else dtype
    gate, up = inputs(shape, dtype)
    out = WIRINGS[wiring](gate, up)
    assert out.dtype == dtype and out.shape == gate.shape
    gate64, up64 = (t.detach().double().requires_grad_() for t in (gate, up))
    expected = reference(gate64, up64)
    assert_close_to_float64(out.detach(), expected.detach(), tolerance)
    dout = randn(*shape, dtype=dtype, seed=3)
    out.backward(dout)
    expected.backward(dout.double())
    assert_close_to_float64(gate.grad, gate64.grad, tolerance)
    assert_close_to_float64(up.grad, up64.grad, tolerance)


@pytest.mark.parametrize("wiring", WIRINGS)
def test_gradcheck_in_float64(wiring: str) -> None:
    gate, up = inputs((37,), torch.float64)
    assert torch.autograd.gradcheck(WIRINGS[wiring], (gate, up))


def test_float64_is_computed_in_float64() -> None:
    gate, up = inputs((500,), torch.float64, grad=False)
    torch.testing.assert_close(swiglu.swiglu(gate, up), reference(gate, up), rtol=1e-13, atol=0)


# The interpreter computes with NumPy, which warns when exp overflows to infinity.
@pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")
@pytest.mark.parametrize("wiring", WIRINGS)
def test_saturated_gates_give_no_nan(wiring: str) -> None:
    # sigmoid(-200) needs exp(200), infinite in float32: the gate must close to 0, not NaN.
    gate = torch.tensor([-200.0, -90.0, -20.0, 0.0, 20.0, 90.0, 200.0], device=DEVICE)
    gate.requires_grad_()
    up = torch.full_like(gate, 1.5).requires_grad_()
    out = WIRINGS[wiring](gate, up)
    out.sum().backward()
    gate64, up64 = (t.detach().double().requires_grad_() for t in (gate, up))
    expected = reference(gate64, up64)
    expected.sum().backward()
    for value, wanted in ((out, expected), (gate.grad, gate64.grad), (up.grad, up64.grad)):
        assert torch.isfinite(value).all()
        torch.testing.assert_close(value.detach().double(), wanted.detach(), rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize("which", ["gate", "up"])
def test_only_the_gradient_asked_for_is_computed(which: str) -> None:
    gate, up = inputs((2000,), torch.float32, grad=False)
    wanted = {"gate": gate, "up": up}[which].requires_grad_()
    swiglu.swiglu(gate, up).sum().backward()
    gate64, up64 = (t.detach().double().requires_grad_() for t in (gate, up))
    reference(gate64, up64).sum().backward()
    expected = {"gate": gate64, "up": up64}[which].grad
    assert_close_to_float64(wanted.grad, expected, torch.float32)
    other = up if which == "gate" else gate
    assert other.grad is None


@pytest.mark.parametrize("wiring", WIRINGS)
def test_empty_tensors_give_empty_results(wiring: str) -> None:
    gate, up = inputs((0,), torch.float32)
    out = WIRINGS[wiring](gate, up)
    out.sum().backward()
    assert out.shape == (0,) and gate.grad.shape == (0,) and up.grad.shape == (0,)


def test_operator_passes_opcheck() -> None:
    gate, up = inputs((300,), torch.float32)
    utilities = ["test_schema", "test_autograd_registration", "test_faketensor"]
    if not interpreted():
        # This one traces through the kernel's launch, which needs a compiled kernel.
        utilities.append("test_aot_dispatch_dynamic")
    torch.library.opcheck(swiglu.swiglu_op, (gate, up), test_utils=utilities)
    dout = randn(300, seed=3)
    torch.library.opcheck(
        swiglu.swiglu_backward_op, (gate.detach(), up.detach(), dout), test_utils=utilities
    )


def test_torch_compile_keeps_the_operator_as_one_node_without_graph_breaks() -> None:
    def block(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        return swiglu.swiglu_op(gate, up) * 2

    graphs = []

    def record(graph: torch.fx.GraphModule, example_inputs: list) -> object:
        graphs.append(graph)
        return graph.forward

    torch._dynamo.reset()
    gate, up = inputs((1500,), torch.float32)
    compiled = torch.compile(block, backend=record, fullgraph=True)
    out = compiled(gate, up)
    out.sum().backward()
    assert len(graphs) == 1
    targets = [node.target for node in graphs[0].graph.nodes if node.op == "call_function"]
    assert torch.ops.ninja_gap.swiglu.default in targets
    gate64, up64 = (t.detach().double().requires_grad_() for t in (gate, up))
    expected = reference(gate64, up64) * 2
    expected.sum().backward()
    assert_close_to_float64(out.detach(), expected.detach(), torch.float32)
    assert_close_to_float64(gate.grad, gate64.grad, torch.float32)


@pytest.mark.skipif(
    interpreted(), reason="Dynamo cannot trace a kernel that Triton's interpreter runs"
)
def test_torch_compile_of_the_launcher_leaves_its_eager_calls_working() -> None:
    # On an H100, compiling a function that called swiglu.swiglu left the launcher a
    # traced None for the inputs' specialisation: the next eager call at those shapes
    # failed with "'NoneType' object has no attribute 'run'".
    def block(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        return swiglu.swiglu(gate, up) * 2

    torch._dynamo.reset()
    gate, up = inputs((1000,), torch.float32)
    compiled = torch.compile(block)(gate, up)
    compiled.sum().backward()
    eager = block(gate.detach(), up.detach())
    gate64, up64 = (t.detach().double().requires_grad_() for t in (gate, up))
    expected = reference(gate64, up64) * 2
    expected.sum().backward()
    for out in (compiled.detach(), eager):
        assert_close_to_float64(out, expected.detach(), torch.float32)
    assert_close_to_float64(gate.grad, gate64.grad, torch.float32)


@pytest.mark.parametrize("wiring", WIRINGS)
def test_rejects_tensors_on_another_device(wiring: str) -> None:
    gate, up = inputs((16,), torch.float32, grad=False)
    with pytest.raises(ValueError, match=r"^up is on"):
        WIRINGS[wiring](gate, up.to(OTHER_DEVICE))


def test_rejects_dtypes_that_differ() -> None:
    gate, up = inputs((16,), torch.float32, grad=False)
    with pytest.raises(TypeError, match=r"gate is float32 but up is float16"):
        swiglu.swiglu(gate, up.half())


def test_rejects_an_unsupported_dtype() -> None:
    x = torch.arange(16, device=DEVICE)
    with pytest.raises(TypeError, match=r"gate has dtype int64; this kernel takes float16"):
        swiglu.swiglu(x, x)


def test_rejects_shapes_that_differ() -> None:
    gate, up = inputs((16,), torch.float32, grad=False)
    with pytest.raises(ValueError, match=r"gate has shape \(16,\) but up has shape \(4, 4\)"):
        swiglu.swiglu(gate, up.reshape(4, 4))


@pytest.mark.parametrize("wiring", WIRINGS)
def test_rejects_a_non_contiguous_input(wiring: str) -> None:
    gate, up = inputs((64,), torch.float32, grad=False)
    with pytest.raises(ValueError, match=r"gate is not contiguous"):
        WIRINGS[wiring](gate[::2], up[::2])


def test_rejects_something_that_is_not_a_tensor() -> None:
    gate, _ = inputs((4,), torch.float32, grad=False)
    with pytest.raises(TypeError, match=r"up must be a torch.Tensor, got list"):
        swiglu.swiglu(gate, [1.0, 2.0, 3.0, 4.0])
