"""Fuzzing campaigns: numpy-random batches, each a pure function of (seed, batch index).

Why batches by seed: batch ``k`` is drawn from ``SeedSequence(seed, spawn_key=(k,))`` (the
``k``-th child of the campaign's seed), so any batch is replayed from two numbers, shards
(``--shard I/N``) own disjoint batch indices, and local processes, a Dask cluster or N CI
jobs all cover exactly the same work for the same seed.

Why the checks are certify's: every element is judged by the one judge (``rules.judge``,
with the catalog's element rules and the open-behaviour alternatives computed by the same
policy the vector families use), only after the fast oracle says it is not the correctly
rounded result bit for bit (a correctly rounded element is accepted by every rule, and
every rule is a function of the element alone), so an honest implementation costs one
oracle call per batch. Everything about whole calls (crashes, hangs, memory the call should
not touch, core_mask dependence, repeated or moved calls that differ) is found by the
requirements' own probes (``search.probing``), each under the requirement that declares it. Failures are deduplicated by :func:`key` (the requirement, where
and on what kind of value: the distinct failures), and distinct failures of one defect are
grouped by their :func:`pattern` (the requirement and the failure's shape: an element left
unwritten at the end of a call, or a wrong value or a NaN on one branch of the formula), so a
systematic defect is one finding with a count and one reproducer, not hundreds.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import functools
import itertools
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from sl1conf.adapters.base import Adapter, Case, Outcome
from sl1conf.reference import fast_oracle
from sl1conf.reference import formats
from sl1conf.reference import exact

from sl1conf.conformance import requirements
from sl1conf.conformance.requirements.base import NOT_WRITTEN, SHORT_CALL, Seen, case_element
from sl1conf.conformance.requirements.evidence import Evidence, add_evidence
from sl1conf.conformance.requirements.filing import NOT_WRITTEN_UNDER
from sl1conf.conformance.search.probing import run_probed
from sl1conf.conformance.rules.judge import Reason, expected_for, is_special, is_zero, judge
from sl1conf.conformance.rules.profiles import Profile
from sl1conf.conformance.vectors.sampling import fast_batch, hard_batch, random_batch
from sl1conf.conformance.search.campaign import per_worker
from sl1conf.conformance.search.distributed import submitted
from sl1conf.conformance.search.shards import Shard, parse_shard

__all__ = ["Campaign", "Finding", "BatchResult", "Result", "batch_seed", "make_batch", "check_cases",
           "run_batch", "run", "key_text", "same_failure", "SHORT", "BOUNDARY", "NOT_WRITTEN", "BATCH_ELEMENTS"]

BATCH_ELEMENTS = 1 << 20
"""Elements of a batch's long case, per dtype and variant (a little less: the tail varies).
Large, so that the fixed cost of a batch's short calls is a small share of its time
(docs/fuzzing.md, "Throughput")."""
STATISTIC_SAMPLE = 1 << 14
"""The statistics (the rounding-bias counts) read this many elements of each batch's longest call
of each dtype and variant (the accepted models computed on every one of them)."""
TAIL_LENGTHS = range(1, 18)
"""Every batch holds one case of each of these lengths: tails of every vector width up to 16."""
EXTRA_LENGTHS = 4  # and this many random lengths from 18 to 1100
HARD_FP32 = 1100  # longest fp32 case drawn from sampling.hard_batch
SHORT = SHORT_CALL
"""Cases up to this length are 'short': failures on them are keyed apart from failures on long
cases (length-dependent defects), and some probes make calls of short ones only."""
BOUNDARY = "boundary"
"""The branch of a wrong result where the exact diff is +-beta (the boundary rule judged it)."""


@dataclass(frozen=True)
class Campaign:
    """What a campaign is; everything a batch depends on, so a batch is replayable."""

    impl: str
    platform: str
    dtypes: tuple
    variants: tuple
    seed: int
    batch_elements: int = BATCH_ELEMENTS
    batches: Optional[int] = None  # batches of the whole campaign (all shards); None: run for `seconds`
    seconds: Optional[float] = None
    shard: str = "1/1"

    @property
    def shard_range(self) -> Shard:
        return parse_shard(self.shard)

    def identity(self) -> dict:
        """What two outputs must share to be parts of one campaign (all but the shard index)."""
        d = dataclasses.asdict(self)
        d.pop("shard"), d.pop("seconds")
        d["dtypes"], d["variants"] = list(self.dtypes), list(self.variants)
        d["shards"] = self.shard_range.count
        return d

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "dtypes": list(self.dtypes), "variants": list(self.variants)}

    @classmethod
    def from_dict(cls, d: dict) -> "Campaign":
        fields = {f.name for f in dataclasses.fields(cls)}
        d = {k: v for k, v in d.items() if k in fields}
        return cls(**{**d, "dtypes": tuple(d["dtypes"]), "variants": tuple(d["variants"])})


@dataclass(frozen=True)
class Finding:
    """One failure on one case of a batch: ``requirement`` the catalog id it breaks (as certify
    reports it), ``kind`` what was seen (element: a wrong element; else what the probe that found
    it calls it: crash, timeout, error, memory, inputs-changed, core-mask, determinism, position,
    late-write (dx1 written after the call returned) or rejected: an input the manual defines
    was refused); ``element`` the first failing element."""

    kind: str
    case: int
    key: tuple
    element: Optional[int] = None
    detail: str = ""
    batch: Optional[int] = None
    breaks: tuple = ()  # for a wrong element: every requirement it breaks (the key names the most specific)
    length: int = 0  # elements of the call it was found on
    shape: tuple = ()  # what :func:`pattern` groups by beside the requirement, dtype and variant (empty: the key)
    also: tuple = ()  # other calls the failure needs to be seen again (the twin under another core_mask)

    @property
    def requirement(self) -> str:
        return self.key[0]

    @property
    def pattern(self) -> tuple:
        """The finding's pattern (see :func:`pattern`)."""
        return pattern(self)

    @property
    def error(self) -> str:
        """For a wrong element: not-written, nan or wrong; else the kind."""
        return self.shape[1] if self.shape and self.shape[0] == "element" else self.kind


