"""The one evidence type (requirements.evidence.Evidence) merges in any order to the same
evidence: what lets certify's families, fuzz's batches and shards and a sweep's blocks add up
the same however they were split and whichever worker finished first."""

from __future__ import annotations

import itertools

from hypothesis import given, settings, strategies as st

from sl1conf.conformance.requirements.evidence import Evidence, add_evidence, evidence_of
from sl1conf.conformance.requirements.records import ElementRecord
from sl1conf.reference.formats import NAN_MISMATCH

# a piece: (checked, [(position, distance) of rejected elements], [(position, kind) of failing calls])
pieces = st.lists(st.tuples(st.integers(0, 50),
                            st.lists(st.tuples(st.integers(0, 30), st.sampled_from([1, 2, 3, NAN_MISMATCH])),
                                     max_size=4),
                            st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["crash", "memory"])), max_size=3)),
                  min_size=1, max_size=5)


def _record(at, distance) -> ElementRecord:
    """An element record at ``at`` whose distance is ``distance`` (the rest: what orders nothing)."""
    return ElementRecord("0x0", "0x0", "0x0", "0x0", "0x0", "0x0", ulp=distance, distance=distance, at=at)


def _evidence(piece) -> Evidence:
    checked, elements, calls = piece
    e = Evidence(checked=checked)
    for at, d in elements:
        e.add_elements(1, _record(at, d))
    for at, kind in calls:
        e.add_call(at, kind, f"{kind} at {at}")
    return e


@settings(max_examples=60, deadline=None)
@given(pieces)
def test_evidence_merged_in_any_order_is_the_same(parts):
    """Every order of merging gives the evidence of all the pieces at once, computed here by hand:
    the sums, the worst as the farthest then the lowest position, the first call as the lowest
    position."""
    everything = [e for _, els, _ in parts for e in els]
    calls = [c for _, _, cs in parts for c in cs]
    want_worst = min(everything, key=lambda e: (-e[1], e[0])) if everything else None
    want_first = min(calls, key=lambda c: c[0]) if calls else None
    for order in itertools.islice(itertools.permutations(parts), 6):
        total = Evidence()
        for piece in order:
            total.merge(_evidence(piece))
        assert (total.checked, total.elements, total.calls) == (sum(p[0] for p in parts), len(everything), len(calls))
        assert (total.worst and (total.worst.at, total.worst.distance)) == (want_worst and tuple(want_worst))
        assert (total.first_call and total.first_call["at"]) == (want_first and want_first[0])
        assert total.failed == len(everything) + len(calls)
        assert Evidence.from_json(total.to_json()) == total  # what a checkpoint or a summary holds


def test_evidence_per_requirement_adds_up_and_reads_back():
    a = {"R01": Evidence(10, 2, 0, _record([0, 1, 2], 3)), "R13": Evidence(1, 0, 1, None,
                                                                              {"at": [4, 0], "kind": "crash", "detail": "x"})}
    b = {"R01": Evidence(5, 1, 0, _record([0, 0, 9], 3))}
    total = add_evidence(add_evidence({}, a), b)
    assert total["R01"].elements == 3 and total["R01"].worst.at == [0, 0, 9]  # the tie: the lower position
    assert total["R13"].calls == 1 and total["R13"].first_call["at"] == [4, 0]
    assert evidence_of({k: e.to_json() for k, e in total.items()}) == total
