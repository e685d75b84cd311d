#!/usr/bin/env python3
"""Set up the suite in ./.venv and run it: the README's two Quick start commands.

    python3 quickstart.py demo [ARGS]   set up (with PyTorch; --no-torch skips it), run `sl1conf demo ARGS`,
                                        then certify the Cython kernel, the bundled sample C library and
                                        PyTorch's CPU kernel (eager, and through torch.compile: the
                                        first platform compiles 124 graphs, about 4 minutes on 2 cores,
                                        the others reuse them, about 70 s) on every platform profile:
                                        reports in reports/NAME-PLATFORM/ and their index reports/README.md
                                        (which lists every sweep certificate under reports/ too);
                                        then `sl1conf selftest --quick` on the host and for aarch64 under
                                        qemu-user: their matrices in docs/selftest.md
    python3 quickstart.py test [ARGS]   set up (with PyTorch, for its adapter's tests; --no-torch
                                        skips it and those tests), then run the tests in parallel
                                        (pytest -n auto ARGS)
    --with-mindspore (demo and test)    also install mindspore==2.10.0 (CPU, about 800 MB): demo
                                        certifies MindSpore's CPU kernel too, test runs its adapter's
                                        tests (CI does)
    --with-jax (demo and test)          also install jax==0.10.2 jaxlib==0.10.2 (CPU): demo certifies
                                        JAX's gradient (jax.vjp, compiled by XLA) too, test runs its
                                        adapter's tests (CI does)
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
MINDSPORE_STAMP = VENV / ".sl1conf-mindspore-stamp"
MINDSPORE = "mindspore==2.10.0"  # the version the MindSpore adapter is tested with (the CPU build, about 800 MB)
JAX_STAMP = VENV / ".sl1conf-jax-stamp"
JAX = ("jax==0.10.2", "jaxlib==0.10.2")  # the versions the JAX adapter is tested with
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


def setup(with_torch: bool = False, with_mindspore: bool = False, with_jax: bool = False) -> None:
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
    if with_mindspore and not (MINDSPORE_STAMP.exists() and MINDSPORE_STAMP.read_text() == MINDSPORE):
        if _run([python, "-m", "pip", "install", "--quiet", MINDSPORE], env) != 0:
            sys.exit(f"quickstart: installing {MINDSPORE} failed (leave out --with-mindspore to run without it)")
        MINDSPORE_STAMP.write_text(MINDSPORE)
    if with_jax and not (JAX_STAMP.exists() and JAX_STAMP.read_text() == " ".join(JAX)):
        if _run([python, "-m", "pip", "install", "--quiet", *JAX], env) != 0:
            sys.exit(f"quickstart: installing {' '.join(JAX)} failed (leave out --with-jax to run without it)")
        JAX_STAMP.write_text(" ".join(JAX))


REPORTS = ROOT / "reports"
IMPLEMENTATIONS = (("builtin:kernel", "kernel", "the Cython kernel of this suite", ()),
                   ("builtin:sample", "sample", "the bundled sample C library, through ctypes in a guarded worker", ()),
                   ("builtin:oracle-ftz", "oracle-ftz", "the exact (mpmath) oracle, flushing subnormals; edge families "
                    "only (--quick: its full run takes minutes)", ("--quick",)),
                   ("torch:cpu", "torch-cpu", "PyTorch's CPU kernel (smooth_l1_loss_backward)", ()),
                   ("torch:inductor", "torch-inductor", "PyTorch's CPU kernel through torch.compile (inductor)", ()),
                   ("mindspore:cpu", "mindspore-cpu", "MindSpore's CPU kernel (SmoothL1LossGrad)", ()),
                   ("jax:cpu", "jax-cpu", "JAX's gradient of the loss (jax.vjp), compiled by XLA on the CPU", ()))
PLATFORMS = ("ieee", "ft78ne", "mt7004")


def write_reports(with_torch: bool, with_mindspore: bool = False, with_jax: bool = False) -> int:
    """Certify every implementation on every platform into reports/NAME-PLATFORM/ (report.json,
    report.md, report.html, junit.xml), then write the index reports/README.md, with the sweep
    certificates found under reports/ (:func:`sweep_certificates`). A failing
    verdict is a finding, not an error of the demo: only exit status 2 (bad usage) fails it.
    An implementation left out (no torch, no --with-mindspore, no --with-jax) keeps the reports
    already there, listed in the index as from an earlier run."""
    import json

    code, rows, dirs = 0, [], []
    for impl, short, what, extra in IMPLEMENTATIONS:
        wanted = {"torch": with_torch, "mindspore": with_mindspore, "jax": with_jax}
        skipped = not wanted.get(impl.split(":")[0], True)
        for platform in PLATFORMS:
            out = REPORTS / f"{short}-{platform}"
            if skipped:
                if not (out / "report.json").exists():
                    continue
            else:
                rc = _run([BIN / "sl1conf", "certify", "--impl", impl, "--platform", platform, *extra, "--out", out],
                          _env())
                if rc not in (0, 1):
                    code = 1
                    continue
            report = json.loads((out / "report.json").read_text())
            largest = ", ".join(f"{r['dtype']} {r['variant']} {r['errors']['max_ulp']}" for r in report["runs"])
            failing = "; ".join(f"{r['dtype']} {r['variant']}: " + ", ".join(q["id"] for q in r["requirements"]
                                                                          if q["status"] == "fail")
                                for r in report["runs"] if r["verdict"] == "fail") or "none"
            rows.append(f"| {what}{' (an earlier run: not rerun by this demo)' if skipped else ''} | `{impl}` | {platform} | **{report['verdict'].upper()}** | {failing} | {largest} | "
                        f"[md]({out.name}/report.md) · [html]({out.name}/report.html) · "
                        f"[json]({out.name}/report.json) · [junit]({out.name}/junit.xml) |")
            dirs.append(out)
    compare = subprocess.run([str(BIN / "sl1conf"), "compare", *map(str, dirs)], cwd=ROOT, env=_env(),
                             capture_output=True, text=True)
    if compare.returncode:
        print(compare.stderr, file=sys.stderr)
        return 1
    failed, sweeps = sweep_certificates(REPORTS)
    code |= failed
    index = ["# Conformance reports", "",
             "Written by `python3 quickstart.py demo` (the README's main command); each folder holds",
             "`report.json` (the source of truth, [schema](../conformance/schemas/report.schema.json)),",
             "`report.md`, `report.html` (self-contained, with plots) and `junit.xml`.",
             "Re-render one with `sl1conf report DIR`; compare two with `sl1conf gate NEW --baseline OLD`.", "",
             "| implementation | `--impl` | platform | verdict | failed requirements | largest error (ULP) | report |",
             "|---|---|---|---|---|---|---|", *rows, "", *sweeps,
             "## Side by side", "", "`sl1conf compare reports/*/`:", "", compare.stdout.rstrip(), ""]
    _write_atomic(REPORTS / "README.md", "\n".join(index))
    print(f"quickstart: wrote {REPORTS / 'README.md'}", flush=True)
    return code


def sweep_certificates(reports: Path) -> tuple:
    """The index's section on the sweep certificates under ``reports`` (any ``certificate.json``
    at any depth, e.g. reports/sweeps/NAME/, a row each, as `sl1conf sweep index` renders them):
    (0, its lines; none when there is no certificate), or (1, no lines) when one is not a
    certificate (what sl1conf said is printed). Sweeps are not rerun by the demo (a full one takes
    minutes to hours): the certificates listed are the ones committed or left there."""
    found = subprocess.run([str(BIN / "sl1conf"), "sweep", "index", str(reports)], cwd=ROOT, env=_env(),
                           capture_output=True, text=True)
    if found.returncode:
        print(found.stderr, end="", file=sys.stderr)
        return 1, []
    table = found.stdout.splitlines()
    if not table:
        return 0, []
    return 0, ["## Sweep certificates", "",
               "Exhaustive fp16 sweeps (`sl1conf sweep`, [docs/sweeps.md](../docs/sweeps.md)): every element of",
               "the subset and dy planes named, for one beta, judged as certify judges. Not rerun by this demo;",
               "each folder holds `certificate.json` (the claim,",
               "[schema](../conformance/schemas/sweep-certificate.schema.json)) and `certificate.md`.",
               "", *table, ""]


def _write_atomic(path: Path, text: str) -> None:
    """``text`` into ``path`` whole or not at all (this script runs before sl1conf, and its
    common.files.write_atomic, is installed)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