@dataclass
class Group:
    """The failures of one pattern, one finding: the distinct failures (keys) in it, how many
    failures (every batch's, before deduplication), the first found and the reproducer to
    minimize (the one found on the shortest call; ties: the first found). Order-independent,
    so local processes, a Dask cluster and one process choose the same."""

    pattern: tuple
    keys: set = field(default_factory=set)
    findings: int = 0
    found: tuple = ()  # (batch, case) of the first found
    smallest: Optional[Finding] = None

    def add(self, f: Finding) -> None:
        self.keys.add(f.key)
        self.findings += 1
        at = (f.batch, f.case)
        self.found = min(self.found, at) if self.found else at
        rank = lambda g: (g.length, g.batch, g.case, g.element or 0, g.key)  # noqa: E731
        if self.smallest is None or rank(f) < rank(self.smallest):
            self.smallest = f


@dataclass
class BatchResult:
    batch: int
    elements: int
    cases: int
    findings: list
    seconds: float
    statistics: dict = field(default_factory=dict)  # statistic name -> "dtype/variant" -> the batch's counts
    evidence: dict = field(default_factory=dict)  # requirement id -> Evidence: what the batch found of it
    reasons: np.ndarray = field(default_factory=lambda: np.zeros(len(Reason), np.int64))  # elements by the judge's reason


