"""Kernel variants compiled for an H200 (sm_90) on any machine.

Triton's interpreter runs a kernel's Python, not its compilation: a kernel can pass
every interpreter test and still fail to compile for a GPU (a loop-carried value that
changes shape, a type the compiler refuses). Each variant the launchers choose between
is compiled here, and where a variant exists to load vectors, its PTX is checked for
them.
"""

import re

import pytest
import triton.language as tl

from kernels.triton_helpers.compiler_output import compile_for_gpu

F32 = tl.float32


def ptx_of(kernel: str, signature: dict[str, str], constexprs: dict, aligned: tuple[str, ...],
           num_warps: int = 4) -> str:  # fmt: skip
    for name in constexprs:
        signature = {**signature, name: "constexpr"}
    return compile_for_gpu(kernel, signature, constexprs, aligned, num_warps=num_warps)["ptx"]


def vector_loads(ptx: str) -> bool:
    return bool(re.search(r"ld\.global[.:\w]*\.v[24]\.b32", ptx))


NORM_ARGS = {"x_ptr": "*bf16", "weight_ptr": "*bf16", "out_ptr": "*bf16", "n_rows": "i32",
             "n_cols": "i32", "eps": "fp32"}  # fmt: skip


@pytest.mark.parametrize(("rows", "block"), [(4, 1024), (1, 8192)])
def test_rms_norm_forward_takes_several_rows_in_vectors(rows: int, block: int) -> None:
    signature = {**NORM_ARGS, "inv_rms_ptr": "*fp32", "STATS": "i1"}
    signature = {name: signature[name] for name in ("x_ptr", "weight_ptr", "out_ptr",
                 "inv_rms_ptr", "n_rows", "n_cols", "eps", "STATS")}  # fmt: skip
    ptx = ptx_of("kernels.operations.rms_norm:rms_norm_kernel", signature,
                 {"ACC": F32, "BLOCK_SIZE": block, "ROWS": rows, "EVEN": False},
                 ("x_ptr", "weight_ptr", "out_ptr", "n_cols"), num_warps=8)  # fmt: skip
    assert vector_loads(ptx)


@pytest.mark.parametrize(("rows", "block"), [(4, 1024), (1, 8192)])
def test_layer_norm_forward_takes_several_rows_in_vectors(rows: int, block: int) -> None:
    signature = {**NORM_ARGS, "bias_ptr": "*bf16", "mean_ptr": "*fp32", "rstd_ptr": "*fp32",
                 "STATS": "i1"}  # fmt: skip
    signature = {name: signature[name] for name in ("x_ptr", "weight_ptr", "bias_ptr", "out_ptr",
                 "mean_ptr", "rstd_ptr", "n_rows", "n_cols", "eps", "STATS")}  # fmt: skip
    ptx = ptx_of("kernels.operations.layer_norm:layer_norm_forward_kernel", signature,
                 {"ACC": F32, "BLOCK_SIZE": block, "ROWS": rows, "EVEN": False},
                 ("x_ptr", "weight_ptr", "bias_ptr", "out_ptr", "n_cols"), num_warps=8)  # fmt: skip
    assert vector_loads(ptx)


CE_ARGS = {
    "logits_ptr": "*bf16",
    "targets_ptr": "*i64",
    "losses_ptr": "*fp32",
    "max_ptr": "*fp32",
    "log_sum_ptr": "*fp32",
    "n_cols": "i32",
    "ignore_index": "i32",
}
CE_ALIGNED = ("logits_ptr", "targets_ptr", "losses_ptr", "max_ptr", "log_sum_ptr")


