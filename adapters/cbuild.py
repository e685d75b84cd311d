"""Build small C shared libraries with the system compiler, cached by what went into them.

Used for the half-precision call shim and for the bundled sample library: the
cache key hashes the sources, the compiler's identity, the flags and the
machine, so a cached library is reused only where it was built for the same
thing. Results land atomically (temporary file, then rename).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from .base import AdapterError

__all__ = ["cache_dir", "compiler", "build_shared"]

BASE_FLAGS = ("-O2", "-std=c11", "-fPIC", "-shared", "-ffp-contract=off", "-fexcess-precision=standard")


def cache_dir() -> Path:
    """$SL1CONF_CACHE, else $XDG_CACHE_HOME/sl1conf, else ~/.cache/sl1conf."""
    root = os.environ.get("SL1CONF_CACHE") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sl1conf"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def compiler(cc: "str | None" = None) -> list[str]:
    """The C compiler command ($CC or cc), or AdapterError saying what is missing."""
    cmd = shlex.split(cc or os.environ.get("CC") or "cc")
    if not shutil.which(cmd[0]):
        raise AdapterError(f"no C compiler found ({cmd[0]!r}): install one (e.g. gcc) or set CC; "
                           "it is needed to build the half-precision call shim and the sample library")
    return cmd


def _identity(cmd: list[str]) -> str:
    try:
        out = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out.splitlines()[0] if out else cmd[0]


def build_shared(name: str, sources: list[Path], *, flags: tuple = (), cc: "str | None" = None,
                 out_dir: "Path | None" = None) -> Path:
    """Compile ``sources`` into ``<out_dir or cache>/<name>-<key>.so`` unless it is there already."""
    cmd = compiler(cc)
    all_flags = [*BASE_FLAGS, *flags]
    key = hashlib.sha256()
    for part in (_identity(cmd), " ".join(cmd), " ".join(all_flags), platform.machine(), platform.system()):
        key.update(part.encode() + b"\0")
    for src in sources:
        key.update(Path(src).read_bytes() + b"\0")
    target = Path(out_dir or cache_dir()) / f"{name}-{key.hexdigest()[:16]}.so"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        tmp_out = Path(tmp) / target.name
        includes = sorted({f"-I{Path(s).parent}" for s in sources})
        proc = subprocess.run([*cmd, *all_flags, *includes, "-o", str(tmp_out), *map(str, sources)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            first = (proc.stderr.strip().splitlines() or ["(no message)"])[0]
            raise AdapterError(f"building {name} with {cmd[0]} failed: {first}")
        os.replace(tmp_out, target)
    return target
