"""A hostile library through ctypes: every defect is reported for the case that caused it.

The sample library compiled with one deliberate defect (adapters/sample/smoothl1lossgrad.c)
runs through the ctypes adapter over a batch of cases of many lengths; only the case whose
length triggers the defect may be reported, with the right finding, and every other case
must still come back correct: the run survives crashes and hangs.
"""

from __future__ import annotations

import numpy as np
import pytest

from sl1conf.adapters import AdapterError, Case, load
from sl1conf.adapters.sample import build_library, defects
from sl1conf.reference import formats as F
from sl1conf.reference.models import evaluate

LENGTHS = (1, 12, 13, 17, 19, 23, 29, 31)


def _cases(dtype, variant):
    fmt = F.format_by_name(dtype)
    rng = np.random.default_rng(len(dtype) + len(variant))
    beta = int(np.array([1.0], fmt.dtype).view(fmt.uint)[0])
    out = []
    for n in LENGTHS:
        bits = rng.standard_normal((3, n)).astype(fmt.dtype).view(fmt.uint)
        out.append(Case(dtype, bits[0], bits[1], bits[2], beta, variant=variant, core_mask=0xFF, id=f"n{n}"))
    return out


# (defect, expected status, a check of the outcome)
FINDINGS = {
    "SEGV": ("crash", lambda o: "SIGSEGV" in o.detail and "NULL pointer" in o.detail),
    "HANG": ("timeout", lambda o: "no result within" in o.detail),
    "WRITE_PAST_END": ("crash", lambda o: o.fault == "write past the end of dx1"),
    "READ_PAST_END": ("crash", lambda o: o.fault == "read past the end of x1"),
    "CLOBBER_INPUT": ("ok", lambda o: o.inputs_changed == ("x2",)),
}


