"""Shared test settings: hypothesis profiles.

``ci`` (chosen automatically when the CI variable is set, as .ci/run does) is
derandomized, so every CI run draws the same examples and a red run can be
reproduced; ``dev`` draws fresh examples each run. Choose one explicitly with
SL1CONF_HYPOTHESIS_PROFILE.
"""

import concurrent.futures.process  # noqa: F401 (imported before any test: below)
import os
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, settings

# Why concurrent.futures.process is imported above: the pytester fixture puts sys.modules back as it
# found it after its test, so a module first imported during such a test is dropped. concurrent.futures
# imports its process pool lazily and keeps the class it first got; where that happened inside a
# pytester test, a later test's process pool is the dropped copy's, whose functions and processes no
# longer pickle ("PicklingError: ... it's not the same object as concurrent.futures.process.
# _process_worker", or multiprocessing.context.SpawnProcess: tests/test_fuzz.py's local-workers test
# failed so once in a -n 2 run). Imported here, with multiprocessing, it is in every snapshot.

_COMMON = dict(
    deadline=None,  # the exact oracle is slow by design; timing is not what we test
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, **_COMMON)
settings.register_profile("dev", **_COMMON)
settings.load_profile(
    os.environ.get("SL1CONF_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


def _fpcsr():
    """The C helper (tests/data/fpcsr.c, built once into the build cache) that reads and sets the
    calling thread's MXCSR (x86) or FPCR (aarch64), or None: no compiler, or neither register."""
    import ctypes
    from pathlib import Path

    try:
        from sl1conf.adapters.cbuild import build_shared

        lib = ctypes.CDLL(str(build_shared("sl1-test-fpcsr", [Path(__file__).parent / "data" / "fpcsr.c"])))
    except Exception:  # no C compiler here: the guard is off (the tests that need one skip)
        return None
    lib.sl1_fpcsr_kind.restype = lib.sl1_fpcsr_get.restype = ctypes.c_ulong
    lib.sl1_fpcsr_set.argtypes = (ctypes.c_ulong,)
    return lib if lib.sl1_fpcsr_kind() else None


_FPCSR: list = []  # [the helper or None], made on first use


@pytest.fixture(autouse=True)
def _fp_environment_unchanged(request):
    """A test must leave pytest's main thread's floating-point mode as it found it. Why: MXCSR
    (FPCR on aarch64) is per thread and inherited by threads started later; a test that leaves
    flush-to-zero and denormals-are-zero (MXCSR 0x8040) switched on changes what later tests
    compute in this thread and in the threads they start (test_call_evidence's minus-infinity case
    failed so in a full run, and passed alone). Each test's mode is compared with the one before
    it (MXCSR's exception flags aside): a change is put back, and the test that made it fails at
    teardown, named, so the leak is found, not hidden."""
    if not _FPCSR:
        _FPCSR.append(_fpcsr())
    lib = _FPCSR[0]
    if lib is None:
        yield
        return
    status = 0x3F if lib.sl1_fpcsr_kind() == 1 else 0  # MXCSR's sticky exception flags: any arithmetic sets them
    before = lib.sl1_fpcsr_get() & ~status
    yield
    after = lib.sl1_fpcsr_get() & ~status
    if after != before:
        lib.sl1_fpcsr_set(before)
        register = "MXCSR" if lib.sl1_fpcsr_kind() == 1 else "FPCR"
        pytest.fail(f"{request.node.nodeid} left the main thread's {register} at {after:#x} (was {before:#x}; "
                    f"bits changed {after ^ before:#x}, FTZ|DAZ is 0x8040 on x86): put back, but the test "
                    "must not change it", pytrace=False)


def require_optional(module: str, install: str):
    """The optional dependency ``module`` (torch, mindspore), imported; a skip naming how to
    install it when it is absent, but a failure under CI, which installs every extra it tests."""
    import importlib

    import pytest

    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is not installed, but CI installs it ({install})")
        pytest.skip(f"{module} is not installed ({install})")


@pytest.fixture
def immutable(tmp_path):
    """An immutable empty folder (chattr +i; root on a file system that has the flag): what root
    cannot write in, where chmod does not stop it (CI runs as root)."""
    folder = tmp_path / "imm"
    folder.mkdir()
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is refused here (not root, or no such flag on this file system)")
    if os.access(folder, os.W_OK) and _can_create(folder):
        subprocess.run(["chattr", "-i", str(folder)])
        pytest.skip("an immutable folder is still writable here")
    yield folder
    subprocess.run(["chattr", "-i", str(folder)])


def _can_create(folder) -> bool:
    try:
        (folder / "probe").touch()
    except OSError:
        return False
    (folder / "probe").unlink()
    return True


def certify_library(tmp_path, lib: str, platform: str, *extra, out: str = "report") -> tuple:
    """``sl1conf certify`` of a C library through ctypes into ``tmp_path / out``: (exit code, the
    ids of the failed requirements, report.json). Shared by the tests of small C libraries."""
    import json

    from sl1conf.conformance.cli import main

    folder = tmp_path / out
    code = main(["certify", "--impl", f"ctypes:{lib}", "--platform", platform, *extra, "--out", str(folder)])
    report = json.loads((folder / "report.json").read_text())
    failed = {r["id"] for run in report["runs"] for r in run["requirements"] if r["status"] == "fail"}
    return code, failed, report


def requirement_entry(report: dict, rid: str) -> dict:
    """The first run's entry for requirement ``rid``."""
    return next(r for r in report["runs"][0]["requirements"] if r["id"] == rid)


@pytest.fixture(scope="module")
def cc() -> list:
    """The C compiler the suite builds with (adapters.cbuild.find_compiler); skips without one."""
    from sl1conf.adapters import AdapterError
    from sl1conf.adapters.cbuild import find_compiler

    try:
        return find_compiler()
    except AdapterError as exc:
        pytest.skip(str(exc))
