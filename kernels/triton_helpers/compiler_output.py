"""Real compiler output for a kernel, for a GPU the machine need not have.

Triton compiles ahead of time for any target it knows: given a kernel, the types of
its arguments and the values of its ``tl.constexpr`` parameters, it produces Triton IR,
LLVM IR and PTX for, say, an sm_90 GPU on a machine without one. Compilation needs the
real kernel, not the interpreter's stand-in, so it runs in a child process started
without ``TRITON_INTERPRET``.
"""

import contextlib
import importlib
import json
import os
import subprocess
import sys
from typing import Any

STAGES = ("ttir", "ttgir", "llir", "ptx")


def compile_for_gpu(
    kernel: str,
    signature: dict[str, str],
    constexprs: dict[str, Any],
    divisible_by_16: tuple[str, ...] = (),
    arch: int = 90,
    debug: bool = False,
    num_warps: int = 4,
    num_stages: int = 3,
    shared_memory: bool = False,
) -> dict[str, str]:
    """The IR of ``kernel`` ("module:function") compiled for CUDA compute capability ``arch``.

    ``signature`` gives each argument's Triton type (``"*fp32"``, ``"i32"``, or
    ``"constexpr"``); ``constexprs`` the values of the constexpr arguments;
    ``divisible_by_16`` the arguments promised to be multiples of 16 (for a pointer: 16-byte
    aligned), which Triton assumes on its own at launch when it sees them so; ``debug`` compiles
    as ``TRITON_DEBUG=1`` would at launch (device assertions and integer overflow checks
    kept); ``num_warps`` and ``num_stages`` as at launch. A constexpr may be a Triton
    dtype (``tl.float32``).
    Returns the text of each stage in :data:`STAGES` (a Gluon kernel has no "ttir"),
    and with ``shared_memory``, under ``"shared"``, the bytes of shared memory that one
    program asks for at launch (Triton's metadata: the PTX declares its shared memory
    without a size), as decimal text like the rest of the reply.
    """
    sent = {name: _send(value) for name, value in constexprs.items()}
    request = json.dumps(
        {
            "kernel": kernel,
            "signature": signature,
            "constexprs": sent,
            "divisible_by_16": list(divisible_by_16),
            "arch": arch,
            "debug": debug,
            "num_warps": num_warps,
            "num_stages": num_stages,
            "shared_memory": shared_memory,
        }
    )
    # TRITON_DEFAULT_FP_FUSION=1 keeps today's default and silences newer Tritons' notice.
    env = {**os.environ, "TRITON_INTERPRET": "0", "TRITON_DEFAULT_FP_FUSION": "1"}
    result = subprocess.run(
        [sys.executable, "-m", __name__, request],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"compiling {kernel} for sm_{arch} failed:\n{result.stderr[-3000:]}"
        )
    return json.loads(result.stdout)


def _send(value: Any) -> Any:
    # A Triton dtype travels to the child process as its name ("fp32").
    import triton.language as tl

    return {"triton_dtype": value.name} if isinstance(value, tl.dtype) else value


def _received(value: Any) -> Any:
    import triton.language as tl

    if isinstance(value, dict) and set(value) == {"triton_dtype"}:
        return tl.dtype(value["triton_dtype"])
    return value


def _compile_request(request: dict[str, Any]) -> dict[str, str]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    module_name, function_name = request["kernel"].split(":")
    kernel = getattr(importlib.import_module(module_name), function_name)
    attrs = {
        (kernel.arg_names.index(name),): [["tt.divisibility", 16]]
        for name in request["divisible_by_16"]
    }
    constexprs = {
        name: _received(value) for name, value in request["constexprs"].items()
    }
    # A Gluon kernel (``@gluon.jit``) is compiled from its own kind of source: its
    # layouts are given, not inferred.
    source_type = ASTSource
    if kernel.is_gluon():
        from triton.experimental.gluon._runtime import GluonASTSource

        source_type = GluonASTSource
    source = source_type(
        fn=kernel, signature=request["signature"], constexprs=constexprs, attrs=attrs
    )
    target = GPUTarget("cuda", request["arch"], 32)
    options = {key: request[key] for key in ("debug", "num_warps", "num_stages")}
    compiled = triton.compile(source, target=target, options=options)
    # A Gluon kernel starts from TritonGPU IR: it has no Triton IR stage.
    reply = {stage: compiled.asm[stage] for stage in STAGES if stage in compiled.asm}
    if request["shared_memory"]:
        reply["shared"] = str(compiled.metadata.shared)
    return reply


if __name__ == "__main__":
    # What the kernel prints while compiling (tl.static_print) goes to stderr: stdout is the reply.
    with contextlib.redirect_stdout(sys.stderr):
        reply = _compile_request(json.loads(sys.argv[1]))
    print(json.dumps(reply))
