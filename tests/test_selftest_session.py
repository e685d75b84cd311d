"""The self-test opens each member's session as every command does (``certify.session.open_session``
through ``selftest.engine.member_session``): the platform its zoo.toml row names loaded by the one
loader, its build loaded as the implementation, and each problem said in the session's words,
naming the member's row. A build that cannot be loaded before anything long runs is one line, exit 2."""

from __future__ import annotations

import pytest

from sl1conf.conformance.certify.session import InputError
from sl1conf.conformance.cli import main
from sl1conf.conformance.selftest import engine
from sl1conf.conformance.selftest.zoo import Member


def _member(platform: str) -> Member:
    return Member(name="odd", kind="honest", platform=platform, what="")


def test_a_members_session_loads_its_platform_and_its_build():
    session = engine.member_session(_member("mt7004"), "builtin:kernel")
    with session.implementation as adapter:
        assert session.profile.name == "mt7004" and session.platform == "mt7004" and adapter.name


def test_a_members_problems_are_the_sessions_lines_naming_its_row(tmp_path):
    with pytest.raises(InputError, match=r"^zoo\.toml member odd: platform nosuch: unknown platform 'nosuch'"):
        engine.member_session(_member("nosuch"), "builtin:kernel")
    missing = tmp_path / "no.so"
    with pytest.raises(InputError) as caught:
        engine.member_session(_member("ieee"), f"ctypes:{missing}")
    assert str(caught.value) == f"zoo.toml member odd: impl ctypes:{missing}: no such library: {missing}"


def test_a_build_that_cannot_be_loaded_is_one_line_before_anything_runs(tmp_path, capsys, monkeypatch):
    """A compiler that makes something other than a loadable library (a cross compiler without --sim)."""
    garbage = tmp_path / "libzoo.so"
    garbage.write_text("not a shared library\n")
    monkeypatch.setattr(engine, "_build", lambda member, target, build_dir: garbage)
    code = main(["selftest", "--only", "correct", "--no-progress", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    said = f"sl1conf: error: zoo.toml member correct: impl ctypes:{garbage}?timeout=5: cannot load "
    assert err.startswith(said), err
    assert not (tmp_path / "out" / "selftest.json").exists()
