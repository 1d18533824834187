"""What a gallery page prints under its figure: the large sizes, against the ceiling and
the faster of the PyTorch baselines, read from the measurement itself."""

from typing import Any

from kernels.bench import BenchmarkSpec

BASELINES = ("PyTorch", "torch.compile")


def large_sizes(spec: BenchmarkSpec, doc: dict[str, Any], min_bytes: float) -> list[dict[str, Any]]:
    """One row per measured size whose call moves at least ``min_bytes``: the Triton rate,
    its share of the ceiling, and its ratio to the faster baseline at that size."""
    rows = []
    ceiling = doc["ceiling"]["value"]
    for index, size in enumerate(doc["x"]):
        moved = spec.work(size, spec.dtype)
        if moved < min_bytes:
            continue
        triton_rate = doc["series"]["Triton"][index]
        best = max(BASELINES, key=lambda name: doc["series"][name][index])
        rows.append({
            "size": size,
            "megabytes": moved / 1e6,
            "triton": triton_rate,
            "of_ceiling": triton_rate / ceiling,
            "best_baseline": best,
            "vs_best": triton_rate / doc["series"][best][index],
        })  # fmt: skip
    return rows


def print_large_sizes(
    spec: BenchmarkSpec,
    doc: dict[str, Any],
    min_bytes: float = 256e6,
    *,
    ceiling_goal: float | None = None,
    baseline_goal: float | None = None,
) -> list[dict[str, Any]]:
    """Print :func:`large_sizes` as a table and return its rows.

    With ``ceiling_goal`` (a share of the ceiling) or ``baseline_goal`` (a ratio to the
    faster baseline), each row also says whether the measurement reached it.
    """
    rows = large_sizes(spec, doc, min_bytes)
    print(f"Sizes where one call moves at least {min_bytes / 1e6:,.0f} MB ({spec.metric}):")
    goals = []
    if ceiling_goal is not None:
        goals.append(f"goal {ceiling_goal:.0%}")
    if baseline_goal is not None:
        goals.append(f"goal {baseline_goal:.2f}x")
    if goals:
        print("Goals: a share of the ceiling, a ratio to the faster baseline; met in this run?")
    print(
        f"{spec.x_name:>11} {'MB/call':>8} {'Triton':>8} {'of ceiling':>11} "
        f"{'faster baseline':>16} {'Triton vs it':>13}" + "".join(f" {g:>13}" for g in goals)
    )
    for row in rows:
        verdicts = []
        if ceiling_goal is not None:
            verdicts.append("met" if row["of_ceiling"] >= ceiling_goal else "MISSED")
        if baseline_goal is not None:
            verdicts.append("met" if row["vs_best"] >= baseline_goal else "MISSED")
        print(
            f"{row['size']:>11,} {row['megabytes']:>8,.0f} {row['triton']:>8,.0f} "
            f"{row['of_ceiling']:>11.1%} {row['best_baseline']:>16} {row['vs_best']:>12.2f}x"
            + "".join(f" {v:>13}" for v in verdicts)
        )
    return rows
