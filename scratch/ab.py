"""GPU A/B: the Triton launcher's kernel-time rate now, at chosen sizes and knob values,
beside the recorded Triton rate and the recorded fastest baseline at that size.

    python3 scratch/ab.py [FILTER]      (prints one line per point; writes ab.json to $OUT)

FILTER: comma-separated parts of benchmark names to run, or with "-" to skip
("-matmul,-flash,launch" runs the rest and the launch overhead; "matmul,flash" those).
"""
import functools
import importlib
import json
import os
import sys
import time

import torch

from kernels import bench, timing

SPECS = bench.discover()
CUDA = torch.device("cuda")
RESULTS = []


def recorded(name, size):
    with open(f"gallery/measurements/{name}.json") as f:
        d = json.load(f)
    i = d["x"].index(size) if size in d["x"] else None
    if i is None:
        return None, None, None
    s = d["series"]
    bases = {k: v[i] for k, v in s.items() if k != "Triton" and v[i]}
    best = max(bases, key=bases.get) if bases else None
    return s["Triton"][i], best, bases.get(best)


def rate(spec, size):
    bench.check(spec, size)  # right first, on fresh random inputs
    gen = torch.Generator(device=CUDA).manual_seed(size)
    inputs = spec.make_inputs(size, spec.dtype, CUDA, gen)
    call, leaves = bench._timed_call(spec, spec.triton, inputs)
    ms = min(timing.kernel_time_ms(call, leaves) for _ in range(2))
    scale = 1e6 if spec.metric == "GB/s" else 1e9
    return spec.work(size, spec.dtype) / ms / scale


def _shown_value(value):
    # A tiles dict is shown by its head-dim-128 entries only.
    if isinstance(value, dict):
        return ";".join(f"{k[0]}={tuple(vars(v).values())}" for k, v in value.items() if k[1] == 128)
    return str(value)


def run(name, sizes, knob=None, values=(None,), clear=(), fixed=None):
    spec = SPECS[name]
    module = importlib.import_module(spec.module) if knob else None
    original = getattr(module, knob) if knob else None
    # Other knobs held at a value for this sweep (restored after).
    held = {k: getattr(module, k) for k in (fixed or {})}
    for k, v in (fixed or {}).items():
        setattr(module, k, v)
    for value in values:
        if knob:
            setattr(module, knob, value)
        for fn in clear:
            fn.cache_clear()
        for size in sizes:
            t0 = time.time()
            try:
                now = rate(spec, size)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"{name} {size} {knob}={_shown_value(value)}: FAILED {type(e).__name__}: {e}"[:400], flush=True)
                RESULTS.append({"name": name, "size": size, "knob": knob,
                                "value": _shown_value(value), "error": str(e)[:300]})
                continue
            rec, best, best_rate = recorded(name, size)
            ratio = now / best_rate if best_rate else float("nan")
            shown = _shown_value(value)
            print(f"{name:24s} {size:>10,} {knob or '':>22}={shown:<6} now {now:8.1f} | record {rec or 0:8.1f}"
                  f" | best {best} {best_rate or 0:8.1f} | now/best {ratio:5.2f}  ({time.time()-t0:.1f}s)", flush=True)
            RESULTS.append({"name": name, "size": size, "knob": knob, "value": _shown_value(value), "now": now,
                            "record": rec, "best": best, "best_rate": best_rate})
    if knob:
        setattr(module, knob, original)
        for k, v in held.items():
            setattr(module, k, v)
        for fn in clear:
            fn.cache_clear()


def _tiles(kernel, *variants):
    # GPU_TILES with the entry for (kernel, 128) replaced by each variant in turn.
    from kernels import attention

    return tuple({**attention.GPU_TILES, (kernel, 128): attention.Tiles(*v)} for v in variants)


