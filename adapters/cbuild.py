"""Build small C programs and shared libraries with the system compiler, cached.

Used for the ctypes adapter's half-precision call shim, the bundled sample
library and the simulator harness. A build is reused only where everything that
went into it is the same: the cache key hashes the sources, the compiler (its
path, modification time and ``--version`` banner) and every flag. Results land
atomically (a temporary name beside the target, then a rename), so a build killed
halfway leaves nothing behind.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from .base import AdapterError

__all__ = ["cache_dir", "find_compiler", "compiler_identity", "build_key", "compile_to", "build_shared"]

_BUILD_FORMAT = "sl1conf-build-1"  # bump to invalidate every cached build
SHARED_FLAGS = ("-O2", "-shared", "-fPIC", "-std=c11", "-ffp-contract=off", "-fexcess-precision=standard")
"""Shared-library flags: -ffp-contract=off (no FMA), standard excess precision (every
assignment to _Float16 rounds); never -ffast-math (flush to zero, reordering)."""


def cache_dir() -> Path:
    """Where builds are cached: ``$SL1CONF_CACHE``, else ``$XDG_CACHE_HOME/sl1conf``, else
    ``~/.cache/sl1conf`` (as for the ctypes shim)."""
    env = os.environ.get("SL1CONF_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sl1conf"


_FALLBACK_COMPILERS = ("cc", "gcc", "clang")


def find_compiler(cc: "str | Sequence[str] | None" = None) -> list[str]:
    """The compiler command as an argument list: ``cc``, else ``$CC``, else cc, gcc or clang.

    ``cc`` may carry a launcher or flags (``"ccache gcc"``, ``"aarch64-linux-gnu-gcc -static"``).
    AdapterError names what is missing when no compiler can be found.
    """
    given = cc if cc is not None else os.environ.get("CC") or None
    if given is not None:
        argv = shlex.split(given) if isinstance(given, str) else [str(a) for a in given]
        if not argv:
            raise AdapterError("no C compiler: the compiler command is empty")
        if shutil.which(argv[0]) is None:
            source = "cc=" if cc is not None else "$CC"
            raise AdapterError(f"no C compiler: {argv[0]!r} (from {source}) is not found on PATH; "
                               "building the sample needs a C compiler with _Float16 (GCC >= 12 or Clang >= 15)")
        return argv
    for name in _FALLBACK_COMPILERS:
        if shutil.which(name):
            return [name]
    raise AdapterError("no C compiler: none of " + ", ".join(_FALLBACK_COMPILERS) + " is on PATH and $CC is "
                       "not set; install one (e.g. apt-get install gcc) or pass cc=")


@functools.lru_cache(maxsize=32)
def compiler_identity(argv: tuple) -> str:
    """The compiler's resolved path and ``--version`` banner (part of every cache key)."""
    path = shutil.which(argv[0]) or argv[0]
    try:
        proc = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60)
        banner = proc.stdout.strip() or proc.stderr.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        banner = f"(--version failed: {exc})"
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        stamp = 0
    return f"{' '.join(argv)}\n{path}\n{stamp}\n{banner}"


def build_key(*parts: "bytes | str") -> str:
    h = hashlib.sha256()
    for part in (_BUILD_FORMAT, *parts):
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:24]


def compile_to(argv: list, target: Path, what: str) -> None:
    """Run the compiler writing to a temporary name beside ``target``, then rename it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        try:
            proc = subprocess.run([*argv, "-o", tmp], capture_output=True, text=True, timeout=300)
        except OSError as exc:
            raise AdapterError(f"cannot run the C compiler {argv[0]!r} to build {what}: {exc}") from None
        except subprocess.TimeoutExpired:
            raise AdapterError(f"the C compiler took over 300 s to build {what}") from None
        if proc.returncode != 0:
            raise AdapterError(f"building {what} failed (exit status {proc.returncode}):\n"
                               f"  {shlex.join(argv)}\n{(proc.stderr or proc.stdout).strip()[-4000:]}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)



def build_shared(name: str, sources: Sequence[Path], flags: Sequence[str] = (),
                 cc: "str | Sequence[str] | None" = None, out_dir=None, what: str = "") -> Path:
    """Compile ``sources`` into ``<out_dir or cache>/<name>-<key>/<name>.so`` unless it is there already.

    Headers next to each source are found (-I of its folder) and are part of the key.
    """
    compiler = find_compiler(cc)
    dirs = sorted({Path(s).parent for s in sources})
    all_flags = [*SHARED_FLAGS, *flags, *(f"-I{d}" for d in dirs)]
    headers = sorted(h for d in dirs for h in Path(d).glob("*.h"))
    key = build_key(name, compiler_identity(tuple(compiler)), "\0".join(all_flags),
                    *(Path(s).read_bytes() for s in sources), *(h.read_bytes() for h in headers))
    target = Path(out_dir if out_dir is not None else cache_dir()) / f"{name}-{key}" / f"{name}.so"
    if not target.is_file():
        compile_to([*compiler, *all_flags, *map(str, sources)], target, what or name)
    return target
