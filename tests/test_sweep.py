"""A generated sweep, as a careless or a hostile user would try the course: every launcher
on inputs of every kind (dtypes, layouts, views, values, shapes), records mutated key by
key (read, and loaded as the build loads them, in a copy of a GPU's folder), quiz banks
mutated likewise. Each case either gives the right answer (compared with float64 on the
CPU) or a clear error raised by the course's own code (a named type, a message, the
raise in ``kernels/`` or ``quiz/``): never a wrong answer, and never a traceback from
inside Triton, PyTorch or YAML. Inputs are small, so that the sweep's
cases run in Triton's interpreter in well under two minutes."""

import copy
import itertools
import json
import math
import shutil
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from conftest import ROOT
from kernel_inputs import DEVICE
from records import committed_doc, sample_doc

from kernels.harness import bench, fingerprint, measurements
from kernels.operations import (
    attention,
    cross_entropy,
    dropout,
    layer_norm,
    matmul,
    rms_norm,
    softmax,
    swiglu,
    vector_add,
)
from quiz.bank import BANK_KEYS, OPTION_KEYS, QUESTION_KEYS, QuizBankError, load_bank

# Where a clear error may come from: the course's checks, not a library's insides.
OWN_CODE = (str(ROOT / "kernels"), str(ROOT / "quiz"))
ERRORS = (TypeError, ValueError, RuntimeError, NotImplementedError, OverflowError)
TOLERANCE = {torch.float64: 1e-9, torch.float32: 2e-4, torch.float16: 2e-2,
             torch.bfloat16: 6e-2}  # fmt: skip


def _raised_by_own_code(error: BaseException) -> bool:
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and frames[-1].filename.startswith(OWN_CODE)


def _assert_clear_error(error: BaseException, case: str) -> None:
    assert isinstance(error, ERRORS), f"{case}: {type(error).__name__}: {error}"
    assert str(error).strip(), f"{case}: an error with no message"
    frames = traceback.extract_tb(error.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
    assert _raised_by_own_code(error), (
        f"{case}: {type(error).__name__} from inside a library ({where}): {error}"
    )


def _assert_close(out: Any, expected: torch.Tensor, dtype: torch.dtype, case: str) -> None:
    assert isinstance(out, torch.Tensor), f"{case}: returned {type(out).__name__}"
    assert out.shape == expected.shape, f"{case}: shape {tuple(out.shape)}"
    assert out.dtype == dtype, f"{case}: dtype {out.dtype}, expected {dtype}"
    got, want = out.detach().double().cpu(), expected.double().cpu()
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan), f"{case}: NaN where there should be none"
    finite = torch.isfinite(want)
    assert torch.equal(got[~finite & ~nan], want[~finite & ~nan]), f"{case}: infinities"
    scale = want[finite].abs().max().item() if finite.any() else 1.0
    error = (got[finite] - want[finite]).abs().max().item() if finite.any() else 0.0
    assert error <= TOLERANCE[dtype] * max(scale, 1.0), f"{case}: off by {error:.3g}"


# ---- Launchers ------------------------------------------------------------------------


def _values(shape: tuple[int, ...], kind: str, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, dtype=torch.float64, generator=generator)
    if kind == "special" and x.numel() >= 3:
        flat = x.view(-1)
        flat[0], flat[1], flat[2] = math.nan, math.inf, -math.inf
    elif kind == "huge":
        x = x * 1e20 + 3e20
    elif kind == "tiny":
        x = x * 1e-30
    return x


