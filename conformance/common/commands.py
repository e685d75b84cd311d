"""The command lines the suite prints for a person to run: one builder per command.

Why here: reports, the pytest plugin, fuzz and sweep summaries, the demo and the benchmark
all tell the reader how to look at an element (``sl1conf explain``) or rerun a part of a
certification (``sl1conf certify ... --only``); one builder each keeps them runnable as
the options change.
"""

from __future__ import annotations

import shlex

__all__ = ["explain_command", "certify_command"]


def explain_command(dtype: str, dy, x1, x2, beta) -> str:
    """``sl1conf explain`` for one element (values as the suite prints them: hex bit patterns)."""
    return f"sl1conf explain --dtype {dtype} --dy {dy} --x1 {x1} --x2 {x2} --beta {beta}"


def certify_command(impl: "str | None", *, platform=None, profile=None, dtype=None, variant=None, vectors=None,
                    quick: bool = False, waivers=None, only=(), out=None, results=None) -> str:
    """``sl1conf certify`` with exactly these options (``platform`` or ``profile``, neither where the
    run had neither: the default platform; ``results``, a board's results file, instead of
    ``impl``; the rest as given)."""
    parts = ["sl1conf", "certify", *(["--results", str(results)] if results else ["--impl", impl])]
    if platform or profile:
        parts += ["--platform", platform] if platform else ["--profile", str(profile)]
    for opt, value in (("--dtype", dtype), ("--variant", variant), ("--vectors", vectors), ("--waivers", waivers)):
        if value:
            parts += [opt, str(value)]
    if quick:
        parts.append("--quick")
    if only:
        parts += ["--only", ",".join(only)]
    if out:
        parts += ["--out", str(out)]
    return " ".join(shlex.quote(p) for p in parts)