@pytest.mark.parametrize("stats", [True, False])
def test_cross_entropy_forward_loads_vectors_from_rows_of_odd_length(stats: bool) -> None:
    # n_cols is not promised to be a multiple of 16 (50,257): only the three-part walk
    # (ALIGN=8) loads vectors.
    options = {"ACC": F32, "BLOCK_SIZE": 8192, "NUM_STAGES": 1, "EVEN": False, "STATS": stats}
    walked = ptx_of("kernels.operations.cross_entropy:cross_entropy_forward_kernel", CE_ARGS,
                    {**options, "ALIGN": 8}, CE_ALIGNED)  # fmt: skip
    plain = ptx_of("kernels.operations.cross_entropy:cross_entropy_forward_kernel", CE_ARGS,
                   {**options, "ALIGN": 1}, CE_ALIGNED)  # fmt: skip
    assert vector_loads(walked) and not vector_loads(plain)


def test_cross_entropy_backward_loads_vectors_from_rows_of_odd_length() -> None:
    signature = {"logits_ptr": "*bf16", "targets_ptr": "*i64", "max_ptr": "*fp32",
                 "log_sum_ptr": "*fp32", "grad_loss_ptr": "*fp32", "n_valid_ptr": "*i32",
                 "dlogits_ptr": "*bf16", "n_cols": "i32", "ignore_index": "i32"}  # fmt: skip
    aligned = ("logits_ptr", "dlogits_ptr", "targets_ptr", "max_ptr", "log_sum_ptr")
    for align, vectors in ((8, True), (1, False)):
        options = {"ACC": F32, "BLOCK_SIZE": 8192, "ALIGN": align}
        ptx = ptx_of("kernels.operations.cross_entropy:cross_entropy_backward_kernel", signature,
                     options, aligned, num_warps=8)  # fmt: skip
        assert vector_loads(ptx) == vectors


def test_the_mean_loss_compiles_without_the_count() -> None:
    # No backward pass: n_valid_ptr is None, a compile-time constant.
    signature = {"losses_ptr": "*fp32", "targets_ptr": "*i64", "loss_ptr": "*fp32",
                 "n_valid_ptr": "constexpr", "n_rows": "i32", "ignore_index": "i32"}  # fmt: skip
    ptx = ptx_of("kernels.operations.cross_entropy:mean_loss_kernel", signature,
                 {"n_valid_ptr": None, "BLOCK_SIZE": 4096}, (), num_warps=16)  # fmt: skip
    assert ".entry mean_loss_kernel" in ptx


def test_softmax_of_long_rows_loads_vectors_from_rows_of_odd_length() -> None:
    signature = {"x_ptr": "*bf16", "out_ptr": "*bf16", "n_cols": "i32"}
    for align, vectors in ((8, True), (1, False)):
        options = {"ACC": F32, "BLOCK_SIZE": 16384, "EVEN": False, "ALIGN": align}
        ptx = ptx_of("kernels.operations.softmax:softmax_looped_kernel", signature, options,
                     ("x_ptr", "out_ptr"), num_warps=16)  # fmt: skip
        assert vector_loads(ptx) == vectors


# The fused normalisation backward kernels: their signatures, and (rows per tile, block,
# warps) as their launchers pick them for long and for short rows.
_NORM_BACKWARDS = {
    "kernels.operations.rms_norm:rms_norm_backward_kernel": (
        {"dy_ptr": "*bf16", "x_ptr": "*bf16", "weight_ptr": "*bf16", "inv_rms_ptr": "*fp32",
         "dx_ptr": "*bf16", "partial_dw_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32"},
        [(1, 4096, 8), (4, 1024, 4)],
    ),
    "kernels.operations.layer_norm:layer_norm_backward_kernel": (
        {"dy_ptr": "*bf16", "x_ptr": "*bf16", "weight_ptr": "*bf16", "mean_ptr": "*fp32",
         "rstd_ptr": "*fp32", "dx_ptr": "*bf16", "partial_dw_ptr": "*fp32",
         "partial_db_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32"},
        [(1, 8192, 8), (8, 1024, 8)],
    ),
}  # fmt: skip


