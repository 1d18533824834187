"""One-off: move kernels/*.py into rooms and rewrite every import and path (issue 34)."""

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent
ROOMS = {
    "operations": """attention attention_ablation attention_gluon cross_entropy debugging dropout
        layer_norm loops matmul rms_norm softmax swiglu vector_add""",
    "triton_helpers": """aligned_rows checks column_sums compiler_output direct_launch first_order
        launch online_softmax row_scale row_tiles runtime tile_dot""",
    "declarations": "spec",
    "harness": """bench ceilings fingerprint launch_cost launch_record liger measurements profiling
        provenance recording saved_profiles shards swap timing""",
    "figures": "other_gpus plotting report roofline tile_map",
    "text": "messages",
}
ROOM_OF = {m: room for room, names in ROOMS.items() for m in names.split()}
ROOM_OF["locales"] = "text"
MODULES = sorted(m for m in ROOM_OF if m != "locales")


def git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=ROOT, check=True)


def move_files() -> None:
    for room in ROOMS:
        (ROOT / "kernels" / room).mkdir(exist_ok=True)
    for m in MODULES:
        git("mv", f"kernels/{m}.py", f"kernels/{ROOM_OF[m]}/{m}.py")
    git("mv", "kernels/locales", "kernels/text/locales")


def rewrite_relative(path: Path, own_room: str | None, depth: int) -> None:
    """Rewrite ``from .x import`` / ``from . import a, b`` / ``from ..x import`` in a
    module now ``depth`` packages below kernels (own_room: its room, None for exercises)."""
    source = path.read_text()
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        # The module path it meant before the move, relative to kernels/.
        old_base = [] if own_room is None else []  # kernels/<module>.py lived in kernels
        if own_room is None:  # exercises: kernels/exercises/x.py
            if node.level == 1:
                continue  # within exercises: unchanged
            assert node.level == 2, (path, node.lineno)
        else:
            assert node.level == 1, (path, node.lineno)
        target = node.module
        up = "." * (depth + 1)
        if target is None:  # from . import a, b  (or from .. import a, b)
            groups: dict[str, list[str]] = {}
            for alias in node.names:
                room = ROOM_OF[alias.name]
                text = alias.name + (f" as {alias.asname}" if alias.asname else "")
                groups.setdefault(room, []).append(text)
            new = []
            for room, names in groups.items():
                where = "." if room == own_room else f"{up}{room}"
                joined = ", ".join(names)
                stmt = f"from {where} import {joined}"
                if len(stmt) > 88:
                    body = "".join(f"    {n},\n" for n in names)
                    stmt = f"from {where} import (\n{body})"
                new.append(stmt)
            replacement = "\n".join(new)
        else:
            head = target.split(".")[0]
            room = ROOM_OF[head]
            where = f".{target}" if room == own_room else f"{up}{room}.{target}"
            segment = ast.get_source_segment(source, node)
            replacement = re.sub(r"^from\s+\.+[\w.]*\s+import", f"from {where} import", segment)
        del old_base
        edits.append(
            (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, replacement)
        )
    for lineno, col, end_lineno, end_col, replacement in sorted(edits, reverse=True):
        head = lines[lineno - 1][:col]
        tail = lines[end_lineno - 1][end_col:]
        lines[lineno - 1 : end_lineno] = [head + replacement + tail]
    path.write_text("".join(lines))


EXTERNAL_FROM = re.compile(
    r"\bfrom kernels import ([\w, ]+)$|\bfrom kernels import \(([^)]*)\)", re.M
)


def rewrite_external_text(text: str) -> str:
    # from kernels import a, b  ->  grouped by room
    def split_import(match: re.Match[str]) -> str:
        body = match.group(1) or match.group(2)
        names = [n.strip() for n in body.replace("\n", " ").split(",") if n.strip()]
        groups: dict[str, list[str]] = {}
        for n in names:
            base = n.split(" as ")[0]
            room = ROOM_OF.get(base)
            key = f"kernels.{room}" if room else "kernels"
            groups.setdefault(key, []).append(n)
        out = []
        for where, ns in groups.items():
            stmt = f"from {where} import {', '.join(ns)}"
            if len(stmt) > 99:
                stmt = f"from {where} import (\n" + "".join(f"    {n},\n" for n in ns) + ")"
            out.append(stmt)
        return "\n".join(out)

    text = EXTERNAL_FROM.sub(split_import, text)
    names = "|".join(MODULES)
    # kernels.x (dotted: imports, strings, roles) and kernels/x.py or kernels/x (paths)
    text = re.sub(
        rf"\bkernels\.({names})\b", lambda m: f"kernels.{ROOM_OF[m.group(1)]}.{m.group(1)}", text
    )
    text = re.sub(
        rf"\bkernels/({names})\.py\b",
        lambda m: f"kernels/{ROOM_OF[m.group(1)]}/{m.group(1)}.py",
        text,
    )
    text = re.sub(r"\bkernels/locales\b", "kernels/text/locales", text)
    return text


def main() -> None:
    move_files()
    for m in MODULES:
        rewrite_relative(ROOT / "kernels" / ROOM_OF[m] / f"{m}.py", ROOM_OF[m], 1)
    for path in sorted((ROOT / "kernels" / "exercises").glob("*.py")):
        rewrite_relative(path, None, 1)
    init = ROOT / "kernels" / "__init__.py"
    init.write_text(
        init.read_text().replace(
            "from . import runtime as _runtime", "from .triton_helpers import runtime as _runtime"
        )
    )
    for room in ROOMS:
        (ROOT / "kernels" / room / "__init__.py").write_text(f'"""{room}"""\n')
    skip = {"scratch_move.py"}
    for path in subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split():
        p = ROOT / path
        if path in skip or path.startswith("gallery/measurements/") or not p.is_file():
            continue
        if p.suffix not in {
            ".py",
            ".md",
            ".po",
            ".toml",
            ".txt",
            ".rst",
            ".cfg",
            ".yaml",
            ".sh",
            ".in",
            ".ini",
        } and p.name not in {"run"}:
            continue
        if path.startswith("kernels/") and not path.startswith("kernels/text/locales"):
            # inside the package: only docstrings/comments with dotted names or paths
            new = rewrite_external_text_inside(p.read_text())
        else:
            new = rewrite_external_text(p.read_text())
        if new != p.read_text():
            p.write_text(new)


def rewrite_external_text_inside(text: str) -> str:
    names = "|".join(MODULES)
    text = re.sub(
        rf"\bkernels\.({names})\b", lambda m: f"kernels.{ROOM_OF[m.group(1)]}.{m.group(1)}", text
    )
    text = re.sub(
        rf"\bkernels/({names})\.py\b",
        lambda m: f"kernels/{ROOM_OF[m.group(1)]}/{m.group(1)}.py",
        text,
    )
    text = re.sub(r"\bkernels/locales\b", "kernels/text/locales", text)
    return text


if __name__ == "__main__":
    main()
