"""The conformance engine: run an implementation on the vectors, judge every requirement.

For each dtype and variant the profile and the implementation share, the engine turns the
vector set's cases into calls, runs them through the adapter (isolated and guarded where
the adapter can), and judges each element once (:class:`Judgement`): the correctly rounded
result within the profile's ULP budget, or bit for bit an accepted evaluation model, an
acceptable alternative of the case, or the flush-to-zero oracle where the profile accepts
flushing. The requirements of the catalog are then read off those judgements and the
adapter's observations (crashes, hangs, guard faults, canaries, input checksums).
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sl1conf import __version__
from sl1conf.adapters.base import Adapter, Case, Outcome
from sl1conf.reference import formats as F
from sl1conf.reference.models import accepted_models

from sl1conf.conformance.vectors import store as V
from sl1conf.conformance.certify.errorstats import ErrorStats
from sl1conf.conformance.rules.profiles import Profile
from sl1conf.conformance.rules.catalog import CATALOG

__all__ = ["QUICK_FAMILIES", "SelectionError", "Judgement", "judge_elements", "vectors_for", "certify"]

QUICK_FAMILIES = ("boundary-exact", "boundary-neighbours", "boundary-rounded-diff", "fp16-overflow",
                  "range-overflow", "underflow", "nan-inf", "signed-zero", "beta-special", "core-masks",
                  "lengths-compact")
"""--quick: every edge family, without the random ones."""
EXAMPLES = 5  # failing inputs listed per requirement


class SelectionError(ValueError):
    """``only`` names a requirement or a case that does not exist."""


def vectors_for(dtype: str, vectors_dir=None, quick: bool = False, seed: int = 2026, scratch=None) -> V.VectorSet:
    """The given vector set, or the canonical families generated afresh into ``scratch``
    (a folder the caller removes; quick: edge families only). Loaded sets live in memory."""
    if vectors_dir is not None:
        vs = V.load(vectors_dir)
        if vs.manifest["dtype"] != dtype:
            raise V.VectorSetError(f"{vectors_dir}: holds {vs.manifest['dtype']} vectors, not {dtype}")
        return vs
    from sl1conf.conformance.vectors.families import generate

    names = [n for n in QUICK_FAMILIES] if quick else None
    families = generate(dtype, seed, names)
    return V.load(V.write(Path(scratch) / dtype, dtype, families, seed=seed))


@dataclass
class Judgement:
    """One case's elements against everything acceptable (arrays over the written elements)."""

    row: dict
    case: Case
    outcome: Outcome
    ok: np.ndarray = None  # accepted elements
    dist: np.ndarray = None  # ULPs from the correctly rounded result (NAN_MISMATCH: one side NaN)
    exact: np.ndarray = None  # bit-equal (NaN as a class) to the correctly rounded result
    ftz_only: np.ndarray = None  # the flush-to-zero oracle's bits and not the IEEE oracle's
    models: dict = field(default_factory=dict)  # accepted model -> elements equal to its bits
    alt: dict = field(default_factory=dict)  # alternative -> elements equal to it
    fill_ok: bool = True  # elements a correct call does not write still hold the fill


def _model_or_alternative(j: Judgement) -> np.ndarray:
    """Elements equal, bit for bit, to an accepted model or to one of the case's alternatives."""
    return np.logical_or.reduce([*j.models.values(), *j.alt.values(), np.zeros(j.exact.shape, bool)])


