"""Exhaustive fp16 sweeps: every (x1, x2) pair of a subset, for one beta and dy, against the oracle.

fp16 has 2^16 patterns, so for one (beta, dy) all 2^32 (x1, x2) pairs can be checked:
no sampling, and no argument about coverage. The pairs of a subset are numbered and
cut into blocks of :data:`BLOCK` elements (for ``all``: 16 x2 values times every x1,
4096 blocks). A block is one adapter call (big arrays, so an in-process kernel runs
at memory speed), one task of the worker pool or of a Dask cluster (:func:`block_task`,
a pure function of the configuration and k), the unit of ``--shard I/N`` (block k
belongs to shard k % N + 1) and of checkpointing: the state (which blocks are done,
their merged :class:`PlaneTally`) is rewritten atomically at most every
:data:`CHECKPOINT_SECONDS` and whenever the run ends (finished, Ctrl-C, an error), so an
interrupted sweep resumes where it stopped (a killed one loses at most the last second).
A tally is sums and order-independent choices (the worst element: largest distance, ties to
the lowest pair number), so resumed, parallel and merged sweeps give the same result as one
uninterrupted run.

Elements are judged by the one judge (``rules.judge``) under the sweep's platform profile,
exactly as certify judges them: every element rule of the catalog (accuracy, the boundary,
overflow, NaN and infinity, zero signs on strict profiles, subnormals), the profile's error
model (what its arithmetic can reach), and the open-behaviour alternatives (beta <= 0,
beta = +inf, a rounded diff) computed by the policy the vector families use. Every block is
also checked by the requirements' probes (``search.probing``: memory faults, a moved tail on
the sampled blocks, ...), and the sampled blocks are counted by their statistics (the
rounding bias). The tally counts rejected elements per requirement id, blocks a probe found
failing as calls, elements accepted only beyond the budget (reachable under the error model,
or an alternative's bits), the alternatives that accepted them (the open-behaviour record),
and the ULP histogram split by "which else does the element equal" (for information).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from sl1conf.adapters import load
from sl1conf.adapters.base import Case
from sl1conf.reference import kernel
from sl1conf.reference import formats

from sl1conf.conformance.common import jsonfiles
from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.common.memory import keep_freed_memory
from sl1conf.conformance.common.files import write_atomic
from sl1conf.conformance.rules import distances, openbehaviour
from sl1conf.conformance import requirements
from sl1conf.conformance.requirements import by_id
from sl1conf.conformance.requirements.base import Seen, element_record
from sl1conf.conformance.requirements.evidence import Evidence, add_evidence, evidence_of, pick, worst_order
from sl1conf.conformance.rules.judge import expected_for, judge
from sl1conf.conformance.search.fuzz import add_statistics
from sl1conf.conformance.search.probing import run_probed
from sl1conf.conformance.search.campaign import Checkpoint, per_worker, process_pool
from sl1conf.conformance.search.distributed import submitted
from sl1conf.conformance.search.ranges import parse_ranges, ranges_text
from sl1conf.conformance.search.shards import WHOLE, Shard

__all__ = ["BLOCK", "BUCKETS", "SweepConfig", "SweepError", "Subset", "PlaneTally", "parse_subset", "block_task",
           "run_sweep", "run_sweep_on", "merge_states", "merge_folders", "load_state", "save_state", "state_folder",
           "finish", "verdict", "elapsed", "STATE_FILE", "SAMPLE_EVERY"]

FP16 = formats.FP16
BLOCK = 1 << 20
BUCKETS = (*distances.BUCKETS, "zero-sign")
"""The histograms' buckets (rules.distances: 0, the distance classes, NaN against a number) and +0
against -0 (0 ULP apart, not the same result)."""
NB = len(BUCKETS)
B_ZERO = NB - 1
ROWS = ("unmatched", "ftz", "model", "model+ftz")
"""What else a wrong element equals: nothing, only the flush-to-zero oracle, an accepted model."""
AROUND_BETA_K = 8
SAMPLE_EVERY = 64
"""Every 64th block (block 0 first) is sampled: the probes marked ``sampled`` make their calls
(the position probe's 2 small calls: a full sweep makes 128, not 8,192, and each call can be a
simulator's start) and the statistics (the rounding bias) count it whole."""
STATE_FILE = "sweep.json"
CHECKPOINT_SECONDS = 1.0
"""The checkpoint is rewritten at most this often while blocks finish, and once more when the
run ends however it ends (a write with its schema check costs about 7 ms, half a block: once
per block it was a quarter of a full sweep's time)."""
STATE_FORMAT = "sl1conf-sweep/5"
"""5: one Evidence per requirement (requirements.evidence) and every example an element record
(format 4 is read as 5); 4: the rounding-bias counts leave out what an allowed evaluation gives;
3: ``excepted`` is ``beyond_budget`` (as in reports), the statistics by name, the probes' call failures."""


class SweepError(SuiteError):
    """Bad input for a sweep (a subset, a checkpoint of another sweep): one line, no traceback."""


# --------------------------------------------------------------------------------------
# subsets: which pairs, numbered


@dataclass(frozen=True)
class Subset:
    """Pairs as runs: run r is x2[r] against table[start[r]:start[r] + count] as x1 values;
    pair number p lies in the run r with cum[r] <= p < cum[r + 1]."""

    name: str
    table: np.ndarray  # uint16 x1 patterns
    x2: np.ndarray  # uint16, one per run
    start: np.ndarray  # int64, one per run
    cum: np.ndarray  # int64, runs + 1

    @property
    def size(self) -> int:
        return int(self.cum[-1])

    def pairs(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(x1, x2) patterns of pairs lo..hi-1."""
        n = self.table.size
        if self.cum[-1] == n * self.x2.size and not self.start.any():  # every run the whole table
            r0, r1 = lo // n, -(-hi // n)
            part = slice(lo - r0 * n, hi - r0 * n)
            return np.tile(self.table, r1 - r0)[part], np.repeat(self.x2[r0:r1], n)[part]
        r0 = int(np.searchsorted(self.cum, lo, "right")) - 1
        r1 = int(np.searchsorted(self.cum, hi, "left"))
        runs = np.arange(r0, r1)
        lens = np.minimum(self.cum[runs + 1], hi) - np.maximum(self.cum[runs], lo)
        rid = np.repeat(runs, lens)
        pos = np.arange(lo, hi, dtype=np.int64) - self.cum[rid] + self.start[rid]
        return self.table[pos], self.x2[rid]


ALL_PATTERNS = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def _full_runs(name: str, x2: np.ndarray) -> Subset:
    n = ALL_PATTERNS.size
    return Subset(name, ALL_PATTERNS, x2.astype(np.uint16), np.zeros(x2.size, np.int64),
                  np.arange(x2.size + 1, dtype=np.int64) * n)


def _from_ordered(o: int) -> int:
    return o if o >= 0 else FP16.sign_mask | -o


def around_beta(beta_bits: int, k: int) -> Subset:
    """Every finite pair whose exact x1 - x2 lies within k fp16 steps of +|beta| or -|beta|
    (the window [o - k, o + k] on the ordered line, clipped to the finite values).

    fp16 values are multiples of 2^-24 below 2^16, so x1 - x2 and the window's ends
    shifted by x2 are exact in binary64: for each x2 the x1 values form one contiguous
    range of the value-sorted finite patterns per window (one range when the two
    windows meet around zero), found by binary search.
    """
    if FP16.exp_mask & beta_bits == FP16.exp_mask:
        raise SweepError(f"around-beta needs a finite beta, not {formats.hex_bits(FP16, beta_bits)}")
    finite = ALL_PATTERNS[(ALL_PATTERNS & FP16.exp_mask) != FP16.exp_mask]
    vals = finite.view(np.float16).astype(np.float64)
    order = np.argsort(vals, kind="stable")
    table, vals = finite[order], vals[order]
    o = int(formats.ordered(FP16, np.array([beta_bits & ~FP16.sign_mask], np.uint16))[0])
    top = FP16.inf_bits - 1  # the largest finite pattern, on the ordered line
    a, b = (float(np.uint16(_from_ordered(v)).view(np.float16))
            for v in (max(o - k, -top), min(o + k, top)))
    windows = [(-b, b)] if a <= 0 else [(-b, -a), (a, b)]
    v = finite.view(np.float16).astype(np.float64)  # x2 in pattern order
    s = np.stack([np.searchsorted(vals, lo + v, "left") for lo, _ in windows], axis=1).ravel()
    e = np.stack([np.searchsorted(vals, hi + v, "right") for _, hi in windows], axis=1).ravel()
    x2 = np.repeat(finite, len(windows))
    keep = e > s
    counts = (e - s)[keep]
    return Subset(f"around-beta:{k}", table, x2[keep], s[keep].astype(np.int64),
                  np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))


def parse_subset(text: str, beta_bits: int) -> Subset:
    """``all``, ``x2=V`` (every x1 for one x2) or ``around-beta[:K]``."""
    t = text.strip().lower()
    if t == "all":
        return _full_runs("all", ALL_PATTERNS)
    if t.startswith("x2="):
        try:
            bits, _ = formats.parse_value(FP16, t[3:])
        except ValueError as exc:
            raise SweepError(f"subset {text!r}: {exc}") from None
        return _full_runs(f"x2={formats.hex_bits(FP16, bits)}", np.array([bits], np.uint16))
    name, _, k = t.partition(":")
    if name == "around-beta":
        if k and not (k.isdigit() and int(k) <= 4096):
            raise SweepError(f"subset {text!r}: K must be a whole number from 0 to 4096")
        return around_beta(beta_bits, int(k) if k else AROUND_BETA_K)
    raise SweepError(f"unknown subset {text!r}: expected all, x2=V or around-beta[:K]")


# --------------------------------------------------------------------------------------
# tallies


def _example(index, dy, x1, x2, beta, want, got, ulp) -> dict:
    """One element, as every report says one (``base.element_record``: the inputs, the correctly
    rounded result and the implementation's, the distance or the kind of result that is no
    distance), at its pair number ``at``: the worst is picked by its distance ``ulp_value``."""
    return {"at": int(index), **element_record(FP16, dy, x1, x2, beta, want, got, distance=int(ulp))}



def _first(e) -> int:
    return e["at"]


def _wrong(got, want) -> np.ndarray:
    """Indices of the elements that are not the correctly rounded result (NaN as a class):
    the bits differ, and not both NaN."""
    differ = got != want
    if np.count_nonzero(differ) > got.size // 8:  # NaN payloads, say (a NaN x2's blocks): whole arrays
        differ &= ~(formats.is_nan_bits(FP16, got) & formats.is_nan_bits(FP16, want))
        return np.flatnonzero(differ)
    bad = np.flatnonzero(differ)
    nan = np.flatnonzero(formats.is_nan_bits(FP16, want[bad]))  # few: got is looked at on those only
    if not nan.size:
        return bad
    return np.delete(bad, nan[formats.is_nan_bits(FP16, got[bad[nan]])])


def _expected(dy, x1, x2, beta, want, idx):
    """Everything acceptable (``judge.expected_for``) for the elements ``idx``, whose correctly
    rounded bits are ``want[idx]``."""
    return expected_for(FP16, dy[idx], x1[idx], x2[idx], beta, oracle=want[idx])


def _judged(profile, got, dy, x1, x2, beta, want, idx):
    """The one judge's judgement of the elements ``idx``."""
    return judge(FP16, profile, got[idx], _expected(dy, x1, x2, beta, want, idx), dy[idx], x1[idx], x2[idx], beta)


class PlaneTally:
    """What the blocks of a sweep's plane done so far found: the histogram by what else a wrong
    element equals, the worst and first examples, one Evidence per requirement, what was accepted
    beyond the budget or as an open answer, the statistics; merging is order-independent."""

    def __init__(self):
        self.elements = 0
        self.hist = np.zeros((len(ROWS), NB), np.int64)
        self.zsign = np.zeros((len(ROWS), NB), np.int64)  # a zero on one side, the other sign
        self.worst = [None] * len(ROWS)  # largest ULP distance (>= 1)
        self.first_nan = [None] * len(ROWS)
        self.first_zsign = [None] * len(ROWS)
        self.failed = 0  # elements of calls that returned no result
        self.failure = None  # the first such call
        # requirement id -> Evidence: the elements the judge (or a probe) rejects for it, the worst
        # (largest distance, then lowest pair), and the blocks its probe found failing as calls
        self.requirements = {}
        self.rejected_elements = 0  # elements some requirement rejects (each counted once)
        self.beyond_budget = 0  # accepted beyond the budget: reachable under the error model, or an alternative
        self.beyond_budget_worst = None
        self.open = {}  # alternative -> elements it accepted that the oracle's answer would not be (open behaviour)
        self.statistics = {}  # statistic name -> "dtype/variant" -> its counts of the sampled blocks

    def merge(self, other: "PlaneTally") -> "PlaneTally":
        self.elements += other.elements
        self.hist += other.hist
        self.zsign += other.zsign
        self.failed += other.failed
        self.failure = pick(self.failure, other.failure, lambda f: f["block"])
        for r in range(len(ROWS)):
            self.worst[r] = pick(self.worst[r], other.worst[r], worst_order)
            self.first_nan[r] = pick(self.first_nan[r], other.first_nan[r], _first)
            self.first_zsign[r] = pick(self.first_zsign[r], other.first_zsign[r], _first)
        self.rejected_elements += other.rejected_elements
        add_evidence(self.requirements, other.requirements)
        self.beyond_budget += other.beyond_budget
        self.beyond_budget_worst = pick(self.beyond_budget_worst, other.beyond_budget_worst, worst_order)
        for name, n in other.open.items():
            self.open[name] = self.open.get(name, 0) + n
        add_statistics(self.statistics, other.statistics)
        return self

    def seen(self, block: int, lo, dy, x1, x2, beta, want, s: Seen) -> None:
        """A probe's finding on the block: the elements whose bits changed (``s.changed``) are
        rejected under its requirement (an element another rule rejects too counts twice in
        ``rejected_elements``), the first of them its example; a finding about the call is a
        failing call under it."""
        evidence = self.requirements.setdefault(s.requirement, Evidence())
        if not s.changed:
            evidence.add_call(block, s.kind, s.detail)
            return
        at = {i for i, _ in s.changed}
        self.rejected_elements += len(at)
        i, bits = min(s.changed, key=lambda c: c[0])
        d = formats.ulp_distance(FP16, np.array([bits], np.uint16), want[i:i + 1])[0]
        evidence.add_elements(len(at), _example(lo + i, dy[i], x1[i], x2[i], beta, want[i], bits, d))

    def block(self, lo, dy, x1, x2, beta, got, want, profile) -> None:
        """One block's results: :meth:`add` and :meth:`judge`, with everything acceptable
        computed and judged once, on the elements that can count: those that are not the
        correctly rounded result (every rule accepts those; NaN as a class)."""
        bad = _wrong(got, want)
        j = _judged(profile, got, dy, x1, x2, beta, want, bad) if bad.size else None
        self._add(lo, dy, x1, x2, beta, got, want, bad, j)
        self._judge(lo, dy, x1, x2, beta, got, want, bad, j)

    def judge(self, lo, dy, x1, x2, beta, got, want, profile) -> None:
        """One block's verdicts, by the one judge, on the elements that are not the correctly
        rounded result (those every rule accepts)."""
        bad = _wrong(got, want)
        if bad.size:
            self._judge(lo, dy, x1, x2, beta, got, want, bad, _judged(profile, got, dy, x1, x2, beta, want, bad))

    def _judge(self, lo, dy, x1, x2, beta, got, want, idx, j) -> None:
        """:meth:`judge` given the judgement ``j`` of the elements ``idx``."""
        if not idx.size:
            return
        ex = lambda k: _example(lo + idx[k], dy[idx[k]], x1[idx[k]], x2[idx[k]], beta, want[idx[k]], got[idx[k]],  # noqa: E731
                                j.dist[k])

        def worst(mask):
            at = np.flatnonzero(mask)
            return ex(int(at[np.argmax(np.where(j.dist[at] == formats.NAN_MISMATCH, 1 << 30, j.dist[at]))]))
        self.rejected_elements += int((~j.ok).sum())
        for rid, bad in j.breaks.items():
            if bad.any():
                self.requirements.setdefault(rid, Evidence()).add_elements(int(bad.sum()), worst(bad))
        far = j.beyond_budget
        if far.any():
            self.beyond_budget += int(far.sum())
            self.beyond_budget_worst = pick(self.beyond_budget_worst, worst(far), worst_order)
        for name, hit in j.alt.items():
            n = int((hit & ~j.exact & ~j.within).sum())
            if n:
                self.open[name] = self.open.get(name, 0) + n

    def add(self, lo, dy, x1, x2, beta, got, want) -> None:
        """One block's results (bit patterns; pair numbers from ``lo``)."""
        bad = _wrong(got, want)
        if not bad.size:
            return self._add(lo, dy, x1, x2, beta, got, want, bad, None)
        exp = _expected(dy, x1, x2, beta, want, bad)
        g = got[bad]
        model = np.logical_or.reduce([formats.same_result(FP16, g, bits) for bits in exp.models.values()])
        self._add(lo, dy, x1, x2, beta, got, want, bad, (formats.ulp_distance(FP16, g, want[bad]), model,
                                                          formats.same_result(FP16, g, exp.oracle_ftz)))

    def _add(self, lo, dy, x1, x2, beta, got, want, bad, j) -> None:
        """:meth:`add` given the wrong elements ``bad`` and, for them, ``j``: the judgement's
        ULP distances and which are an accepted model's bits and the flush-to-zero oracle's (a
        Judgement or those three arrays)."""
        n = got.size
        self.elements += n
        self.hist[0, 0] += n - bad.size
        if not bad.size:
            return
        dist, model, ftz = (j.dist, np.logical_or.reduce(list(j.models.values())), j.ftz) if hasattr(j, "dist") else j
        g, w = got[bad], want[bad]
        nan = dist == formats.NAN_MISMATCH
        bucket = distances.bucket_of(dist)
        bucket[dist == 0] = B_ZERO
        row = 2 * model.astype(np.int64) + ftz
        cells = row * NB + bucket
        counts = np.bincount(cells, minlength=len(ROWS) * NB).reshape(len(ROWS), NB)
        self.hist += counts
        mag = np.uint16(~FP16.sign_mask & 0xFFFF)
        zs = ((g & mag) == 0) | ((w & mag) == 0)  # a zero on one side (few elements), of the other sign
        if zs.any():
            zs &= ~nan & (((g ^ w) & FP16.sign_mask) != 0)
            self.zsign += np.bincount(cells[zs], minlength=len(ROWS) * NB).reshape(len(ROWS), NB)
        masks = [(slot, mask) for slot, mask in ((self.first_nan, nan), (self.first_zsign, zs)) if mask.any()]
        finite = np.where(nan, 0, dist) if nan.any() else dist
        ex = lambda i: _example(lo + bad[i], dy[bad[i]], x1[bad[i]], x2[bad[i]], beta, w[i], g[i], dist[i])  # noqa: E731
        for r in np.flatnonzero(counts.any(axis=1)).tolist():  # the rows that hold elements
            whole = counts[r].sum() == bad.size
            in_row = None if whole else row == r
            in_finite = finite if whole else np.where(in_row, finite, 0)
            if in_finite.any():  # argmax: the first of the largest, the lowest pair number
                self.worst[r] = pick(self.worst[r], ex(int(np.argmax(in_finite))), worst_order)
            for slot, mask in masks:
                hit = np.flatnonzero(mask if whole else in_row & mask)
                if hit.size:
                    slot[r] = pick(slot[r], ex(int(hit[0])), _first)

    def fail(self, block: int, n: int, status: str, detail: str) -> None:
        self.elements += n
        self.failed += n
        self.failure = pick(self.failure, {"block": block, "status": status, "detail": detail[:500]},
                             lambda f: f["block"])

    def histogram(self) -> dict:
        """Elements per bucket over every row; empty buckets left out (but 0)."""
        total = self.hist.sum(axis=0)
        return {name: int(c) for i, (name, c) in enumerate(zip(BUCKETS, total)) if c or i == 0}

    def worst_overall(self):
        w = None
        for e in self.worst:
            w = pick(w, e, worst_order)
        return w

    def to_json(self) -> dict:
        rows = {}
        for r, name in enumerate(ROWS):
            rows[name] = {"histogram": {b: int(c) for b, c in zip(BUCKETS, self.hist[r]) if c},
                          "zero_sign": {b: int(c) for b, c in zip(BUCKETS, self.zsign[r]) if c},
                          "worst": self.worst[r], "first_nan": self.first_nan[r],
                          "first_zero_sign": self.first_zsign[r]}
        return {"elements": self.elements, "failed_elements": self.failed, "first_failure": self.failure,
                "rows": rows, "rejected_elements": self.rejected_elements,
                "requirements": {rid: e.to_json() for rid, e in sorted(self.requirements.items())},
                "beyond_budget": {"elements": self.beyond_budget, "worst": self.beyond_budget_worst},
                "open_answers": dict(sorted(self.open.items())), "statistics": self.statistics}

    @classmethod
    def from_json(cls, data: dict) -> "PlaneTally":
        t = cls()
        t.elements, t.failed, t.failure = data["elements"], data["failed_elements"], data["first_failure"]
        for r, name in enumerate(ROWS):
            row = data["rows"][name]
            for arr, key in ((t.hist, "histogram"), (t.zsign, "zero_sign")):
                for b, c in row[key].items():
                    arr[r, BUCKETS.index(b)] = c
            t.worst[r], t.first_nan[r], t.first_zsign[r] = row["worst"], row["first_nan"], row["first_zero_sign"]
        t.requirements = evidence_of(data["requirements"])
        t.beyond_budget, t.beyond_budget_worst = data["beyond_budget"]["elements"], data["beyond_budget"]["worst"]
        t.rejected_elements = data["rejected_elements"]
        t.open = dict(data["open_answers"])
        t.statistics = {name: {run: {who: dict(c) for who, c in counts.items()} for run, counts in runs.items()}
                        for name, runs in data["statistics"].items()}
        return t


def verdict(tally: PlaneTally, profile, beta: "int | None" = None) -> dict:
    """The sweep's verdict, in certify's words: the elements the judge rejected, per
    requirement (the worst of each with its input), calls that returned no result, and what
    was accepted only beyond the budget or as an open alternative, and blocks refused for an open
    ``beta`` (the sweep's). Nothing checked is no pass."""
    evidence = sorted(tally.requirements.items())
    by_req = {rid: {"title": by_id(rid).title, "elements": e.elements, "worst": e.worst} for rid, e in evidence
              if e.elements}
    rejected = tally.rejected_elements
    example = None
    for entry in by_req.values():
        example = pick(example, entry["worst"], worst_order)
    open_by_question = {}
    for name, n in tally.open.items():
        question = openbehaviour.QUESTION_OF.get(name) or openbehaviour.open_input(FP16, beta, "p")
        open_by_question.setdefault(question, {})[name] = n
    checked = tally.elements - tally.failed - tally.open.get("rejected", 0)
    judged = {}  # each statistic over the sampled blocks (one dtype and variant: its counts summed)
    for s in requirements.STATISTICS:
        total: dict = {}
        for counts in tally.statistics.get(s.name, {}).values():
            s.add(total, counts)
        judged[s.name] = s.judge(total)
    calls = {rid: {"title": by_id(rid).title, "calls": e.calls, "first": e.first_call} for rid, e in evidence
             if e.calls}
    return {"platform": profile.name, "budget_ulp": profile.max_ulp["fp16"], "rejected": rejected,
            "requirements": by_req, "failed_elements": tally.failed, "call_failures": calls, "example": example,
            "beyond_budget": {"elements": tally.beyond_budget, "worst": tally.beyond_budget_worst},
            "open_answers": open_by_question, "checked_elements": checked, **judged,
            "pass": rejected == 0 and tally.failed == 0 and not calls and checked > 0
                    and not any(j["findings"] for j in judged.values())}


# --------------------------------------------------------------------------------------
# one block


@dataclass(frozen=True)
class SweepConfig:
    """What identifies a sweep: a checkpoint resumes only the same one."""

    impl: str
    beta: int
    dy: int
    subset: str = "all"
    variant: str = "p"
    block: int = BLOCK
    platform: str = "ieee"  # the profile that judges (a checkpoint resumes only under the same one)

    def key(self, subset: Subset) -> dict:
        h = lambda b: formats.hex_bits(FP16, b)  # noqa: E731
        return {"impl": self.impl, "dtype": "fp16", "beta": h(self.beta), "dy": h(self.dy),
                "subset": subset.name, "variant": self.variant, "block_elements": self.block,
                "platform": self.platform}


class _Block:
    """What a worker needs to run blocks: the adapter, the subset, the profile, and arrays of a
    block's size kept from block to block (dy; x1 and x2 of an ``all`` or ``x2=V`` subset; the
    oracle's bits): a block allocates and faults in no 2 MiB array of its own but the adapter's
    output. ``threads``: the oracle's threads (1 in a pool of worker processes, which fill the
    CPUs already; None: the kernel's default)."""

    def __init__(self, config: SweepConfig, adapter=None, threads: "int | None" = None):
        keep_freed_memory()
        self.config = config
        self.subset = parse_subset(config.subset, config.beta)
        self.adapter = adapter if adapter is not None else load(config.impl)
        self.dy = np.full(config.block, config.dy, np.uint16)
        from sl1conf.conformance.rules.profiles import load_profile

        self.profile = load_profile(config.platform)
        self.threads = threads
        self.want = np.empty(config.block, np.uint16)
        self.scratch = (np.empty(config.block, np.uint16), np.empty(config.block, bool))
        n, sub = self.subset.table.size, self.subset
        self.whole_runs = sub.cum[-1] == n * sub.x2.size and not sub.start.any() and config.block % n == 0
        if self.whole_runs:  # every block is whole runs: x1 is the table repeated, x2 one value per run
            self.x1 = np.tile(sub.table, config.block // n)
            self.x2 = np.empty(config.block, np.uint16)

    def pairs(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """``subset.pairs(lo, hi)`` for a block, in this worker's arrays where the subset allows."""
        if not self.whole_runs:
            return self.subset.pairs(lo, hi)
        n = self.subset.table.size
        x2 = self.x2[:hi - lo]
        x2.reshape(-1, n)[:] = self.subset.x2[lo // n:hi // n, None]
        return self.x1[:hi - lo], x2

    def oracle(self, dy, x1, x2) -> np.ndarray:
        """``fast_oracle.smoothl1lossgrad``'s bits, into this worker's array: for fp16 that is
        the muldiv-fp64 kernel (correctly rounded: fast_oracle's proof) with every NaN made
        the canonical quiet NaN, here in place (``tests/test_sweep.py`` checks the two agree)."""
        f = lambda a: a.view(np.float16)  # noqa: E731
        want, (mag, nan) = self.want[:dy.size], (a[:dy.size] for a in self.scratch)
        kernel.smoothl1lossgrad(f(dy), f(x1), f(x2), np.uint16(self.config.beta).view(np.float16), out=f(want),
                                model="muldiv-fp64", threads=self.threads)
        np.bitwise_and(want, FP16.exp_mask | FP16.frac_mask, out=mag)
        np.putmask(want, np.greater(mag, FP16.exp_mask, out=nan), FP16.qnan_bits)
        return want

    def run(self, k: int) -> PlaneTally:
        c = self.config
        lo = k * c.block
        hi = min(lo + c.block, self.subset.size)
        x1, x2 = self.pairs(lo, hi)
        dy = self.dy[:hi - lo]
        tally = PlaneTally()
        call = Case("fp16", dy, x1, x2, c.beta, variant=c.variant, core_mask=self.profile.core_mask, id=f"block {k}",
                    guard=("end", "start")[k % 2])  # reads and writes before the start fault in odd blocks
        sampled = k % SAMPLE_EVERY == 0
        probed = run_probed(self.adapter, self.profile, [call], ask_late=False, sampled=sampled, statistics=sampled)
        outcome = probed.outcomes[0]
        if outcome.status == "rejected" and openbehaviour.open_input(FP16, c.beta, c.variant, call.core_mask):
            tally.elements += hi - lo  # refused for a beta the manual leaves open: an answer, nothing checked
            tally.open["rejected"] = tally.open.get("rejected", 0) + hi - lo
            return tally
        if outcome.status != "ok":
            tally.fail(k, hi - lo, outcome.status, outcome.detail)
            return tally
        got, want = outcome.out[:hi - lo], self.oracle(dy, x1, x2)
        tally.block(lo, dy, x1, x2, c.beta, got, want, self.profile)
        for s in probed.seen:
            tally.seen(k, lo, dy, x1, x2, c.beta, want, s)
        add_statistics(tally.statistics, probed.counts)
        return tally


def _close_block(worker: "_Block") -> None:
    worker.adapter.close()


def block_task(config: SweepConfig, k: int) -> tuple:
    """(k, the block's PlaneTally): block ``k`` of the sweep ``config`` in a worker, a local pool's
    process or a Dask worker's thread. A block is a pure function of (config, k); the adapter,
    profile and arrays are made once per process and thread and kept for the next block of the
    same sweep (``campaign.per_worker``: a thread's earlier sweep is closed)."""
    # the pool or the cluster fills the CPUs: the oracle on one thread
    worker = per_worker(("sweep", config), functools.partial(_Block, config, threads=1), _close_block)
    return k, worker.run(k)


def blocks_task(config: SweepConfig, blocks: list) -> list:
    """[(k, the block's PlaneTally)] for each block of ``blocks``: one task of a local pool."""
    return [block_task(config, k) for k in blocks]


POOL_CHUNK = 4
"""Blocks a local pool hands a worker at a time: the pool's own bookkeeping costs the parent
about 0.75 ms of CPU per task (about 0.3 ms a block in fours), which the workers' cores pay
for; a Ctrl-C loses at most the chunks in flight."""


@contextlib.contextmanager
def _results(config, blocks, workers, adapter, executor=None):
    """(block, PlaneTally) for each block, in this process, from a spawn pool of ``workers`` (chunks
    of blocks, 2 per worker in flight) or through ``executor`` (2 blocks per worker thread in
    flight): any order."""
    if executor is None and workers == 1:
        worker = _Block(config, adapter)
        try:
            yield ((k, worker.run(k)) for k in blocks)
        finally:
            if adapter is None:
                worker.adapter.close()
        return
    # a short sweep: every worker gets blocks
    chunk = 1 if executor is not None else max(1, min(POOL_CHUNK, len(blocks) // (8 * workers)))
    chunks = ((config, blocks[i:i + chunk]) for i in range(0, len(blocks), chunk))
    # the workers leave Ctrl-C to this process, which keeps the blocks done and ends them
    pool = process_pool(workers, ignore=(signal.SIGINT,)) if executor is None else contextlib.nullcontext(executor)
    with pool as runner, contextlib.closing(submitted(runner, blocks_task, chunks, 2 * workers)) as futures:
        yield (pair for fut in futures for pair in fut.result())  # what is in flight is cancelled at the end


# --------------------------------------------------------------------------------------
# state: the checkpoint and the result, one file


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
    if found == "sl1conf-sweep/4":
        state = _from_format_4(state)
        found = state.get("format")
    if found != STATE_FORMAT:
        older = isinstance(found, str) and found.startswith("sl1conf-sweep/")
        raise SweepError(f"{path} is not a readable sweep state (format is {found!r}, not {STATE_FORMAT}"
                         + ("; a checkpoint of an older sl1conf, judged by other rules (format 4: the rounding-bias "
                            "counts leave out the deviations an allowed evaluation gives, and the histogram has the "
                            "reports' distance classes; format 5 reads format 4): sweep again into another folder)"
                            if older else ")"))
    jsonfiles.validate(state, "sweep-state.schema.json", SweepError, str(path))
    try:  # the schema admits only what these read; the net catches a gap in it
        state["tally"] = PlaneTally.from_json(state["tally"])
        state["done"] = parse_ranges(state["done"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SweepError(f"{path} is not a readable sweep state ({type(exc).__name__}: {exc})") from None
    return state


def _from_format_4(state: dict) -> dict:
    """A format-4 state in format 5 (the same counts, judged by the same rules): its examples as
    element records (completed with the sweep's dy and beta), its per-requirement counts as
    Evidence; its summary left out (the command prints it again). Anything it does not hold as
    format 4 did is left for the schema to refuse."""
    try:
        config, tally = state["config"], state["tally"]
        dy, beta = int(config["dy"], 16), int(config["beta"], 16)

        def record(e):
            if e is None:
                return None
            distance = formats.NAN_MISMATCH if e["ulp"] == "nan" else int(e["ulp"])
            return _example(e["index"], dy, int(e["x1"], 16), int(e["x2"], 16), beta, int(e["expected"], 16),
                            int(e["got"], 16), distance)
        for row in tally["rows"].values():
            for key in ("worst", "first_nan", "first_zero_sign"):
                row[key] = record(row[key])
        tally["beyond_budget"]["worst"] = record(tally["beyond_budget"]["worst"])
        evidence = {rid: Evidence(elements=r["elements"], worst=record(r["worst"]))
                    for rid, r in tally.pop("rejected").items()}
        for rid, c in tally.pop("call_failures").items():
            e = evidence.setdefault(rid, Evidence())
            e.calls, first = c["calls"], c["first"]
            e.first_call = {"at": first["block"], "kind": first["kind"], "detail": first["detail"]}
        tally["requirements"] = {rid: e.to_json() for rid, e in sorted(evidence.items())}
        state.pop("summary", None)
        state["format"] = STATE_FORMAT
    except (KeyError, TypeError, ValueError, AttributeError):
        pass  # not what format 4 held: the schema says what is wrong with it
    return state


def save_state(folder, state: dict) -> None:
    """Write ``state`` to FOLDER/sweep.json atomically, checked against
    schemas/sweep-state.schema.json first (a mismatch is a bug: RuntimeError, a traceback)."""
    data = {**state, "done": ranges_text(state["done"]), "tally": state["tally"].to_json()}
    path = Path(folder) / STATE_FILE
    jsonfiles.validate(data, "sweep-state.schema.json", RuntimeError, f"the sweep state for {path}")
    try:
        write_atomic(path, [json.dumps(data, indent=1), "\n"])
    except OSError as exc:  # a folder that went away, a full disk: one line, the blocks done are lost
        raise SweepError(f"{Path(folder)}: cannot write there ({exc.strerror or exc})") from None


def check_same(state: dict, key: dict, where) -> None:
    if state["config"] != key:
        diff = [f"{k} {state['config'].get(k)!r} (asked {key.get(k)!r})" for k in key
                if state["config"].get(k) != key.get(k)]
        raise SweepError(f"{where} holds another sweep: {', '.join(diff)}; choose another folder")


def run_sweep(config: SweepConfig, out, *, workers: int = 1, shard: Shard = WHOLE, max_blocks=None,
              adapter=None, progress=None, executor=None, scheduler: "str | None" = None) -> dict:
    """Run (or resume) the blocks of ``shard`` not yet done; return the state.

    ``executor`` (a Dask client's, ``distributed.dask_executor``) runs the blocks instead of
    this process or a local pool; ``workers`` is then its cluster's threads and ``scheduler``
    its address, recorded in the session. ``adapter`` (workers == 1 only, no executor) runs an
    adapter object instead of loading ``config.impl``;
    ``max_blocks`` stops after that many blocks (run again to continue); ``progress(state,
    session)`` is called after every block. The state is written to ``out`` at most every
    :data:`CHECKPOINT_SECONDS` and when the run ends, normally or by an exception (Ctrl-C).
    """
    subset = parse_subset(config.subset, config.beta)
    key = config.key(subset)
    out = Path(out)
    state = load_state(out)
    if state is not None:
        check_same(state, key, out)
    if adapter is not None and (workers != 1 or executor is not None):
        raise ValueError("an adapter object runs in this process only (workers=1, no executor)")
    probe = adapter if adapter is not None else load(config.impl)
    try:
        from sl1conf.conformance.rules.profiles import load_profile

        load_profile(config.platform).select(probe, ["fp16"], [config.variant], what="sweep")
        described = probe.describe()
    finally:
        if adapter is None:
            probe.close()
    nblocks = -(-subset.size // config.block)
    if state is None:
        state = {"format": STATE_FORMAT, "config": key, "pairs": subset.size, "blocks": nblocks,
                 "done": set(), "complete": nblocks == 0, "shards": [], "adapter": described,
                 "sessions": [], "tally": PlaneTally()}
    if str(shard) not in state["shards"]:
        state["shards"].append(str(shard))
    todo = [k for k in shard.items(0, nblocks) if k not in state["done"]]
    if max_blocks is not None:
        todo = todo[:max_blocks]
    if executor is None:
        workers = max(1, min(workers, len(todo)))  # no process without a block to run
    from sl1conf.conformance.common.hostinfo import describe_host

    session = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "shard": str(shard),
               "workers": workers, "todo": len(todo), "blocks": 0, "elements": 0, "seconds": 0.0,
               "host": describe_host()}
    if scheduler:
        session["scheduler"] = scheduler
    if todo:
        state["sessions"].append(session)
    t0 = time.perf_counter()
    # nothing to run: the state is written once, as it is; however the run ends (done, Ctrl-C,
    # an error): the blocks done are kept
    with Checkpoint(functools.partial(save_state, out, state), CHECKPOINT_SECONDS, unsaved=not todo) as checkpoint, \
            _results(config, todo, workers, adapter, executor) as results:
        for k, tally in results:
            state["tally"].merge(tally)
            state["done"].add(k)
            state["complete"] = len(state["done"]) == nblocks
            session["blocks"] += 1
            session["elements"] += tally.elements
            session["seconds"] = round(time.perf_counter() - t0, 3)
            checkpoint.changed()
            if progress:
                progress(state, session)
    return state


def merge_states(states: list) -> dict:
    """One state from sweeps of disjoint blocks of the same sweep (shards)."""
    first = states[0]
    merged = {**first, "done": set(), "shards": [], "sessions": [], "tally": PlaneTally()}
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


def run_sweep_on(config: SweepConfig, out, *, workers: "int | None" = None, scheduler: "str | None" = None,
                 **options) -> dict:
    """:func:`run_sweep` (``options``: shard, max_blocks, progress) on local processes
    (``workers``, default the CPUs available) or on the Dask cluster at ``scheduler`` (its
    client open meanwhile; a scheduler that cannot be reached is one error line)."""
    if not scheduler:
        return run_sweep(config, out, workers=workers or kernel.default_threads(), **options)
    from sl1conf.conformance.search.distributed import dask_executor

    with dask_executor(scheduler) as (executor, threads):
        return run_sweep(config, out, workers=threads, executor=executor, scheduler=scheduler, **options)


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


def finish(state: dict, profile, out) -> None:
    """Give ``state`` its ``summary`` (the elements, the time, the histogram, the worst element
    and the :func:`verdict` on ``profile``) and write it into OUT/sweep.json."""
    tally = state["tally"]
    seconds = elapsed(state)
    state["summary"] = {
        "elements": tally.elements, "seconds": round(seconds, 2),
        "elements_per_second": round(tally.elements / seconds) if seconds else None,
        "histogram": tally.histogram(), "worst": tally.worst_overall(),
        "verdict": verdict(tally, profile, int(state["config"]["beta"], 16))}
    save_state(out, state)


def elapsed(state: dict) -> float:
    """Seconds over every session (shards run side by side add up: machine time, not wall time)."""
    return sum(s["seconds"] for s in state["sessions"])

