"""sl1conf fuzz groups the distinct failures of one defect into one finding (issue 16, item 11).

A library that leaves the tail of a call unwritten fails in hundreds of distinct ways (every
requirement, branch, value class and beta class its unwritten elements' inputs happen to
have), but it has one defect: the fuzzer must report one finding with its counts and one
reproducer, the smallest; and two genuinely different defects in one library must stay two.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from sl1conf.adapters.base import FILL_BYTE
from sl1conf.adapters.cbuild import build_shared
from sl1conf.conformance.cli import main
from sl1conf.conformance.common import jsonfiles
from sl1conf.conformance.vectors.store import load as load_vectors

SOURCE = r"""
static float divmul(float d, float beta, float g) { return d > beta ? g : d < -beta ? -g : d / beta * g; }
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    for (int i = 0; i < n - (DROP); i++) {
        float d = x1[i] - x2[i], r = divmul(d, beta, dy[i]);
        dx1[i] = (MIDWRONG && d <= beta && d >= -beta) ? r * 1.5f : r;
    }
}
void fp_smoothl1lossgrad_s(float *dy, float *dx1, float *x1, float *x2, int n, float beta, int mask)
{ for (int i = 0; i < n; i++) dx1[i] = divmul(x1[i] - x2[i], beta, dy[i]); }
"""
LIBS = {  # name: (elements the _p function leaves unwritten, whether the middle branch is wrong)
    "odd-tail": ("n & 1", 0),  # never writes the last element of an odd-length call
    "tail-of-8": ("n % 8", 0),  # skips the last n mod 8 elements (a vector loop without its tail)
    "tail-and-middle": ("n & 1", 1),  # the odd tail, and the middle branch 1.5 times too large
}
FILL32 = "0x" + f"{FILL_BYTE:02x}" * 4


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    src = tmp_path_factory.mktemp("findings") / "findings.c"
    src.write_text(SOURCE)
    return {name: f"ctypes:{build_shared(f'fuzz-{name}', [src], [f'-DDROP=({drop})', f'-DMIDWRONG={mid}'])}"
            for name, (drop, mid) in LIBS.items()}


def fuzz(capsys, impl, out, *extra):
    code = main(["fuzz", "--impl", impl, "--platform", "ieee", "--dtype", "fp32", "--variant", "p",
                 "--batch-elements", "2048", "--elements", "40000", "--seed", "5", "--out", str(out), *extra])
    text = capsys.readouterr().out
    return code, text, json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("name", ["odd-tail", "tail-of-8"])
def test_a_library_that_drops_its_tail_is_one_finding_with_one_smallest_reproducer(name, libs, capsys, tmp_path):
    code, text, s = fuzz(capsys, libs[name], tmp_path / "o")
    f = s["failures"]
    assert code == 1 and f["distinct"] > 10, text  # many distinct failures ...
    assert [p["pattern"] for p in f["patterns"]] == ["R01/fp32/p/not-written/end"]  # ... one finding
    [row] = f["patterns"]
    assert set(row["keys"]) == set(f["keys"]) and row["findings"] == f["findings"]
    assert any(k.startswith("R18/") for k in row["keys"])  # the moved tail never written: the same defect
    [e] = s["saved"]
    assert e["pattern"] == row["pattern"] and (e["distinct"], e["findings"]) == (len(row["keys"]), row["findings"])
    assert e["length"] == 1 and e["element"] == 0 and e["got"] == FILL32  # the smallest: one element, not written
    assert "1 finding(s)" in text and "the last elements of a call left unwritten" in text
    assert text.count("Smallest reproducer:") == 1 and f"{len(row['keys'])} distinct failure(s)" in text
    jsonschema.validate(s, jsonfiles.schema("fuzz-summary.schema.json"))
    vs = load_vectors(tmp_path / "o" / "vectors-fp32")
    assert len(vs.manifest["cases"]) == 1


def test_two_different_defects_are_two_findings(libs, capsys, tmp_path):
    code, text, s = fuzz(capsys, libs["tail-and-middle"], tmp_path / "o")
    patterns = [p["pattern"] for p in s["failures"]["patterns"]]
    unwritten = [p for p in patterns if "/not-written/" in p]
    wrong = [p for p in patterns if p not in unwritten]
    assert code == 1 and unwritten == ["R01/fp32/p/not-written/end"], patterns
    assert wrong and all(p.endswith("/wrong/mid") for p in wrong), patterns  # the middle branch's defect
    assert len(patterns) <= 5  # R01, and R02 or R03 where the judge files the wrong value so: not dozens
    assert {e["pattern"] for e in s["saved"]} == set(patterns)  # a reproducer for each
    assert s["failures"]["distinct"] > len(patterns)
    mid = next(e for e in s["saved"] if e["pattern"] in wrong)
    # a wrong value, not an unwritten one: two elements (the only one of a call of one is never written)
    assert mid["got"] != FILL32 and (mid["length"], mid["element"]) == (2, 0)


def test_merge_keeps_one_finding_with_the_shards_counts_summed(libs, capsys, tmp_path):
    parts = []
    for i in (1, 2):
        parts.append(fuzz(capsys, libs["odd-tail"], tmp_path / f"s{i}", "--shard", f"{i}/2")[2])
    assert main(["fuzz", "merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "m")]) == 1
    capsys.readouterr()
    merged = json.loads((tmp_path / "m" / "summary.json").read_text())
    jsonschema.validate(merged, jsonfiles.schema("fuzz-summary.schema.json"))
    [row] = merged["failures"]["patterns"]
    assert row["findings"] == sum(p["failures"]["patterns"][0]["findings"] for p in parts)
    assert set(row["keys"]) == set().union(*(p["failures"]["patterns"][0]["keys"] for p in parts))
    [e] = merged["saved"]
    assert (e["distinct"], e["findings"], e["length"]) == (len(row["keys"]), row["findings"], 1)


def test_a_summary_of_the_previous_schema_version_is_refused_by_merge(libs, capsys, tmp_path):
    fuzz(capsys, libs["odd-tail"], tmp_path / "s")
    path = tmp_path / "s" / "summary.json"
    doc = json.loads(path.read_text())
    doc["schema_version"] = 5
    path.write_text(json.dumps(doc))
    code = main(["fuzz", "merge", str(tmp_path / "s"), "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert code == 2 and "unknown schema version 5 (this sl1conf reads 7)" in err and err.count("\n") == 1


def test_a_summary_counts_every_element_by_reason_and_version_6_is_merged_as_not_counted(libs, capsys, tmp_path):
    """Version 7 counts every returned element by the judge's one reason (they add up to the
    campaign's elements, and a defect's wrong elements are rejected ones); a version 6 summary,
    which kept no such counts, is read as 7 with ``reasons`` null, and a merge with it claims none."""
    fuzz(capsys, libs["odd-tail"], tmp_path / "s")
    doc = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert sum(doc["reasons"].values()) == doc["elements"] and doc["reasons"]["rejected"] > 0
    del doc["reasons"]
    doc["schema_version"] = 6
    (tmp_path / "s" / "summary.json").write_text(json.dumps(doc))
    assert main(["fuzz", "merge", str(tmp_path / "s"), "--out", str(tmp_path / "m")]) in (0, 1)
    capsys.readouterr()
    assert json.loads((tmp_path / "m" / "summary.json").read_text())["reasons"] is None