@dataclass
class Result:
    """A campaign's outcome: what ran and the first finding of every key (lowest batch first)."""

    batches: list = field(default_factory=list)
    elements: int = 0
    cases: int = 0
    findings: int = 0  # every finding, before deduplication
    first: dict = field(default_factory=dict)  # key -> Finding
    seconds: float = 0.0
    interrupted: bool = False  # stopped by a signal before its batches or time were done
    statistics: dict = field(default_factory=dict)  # statistic name -> "dtype/variant" -> counts summed over the batches
    evidence: dict = field(default_factory=dict)  # requirement id -> Evidence over the batches (certify's and sweep's shape)
    reasons: np.ndarray = field(default_factory=lambda: np.zeros(len(Reason), np.int64))  # elements by the judge's reason

    patterns: dict = field(default_factory=dict)  # pattern -> Group

    def add(self, r: BatchResult) -> None:
        self.batches.append(r.batch)
        self.elements += r.elements
        self.cases += r.cases
        self.findings += len(r.findings)
        add_statistics(self.statistics, r.statistics)
        add_evidence(self.evidence, r.evidence)
        self.reasons = self.reasons + r.reasons
        for f in r.findings:
            old = self.first.get(f.key)
            if old is None or (f.batch, f.case) < (old.batch, old.case):
                self.first[f.key] = f
            group = self.patterns.get(f.pattern)
            if group is None:
                group = self.patterns[f.pattern] = Group(f.pattern)
            group.add(f)

    def groups(self) -> list:
        """The findings: one :class:`Group` per pattern, in the order they were found."""
        return sorted(self.patterns.values(), key=lambda g: g.found)

    @property
    def rate(self) -> float:
        return self.elements / self.seconds if self.seconds > 0 else 0.0

    def distinct(self) -> list:
        """The first finding of each key, in the order they were found (batch, case)."""
        return sorted(self.first.values(), key=lambda f: (f.batch, f.case, f.element or 0, f.key))


# ------------------------------------------------------------------ batches by seed

def batch_seed(seed: int, k: int) -> np.random.SeedSequence:
    """Batch ``k``'s seed: the ``k``-th child of ``SeedSequence(seed)`` (``spawn_key=(k,)``)."""
    return np.random.SeedSequence(seed, spawn_key=(k,))


def _draw(fmt: formats.Format, n: int, rng: np.random.Generator, long: bool = False):
    """Boundary-weighted inputs: sampling's mixtures, hard ties, or the hypothesis strategies'
    decoding of random bytes (specials, +-beta, overflow, underflow); for the long call,
    sampling's mixtures drawn by compiled loops (``fast_batch``), which cost a tenth."""
    from sl1conf.conformance.search.strategies import decode_batch

    if long:
        b = fast_batch(fmt, n, rng)
        return b.dy, b.x1, b.x2, b.beta
    u = rng.random()
    if u < 0.2:
        return decode_batch(fmt.name, rng.bytes(8 + n * (6 + 3 * fmt.dtype.itemsize)))
    # hard ties send most fp32 elements to the exact (slow) fallback: short cases only there
    b = hard_batch(fmt, n, rng) if u < 0.45 and (fmt is formats.FP16 or n <= HARD_FP32) else random_batch(fmt, n, rng)
    return b.dy, b.x1, b.x2, b.beta


def make_batch(campaign: Campaign, profile: Profile, k: int) -> list[Case]:
    """Batch ``k``: for every dtype and variant, one long case, one of each tail length and a
    few random lengths; shared-variant cases under random core masks of the profile's cores.
    Every other case has its arrays' starts at a guard page (``guard="start"``), the rest their
    ends, so a guarded adapter faults on reads and writes before the start as past the end."""
    rng = np.random.default_rng(batch_seed(campaign.seed, k))
    full, cases = profile.core_mask, []
    for dtype in campaign.dtypes:
        fmt = formats.format_by_name(dtype)
        for variant in campaign.variants:
            long_n = max(1, campaign.batch_elements - int(rng.integers(0, 64)))
            extra = rng.integers(18, 1100, EXTRA_LENGTHS)
            for at, n in enumerate((long_n, *TAIL_LENGTHS, *extra.tolist())):
                dy, x1, x2, beta = _draw(fmt, int(n), rng, long=at == 0)
                mask = full
                if variant == "s" and rng.random() < 0.5:
                    mask = int(rng.integers(1, full + 1))
                cases.append(Case(dtype, dy, x1, x2, beta, variant=variant, core_mask=mask,
                                  id=f"{k}.{len(cases)}", guard=("end", "start")[len(cases) % 2]))
    return cases


# ------------------------------------------------------------------ checking

