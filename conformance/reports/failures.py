"""What a failing requirement says, cause first, in the one order every format says it: the
:class:`Failure` of one requirement of one run and what it says (:func:`failure_said`,
:func:`failure_text`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sl1conf.conformance.requirements.records import ElementRecord
from sl1conf.conformance.reports.wording import element_text

__all__ = ["WORST_LABEL", "Failure", "Said", "failure_said", "failure_text"]


WORST_LABEL = "Worst input (the largest error, not a pattern)"


@dataclass
class Failure:
    """One failing requirement of one run, with everything needed to see and reproduce it."""

    dtype: str
    variant: str
    id: str
    title: str
    statement: str
    worst: "ElementRecord | None"  # the worst element (fuzz: the smallest reproducer)
    detail: str  # for requirements about calls, not elements (the first example's detail)
    commands: list = field(default_factory=list)
    variants: list = field(default_factory=list)  # the variants failing the same way (first: the one run)
    counts: list = field(default_factory=list)  # (failed, checked) per variant
    reproduction: str = ""  # how far the commands reproduce it, where not plainly (history-dependent)
    over_the_run: str = ""  # a finding about the whole run, not one call (R01's rounding bias)
    diagnosis: list = field(default_factory=list)  # diagnosis_line per pattern the failures share
    bulk: str = ""  # bulk_line: the commonest kind of error and a typical element (the block leads with it)
    causes: list = field(default_factory=list)  # the cause lines it shares with other failing requirements of the run
    # (reports.causes), every one: a requirement whose failures split among facts is in several
    counted: str = ""  # how many, in words of a driver that counts otherwise (fuzz: distinct failures, findings)
    shown_as: str = WORST_LABEL  # what the element shown is (fuzz: the smallest reproducer, not the worst)

    @property
    def where(self) -> str:
        return f"{self.dtype} {' and '.join(self.variants)}"

    @property
    def how_many(self) -> str:
        """``125 of 37269 failed`` (one variant, or the same counts in each), else per variant."""
        if self.counted:
            return self.counted
        if len(set(self.counts)) == 1:
            failed, checked = self.counts[0]
            return f"{failed} of {checked} failed" + (" in each" if len(self.counts) > 1 else "")
        return "; ".join(f"{v}: {f} of {c} failed" for v, (f, c) in zip(self.variants, self.counts))


@dataclass(frozen=True)
class Said:
    """One thing a failure says: its ``kind`` (heading, cause, statement, over-the-run, bulk,
    diagnosis, worst, first, reproduce), the ``label`` a format puts before it, and its ``text``,
    ``lines`` (diagnosis patterns, commands) or ``element`` (the worst input)."""

    kind: str
    label: str = ""
    text: str = ""
    lines: tuple = ()
    element: "ElementRecord | None" = None


def failure_said(f: Failure, commands: "list | None" = None) -> list:
    """What a failing requirement says, in the one order every format says it, cause first:
    the heading (where, how many), the causes it shares with others (a line each), the statement, what was
    found over the run, the commonest kind of error, the patterns the failures share, the worst
    input (or the first failure of a requirement about calls), and how to reproduce it
    (``commands``: other commands than the report's, as the pytest plugin's)."""
    said = [Said("heading", text=f"{f.id} {f.title}: {f.where}, {f.how_many}")]
    said += [Said("cause", "Cause (shared)", cause) for cause in f.causes]
    said.append(Said("statement", text=f.statement))
    if f.over_the_run:
        said.append(Said("over-the-run", "Over the run", f.over_the_run))
    if f.bulk:
        said.append(Said("bulk", "Most failures", f.bulk))
    if f.diagnosis:
        said.append(Said("diagnosis", "Diagnosis (patterns the failures share)", lines=tuple(f.diagnosis)))
    if f.worst:
        said.append(Said("worst", f.shown_as, element_text(f.worst) + (f"; {f.worst.detail}" if f.worst.detail else ""),
                         element=f.worst))
    elif f.detail:
        said.append(Said("first", "First failure", f.detail))
    said.append(Said("reproduce", "Reproduce" + (f" ({f.reproduction})" if f.reproduction else ""),
                     lines=tuple(f.commands if commands is None else commands)))
    return said


def failure_text(f: Failure, commands: "list | None" = None, brief: bool = False) -> str:
    """:func:`failure_said` as plain text (JUnit's failure, the pytest plugin's, the command
    line's); ``brief``: the heading, the cause, what was found over the run, the commonest error and
    the worst input (or the first failure) only."""
    out = []
    for s in failure_said(f, commands):
        if brief and s.kind not in ("heading", "cause", "over-the-run", "bulk", "worst", "first"):
            continue
        if s.kind in ("heading", "statement"):
            out.append(("  " if brief and s.kind != "heading" else "") + s.text)
        elif s.lines:
            out += [f"{s.label}:"] + [f"  {line}" for line in s.lines]
        elif s.kind != "reproduce":
            out.append(("  " if brief else "") + f"{s.label}: {s.text}")
    return "\n".join(out)