@pytest.mark.parametrize("prefetch", [True, False])
@pytest.mark.parametrize(
    ("kernel", "rows", "block", "warps"),
    [(kernel, *shape) for kernel, (_, shapes) in _NORM_BACKWARDS.items() for shape in shapes],
)
def test_norm_backward_compiles_to_vector_loads(
    kernel: str, rows: int, block: int, warps: int, prefetch: bool
) -> None:
    signature = _NORM_BACKWARDS[kernel][0]
    options = {"ACC": F32, "BLOCK_SIZE": block, "ROWS_PER_TILE": rows, "PREFETCH": prefetch}
    if kernel.startswith("kernels.operations.rms_norm"):
        # RMSNorm reads a tile it does not prefetch twice, as its launcher does.
        options["RELOAD"] = not prefetch
    aligned = ("dy_ptr", "x_ptr", "weight_ptr", "dx_ptr", "n_cols")
    assert vector_loads(ptx_of(kernel, signature, options, aligned, num_warps=warps))


def test_attention_forward_stores_the_log_sum_exp_only_when_asked() -> None:
    # Without a backward pass the launcher passes lse_ptr=None, a compile-time constant:
    # the kernel compiled for it has no store of the log-sum-exp.
    signature = {"q_ptr": "*bf16", "k_ptr": "*bf16", "v_ptr": "*bf16", "out_ptr": "*bf16",
                 "lse_ptr": "*fp32", "seq_len": "i32", "qk_scale": "fp32"}  # fmt: skip
    options = {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False, "EVEN": False}
    aligned = ("q_ptr", "k_ptr", "v_ptr", "out_ptr")
    kernel = "kernels.operations.attention:attention_forward_kernel"
    with_lse = ptx_of(kernel, signature, options, aligned)
    without = ptx_of(kernel, signature, {**options, "lse_ptr": None}, aligned)
    stores = [len(re.findall(r"st\.global", ptx)) for ptx in (with_lse, without)]
    assert stores[0] > stores[1] > 0


def test_softmax_backward_of_long_rows_loads_vectors_from_rows_of_odd_length() -> None:
    signature = {"y_ptr": "*bf16", "dy_ptr": "*bf16", "dx_ptr": "*bf16", "n_cols": "i32"}
    for align, vectors in ((8, True), (1, False)):
        options = {"ACC": F32, "BLOCK_SIZE": 8192, "EVEN": False, "ALIGN": align}
        kernel = "kernels.operations.softmax:softmax_backward_looped_kernel"
        ptx = ptx_of(kernel, signature, options, ("y_ptr", "dy_ptr", "dx_ptr"), num_warps=16)
        assert vector_loads(ptx) == vectors


@pytest.mark.parametrize("c_descriptor", [True, False], ids=["c-descriptor", "c-pointer"])
@pytest.mark.parametrize("flatten", [True, False], ids=["flattened", "nested"])
def test_the_persistent_matmul_compiles(flatten: bool, c_descriptor: bool) -> None:
    # C through its descriptor, or through pointers where its rows are unaligned.
    c = "tensordesc<bf16[128, 128]>" if c_descriptor else "*bf16"
    signature = {"a_desc": "tensordesc<bf16[128, 64]>", "b_desc": "tensordesc<bf16[64, 128]>",
                 "c": c, "M": "i32", "N": "i32", "K": "i32", "M_BUCKET": "i32",
                 "stride_cm": "i32", "partials": "*fp32", "counters": "*i32",
                 "max_split": "i32"}  # fmt: skip
    options = {"ACTIVATION": "none", "A_TRANSPOSED": False, "B_TRANSPOSED": False,
               "DTYPE": tl.bfloat16, "C_DESCRIPTOR": c_descriptor, "PROGRAMS": 264,
               "SLOTS": 132, "FLATTEN": flatten, "BLOCK_M": 128, "BLOCK_N": 128,
               "BLOCK_K": 64, "GROUP_M": 8}  # fmt: skip
    ptx = ptx_of("kernels.operations.matmul:matmul_tma_persistent_kernel", signature, options, (),
                 num_warps=8)  # fmt: skip
    assert "wgmma" in ptx and "cp.async.bulk.tensor" in ptx
    # The pieces of a split tile count their arrivals with an atomic that orders the
    # partial sums written before it (release) and read after it (acquire).
    assert re.search(r"atom\.global\.gpu\.acq_rel\.add", ptx)
    # The store of C: a bulk tensor copy from shared memory, or plain 2-byte stores.
    assert ("cp.async.bulk.tensor.2d.global.shared" in ptx) == c_descriptor
    assert bool(re.search(r"st\.global\.b16", ptx)) == (not c_descriptor)


