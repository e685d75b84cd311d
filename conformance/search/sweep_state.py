"""A sweep's state, one file (OUT/sweep.json): the checkpoint while it runs and the result when it
ends; read (checked against schemas/sweep-state.schema.json), written atomically, and the folder
checked to be writable before any block runs.

Why one file, written whole: an interrupted sweep resumes from it, a finished one is read by
``sweep merge`` and by people, and a half-written one (a full disk, a Ctrl-C) must never stand
where a good one stood.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sl1conf.conformance.common import jsonfiles
from sl1conf.conformance.common.files import write_atomic
from sl1conf.conformance.search.sweep_blocks import BlockSet
from sl1conf.conformance.search.sweep_config import SweepError
from sl1conf.conformance.search.sweep_migration import (FORMAT_4, FORMAT_5, FORMAT_6, from_format_4, from_format_5,
                                                        from_format_6)
from sl1conf.conformance.search.sweep_tally import PlaneTally

__all__ = ["STATE_FILE", "STATE_FORMAT", "load_state", "save_state", "check_same", "state_folder"]

STATE_FILE = "sweep.json"
STATE_FORMAT = "sl1conf-sweep/7"
"""7: a volume of dy planes (``planes``, ``config.dy`` a dy set) and the first rejected elements kept whole
(format 6 is read as 7: one plane); 6: every element counted by the judge's reason (requirements.reasons; format 5 is read as 6,
its counts by reason derived); 5: one Evidence per requirement (requirements.evidence) and every example an element record
(format 4 is read as 5); 4: the rounding-bias counts leave out what an allowed evaluation gives;
3: ``excepted`` is ``beyond_budget`` (as in reports), the statistics by name, the probes' call failures."""


def load_state(folder) -> "dict | None":
    """The sweep state in ``folder`` (None when there is none), checked against
    schemas/sweep-state.schema.json (``format`` is its version): SweepError, one line naming
    the file and the problem, if it is not JSON, of another format or does not match."""
    path = Path(folder) / STATE_FILE
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SweepError(f"{path} is not a readable sweep state ({exc})") from None
    except RecursionError:  # json's decoder recurses once per level of nesting
        raise SweepError(f"{path} is not a readable sweep state (nested too deeply)") from None
    found = state.get("format") if isinstance(state, dict) else None
    if found == FORMAT_4:
        state = from_format_4(state, FORMAT_5)
        found = state.get("format")
    if found == FORMAT_5:
        state = from_format_5(state, FORMAT_6)
        found = state.get("format")
    if found == FORMAT_6:
        state = from_format_6(state, STATE_FORMAT)
        found = state.get("format")
    if found != STATE_FORMAT:
        older = isinstance(found, str) and found.startswith("sl1conf-sweep/")
        raise SweepError(f"{path} is not a readable sweep state (format is {found!r}, not {STATE_FORMAT}"
                         + ("; a checkpoint of an older sl1conf, judged by other rules (format 4: the rounding-bias "
                            "counts leave out the deviations an allowed evaluation gives, and the histogram has the "
                            "reports' distance classes; format 7 reads formats 4 to 6): sweep again into another folder)"
                            if older else ")"))
    jsonfiles.validate(state, "sweep-state.schema.json", SweepError, str(path))
    try:  # the schema admits only what these read; the net catches a gap in it
        state["tally"] = PlaneTally.from_json(state["tally"])
        state["done"] = BlockSet.from_text(state["done"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SweepError(f"{path} is not a readable sweep state ({type(exc).__name__}: {exc})") from None
    return state


def save_state(folder, state: dict) -> None:
    """Write ``state`` to FOLDER/sweep.json atomically, checked against
    schemas/sweep-state.schema.json first (a mismatch is a bug: RuntimeError, a traceback)."""
    data = {**state, "done": _done(state["done"]).text(), "tally": state["tally"].to_json()}
    path = Path(folder) / STATE_FILE
    jsonfiles.validate(data, "sweep-state.schema.json", RuntimeError, f"the sweep state for {path}")
    try:
        write_atomic(path, [json.dumps(data, indent=1), "\n"])
    except OSError as exc:  # a folder that went away, a full disk: one line, the blocks done are lost
        raise SweepError(f"{Path(folder)}: cannot write there ({exc.strerror or exc})") from None


def _done(done) -> BlockSet:
    return done if isinstance(done, BlockSet) else BlockSet(done)


def check_same(state: dict, key: dict, where) -> None:
    """SweepError unless ``state`` is the sweep ``key`` names: a checkpoint resumes, and shards
    merge, only under the configuration (the profile among it) they were run with."""
    if state["config"] != key:
        diff = [f"{k} {state['config'].get(k)!r} (asked {key.get(k)!r})" for k in key
                if state["config"].get(k) != key.get(k)]
        raise SweepError(f"{where} holds another sweep: {', '.join(diff)}; choose another folder")


def state_folder(text) -> Path:
    """The folder ``text`` names, checked to be one sweep.json can be written in, creating
    nothing: the folder, or the nearest folder above it that exists, is a folder this process
    may write in (a path under a file, or in a folder without write permission, is one error
    line before any block runs)."""
    out = Path(text)
    if out.exists() and not out.is_dir():
        raise SweepError(f"--out {out} exists and is not a folder")
    at = out
    while not at.exists() and at != at.parent:
        at = at.parent
    if not at.exists():  # a relative path's parents end at "."
        at = Path(".")
    why = None
    if not at.is_dir():
        why = "Not a directory: " + str(at)
    elif not os.access(at, os.W_OK | os.X_OK):
        why = "Permission denied"
    elif at == out and (out / STATE_FILE).exists() and not os.access(out / STATE_FILE, os.R_OK):
        why = f"{STATE_FILE}: Permission denied"
    if why:
        raise SweepError(f"{out}: cannot write there ({why})")
    return out