def _classes(fmt: formats.Format, case: Case, idx: np.ndarray) -> list[tuple]:
    """(branch, value kind) of elements: what a failure is keyed by beside its requirement."""
    s, e = exact.exact_diff(fmt, case.x1[idx], case.x2[idx])
    beta = float(case.floats()[3])
    branch = np.where(np.isnan(s) | np.isnan(beta), "nan", np.where(
        exact.gt(s, e, beta), "gt", np.where(exact.lt(s, e, -beta), "lt", "mid")))
    branch = np.where(exact.at_boundary(fmt, case.x1[idx], case.x2[idx], case.beta), BOUNDARY, branch)
    bits = [a[idx] for a in (case.dy, case.x1, case.x2)]
    special = np.logical_or.reduce([is_special(fmt, b) for b in bits])
    zero = np.logical_or.reduce([is_zero(fmt, b) for b in bits])
    sub = np.logical_or.reduce([((b & fmt.exp_mask) == 0) & ~is_zero(fmt, b) for b in bits])
    kind = np.where(special, "special", np.where(sub, "subnormal", np.where(zero, "zero", "normal")))
    return list(zip(branch.tolist(), kind.tolist()))


def _beta_class(fmt: formats.Format, beta: int) -> str:
    cls, sign = formats.classify(fmt, beta)
    return ("-" if sign else "+") + cls.value


def key(requirement: str, case: Case, *extra) -> tuple:
    """The deduplication key: requirement id, dtype, variant, short or long, then what was seen
    (for a wrong element: its branch, value kind and beta's class)."""
    return (requirement, case.dtype, case.variant, "short" if case.n <= SHORT else "long", *extra)


def key_text(k: tuple) -> str:
    return "/".join(map(str, k))


def pattern(f: Finding) -> tuple:
    """What findings of one defect share: the finding's requirement, dtype and variant and its
    shape. For an element left unwritten (its dx1 bits what they were before the call): where
    in the call the unwritten elements lie (``end``: a suffix, the whole call included;
    ``start``: a prefix; ``scattered``), under :data:`NOT_WRITTEN_UNDER`, whatever its branch,
    values or call length (never computed, they say nothing about it). For a wrong value or a
    NaN: the least specific requirement it breaks (the accuracy budget for any element beyond
    it, the boundary rule for an error within it, the zero-sign rule, ...: the more specific
    ones tell the inputs' class, not the defect), the error and the branch of the formula an
    implementation computing fl(x1 - x2) takes (:func:`_rounded_branch`); not the call's
    length, the value class or beta's. For a probe's finding whose shape says the bits that
    differ were never written (``(kind, NOT_WRITTEN)``: the position probe moves a call's last
    elements): the unwritten pattern at the ``end``. Anything else: its key."""
    if not f.shape:
        return f.key
    req, dtype, variant, length = f.key[:4]
    if f.shape[0] != "element":  # a probe's (kind, NOT_WRITTEN)
        return (NOT_WRITTEN_UNDER, dtype, variant, NOT_WRITTEN, "end")
    _, error, where_or_branch = f.shape
    if error == NOT_WRITTEN:
        return (NOT_WRITTEN_UNDER if NOT_WRITTEN_UNDER in f.breaks else f.breaks[-1], dtype, variant, error,
                where_or_branch)
    return (f.breaks[-1] if f.breaks else req, dtype, variant, error, where_or_branch)


def _rounded_branch(case: Case, idx: np.ndarray) -> np.ndarray:
    """The formula's branch of elements ``idx`` as an implementation computing fl(x1 - x2) takes
    it (gt, lt, mid, nan; the boundary, |fl(x1 - x2)| = beta, is mid): a pattern's branch, so that
    one defect of a branch is one finding whether the exact diff is beside beta or not."""
    _, x1, x2, beta = case.floats()
    with np.errstate(all="ignore"):
        d = (x1[idx] - x2[idx]).astype(case.format.dtype)
        return np.where(np.isnan(d) | np.isnan(beta), "nan", np.where(d > beta, "gt", np.where(d < -beta, "lt", "mid")))