# What each launcher is given (name, shape), its call, and its float64 reference. The
# cases vary one argument at a time; the others stay float32 and ordinary.
Launcher = tuple[tuple[tuple[str, tuple[int, ...]], ...], Callable[..., Any], Callable[..., Any]]
LAUNCHERS: dict[str, Launcher] = {
    "add": ((("x", (5, 37)), ("y", (5, 37))), vector_add.add, lambda x, y: x + y),
    "softmax": ((("x", (5, 37)),), softmax.softmax, lambda x: torch.softmax(x, -1)),
    "rms_norm": ((("x", (5, 37)), ("weight", (37,))), rms_norm.rms_norm,
                 lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6)),
    "layer_norm": ((("x", (5, 37)), ("weight", (37,)), ("bias", (37,))),
                   layer_norm.layer_norm,
                   lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)),
    "swiglu": ((("gate", (5, 37)), ("up", (5, 37))), swiglu.swiglu,
               lambda g, u: F.silu(g) * u),
    "dropout_p0": ((("x", (5, 37)),), lambda x: dropout.dropout(x, 0.0, seed=3),
                   lambda x: x),
    "cross_entropy": ((("logits", (5, 37)),),
                      lambda x: cross_entropy.cross_entropy(x, _TARGETS.to(DEVICE)),
                      lambda x: F.cross_entropy(x, _TARGETS)),
    "matmul": ((("a", (24, 40)), ("b", (40, 16))), matmul.matmul, lambda a, b: a @ b),
    "attention": ((("q", (1, 2, 20, 16)), ("k", (1, 2, 20, 16)), ("v", (1, 2, 20, 16))),
                  attention.attention,
                  lambda q, k, v: F.scaled_dot_product_attention(q, k, v)),
}  # fmt: skip
_TARGETS = torch.tensor([0, 36, 5, 2, 17])
# The dtypes each launcher takes (its first argument's; the others follow it).
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
HALVES = (torch.float16, torch.bfloat16)
TAKES = {name: FLOATS for name in LAUNCHERS} | {"matmul": HALVES, "attention": HALVES,
                                                "swiglu": (*FLOATS, torch.float64)}  # fmt: skip


def _default_dtype(name: str) -> torch.dtype:
    return TAKES[name][0]


def _variant(base: torch.Tensor, variant: str) -> Any:
    """``base`` (float64 values, on the CPU) as the variant hands it to a launcher."""
    if variant == "list":
        return base.tolist()
    if variant == "numpy":
        return base.numpy()
    if variant == "transposed":
        return base.transpose(-1, -2).contiguous().transpose(-1, -2) if base.dim() > 1 else base
    if variant == "strided":
        wide = torch.zeros(*base.shape[:-1], base.shape[-1] * 2, dtype=base.dtype)
        wide[..., ::2] = base
        return wide[..., ::2]
    if variant == "expanded":
        return (
            base[..., :1, :].expand(base.shape) if base.dim() > 1 else base[:1].expand(base.shape)
        )
    if variant == "negated":
        return torch._neg_view(-base)
    if variant == "sparse":
        return base.to_sparse()
    if variant == "scalar":
        return base.reshape(-1)[0].clone()
    if variant == "empty":
        return base[..., :0, :] if base.dim() > 1 else base[:0]
    if variant == "unsqueezed":
        return base.unsqueeze(0)
    return base


VARIANTS = ("plain", "list", "numpy", "transposed", "strided", "expanded", "negated",
            "sparse", "scalar", "empty", "unsqueezed")  # fmt: skip
VALUES = ("normal", "special", "huge", "tiny")
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32,
          torch.bool, torch.complex64)  # fmt: skip


def _launcher_cases() -> list[tuple[str, int, str, str, torch.dtype]]:
    cases = []
    for name, (args, _, _) in LAUNCHERS.items():
        for position in range(len(args)):
            cases += [(name, position, variant, "normal", _default_dtype(name))
                      for variant in VARIANTS]  # fmt: skip
            cases += [(name, position, "plain", "normal", dtype) for dtype in DTYPES]
        cases += [(name, 0, "plain", values, dtype)
                  for values, dtype in itertools.product(VALUES[1:], TAKES[name])]  # fmt: skip
        cases += [(name, -1, "plain", "normal", dtype) for dtype in DTYPES]  # all arguments
    return cases


LAUNCHER_CASES = _launcher_cases()


