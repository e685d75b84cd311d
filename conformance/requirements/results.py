"""A certification's results, typed: a family's, a requirement's, a run's and a report's.

Each is built once, from what the checks found (the evidence), and serialised once
(``to_json``, the report schema's objects, their keys in the schema's order). They are frozen:
what is learnt after a result is built (the shared-against-private comparison, a waiver) is given
to a new result (``dataclasses.replace``), never written into the old one. A status and a
verdict are never stored: they are properties, computed from the evidence, the applicability
and the waivers in one place (:attr:`RequirementResult.status`, :attr:`RunResult.verdict`,
:attr:`Report.verdict`). ``from_json`` reads a written report's objects
back (a finished report waived again, the runs the pytest plugin's workers certified).
:func:`incomplete_reasons` says why a run that failed nothing still checked too little to pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Optional

from sl1conf.conformance.requirements.entries import (
    BeyondBudget, Bulk, ErrorSummary, ReasonCounts, example_from_json, observed_from_json, observed_to_json,
    pattern_from_json,
)
from sl1conf.conformance.requirements.records import CallNote, ElementRecord

__all__ = ["Counted", "FamilyResult", "RequirementResult", "RunResult", "Report", "as_json", "incomplete_reasons",
           "use_lines", "waived_line", "NOTHING_OBSERVED"]

NOTHING_OBSERVED = "not observed: "
"""How the entry (``observed``) of a requirement that checked nothing starts: certify says why
after it, and the reports say that such a requirement is no pass."""


def as_json(value):
    """``value`` with every result in it serialised (lists and dicts walked)."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, list):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    return value


def _counted_json(r) -> dict:
    """The counts, the reasons, what was accepted beyond the budget, the bulk, the diagnosis, the
    worst and the examples of a family's or a requirement's result, as written (in that order)."""
    out = {} if r.checked is None else {"checked": r.checked, "failed": r.failed}
    if r.reasons is not None:
        out["reasons"] = r.reasons.to_json()
    if r.beyond_budget is not None:
        out["beyond_budget"] = r.beyond_budget.to_json()
    if r.not_a_distance:
        out["beyond_budget_not_a_distance"] = dict(r.not_a_distance)
    if r.bulk is not None:
        out["bulk"] = r.bulk.to_json()
    if r.diagnosis is not None:
        out["diagnosis"] = [d.to_json() for d in r.diagnosis]
    if r.worst is not None:
        out["worst"] = r.worst.to_json()
    if r.examples:
        out["examples"] = [e.to_json() for e in r.examples]
    return out


def _counted_from_json(d: dict) -> dict:
    """What :func:`_counted_json` wrote, as the typed attributes (keyword arguments)."""
    return {"checked": d.get("checked"), "failed": d.get("failed"),
            "reasons": ReasonCounts.from_json(d["reasons"]) if "reasons" in d else None,
            "beyond_budget": BeyondBudget.from_json(d["beyond_budget"]) if "beyond_budget" in d else None,
            "not_a_distance": dict(d.get("beyond_budget_not_a_distance") or {}),
            "bulk": Bulk.from_json(d["bulk"]) if "bulk" in d else None,
            "diagnosis": tuple(map(pattern_from_json, d["diagnosis"])) if "diagnosis" in d else None,
            "worst": ElementRecord.from_json(d["worst"]) if "worst" in d else None,
            "examples": tuple(map(example_from_json, d.get("examples") or ()))}


_COUNTED = ("checked", "failed", "reasons", "beyond_budget", "beyond_budget_not_a_distance", "bulk", "diagnosis",
            "worst", "examples")


@dataclass(frozen=True)
class Counted:
    """What a tally found (requirements.tally.Tally.entry), typed: the elements and calls checked
    and failed, by the judge's reason, those accepted beyond the budget (with a distance, and
    those that are no distance by kind), the commonest error, the diagnosis (None: none was asked;
    its patterns otherwise), the worst element and the examples (elements, notes about calls)."""

    checked: Optional[int] = None  # None: nothing counted (an observation only)
    failed: Optional[int] = None
    reasons: Optional[ReasonCounts] = None
    beyond_budget: Optional[BeyondBudget] = None
    not_a_distance: dict = field(default_factory=dict)  # kind -> elements accepted beyond the budget
    bulk: Optional[Bulk] = None
    diagnosis: Optional[tuple] = None  # Pattern each
    worst: Optional[ElementRecord] = None
    examples: tuple = ()  # ElementRecord or CallNote each

    def given(self) -> dict:
        """Its attributes, as keyword arguments for a result."""
        return {f.name: getattr(self, f.name) for f in fields(Counted)}


