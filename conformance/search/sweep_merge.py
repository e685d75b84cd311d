"""The states of a sweep's shards (``--shard I/N``, on as many machines) made one.

Why it can: a block is a pure function of the configuration and its number, and a tally merges
in any order to the same sums, so shards of disjoint blocks add up to the one run; what must be
refused is a merge of other sweeps, of blocks twice, or into a folder holding more than the
inputs.
"""

from __future__ import annotations

from pathlib import Path

from sl1conf.conformance.search.sweep_blocks import BlockSet
from sl1conf.conformance.search.sweep_config import SweepError
from sl1conf.conformance.search.sweep_state import STATE_FILE, check_same, load_state
from sl1conf.conformance.search.sweep_tally import PlaneTally

__all__ = ["merge_states", "merge_folders"]


def merge_states(states: list) -> dict:
    """One state from sweeps of disjoint blocks of the same sweep (shards)."""
    first = states[0]
    merged = {**first, "done": BlockSet(), "shards": [], "sessions": [], "tally": PlaneTally()}
    for i, s in enumerate(states):
        check_same(s, first["config"], f"input {i + 1}")
        overlap = merged["done"] & s["done"]
        if overlap:
            raise SweepError(f"input {i + 1} repeats block {min(overlap)} of an earlier input: "
                             f"merge sweeps of disjoint shards")
        merged["done"] |= s["done"]
        merged["shards"] += [x for x in s["shards"] if x not in merged["shards"]]
        merged["sessions"] += s["sessions"]
        merged["tally"].merge(s["tally"])
    merged["complete"] = len(merged["done"]) == first["blocks"]
    return merged


def merge_folders(folders: list, out: Path) -> dict:
    """One state from the states in ``folders`` (:func:`merge_states`), checked to be writable
    into ``out``: not one of the inputs, and holding no blocks the inputs do not."""
    if any(folder.resolve() == out.resolve() for folder in folders):
        raise SweepError(f"--out {out} is one of the inputs: merge into another folder")
    states = []
    for folder in folders:
        state = load_state(folder)
        if state is None:
            raise SweepError(f"{folder} holds no {STATE_FILE}")
        states.append(state)
    merged = merge_states(states)
    old = load_state(out)
    if old is not None:
        check_same(old, merged["config"], out)
        if not old["done"] <= merged["done"]:
            raise SweepError(f"{out} holds blocks the inputs do not: merge into another folder")
    return merged
