"""The collection tree the plugin adds: ``sl1conf / <dtype>-<variant> / R.. [/ family]``, and
its items, each reading the run's typed result (``requirements.results.RunResult``).

An item passes when its requirement (or family) is ``pass``, ``recorded``, ``not-applicable``
or ``waived``; a failure reads like the report's entry (reports.view), with no pytest traceback.
"""

from __future__ import annotations

import pytest

from sl1conf.conformance.common.commands import explain_command
from sl1conf.conformance.requirements.records import ElementRecord
from sl1conf.conformance.pytest_plugin.fuzz_items import Fuzz

__all__ = ["ROOT", "CertifyError", "RequirementFailed", "Suite", "CompletenessItem", "MissingRunsItem", "OverTheRunItem",
           "RequirementItem"]

ROOT = "sl1conf"  # the collector's name, first part of every node id


class CertifyError(Exception):
    """Certifying a run failed before any requirement could be judged."""


class RequirementFailed(Exception):
    """A requirement (or an R01 family) failed; the message is the whole report."""


class Suite(pytest.Collector):
    def __init__(self, *, plugin, **kw):
        super().__init__(**kw)
        self.plugin = plugin

    def collect(self):
        runs = [Run.from_parent(self, name=f"{d}-{v}", dtype=d, variant=v) for d, v in self.plugin.runs]
        missing = [MissingRunsItem.from_parent(self, name="missing-runs")] if self.plugin.missing else []
        return runs + missing + ([Fuzz.from_parent(self, name="fuzz")] if self.plugin.fuzz else [])


class Run(pytest.Collector):
    def __init__(self, *, dtype, variant, **kw):
        super().__init__(**kw)
        self.dtype, self.variant = dtype, variant
        self.plugin = self.parent.plugin
        self.group = f"{ROOT}-{dtype}-{variant}"
        self.add_marker(pytest.mark.xdist_group(self.group))

    def collect(self):
        out = []
        for req in self.plugin.catalog:
            if req.per_family:
                out.append(Families.from_parent(self, name=req.id, requirement=req))
            else:
                out.append(RequirementItem.from_parent(self, name=req.id, requirement=req, family=None))
        out.append(CompletenessItem.from_parent(self, name="completeness"))
        return out


class ReadsLikeAReport:
    """Items whose failure message is the whole report entry (no pytest traceback)."""

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (RequirementFailed, CertifyError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)


class CompletenessItem(ReadsLikeAReport, pytest.Item):
    """One run checked enough to pass (requirements.results.incomplete_reasons): a run that failed
    nothing because it checked nothing fails here, as certify's verdict ``incomplete`` does."""

    def __init__(self, **kw):
        super().__init__(**kw)
        run = self.parent
        self.plugin, self.dtype, self.variant, self.group = run.plugin, run.dtype, run.variant, run.group

    def reportinfo(self):
        return self.path, None, f"{self.dtype} {self.variant}: completeness"

    def runtest(self):
        run = self.plugin.run(self.dtype, self.variant, self.nodeid)
        if run.incomplete:
            raise RequirementFailed(f"{self.dtype} {self.variant} is incomplete, not a pass: "
                                    + "; ".join(run.incomplete) + "\nreproduce: "
                                    + self.plugin.certify_command(self.dtype, self.variant))


class MissingRunsItem(ReadsLikeAReport, pytest.Item):
    """The runs the profile lists, that were asked for (not left out by --sl1-dtype, --sl1-variant
    or --sl1-vectors) and that the implementation does not offer: an incomplete certification,
    as certify's report says (engine.missing_runs)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.plugin = self.parent.plugin

    def reportinfo(self):
        return self.path, None, "runs the profile lists"

    def runtest(self):
        raise RequirementFailed(f"not offered by {self.plugin.spec}, though profile {self.plugin.profile.name} lists "
                                f"them: {', '.join(self.plugin.missing)} (narrow with --sl1-dtype/--sl1-variant "
                                "to certify less on purpose)")


class Families(pytest.Collector):
    def __init__(self, *, requirement, **kw):
        super().__init__(**kw)
        self.requirement = requirement
        self.extra_keyword_matches.add(requirement.title)

    def collect(self):
        return [RequirementItem.from_parent(self, name=f, requirement=self.requirement, family=f)
                for f in self.parent.plugin.families[self.parent.dtype]] + [
                OverTheRunItem.from_parent(self, name="over-the-run", requirement=self.requirement)]


def _entry(plugin, item, rid: str):
    """The RequirementResult ``rid`` of the item's run (certified on first use)."""
    run = plugin.run(item.dtype, item.variant, item.nodeid)
    return next(r for r in run.requirements if r.id == rid)


