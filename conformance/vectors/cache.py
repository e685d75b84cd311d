"""Generated vector sets kept on disk between certifications, keyed by everything they depend on.

Why: the default run's vector sets (about 8 million elements per dtype, with the oracle's and
every model's column) take seconds to generate, on every certification, and a certification
through a simulator or board is otherwise mostly that. A generated set is a pure function of
the suite's code (the families, the samplers, the oracle, the models, the kernel), numpy, the
dtype, the seed and the families chosen; the key hashes all of them (the source and compiled
files of ``sl1conf.reference`` and ``sl1conf.conformance.vectors`` byte for byte), so a set
from other code is never used. Stored as one ``.npy`` per array plus the manifest, mapped
copy-on-write when loaded (no copy, and a stray write never reaches the file). Only the
newest entry per (dtype, seed, families) is kept. ``SL1CONF_VECTOR_CACHE=0`` turns it off.
The cache folder is ``common``'s: ``$SL1CONF_CACHE``, else ``$XDG_CACHE_HOME/sl1conf``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["cached", "cache_key"]

_FORMAT = "sl1conf-vector-cache-1"  # bump to invalidate every entry
_SUFFIXES = (".py", ".pyx", ".pxd", ".c", ".h", ".so", ".pyd")


def _cache_root() -> Path:
    env = os.environ.get("SL1CONF_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sl1conf"
    return base / "vectors"


def _code_files() -> list:
    """The files a generated set depends on: every source and compiled file of the reference
    package and of the vectors package (and the compiled modules they import, wherever the
    build put them)."""
    import sl1conf.conformance.vectors as vectors
    import sl1conf.reference as reference
    from sl1conf.conformance.vectors import draw
    from sl1conf.reference import kernel

    files = set()
    for pkg in (reference, vectors):
        root = Path(pkg.__file__).resolve().parent
        files |= {p for p in root.rglob("*") if p.suffix in _SUFFIXES and p.is_file()}
    for extension in (kernel, draw):  # compiled modules, wherever the build put them (an editable install's build folder)
        files.add(Path(extension.__file__).resolve())
    return sorted(files)


def cache_key(dtype: str, seed: int, families: list, large: bool) -> tuple:
    """(the entry's name prefix, its full key): the prefix names what was asked for, the key
    hashes the code and the versions too."""
    from sl1conf import __version__

    h = hashlib.sha256()
    for part in (_FORMAT, __version__, np.__version__, platform.machine(), dtype, str(seed), str(large),
                 ",".join(families)):
        h.update(part.encode() + b"\0")
    for path in _code_files():
        h.update(str(path.name).encode() + b"\0" + path.read_bytes() + b"\0")
    asked = hashlib.sha256(f"{dtype}\0{seed}\0{large}\0{','.join(families)}".encode()).hexdigest()[:16]
    return f"{dtype}-{asked}", h.hexdigest()[:32]


def _load(folder: Path):
    from sl1conf.conformance.vectors.store import VectorSet

    meta = json.loads((folder / "entry.json").read_text())
    arrays = {stem: np.load(folder / f"{stem}.npy", mmap_mode="c") for stem in meta["arrays"]}
    return VectorSet(None, meta["manifest"], arrays, meta["manifest_sha256"])


def _store(folder: Path, vs) -> None:
    """Write an entry atomically (a temporary folder renamed into place); a failure leaves none."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
    try:
        for stem, a in vs.arrays.items():
            np.save(tmp / f"{stem}.npy", np.ascontiguousarray(a), allow_pickle=False)
        (tmp / "entry.json").write_text(json.dumps({"manifest": vs.manifest, "manifest_sha256": vs.manifest_sha256,
                                                    "arrays": sorted(vs.arrays)}))
        os.replace(tmp, folder)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def cached(dtype: str, seed: int, families: list, large: bool, make):
    """The vector set ``make()`` builds for these arguments: from the cache when an entry with
    the same key is there, else made, stored (older entries for the same arguments removed)
    and returned. Any failure of the cache (a full disk, a damaged entry) falls back to making
    the set; the cache never changes what a certification sees."""
    if os.environ.get("SL1CONF_VECTOR_CACHE", "1") == "0":
        return make()
    try:
        prefix, key = cache_key(dtype, seed, families, large)
    except OSError:  # the code's own files cannot be read: no key, no cache
        return make()
    folder = _cache_root() / f"{prefix}-{key}"
    try:
        if (folder / "entry.json").is_file():
            return _load(folder)
    except (OSError, ValueError, KeyError):
        pass  # a damaged entry: made again, and replaced
    vs = make()
    try:
        for old in _cache_root().glob(f"{prefix}-*"):
            if old.name != folder.name:  # an entry of other code (another process may be writing this one)
                shutil.rmtree(old, ignore_errors=True)
        _store(folder, vs)
    except OSError:
        pass
    return vs
