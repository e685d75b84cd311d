"""The sample implementation of the C API, and building it (and the simulator harness).

The sample (``sample/smoothl1lossgrad.{h,c}``, installed next to this module) is a
portable C implementation of the four documented functions in the manual's order
of operations, every step rounded in the data precision: bit for bit the models
``divmul-fp32`` and ``divmul-fp16``. It is what the suite's own tests run through
the ctypes and simulator paths, and what an implementer can read to see what the
suite expects. Compiled with ``-DSL1_BUG=<n>`` it carries one deliberate defect
(see :func:`defects`), triggered by one recognizable ``length``, for testing the
suite's detectors.

:func:`build_library` compiles it into a shared library for the host (ctypes);
:func:`build_harness` builds the case-file harness (``sim/harness.c``, protocol in
docs/simulator-protocol.md) linked with the sample or with any other library, for
the host or with a cross compiler. Builds are cached in a directory keyed by a hash
of the sources, the compiler and its flags, so a second call costs a hash.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from pathlib import Path
from typing import Iterable, Sequence, Union

from .base import AdapterError
from .cbuild import SHARED_FLAGS, build_key, build_shared, cache_dir, compile_to, compiler_identity, find_compiler

__all__ = [
    "SOURCES", "LIBRARY_FLAGS", "HARNESS_FLAGS", "sources_dir", "harness_source", "defects",
    "bug_number", "build_library", "build_harness", "harness_template",
]

SOURCES = ("smoothl1lossgrad.h", "smoothl1lossgrad.c")
LIBRARY_FLAGS = SHARED_FLAGS
"""Flags of the shared library (cbuild.SHARED_FLAGS: no FMA contraction, every _Float16 assignment rounds)."""
HARNESS_FLAGS = ("-O2", "-std=c11", "-ffp-contract=off", "-fexcess-precision=standard")
"""Flags of the harness program (and of the sample when it is compiled into the harness)."""

PathLike = Union[str, os.PathLike]


def sources_dir() -> Path:
    """The folder holding ``smoothl1lossgrad.h`` and ``smoothl1lossgrad.c``.

    It sits next to this module both in the source tree (editable install) and in
    an installed package (meson installs the C files as package data there).
    """
    here = Path(__file__).resolve().parent / "sample"
    missing = [name for name in SOURCES if not (here / name).is_file()]
    if missing:
        raise AdapterError(f"the sample sources are not installed: {', '.join(missing)} missing in {here}")
    return here


def harness_source() -> Path:
    """``harness.c``, the case-file harness of the simulator protocol."""
    path = Path(__file__).resolve().parent / "sim" / "harness.c"
    if not path.is_file():
        raise AdapterError(f"the simulator harness source is not installed: {path} missing")
    return path


@functools.lru_cache(maxsize=None)
def _defects_from(text: str) -> dict:
    numbers = dict(re.findall(r"^#define\s+SL1_BUG_([A-Z_]+?)\s+(\d+)\s*$", text, re.M))
    lengths = {name[: -len("_LENGTH")]: int(v) for name, v in numbers.items() if name.endswith("_LENGTH")}
    return {name: (int(v), lengths[name]) for name, v in numbers.items()
            if not name.endswith("_LENGTH") and name in lengths}


def defects() -> dict[str, tuple[int, int]]:
    """The sample's deliberate defects: name (e.g. ``"SEGV"``) -> (SL1_BUG number, trigger length).

    Read from the ``#define``\\ s of ``smoothl1lossgrad.c``, the one place they are stated.
    """
    return dict(_defects_from((sources_dir() / "smoothl1lossgrad.c").read_text()))


def bug_number(bug: "int | str | None") -> int:
    """The SL1_BUG number of a defect given as a number, ``"SEGV"`` or ``"SL1_BUG_SEGV"``; 0 for None."""
    if bug is None:
        return 0
    known = defects()
    if isinstance(bug, str):
        key = bug.upper().removeprefix("SL1_BUG_")
        if key not in known:
            raise AdapterError(f"unknown sample defect {bug!r}; known: {', '.join(known)}")
        return known[key][0]
    number = int(bug)
    if number and number not in {n for n, _ in known.values()}:
        raise AdapterError(f"unknown sample defect number {number}; known: "
                           + ", ".join(f"{n}={name}" for name, (n, _) in known.items()))
    return number


def build_library(out_dir: "PathLike | None" = None, bug: "int | str | None" = None,
                  cc: "str | Sequence[str] | None" = None) -> Path:
    """Compile the sample into a shared library; the path of the (cached) ``.so``.

    ``out_dir`` is the cache folder (default :func:`cache_dir`); the library goes into
    a subfolder named by a hash of the sources, the compiler, the flags and ``bug``,
    and is reused while those stay the same. ``bug`` enables one deliberate defect
    (see :func:`defects`). ``cc`` (default ``$CC``, else cc) names the compiler.
    """
    number = bug_number(bug)
    flags = [f"-DSL1_BUG={number}"] if number else []
    return build_shared("libsl1sample", [sources_dir() / "smoothl1lossgrad.c"], flags + _host_f16c(cc),
                        cc=cc, out_dir=out_dir,
                        what="the sample library" + (f" with SL1_BUG={number}" if number else ""))


def _host_f16c(cc) -> list:
    """``["-mf16c"]`` when the compiler targets x86-64 and this CPU has F16C: GCC then converts
    _Float16 with one instruction instead of a libgcc call (about 5x faster fp16; the same
    bits, both round to nearest even). The flag is part of the cache key, so a build made
    here is never reused where the CPU lacks it."""
    import platform
    import subprocess

    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    try:
        flags = Path("/proc/cpuinfo").read_text()
        target = subprocess.run([*find_compiler(cc), "-dumpmachine"], capture_output=True, text=True,
                                timeout=60).stdout
    except (OSError, subprocess.SubprocessError, AdapterError):
        return []
    return ["-mf16c"] if " f16c" in flags and target.startswith("x86_64") else []


def build_harness(*libraries: PathLike, cc: "str | Sequence[str] | None" = None,
                  out_dir: "PathLike | None" = None, flags: Iterable[str] = (),
                  include_dirs: Iterable[PathLike] = (), bug: "int | str | None" = None) -> Path:
    """Build the simulator harness linked with ``libraries``; the path of the (cached) program.

    ``libraries`` are C sources, objects, static or shared libraries of an
    implementation; none means the sample's own source (with ``bug``, if given).
    ``cc`` is the compiler command, a cross compiler included (default ``$CC``, else
    cc): ``"aarch64-linux-gnu-gcc"`` with ``flags=["-static"]`` gives a program that
    ``qemu-aarch64`` runs without a sysroot; without -static, run it as
    ``qemu-aarch64 -L /usr/aarch64-linux-gnu``. ``include_dirs`` are searched for
    ``smoothl1lossgrad.h`` before the sample's. Shared libraries get an rpath to
    their folder. Build options of the harness itself (-DSL1_NO_HALF, ...) go in
    ``flags``; see ``harness.c``.
    """
    compiler = find_compiler(cc)
    number = bug_number(bug)
    if number and libraries:
        raise AdapterError("bug= selects a defect of the sample; it cannot apply to other libraries")
    src = sources_dir()
    libs = [Path(p).resolve() for p in libraries] or [src / "smoothl1lossgrad.c"]
    for lib in libs:
        if not lib.is_file():
            raise AdapterError(f"cannot build the harness: {lib} does not exist")
    incs = [Path(d).resolve() for d in include_dirs] + [src]
    all_flags = [*HARNESS_FLAGS, *flags] + ([f"-DSL1_BUG={number}"] if number else [])
    all_flags += [f"-I{d}" for d in incs]
    linked = [str(harness_source()), *map(str, libs)]
    rpaths = sorted({str(lib.parent) for lib in libs if ".so" in lib.suffixes or lib.suffix == ".dylib"})
    link_flags = [f"-Wl,-rpath,{d}" for d in rpaths]
    headers = [(d / "smoothl1lossgrad.h").read_bytes() for d in incs if (d / "smoothl1lossgrad.h").is_file()]
    key = build_key("harness", compiler_identity(tuple(compiler)), "\0".join(all_flags + link_flags),
               harness_source().read_bytes(), *headers,
               *(str(lib).encode() + b"\0" + lib.read_bytes() for lib in libs))
    root = Path(out_dir) if out_dir is not None else cache_dir()
    target = root / f"harness-{key}" / "harness"
    if not target.is_file():
        compile_to([*compiler, *all_flags, *linked, *link_flags], target,
                 "the simulator harness" + (f" with SL1_BUG={number}" if number else ""))
    return target


def harness_template(harness: PathLike, runner: "str | Sequence[str]" = ()) -> str:
    """The ``sim:`` command template that runs ``harness`` (under ``runner``, e.g. qemu-aarch64)."""
    prefix = shlex.split(runner) if isinstance(runner, str) else [str(a) for a in runner]
    return shlex.join([*prefix, str(harness), "{case}", "{result}"])