def _case_id(case: tuple) -> str:
    name, position, variant, values, dtype = case
    return f"{name}-{position}-{variant}-{values}-{str(dtype).removeprefix('torch.')}"


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
@pytest.mark.parametrize("case", LAUNCHER_CASES, ids=[_case_id(c) for c in LAUNCHER_CASES])
def test_a_launcher_gives_the_right_answer_or_a_clear_error(case: tuple) -> None:
    name, position, variant, values, dtype = case
    args, call, reference = LAUNCHERS[name]
    bases = [_values(shape, values if index in (position, -1) else "normal", index)
             for index, (_, shape) in enumerate(args)]  # fmt: skip
    default = _default_dtype(name)
    inputs = []
    for index, base in enumerate(bases):
        chosen = dtype if index == position or position == -1 else default
        converted = base.to(chosen)
        if index == position:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                converted = _variant(converted, variant)
        if isinstance(converted, torch.Tensor):
            converted = converted.to(DEVICE)
        inputs.append(converted)
    label = _case_id(case)
    try:
        out = call(*inputs)
    except Exception as error:  # the sweep's point: what kind of error, and from where
        _assert_clear_error(error, label)
        return
    # An answer: it must be the right one, for inputs that are what they claim to be.
    tensors = [torch.as_tensor(value) for value in inputs]
    assert all(t.layout is torch.strided for t in tensors), f"{label}: took a sparse tensor"
    result_dtype = tensors[0].dtype
    assert result_dtype in TOLERANCE, f"{label}: computed on {result_dtype}"
    expected = reference(*(t.detach().cpu().double() for t in tensors))
    if name == "cross_entropy":
        expected = expected.to(torch.float64)
        result_dtype = out.dtype
    _assert_close(out, expected, result_dtype, label)


def _shape_cases() -> list[tuple[str, tuple[tuple[int, ...], ...]]]:
    """(launcher, the shapes of its arguments) at awkward sizes: one element, one
    column, lengths that are not a multiple of any tile, a leading dimension or two."""
    cases = []
    row_wise = ("add", "softmax", "rms_norm", "layer_norm", "swiglu", "dropout_p0",
                "cross_entropy")  # fmt: skip
    for name, lead, n in itertools.product(row_wise, ((1,), (3,), (2, 3)),
                                           (1, 2, 31, 64, 100, 1000)):  # fmt: skip
        if name == "cross_entropy" and len(lead) > 1:
            continue  # logits are (rows, classes)
        args = LAUNCHERS[name][0]
        cases.append((name, tuple((*lead, n) if len(shape) > 1 else (n,)
                                  for _, shape in args)))  # fmt: skip
    for m, k, n in itertools.product((1, 17, 64), repeat=3):
        cases.append(("matmul", ((m, k), (k, n))))
    for seq_len, head_dim in itertools.product((1, 17, 65), (16, 64)):
        cases.append(("attention", ((1, 2, seq_len, head_dim),) * 3))
    return cases


SHAPE_CASES = _shape_cases()


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
@pytest.mark.parametrize("name, shapes", SHAPE_CASES,
                         ids=[f"{name}-{shapes}" for name, shapes in SHAPE_CASES])  # fmt: skip
def test_a_launcher_at_an_awkward_shape(name: str, shapes: tuple) -> None:
    _, call, reference = LAUNCHERS[name]
    dtype = _default_dtype(name)
    inputs = [_values(shape, "normal", index).to(dtype).to(DEVICE)
              for index, shape in enumerate(shapes)]  # fmt: skip
    label = f"{name} at {shapes}"
    if name == "cross_entropy":
        rows, classes = shapes[0]
        targets = torch.arange(rows) % classes
        call = lambda x: cross_entropy.cross_entropy(x, targets.to(DEVICE))  # noqa: E731
        reference = lambda x: F.cross_entropy(x, targets)  # noqa: E731
    try:
        out = call(*inputs)
    except Exception as error:
        _assert_clear_error(error, label)
        return
    expected = reference(*(t.cpu().double() for t in inputs))
    _assert_close(out, expected, out.dtype if name == "cross_entropy" else dtype, label)


# ---- Records --------------------------------------------------------------------------


# Values a careless or hostile edit puts where a record holds something else.
WRONG_VALUES: list[Any] = [None, "text", -1, 0, 1.5, [], {}, [None], True, float("nan"),
                           "<b>markup</b>"]  # fmt: skip


