"""``--profile`` takes a file on every command and in the plugin (``--sl1-profile``); ``--platform``
takes a built-in name or a file. ``--profile ft78ne`` where no file ft78ne is there once loaded the
built-in ft78ne: now it is one line, exit 2, naming the problem and the option that takes a name
(``common.platforms.profile_file_problem``, raised by ``certify.session.open_session``).
And a folder that shares a built-in's name (an ``--out ieee``) no longer hides that built-in."""

from __future__ import annotations

import pytest

from sl1conf.conformance.certify.session import InputError, open_session, plugin_option
from sl1conf.conformance.cli import main
from sl1conf.conformance.rules.profiles import load_profile

pytest_plugins = ["pytester"]

FP32_TOML = 'name = "mine"\ndtypes = ["fp32"]\nvariants = ["p"]\ncores = 2\n[max_ulp]\nfp32 = 2\n'


@pytest.fixture(scope="module")
def vector_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("vectors") / "set"
    assert main(["vectors", "generate", "--dtype", "fp32", "--families", "signed-zero", "--out", str(out)]) == 0
    return out


def _commands(out, vector_set) -> dict:
    """Each subcommand that takes --profile, up to the option (the rest of a run that would work)."""
    return {
        "certify": ["certify", "--impl", "builtin:kernel", "--quick", "--out", out / "c"],
        "fuzz": ["fuzz", "--impl", "builtin:kernel", "--elements", "256", "--batch-elements", "256", "--seed", "1",
                 "--out", out / "f"],
        "sweep": ["sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "1", "--subset", "x2=0x3c00",
                  "--out", out / "s"],
        "vectors export": ["vectors", "export", vector_set, "--format", "c-header", "--out", out / "v"],
    }


def _run(capsys, argv) -> tuple:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", ["certify", "fuzz", "sweep", "vectors export"])
def test_profile_with_a_builtin_name_is_one_line_suggesting_platform(command, tmp_path, vector_set, capsys,
                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)  # no file ft78ne here
    code, out, err = _run(capsys, [*_commands(tmp_path, vector_set)[command], "--profile", "ft78ne"])
    assert code == 2 and out == "" and "Traceback" not in err, err
    assert err == ("sl1conf: error: --profile ft78ne: ft78ne: no such profile file (--profile takes a profile "
                   ".toml file; ft78ne is a built-in profile: give --platform ft78ne)\n"), err
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("command", ["certify", "fuzz"])
def test_profile_with_an_unknown_name_is_one_line_without_a_suggestion(command, tmp_path, vector_set, capsys,
                                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, [*_commands(tmp_path, vector_set)[command], "--profile", "nosuch"])
    assert (code, err) == (2, "sl1conf: error: --profile nosuch: nosuch: no such profile file\n"), err


def test_platform_with_a_builtin_name_still_loads_it(tmp_path, vector_set, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, [*_commands(tmp_path, vector_set)["fuzz"], "--platform", "ft78ne"])
    assert code == 0 and "on ft78ne:" in out, err + out


def test_profile_reads_a_file_even_one_named_like_a_builtin(tmp_path, vector_set, capsys, monkeypatch):
    """A file called ft78ne is a file: ``--profile ft78ne`` reads it (profile "mine", fp32 only)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ft78ne").write_text(FP32_TOML)
    code, out, err = _run(capsys, [*_commands(tmp_path, vector_set)["fuzz"], "--profile", "ft78ne"])
    assert code == 0 and "on mine:" in out, err + out


def test_a_folder_named_like_a_builtin_does_not_hide_it(tmp_path, monkeypatch):
    """``--out ieee`` leaves a folder ieee behind; ``--platform ieee`` is still the built-in (it
    once said "ieee: no such profile file")."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ieee").mkdir()
    assert load_profile("ieee").name == "ieee" and load_profile("ieee").path.endswith("profiles/ieee.toml")
    assert open_session("ieee").profile.name == "ieee"
    with pytest.raises(InputError, match=r"^--profile ieee: ieee: no such profile file \(--profile takes"):
        open_session(None, "ieee")  # a folder is no profile file


def test_the_session_words_it_for_the_plugin(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as caught:
        open_session(None, "mt7004", option=plugin_option)
    assert str(caught.value) == ("--sl1-profile mt7004: mt7004: no such profile file (--sl1-profile takes a profile "
                                 ".toml file; mt7004 is a built-in profile: give --sl1-platform mt7004)")


@pytest.fixture
def _entry_points_load(monkeypatch):
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)


def test_the_plugin_turns_sl1_profile_with_a_builtin_name_into_a_usage_error(pytester, _entry_points_load):
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sl1-impl", "builtin:kernel", "--sl1-quick",
                                           "--sl1-profile", "ft78ne", timeout=300)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stderr.str()
    result.stderr.fnmatch_lines(["ERROR: --sl1-profile ft78ne: ft78ne: no such profile file (--sl1-profile takes a "
                                 "profile .toml file; ft78ne is a built-in profile: give --sl1-platform ft78ne)"])
    text = result.stderr.str() + result.stdout.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text
