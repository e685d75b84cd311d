"""Runs a report has no result for, by why (engine.missing_runs, one rule for certify and the
pytest plugin): those the run asked for that the implementation does not offer (``missing_runs``:
incompleteness, narrowed or not) and those narrowing left out (``not_asked``: another scope).

Expected outcomes follow docs/reports.md ("The verdict", "The regression gate"), stated per case
here, not read from the code under test:

- a report is ``incomplete`` (exit 1) when the profile lists a run that was asked for (every run
  the profile lists, unless --dtype, --variant or the vector sets given narrowed them) and the
  implementation does not offer it; a run narrowing left out is scope, never incompleteness;
- the pytest plugin's --sl1-report gives the same verdict, missing and not-asked runs as certify
  for the same implementation, profile and narrowing;
- the gate: a run of the baseline the new report asked for and lacks is a regression (exit 1);
  one it did not ask for is another scope (exit 2 unless --allow-mismatch scope; allowed, a note).

The implementations: ``p_only`` (a python: function offering variant p only, both dtypes, as
mindspore:cpu does), ``both`` (the same function offering both variants: the baseline) and
``builtin:model:divmul-fp16`` (fp16 only). Profile ieee lists fp16 and fp32, s and p.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from sl1conf.conformance.cli import main
from sl1conf.conformance.vectors import store as V
from sl1conf.conformance.vectors.families import generate

KERNEL = '''
import numpy as np


def both(dy, x1, x2, beta):
    with np.errstate(all="ignore"):
        b, g = np.float64(beta), dy.astype(np.float64)
        diff = x1.astype(np.float64) - x2.astype(np.float64)
        return np.where(diff > b, g, np.where(diff < -b, -g, diff / b * g)).astype(dy.dtype)


def p_only(dy, x1, x2, beta):
    return both(dy, x1, x2, beta)


p_only.variants = ("p",)
'''

VECTORS = "VECTORS"  # stands for the folder of an fp16 vector set (made once), given as --vectors
VECTORS32 = "VECTORS32"  # and of an fp32 one

# name: (implementation, narrowing (certify's options), verdict, missing_runs, not_asked)
CASES = {
    "p-only-default": ("p_only", (), "incomplete", ["fp16 s", "fp32 s"], []),
    "p-only-variant-p": ("p_only", ("--variant", "p"), "pass", [], ["fp16 s", "fp32 s"]),
    "p-only-dtype-fp16": ("p_only", ("--dtype", "fp16"), "incomplete", ["fp16 s"], ["fp32 s", "fp32 p"]),
    "p-only-vectors-fp16": ("p_only", ("--vectors", VECTORS), "incomplete", ["fp16 s"], ["fp32 s", "fp32 p"]),
    # a set for each dtype the profile lists narrows nothing (before, the plugin took any --sl1-vectors for narrowing)
    "p-only-vectors-both": ("p_only", ("--vectors", VECTORS, "--vectors", VECTORS32), "incomplete",
                            ["fp16 s", "fp32 s"], []),
    "fp16-only-default": ("builtin:model:divmul-fp16", (), "incomplete", ["fp32 s", "fp32 p"], []),
    "fp16-only-variant-p": ("builtin:model:divmul-fp16", ("--variant", "p"), "incomplete", ["fp32 p"],
                            ["fp16 s", "fp32 s"]),
    "fp16-only-dtype-fp16": ("builtin:model:divmul-fp16", ("--dtype", "fp16"), "pass", [], ["fp32 s", "fp32 p"]),
}


@pytest.fixture(scope="module")
def where(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("missing-runs")
    (root / "kernel.py").write_text(textwrap.dedent(KERNEL))
    vs = V.write(root / "set-fp16", "fp16", generate("fp16", 2026, ["nan-inf"]), seed=2026)
    vs32 = V.write(root / "set-fp32", "fp32", generate("fp32", 2026, ["nan-inf"]), seed=2026)
    return {"root": root, "vectors": str(vs), "vectors32": str(vs32), "certified": {}, "plugged": {}, "impl": lambda name: (
        f"python:{root / 'kernel.py'}:{name}" if name in ("p_only", "both") else name)}


def _options(where, narrowing) -> list:
    out = [{VECTORS: where["vectors"], VECTORS32: where["vectors32"]}.get(a, a) for a in narrowing]
    return out if "--vectors" in narrowing else [*out, "--quick"]


def _certify(where, name, narrowing) -> tuple:
    """(exit status, report.json) of ``sl1conf certify`` (made once per module)."""
    done, key = where["certified"], (name, tuple(narrowing))
    if key not in done:
        out = where["root"] / f"certify-{len(done)}"
        code = main(["certify", "--impl", where["impl"](name), "--platform", "ieee", *_options(where, narrowing),
                     "--out", str(out)])
        done[key] = code, out, json.loads((out / "report.json").read_text())
    return done[key]


def _plugin(where, name, narrowing) -> tuple:
    """(pytest's exit status, its output, the folder --sl1-report wrote): a fresh pytest in an
    empty folder, the certify options spelt as the plugin's (run once per module)."""
    done, key = where["plugged"], (name, tuple(narrowing))
    if key in done:
        return done[key]
    folder = where["root"] / f"plugin-{len(done)}"
    folder.mkdir()
    spelt = [{"--dtype": "--sl1-dtype", "--variant": "--sl1-variant", "--vectors": "--sl1-vectors",
              "--quick": "--sl1-quick"}.get(a, a) for a in _options(where, narrowing)]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_PLUGINS")}
    got = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--sl1-impl",
                          where["impl"](name), "--sl1-platform", "ieee", *spelt, "--sl1-report", "rep"],
                         cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    done[key] = got.returncode, got.stdout + got.stderr, folder / "rep"
    return done[key]