@pytest.mark.parametrize("variant", ["p", "s"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("defect", list(FINDINGS))
def test_each_defect_is_reported_for_its_case_and_the_run_goes_on(defect, dtype, variant):
    status, check = FINDINGS[defect]
    trigger = defects()[defect][1]
    lib = build_library(bug=defect)
    with load(f"ctypes:{lib}?timeout=1.5") as impl:
        cases = _cases(dtype, variant)
        outcomes = impl.run(cases)
        assert len(outcomes) == len(cases)
        for case, outcome in zip(cases, outcomes):
            if case.n == trigger:
                assert outcome.status == status, f"{defect} n={case.n}: {outcome}"
                assert check(outcome), f"{defect} n={case.n}: {outcome}"
            else:
                assert outcome.status == "ok", f"{defect} n={case.n}: {outcome.status} {outcome.detail}"
                want = F.to_bits(case.format, evaluate(f"divmul-{dtype}", *case.floats()))
                assert F.same_result(case.format, outcome.out, want).all(), f"{defect} n={case.n}"
                assert outcome.wrote_outside is False and outcome.inputs_changed == ()
        if status != "ok":
            assert impl.describe()["worker_restarts"] >= 1


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_a_read_before_the_start_faults_in_the_start_layout_only(dtype):
    """The sample's READ_BEFORE_START defect reads x1[-1]: canaries cannot see a read, so with
    each array's end at a guard page the call returns; with each start after one it faults,
    named after x1."""
    from dataclasses import replace

    trigger = defects()["READ_BEFORE_START"][1]
    with load(f"ctypes:{build_library(bug='READ_BEFORE_START')}") as impl:
        [case] = [c for c in _cases(dtype, "p") if c.n == trigger]
        end, start, other = impl.run([case, replace(case, guard="start"), replace(_cases(dtype, "p")[0], guard="start")])
    assert end.status == "ok" and end.fault is None
    assert start.status == "crash" and start.fault == "read before the start of x1", start
    assert other.status == "ok" and other.wrote_outside is False  # other lengths are clean in the start layout


def test_write_before_the_start_is_seen_by_the_canaries(tmp_path):
    src = tmp_path / "before.c"
    src.write_text("void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float b)\n"
                   "{ for (int i = 0; i < n; i++) dx1[i] = dy[i]; dx1[-1] = 0; }\n")
    from sl1conf.adapters.cbuild import build_shared
    lib = build_shared("before", [src])
    with load(f"ctypes:{lib}") as impl:
        [o] = impl.run([Case("fp32", np.ones(5, np.uint32), np.ones(5, np.uint32), np.ones(5, np.uint32), 0)])
    assert o.status == "ok" and o.wrote_outside is True


def test_in_place_use_over_each_input():
    lib = build_library()
    with load(f"ctypes:{lib}") as impl:
        base = _cases("fp16", "s")[-1]
        want = F.to_bits(base.format, evaluate("divmul-fp16", *base.floats()))
        for alias in ("dy", "x1", "x2"):
            c = Case("fp16", base.dy, base.x1, base.x2, base.beta, variant="s", out_alias=alias)
            [o] = impl.run([c])
            assert o.status == "ok" and F.same_result(c.format, o.out, want).all(), alias
            assert o.inputs_changed == ()  # the aliased input is dx1, the others stay


def test_alignment_option_aligns_every_array():
    lib = build_library()
    with load(f"ctypes:{lib}?align=64") as impl:
        assert impl.capabilities.alignment == 64
        outs = impl.run(_cases("fp32", "p"))
        assert all(o.status == "ok" and o.wrote_outside is False for o in outs)


@pytest.mark.parametrize("spec, words", [
    ("ctypes:/nonexistent/libx.so", "no such library"),
    ("ctypes:{lib}?align=3", "power of two"),
    ("ctypes:{lib}?timeout=-1", "positive"),
    ("ctypes:{lib}?colour=red", "unknown option"),
])
def test_bad_ctypes_names(spec, words):
    with pytest.raises(AdapterError, match=words):
        load(spec.format(lib=build_library()))


def test_library_without_the_api_and_unloadable_library(tmp_path):
    src = tmp_path / "other.c"
    src.write_text("int unrelated(void) { return 1; }\n")
    from sl1conf.adapters.cbuild import build_shared
    with pytest.raises(AdapterError, match="exports none of the documented functions"):
        load(f"ctypes:{build_shared('other', [src])}")
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"not an ELF file")
    with pytest.raises(AdapterError, match="cannot load"):
        load(f"ctypes:{junk}")


# ------------------------------------------------------------------ libraries that attack the worker
HOSTILE_COMMON = r"""
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void plain(float *dy, float *dx1, float *x1, float *x2, int n, float beta) {
  for (int i = 0; i < n; i++) { float d = x1[i] - x2[i]; dx1[i] = d > beta ? dy[i] : d < -beta ? -dy[i] : d / beta * dy[i]; }
}
static void attack(float *dx1, int n);
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta) {
  plain(dy, dx1, x1, x2, n, beta);
  if (n == 3) attack(dx1, n);
}
"""

HOSTILE = {
    # the library forks and both processes return: only the worker may answer
    "fork-both": ("static void attack(float *dx1, int n) { (void)dx1; (void)n; fork(); }", "ok", ""),
    # a signal to its whole process group: must not reach the suite
    "kill-group": ("static void attack(float *dx1, int n) { (void)dx1; (void)n; kill(0, SIGTERM); }",
                   "crash", "SIGTERM"),
    # aborts while a forked child keeps the result pipe open: a crash, not a timeout
    "fork-and-abort": ("static void attack(float *dx1, int n) { (void)dx1; (void)n;"
                       " if (fork() == 0) { sleep(30); _exit(0); } abort(); }", "crash", "SIGABRT"),
    # closes every descriptor (the result pipe too) and keeps running
    "close-fds": ("static void attack(float *dx1, int n) { (void)dx1; (void)n;"
                  " for (int fd = 3; fd < 256; fd++) close(fd); sleep(20); }", "crash", "result channel"),
    # exit() in the middle of a call
    "exit": ("static void attack(float *dx1, int n) { (void)dx1; (void)n; exit(0); }",
             "crash", "exited with status 0 during the call"),
    # replaces the suite's SIGSEGV handler at load time, then writes past the end
    "own-segv-handler": ("static void h(int s) { (void)s; _exit(77); }\n"
                         "__attribute__((constructor)) static void c(void) { signal(SIGSEGV, h); }\n"
                         "static void attack(float *dx1, int n) { dx1[n] = 1; }", "crash", "write past the end of dx1"),
    # floods stdout and stderr: nothing reaches the terminal, results are fine
    "noisy": ("static void attack(float *dx1, int n) { (void)dx1; (void)n;"
              " for (int i = 0; i < 1000; i++) printf(\"noise %d\\n\", i); fflush(stdout); }", "ok", ""),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_libraries_are_reported_and_contained(name, tmp_path, capfd):
    from sl1conf.adapters.cbuild import build_shared

    body, status, words = HOSTILE[name]
    src = tmp_path / f"{name}.c"
    src.write_text(HOSTILE_COMMON + body + "\n")
    lib = build_shared(f"hostile-{name}", [src])
    with load(f"ctypes:{lib}?timeout=5") as impl:
        cases = [Case("fp32", *(np.full(n, v, np.uint32) for v in (0x3F800000, 0x40000000, 0)), 0x3F800000,
                      id=f"n{n}") for n in (2, 3, 4, 5)]
        outcomes = impl.run(cases)
    for case, outcome in zip(cases, outcomes):
        if case.n == 3:
            assert outcome.status == status and words in outcome.detail, f"{name}: {outcome}"
        else:  # x1 - x2 = 2 > beta = 1: dx1 = dy = 1.0 everywhere
            assert outcome.status == "ok" and (outcome.out == 0x3F800000).all(), f"{name} n={case.n}: {outcome}"
    out, err = capfd.readouterr()
    assert "noise" not in out + err


def test_a_library_that_dies_or_hangs_while_loading(tmp_path):
    from sl1conf.adapters.cbuild import build_shared

    for name, ctor, words in (("ctor-exit", "_exit(0);", "loading it ended the worker (exited with status 0)"),
                              ("ctor-hang", "sleep(1000);", "did not finish within 2 s")):
        src = tmp_path / f"{name}.c"
        src.write_text(HOSTILE_COMMON + f"__attribute__((constructor)) static void c(void) {{ {ctor} }}\n"
                       "static void attack(float *dx1, int n) { (void)dx1; (void)n; }\n")
        with pytest.raises(AdapterError, match=words.replace("(", r"\(").replace(")", r"\)")):
            load(f"ctypes:{build_shared(name, [src])}?start_timeout=2")


COUNTER = r"""
static int calls;  /* the library's own state: 0 in a fresh process */
static float *volatile nowhere;  /* a pointer the compiler cannot see through: a real crash */
void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float beta)
{
    (void)dy; (void)x1; (void)x2; (void)beta;
    if (n == 3) *nowhere = 1.0f;
    for (int i = 0; i < n; i++) dx1[i] = (float)calls;
    calls++;
}
"""


def test_a_replaced_worker_is_a_fresh_process_and_the_fork_server_can_die(tmp_path):
    """Workers come from a fork server that never loads the library (each worker loads it after
    the fork), so the library's state starts afresh after a crash, as in a new interpreter; and
    when the fork server itself is gone the adapter goes on with fresh interpreters."""
    import os
    import signal

    from sl1conf.adapters.cbuild import build_shared
    from sl1conf.adapters.isolation import _FORKS

    src = tmp_path / "counter.c"
    src.write_text(COUNTER)
    lib = build_shared("isolation-counter", [src])
    one = np.array([0x3F800000], np.uint32)
    case = lambda n, cid: Case("fp32", np.repeat(one, n), np.repeat(one, n), np.repeat(one, n), 0x3F800000,  # noqa: E731
                               id=cid)
    with load(f"ctypes:{lib}") as impl:
        got = [o.out[0] if o.status == "ok" else o.status for o in impl.run([case(1, "a"), case(1, "b"), case(3, "c"),
                                                                            case(1, "d"), case(1, "e")])]
        assert got == [0x00000000, 0x3F800000, "crash", 0x00000000, 0x3F800000]  # 0.0, 1.0, crash, 0.0 again
        worker = impl.worker
        assert (worker._server is not None) == _FORKS
        if worker._server is not None:
            os.kill(worker._server.proc.pid, signal.SIGKILL)
            worker._server.proc.wait(5)
        got = [o.out[0] if o.status == "ok" else o.status for o in impl.run([case(3, "f"), case(1, "g")])]
        assert got == ["crash", 0x00000000] and worker._server is None
