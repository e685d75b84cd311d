"""Guarded buffers: the array's end (or, in the "start" layout, its start) touches an inaccessible page;
canaries around the rest."""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys

import numpy as np
import pytest

from sl1conf.adapters.guard import CANARY, PAGE, GuardedArray


@pytest.mark.parametrize("nbytes", [0, 2, 6, 40, PAGE - 2, PAGE, PAGE + 4])
def test_end_touches_the_guard_page(nbytes):
    g = GuardedArray(nbytes)
    assert g.address + nbytes == g.hi_guard[0]
    assert g.where(g.hi_guard[0]) == "after" and g.where(g.lo_guard[1] - 1) == "before"
    assert g.where(g.address) is None or nbytes == 0
    assert g.canaries_intact()
    g.close()


def test_alignment_moves_the_start_and_leaves_canaries_after_the_end():
    g = GuardedArray(6, align=64)
    assert g.address % 64 == 0 and g.address + 6 <= g.hi_guard[0]
    a = g.array(np.uint16)
    a[:] = 0x1234  # writing the data itself disturbs no canary
    assert g.canaries_intact()
    ctypes.memset(g.address + 6, 0, 1)  # one byte past the end, before the guard page
    assert not g.canaries_intact()


def test_a_write_just_before_the_start_is_seen():
    g = GuardedArray(10)
    assert g.array(np.uint8).size == 10
    ctypes.memset(g.address - 1, CANARY ^ 0xFF, 1)
    assert not g.canaries_intact()


@pytest.mark.parametrize("where", ["g.address + 6", "g.lo_guard[0]"], ids=["past-end", "low-guard"])
def test_touching_a_guard_page_faults(where):
    """In a child process: a one-byte write past the end, or into the low guard, kills it."""
    code = ("import ctypes\n"
            "from sl1conf.adapters.guard import GuardedArray\n"
            "g = GuardedArray(6)\n"
            f"ctypes.memset({where}, 0, 1)\n"
            "print('survived')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGSEGV, proc.stdout + proc.stderr


@pytest.mark.parametrize("nbytes", [0, 2, 6, 40, PAGE - 2, PAGE, PAGE + 4])
@pytest.mark.parametrize("align", [1, 64])
def test_the_start_layout_puts_the_first_element_after_the_guard_page(nbytes, align):
    g = GuardedArray(nbytes, align=align, layout="start")
    assert g.address == g.lo_guard[1] and g.address % align == 0 and g.address + nbytes <= g.hi_guard[0]
    g.array(np.uint8)[:] = 7  # the data itself is no canary
    assert g.canaries_intact()
    if nbytes < PAGE:  # the slack after the end holds canaries
        ctypes.memset(g.address + nbytes, 0, 1)
        assert not g.canaries_intact()
    g.close()


def test_an_unknown_layout_is_refused():
    with pytest.raises(ValueError, match="layout"):
        GuardedArray(4, layout="middle")


@pytest.mark.parametrize("layout, faults", [("start", True), ("end", False)])
def test_a_read_one_byte_before_the_start_faults_only_in_the_start_layout(layout, faults):
    code = ("import ctypes\n"
            "from sl1conf.adapters.guard import GuardedArray\n"
            f"g = GuardedArray(6, layout={layout!r})\n"
            "ctypes.string_at(g.address - 1, 1)\n"
            "print('survived')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if faults:
        assert proc.returncode == -signal.SIGSEGV, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 0 and "survived" in proc.stdout, proc.stderr