def _unwritten_where(idx: np.ndarray, n: int) -> str:
    """Where the unwritten elements ``idx`` (sorted) of a call of ``n`` lie: end, start or scattered."""
    contiguous = idx[-1] - idx[0] + 1 == idx.size
    if contiguous and idx[-1] == n - 1:
        return "end"
    return "start" if contiguous and idx[0] == 0 else "scattered"


def judge_call(profile: Profile, case: Case, got: np.ndarray, worst: "dict | None" = None,
               reasons: "np.ndarray | None" = None) -> dict:
    """Requirement id -> the elements of ``got`` (the written elements) it rejects: the one
    judge, run only where the result is not the correctly rounded one (where it is, every
    rule accepts it). Empty when every element is accepted. ``worst``, if given, gets each
    requirement's worst rejected element (requirement id -> (element, its distance, the
    correctly rounded bits)); ``reasons``, if given (counts per rules.judge.Reason), gets the
    elements counted by the judge's reason (those not judged: exact)."""
    fmt, w = case.format, case.elements_written
    dy, x1, x2, beta = case.floats()
    oracle = fast_oracle.smoothl1lossgrad(dy[:w], x1[:w], x2[:w], beta).view(fmt.uint)
    idx = np.flatnonzero(~formats.same_result(fmt, got, oracle))
    if reasons is not None:
        reasons[Reason.EXACT] += got.size - idx.size
    if not idx.size:
        return {}
    sub = [a[:w][idx] for a in (case.dy, case.x1, case.x2)]
    exp = expected_for(fmt, *sub, case.beta, variant=case.variant, core_mask=case.core_mask, oracle=oracle[idx])
    j = judge(fmt, profile, got[idx], exp, *sub, case.beta)
    if reasons is not None:
        reasons += np.bincount(j.reason, minlength=len(Reason))
    if worst is not None:
        for rid, bad in j.breaks.items():
            if bad.any():
                k = int(np.flatnonzero(bad)[int(np.argmax(j.dist[bad]))])
                worst[rid] = (int(idx[k]), int(j.dist[k]), int(oracle[idx[k]]))
    return {rid: idx[bad] for rid, bad in j.breaks.items() if bad.any()}


def _element_findings(profile: Profile, i: int, case: Case, o: Outcome, evidence: "dict | None" = None,
                      batch: int = 0, reasons: "np.ndarray | None" = None) -> list[Finding]:
    """The wrong elements of a returned call, as findings: the one judge's rejections (every
    rule it breaks, filed under the most specific), one per requirements broken, value class,
    error and branch (its first element). ``evidence``, if given (requirement id -> Evidence),
    gets every requirement's rejected elements and the worst, at (batch, case, element)."""
    w, fmt = case.elements_written, case.format
    worst: dict = {}
    rejected = judge_call(profile, case, o.out[:w], worst if evidence is not None else None, reasons)
    if not rejected:
        return []
    for rid, (k, d, expected) in worst.items():
        evidence.setdefault(rid, Evidence()).add_elements(
            rejected[rid].size, case_element(case, k, int(o.out[k]), d, expected, at=[batch, i, k]))
    out, beta_class = [], _beta_class(fmt, case.beta)
    rids = list(rejected)  # most specific first
    bad = np.unique(np.concatenate(list(rejected.values())))
    code = sum(np.isin(bad, rejected[rid]).astype(np.int64) << r for r, rid in enumerate(rids))
    got = o.out[bad]
    unwritten = got == case.initial_out()[bad]
    error = np.where(unwritten, NOT_WRITTEN, np.where(formats.is_nan_bits(fmt, got), "nan", "wrong"))
    where = _unwritten_where(bad[unwritten], w) if unwritten.any() else None
    branch = _rounded_branch(case, bad)
    seen = {}
    for e, c, cls, err, b in zip(bad.tolist(), code.tolist(), _classes(fmt, case, bad), error.tolist(),
                                 branch.tolist()):
        seen.setdefault((tuple(rid for r, rid in enumerate(rids) if c >> r & 1), cls, err, b), e)
    for (rids, cls, err, b), e in seen.items():  # filed under the most specific requirement it breaks
        shape = ("element", err, where if err == NOT_WRITTEN else b)
        out.append(Finding("element", i, key(rids[0], case, *cls, beta_class), element=e, breaks=rids,
                           detail=f"{int(bad.size)} of {w} elements not accepted"
                                  + (f", {int(unwritten.sum())} of them not written" if unwritten.any() else ""),
                           length=case.n, shape=shape))
    return out


