"""The requirements: one module per topic, each holding its catalog row(s) and the code that
checks them; this package assembles them into :data:`CATALOG`.

Why executable: the statement a report prints, the families a requirement is aimed at,
whether it is required, recorded or required only on strict profiles, whether it records
an answer to an open question, and the code that checks it are one object, so certify,
fuzz, sweep, the pytest plugin, JUnit, the waivers and the reports cannot disagree on what
a requirement is. Ids are never renumbered; a removed requirement leaves a gap.

To add a requirement: a module here with its ``ROWS`` (one :class:`~.base.Requirement` each,
with its check) and its line in :data:`CATALOG` below; for a rule about single elements the
rule itself goes to ``rules.judge.ELEMENT_RULES`` under the same id, and the requirement
picks it up. Then regenerate docs/requirements.md
(``python -m sl1conf.conformance.requirements > docs/requirements.md``).

Two kinds of check:

* element rules (R01 to R06, in ``rules.judge``, the tolerance policy): which elements a rule
  is about and which of them it accepts. The judge applies every one of them to every
  element wherever it is judged, so an element breaks the same requirement in a vector case,
  a fuzz batch or a sweep block; the requirement's check counts the rejections of a run.
* run checks (``Requirement.check(ctx, req)``): a function of one certify run
  (:class:`~.base.RunContext`, given by the engine) returning what the report says of the
  requirement: counts, the worst element, examples, what was observed. A requirement about
  whole calls states once what calls it needs and what it compares (``Requirement.rule``, a
  :class:`~.call_rules.CallRule`); its check and its campaign probe both read that rule.
"""

from __future__ import annotations

from sl1conf.conformance.requirements import (
    accuracy, core_masks, determinism, elements, evaluation_model, in_place, lengths, memory, open_behaviour,
    position, returns, subnormals,
)
from sl1conf.conformance.requirements.base import Requirement

__all__ = ["CATALOG", "CATALOG_BY_ID", "by_id", "PROBES", "STATISTICS", "CALL_RULES"]

CATALOG: tuple = (*accuracy.ROWS, *elements.ROWS, *subnormals.ROWS, *lengths.ROWS, *core_masks.ROWS, *memory.ROWS,
                  *returns.ROWS, *determinism.ROWS, *in_place.ROWS, *open_behaviour.ROWS, *evaluation_model.ROWS,
                  *position.ROWS)
"""Every requirement, in id order."""
CATALOG_BY_ID = {r.id: r for r in CATALOG}
PROBES: tuple = tuple({p.name: p for r in CATALOG for p in r.probes}.values())
"""Every requirement's campaign probe, once each (several rows may name one), in catalog order."""
CALL_RULES: tuple = tuple({id(r.rule): r.rule for r in CATALOG if r.rule is not None}.values())
"""Every call-level requirement's one definition (call_rules.CallRule), once each, in catalog order:
certify's check and plan and the campaigns' probe of the requirement are made from it."""
STATISTICS: tuple = tuple(r.statistic for r in CATALOG if r.statistic is not None)
"""The counts campaigns sum over their batches and judge once."""


def by_id(rid: str) -> Requirement:
    try:
        return CATALOG_BY_ID[rid]
    except KeyError:
        raise KeyError(f"unknown requirement {rid!r}; known: {', '.join(CATALOG_BY_ID)}") from None