def test_layer_norm_chunked_forward_loads_vectors() -> None:
    signature = {
        "x_ptr": "*bf16",
        "weight_ptr": "*bf16",
        "bias_ptr": "*bf16",
        "out_ptr": "*bf16",
        "mean_ptr": "*fp32",
        "rstd_ptr": "*fp32",
        "n_cols": "i32",
        "eps": "fp32",
        "STATS": "i1",
    }
    options = {"ACC": F32, "CHUNK": 1024}
    ptx = ptx_of(
        "kernels.operations.layer_norm:layer_norm_forward_chunked_kernel",
        signature,
        options,
        ("x_ptr", "weight_ptr", "bias_ptr", "out_ptr", "n_cols"),
        num_warps=4,
    )
    assert vector_loads(ptx)


def test_dropout_loads_vectors_whatever_the_length() -> None:
    # The length is not promised to be a multiple of 16: full tiles still load vectors.
    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32", "p": "fp32",
                 "scale": "fp32", "seed": "i64"}  # fmt: skip
    ptx = ptx_of("kernels.operations.dropout:dropout_kernel", signature, {"BLOCK_SIZE": 4096},
                 ("x_ptr", "out_ptr"), num_warps=4)  # fmt: skip
    assert vector_loads(ptx)


def test_rms_norm_chunked_forward_loads_vectors() -> None:
    signature = {"x_ptr": "*bf16", "weight_ptr": "*bf16", "out_ptr": "*bf16",
                 "inv_rms_ptr": "*fp32", "n_cols": "i32", "eps": "fp32", "STATS": "i1"}  # fmt: skip
    ptx = ptx_of(
        "kernels.operations.rms_norm:rms_norm_chunked_kernel",
        signature,
        {"ACC": F32, "CHUNK": 1024},
        ("x_ptr", "weight_ptr", "out_ptr", "n_cols"),
    )
    assert vector_loads(ptx)


MATMUL_POINTERS = ("a_ptr", "b_ptr", "c_ptr")
MATMUL_SIZES = ("M", "N", "K", "M_BUCKET", "stride_am", "stride_bk", "stride_cm")


@pytest.mark.parametrize("aligned", [True, False], ids=["n=2048", "n=2047"])
def test_the_pointer_matmul_pipelines_16_byte_copies_only_when_rows_are_aligned(
    aligned: bool,
) -> None:
    # What the matmul page prints and the aligned copy rests on: as an n x n launch
    # specializes it, the pointer kernel's loop loads its tiles with cp.async (16 bytes,
    # issued ahead) when every size and stride is a multiple of 16, and one 2-byte
    # ld.global per value when they are not.
    from kernels.operations import matmul

    config = matmul.HOPPER_CONFIGS[0]
    signature = dict.fromkeys(MATMUL_POINTERS, "*bf16") | dict.fromkeys(MATMUL_SIZES, "i32")
    constexprs = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "ACTIVATION": "none",
                  "A_TRANSPOSED": False, "B_TRANSPOSED": False, **config.kwargs}  # fmt: skip
    signature |= dict.fromkeys(constexprs, "constexpr")
    marked = MATMUL_POINTERS + (MATMUL_SIZES if aligned else ())
    launch = {"num_warps": config.num_warps, "num_stages": config.num_stages}
    ptx = compile_for_gpu("kernels.operations.matmul:matmul_kernel", signature, constexprs, marked,
                          **launch)["ptx"]  # fmt: skip
    copies = re.findall(r"cp\.async\.cg\.shared\.global", ptx)
    two_byte_loads = re.findall(r"ld\.global\.b16", ptx)
    assert (bool(copies), bool(two_byte_loads)) == ((True, False) if aligned else (False, True))
