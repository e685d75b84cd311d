#!/usr/bin/env python3
"""Set up the suite in ./.venv and run it: the README's two Quick start commands.

    python3 quickstart.py demo [ARGS]   set up, run `sl1conf demo ARGS`, then certify the Cython kernel
                                        and the bundled sample C library on every platform profile
                                        (reports in reports/latest/)
    python3 quickstart.py test [ARGS]   set up (with PyTorch, for its adapter's tests; --no-torch
                                        skips it and those tests), then run the tests in parallel
                                        (pytest -n auto ARGS)
    python3 quickstart.py bench [ARGS]  set up, then run the benchmark (bench/run.py ARGS)

Setting up creates .venv (or reuses it), installs the build requirements named
in pyproject.toml and then this package in editable mode with its test extras.
It is skipped when nothing that affects the install has changed since the last
run. Needs Python 3.11+, pip and a C compiler; nothing else is installed by hand.
"""

import hashlib
import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".sl1conf-install-stamp"
TORCH_STAMP = VENV / ".sl1conf-torch-stamp"
TORCH = "torch==2.13.0"  # the version the torch adapter is tested with (a CPU build where one is at hand)
INSTALL_INPUTS = ["pyproject.toml", "meson.build", "conformance/meson.build",
                  "reference/meson.build", "adapters/meson.build"]
# (Source edits need no reinstall: the editable install rebuilds the kernel on import.)


def _run(cmd, env=None):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], cwd=ROOT, env=env).returncode


def _env():
    env = dict(os.environ)
    # meson-python editable installs rebuild on import and need meson and ninja on PATH.
    env["PATH"] = str(BIN) + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = str(VENV)
    return env


def setup(with_torch: bool = False) -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"quickstart: Python 3.11 or newer is needed, this is {sys.version.split()[0]}")
    if not (BIN / "python").exists():
        print(f"quickstart: creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256()
    for name in INSTALL_INPUTS:
        path = ROOT / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b"") + b"\0")
    stamp = digest.hexdigest()
    python, env = BIN / "python", _env()
    if not (STAMP.exists() and STAMP.read_text() == stamp):
        build_requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
        for cmd in ([python, "-m", "pip", "install", "--quiet", *build_requires],
                    [python, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--editable", ".[test]"]):
            if _run(cmd, env) != 0:
                sys.exit("quickstart: installation failed (see the output above)")
        STAMP.write_text(stamp)
    if with_torch and not (TORCH_STAMP.exists() and TORCH_STAMP.read_text() == TORCH):
        if _run([python, "-m", "pip", "install", "--quiet", TORCH], env) != 0:
            sys.exit(f"quickstart: installing {TORCH} failed (use --no-torch to test without it)")
        TORCH_STAMP.write_text(TORCH)


def main(argv) -> int:
    if not argv or argv[0] not in ("demo", "test", "bench"):
        print("usage: python3 quickstart.py demo|test|bench [ARGS]",
              file=sys.stderr)
        return 2
    with_torch = argv[0] == "test" and "--no-torch" not in argv
    argv = [a for a in argv if a != "--no-torch"]
    setup(with_torch)
    if argv[0] == "demo":
        code = _run([BIN / "sl1conf", "demo", *argv[1:]], _env())
        for impl, short in (("builtin:kernel", "kernel"), ("builtin:sample", "sample")):
            for platform in ("ieee", "ft78ne", "mt7004"):
                out = ROOT / "reports" / "latest" / f"{short}-{platform}"
                code |= _run([BIN / "sl1conf", "certify", "--impl", impl, "--platform", platform,
                              "--out", out], _env())
        return code
    if argv[0] == "bench":
        return _run([BIN / "python", "bench/run.py", *argv[1:]], _env())
    return _run([BIN / "python", "-m", "pytest", "-n", "auto", *argv[1:]], _env())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
