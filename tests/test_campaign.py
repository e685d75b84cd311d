"""The machinery fuzz and sweep share (search/campaign.py, search/ranges.py, shards.missing_shards)
and the pool they and the self-test run on (common/pool.py): the range codec round-trips and
rejects bad text, the checkpoint saves when it should and only then, each worker keeps one adapter
per run, a stopped pool ends its workers at once."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sl1conf.conformance.cli import main
from sl1conf.conformance.common import pool as common_pool
from sl1conf.conformance.search import campaign, ranges
from sl1conf.conformance.search.shards import Shard, missing_shards

ITEMS = st.sets(st.integers(0, 300), max_size=60)


# ------------------------------------------------------------------ ranges

@given(ITEMS)
def test_runs_expand_to_the_items_in_order(items):
    triples = ranges.runs(items)
    assert ranges.expand(triples) == sorted(items)
    assert all(stop > start and step >= 1 for start, stop, step in triples)


@given(ITEMS)
def test_ranges_text_reads_back(items):
    text = ranges.ranges_text(items)
    assert ranges.parse_ranges(text) == items
    assert ranges.RANGES_TEXT.fullmatch(text)


def test_a_shards_items_are_one_run_with_its_step():
    assert ranges.runs(Shard(2, 3).items(0, 8)) == [[1, 10, 3]]  # the fuzz summary of shard 2/3, 8 batches
    assert ranges.runs([1, 4, 7, 8]) == [[1, 10, 3], [8, 9, 1]]
    assert ranges.runs_text([[1, 10, 3], [8, 9, 1]]) == "1 to 7 every 3, 8"
    assert ranges.runs_text([]) == "none"


def test_ranges_text_is_runs_of_consecutive_items():
    assert ranges.ranges_text({0, 1, 2, 3, 7, 9, 10, 11, 12}) == "0-3,7,9-12"
    assert ranges.ranges_text({1, 4, 7}) == "1,4,7"  # a step is not written: the sweep state's format
    assert ranges.ranges_text(set()) == "" and ranges.parse_ranges("") == set()


@pytest.mark.parametrize("text, words", [("a", "is not ranges"), ("1-", "is not ranges"), ("-1", "is not ranges"),
                                         ("1,,2", "is not ranges"), (" 1", "is not ranges"),
                                         ("1-2-3", "is not ranges"), ("5-3", "the range 5-3 ends before it starts")])
def test_parse_ranges_rejects_bad_text(text, words):
    with pytest.raises(ValueError, match=words):
        ranges.parse_ranges(text)


def test_a_sweep_state_with_a_reversed_range_is_one_line(capsys, tmp_path):
    argv = ["sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "1", "--subset", "x2=0", "--out",
            str(tmp_path / "s")]
    assert main(argv) == 0
    path = tmp_path / "s" / "sweep.json"
    state = json.loads(path.read_text())
    state["done"] = "5-3"
    path.write_text(json.dumps(state))
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"sl1conf: error: {path} is not a readable sweep state (ValueError: the range 5-3 ends before " \
                  "it starts)\n"


def test_missing_shards_counts_what_each_would_have_run():
    assert missing_shards(3, ["2/3"], 8) == {"1/3": 3, "3/3": 2}
    assert missing_shards(3, ["1/3", "2/3", "3/3"], 8) == {}
    assert missing_shards(2, [], None) == {"1/2": None, "2/2": None}  # a timed campaign: unknown


# ------------------------------------------------------------------ the checkpoint

def test_the_checkpoint_saves_at_most_every_interval_and_once_at_the_end():
    saves = []
    with campaign.Checkpoint(lambda: saves.append(time.perf_counter()), every=3600.0) as checkpoint:
        for _ in range(5):
            checkpoint.changed()
        assert saves == []  # within the interval: nothing written yet
    assert len(saves) == 1  # the end writes what changed

    saves.clear()
    with campaign.Checkpoint(lambda: saves.append(1), every=0.0) as checkpoint:
        checkpoint.changed()
        checkpoint.changed()
    assert saves == [1, 1]  # every change written; nothing left for the end


def test_the_checkpoint_saves_on_an_error_and_not_when_nothing_changed():
    saves = []
    with pytest.raises(KeyboardInterrupt):
        with campaign.Checkpoint(lambda: saves.append(1), every=3600.0) as checkpoint:
            checkpoint.changed()
            raise KeyboardInterrupt
    assert saves == [1]
    with campaign.Checkpoint(lambda: saves.append(2), every=0.0):
        pass
    assert saves == [1]
    with campaign.Checkpoint(lambda: saves.append(3), every=3600.0, unsaved=True):
        pass  # a state never written is written once, as it is
    assert saves == [1, 3]


# ------------------------------------------------------------------ the worker's adapter

def test_a_worker_keeps_one_object_per_key_and_closes_the_last_one():
    closed, made = [], []

    def make(name):
        made.append(name)
        return name

    def in_a_thread():
        first = campaign.per_worker(("test", "a"), lambda: make("a"), closed.append)
        again = campaign.per_worker(("test", "a"), lambda: make("a again"), closed.append)
        other = campaign.per_worker(("test", "b"), lambda: make("b"), closed.append)
        assert (first, again, other) == ("a", "a", "b")

    worker = threading.Thread(target=in_a_thread)
    worker.start()
    worker.join()
    assert made == ["a", "b"] and closed == ["a"]  # made once per key; the earlier run's closed


# ------------------------------------------------------------------ the pool

def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs, as the system says (a zombie, or no such process, has
    ended). Not ``Process.is_alive()``: where the pool's manager thread reaped a worker while this
    thread joined it too, the Process object never learns its exit code and says it is alive."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_a_stopped_pool_ends_its_workers_at_once():
    started = time.monotonic()
    with common_pool.process_pool(2, stop=lambda: True) as pool:
        futures = [pool.submit(time.sleep, 60) for _ in range(2)]
        time.sleep(0.5)
        processes = list(pool._processes.values())
    assert time.monotonic() - started < 30  # not the minute the tasks would take
    assert _running(os.getpid())  # the check sees a running process as running
    assert processes and not any(_running(p.pid) for p in processes)
    assert all(f.cancelled() or f.exception() is not None for f in futures)


def test_a_pool_that_ends_normally_runs_its_tasks():
    with common_pool.process_pool(2) as pool:
        assert sorted(pool.map(abs, [-3, -1, 2])) == [1, 2, 3]
