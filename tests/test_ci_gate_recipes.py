"""The gate recipes of docs/ci-examples.md exit non-zero whenever something is red (issue 40, item 3).

``pytest ... || [ $? -eq 1 ]`` used to swallow a failing unit test of the project along with the
conformance failures it meant to leave to the gate. Each recipe marked ``<!-- gate-recipe: NAME -->``
is extracted from the page each time (so the docs and this test cannot drift) and run as written,
nothing substituted, in a repository laid out as the page's jobs assume: ``make build/libdsp.so``
builds the suite's sample library (adapters/sample), and the repository has one unit test of its
own. The baseline is made by the page's own ``baseline`` recipe from the good library.

Four states of the repository: neither fails (exit 0), the unit test fails, the library carries a
defect the baseline did not have (SL1_BUG=3, a write past the end: R10 fails), both. Where something
fails the recipe must exit non-zero, and the failure must come from the step that should see it (the
unit tests, or the gate's regression), so a recipe that always failed could not pass.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sl1conf.adapters import sample as S

DOCS = Path(__file__).resolve().parent.parent / "docs"
RECIPE = re.compile(r"<!-- gate-recipe: (\S+) -->\s*\n```(\w+)\n(.*?)\n```", re.S)
NAMES = {"baseline": "sh", "certify-sh": "sh", "pytest-sh": "sh", "pytest-github": "yaml", "pytest-gitlab": "yaml"}

MAKEFILE = """\
# the user's build: the suite's sample library; BUG=3 builds it with a write past the end
CFLAGS = -O2 -shared -fPIC -std=c11 -ffp-contract=off -fexcess-precision=standard
build/libdsp.so: src/dsp.c
\tmkdir -p build
\tcc $(CFLAGS) $(if $(BUG),-DSL1_BUG=$(BUG)) -Iinclude src/dsp.c -o build/libdsp.so
"""
UNIT = "def test_the_projects_own_unit_test():\n    assert {truth}\n"


def recipes() -> dict:
    found = {}
    for name, lang, text in RECIPE.findall((DOCS / "ci-examples.md").read_text()):
        assert name not in found, f"gate recipe {name} marked twice"
        found[name] = (lang, text)
    return found


def test_the_page_marks_these_recipes():
    assert {n: lang for n, (lang, _) in recipes().items()} == NAMES
    for name, (_, text) in recipes().items():  # none hides pytest's exit status behind an || of its own
        for line in text.splitlines():
            if "|| [ $? -eq 1 ]" in line and "pytest" in line:
                assert "pytest .sl1conf" in line, (name, line)


def shell(script: str, cwd: Path) -> subprocess.CompletedProcess:
    """``script`` as GitHub runs a step (bash -eo pipefail), this interpreter's tools first on PATH."""
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    for k in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        env.pop(k, None)  # the plugin comes in through its entry point, as in a user's job
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def steps(name: str) -> list:
    """The recipe as the CI runs it: a list of scripts, each one step; the job stops at the first that fails."""
    lang, text = recipes()[name]
    if lang == "sh":
        return [text]
    yaml = pytest.importorskip("yaml")
    data = yaml.safe_load(text)
    if name.endswith("-github"):
        return [step["run"] for step in data]
    return list(data)  # GitLab: each script line


def run(name: str, repo: Path) -> tuple:
    """(exit status of the first step that failed, or 0; everything printed)."""
    printed = ""
    for script in steps(name):
        done = shell(script, repo)
        printed += done.stdout + done.stderr
        if done.returncode:
            return done.returncode, printed
    return 0, printed


def make_repo(folder: Path, *, unit_passes: bool, bug: bool) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "src").mkdir(parents=True)
    (folder / "include").mkdir()
    (folder / "tests").mkdir()
    shutil.copy(S.sources_dir() / "smoothl1lossgrad.c", folder / "src" / "dsp.c")
    shutil.copy(S.sources_dir() / "smoothl1lossgrad.h", folder / "include" / "smoothl1lossgrad.h")
    (folder / "Makefile").write_text(MAKEFILE)
    (folder / "tests" / "test_unit.py").write_text(UNIT.format(truth=unit_passes))
    made = subprocess.run(["make", "build/libdsp.so", *(["BUG=3"] if bug else [])], cwd=folder,
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    return folder


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    """last-release/, made by the page's baseline recipe from the good library."""
    if shutil.which("make") is None:
        pytest.skip("make not found")
    pytest.importorskip("xdist")
    repo = make_repo(tmp_path_factory.mktemp("release") / "repo", unit_passes=True, bug=False)
    rc, printed = run("baseline", repo)
    assert rc == 0, printed[-3000:]
    return repo / "last-release"


STATES = {  # name: (the unit test passes, the library has the defect)
    "unit-test-fails": (False, False),
    "conformance-fails": (True, True),
    "both-fail": (False, True),
}


@pytest.mark.parametrize("state", list(STATES))
@pytest.mark.parametrize("name", ["certify-sh", "pytest-sh", "pytest-github", "pytest-gitlab"])
def test_a_gate_recipe_fails_on_every_red(name, state, baseline, tmp_path):
    unit_passes, bug = STATES[state]
    repo = make_repo(tmp_path / "repo", unit_passes=unit_passes, bug=bug)
    shutil.copytree(baseline, repo / "last-release")
    rc, printed = run(name, repo)
    assert rc != 0, printed[-3000:]
    if not unit_passes:  # the project's own test is what stopped it, before any certification
        assert "1 failed" in printed and "test_the_projects_own_unit_test" in printed, printed[-3000:]
        assert not (repo / "sl1conf-report").exists() and not (repo / "report").exists()
    else:  # the unit test passed; the conformance failure reached the gate, which stopped on it
        assert "1 passed" in printed and "gate: FAIL" in printed and "REGRESSION" in printed and "R10" in printed, \
            printed[-3000:]


@pytest.mark.parametrize("name", ["certify-sh", "pytest-sh"])
def test_a_gate_recipe_passes_when_nothing_is_red(name, baseline, tmp_path):
    repo = make_repo(tmp_path / "repo", unit_passes=True, bug=False)
    shutil.copytree(baseline, repo / "last-release")
    rc, printed = run(name, repo)
    assert rc == 0, printed[-3000:]
    assert "gate: PASS, no regression" in printed
