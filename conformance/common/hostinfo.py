"""Where a measurement or a report was made: CPU, cores, OS, versions, the kernel's ISA.

Benchmarks, the accuracy-budget sweeps and reports all state their machine; this is the
one place that reads it.
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np

__all__ = ["describe_host"]


def describe_host(with_torch: bool = False) -> dict:
    from sl1conf import __version__
    from sl1conf.reference import kernel

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {"cpu": cpu, "machine": platform.machine(), "cpus_available": kernel.default_threads(),
            "os": platform.platform(), "python": platform.python_version(), "numpy": np.__version__,
            "sl1conf": __version__, "kernel_isa": kernel.ISA}
    if with_torch:
        try:
            import torch
            info["torch"] = torch.__version__
        except Exception as exc:  # torch is optional
            info["torch"] = f"not available ({type(exc).__name__})"
    return info