class OverTheRunItem(ReadsLikeAReport, pytest.Item):
    """A per-family requirement's finding about the whole run, in no family (R01's rounding
    bias): without this item every family could pass while certify's verdict fails."""

    def __init__(self, *, requirement, **kw):
        super().__init__(**kw)
        self.requirement = requirement
        run = self.parent.parent
        self.plugin, self.dtype, self.variant, self.group = run.plugin, run.dtype, run.variant, run.group
        self.extra_keyword_matches.add(requirement.title)

    def reportinfo(self):
        return self.path, None, f"{self.dtype} {self.variant}: {self.requirement.id} {self.requirement.title}, over the run"

    def runtest(self):
        from sl1conf.conformance.reports.view import over_the_run

        entry = _entry(self.plugin, self, self.requirement.id)
        status, found = over_the_run(entry)
        self.user_properties.append(("sl1conf_status", status))
        if status == "waived":
            print(f"{self.requirement.id} over the run waived: {entry.waiver}")
        if status == "fail":
            req = self.requirement
            raise RequirementFailed("\n".join([
                f"{req.id} {req.title}, over the run, failed for {self.plugin.spec} ({self.dtype} variant "
                f"{self.variant} on {self.plugin.profile.name})", f"  {found}",
                *self.plugin.failure_lines(self.dtype, self.variant, req.id)]))


def _counts(target) -> list:
    """(name, value) of the counts a requirement's (RequirementResult) or a family's (FamilyResult) result has."""
    if target.checked is None:  # an observation only: nothing counted
        return []
    return [("checked", target.checked), ("failed", target.failed)]


class RequirementItem(ReadsLikeAReport, pytest.Item):
    """One requirement of one run, or (R01) one family of it."""

    def __init__(self, *, requirement, family, **kw):
        super().__init__(**kw)
        self.requirement, self.family = requirement, family
        run = self.parent if family is None else self.parent.parent
        self.plugin, self.dtype, self.variant, self.group = run.plugin, run.dtype, run.variant, run.group
        self.extra_keyword_matches.add(requirement.title)

    def reportinfo(self):
        what = f"{self.requirement.id} {self.requirement.title}" + (f", family {self.family}" if self.family else "")
        return self.path, None, f"{self.dtype} {self.variant}: {what}"

    def runtest(self):
        entry = _entry(self.plugin, self, self.requirement.id)
        target = entry
        if self.family is not None:
            target = next((f for f in entry.families if f.family == self.family), None)
            if target is None:
                self.user_properties.append(("sl1conf_status", "not-judged"))
                pytest.skip(f"no element of family {self.family} was judged in {self.dtype} {self.variant} "
                            "(no case applies to this variant, or every call failed: see R13)")
        self.user_properties += [("sl1conf_status", target.status), ("sl1conf_kind", entry.kind)]
        self.user_properties += [(f"sl1conf_{key}", n) for key, n in _counts(target)]
        self._say(target)
        if target.status == "fail":
            raise RequirementFailed(self._failure(entry, target))

    def _say(self, target) -> None:
        """What a requirement that holds still says: what it observed, a recorded one's
        differences, its waiver (as properties and on the item's output)."""
        req = self.requirement
        observed = getattr(target, "observed", None)  # a family observes nothing
        if observed is not None:
            import json

            from sl1conf.conformance.requirements.entries import observed_to_json

            text = observed if isinstance(observed, str) else json.dumps(observed_to_json(observed), sort_keys=True)
            self.user_properties.append(("sl1conf_observed", text))
            print(f"{req.id} {req.title} observed: {text}")
        if target.status == "recorded" and target.failed:
            print(f"{req.id} {req.title} recorded, not required on "
                  f"{self.plugin.profile.name}: {target.failed} of {dict(_counts(target)).get('checked', '?')} checked "
                  "differ from what a strict profile requires")
        if target.waiver:
            self.user_properties.append(("sl1conf_waiver", target.waiver))
            print(f"{req.id} waived: {target.waiver}")

    def _failure(self, entry, target) -> str:
        req, dtype = self.requirement, self.dtype
        counts = dict(_counts(target))
        where = f"{dtype} variant {self.variant} on {self.plugin.profile.name}"
        what = f"{req.id} {req.title}" + (f", family {self.family}" if self.family else "")
        lines = [f"{what} failed for {self.plugin.spec} ({where})",
                 f"  {counts.get('failed', '?')} of {counts.get('checked', '?')} checked failed"]
        shared = self.plugin.failure_lines(dtype, self.variant, req.id)
        if self.family is not None and target.worst:  # the family's own worst; the report's is the requirement's
            lines.append("  worst in this family: " + _example(target.worst))
        lines += shared or [f"  {entry.statement or req.statement}"]
        examples = target.examples
        if examples:
            lines.append(f"  examples (first {min(len(examples), 5)} of {counts.get('failed', len(examples))}):")
            for ex in examples[:5]:
                lines.append("    " + _example(ex))
                if isinstance(ex, ElementRecord):
                    lines.append("      " + explain_command(dtype, ex.dy, ex.x1, ex.x2, ex.beta))
        if not shared:
            lines.append(f"  reproduce: {self.plugin.certify_command(dtype, self.variant)}")
        return "\n".join(lines)


def _example(ex) -> str:
    """An example (an ElementRecord, or a CallNote) on one line."""
    from sl1conf.conformance.reports.view import case_detail, element_text

    if not isinstance(ex, ElementRecord):
        return case_detail(ex) if ex.case is not None else f"over the run: {ex.detail or ''}"
    return f"case {ex.case} element {ex.element}: {element_text(ex)}"
