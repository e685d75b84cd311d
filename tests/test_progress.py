"""common.progress: one tqdm line on a terminal (counts, elem/s, ETA, failures), nothing off one."""

from __future__ import annotations

import io

from sl1conf.conformance.common.progress import Progress


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_an_enabled_bar_shows_counts_elements_per_second_eta_and_failures():
    f = io.StringIO()
    with Progress("fuzz", 10, "batches", enabled=True, file=f, mininterval=0) as p:
        for i in range(10):
            p.update(elements=1_000_000, failures=i)
    text = f.getvalue()
    last = [line for line in text.split("\r") if line.strip()][-1]
    assert "fuzz:" in last and "10/10 batches" in last and "elem/s" in last and "9 failures" in last
    assert "<" in last  # elapsed<remaining: an ETA
    assert "\n" not in text  # one line, redrawn in place


def test_without_a_total_the_bar_shows_the_count_and_the_rate():
    f = io.StringIO()
    with Progress("fuzz", None, "batches", enabled=True, file=f, mininterval=0) as p:
        p.update(3, elements=5000, failures=1)
    last = [line for line in f.getvalue().split("\r") if line.strip()][-1]
    assert "3 batches" in last and "elem/s" in last and "1 failure" in last and "%" not in last


def test_updates_are_throttled():
    f = io.StringIO()
    p = Progress("sweep", 10_000, "blocks", enabled=True, file=f, mininterval=3600)
    drawn = len(f.getvalue())
    for _ in range(10_000):
        p.update(elements=10)
    assert len(f.getvalue()) == drawn  # nothing redrawn within mininterval
    p.close()
    assert "10000/10000" in f.getvalue()  # close draws the last counts


def test_a_disabled_bar_writes_nothing_and_update_is_a_no_op():
    f = io.StringIO()
    p = Progress("fuzz", 10, enabled=False, file=f)
    for _ in range(1000):
        p.update(1, elements=100, failures=3)
    p.close()
    assert f.getvalue() == "" and p._bar is None and p.elements == 0  # returned at the first line


def test_enabled_follows_the_file_being_a_terminal():
    assert not Progress("x", 1, file=io.StringIO()).enabled
    tty = Tty()
    with Progress("x", 1, file=tty) as p:
        assert p.enabled
    assert "x:" in tty.getvalue()


def test_write_puts_a_line_above_the_bar_or_a_plain_line_when_disabled(capsys):
    f = io.StringIO()
    with Progress("fuzz", 2, enabled=True, file=f) as p:
        p.write("fuzz: SIGINT: stopping")
    assert "fuzz: SIGINT: stopping\n" in f.getvalue()
    Progress("fuzz", 2, enabled=False).write("a plain line")
    assert capsys.readouterr().err == "a plain line\n"