def main(only):
    from kernels import attention, layer_norm, rms_norm
    plan = [
        ("vector_add_fp16", (3_000_001, 100_000_001), None, (None,), ()),
        ("vector_add", (3_000_001, 100_000_001), None, (None,), ()),
        ("layer_norm", (768, 1024, 5120, 7168, 16384), "FORWARD_TILE", (1024, 2048, 4096, 8192),
         (layer_norm.forward_launch,)),
        ("layer_norm_fp16", (768,), "FORWARD_TILE", (1024, 4096), (layer_norm.forward_launch,)),
        ("layer_norm", (5120, 7168), "FORWARD_MOST_WARPS", (4, 8, 16, 32),
         (layer_norm.forward_launch,)),
        ("layer_norm", (5120, 7168), "FORWARD_CHUNK", (0, 512, 1024),
         (layer_norm.forward_launch,)),
        ("layer_norm_fp16", (5120, 7168), "FORWARD_CHUNK", (0, 1024),
         (layer_norm.forward_launch,)),
        ("rms_norm", (768, 1024, 5120), "FORWARD_TILE", (1024, 2048, 4096, 8192),
         (rms_norm.forward_launch,)),
        ("rms_norm", (5120, 7168), "FORWARD_CHUNK", (0, 512, 1024), (rms_norm.forward_launch,)),
        ("dropout", (3_000_001, 100_000_001), None, (None,), ()),
        ("rms_norm_backward", (768, 4096, 7168), "BACKWARD_PREFETCH", (False, True), ()),
        ("rms_norm_backward", (768, 4096, 7168), "BACKWARD_WARPS_PER_SM", (8, 16, 32), ()),
        ("rms_norm_backward", (768, 4096, 7168), "BACKWARD_TILE", (2048, 4096, 8192), ()),
        ("layer_norm_backward", (768, 5120, 7168), "BACKWARD_PREFETCH", (False, True), ()),
        ("layer_norm_backward", (768, 5120, 7168), "BACKWARD_WARPS_PER_SM", (8, 16, 32), ()),
        ("softmax", (4096, 50257, 65536, 151936), None, (None,), ()),
        ("softmax_backward", (4096, 16384, 32768, 65536), None, (None,), ()),
        ("cross_entropy", (32000, 50257), None, (None,), ()),
        ("cross_entropy_backward", (50257,), None, (None,), ()),
        ("softmax_backward", (50257,), None, (None,), ()),
        ("matmul", (1024, 2048, 3072, 4096), "PERSISTENT", (False, True), ()),
        ("matmul_nt", (2048, 4096, 8192), "PERSISTENT", (False, True), ()),
        ("matmul_skinny", (16, 256), "PERSISTENT", (False, True), ()),
        ("matmul", (1024, 3072), "PROGRAMS_PER_SM", (1, 2), (), {"PERSISTENT": True}),
        # Attention, head dim 128: the tiles of each kernel (block_m, block_n, warps, stages).
        ("flash_attention", (2048, 8192), "GPU_TILES",
         _tiles("forward", (128, 128, 8, 3), (128, 64, 4, 3), (128, 128, 8, 2), (128, 64, 8, 4),
                (64, 128, 4, 3)), (attention.forward_launch,)),
        ("flash_attention_backward", (2048, 8192), "GPU_TILES",
         _tiles("backward_kv", (64, 128, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3),
                (128, 64, 8, 3)), ()),
        ("flash_attention_backward", (2048, 8192), "GPU_TILES",
         _tiles("backward_q", (128, 64, 8, 3), (64, 128, 8, 3), (128, 128, 8, 2),
                (64, 64, 4, 3)), ()),
    ]
    if only.startswith("next"):
        # Session 20: the knobs added after the re-record, where the records still miss.
        from kernels import direct_launch, softmax
        big = 1 << 62
        plan = [
            ("softmax_backward", (32768, 65536), "BACKWARD_MAX_FUSED_COLS", (16384, 32768, 65536), ()),
            ("softmax_backward", (1024, 4096, 16384), "BACKWARD_VALUES_PER_THREAD", (8, 16, 32), ()),
            ("rms_norm_backward", (16384,), "FUSED_BACKWARD_MAX_COLS", (8192, 16384), (),
             {"BACKWARD_PREFETCH": False}),
            ("rms_norm_backward", (16384,), "FUSED_BACKWARD_MAX_COLS", (16384,), (),
             {"BACKWARD_PREFETCH": True}),
            ("rms_norm_backward", (16384,), "BACKWARD_VALUES_PER_THREAD", (16, 32), (),
             {"FUSED_BACKWARD_MAX_COLS": 16384, "BACKWARD_PREFETCH": False}),
            ("softmax", (1024, 4096, 16384), "VALUES_PER_THREAD", (16, 32, 64),
             (softmax.forward_launch,)),
            ("softmax_fp16", (4096,), "VALUES_PER_THREAD", (16, 32, 64), (softmax.forward_launch,)),
            ("matmul", (1024, 3072), "PERSISTENT_MIN_OUTPUT", (0, 2048 * 2048, big), ()),
            ("matmul_nt", (1024,), "PERSISTENT_MIN_OUTPUT", (0, big), ()),
            ("matmul_skinny", (256,), "PERSISTENT_MIN_OUTPUT", (0, big), ()),
        ]
        if only == "next,launch":
            # The launch overhead with compiled kernels launched through kernel[grid] too.
            direct_launch.DIRECT = False
            from kernels import launch_record
            record = launch_record.measure_launch_overhead()
            for i, launcher in enumerate(record.x):
                triton, bare = record.series["Triton"][i], record.series["bare launch"][i]
                print(f"launch (DIRECT off) {launcher:14s} Triton {triton:6.1f} bare {bare:6.1f} "
                      f"over bare {triton - bare:5.1f} us", flush=True)
            direct_launch.DIRECT = True
            only = "launch"
        else:
            only = ""
    # only: comma-separated parts of benchmark names to run ("matmul,flash"), or to skip
    # ("-matmul,-flash"); empty runs everything.
    wanted = [w for w in only.split(",") if w and w != "launch" and not w.startswith("-")]
    skipped = [w[1:] for w in only.split(",") if w.startswith("-")]
    for name, sizes, knob, values, clear, *fixed in plan:
        if only == "launch":
            break
        if (wanted and not any(w in name for w in wanted)) or any(w in name for w in skipped):
            continue
        run(name, sizes, knob, values, clear, *fixed)
    if "launch" in only.split(","):
        from kernels import launch_record
        record = launch_record.measure_launch_overhead()
        for i, launcher in enumerate(record.x):
            triton, bare = record.series["Triton"][i], record.series["bare launch"][i]
            print(f"launch {launcher:14s} Triton {triton:6.1f} bare {bare:6.1f} "
                  f"over bare {triton - bare:5.1f} us", flush=True)
    out = os.environ.get("OUT", ".")
    with open(os.path.join(out, "ab.json"), "w") as f:
        json.dump(RESULTS, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "")
