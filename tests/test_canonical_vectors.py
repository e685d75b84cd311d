"""The committed canonical vector sets: they verify, and regenerating them gives the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sl1conf.conformance.vectors import store as V
from sl1conf.conformance.vectors.families import generate

ROOT = Path(__file__).resolve().parent.parent / "vectors"


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_committed_set_verifies(dtype):
    vs = V.load(ROOT / dtype)
    assert vs.manifest["dtype"] == dtype and not vs.manifest["large"]
    assert V.verify(vs) == []


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_regenerating_gives_the_same_bytes(dtype, tmp_path):
    committed = ROOT / dtype
    seed = json.loads((committed / "manifest.json").read_text())["seed"]
    fresh = V.write(tmp_path / dtype, dtype, generate(dtype, seed), seed=seed)
    names = sorted(p.name for p in committed.iterdir())
    assert names == sorted(p.name for p in fresh.iterdir())
    for name in names:
        assert (committed / name).read_bytes() == (fresh / name).read_bytes(), (
            f"{name} differs: regenerate with `sl1conf vectors generate --dtype {dtype} --out vectors/{dtype} "
            f"--seed {seed} --force` only when the change is intended (ids and bytes are a contract)")


def test_readme_describes_every_family():
    from sl1conf.conformance.vectors.families import FAMILIES

    text = (ROOT / "README.md").read_text()
    for spec in FAMILIES:
        assert f"| {spec.id} | `{spec.name}` |" in text, spec.name
