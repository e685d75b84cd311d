"""The on-disk cache of generated vector sets (conformance/vectors/cache.py) never changes what
a certification sees: a set from the cache is the set generation gives, bit for bit and
manifest for manifest; a damaged entry is generated again; the key follows the code."""

from __future__ import annotations

import numpy as np
import pytest

from sl1conf.conformance.certify.engine import quick_families, vectors_for
from sl1conf.conformance.vectors import cache


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SL1CONF_CACHE", str(tmp_path))
    monkeypatch.delenv("SL1CONF_VECTOR_CACHE", raising=False)
    return tmp_path / "vectors"


def _same(a, b) -> None:
    assert a.manifest == b.manifest and a.manifest_sha256 == b.manifest_sha256
    assert sorted(a.arrays) == sorted(b.arrays)
    for stem in a.arrays:
        assert np.array_equal(a.arrays[stem], b.arrays[stem]), stem


def _fresh(monkeypatch, dtype):
    with monkeypatch.context() as m:
        m.setenv("SL1CONF_VECTOR_CACHE", "0")
        return vectors_for(dtype, quick=True)


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_a_cached_set_is_the_generated_set(cache_dir, monkeypatch, dtype):
    first = vectors_for(dtype, quick=True)   # generated, then stored
    entries = list(cache_dir.iterdir())
    assert len(entries) == 1 and (entries[0] / "entry.json").is_file()
    second = vectors_for(dtype, quick=True)  # from the cache: mapped copy-on-write
    assert isinstance(second.arrays["dy"], np.memmap)
    _same(second, _fresh(monkeypatch, dtype))
    _same(first, second)
    second.arrays["dy"][0] ^= 1  # a stray write stays in this process: the entry is unchanged
    _same(vectors_for(dtype, quick=True), first)


def test_a_damaged_entry_is_generated_again(cache_dir, monkeypatch):
    vectors_for("fp16", quick=True)
    (entry,) = cache_dir.iterdir()
    dy = entry / "dy.npy"
    dy.write_bytes(dy.read_bytes()[:100])  # truncated
    _same(vectors_for("fp16", quick=True), _fresh(monkeypatch, "fp16"))


def test_the_key_follows_the_code_and_only_the_newest_entry_is_kept(cache_dir, monkeypatch, tmp_path):
    names = list(quick_families())
    prefix, key = cache.cache_key("fp16", 2026, names, False)
    assert cache.cache_key("fp16", 2026, names, False) == (prefix, key)
    assert cache.cache_key("fp16", 2027, names, False)[0] != prefix      # another seed: another entry
    assert cache.cache_key("fp32", 2026, names, False)[0] != prefix      # another dtype
    code = tmp_path / "family.py"
    code.write_text("A = 1\n")
    real = cache._code_files
    monkeypatch.setattr(cache, "_code_files", lambda: [*real(), code])
    before = cache.cache_key("fp16", 2026, names, False)
    code.write_text("A = 2\n")  # the code changed: the same request, another key
    after = cache.cache_key("fp16", 2026, names, False)
    assert before[0] == after[0] and before[1] != after[1]
    calls = []
    make = lambda: calls.append(1) or _fresh(monkeypatch, "fp16")  # noqa: E731
    cache.cached("fp16", 2026, names, False, make)
    code.write_text("A = 3\n")
    cache.cached("fp16", 2026, names, False, make)
    assert len(calls) == 2 and len(list(cache_dir.iterdir())) == 1  # made again; the stale entry removed
    cache.cached("fp16", 2026, names, False, make)
    assert len(calls) == 2  # and now from the cache
