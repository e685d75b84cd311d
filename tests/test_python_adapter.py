"""``python:MODULE:FUNCTION`` and ``python:FILE.py:FUNCTION``: a plain Python function certified
without a package; its attributes say what it offers; every bad name is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from sl1conf.adapters import AdapterError, Case, load
from sl1conf.conformance.cli import main
from sl1conf.reference import fast_oracle
from sl1conf.reference import formats as F

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
KERNEL = (DATA / "my_kernel.py").read_text()


def _certify(capsys, tmp_path, impl, *extra):
    code = main(["certify", "--impl", impl, "--platform", "ieee", "--quick", *extra, "--out", str(tmp_path / "r")])
    out, err = capsys.readouterr()
    report = json.loads((tmp_path / "r" / "report.json").read_text()) if code in (0, 1) else None
    return code, out, err, report


def _failed(report):
    return {run["dtype"] + run["variant"]: sorted(q["id"] for q in run["requirements"] if q["status"] == "fail")
            for run in report["runs"]}


def _write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


# ---------------------------------------------------------------- certifying

def test_file_form_certifies_the_example_kernel(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the path is relative to the current directory
    code, out, err, report = _certify(capsys, tmp_path, "python:tests/data/my_kernel.py:grad", "--variant", "p")
    assert code == 0 and report["verdict"] == "pass", out + err
    assert sorted(run["dtype"] for run in report["runs"]) == ["fp16", "fp32"]
    assert report["implementation"]["source"] == str(DATA / "my_kernel.py")
    assert report["implementation"]["function"] == "grad"


def test_module_form_certifies_from_the_current_directory(capsys, tmp_path, monkeypatch):
    _write(tmp_path, "sl1_module_form_kernel.py", KERNEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "sl1_module_form_kernel", raising=False)
    code, out, err, report = _certify(capsys, tmp_path, "python:sl1_module_form_kernel:grad", "--dtype", "fp16")
    assert code == 0 and report["verdict"] == "pass", out + err
    assert sorted(run["variant"] for run in report["runs"]) == ["p", "s"]  # both variants by default
    assert str(tmp_path) not in sys.path  # the current directory was on sys.path for the import only


def test_a_defective_function_fails_r04(capsys, tmp_path, monkeypatch):
    """A kernel that answers 0 where x1 or x2 is NaN fails R04 ("a number where the result is NaN")
    and passes what it does right."""
    _write(tmp_path, "nan_as_zero.py", KERNEL + textwrap.dedent("""

        def nan_as_zero(dy, x1, x2, beta):
            out = grad(dy, x1, x2, beta)
            out[np.isnan(x1) | np.isnan(x2)] = 0
            return out
        """))
    monkeypatch.chdir(tmp_path)
    code, out, err, report = _certify(capsys, tmp_path, "python:nan_as_zero.py:nan_as_zero", "--variant", "p",
                                      "--dtype", "fp32")
    assert code == 1 and report["verdict"] == "fail"
    [run] = report["runs"]
    status = {q["id"]: q for q in run["requirements"]}
    assert status["R04"]["status"] == "fail" and status["R04"]["bulk"]["kind"] == "a number where the result is NaN"
    for ok in ("R02", "R03", "R05", "R13", "R15"):
        assert status[ok]["status"] == "pass", ok


# ---------------------------------------------------------------- attributes

def test_attributes_choose_dtypes_and_variants(tmp_path, monkeypatch):
    _write(tmp_path, "offers.py", KERNEL + textwrap.dedent("""
        dtypes = ("fp32",)          # the module's: every function here

        def p_only(dy, x1, x2, beta):
            return grad(dy, x1, x2, beta)
        p_only.variants = ("p",)    # the function's own, over the module's (none)

        def half(dy, x1, x2, beta):
            return grad(dy, x1, x2, beta)
        half.dtypes = "fp16"        # one name is a tuple of one
        """))
    monkeypatch.chdir(tmp_path)
    p_only, half, plain = (load(f"python:offers.py:{name}") for name in ("p_only", "half", "grad"))
    assert (p_only.dtypes, p_only.variants) == (("fp32",), ("p",))
    assert (half.dtypes, half.variants) == (("fp16",), ("s", "p"))
    assert (plain.dtypes, plain.variants) == (("fp32",), ("s", "p"))
    bits = np.array([1.0, 0.25], np.float32).view(np.uint32)
    beta = int(np.array([1.0], np.float32).view(np.uint32)[0])
    shared, private = p_only.run([Case("fp32", bits, bits, bits * 0, beta, variant=v) for v in ("s", "p")])
    assert shared.status == "unsupported" and private.status == "ok"
    want = F.to_bits(F.FP32, fast_oracle.smoothl1lossgrad(*Case("fp32", bits, bits, bits * 0, beta).floats()))
    assert (private.out == want).all()


def test_an_exception_is_the_calls_error_or_a_refusal(tmp_path, monkeypatch):
    _write(tmp_path, "raises.py", """
        class BadBeta(ValueError):
            pass

        def picky(dy, x1, x2, beta):
            raise BadBeta(f"beta {float(beta)} refused")
        picky.rejects = (BadBeta,)

        def broken(dy, x1, x2, beta):
            raise BadBeta("boom")
        """)
    monkeypatch.chdir(tmp_path)
    bits = np.array([1.0], np.float32).view(np.uint32)
    case = Case("fp32", bits, bits, bits, int(bits[0]))
    refused = load("python:raises.py:picky").run([case])[0]
    assert (refused.status, refused.detail) == ("rejected", "BadBeta: beta 1.0 refused")
    failed = load("python:raises.py:broken").run([case])[0]
    assert (failed.status, failed.detail, failed.out) == ("error", "BadBeta: boom", None)


# ---------------------------------------------------------------- bad names: one line, exit 2

BAD = {
    "python:nope.py:grad": "no such file 'nope.py' (a path is relative to the current directory",
    "python:sl1_no_such_module:grad": "no module named 'sl1_no_such_module'",
    "python:broken_import.py:grad": "importing broken_import.py failed: ModuleNotFoundError: No module named "
                                    "'sl1_missing_dependency'",
    "python:broken_syntax.py:grad": "importing broken_syntax.py failed: SyntaxError:",
    "python:broken_module:grad": "importing broken_module failed: ZeroDivisionError: division by zero",
    "python:good.py:nope": "good.py has no function 'nope' (it defines grad, helper)",
    "python:good.py:LIMIT": "good.py:LIMIT is not callable (its type is int)",
    "python:good.py": "name a module or file and a function after python:",
    "python:bad_attr.py:grad": "dtypes = ('fp64',): expected a non-empty subset of ('fp16', 'fp32')",
}


@pytest.fixture
def bad_files(tmp_path, monkeypatch):
    _write(tmp_path, "broken_import.py", "import sl1_missing_dependency\n")
    _write(tmp_path, "broken_syntax.py", "def grad(:\n")
    _write(tmp_path, "broken_module.py", "x = 1 / 0\n")
    _write(tmp_path, "good.py", "LIMIT = 3\n\ndef grad(dy, x1, x2, beta):\n    return dy\n\n"
                                "def helper():\n    pass\n")
    _write(tmp_path, "bad_attr.py", "dtypes = ('fp64',)\n\ndef grad(dy, x1, x2, beta):\n    return dy\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "broken_module", raising=False)
    return tmp_path


@pytest.mark.parametrize("impl", list(BAD))
def test_a_bad_name_is_one_line_and_exit_2(bad_files, capsys, impl):
    code = main(["certify", "--impl", impl, "--platform", "ieee", "--out", str(bad_files / "r")])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", out
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"sl1conf: error: --impl {impl}: ") and BAD[impl] in err, err
    assert not (bad_files / "r").exists()  # nothing written
    with pytest.raises(AdapterError):
        load(impl)


def test_the_command_prints_one_line_for_a_missing_file(tmp_path):
    """The installed command, as a user runs it: one line on stderr, exit 2, no traceback."""
    sl1conf = Path(sys.executable).with_name("sl1conf")
    done = subprocess.run([str(sl1conf), "certify", "--impl", "python:nope.py:grad", "--platform", "ieee",
                           "--out", "r"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"sl1conf: error: --impl python:nope.py:grad: no such file 'nope.py' "
                                        f"(a path is relative to the current directory, {tmp_path})"]
    assert not (tmp_path / "r").exists()


def test_the_issues_command_works_as_written_from_a_fresh_shell(tmp_path):
    """`sl1conf certify --impl python:tests/data/my_kernel.py:grad --platform ieee --variant p`,
    typed as it stands (no --out: the report goes to ./sl1conf-report), in a copy of the file's
    folder, by the installed command in a process of its own (here --quick: the full run is
    test_file_form_certifies_the_example_kernel's)."""
    (tmp_path / "tests" / "data").mkdir(parents=True)
    (tmp_path / "tests" / "data" / "my_kernel.py").write_text((DATA / "my_kernel.py").read_text())
    sl1conf = Path(sys.executable).with_name("sl1conf")
    done = subprocess.run([str(sl1conf), "certify", "--impl", "python:tests/data/my_kernel.py:grad", "--platform",
                           "ieee", "--variant", "p", "--quick"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "sl1conf-report" / "report.json").read_text())
    assert report["verdict"] == "pass" and {r["variant"] for r in report["runs"]} == {"p"}