def judge_elements(fmt: F.Format, profile: Profile, got, oracle, oracle_ftz, models: dict,
                   alternatives: "dict | None" = None, *, row=None, case=None, outcome=None) -> Judgement:
    """Each element of ``got`` against everything the profile accepts: the correctly rounded
    ``oracle`` within the ULP budget, bit for bit an accepted model (``models``: name -> bits),
    an alternative of the case, or ``oracle_ftz`` where flushing is accepted. The one judgement
    that certify and the fuzzer share (``row``, ``case``, ``outcome``: what the Judgement is of)."""
    j = Judgement(row, case, outcome)
    j.exact = F.same_result(fmt, got, oracle)
    j.dist = np.where(j.exact, 0, F.ulp_distance(fmt, got, oracle))
    within = j.dist <= profile.max_ulp[fmt.name]
    if profile.strict_zero_sign:
        zero = ((got & ~np.array(fmt.sign_mask, fmt.uint)) == 0) | ((oracle & ~np.array(fmt.sign_mask, fmt.uint)) == 0)
        within &= ~(zero & (((got ^ oracle) & fmt.sign_mask) != 0))
    ftz = F.same_result(fmt, got, oracle_ftz)
    j.ftz_only = ftz & ~j.exact
    j.models = {name: F.same_result(fmt, got, bits) for name, bits in models.items()}
    j.alt = {name: F.same_result(fmt, got, arr) for name, arr in (alternatives or {}).items()}
    j.ok = j.exact | within | _model_or_alternative(j)
    if profile.flush_to_zero == "accepted":
        j.ok |= ftz
    return j


def _judge(vs: V.VectorSet, profile: Profile, row: dict, case: Case, outcome: Outcome) -> Judgement:
    fmt = vs.format
    w = case.elements_written
    column = lambda name: vs.expected(name, row)[:w]  # noqa: E731
    j = judge_elements(fmt, profile, outcome.out[:w], column("oracle"), column("oracle-ftz"),
                       {m.name: column(f"model-{m.name}") for m in accepted_models(fmt)},
                       {name: arr[:w] for name, arr in vs.case(row).alternatives.items()},
                       row=row, case=case, outcome=outcome)
    j.fill_ok = bool((outcome.out[w:] == case.initial_out()[w:]).all())
    return j


def _calls(vs: V.VectorSet, variant: str, profile: Profile, cases=None) -> list:
    """(row, Case) for every vector case (or those whose ids ``cases`` names), as the
    variant's API would be called."""
    out = []
    for row in vs.manifest["cases"]:
        if cases is not None and row["id"] not in cases:
            continue
        vc = vs.case(row)
        mask = vc.core_mask if vc.variant == "s" else profile.core_mask
        if variant == "s" and mask & ~profile.core_mask:
            continue  # names cores this platform does not have
        if variant == "p" and vc.variant == "s" and vc.core_mask == 0:
            continue  # core_mask 0 means nothing to the private version
        out.append((row, Case(vs.manifest["dtype"], vc.dy, vc.x1, vc.x2, vc.beta, variant=variant,
                              core_mask=mask, length=vc.length, id=row["id"])))
    return out


class _Tally:
    """Counts and the worst failing element of one requirement (or one family of it)."""

    def __init__(self, fmt):
        self.fmt, self.checked, self.failed, self.worst, self.examples = fmt, 0, 0, None, []

    def add(self, j: Judgement, bad: np.ndarray, vs: V.VectorSet, checked: "int | None" = None):
        self.checked += int(bad.size if checked is None else checked)
        idx = np.flatnonzero(bad)
        if not idx.size:
            return
        self.failed += int(idx.size)
        dist = j.dist[idx] if j.dist is not None and j.dist.size else np.zeros(idx.size, np.int64)
        k = int(idx[int(np.argmax(dist))]) if dist.size else int(idx[0])
        d = int(j.dist[k]) if j.dist is not None and j.dist.size else 0
        ex = self.element(j, k, vs, d)
        if self.worst is None or d > self.worst["ulp_value"]:
            self.worst = ex
        if len(self.examples) < EXAMPLES:
            self.examples.append(ex)

    def element(self, j: Judgement, k: int, vs, d: int) -> dict:
        fmt, c = self.fmt, j.case
        want = vs.expected("oracle", j.row)[k]
        return {"case": j.row["id"], "element": k, "dy": F.hex_bits(fmt, c.dy[k]), "x1": F.hex_bits(fmt, c.x1[k]),
                "x2": F.hex_bits(fmt, c.x2[k]), "beta": F.hex_bits(fmt, c.beta),
                "expected": F.hex_bits(fmt, want), "got": F.hex_bits(fmt, j.outcome.out[k]),
                "ulp": "nan-mismatch" if d == F.NAN_MISMATCH else d, "ulp_value": d}

    def entry(self) -> dict:
        out = {"checked": self.checked, "failed": self.failed}
        if self.worst is not None:
            out["worst"] = {k: v for k, v in self.worst.items() if k != "ulp_value"}
        if self.examples:
            out["examples"] = [{k: v for k, v in e.items() if k != "ulp_value"} for e in self.examples]
        return out


