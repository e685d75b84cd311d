"""The board and CI recipes of the docs run as written (issue 36, part 5).

A recipe is a fenced block right after an HTML comment ``<!-- recipe: NAME -->`` in
docs/adapters.md or docs/ci-examples.md, extracted from the page each time, so the docs and
this test cannot drift: an ``sh`` block runs as one script (``bash -e``), a ``yaml`` block's
jobs run their ``run:`` steps in order under GitHub's shell (``bash -eo pipefail``), all but
the two installs of each job (the suite's wheel with pip, the cross tools with apt-get),
which this machine has done. Nothing in a command is substituted: they run in a temporary
folder laid out as the user's repository the docs describe (``include/smoothl1lossgrad.h``,
and a Makefile whose ``build/aarch64/libdsp.a`` is issue 36's library, the zoo's
``newton-raphson-daz``: a Newton-Raphson reciprocal, subnormal inputs read as zero, subnormal
results kept, fp32 only). Each must exit 0 and leave a passing mt7004 report; the exported
self-test's own verdict is checked on its own. Skipped without qemu-aarch64 or
aarch64-linux-gnu-gcc (a failure under CI, which has both).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sl1conf.adapters import sample as S
from sl1conf.conformance.selftest import zoo

DOCS = Path(__file__).resolve().parent.parent / "docs"
RECIPE = re.compile(r"<!-- recipe: (\S+) -->\s*\n```(\w+)\n(.*?)\n```", re.S)
INSTALLS = ("python -m pip install ", "sudo apt-get ")  # the steps this machine has done already

# Every recipe the docs mark, and what it leaves behind: the report folders it writes. A recipe
# marked in the docs and missing here (or the other way round) fails test_the_docs_mark_these.
EXPECTED = {
    "adapters.md": {"aarch64-dynamic": ["report-qemu"], "aarch64-static": ["report-qemu-static"]},
    "ci-examples.md": {"github-qemu": ["report-qemu", "report-board"]},
}

MAKEFILE = """\
# the user's build: issue 36's library (fp32 only) for aarch64
CFLAGS = -O2 -std=c11 -ffp-contract=off -fexcess-precision=standard -DSL1_NO_HALF -Iinclude
build/aarch64/libdsp.a: src/dsp.c
\tmkdir -p build/aarch64
\taarch64-linux-gnu-gcc $(CFLAGS) -c src/dsp.c -o build/aarch64/dsp.o
\taarch64-linux-gnu-ar rcs $@ build/aarch64/dsp.o
"""


def recipes(page: str) -> dict:
    """{name: (language, text)} of the recipes the page marks."""
    found = {}
    for name, lang, text in RECIPE.findall((DOCS / page).read_text()):
        assert name not in found, f"{page}: recipe {name} marked twice"
        found[name] = (lang, text)
    return found


@pytest.fixture(scope="module")
def tools():
    missing = [t for t in ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-ar", "qemu-aarch64", "make")
               if shutil.which(t) is None]
    if missing:
        message = f"{' and '.join(missing)} not found (Debian: gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the documented recipes: {message}")
        pytest.skip(message)


def user_repo(folder: Path) -> Path:
    """A user's repository as the docs describe it: the library's source, its header, its Makefile."""
    (folder / "src").mkdir(parents=True)
    (folder / "include").mkdir()
    member = next(m for m in zoo.members() if m.name == "newton-raphson-daz")
    shutil.copy(member.source(), folder / "src" / "dsp.c")
    shutil.copy(zoo.zoo_dir() / "zoo.h", folder / "src" / "zoo.h")
    shutil.copy(S.sources_dir() / "smoothl1lossgrad.h", folder / "include" / "smoothl1lossgrad.h")
    (folder / "Makefile").write_text(MAKEFILE)
    return folder


def shell(script: str, cwd: Path, *flags: str) -> subprocess.CompletedProcess:
    """``script`` under bash in ``cwd``, with this interpreter's ``python`` and ``sl1conf`` first on PATH."""
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    return subprocess.run(["bash", "--noprofile", "--norc", *flags, "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def passing_report(folder: Path) -> dict:
    report = json.loads((folder / "report.json").read_text())
    failed = {(r["dtype"], r["variant"], e["id"]) for r in report["runs"] for e in r["requirements"]
              if e["status"] == "fail"}
    assert report["verdict"] == "pass" and not failed, (folder.name, report["verdict"], sorted(failed))
    assert report["profile"]["name"] == "mt7004"
    return report


def test_the_docs_mark_these():
    for page, names in EXPECTED.items():
        assert set(recipes(page)) == set(names), page


@pytest.mark.parametrize("name", list(EXPECTED["adapters.md"]))
def test_the_aarch64_harness_recipe_runs_as_written(name, tools, tmp_path):
    lang, script = recipes("adapters.md")[name]
    assert lang == "sh"
    repo = user_repo(tmp_path / "repo")
    made = shell("make build/aarch64/libdsp.a", repo, "-e")  # the page says this built LIB
    assert made.returncode == 0, made.stderr
    run = shell(script, repo, "-e")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for folder in EXPECTED["adapters.md"][name]:
        report = passing_report(repo / folder)
        assert {(r["dtype"], r["variant"]) for r in report["runs"]} == {("fp32", "s"), ("fp32", "p")}
        assert report["implementation"]["adapter"].startswith("sim:qemu-aarch64 ")


def test_without_no_half_the_fp32_library_does_not_link(tools, tmp_path):
    """What the page says -DSL1_NO_HALF is for: the harness then names no hp_ function."""
    _, script = recipes("adapters.md")["aarch64-dynamic"]
    assert " -DSL1_NO_HALF " in script
    repo = user_repo(tmp_path / "repo")
    assert shell("make build/aarch64/libdsp.a", repo, "-e").returncode == 0
    run = shell(script.replace(" -DSL1_NO_HALF ", " "), repo, "-e")
    assert run.returncode != 0 and "undefined reference to `hp_smoothl1lossgrad_s'" in run.stderr, run.stderr
    assert not (repo / "report-qemu").exists()


def jobs(page: str, name: str) -> dict:
    yaml = pytest.importorskip("yaml")
    lang, text = recipes(page)[name]
    assert lang == "yaml"
    return yaml.safe_load(text)


def run_job(job: dict, repo: Path) -> list:
    """Each ``run:`` step of ``job`` in order, as GitHub runs it; the install steps left out (returned)."""
    skipped = []
    for step in job["steps"]:
        command = step.get("run")
        if command is None:
            assert "uses" in step, step
            continue
        if command.startswith(INSTALLS):
            skipped.append(command.split()[:3])
            continue
        done = shell(command, repo, "-eo", "pipefail")
        assert done.returncode == 0, (step.get("name"), command, done.stdout[-3000:], done.stderr[-3000:])
    return skipped


@pytest.fixture(scope="module")
def github_jobs(tools, tmp_path_factory) -> tuple:
    """The repository after each job of the GitHub recipe has run in it, one after the other, and
    {job: None, or why it stopped}: each test then speaks for its own job."""
    repo = user_repo(tmp_path_factory.mktemp("github") / "repo")
    ran = {}
    for name, job in jobs("ci-examples.md", "github-qemu").items():
        try:
            skipped = run_job(job, repo)
            # only the two installs are left out: a new step is run, never skipped unseen
            assert skipped == [["python", "-m", "pip"], ["sudo", "apt-get", "update"]], skipped
            ran[name] = None
        except AssertionError as exc:
            ran[name] = str(exc)
    assert set(ran) == {"certify-qemu", "board-selftest"}, set(ran)
    return repo, ran


def test_the_github_qemu_job_certifies_through_sim(github_jobs):
    repo, ran = github_jobs
    assert ran["certify-qemu"] is None, ran["certify-qemu"]
    report = passing_report(repo / "report-qemu")
    assert {(r["dtype"], r["variant"]) for r in report["runs"]} == {("fp32", "s"), ("fp32", "p")}


def test_the_github_board_job_judges_the_self_tests_output(github_jobs):
    repo, ran = github_jobs
    assert ran["board-selftest"] is None, ran["board-selftest"]
    report = passing_report(repo / "report-board")
    assert report["implementation"]["adapter"] == "results:board-output.txt", report["implementation"]["adapter"]


def test_the_exported_self_test_passes_the_library_by_its_own_verdict(github_jobs):
    """The program's own judgement (what a C program can judge, under the mt7004 profile it was
    exported with): every family passes, as certify --results says of the same output."""
    repo, _ = github_jobs
    lines = (repo / "board-output.txt").read_text().splitlines()
    own = [line for line in lines if line.startswith(("PASS ", "FAIL ", "ALL PASS", "FAILED "))]
    assert own and own[-1] == "ALL PASS", [line for line in own if not line.startswith("PASS ")]