SELFTEST_DOC = ROOT / "docs" / "selftest.md"
SELFTESTS = (
    # (the marker's name in docs/selftest.md, the tools it needs, sl1conf selftest's arguments)
    ("host", (), ()),
    ("qemu-aarch64", ("aarch64-linux-gnu-gcc", "qemu-aarch64"),
     ("--cc", "aarch64-linux-gnu-gcc", "--sim", "qemu-aarch64 -L /usr/aarch64-linux-gnu {harness} {case} {result}")),
)


def write_selftests() -> int:
    """Run `sl1conf selftest --quick` on the host and for aarch64 under qemu-user, and put each
    matrix (its selftest.md less the title and the members' descriptions) into docs/selftest.md between the lines
    `<!-- selftest:NAME -->` and `<!-- /selftest:NAME -->`. A run whose tools are missing keeps
    the matrix there; a broken self-test (exit 1) is written too, and fails the demo."""
    import shutil
    import tempfile

    code, text = 0, SELFTEST_DOC.read_text()
    for name, tools, args in SELFTESTS:
        if not all(shutil.which(t) for t in tools):
            print(f"quickstart: {', '.join(tools)} not installed: the {name} matrix in {SELFTEST_DOC} is kept")
            continue
        with tempfile.TemporaryDirectory() as out:
            rc = _run([BIN / "sl1conf", "selftest", "--quick", "--no-progress", *args, "--out", out], _env())
            if rc not in (0, 1):
                code = 1
                continue
            code |= rc
            # the matrix and what broke, less the title and the members' descriptions (the page has them)
            matrix = Path(out, "selftest.md").read_text().split("\n", 2)[2].split("What each member is:")[0].strip()
        start, end = f"<!-- selftest:{name} -->", f"<!-- /selftest:{name} -->"
        head, rest = text.split(start, 1)
        text = head + start + "\n" + matrix + "\n" + end + rest.split(end, 1)[1]
    _write_atomic(SELFTEST_DOC, text)
    print(f"quickstart: wrote the self-test matrices into {SELFTEST_DOC}", flush=True)
    return code


def main(argv) -> int:
    if not argv or argv[0] not in ("demo", "test", "bench"):
        print("usage: python3 quickstart.py demo|test|bench [ARGS]",
              file=sys.stderr)
        return 2
    with_torch = argv[0] in ("test", "demo") and "--no-torch" not in argv
    with_mindspore = argv[0] in ("test", "demo") and "--with-mindspore" in argv
    with_jax = argv[0] in ("test", "demo") and "--with-jax" in argv
    argv = [a for a in argv if a not in ("--no-torch", "--with-mindspore", "--with-jax")]
    setup(with_torch, with_mindspore, with_jax)
    if argv[0] == "demo":
        code = _run([BIN / "sl1conf", "demo", *argv[1:]], _env())
        return code | write_reports(with_torch, with_mindspore, with_jax) | write_selftests()
    if argv[0] == "bench":
        return _run([BIN / "python", "bench/run.py", *argv[1:]], _env())
    return _run([BIN / "python", "-m", "pytest", "-n", "auto", *argv[1:]], _env())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