def _run(adapter: Adapter, profile: Profile, vs: V.VectorSet, variant: str, cases=None) -> dict:
    fmt = vs.format
    calls = _calls(vs, variant, profile, cases)
    outcomes = adapter.run([c for _, c in calls])
    fam_name = {f["id"]: f["name"] for f in vs.manifest["families"]}
    judged, broken = [], []
    for (row, case), o in zip(calls, outcomes):
        if o.status == "ok":
            judged.append(_judge(vs, profile, row, case, o))
        elif o.status != "unsupported":
            broken.append((row, case, o))
    req = {r.id: {"id": r.id, "title": r.title, "kind": r.kind, "statement": r.statement} for r in CATALOG}
    if CATALOG[4].strict_only and not profile.strict_zero_sign:
        req["R05"]["kind"] = "recorded"

    def finish(rid, tally: "_Tally | None", applicable=True, **extra):
        entry = req[rid]
        if not applicable:
            entry["status"] = "not-applicable"
        else:
            failed = tally.failed if tally else 0
            entry["status"] = ("recorded" if entry["kind"] == "recorded" else "fail" if failed else "pass")
            if tally:
                entry.update(tally.entry())
        entry.update(extra)

    # R01 accuracy, per family; R02..R07 on their families.
    per_family = {}
    for j in judged:
        name = fam_name[j.row["family"]]
        per_family.setdefault(name, _Tally(fmt)).add(j, ~j.ok, vs)
    r01 = _Tally(fmt)
    for t in per_family.values():
        r01.checked += t.checked
        r01.failed += t.failed
        if t.worst and (r01.worst is None or t.worst["ulp_value"] > r01.worst["ulp_value"]):
            r01.worst = t.worst
        r01.examples += t.examples[: max(0, EXAMPLES - len(r01.examples))]
    finish("R01", r01, families=[{"family": n, "status": "fail" if t.failed else "pass", **t.entry()}
                                 for n, t in per_family.items()])

    def on(families, bad_of) -> "_Tally | None":
        t, seen = _Tally(fmt), False
        for j in judged:
            if fam_name[j.row["family"]] in families:
                seen = True
                t.add(j, bad_of(j), vs)
        return t if seen else None

    sign = np.array(fmt.sign_mask, fmt.uint)
    accepted = lambda j: j.exact | _model_or_alternative(j)  # noqa: E731
    t = on({"boundary-exact"}, lambda j: ~accepted(j))
    finish("R02", t, applicable=t is not None)

    def overflow_bad(j):
        got = j.outcome.out[:j.case.elements_written]
        want = vs.expected("oracle", j.row)[:got.size]
        special = (got & fmt.exp_mask) == fmt.exp_mask
        finite = (want & fmt.exp_mask) != fmt.exp_mask
        return special & finite & ~accepted(j)
    t = on({"fp16-overflow", "range-overflow"}, overflow_bad)
    finish("R03", t, applicable=t is not None)

    def nan_inf_bad(j):
        got = j.outcome.out[:j.case.elements_written]
        want = vs.expected("oracle", j.row)[:got.size]
        want_special = (want & fmt.exp_mask) == fmt.exp_mask
        return want_special & ~accepted(j)
    t = on({"nan-inf"}, nan_inf_bad)
    finish("R04", t, applicable=t is not None)

    def zero_sign_bad(j):
        got = j.outcome.out[:j.case.elements_written]
        want = vs.expected("oracle", j.row)[:got.size]
        zero = (want & ~sign) == 0
        return zero & (got != want) & ~_model_or_alternative(j)
    t = on({"signed-zero"}, zero_sign_bad)
    finish("R05", t, applicable=t is not None)

    t = on({"underflow"}, lambda j: ~j.ok)
    flushed = sum(int(j.ftz_only.sum()) for j in judged)
    gradual = 0  # elements where the two oracles differ and the result is the IEEE one
    for j in judged:
        w = j.case.elements_written
        differ = ~F.same_result(fmt, vs.expected("oracle", j.row)[:w], vs.expected("oracle-ftz", j.row)[:w])
        gradual += int((differ & j.exact).sum())
    finish("R06", t, applicable=t is not None, observed=(
        "gradual underflow (no flushing seen)" if not flushed else
        f"flush-to-zero ({flushed} elements)" if not gradual else
        f"mixed: {gradual} elements with gradual underflow, {flushed} with the flush-to-zero result "
        "(an evaluation model's intermediate rounding can give that result without flushing)"))

    t = on({"lengths-compact", "lengths"}, lambda j: ~j.ok)
    if t is not None:
        for j in judged:
            if fam_name[j.row["family"]] in {"lengths-compact", "lengths"} and not j.fill_ok:
                t.failed += 1
    finish("R07", t, applicable=t is not None)

    # R08 length zero: nothing written.
    t = _Tally(fmt)
    for j in judged:
        if j.case.call_length <= 0:
            t.checked += 1
            if not j.fill_ok:
                t.failed += 1
                t.examples.append({"case": j.row["id"], "detail": "wrote into dx1 with length "
                                   f"{j.case.call_length}"})
    finish("R08", t, applicable=t.checked > 0)

    # R09 core-mask invariance: the same data under every non-empty mask gives the same bits.
    t = _Tally(fmt)
    if variant == "s":
        groups = {}
        for j in judged:
            if fam_name[j.row["family"]] == "core-masks" and j.case.core_mask:
                key = (j.case.dy.tobytes(), j.case.x1.tobytes(), j.case.x2.tobytes(), j.case.beta)
                groups.setdefault(key, []).append(j)
        for js in groups.values():
            for j in js[1:]:
                t.checked += 1
                if not F.same_result(fmt, j.outcome.out, js[0].outcome.out).all():
                    t.failed += 1
                    t.examples.append({"case": j.row["id"], "detail": f"core_mask {j.case.core_mask:#x} differs "
                                       f"from {js[0].case.core_mask:#x} (case {js[0].row['id']})"})
    finish("R09", t, applicable=variant == "s" and t.checked > 0)

    # R10..R13: what the adapter observed about memory and the calls themselves.
    outcomes_all = [j.outcome for j in judged] + [o for _, _, o in broken]
    ids_all = [j.row["id"] for j in judged] + [r["id"] for r, _, _ in broken]
    checked = adapter.capabilities.memory_checked
    for rid, bad_of in (
        ("R10", lambda o: bool(o.wrote_outside) or bool(o.fault and o.fault.startswith("write"))),
        ("R11", lambda o: bool(o.fault and o.fault.startswith("read"))),
        ("R12", lambda o: bool(o.inputs_changed)),
    ):
        t = _Tally(fmt)
        for cid, o in zip(ids_all, outcomes_all):
            t.checked += 1
            if bad_of(o):
                t.failed += 1
                if len(t.examples) < EXAMPLES:
                    t.examples.append({"case": cid, "detail": o.fault or (
                        f"changed {', '.join(o.inputs_changed)}" if o.inputs_changed else "wrote next to an array")})
        finish(rid, t, applicable=checked)
    t = _Tally(fmt)
    t.checked = len(calls)
    for row, case, o in broken:
        t.failed += 1
        if len(t.examples) < EXAMPLES:
            t.examples.append({"case": row["id"], "detail": f"{o.status}: {o.detail}"})
    finish("R13", t)

    # R14 determinism: the first cases again.
    again = [(j.row, j.case, j.outcome) for j in judged[:40]]
    t = _Tally(fmt)
    for (row, case, first), second in zip(again, adapter.run([c for _, c, _ in again])):
        t.checked += 1
        if second.status != "ok" or not np.array_equal(second.out, first.out):
            t.failed += 1
            t.examples.append({"case": row["id"], "detail": "a repeated call gave different bits"})
    finish("R14", t)

    # R15 in-place, when claimed.
    t = _Tally(fmt)
    if adapter.capabilities.in_place:
        sample = [j for j in judged if j.case.n and j.case.call_length == j.case.n][:12]
        alias_cases = [Case(j.case.dtype, j.case.dy, j.case.x1, j.case.x2, j.case.beta, variant=variant,
                            core_mask=j.case.core_mask, out_alias=alias, id=j.row["id"])
                       for j in sample for alias in ("dy", "x1", "x2")]
        for ac, o, j in zip(alias_cases, adapter.run(alias_cases), [j for j in sample for _ in range(3)]):
            t.checked += 1
            if o.status != "ok" or not F.same_result(fmt, o.out, j.outcome.out).all():
                t.failed += 1
                if len(t.examples) < EXAMPLES:
                    t.examples.append({"case": ac.id, "detail": f"dx1 over {ac.out_alias}: "
                                       + (o.detail if o.status != "ok" else "different bits")})
    finish("R15", t, applicable=adapter.capabilities.in_place)

    # R16, R17: recorded.
    open_answers = {}
    for j in judged:
        if j.row["result"] == "acceptable" or (variant == "s" and j.case.core_mask == 0):
            name = _open_question(j.row, fam_name[j.row["family"]])
            seen = [a for a, hit in j.alt.items() if hit.all()] or (["oracle"] if j.exact.all() else ["other"])
            if j.case.variant == "s" and j.case.core_mask == 0:
                seen = ["nothing written"] if j.fill_ok else ["wrote with core_mask 0"]
            for s in seen:
                open_answers.setdefault(name, {}).setdefault(s, 0)
                open_answers[name][s] += 1
    finish("R16", None, observed=open_answers)
    matched = [m for m in (j.models for j in judged[:1]) for m in m] if judged else []
    matched = [m for m in matched if all(j.models[m].all() for j in judged)]
    finish("R17", None, observed=matched or "none (no accepted model matches bit for bit)")

    requirements = [req[r.id] for r in CATALOG]
    stats = ErrorStats()
    for i, j in enumerate(judged):
        if j.dist is not None:
            excepted = j.ok & (j.dist > profile.max_ulp[fmt.name])
            stats.add(fam_name[j.row["family"]], fmt, j.dist, j.case.x1, j.case.x2, j.case.beta, i, excepted)
    worst = None
    if stats.worst_at is not None:
        i, k = stats.worst_at
        worst = _Tally(fmt).element(judged[i], k, vs, stats.worst_ulp)
        worst.pop("ulp_value")
    run = {"dtype": fmt.name, "variant": variant, "cases": len(calls),
           "elements": int(sum(c.n for _, c in calls)), "requirements": requirements,
           "errors": stats.entry(worst)}
    _set_verdict(run)
    # kept for comparing the shared and private versions (dropped before the report is written)
    run["_outputs"] = {j.row["id"]: j.outcome.out for j in judged
                       if j.case.variant == "s" and j.case.core_mask == profile.core_mask or j.case.variant == "p"}
    return run


