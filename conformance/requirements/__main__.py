"""docs/requirements.md, generated from the catalog:
``python -m sl1conf.conformance.requirements > docs/requirements.md``."""

from __future__ import annotations

from sl1conf.conformance.requirements import CATALOG


def markdown() -> str:
    """docs/requirements.md, generated from the catalog (tests fail when the file is stale)."""
    lines = ["# Requirements", "",
             "Generated from `sl1conf.conformance.requirements.CATALOG` (one module per topic) by",
             "`python -m sl1conf.conformance.requirements > docs/requirements.md`; do not edit by hand.",
             "Ids are never renumbered; a removed requirement leaves a gap.", "",
             "`required`: a failure fails the verdict. `recorded`: the manual leaves the behaviour open,",
             "so the report says what was observed and the verdict does not depend on it.",
             "R01 to R06 are element rules: the judge (`rules/judge.py`) applies each of them to every",
             "element wherever it is judged (certify, fuzz, sweep); the families named are where the",
             "vectors aim at them.", "",
             "| id | name | kind | aimed at | statement |", "|---|---|---|---|---|"]
    for r in CATALOG:
        kind = "required (strict profiles), recorded otherwise" if r.strict_only else r.kind
        fams = "every family" if r.families == ("*",) else (
            ", ".join(f"`{f}`" for f in r.families) or "every call")
        lines.append(f"| {r.id} | {r.title} | {kind} | {fams} | {r.statement} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