@pytest.mark.parametrize("case", CASES)
def test_certify_and_the_plugin_give_the_verdict_the_docs_define(case, where, capsys):
    name, narrowing, verdict, missing, not_asked = CASES[case]
    code, _, report = _certify(where, name, narrowing)
    capsys.readouterr()
    assert (code, report["verdict"]) == ({"pass": 0, "incomplete": 1}[verdict], verdict)
    assert report.get("missing_runs", []) == missing and report.get("not_asked", []) == not_asked
    assert bool(report.get("narrowed")) == bool(not_asked)  # narrowed exactly when runs were left out
    pcode, text, folder = _plugin(where, name, narrowing)
    plugin = json.loads((folder / "report.json").read_text())
    assert plugin["verdict"] == verdict, text
    assert re.search(rf"sl1conf: verdict {verdict.upper()} for ", text), text
    for key in ("missing_runs", "not_asked", "narrowed"):
        assert plugin.get(key) == report.get(key), key
    assert [(r["dtype"], r["variant"], r["verdict"]) for r in plugin["runs"]] == [
        (r["dtype"], r["variant"], r["verdict"]) for r in report["runs"]]
    assert pcode == (1 if missing else 0), text  # the missing-runs item fails exactly when runs are missing
    assert ("sl1conf::missing-runs" in text) == bool(missing)
    # the report reads back (schema) and renders: the scope line names what was not asked for
    assert main(["report", str(folder)]) == 0
    md = (folder / "report.md").read_text()
    if not_asked:
        assert f"not asked: {', '.join(not_asked)}" in md
    if missing:
        assert ", ".join(missing) in md
    capsys.readouterr()


def _gate(new, old, *more) -> int:
    return main(["gate", str(new), "--baseline", str(old), *more])


@pytest.fixture(scope="module")
def baseline(where):
    code, folder, report = _certify(where, "both", ())
    assert code == 0 and report["verdict"] == "pass" and len(report["runs"]) == 4
    return folder


@pytest.mark.parametrize("source", ["certify", "plugin"])
def test_the_gate_calls_a_lost_run_a_regression(source, where, baseline, capsys):
    """p_only run as the baseline was (not narrowed) lacks fp16 s and fp32 s: asked for and
    lost, a regression (exit 1), not another scope."""
    new = _certify(where, "p_only", ())[1] if source == "certify" else _plugin(where, "p_only", ())[2]
    capsys.readouterr()
    assert _gate(new, baseline) == 1
    out = capsys.readouterr().out
    assert "REGRESSION fp16 s: the run is missing from the new report" in out
    assert "REGRESSION fp32 s: the run is missing from the new report" in out


@pytest.mark.parametrize("source", ["certify", "plugin"])
def test_the_gate_calls_runs_not_asked_for_another_scope_not_a_regression(source, where, baseline, capsys):
    """p_only narrowed with --variant p: the s runs were not asked for. Another scope: exit 2
    naming them; allowed, notes and no regression (the p runs are the baseline's)."""
    new = (_certify(where, "p_only", ("--variant", "p"))[1] if source == "certify"
           else _plugin(where, "p_only", ("--variant", "p"))[2])
    capsys.readouterr()
    assert _gate(new, baseline) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "only in the baseline: fp16 s, fp32 s" in line and "--allow-mismatch scope" in line
    assert _gate(new, baseline, "--allow-mismatch", "scope") == 0
    out = capsys.readouterr().out
    assert "REGRESSION" not in out
    assert "fp16 s: not in the new report's scope (not asked for: --variant), not compared" in out


@pytest.mark.parametrize("source", ["certify", "plugin"])
def test_narrowed_the_gate_still_tells_a_lost_run_from_one_not_asked_for(source, where, baseline, capsys):
    """p_only narrowed with --dtype fp16: fp32 was not asked for (scope), fp16 s was asked for
    and is lacking (lost). Exit 2 for the scope; allowed, exit 1 for the lost run alone (before,
    a narrowed report listed no missing run and the lost one passed as another scope)."""
    new = (_certify(where, "p_only", ("--dtype", "fp16"))[1] if source == "certify"
           else _plugin(where, "p_only", ("--dtype", "fp16"))[2])
    capsys.readouterr()
    assert _gate(new, baseline) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "only in the baseline: fp32 p, fp32 s" in line
    assert _gate(new, baseline, "--allow-mismatch", "scope") == 1
    out = capsys.readouterr().out
    assert "REGRESSION fp16 s: the run is missing from the new report" in out
    for run in ("fp32 s", "fp32 p"):
        assert f"{run}: not in the new report's scope (not asked for: --dtype), not compared" in out
        assert f"REGRESSION {run}" not in out


def test_a_report_without_not_asked_still_reads_and_gates(where, baseline, capsys, tmp_path):
    """A report written before ``not_asked`` existed (narrowed, no missing_runs) is read as it
    was: its absent runs are another scope."""
    _, _, report = _certify(where, "p_only", ("--variant", "p"))
    old = {k: v for k, v in report.items() if k != "not_asked"}
    (tmp_path / "old.json").write_text(json.dumps(old))
    capsys.readouterr()
    assert _gate(tmp_path / "old.json", baseline, "--allow-mismatch", "scope") == 0
    out = capsys.readouterr().out
    assert "fp16 s: not in the new report's scope, not compared" in out and "REGRESSION" not in out
