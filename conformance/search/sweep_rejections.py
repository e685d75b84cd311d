"""A sweep's rejected elements as a vector set (``OUT/rejections-fp16``), so that
``sl1conf certify --vectors`` runs them again, and anyone can without the sweep.

Why a vector set and not a list in the certificate: it is the one format the suite's other
commands (certify, the exports for a board) read, with the correctly rounded result and the
open alternatives of every element recomputed and checked by ``vectors verify``. The set holds
the elements the sweep kept whole (``sweep_tally.KEEP_REJECTIONS``, the first by their number
in the volume), one call per plane and beta, as the sweep called them. ``sl1conf fuzz replay
OUT`` (or ``OUT/rejections-fp16``) runs them again too (:func:`replay_source` finds the set and
the sweep that wrote it), and names each failure in fuzz's words.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sl1conf.adapters.base import Case

__all__ = ["FAMILY", "SET_FOLDER", "write_rejections", "replay_source"]

SET_FOLDER = "rejections-fp16"
FAMILY = (200, "sweep-rejections", "Elements an exhaustive sl1conf sweep rejected, as the sweep called them "
                                   "(one call per dy plane).")


def _cases(records, variant: str) -> list:
    """One VectorCase per dy of ``records`` (ElementRecords of one beta), elements in their order."""
    from sl1conf.conformance.vectors.cases import VectorCase
    from sl1conf.conformance.vectors.families import finish_case
    from sl1conf.reference import formats

    by_dy: dict = {}
    for e in records:
        by_dy.setdefault(e.dy, []).append(e)
    cases = []
    for dy, group in sorted(by_dy.items()):
        bits = lambda name: np.array([int(getattr(e, name), 16) for e in group], np.uint16)  # noqa: E731
        call = Case("fp16", bits("dy"), bits("x1"), bits("x2"), int(group[0].beta, 16), variant=variant)
        cases.append(finish_case(formats.FP16, VectorCase(call, flags=("sweep",))))
    return cases


def write_rejections(out, records, variant: str) -> "str | None":
    """Write ``records`` (the sweep's kept rejections) as the vector set OUT/rejections-fp16,
    replacing an older one (a resumed sweep keeps more), or remove a stale set when there are
    none; the set's folder name, or None."""
    from sl1conf.conformance.vectors.cases import Family
    from sl1conf.conformance.vectors.store import is_replaceable, remove, write

    folder = Path(out) / SET_FOLDER
    if not records:
        if folder.is_dir() and is_replaceable(folder):
            remove(folder)
        return None
    family = Family(*FAMILY, flags=("sweep",), cases=_cases(records, variant))
    write(folder, "fp16", [family], seed=0, force=True)
    return SET_FOLDER


def replay_source(folder) -> "tuple[Path | None, dict | None] | None":
    """What ``sl1conf fuzz replay FOLDER`` (no ``--batch``) runs again: (the vector set's folder, the
    configuration of the sweep that wrote it). FOLDER is a sweep's output folder (its sweep.json; the
    set None when the sweep kept no rejected element), the set a sweep wrote (OUT/rejections-fp16:
    the configuration is its folder's sweep.json), or any other vector set (the configuration None).
    None when FOLDER is none of these; SweepError (one line) when its sweep.json is not a sweep state."""
    from sl1conf.conformance.search.sweep_state import STATE_FILE, load_state

    folder = Path(folder)
    if (folder / STATE_FILE).is_file():
        config = load_state(folder)["config"]
        found = folder / SET_FOLDER
        return (found if (found / "manifest.json").is_file() else None), config
    if (folder / "manifest.json").is_file():
        parent = folder.resolve().parent
        sweep = folder.resolve().name == SET_FOLDER and (parent / STATE_FILE).is_file()
        return folder, (load_state(parent)["config"] if sweep else None)
    return None
