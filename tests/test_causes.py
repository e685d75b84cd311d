"""One cause, many red requirements (issue 25; reports.causes), on run entries written by hand:
each requirement's cause is a specific pattern of its diagnosis, else elements left unwritten
(its bulk or its examples show the fill), else any pattern holding nearly all its failures,
else itself; requirements with one cause are one line, the widest first."""

from __future__ import annotations

from sl1conf.conformance.reports.causes import NOT_WRITTEN, causes


def req(rid, failed, *, diagnosis=(), bulk=None, examples=(), status="fail", kind="required"):
    out = {"id": rid, "title": f"title-{rid}", "status": status, "kind": kind, "failed": failed, "checked": 10 * failed,
           "diagnosis": [{"pattern": p, "failed": f, "of": failed, "checked_share": c, "example": {}}
                         for p, f, c in diagnosis], "examples": list(examples)}
    if bulk:
        out["bulk"] = {"kind": bulk[0], "failed": bulk[1], "of": failed, "example": {}}
    return out


def test_requirements_sharing_a_pattern_are_one_cause():
    run = {"requirements": [
        req("R01", 100, diagnosis=[("beta < 0", 100, 0.01), ("calls of 16 to 1,023 elements", 100, 0.2)]),
        req("R04", 8, diagnosis=[("beta < 0", 8, 0.02)]),
        # unspecific pattern first (97% of the elements checked): the unwritten bulk wins
        req("R06", 50, diagnosis=[("calls of 16 to 1,023 elements", 50, 0.97)],
            bulk=("not written (dx1 still holds the fill)", 48)),
        # a run-level check whose examples show the fill
        req("R14", 3, examples=[{"case": "1.0", "detail": "call #2 gave 0x5a5a5a5a, call #9 0x3f800000"}] * 3),
        req("R13", 2, examples=[{"case": "2.0", "detail": "crash: killed by SIGSEGV"}]),
        req("R05", 4, status="fail", kind="recorded"),  # recorded: no cause of a failure
        req("R02", 0, status="pass"),
    ]}
    assert causes(run) == [
        {"cause": "beta < 0", "requirements": ["R01", "R04"], "failed": 108},
        {"cause": NOT_WRITTEN, "requirements": ["R06", "R14"], "failed": 53},
        {"cause": "R13 title-R13", "requirements": ["R13"], "failed": 2},
    ]


def test_a_pattern_holding_too_few_failures_is_no_cause():
    run = {"requirements": [req("R01", 100, diagnosis=[("beta < 0", 80, 0.01)])]}
    assert causes(run) == [{"cause": "R01 title-R01", "requirements": ["R01"], "failed": 100}]