def _probe_finding(s: Seen, case: Case) -> Finding:
    """A probe's finding on ``case``, keyed by its requirement and kind."""
    return Finding(s.kind, s.case, key(s.requirement, case, s.kind), element=s.element, detail=s.detail,
                   length=case.n if s.element is not None else 0, shape=s.shape, also=s.also)


def check_cases(adapter: Adapter, profile: Profile, cases: list[Case], statistics: "dict | None" = None,
                late: bool = True, evidence: "dict | None" = None, batch: int = 0,
                reasons: "np.ndarray | None" = None) -> list[Finding]:
    """Every finding on ``cases``: each returned call's elements judged, and every requirement's
    probe (``search.probing``: their calls made with the cases in one adapter run). ``late``
    False: no probe waits for the adapter's watch of writes after the return (the shrinker's
    checks). ``statistics``, if given (statistic name -> "dtype/variant" -> counts), gets the
    batch's counts added (their first STATISTIC_SAMPLE elements of a call). ``evidence``, if given
    (requirement id -> Evidence), gets what each requirement's rule and probe found, at (``batch``,
    case, element): every rejected element and the worst, every failing call and the first.
    ``reasons``, if given (counts per rules.judge.Reason), gets every returned element counted by
    the judge's reason."""
    def elements(outcomes):
        return [f for i, (c, o) in enumerate(zip(cases, outcomes)) if o.status == "ok"
                for f in _element_findings(profile, i, c, o, evidence, batch, reasons)]

    probed = run_probed(adapter, profile, cases, ask_late=late, statistics=statistics is not None,
                        sample=STATISTIC_SAMPLE, first=elements)
    findings = probed.first + [_probe_finding(s, cases[s.case]) for s in probed.seen]
    for s in probed.seen if evidence is not None else ():
        e = evidence.setdefault(s.requirement, Evidence())
        if s.changed:  # elements whose bits changed in another call: rejected elements, the first the example
            k, bits = min(s.changed)
            e.add_elements(len({k for k, _ in s.changed}),
                           case_element(cases[s.case], int(k), int(bits), at=[batch, s.case, int(k)]))
        else:
            e.add_call([batch, s.case], s.kind, s.detail)
    if statistics is not None:
        add_statistics(statistics, probed.counts)
    return findings


def add_statistics(total: dict, more: dict) -> dict:
    """``more`` (statistic name -> "dtype/variant" -> counts) added into ``total``."""
    adders = {s.name: s.add for s in requirements.STATISTICS}
    for name, runs in more.items():
        for run, counts in runs.items():
            adders[name](total.setdefault(name, {}).setdefault(run, {}), counts)
    return total


def run_batch(campaign: Campaign, profile: Profile, adapter: Adapter, k: int) -> BatchResult:
    """Draw batch ``k``, check it, keep the first finding of each key."""
    t0 = time.perf_counter()
    cases = make_batch(campaign, profile, k)
    first, counts, evidence, reasons = {}, {}, {}, np.zeros(len(Reason), np.int64)
    for f in check_cases(adapter, profile, cases, counts, evidence=evidence, batch=k, reasons=reasons):
        first.setdefault((f.key, f.pattern), dataclasses.replace(f, batch=k))  # the first of each key and pattern
    return BatchResult(k, sum(c.n for c in cases), len(cases), list(first.values()), time.perf_counter() - t0, counts,
                       evidence, reasons)


# ------------------------------------------------------------------ driving

