"""Every committed report reads back typed and writes the same JSON (issue 37: JSON only at the
file boundary, so ``Report.from_json(d).to_json()`` must give ``d`` back, key order included)."""

import json
from pathlib import Path

import pytest

from sl1conf.conformance.requirements.entries import ErrorSummary
from sl1conf.conformance.requirements.records import CallNote, ElementRecord
from sl1conf.conformance.requirements.results import Report

REPORTS = sorted((Path(__file__).resolve().parents[1] / "reports").glob("*/report.json"))


def test_there_are_committed_reports():
    assert len(REPORTS) >= 10


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.parent.name)
def test_a_committed_report_round_trips(path):
    text = path.read_text()
    data = json.loads(text)
    report = Report.from_json(data)
    assert json.dumps(report.to_json(), indent=1) + "\n" == text
    for run in report.runs:  # typed through and through: no entry is a dict
        assert run.errors is None or isinstance(run.errors, ErrorSummary)
        for r in run.requirements:
            assert r.worst is None or isinstance(r.worst, ElementRecord)
            assert all(isinstance(e, (ElementRecord, CallNote)) for e in r.examples)
            assert all(isinstance(d.example, (ElementRecord, CallNote)) for d in r.diagnosis or ())
