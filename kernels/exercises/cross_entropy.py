"""Exercises of the gallery's cross-entropy page: the log-sum-exp, and ignored rows."""

import torch

from .model import N_, Case, Exercise, KernelTask, Launch

IGNORE_INDEX = -100


def _logits(
    rows: int, cols: int, offset: float = 0.0, spread: float = 1.0
) -> torch.Tensor:
    values = torch.arange(rows * cols, dtype=torch.float64).reshape(rows, cols)
    return ((values * 0.37) % 5.0 - 2.5) * spread + offset


def _case(
    name: str, logits: torch.Tensor, targets: list[int], block: int, **extra: object
) -> Case:
    return Case(
        name,
        {"logits": logits, "targets": torch.tensor(targets, dtype=torch.int64)},
        (logits.shape[0],),
        params={"BLOCK_SIZE": block},
        tile=(1,),
        **extra,
    )  # type: ignore[arg-type]


def _reference(case: Case) -> torch.Tensor:
    logits, targets = case.value("logits"), case.value("targets")
    valid = targets != IGNORE_INDEX
    picked = logits.gather(1, targets.clamp(min=0)[:, None])[:, 0]
    return torch.where(
        valid, torch.logsumexp(logits, dim=1) - picked, torch.zeros_like(picked)
    )


def _launch_lse(kernel: object, launch: Launch) -> None:
    logits, targets = launch.inputs["logits"], launch.inputs["targets"]
    kernel[(logits.shape[0],)](
        logits,
        targets,
        launch.out,
        logits.shape[1],
        BLOCK_SIZE=launch.params["BLOCK_SIZE"],
    )


def _lse_cases() -> tuple[Case, ...]:
    return (
        _case(
            N_("5 rows of 50 small logits, tiles of 64"),
            _logits(5, 50),
            [0, 7, 49, 3, 20],
            64,
        ),
        _case(
            N_("logits from 900 to 1100"),
            _logits(4, 50, offset=1000.0, spread=40.0),
            [1, 2, 3, 4],
            64,
            note=N_(
                "`exp(1000)` is infinity in float32: the exponent must not be large."
            ),
        ),
        _case(N_("one class"), _logits(2, 1), [0, 0], 16),
    )


LOG_SUM_EXP = Exercise(
    id="cross-entropy-log-sum-exp",
    lesson="cross_entropy",
    kind="fill-in",
    title=N_("The log-sum-exp"),
    statement=N_(
        "The loss of a row of logits `x` with the right class `t` is "
        "`log(sum(exp(x))) - x[t]`. This kernel, one program per row, loads the row and "
        "the target's logit; write the line that computes `log(sum(exp(x)))` so that it "
        "does not overflow, with logits near 1000 too.\n\n"
        'Check it with `check("cross-entropy-log-sum-exp", cross_entropy_kernel)`.'
    ),
    starter="""\
@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, losses_ptr, n_cols,
                         BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(
        logits_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf")
    )
    log_sum_exp = 0.0  # TODO: log(sum(exp(x))), without overflowing
    target = tl.load(targets_ptr + row)
    target_logit = tl.load(logits_ptr + row * n_cols + target)
    tl.store(losses_ptr + row, log_sum_exp - target_logit)
""",
    hints=(
        N_(
            "`log(sum(exp(x)))` is `m + log(sum(exp(x - m)))` for any `m`. Which `m` keeps "
            "every `exp` at most 1?"
        ),
        N_(
            "Take `m = tl.max(x, axis=0)`: the padding lanes hold -inf and add `exp(-inf) = 0`."
        ),
        N_(
            "`row_max = tl.max(x, axis=0)`, then "
            "`log_sum_exp = row_max + tl.log(tl.sum(tl.exp(x - row_max), axis=0))`."
        ),
    ),
    solution="""\
@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, losses_ptr, n_cols,
                         BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(
        logits_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf")
    )
    row_max = tl.max(x, axis=0)
    log_sum_exp = row_max + tl.log(tl.sum(tl.exp(x - row_max), axis=0))
    target = tl.load(targets_ptr + row)
    target_logit = tl.load(logits_ptr + row * n_cols + target)
    tl.store(losses_ptr + row, log_sum_exp - target_logit)
""",
    explanation=N_(
        "The shifted sum is at least 1 (the maximum contributes `exp(0)`), so its log is "
        "finite and at least 0. The page's kernel keeps the maximum and the log of the sum "
        "apart, and computes `(max - x[t]) + log(sum)`: with logits near 1e6 their sum "
        "would round away digits that the loss needs."
    ),
    entry="cross_entropy_kernel",
    task=KernelTask(_lse_cases(), _launch_lse, _reference),
    starter_diagnosis="wrong_values",
)