def _loaded(campaign: Campaign) -> tuple:
    from sl1conf.adapters import load

    from sl1conf.conformance.rules.profiles import load_profile

    return load(campaign.impl), load_profile(campaign.platform)


def _close_loaded(loaded: tuple) -> None:
    loaded[0].close()


def batch_task(campaign: Campaign, k: int) -> BatchResult:
    """One batch in a worker (a local process or a Dask worker's thread): the adapter and the
    profile are loaded once per process and thread, and kept (``campaign.per_worker``)."""
    adapter, profile = per_worker(("fuzz", campaign.impl, campaign.platform), functools.partial(_loaded, campaign),
                                  _close_loaded)
    return run_batch(campaign, profile, adapter, k)


def batch_indices(campaign: Campaign):
    """The batch indices this shard runs, in order (endless when the campaign runs for a time)."""
    shard = campaign.shard_range
    if campaign.batches is not None:
        return iter(shard.items(0, campaign.batches))
    return (k for k in itertools.count(shard.index - 1, shard.count))


def run(campaign: Campaign, *, adapter: "Adapter | None" = None, profile: "Profile | None" = None,
        executor: "cf.Executor | None" = None, in_flight: int = 2,
        progress: "Callable[[Result], None] | None" = None,
        stop: "Callable[[], bool] | None" = None) -> Result:
    """Run the campaign's batches: in this process with ``adapter`` and ``profile``, or through
    ``executor`` (a spawn process pool, a Dask client's executor) with ``in_flight`` batches
    submitted at a time. Stops after ``campaign.batches`` or ``campaign.seconds``, or as soon
    as ``stop()`` says so (a signal): then the batches in flight are abandoned, the finished
    ones kept, and ``Result.interrupted`` is set."""
    result, t0 = Result(), time.perf_counter()
    deadline = t0 + campaign.seconds if campaign.seconds is not None else None
    stopped = stop or (lambda: False)
    more = lambda: not stopped() and (deadline is None or time.perf_counter() < deadline)  # noqa: E731
    todo = batch_indices(campaign)

    def done(r: BatchResult) -> None:
        result.add(r)
        result.seconds = time.perf_counter() - t0
        if progress:
            progress(result)

    if executor is None:
        for k in todo:
            if not more():
                break
            done(run_batch(campaign, profile, adapter, k))
    else:
        with contextlib.closing(submitted(executor, batch_task, ((campaign, k) for k in todo), in_flight, more,
                                          stopped)) as futures:
            for fut in futures:
                if stopped() and (fut.cancelled() or fut.exception() is not None):
                    continue  # once stopped, a batch fails when its worker is ended
                done(fut.result())
    result.interrupted = stopped()
    result.seconds = time.perf_counter() - t0
    result.batches.sort()
    return result


# ------------------------------------------------------------------ shrinking a finding

def same_failure(adapter: Adapter, profile: Profile, finding: Finding) -> Callable[[Case], Optional[Finding]]:
    """The shrinker's predicate: a finding of the same requirement and kind on the case (for a
    wrong result, on the same branch of the formula, breaking the same requirements and with the
    same error: not written, NaN or a wrong value, so the saved case fails in certify as the
    finding did), or None."""
    def fails(case: Case) -> Optional[Finding]:
        for f in check_cases(adapter, profile, [case], late=finding.kind == "late-write"):
            if (f.requirement, f.kind, f.breaks, f.error) == (finding.requirement, finding.kind, finding.breaks,
                                                              finding.error) and (
                    f.kind != "element" or f.key[4] == finding.key[4]):
                return f
        return None
    return fails


def shrink(campaign: Campaign, profile: Profile, adapter: Adapter, finding: Finding,
           give_up: "Callable[[], bool] | None" = None) -> tuple[Case, Finding]:
    """The smallest call that still fails as ``finding`` did (its batch drawn again from its
    seed); ``give_up()`` true ends the search early (see ``minimize``)."""
    from sl1conf.conformance.search.minimize import minimize

    case = make_batch(campaign, profile, finding.batch)[finding.case]
    return minimize(case, finding, same_failure(adapter, profile, finding), finding.element, give_up=give_up)