@dataclass(frozen=True)
class FamilyResult:
    """A requirement judged family by family (R01): one family's counts, reasons, worst and examples."""

    family: str
    checked: int
    failed: int
    reasons: Optional[ReasonCounts] = None
    worst: Optional[ElementRecord] = None
    examples: tuple = ()
    waiver: str = ""  # the reason of the waiver that covers its failures
    beyond_budget = bulk = diagnosis = None  # a family's line says no more than its counts, worst and examples

    @property
    def not_a_distance(self) -> dict:
        return {}

    @property
    def status(self) -> str:
        return "pass" if not self.failed else "waived" if self.waiver else "fail"

    def to_json(self) -> dict:
        return {"family": self.family, "status": self.status, **_counted_json(self),
                **({"waiver": self.waiver} if self.waiver else {})}

    @classmethod
    def from_json(cls, d: dict) -> "FamilyResult":
        c = _counted_from_json(d)
        return cls(d["family"], d["checked"], d["failed"], c["reasons"], c["worst"], c["examples"],
                   d.get("waiver", ""))


_OWN = ("id", "title", "kind", "statement", "status", "waiver", "waiver_partial")
_AFTER = ("families", "observed")  # written after the counted fields; then ``extra``, then these:
_LAST = ("reproduction", "rerun_cases")


@dataclass(frozen=True)
class RequirementResult:
    """What one run found of one requirement: what its tally counted (:class:`Counted`'s
    attributes), its families (FamilyResult each, where it is judged per family), what it
    ``observed`` (text; the models matched, a tuple; R16's answers, question -> OpenAnswer), how
    far the commands reproduce a failure (``reproduction``; ``rerun_cases`` False: not by rerunning
    its case), and ``extra``: what one requirement alone records, which no renderer reads (R09's
    shared_vs_private, R17's shares, disputed_elements and combination, R01's rounding_bias)."""

    id: str
    title: str
    kind: str  # required or recorded (under this profile)
    statement: str
    applicable: bool  # something it is about was in the run
    checked: Optional[int] = None
    failed: Optional[int] = None
    reasons: Optional[ReasonCounts] = None
    beyond_budget: Optional[BeyondBudget] = None
    not_a_distance: dict = field(default_factory=dict)
    bulk: Optional[Bulk] = None
    diagnosis: Optional[tuple] = None
    worst: Optional[ElementRecord] = None
    examples: tuple = ()
    families: tuple = ()
    per_family: bool = False  # judged family by family: its families written, even none
    observed: object = None
    extra: dict = field(default_factory=dict)
    reproduction: str = ""
    rerun_cases: bool = True
    waiver: str = ""  # the reason of the waiver that covers its failures (not per family)
    waiver_partial: str = ""  # a waiver that names it but holds only some of its failures, and how many

    @property
    def status(self) -> str:
        """not-applicable, recorded (the manual leaves it open: observed, never failed), pass,
        waived (its failures, or every failing family's, covered by waivers) or fail."""
        if not self.applicable:
            return "not-applicable"
        if self.kind == "recorded":
            return "recorded"
        if not self.failed:
            return "pass"
        failing = [f for f in self.families if f.failed]
        return "waived" if self.waiver or failing and all(f.waiver for f in failing) else "fail"

    @property
    def over_the_run(self) -> list:
        """What was found of the whole run, in no call (R01's rounding bias): its notes' details."""
        return [e.detail for e in self.examples if isinstance(e, CallNote) and e.case is None]

    @property
    def model_parts(self) -> list:
        """R17's combination of evaluation models, (model, where) each; empty where one model (or none) matched."""
        combo = self.extra.get("combination")
        return [(p["model"], p["where"]) for p in combo["parts"]] if combo else []

    def entry_json(self) -> dict:
        """Its fields after the status, as written."""
        out = _counted_json(self)
        if self.families or self.per_family:
            out["families"] = [f.to_json() for f in self.families]
        if self.observed is not None:
            out["observed"] = observed_to_json(self.observed)
        out.update(self.extra)
        if self.reproduction:
            out["reproduction"] = self.reproduction
        if not self.rerun_cases:
            out["rerun_cases"] = False
        return out

    def to_json(self) -> dict:
        return {"id": self.id, "title": self.title, "kind": self.kind, "statement": self.statement,
                "status": self.status, **self.entry_json(),
                **({"waiver_partial": self.waiver_partial} if self.waiver_partial else {}),
                **({"waiver": self.waiver} if self.waiver else {})}

    @classmethod
    def from_json(cls, d: dict) -> "RequirementResult":
        return cls(d["id"], d["title"], d["kind"], d["statement"], d["status"] != "not-applicable",
                   waiver=d.get("waiver", ""), waiver_partial=d.get("waiver_partial", ""),
                   **_typed_fields({k: v for k, v in d.items() if k not in _OWN}))


