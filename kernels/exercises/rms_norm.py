"""Exercises of the gallery's RMSNorm page: the inverse root mean square, and a
prediction of one row's output."""

import torch

from ..operations.rms_norm import rms_norm
from ..triton_helpers.runtime import kernel_device
from .model import N_, AnswerTask, Case, Exercise, KernelTask, Launch
from .speed import rows_speed

EPS = 1e-6


def _rows(rows: int, cols: int) -> torch.Tensor:
    values = torch.arange(rows * cols, dtype=torch.float64).reshape(rows, cols)
    return (values * 0.37) % 5.0 - 2.5


def _cases() -> tuple[Case, ...]:
    def case(name: str, x: torch.Tensor, block: int, **extra: object) -> Case:
        weight = torch.arange(x.shape[1], dtype=torch.float64) * 0.25 + 0.5
        return Case(
            name,
            {"x": x, "weight": weight},
            tuple(x.shape),
            params={"eps": EPS, "BLOCK_SIZE": block},
            tile=(1, block),
            **extra,
        )  # type: ignore[arg-type]

    zeros = _rows(3, 16)
    zeros[1] = 0.0
    return (
        case(N_("6 rows of 64 values, tiles of 64"), _rows(6, 64), 64),
        case(N_("6 rows of 50 values, tiles of 64"), _rows(6, 50), 64),
        case(
            N_("a row of zeros among 3 rows of 16 values"),
            zeros,
            16,
            note=N_(
                "A row of zeros has a mean square of 0: `eps` keeps its root from being 0."
            ),
        ),
        case(
            N_("float16, 4 rows of 100 values, tiles of 128"),
            _rows(4, 100),
            128,
            dtype=torch.float16,
        ),
    )


def _launch(kernel: object, launch: Launch) -> None:
    x, weight, params = launch.inputs["x"], launch.inputs["weight"], launch.params
    kernel[(x.shape[0],)](
        x,
        weight,
        launch.out,
        x.shape[1],
        params["eps"],
        BLOCK_SIZE=params["BLOCK_SIZE"],
    )


def _reference(case: Case) -> torch.Tensor:
    x = case.value("x")
    inv_rms = torch.rsqrt((x * x).mean(dim=1, keepdim=True) + case.params["eps"])
    return x * inv_rms * case.value("weight")


INVERSE_ROOT = Exercise(
    id="rms-norm-inverse-root",
    lesson="rms_norm",
    kind="fill-in",
    title=N_("The inverse root mean square"),
    statement=N_(
        "An RMSNorm kernel, one program per row, with the line that computes the row's "
        "inverse root mean square left out: `1 / sqrt(mean(x**2) + eps)`, the mean over "
        "the `n_cols` values of the row. Write it.\n\n"
        'Check it with `check("rms-norm-inverse-root", rms_norm_kernel)`.'
    ),
    starter="""\
@triton.jit
def rms_norm_kernel(x_ptr, weight_ptr, out_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    weight = tl.load(weight_ptr + cols, mask=mask).to(tl.float32)
    inv_rms = 1.0  # TODO: 1 / sqrt(mean of the squares of the row + eps)
    tl.store(out_ptr + row * n_cols + cols, x * inv_rms * weight, mask=mask)
""",
    hints=(
        N_(
            "The padding lanes hold 0, so they add nothing to `tl.sum(x * x, axis=0)`; "
            "but how many values does the mean divide by?"
        ),
        N_(
            "Divide the sum of squares by `n_cols`, not by `BLOCK_SIZE`, and add `eps` "
            "before the root."
        ),
        N_("`inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)`."),
    ),
    solution="""\
@triton.jit
def rms_norm_kernel(x_ptr, weight_ptr, out_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    weight = tl.load(weight_ptr + cols, mask=mask).to(tl.float32)
    inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * n_cols + cols, x * inv_rms * weight, mask=mask)
""",
    explanation=N_(
        "One number per row, computed in float32 and used for every value of the row: "
        "the page's kernel also stores it for the backward pass, which then does not sum "
        "the squares again. Without `eps`, a row of zeros gives 0 times infinity, NaN; "
        "dividing by `BLOCK_SIZE` makes every row whose length is not a power of two "
        "too large."
    ),
    entry="rms_norm_kernel",
    task=KernelTask(_cases(), _launch, _reference),
    speed=rows_speed(
        lambda x, weight: rms_norm(x, weight, EPS),
        lambda x, weight: torch.nn.functional.rms_norm(x, x.shape[-1:], weight, EPS),
        ("weight",),
        eps=EPS,
    ),
    starter_diagnosis="wrong_values",
)


def _predicted_row() -> tuple[float, float]:
    device = kernel_device()
    x = torch.tensor([[1.0, 7.0]], device=device)
    weight = torch.tensor([2.0, 1.0], device=device)
    y = rms_norm(x, weight, eps=EPS).cpu()[0]
    return round(float(y[0]), 4), round(float(y[1]), 4)


PREDICT_ROW = Exercise(
    id="rms-norm-predict-row",
    lesson="rms_norm",
    kind="predict",
    title=N_("RMSNorm of one short row"),
    statement=N_(
        "The page's `rms_norm` normalises the row `(1, 7)` with the weight `(2, 1)` and "
        "`eps = 1e-6`. Predict the two output values, rounded to four decimals, before "
        "running anything.\n\n"
        'Write them in `answer` and check them with `check("rms-norm-predict-row", '
        "answer)`: the checker runs the page's kernel and rounds its output."
    ),
    starter="answer = (..., ...)  # the two outputs, rounded to 4 decimals\n",
    hints=(
        N_(
            "RMSNorm does not subtract the mean: the mean of the squares of (1, 7) is (1 + 49) / 2."
        ),
        N_(
            "The root mean square is 5; `eps` changes it far below four decimals. Divide "
            "by it, then multiply by the weight."
        ),
    ),
    solution="answer = (0.4, 1.4)\n",
    explanation=N_(
        "The mean of the squares is 25, its root 5: the row becomes (0.2, 1.4), and the "
        "weight doubles the first value, (0.4, 1.4). LayerNorm would first subtract the "
        "mean, 4, and give values of opposite signs."
    ),
    entry="answer",
    task=AnswerTask(_predicted_row),
    starter_diagnosis="no_answer",
)

EXERCISES = (INVERSE_ROOT, PREDICT_ROW)
