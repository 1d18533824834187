"""Exercises of the gallery's LayerNorm page: the variance's padding lanes, and a
prediction of what a constant row becomes."""

import torch

from ..operations.layer_norm import layer_norm
from ..triton_helpers.runtime import kernel_device
from .model import N_, AnswerTask, Case, Exercise, KernelTask, Launch
from .speed import rows_speed

EPS = 1e-5


def _rows(rows: int, cols: int, offset: float = 3.0) -> torch.Tensor:
    values = torch.arange(rows * cols, dtype=torch.float64).reshape(rows, cols)
    return (values * 0.37) % 5.0 - 2.5 + offset


def _cases() -> tuple[Case, ...]:
    def case(name: str, x: torch.Tensor, block: int, **extra: object) -> Case:
        cols = torch.arange(x.shape[1], dtype=torch.float64)
        inputs = {"x": x, "weight": cols * 0.25 + 0.5, "bias": cols * 0.125 - 1.0}
        return Case(
            name,
            inputs,
            tuple(x.shape),
            params={"eps": EPS, "BLOCK_SIZE": block},
            tile=(1, block),
            **extra,
        )  # type: ignore[arg-type]

    return (
        case(N_("6 rows of 64 values, tiles of 64"), _rows(6, 64), 64),
        case(
            N_("6 rows of 50 values with a mean near 3, tiles of 64"),
            _rows(6, 50),
            64,
            note=N_(
                "The 14 padding lanes of each tile must not take part in the variance."
            ),
        ),
        case(N_("one row of one value"), _rows(1, 1), 16),
    )


def _launch(kernel: object, launch: Launch) -> None:
    inputs, params = launch.inputs, launch.params
    x = inputs["x"]
    kernel[(x.shape[0],)](
        x,
        inputs["weight"],
        inputs["bias"],
        launch.out,
        x.shape[1],
        params["eps"],
        BLOCK_SIZE=params["BLOCK_SIZE"],
    )


def _reference(case: Case) -> torch.Tensor:
    x = case.value("x")
    centred = x - x.mean(dim=1, keepdim=True)
    rstd = torch.rsqrt(
        (centred * centred).mean(dim=1, keepdim=True) + case.params["eps"]
    )
    return centred * rstd * case.value("weight") + case.value("bias")


PADDING_VARIANCE = Exercise(
    id="layer-norm-padding-variance",
    lesson="layer_norm",
    kind="find-the-bug",
    title=N_("The variance of a partial tile"),
    statement=N_(
        "This LayerNorm kernel, one program per row, is right when a row fills its tile "
        "and wrong for rows of 50 values in tiles of 64, although the padding lanes load "
        "0 and the mean divides by `n_cols`. Find the bug and fix it.\n\n"
        'Check it with `check("layer-norm-padding-variance", layer_norm_kernel)`.'
    ),
    starter="""\
@triton.jit
def layer_norm_kernel(x_ptr, weight_ptr, bias_ptr, out_ptr, n_cols, eps,
                      BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    centred = x - mean
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
    weight = tl.load(weight_ptr + cols, mask=mask)
    bias = tl.load(bias_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, centred * rstd * weight + bias, mask=mask)
""",
    hints=(
        N_(
            "A padding lane adds 0 to the sum of the mean. What does it add to the sum of "
            "the squares, once the mean is subtracted?"
        ),
        N_(
            "Each padding lane adds `(0 - mean)**2`: the further the mean is from 0, the "
            "larger the error. Make `centred` 0 in the padding lanes."
        ),
        N_("`centred = tl.where(mask, x - mean, 0.0)`."),
    ),
    solution="""\
@triton.jit
def layer_norm_kernel(x_ptr, weight_ptr, bias_ptr, out_ptr, n_cols, eps,
                      BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    centred = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
    weight = tl.load(weight_ptr + cols, mask=mask)
    bias = tl.load(bias_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, centred * rstd * weight + bias, mask=mask)
""",
    explanation=N_(
        "A neutral value works for one reduction at a time: 0 is neutral for the sum of "
        "`x`, but after the mean is subtracted the padding lanes hold `-mean`. The page's "
        "kernel masks `centred` for this reason. The variance of LayerNorm divides by "
        "`n_cols`, not `n_cols - 1`, as `torch.nn.LayerNorm` does."
    ),
    entry="layer_norm_kernel",
    task=KernelTask(_cases(), _launch, _reference),
    speed=rows_speed(
        lambda x, weight, bias: layer_norm(x, weight, bias, EPS),
        lambda x, weight, bias: torch.nn.functional.layer_norm(
            x, x.shape[-1:], weight, bias, EPS
        ),
        ("weight", "bias"),
        eps=EPS,
    ),
    starter_diagnosis="wrong_values",
)


def _predicted() -> tuple[float, float]:
    device = kernel_device()
    x = torch.tensor([[5.0, 5.0, 5.0, 5.0], [1.0, 3.0, 1.0, 3.0]], device=device)
    weight = torch.full((4,), 2.0, device=device)
    bias = torch.full((4,), 0.5, device=device)
    y = layer_norm(x, weight, bias, eps=EPS).cpu()
    return round(float(y[0, 0]), 3), round(float(y[1, 1]), 3)


PREDICT_ROWS = Exercise(
    id="layer-norm-predict-rows",
    lesson="layer_norm",
    kind="predict",
    title=N_("LayerNorm of a constant row"),
    statement=N_(
        "The page's `layer_norm` normalises two rows, `(5, 5, 5, 5)` and `(1, 3, 1, 3)`, "
        "with the weight 2 and the bias 0.5 in every column and `eps = 1e-5`. Predict the "
        "first output of the first row and the second output of the second row, rounded "
        "to three decimals.\n\n"
        'Write them in `answer` and check them with `check("layer-norm-predict-rows", '
        "answer)`: the checker runs the page's kernel and rounds its output."
    ),
    starter="answer = (..., ...)  # y[0, 0] and y[1, 1], rounded to 3 decimals\n",
    hints=(
        N_(
            "A constant row equals its mean: every centred value is 0, and its variance is "
            "0, so only `eps` is under the root."
        ),
        N_(
            "The second row has the mean 2 and the variance 1: 3 becomes 1 before the "
            "weight and the bias."
        ),
    ),
    solution="answer = (0.5, 2.5)\n",
    explanation=N_(
        "The constant row: 0 times `1 / sqrt(eps)`, a large but finite number, is 0, and "
        "the output is the bias, 0.5; without `eps` it would be 0 times infinity, NaN. "
        "The second row: (3 - 2) / 1 = 1, times the weight 2, plus 0.5 is 2.5."
    ),
    entry="answer",
    task=AnswerTask(_predicted),
    starter_diagnosis="no_answer",
)

EXERCISES = (PADDING_VARIANCE, PREDICT_ROWS)