def given_fields(extra: dict) -> dict:
    """What a check gives beside its tally (requirements.base.Check.extra: its families, what it
    observed, ...) as a result's typed attributes (keyword arguments)."""
    counted = {f.name for f in fields(Counted)}  # the tally's (Tally.entry), not the check's
    return {k: v for k, v in _typed_fields(extra).items() if k not in counted}


def _typed_fields(d: dict) -> dict:
    """A written entry's fields (after the status) as a result's typed attributes (keyword arguments)."""
    out = _counted_from_json(d)
    out["families"] = tuple(f if isinstance(f, FamilyResult) else FamilyResult.from_json(f)
                            for f in d.get("families") or ())
    out["per_family"] = "families" in d
    out["observed"] = observed_from_json(d["observed"]) if "observed" in d else None
    out["extra"] = {k: v for k, v in d.items() if k not in (*_COUNTED, *_AFTER, *_LAST)}
    out["reproduction"] = d.get("reproduction", "")
    out["rerun_cases"] = d.get("rerun_cases", True)
    return out


@dataclass(frozen=True)
class RunResult:
    """One dtype and variant certified: every requirement's result, the error statistics, and
    why a run that failed nothing still checked too little to pass (``incomplete``)."""

    dtype: str
    variant: str
    cases: int
    elements: int
    requirements: list  # RequirementResult, in catalog order
    errors: Optional[ErrorSummary] = None
    recorded: str = ""  # judged from a results file: what that covers
    incomplete: list = field(default_factory=list)
    broke: bool = False  # the certification itself failed (``incomplete`` says how): nothing was judged

    @property
    def verdict(self) -> str:
        """fail when a required requirement fails (or the run broke), else incomplete when a
        reason says so, else pass."""
        if self.broke or any(r.status == "fail" and r.kind == "required" for r in self.requirements):
            return "fail"
        return "incomplete" if self.incomplete else "pass"

    def to_json(self) -> dict:
        return {"dtype": self.dtype, "variant": self.variant, "cases": self.cases, "elements": self.elements,
                "requirements": [r.to_json() for r in self.requirements],
                **({"errors": self.errors.to_json()} if self.errors is not None else {}),
                **({"recorded": self.recorded} if self.recorded else {}),
                **({"incomplete": list(self.incomplete)} if self.incomplete else {}), "verdict": self.verdict}

    @classmethod
    def from_json(cls, d: dict) -> "RunResult":
        args = (d["dtype"], d["variant"], d["cases"], d["elements"],
                [RequirementResult.from_json(r) for r in d["requirements"]],
                ErrorSummary.from_json(d["errors"]) if d.get("errors") is not None else None, d.get("recorded", ""),
                list(d.get("incomplete", ())))
        # a run written as failed that fails nothing it holds: its certification broke
        return cls(*args, broke=d.get("verdict") == "fail" and cls(*args).verdict != "fail")


