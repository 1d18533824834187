"""CPU-only: each launcher's own Python per call, with every kernel launch stubbed out.

    TRITON_INTERPRET=1 python scratch/host_cost.py [NAME] [--profile]
"""
import cProfile
import pstats
import sys
import time

import torch
import triton
from triton.runtime import autotuner, interpreter, jit

jit.JITFunction.run = lambda self, *a, **k: None
interpreter.InterpretedFunction.run = lambda self, *a, **k: None


def _tuner_run(self, *args, **kwargs):
    self.best_config = self.configs[0]


autotuner.Autotuner.run = _tuner_run

from kernels import launch_cost  # noqa: E402

names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(launch_cost.LAUNCHERS)
for name in names:
    case = launch_cost.LAUNCHERS[name](torch.device("cpu"))
    for _ in range(200):
        case.triton()
        case.bare()
    for label, call in (("launcher", case.triton), ("bare", case.bare), ("torch", case.torch)):
        n = 5000
        t = time.perf_counter()
        for _ in range(n):
            call()
        print(f"{name:14s} {label:9s} {(time.perf_counter() - t) / n * 1e6:7.2f} us")
    if "--profile" in sys.argv:
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(5000):
            case.triton()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(14)
