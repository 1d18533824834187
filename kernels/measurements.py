"""The measurement files in ``gallery/measurements/``: where they are, their contract, I/O.

Each file holds one benchmark as recorded by a GPU run (see DESIGN.md, "Measurements
file"). Pages and tests read them through :func:`load`, which validates the contract, so a
malformed file fails loudly with its path instead of drawing a wrong plot.
"""

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

MEASUREMENTS_DIR = Path(__file__).resolve().parent.parent / "gallery" / "measurements"

METRICS = ("GB/s", "TFLOP/s")
ENVIRONMENT_KEYS = ("gpu", "driver", "cuda", "torch", "triton", "python", "date", "command")


class MeasurementError(ValueError):
    """A measurement file that breaks the contract; the message names the file."""


def path_for(benchmark: str) -> Path:
    """The file that holds the recorded measurement of ``benchmark``."""
    return MEASUREMENTS_DIR / f"{benchmark}.json"


def _positive_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def validate(doc: Any, source: str) -> dict[str, Any]:
    """Return ``doc`` if it follows the measurement contract, else raise MeasurementError.

    ``source`` names the file (or other origin) in the error message.
    """

    def fail(problem: str) -> MeasurementError:
        return MeasurementError(f"{source}: {problem}")

    if not isinstance(doc, dict):
        raise fail("the top level must be a JSON object")
    for key in ("benchmark", "metric", "x_name", "x", "series", "ceiling", "environment"):
        if key not in doc:
            raise fail(f"missing key {key!r}")
    if not isinstance(doc["benchmark"], str) or not doc["benchmark"]:
        raise fail("'benchmark' must be a non-empty string")
    if doc["metric"] not in METRICS:
        raise fail(f"'metric' is {doc['metric']!r}; it must be one of {', '.join(METRICS)}")
    x = doc["x"]
    if not isinstance(x, list) or not x or not all(_positive_number(v) for v in x):
        raise fail("'x' must be a non-empty list of positive numbers")
    if x != sorted(x) or len(set(x)) != len(x):
        raise fail("'x' must be strictly increasing")
    series = doc["series"]
    if not isinstance(series, dict) or not series:
        raise fail("'series' must be a non-empty object of provider -> values")

    def check_per_x(values: Any, label: str) -> None:
        if not isinstance(values, list) or len(values) != len(x):
            raise fail(f"{label} must have one value per x ({len(x)})")
        if not all(_positive_number(v) for v in values):
            raise fail(f"{label} holds a value that is not a positive number")

    for provider, values in series.items():
        check_per_x(values, f"series {provider!r}")
    if "same_size_copy" in doc:
        check_per_x(doc["same_size_copy"], "'same_size_copy'")
    ceiling = doc["ceiling"]
    if not isinstance(ceiling, dict) or not isinstance(ceiling.get("name"), str):
        raise fail("'ceiling' must be an object with a 'name'")
    if not _positive_number(ceiling.get("value")):
        raise fail("'ceiling.value' must be a positive number")
    environment = doc["environment"]
    if not isinstance(environment, dict):
        raise fail("'environment' must be an object")
    for key in ENVIRONMENT_KEYS:
        if not isinstance(environment.get(key), str) or not environment[key]:
            raise fail(f"'environment.{key}' must be a non-empty string")
    try:
        datetime.fromisoformat(environment["date"])
    except ValueError:
        raise fail(f"'environment.date' is not an ISO 8601 date: {environment['date']!r}") from None
    return doc


def load(benchmark: str) -> dict[str, Any]:
    """Read and validate the recorded measurement of ``benchmark``."""
    path = path_for(benchmark)
    if not path.exists():
        raise MeasurementError(
            f"{path}: no recorded measurement for {benchmark!r}; "
            "run `nox -s bench` on a GPU machine to record one"
        )
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise MeasurementError(f"{path}: not valid JSON ({error})") from None
    return validate(doc, str(path))


def save(doc: dict[str, Any]) -> Path:
    """Validate ``doc`` and write it to its benchmark's file; return the path."""
    path = path_for(doc.get("benchmark", ""))
    validate(doc, str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path


def worst_fraction_of_ceiling(doc: dict[str, Any], provider: str, min_x: float) -> float:
    """The lowest ``provider`` rate over the ceiling, among sizes of at least ``min_x``.

    A conservative headline: the provider reaches at least this share of the ceiling at
    every large size that was measured.
    """
    rates = [r for x, r in zip(doc["x"], doc["series"][provider], strict=True) if x >= min_x]
    if not rates:
        raise MeasurementError(f"{doc['benchmark']}: no size of at least {min_x:g} was measured")
    return min(rates) / doc["ceiling"]["value"]
