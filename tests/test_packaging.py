"""What the wheel and the sdist carry, and that building them needs no write access to the checkout.

Why: pyproject.toml says ``license = "Apache-2.0"``; a licence named but not shipped is not
granted. And a read-only checkout (a mounted source tree, a vendored copy) must build with
``--config-settings=build-dir=`` outside it, as the README says (the long form: the short ``-C`` needs pip 23.1, and Debian 12's Python bundles pip 23.0.1) (checked as "nothing in the checkout changed",
which holds for root too, whom chmod does not stop).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_licence_named_in_pyproject_is_in_the_repository():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the whole licence, not a stub


def test_git_tracks_the_licence_so_the_sdist_carries_it():
    """meson-python's sdist is ``meson dist``: what git tracks."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", "LICENSE"], cwd=ROOT, capture_output=True)
    assert tracked.returncode == 0, tracked.stderr.decode()


def _tracked_files() -> list:
    if (ROOT / ".git").exists() and shutil.which("git"):
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return [p for p in out.splitlines() if not p.startswith("reports/") and (ROOT / p).is_file()]
    return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts
            and "build" not in p.parts]


def _snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.mark.slow
def test_a_read_only_checkout_builds_a_wheel_with_the_licence(tmp_path):
    src = tmp_path / "src"
    for rel in _tracked_files():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    for p in [src, *src.rglob("*")]:
        p.chmod(p.stat().st_mode & ~0o222)
    before = _snapshot(src)
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                               f"--config-settings=build-dir={tmp_path / 'build'}", "-w", str(tmp_path / "dist"), "."],
                              cwd=src, capture_output=True, text=True,
                              env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"})
        assert done.returncode == 0, done.stderr[-3000:]
        assert _snapshot(src) == before, "building wrote into the checkout"
    finally:
        for p in [src, *src.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o200)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        licences = [n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        assert licences, z.namelist()
        assert z.read(licences[0]) == (ROOT / "LICENSE").read_bytes()