_OPEN_BY_FLAG = (("beta-zero", "beta = 0"), ("beta-negative", "beta < 0"), ("beta-inf", "beta = +inf"),
                 ("core-mask-zero", "core_mask = 0"))


def _open_question(row: dict, family: str) -> str:
    """What R16 files an acceptable case under: the open question it asks (beta <= 0 ...),
    named from its flags, or else its family."""
    flags = set(row.get("flags", ()))
    return next((name for flag, name in _OPEN_BY_FLAG if flag in flags), family)


def _set_verdict(run: dict) -> None:
    run["verdict"] = "fail" if any(r["status"] == "fail" and r["kind"] == "required"
                                   for r in run["requirements"]) else "pass"


def _compare_variants(shared: dict, private: dict, fmt: F.Format) -> None:
    """R09's second half: the shared version (all cores) and the private version give the same bits."""
    entry = next(r for r in shared["requirements"] if r["id"] == "R09")
    a, b = shared.pop("_outputs"), private.pop("_outputs")
    checked = failed = 0
    examples = entry.setdefault("examples", [])
    for cid in sorted(set(a) & set(b)):
        checked += 1
        if not F.same_result(fmt, a[cid], b[cid]).all():
            failed += 1
            if len(examples) < EXAMPLES:
                examples.append({"case": cid, "detail": "the shared version (all cores) and the private "
                                 "version give different bits"})
    if not examples:
        entry.pop("examples")
    entry["checked"] = entry.get("checked", 0) + checked
    entry["failed"] = entry.get("failed", 0) + failed
    entry["shared_vs_private"] = {"checked": checked, "failed": failed}
    if entry["status"] == "not-applicable" and checked:
        entry["status"] = "pass"
    if failed:
        entry["status"] = "fail"
    _set_verdict(shared)