def _changed(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``base`` with the value at the dotted ``path`` ("series.Triton.0") set."""
    doc = copy.deepcopy(base)
    *parents, last = path.split(".")
    target: Any = doc
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    target[int(last) if isinstance(target, list) else last] = value
    return doc


def _audited(base: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The mutations of ``base`` that an audit found drawn, or escaping as a traceback
    from elsewhere: the build's loader must refuse each of them by name."""
    return {
        "check as a list": _changed(base, "check", []),
        "check as the word ok": _changed(base, "check", "ok"),
        "timing as a list": _changed(base, "timing", []),
        "x as floats": _changed(base, "x", [float(size) for size in base["x"]]),
        "a GPU named cpu": _changed(base, "environment.gpu", "cpu"),
        "a GPU name with markup": _changed(base, "environment.gpu", "NVIDIA H100<script>"),
        "a commit not in the history": _changed(base, "code.commit", "0123456789ab"),
        "a -dirty commit": _changed(base, "code.commit", base["code"]["commit"] + "-dirty"),
        "a ceiling of 400 digits": _changed(base, "ceiling.value", 10**400),
        "a rate of 400 digits": _changed(base, "series.Triton.0", 10**400),
    }


def _record_mutations(base: dict[str, Any]) -> list[tuple[str, Any]]:
    """(label, document or raw text) of ``base`` mutated one key at a time, and the
    audit's mutations."""
    mutations: list[tuple[str, Any]] = []
    for key in base:
        doc = copy.deepcopy(base)
        del doc[key]
        mutations.append((f"no {key}", doc))
        for value in WRONG_VALUES:
            mutations.append((f"{key}={value!r:.20}", _changed(base, key, value)))
    for key in ("series", "call_series"):
        for value in WRONG_VALUES:
            rates = [value] * len(base["x"])
            mutations.append((f"{key}.Triton=[{value!r:.20}]",
                              _changed(base, f"{key}.Triton", rates)))  # fmt: skip
    for key in ("ceiling", "code", "environment", "timing", "check"):
        if not isinstance(base.get(key), dict):
            continue
        for inner in base[key]:
            for value in WRONG_VALUES[:6]:
                mutations.append((f"{key}.{inner}={value!r:.20}",
                                  _changed(base, f"{key}.{inner}", value)))  # fmt: skip
    text = json.dumps(base)
    # A number of 5,000 digits (json.dumps cannot write one; a file can hold one).
    huge = "1" + "0" * 5000
    mutations += [(f"{key} of 5000 digits", text.replace(json.dumps(base[key]), huge, 1))
                  for key in ("x", "work") if json.dumps(base[key]) in text]  # fmt: skip
    mutations.append(("a size of 5000 digits", text.replace(str(base["x"][0]), huge, 1)))
    mutations += [(f"cut at {n}", text[:n]) for n in (0, 1, 10, len(text) // 2, len(text) - 1)]
    mutations.append(("duplicate key", text.replace('"metric"', '"metric": "GB/s", "metric"', 1)))
    mutations.append(("not UTF-8", b"\xff\xfe" + text.encode()))
    mutations.append(("a list", "[]"))
    return mutations + list(_audited(base).items())


def _write(path: Path, doc: Any) -> None:
    """Write a mutated record: bytes and text as they are, anything else as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(doc, bytes):
        path.write_bytes(doc)
    elif isinstance(doc, str):
        path.write_text(doc, encoding="utf-8")
    else:
        path.write_text(json.dumps(doc), encoding="utf-8")


RECORD_CASES = _record_mutations(sample_doc())


@pytest.mark.parametrize("label, doc", RECORD_CASES, ids=[label for label, _ in RECORD_CASES])
def test_a_mutated_record_is_read_or_refused_by_name(tmp_path: Path, label: str, doc) -> None:
    path = tmp_path / "vector_add.json"
    _write(path, doc)
    try:
        measurements.read(path)
    except measurements.MeasurementError as error:
        assert "vector_add.json" in str(error), f"{label}: {error}"
    except Exception as error:  # anything else is a traceback the reader would see
        pytest.fail(f"{label}: {type(error).__name__}: {error}")


# The primary GPU's folder as committed, whose vector_add record the build's loader is
# given mutated, in a copy of the folder.
COMMITTED = measurements.gpu_dir()
BASE = committed_doc(COMMITTED / "vector_add.json")
AUDITED = _audited(BASE)


def _beside_another_gpu_name() -> dict[str, Any]:
    # One folder, two names of one GPU model: a record beside one that names its GPU
    # otherwise ("NVIDIA H100" beside "NVIDIA H100 80GB HBM3").
    neighbour = committed_doc(COMMITTED / "dropout.json")
    other = "NVIDIA H100" if BASE["environment"]["gpu"] != "NVIDIA H100" else "NVIDIA H100 PCIe"
    return {"dropout.json": _changed(neighbour, "environment.gpu", other)}


# (label, the folder's name, its files that differ from the committed folder's).
LOADER_CASES = [
    (label, "cpu" if label == "a GPU named cpu" else COMMITTED.name, {"vector_add.json": doc})
    for label, doc in _record_mutations(BASE)
] + [("beside another GPU's name", COMMITTED.name, _beside_another_gpu_name())]
MUST_REFUSE = {*AUDITED, "beside another GPU's name"}


@pytest.mark.parametrize("label, folder, files", LOADER_CASES,
                         ids=[label for label, _, _ in LOADER_CASES])  # fmt: skip
def test_a_mutated_record_is_drawn_or_refused_by_name_by_the_build_s_loader(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, label: str, folder: str, files: dict
) -> None:
    # What the build draws goes through bench.load_current, which adds the spec's, the
    # folder's, git's and the ceiling's checks to the reader's: any of them may meet
    # what the reader let through.
    shutil.copytree(COMMITTED, tmp_path / folder)
    for name, doc in files.items():
        _write(tmp_path / folder / name, doc)
    monkeypatch.setattr(measurements, "MEASUREMENTS_ROOT", tmp_path)
    monkeypatch.delenv(fingerprint.COMMIT_VARIABLE, raising=False)
    try:
        bench.load_current(vector_add.BENCHMARK, folder)
    except measurements.MeasurementError as error:
        assert f"{folder}/vector_add.json" in str(error), f"{label}: {error}"
        return
    except Exception as error:  # anything else is a traceback the build would show
        pytest.fail(f"{label}: {type(error).__name__}: {error}")
    # Drawn: none of the audit's mutations may be; the history is asked only in a clone.
    if label == "a commit not in the history" and fingerprint.in_history("0" * 12) is None:
        return
    assert label not in MUST_REFUSE, f"{label}: drawn"


# ---- Quiz banks -----------------------------------------------------------------------

BANK = ROOT / "quiz" / "intro.yaml"


def _explicit_key(text: str, key: str) -> str:
    """``text`` with its first ``key:`` written as YAML's explicit key ``? [key]``, a list,
    its colon on the next line under the question mark."""
    at = text.index(f"{key}:")
    column = at - text.rfind("\n", 0, at) - 1
    return text[:at] + f"? [{key}]\n" + " " * column + text[at + len(key) :]


def _bank_mutations() -> list[tuple[str, str]]:
    text = BANK.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    mutations = [(f"without line {n + 1}", "".join(lines[:n] + lines[n + 1 :]))
                 for n in range(0, min(len(lines), 120))]  # fmt: skip
    keys = sorted({line.split(":")[0].strip(" -") for line in lines if ":" in line})
    for key, value in itertools.product(keys, ("[1, 2]", "{a: 1}", "3", "null", '"\\e"')):
        mutations.append((f"{key}: {value}", text.replace(f"{key}:", f"{key}: {value} #", 1)))
    # Each key of a bank written as no word: YAML reads it as a list or a mapping, which
    # Python cannot hold as a key (such keys once escaped as a TypeError).
    bank_keys = sorted(BANK_KEYS | QUESTION_KEYS | OPTION_KEYS)
    for key, odd_key in itertools.product(bank_keys, ("[1, 2]", "{a: 1}")):
        mutations.append((f"{odd_key} for {key}", text.replace(f"{key}:", f"{odd_key}:", 1)))
    mutations += [(f"? [{key}]", _explicit_key(text, key)) for key in bank_keys]
    mutations += [(f"cut at {n}", text[:n]) for n in (0, 5, len(text) // 3, len(text) // 2)]
    mutations.append(("tab indentation", text.replace("  ", "\t")))
    mutations.append(("anchor alias", "a: &a [1]\nb: *a\n" + text))
    return mutations


BANK_CASES = _bank_mutations()


@pytest.mark.parametrize("label, text", BANK_CASES, ids=[label for label, _ in BANK_CASES])
def test_a_mutated_bank_is_read_or_refused_by_name(tmp_path: Path, label: str, text: str) -> None:
    path = tmp_path / "intro.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_bank(path)
    except QuizBankError as error:
        assert "intro.yaml" in str(error), f"{label}: {error}"
    except Exception as error:
        pytest.fail(f"{label}: {type(error).__name__}: {error}")


def test_the_sweep_holds_at_least_a_thousand_cases() -> None:
    cases = LAUNCHER_CASES + SHAPE_CASES + RECORD_CASES + LOADER_CASES + BANK_CASES
    assert len(cases) >= 1000