def _launch_ignore(kernel: object, launch: Launch) -> None:
    logits, targets = launch.inputs["logits"], launch.inputs["targets"]
    kernel[(logits.shape[0],)](
        logits,
        targets,
        launch.out,
        logits.shape[1],
        IGNORE_INDEX,
        BLOCK_SIZE=launch.params["BLOCK_SIZE"],
    )


def _ignore_cases() -> tuple[Case, ...]:
    return (
        _case(N_("5 rows, none ignored"), _logits(5, 50), [0, 7, 49, 3, 20], 64),
        _case(
            N_("5 rows, rows 0 and 3 ignored (target -100)"),
            _logits(5, 50),
            [IGNORE_INDEX, 7, 49, IGNORE_INDEX, 20],
            64,
            note=N_(
                "An ignored row has the loss 0, and its target is no column of the row."
            ),
        ),
    )


IGNORE = Exercise(
    id="cross-entropy-ignore-index",
    lesson="cross_entropy",
    kind="find-the-bug",
    title=N_("Rows that do not count"),
    statement=N_(
        "A row whose target is `ignore_index` (-100, PyTorch's default, used for padding "
        "tokens) must get the loss 0. This kernel is right when no row is ignored, and "
        "wrong otherwise. Find the bug and fix it.\n\n"
        'Check it with `check("cross-entropy-ignore-index", cross_entropy_kernel)`.'
    ),
    starter="""\
@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, losses_ptr, n_cols, ignore_index,
                         BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(
        logits_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf")
    )
    row_max = tl.max(x, axis=0)
    log_sum_exp = row_max + tl.log(tl.sum(tl.exp(x - row_max), axis=0))
    target = tl.load(targets_ptr + row)
    target_logit = tl.load(logits_ptr + row * n_cols + target)
    tl.store(losses_ptr + row, log_sum_exp - target_logit)
""",
    hints=(
        N_(
            "Where does `logits_ptr + row * n_cols + target` point when the target is -100?"
        ),
        N_(
            "An ignored row must neither read its target's logit (there is none) nor "
            "store a loss other than 0."
        ),
        N_(
            "`valid = target != ignore_index`; load with `mask=valid, other=0.0`; store "
            "`tl.where(valid, log_sum_exp - target_logit, 0.0)`."
        ),
    ),
    solution="""\
@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, losses_ptr, n_cols, ignore_index,
                         BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(
        logits_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf")
    )
    row_max = tl.max(x, axis=0)
    log_sum_exp = row_max + tl.log(tl.sum(tl.exp(x - row_max), axis=0))
    target = tl.load(targets_ptr + row)
    valid = target != ignore_index
    target_logit = tl.load(logits_ptr + row * n_cols + target, mask=valid, other=0.0)
    tl.store(losses_ptr + row, tl.where(valid, log_sum_exp - target_logit, 0.0))
""",
    explanation=N_(
        "With the target -100, the load reads 100 elements before the row: the previous "
        "row's logits, or for row 0 memory before the tensor. Masking the load is not "
        "enough: the row's loss must be 0 too, and the mean over the batch divides by "
        "the number of rows that count, as the page's `mean_loss_kernel` does."
    ),
    entry="cross_entropy_kernel",
    task=KernelTask(_ignore_cases(), _launch_ignore, _reference),
    starter_diagnosis="read_outside",
)

EXERCISES = (LOG_SUM_EXP, IGNORE)
