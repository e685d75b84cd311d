"""ProcessAdapter: an in-process adapter run in a worker process of its own survives what it
does (a crash, a hang), and restart() gives a process with nothing of the earlier calls."""

from __future__ import annotations

import numpy as np
import pytest

from sl1conf.adapters.base import AdapterError, Case
from sl1conf.adapters.process import ProcessAdapter

KERNEL = '''
import os, time
import numpy as np
from sl1conf.adapters.base import AdapterError, ArrayFunction

CALLS = [0]

class Kernel(ArrayFunction):
    """dx1 = dy, except: beta 2 ends the process, beta 3 hangs, beta 4 answers the calls made
    in this process so far (its history), beta 5 the process id."""
    variants = ("p",)

    def __init__(self, arg):
        if arg == "refuse":
            raise AdapterError("the kernel refuses to start")
        super().__init__("toy:" + arg)

    def compute(self, dy, x1, x2, beta, out_alias=None):
        CALLS[0] += 1
        if beta == 2:
            os._exit(3)
        if beta == 3:
            time.sleep(60)
        if beta == 4:
            return np.full(dy.shape, CALLS[0], dy.dtype)
        if beta == 5:
            return np.full(dy.shape, os.getpid(), dy.dtype)  # exact in float32: pids are below 2**22
        return dy
'''


@pytest.fixture
def factory(tmp_path, monkeypatch):
    (tmp_path / "toy_kernel.py").write_text(KERNEL)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the worker imports the factory's module
    return "toy_kernel:Kernel"


def _case(beta: float) -> Case:
    dy = np.array([1.0, 2.0, 3.0], np.float32).view(np.uint32)
    return Case("fp32", dy, dy, dy, int(np.float32(beta).view(np.uint32)))


def _value(outcome) -> float:
    return float(outcome.out.view(np.float32)[0])


def test_a_crash_and_a_hang_are_outcomes_and_the_next_call_is_answered(factory):
    with ProcessAdapter(factory, "x", timeout=2.0) as a:
        assert a.name == "toy:x" and a.variants == ("p",) and a.capabilities.isolated
        ok, crash, after, hang, last = a.run([_case(1), _case(2), _case(1), _case(3), _case(1)])
        assert ok.status == "ok" and _value(ok) == 1.0
        assert crash.status == "crash" and "exited with status 3" in crash.detail, crash.detail
        assert after.status == "ok" and hang.status == "timeout" and last.status == "ok"
        assert a.describe()["worker_restarts"] == 2


def test_restart_starts_a_process_with_no_history(factory):
    with ProcessAdapter(factory, "x") as a:
        history = [_value(o) for o in a.run([_case(4), _case(4), _case(4)])]
        pid = _value(a.run([_case(5)])[0])
        assert history == [1.0, 2.0, 3.0]
        assert a.restart() and a.calls_made == 0
        assert _value(a.run([_case(4)])[0]) == 1.0 and _value(a.run([_case(5)])[0]) != pid


def test_a_factory_that_refuses_is_one_clear_error(factory):
    with pytest.raises(AdapterError, match="the kernel refuses to start"):
        ProcessAdapter(factory, "refuse")
    with pytest.raises(AdapterError, match="No module named 'no_such_module'"):
        ProcessAdapter("no_such_module:Kernel", "")