def certify(adapter: Adapter, profile: Profile, *, dtypes=None, variants=None, vectors=None,
            quick: bool = False, progress=None, only=None, invocation=None) -> dict:
    """The report: one run per dtype and variant the profile and the adapter share.

    ``progress(text)``, if given, is told what is being run (the command line shows it on a terminal).
    ``only``: requirement ids (``R02``) and case ids (``4.9``) to restrict the run to; case ids
    select the vector cases run, requirement ids the requirements reported (and judged for the
    verdict). ``invocation``: how the run was asked for (the command line's arguments), kept in
    the report so its reproduction commands name the same implementation, vectors and options.
    """
    from datetime import datetime, timezone

    from sl1conf.conformance.common.hostinfo import describe_host

    only = set(only or ())
    known = {r.id for r in CATALOG}
    only_reqs = {o.upper() for o in only if o.upper().startswith("R")}
    only_cases = only - {o for o in only if o.upper().startswith("R")} or None
    if only_reqs - known:
        raise SelectionError(f"--only: no requirement {', '.join(sorted(only_reqs - known))}; "
                         f"requirements are {min(known)} to {max(known)}")
    dtypes = [d for d in (dtypes or profile.dtypes) if d in adapter.dtypes]
    variants = [v for v in (variants or profile.variants) if v in adapter.variants]
    runs, sets, seen_cases = [], {}, set()
    started = datetime.now(timezone.utc)
    with tempfile.TemporaryDirectory(prefix="sl1conf-vectors-") as scratch:
        for dtype in dtypes:
            profile.require_dtype(dtype)
            given = vectors.get(dtype) if isinstance(vectors, dict) else vectors
            vs = vectors_for(dtype, given, quick, scratch=scratch)
            manifest_sha = hashlib.sha256((Path(vs.path) / "manifest.json").read_bytes()).hexdigest()
            sets[dtype] = {"source": str(vs.path) if given else "generated (canonical families)",
                           "id": f"{dtype}-seed{vs.manifest['seed']}-{manifest_sha[:12]}",
                           "seed": vs.manifest["seed"], "elements": vs.manifest["elements"],
                           "families": [f["name"] for f in vs.manifest["families"]],
                           "manifest_sha256": manifest_sha}
            if only_cases:
                seen_cases |= only_cases & {row["id"] for row in vs.manifest["cases"]}
            mine = {}
            for variant in variants:
                if progress:
                    progress(f"{dtype} {variant}: {len(vs.manifest['cases'])} cases, "
                             f"{vs.manifest['elements']} elements ...")
                mine[variant] = _run(adapter, profile, vs, variant, only_cases)
                runs.append(mine[variant])
            if "s" in mine and "p" in mine:
                _compare_variants(mine["s"], mine["p"], vs.format)
            for run in mine.values():
                run.pop("_outputs", None)
    if only_cases and only_cases - seen_cases:
        raise SelectionError(f"--only: no case {', '.join(sorted(only_cases - seen_cases))} in the vectors"
                             + (" (--quick generates the edge families only)" if quick and not vectors else ""))
    if only_reqs:
        for run in runs:
            run["requirements"] = [r for r in run["requirements"] if r["id"] in only_reqs]
            _set_verdict(run)
    verdict = "pass" if runs and all(r["verdict"] == "pass" for r in runs) else "fail"
    return {"schema": "sl1conf-report", "schema_version": 1, "suite_version": __version__,
            "created": started.isoformat(timespec="seconds"), "verdict": verdict,
            "implementation": adapter.describe(), "profile": profile.summary(),
            "invocation": dict(invocation or {}), "only": sorted(only),
            "host": describe_host(), "vectors": sets, "quick": quick, "runs": runs}
