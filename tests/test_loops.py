"""The loops lesson's kernels: reductions of a tile, and the three row-sum loops, against
float64; their errors; and what each loop compiles to for sm_90."""

import pytest
import torch

from kernels.operations import loops
from kernels.triton_helpers.runtime import kernel_device

DEVICE = kernel_device()


def matrix(rows: int, cols: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=generator, dtype=torch.float64).to(dtype).to(DEVICE)


@pytest.mark.parametrize("kernel", sorted(loops.KERNELS))
@pytest.mark.parametrize(
    "cols", [1, loops.BLOCK_SIZE - 1, loops.BLOCK_SIZE, 2 * loops.BLOCK_SIZE + 3]
)
def test_each_loop_sums_rows_of_any_length(kernel: str, cols: int) -> None:
    x = matrix(3, cols, torch.bfloat16)
    expected = x.cpu().double().sum(dim=1)
    got = loops.row_sums(x, kernel).cpu().double()
    # float32 sums of up to ~2k bfloat16 values: far below one bfloat16 step.
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-4), (kernel, got, expected)


def test_row_sums_writes_into_out_and_takes_no_rows() -> None:
    x = matrix(2, 50)
    out = torch.full((2,), float("nan"), device=DEVICE)
    assert loops.row_sums(x, "prefetch", out=out) is out
    assert torch.allclose(out.cpu().double(), x.cpu().double().sum(dim=1), atol=1e-5)
    assert loops.row_sums(matrix(0, 5)).shape == (0,)


def test_writing_into_out_counts_as_an_in_place_write_for_autograd() -> None:
    # A graph that saved ``out`` for its backward must refuse the new values, as it does
    # after PyTorch's own torch.sum(x, dim=1, out=out); an out that wants a gradient, or
    # that overlaps x in part, is refused.
    x = matrix(3, 40)
    weight = torch.ones(3, device=DEVICE, requires_grad=True)
    out = torch.zeros(3, device=DEVICE)
    product = (weight * out).sum()  # saves out, the gradient of weight
    loops.row_sums(x, "loop", out=out)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        product.backward()
    with pytest.raises(RuntimeError, match="out requires grad"):
        loops.row_sums(x, out=torch.zeros(3, device=DEVICE, requires_grad=True))
    wide = matrix(3, 40).float()
    with pytest.raises(ValueError, match="out overlaps x"):
        loops.row_sums(wide, out=wide.view(-1)[1:4])


def test_a_tile_folds_to_row_sums_and_column_maxima_with_masked_lanes_left_out() -> None:
    # 3 x 5 in a 4 x 8 tile: the masked lanes must count as 0 in a sum and as minus
    # infinity in a maximum; all values negative, so a masked 0 would win a maximum.
    x = -matrix(3, 5).abs() - 1
    row_sums, column_maxima = loops.reduce_tile(x)
    assert torch.allclose(row_sums.cpu().double(), x.cpu().double().sum(dim=1), atol=1e-5)
    assert torch.equal(column_maxima.cpu(), x.cpu().max(dim=0).values)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: loops.row_sums(matrix(2, 3), "unrolled"), ValueError,
         "'unrolled'; it must be one of loop"),
        (lambda: loops.row_sums(matrix(2, 3)[0]), ValueError, r"shape \(3,\); it must be a matrix"),
        (lambda: loops.row_sums(matrix(2, 3).double()), TypeError, "dtype float64"),
        (lambda: loops.row_sums(matrix(2, 3).t()), ValueError, "not contiguous"),
        (lambda: loops.row_sums(matrix(2, 3), out=torch.empty(3, device=DEVICE)), ValueError,
         r"out has shape \(3,\); it must hold one value per row of x \(2,\)"),
        (lambda: loops.row_sums(matrix(2, 3).requires_grad_()), RuntimeError, "requires grad"),
        (lambda: loops.reduce_tile(matrix(3, 3000)), ValueError, "too many for one program"),
        (lambda: loops.reduce_tile(matrix(2, 3, torch.int32)), TypeError, "dtype int32"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_by_name(call, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_only_tl_range_pipelines_the_loads_of_a_loop_without_a_dot() -> None:
    # The launch's num_stages leaves a plain loop of loads alone, even the one that
    # prefetches by hand; tl.range(num_stages=3) issues its loads as asynchronous copies.
    for kernel in ("loop", "prefetch"):
        assert loops.compiled_loads(kernel, num_stages=3)["cp.async"] == 0
        assert loops.compiled_loads(kernel, num_stages=3)["ld.global"] >= 1
    pipelined = loops.compiled_loads("pipelined", num_stages=1, stages=3)
    assert pipelined["cp.async"] >= 2 and pipelined["ld.global"] == 0
    assert loops.compiled_loads("pipelined", num_stages=3, stages=1)["cp.async"] == 0


def test_no_long_row_loop_of_the_course_asks_for_pipelining() -> None:
    # The lesson says so: every tl.range in these modules passes one stage, or a
    # NUM_STAGES argument, which the softmax passes as 1 and the cross-entropy as its
    # FORWARD_STAGES, 1.
    import ast
    import inspect

    from kernels.operations import cross_entropy, layer_norm, rms_norm, softmax
    from kernels.triton_helpers import online_softmax, row_scale

    for module in (softmax, online_softmax, cross_entropy, layer_norm, rms_norm, row_scale):
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.range":
                stages = {k.arg: ast.unparse(k.value) for k in node.keywords}.get("num_stages")
                # None: the launch's num_stages, which pipelines no load of these loops.
                assert stages in (None, "1", "NUM_STAGES"), (module.__name__, stages)
    calls = [
        node
        for node in ast.walk(ast.parse(inspect.getsource(softmax)))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "online_max_and_sum"
    ]
    assert calls and all(ast.unparse(call.args[4]) == "1" for call in calls)
    assert cross_entropy.FORWARD_STAGES == 1
