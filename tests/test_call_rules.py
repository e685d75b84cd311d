"""Each call-level requirement has one definition (requirements.call_rules.CallRule) that certify's
check and plan and the campaigns' probe are made from (issue 37, item 3).

The structure is read from the catalog: every requirement about whole calls names its rule, every
campaign probe is made from rules (no probe with a comparison of its own), a probe's calls and
certify's in-place plan are the rule's twins. The behaviour is checked on planted defects: a call
whose twin differs at one element, given to both drivers' forms of R09 (compare_variants, certify's
shared-against-private half, and the campaign's twin probe) and of R18 (the moved tail), must be
named at that element, the element the rule's comparison finds; a NaN payload that changes is a
campaign's R14 finding and no certify difference, as the rule states (``nan_payloads``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from sl1conf.adapters.base import Case, Outcome
from sl1conf.conformance import requirements
from sl1conf.conformance.requirements import core_masks, determinism, in_place, position
from sl1conf.conformance.requirements.call_rules import CallRule, Twin, no_twins
from sl1conf.conformance.requirements.probes import Batch
from sl1conf.conformance.requirements.results import RequirementResult
from sl1conf.conformance.rules.profiles import load_profile
from sl1conf.reference import fast_oracle, formats

CALL_LEVEL = ("R07", "R08", "R09", "R10", "R11", "R12", "R13", "R14", "R15", "R16", "R18")
FMT = formats.format_by_name("fp32")


def test_each_call_level_requirement_has_one_rule_its_probe_and_plans_are_made_from():
    by_id = requirements.CATALOG_BY_ID
    for rid in CALL_LEVEL:
        rule = by_id[rid].rule
        assert isinstance(rule, CallRule), rid
        assert rule.id == rid or (rid == "R08" and rule is by_id["R07"].rule), rid  # R08: R07's past-length rule
        for probe in by_id[rid].probes:
            assert rule in probe.rules, (rid, probe.name)
    # no campaign probe compares anything of its own: each is made from the rules of the rows naming it
    for probe in requirements.PROBES:
        rows = [r for r in requirements.CATALOG if probe in r.probes]
        assert probe.rules and set(map(id, probe.rules)) == {id(r.rule) for r in rows}, probe.name
    assert len(requirements.CALL_RULES) == len({id(r) for r in requirements.CALL_RULES})
    # a rule with twins has certify plan them, or says which other calls certify compares and why
    for rule in requirements.CALL_RULES:
        planned = any(p.rule is rule for r in requirements.CATALOG for p in r.plans)
        if rule.twins is not no_twins:
            assert planned != bool(rule.certify_apart), rule.id
    assert by_id["R15"].plans[0].rule is by_id["R15"].rule


def _case(n: int, variant="s", core_mask=0xFF, beta=0x3F800000, seed=1) -> Case:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (3, n)).astype(np.float32).view(np.uint32)
    return Case("fp32", x[0], x[1], x[2], beta, variant=variant, core_mask=core_mask, id=f"t{seed}")


def _right(case: Case) -> Outcome:
    out = formats.to_bits(FMT, np.asarray(fast_oracle.smoothl1lossgrad(*case.floats()), np.float32))
    return Outcome("ok", out=np.asarray(out, np.uint32))


def _flip(o: Outcome, k: int) -> Outcome:
    out = o.out.copy()
    out[k] ^= 1
    return Outcome("ok", out=out)


def _calls(calls) -> list:
    """Calls (or twins) as comparable keys: what the adapter is asked, and which elements are the same."""
    def key(c):
        return c.id, c.variant, c.core_mask, c.out_alias, c.length, c.beta, c.dy.tobytes(), c.x1.tobytes(), c.x2.tobytes()
    return [key(c) if isinstance(c, Case) else (c.base, c.base_at, c.at, c.count, key(c.call)) for c in calls]


def test_a_probe_asks_its_rule_for_its_calls_and_certify_plans_the_same_twins():
    profile = load_profile("ieee")
    cases = [_case(16, seed=1), _case(200, variant="p", seed=2), _case(48, variant="p", seed=3)]
    for probe in requirements.PROBES:
        twinned = [r for r in probe.rules if r.twins is not no_twins]
        want = twinned[0].twins(cases, profile) if twinned else []
        assert len(twinned) <= 1 and (not twinned or want), probe.name
        assert _calls(probe.calls(cases, profile)) == _calls(want), probe.name
    ctx = SimpleNamespace(adapter=SimpleNamespace(capabilities=SimpleNamespace(in_place=True, recorded=False)),
                          returned=cases, profile=profile)
    planned = in_place.IN_PLACE.calls(ctx)
    assert _calls(planned) == _calls([t.call for t in in_place.RULE.twins(cases, profile)])
    assert [c.out_alias for c in planned] == ["dy", "x1", "x2"] * 3
    ctx.adapter.capabilities.in_place = False
    assert in_place.IN_PLACE.calls(ctx) == []


def test_r09_certify_and_the_campaign_name_the_element_the_rule_finds():
    """The shared version under core_mask 0x1 gives other bits at element 5 of a call of 16."""
    profile = load_profile("ieee")
    case = _case(16)
    right = _right(case)
    [twin] = core_masks.RULE.twins([case], profile)
    assert twin.call.core_mask == 0x1 and twin.base == 0
    wrong = _flip(right, 5)
    [cmp] = core_masks.RULE.compared([right], [twin], [wrong])
    assert cmp.at.tolist() == [5] and cmp.changes()[0].then == wrong.out[5]

    # the campaign: one finding on the call, with the twin it needs to be seen again
    [seen] = core_masks.TWINS.check(Batch([case], [right], profile, None, [twin], [wrong]))
    assert (seen.requirement, seen.case, seen.kind, seen.also) == ("R09", 0, "core-mask", (twin.call,))
    assert core_masks.TWINS.check(Batch([case], [right], profile, None, [twin], [right])) == []

    # certify: the shared-against-private half of R09 names element 5, its inputs and both bits
    r09 = RequirementResult("R09", "core-mask-invariance", "required", "", True, checked=0, failed=0)
    [result] = core_masks.compare_variants([r09], FMT, {"t1": (case, wrong.out)}, {"t1": (case, right.out)})
    [example] = result.examples
    assert example.element == 5 and result.failed == 1
    assert example.got == formats.hex_bits(FMT, wrong.out[5])
    assert "element 5 of a call of 16" in example.detail
    assert formats.hex_bits(FMT, right.out[5]) in example.detail


def test_r18_the_moved_tail_names_the_element_the_rule_finds():
    """A long call whose element 190 of 200 gives other bits in the call than moved."""
    profile = load_profile("ieee")
    case = _case(200, variant="p")
    right = _right(case)
    twins = position.RULE.twins([case], profile)
    assert [(t.base_at, t.at, t.count, t.call.n) for t in twins] == [(137, 1, 63, 64), (137, 0, 63, 63)]
    answers = [_right(t.call) for t in twins]
    wrong = _flip(right, 190)
    cmps = position.RULE.compared([wrong], twins, answers)
    assert [c.at.tolist() for c in cmps] == [[190], [190]]
    assert [(ch.element, ch.index) for c in cmps for ch in c.changes()] == [(190, 54), (190, 53)]
    [seen] = position.MOVED_TAIL.check(Batch([case], [wrong], profile, None, twins, answers))
    assert seen.requirement == "R18" and seen.element == 190
    assert seen.changed == ((190, right.out[190]), (190, right.out[190]))
    assert "2 of the last 63 elements of a call of 200" in seen.detail and "index 54 of a call of 64" in seen.detail
    assert position.MOVED_TAIL.check(Batch([case], [right], profile, None, twins, answers)) == []


def test_a_nan_payload_that_changes_is_a_campaign_repeat_finding_not_a_certify_difference():
    """R14's rule compares every bit in a campaign (``nan_payloads``) and NaN as a class in
    certify, as its certify_apart says: the one place the two forms' comparisons differ."""
    profile = load_profile("ieee")
    case = _case(8, variant="p")
    case.x2[3] = 0x7FC00000  # a NaN input: a NaN result
    first = _right(case)
    then = Outcome("ok", out=first.out.copy())
    then.out[3] = 0x7FC00001  # another NaN
    [twin] = determinism.RULE.twins([case], profile)
    assert twin == Twin(0, case)
    [seen] = determinism.REPEAT.check(Batch([case], [first], profile, None, [twin], [then]))
    assert (seen.requirement, seen.kind) == ("R14", "determinism")
    assert "NaN as a class" in determinism.RULE.certify_apart
    assert determinism.RULE.differing(FMT, first.out, then.out, nan_payloads=False).size == 0
    assert core_masks.RULE.differing(FMT, first.out, then.out).size == 0  # R09: NaN as a class everywhere