@dataclass(frozen=True)
class Report:
    """A certification: its envelope (what, where, how it was asked for) and its runs.
    ``extra``: top-level fields after the runs; ``waivers``: each waiver with its use (None:
    none were given)."""

    envelope: dict  # schema .. duration_s, then implementation .. quick (the verdict goes between)
    runs: list  # RunResult
    missing: list = field(default_factory=list)  # runs asked for (not narrowed away) that the implementation lacks
    narrowed: list = field(default_factory=list)  # the options that narrowed the runs below the profile's
    extra: dict = field(default_factory=dict)
    waivers: "list | None" = None
    not_asked: list = field(default_factory=list)  # runs the profile lists that narrowing left out: scope

    @property
    def verdict(self) -> str:
        """fail when a run fails or nothing ran; incomplete when a run is, or runs the profile
        lists and the run asked for are ones the implementation lacks (``missing``; runs
        ``not_asked`` are another scope, not incompleteness); else pass."""
        verdicts = [r.verdict for r in self.runs]
        if not verdicts or "fail" in verdicts:
            return "fail"
        return "incomplete" if self.missing or "incomplete" in verdicts else "pass"

    _HEAD = ("schema", "schema_version", "suite_version", "created", "duration_s")

    # The envelope's fields, by name (what the view and the gate read of a report).
    @property
    def implementation(self) -> dict:
        return self.envelope["implementation"]

    @property
    def profile(self) -> dict:
        """The profile's summary (name, title, path, SHA-256)."""
        return self.envelope["profile"]

    @property
    def invocation(self) -> dict:
        return self.envelope.get("invocation") or {}

    @property
    def host(self) -> dict:
        return self.envelope.get("host") or {}

    @property
    def vectors(self) -> dict:
        return self.envelope.get("vectors") or {}

    @property
    def quick(self) -> bool:
        return bool(self.envelope.get("quick"))

    @property
    def only(self) -> list:
        return list(self.envelope.get("only") or ())

    @property
    def created(self) -> str:
        return self.envelope.get("created", "")

    @property
    def suite_version(self) -> str:
        return self.envelope.get("suite_version", "")

    @property
    def duration_s(self) -> "float | None":
        return self.envelope.get("duration_s")

    def to_json(self) -> dict:
        head = {k: self.envelope[k] for k in self._HEAD if k in self.envelope}
        rest = {k: v for k, v in self.envelope.items() if k not in self._HEAD}
        return {**head, "verdict": self.verdict, **rest, "runs": [r.to_json() for r in self.runs], **self.extra,
                **({"missing_runs": list(self.missing)} if self.missing else {}),
                **({"narrowed": list(self.narrowed)} if self.narrowed else {}),
                **({"not_asked": list(self.not_asked)} if self.not_asked else {}),
                **({"waivers": self.waivers} if self.waivers is not None else {})}

    @classmethod
    def from_json(cls, d: dict) -> "Report":
        tail = ("verdict", "runs", "missing_runs", "narrowed", "not_asked", "waivers")
        keys = list(d)
        runs_at = keys.index("runs")
        envelope = {k: d[k] for k in keys[:runs_at] if k not in tail}
        extra = {k: d[k] for k in keys[runs_at + 1:] if k not in tail}
        return cls(envelope, [RunResult.from_json(r) for r in d["runs"]], list(d.get("missing_runs", ())),
                   list(d.get("narrowed", ())), extra, d.get("waivers"), list(d.get("not_asked", ())))


def incomplete_reasons(requirements: list, calls: int, unsupported: int, not_made: int = 0, first: str = "", *,
                       not_run=(), unobserved=()) -> list:
    """Why a run that failed nothing still checked too little to pass: calls never made
    (``not_run``: (case id, why) each, a recorded output that stops before them), calls the
    implementation answered ``unsupported`` (the profile requires them; ``not_made`` of them were
    not made once the implementation had said so, ``first``: the first answer), no element
    judged at all, required requirements that observed nothing (``unobserved``: ids; a check
    of nothing is never a pass), or one that passed on nothing (a report read back)."""
    out = []
    if not_run:
        out.append(f"{len(not_run):,} calls not run ({not_run[0][1]}): first case {not_run[0][0]}")
    if unsupported:
        out.append(f"{unsupported} of {calls} calls answered unsupported"
                   + (f" ({first.removeprefix('not run: ')})" if first else "")
                   + (f"; {not_made} of them not made, once the implementation had said so" if not_made else ""))
    r01 = next((r for r in requirements if r.id == "R01"), None)
    if r01 is not None and not r01.checked:
        out.append("no element was judged")
    empty = list(unobserved) + [r.id for r in requirements if r.kind == "required" and r.status == "pass"
                                and not r.checked and r.id not in unobserved]
    if empty:
        out.append(f"{', '.join(empty)} not observed: checked nothing")
    return out


def waived_line(dtype: str, variant: str, ids: list) -> str:
    """What a run says of the requirements it waived (``fp16 p: waived: R03``): certify's junit.xml
    and the pytest plugin's summary and JUnit."""
    return f"{dtype} {variant}: waived: {', '.join(ids)}"


def use_lines(used: list[dict]) -> list[str]:
    """What a run says of each waiver's use (``certify.waivers.waive``'s second value, or its sum
    over runs), one line each: ``waiver R03 waived 1 requirement (392 failures): reason`` or ``waiver R05 matched
    nothing: reason`` (stale: its failures are gone, or it names the wrong thing). certify prints
    them and writes them to junit.xml; the pytest plugin prints the same lines in its summary and
    writes them to its JUnit."""
    out = []
    for w in used:
        m, f = w.get("matched", 0), w.get("failures", 0)
        out.append(f"waiver {w['id']} waived {m} requirement{'s' * (m != 1)} ({f:,} failure{'s' * (f != 1)}): "
                   f"{w['reason']}" if m else f"waiver {w['id']} matched nothing: {w['reason']}")
    return out
