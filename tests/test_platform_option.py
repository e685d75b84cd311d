"""One meaning of ``--platform`` and ``--profile`` on every subcommand that judges (certify, fuzz,
sweep, vectors export) and in the plugin: ``--platform`` a built-in profile's name or a profile
.toml file, ``--profile FILE`` the same as ``--platform FILE``, at most one of the two, ieee's when
neither is given, and the same one line (exit 2, no traceback) naming the option and the problem
for an unknown name, a missing file or a malformed one (``common.platforms``,
``certify.session.open_session``)."""

from __future__ import annotations

import json
import re

import pytest

from sl1conf.conformance.certify.session import InputError, open_session, plugin_option
from sl1conf.conformance.cli import main
from sl1conf.conformance.common.platforms import DEFAULT_PLATFORM, chosen_platform

FP32_TOML = 'name = "mine"\ndtypes = ["fp32"]\nvariants = ["p"]\ncores = 2\n[max_ulp]\nfp32 = 2\n'
FP16_TOML = 'name = "mine16"\ndtypes = ["fp16"]\nvariants = ["p"]\ncores = 2\n[max_ulp]\nfp16 = 1\n'


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(code, err, *words):
    assert code == 2 and err.startswith("sl1conf: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and all(w in err for w in words), err


@pytest.fixture(scope="module")
def vector_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("vectors") / "set"
    assert main(["vectors", "generate", "--dtype", "fp32", "--families", "signed-zero", "--out", str(out)]) == 0
    return out


def commands(tmp_path, vector_set):
    """Each subcommand that takes --platform, up to the option (the rest of a run that would work)."""
    return {
        "certify": ["certify", "--impl", "builtin:kernel", "--quick", "--out", tmp_path / "c"],
        "fuzz": ["fuzz", "--impl", "builtin:kernel", "--elements", "256", "--batch-elements", "256",
                 "--out", tmp_path / "f"],
        "sweep": ["sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "1", "--subset", "x2=0x3c00",
                  "--out", tmp_path / "s"],
        "vectors export": ["vectors", "export", vector_set, "--format", "c-header", "--out", tmp_path / "v"],
    }


SUBCOMMANDS = ["certify", "fuzz", "sweep", "vectors export"]


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_an_unknown_name_is_one_line_naming_the_option(command, tmp_path, vector_set, capsys):
    code, _, err = cli(capsys, *commands(tmp_path, vector_set)[command], "--platform", "nosuch")
    one_line(code, err, "--platform nosuch: unknown platform 'nosuch'", "or give a .toml file")
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("command", SUBCOMMANDS)
@pytest.mark.parametrize("text, words", [
    ('name = "x"\ndtypes = [\n', "not valid TOML"),
    ('name = "x"\ndtypes = ["fp32"]\nvariants = ["p"]\ncores = 2\n', "max_ulp"),    # the schema's refusal
    ('dtypes = ["fp32", "fp16"]\nvariants = ["p"]\ncores = 2\n[max_ulp]\nfp32 = 2\n', "max_ulp.fp16"),
])
def test_a_malformed_file_is_one_line_naming_the_option_and_the_file(command, text, words, tmp_path, vector_set,
                                                                     capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    code, _, err = cli(capsys, *commands(tmp_path, vector_set)[command], "--platform", bad)
    one_line(code, err, f"--platform {bad}: {bad}: ", words)


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_a_missing_file_is_one_line(command, tmp_path, vector_set, capsys):
    missing = tmp_path / "no" / "such.toml"
    code, _, err = cli(capsys, *commands(tmp_path, vector_set)[command], "--platform", missing)
    one_line(code, err, f"--platform {missing}: {missing}: no such profile file")


def test_certify_takes_a_toml_file_for_platform(tmp_path, capsys):
    (tmp_path / "mine.toml").write_text(FP32_TOML)
    code, out, err = cli(capsys, "certify", "--impl", "builtin:kernel", "--quick", "--only", "R13",
                         "--platform", tmp_path / "mine.toml", "--out", tmp_path / "r", "--format", "md")
    assert code == 0 and err == "" and "on mine;" in out
    assert json.loads((tmp_path / "r" / "report.json").read_text())["profile"]["name"] == "mine"


def test_vectors_export_takes_a_toml_file_for_platform(tmp_path, vector_set, capsys):
    (tmp_path / "mine.toml").write_text(FP32_TOML)
    code, out, err = cli(capsys, "vectors", "export", vector_set, "--format", "c-header", "--out", tmp_path / "v",
                         "--platform", tmp_path / "mine.toml")
    assert code == 0 and err == "" and out.splitlines()[-1] == "the self-test judges as certify --platform mine does"
    assert '#define SL1_PROFILE_NAME "mine"' in (tmp_path / "v" / "sl1_vectors.h").read_text()


def test_fuzz_takes_a_toml_file_and_replays_under_it(tmp_path, capsys):
    profile = tmp_path / "mine.toml"
    profile.write_text(FP32_TOML)
    run = ["fuzz", "--impl", "builtin:kernel", "--elements", "256", "--batch-elements", "256", "--seed", "1"]
    code, _, err = cli(capsys, *run, "--platform", profile, "--out", tmp_path / "f")
    assert code == 0, err
    summary = json.loads((tmp_path / "f" / "summary.json").read_text())
    assert summary["campaign"]["platform"] == str(profile) and summary["campaign"]["dtypes"] == ["fp32"]
    assert cli(capsys, "fuzz", "replay", tmp_path / "f", "--batch", "0")[0] == 0
    profile.unlink()  # the platform the campaign recorded is gone: one line naming where it was recorded
    code, _, err = cli(capsys, "fuzz", "replay", tmp_path / "f", "--batch", "0")
    one_line(code, err, f"{tmp_path / 'f' / 'summary.json'}: platform {profile}: {profile}: no such profile file")


def test_sweep_takes_a_toml_file_for_platform(tmp_path, capsys):
    (tmp_path / "mine16.toml").write_text(FP16_TOML)
    code, out, err = cli(capsys, "sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "1",
                         "--subset", "x2=0x3c00", "--platform", tmp_path / "mine16.toml", "--out", tmp_path / "s")
    assert code == 0 and err == "" and "on mine16" in out, out
    state = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert state["config"]["platform"] == str(tmp_path / "mine16.toml")
    (tmp_path / "mine.toml").write_text(FP32_TOML)  # a profile without fp16: the same line as certify's
    code, _, err = cli(capsys, "sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "1",
                       "--subset", "x2=0x3c00", "--platform", tmp_path / "mine.toml", "--out", tmp_path / "t")
    one_line(code, err, f"--platform {tmp_path / 'mine.toml'}: profile mine has no fp16")


# ------------------------------------------------------------------ the one default

def test_without_platform_every_subcommand_uses_ieee(tmp_path, vector_set, capsys):
    code, out, _ = cli(capsys, "certify", "--impl", "builtin:kernel", "--quick", "--only", "R13", "--dtype", "fp32",
                       "--variant", "p", "--out", tmp_path / "r", "--format", "md")
    assert code == 0 and f"on {DEFAULT_PLATFORM};" in out
    code, _, err = cli(capsys, *commands(tmp_path, vector_set)["fuzz"], "--seed", "1", "--dtype", "fp32")
    assert code == 0, err
    assert json.loads((tmp_path / "f" / "summary.json").read_text())["campaign"]["platform"] == DEFAULT_PLATFORM
    assert cli(capsys, *commands(tmp_path, vector_set)["sweep"])[0] == 0
    assert json.loads((tmp_path / "s" / "sweep.json").read_text())["config"]["platform"] == DEFAULT_PLATFORM
    code, out, _ = cli(capsys, *commands(tmp_path, vector_set)["vectors export"])
    assert code == 0 and f"judges as certify --platform {DEFAULT_PLATFORM} does (the default" in out


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_platform_and_profile_together_are_one_line(command, tmp_path, vector_set, capsys):
    (tmp_path / "mine.toml").write_text(FP32_TOML)
    code, _, err = cli(capsys, *commands(tmp_path, vector_set)[command], "--platform", "ieee",
                       "--profile", tmp_path / "mine.toml")
    one_line(code, err, "give one of --platform NAME|FILE and --profile FILE, not both")
    assert list(tmp_path.iterdir()) == [tmp_path / "mine.toml"]  # nothing written


@pytest.mark.parametrize("command", ["certify", "fuzz", "sweep", "vectors export"])
def test_every_help_says_the_same(command, tmp_path, vector_set, capsys):
    argv = [str(a) for a in commands(tmp_path, vector_set)[command][:2 if command == "vectors export" else 1]]
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--platform NAME|FILE" in text and "a built-in profile (ieee, ft78ne, mt7004) or a profile .toml file" in text
    assert "--profile FILE a profile .toml file: the same as --platform FILE (give one of the two)" in text


def test_the_plugin_declares_the_same_two_options():
    from sl1conf.conformance.pytest_plugin import pytest_addoption

    declared = {}

    class Group:
        def addoption(self, flag, **keywords):
            declared[flag] = keywords

    class Parser:
        def getgroup(self, *_):
            return Group()

    pytest_addoption(Parser())
    assert declared["--sl1-platform"]["metavar"] == "NAME|FILE"
    assert "a built-in profile (ieee, ft78ne, mt7004) or a profile .toml file" in declared["--sl1-platform"]["help"]
    assert declared["--sl1-profile"]["help"] == ("a profile .toml file: the same as --sl1-platform FILE "
                                                 "(give one of the two)")


# ------------------------------------------------------------------ --profile FILE: --platform FILE's meaning

def _outcome(command, out):
    """What a run under the profile left: the profile it judged under, and what it recorded."""
    if command == "certify":
        return json.loads((out / "report.json").read_text())["profile"]["name"]
    if command == "fuzz":
        summary = json.loads((out / "summary.json").read_text())
        return summary["profile"]["name"], summary["campaign"]["platform"], summary["campaign"]["dtypes"]
    if command == "sweep":
        state = json.loads((out / "sweep.json").read_text())
        return state["summary"]["verdict"]["platform"], state["config"]["platform"]
    return (out / "sl1_vectors.h").read_text()


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_profile_file_means_what_platform_file_means(command, tmp_path, vector_set, capsys):
    toml = tmp_path / "mine.toml"
    toml.write_text(FP16_TOML if command == "sweep" else FP32_TOML)
    argv = commands(tmp_path, vector_set)[command]
    extra = {"certify": ["--only", "R13", "--format", "md"], "fuzz": ["--seed", "1"]}.get(command, [])
    got = {}
    for option in ("--platform", "--profile"):
        out = tmp_path / option.strip("-")
        run = [*argv[:-1], out, *extra, option, toml]
        code, text, err = cli(capsys, *run)
        assert code == 0 and "error" not in err, err
        said = re.sub(r"[\d.,]+ (M )?\w*/s\b|\d+(\.\d+)? ?s\b", "T", (text + err).replace(str(out), "OUT"))
        got[option] = _outcome(command, out), said  # the same, but for speeds and times
    assert got["--platform"] == got["--profile"]
    assert "mine" in str(got["--profile"][0]) or "mine" in got["--profile"][1]
    if command in ("fuzz", "sweep"):  # what the workers load again and the record keeps: the file's path
        assert str(toml) in got["--profile"][0]


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_a_missing_profile_file_is_one_line_naming_profile(command, tmp_path, vector_set, capsys):
    missing = tmp_path / "no" / "such.toml"
    code, _, err = cli(capsys, *commands(tmp_path, vector_set)[command], "--profile", missing)
    one_line(code, err, f"--profile {missing}: {missing}: no such profile file")
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_fuzz_replays_a_campaign_run_with_profile(tmp_path, capsys):
    (tmp_path / "mine.toml").write_text(FP32_TOML)
    run = ["fuzz", "--impl", "builtin:kernel", "--elements", "256", "--batch-elements", "256", "--seed", "1"]
    assert cli(capsys, *run, "--profile", tmp_path / "mine.toml", "--out", tmp_path / "f")[0] == 0
    assert cli(capsys, "fuzz", "replay", tmp_path / "f", "--batch", "0")[0] == 0
    code, _, err = cli(capsys, "fuzz", "--profile", tmp_path / "mine.toml", "replay", tmp_path / "f", "--batch", "0")
    one_line(code, err, "replay does not take --profile")


# ------------------------------------------------------------------ the loader itself

def test_the_rule_and_the_loader():
    said = lambda name: f"--{name}"  # noqa: E731
    assert chosen_platform(None, option=said, error=ValueError) == (DEFAULT_PLATFORM, f"--platform {DEFAULT_PLATFORM}")
    assert chosen_platform("x.toml", option=said, error=ValueError) == ("x.toml", "--platform x.toml")
    assert chosen_platform(None, "p.toml", option=said, error=ValueError) == ("p.toml", "--profile p.toml")
    with pytest.raises(ValueError, match="not both"):
        chosen_platform("ieee", "p.toml", option=said, error=ValueError)
    default = open_session()
    assert (default.profile.name, default.platform, default.given) == (DEFAULT_PLATFORM, DEFAULT_PLATFORM, False)
    assert default.implementation is None
    assert open_session("mt7004", dtypes=["fp16", "fp32"]).profile.name == "mt7004"
    with pytest.raises(InputError, match=r"^--sl1-platform nosuch: unknown platform 'nosuch'"):
        open_session("nosuch", option=plugin_option)
    with pytest.raises(InputError, match=r"^--platform ft78ne: profile ft78ne has no fp16"):
        open_session("ft78ne", dtypes=["fp16"])
    with pytest.raises(InputError, match=r"^give one of --sl1-platform NAME\|FILE and --sl1-profile FILE, not both$"):
        open_session("ieee", "p.toml", option=plugin_option)
    with pytest.raises(InputError, match=r"^--sl1-impl nosuch:x: "):
        open_session(impl="nosuch:x", option=plugin_option)
    session = open_session("ieee", impl="builtin:kernel")
    with session.implementation:
        assert session.given and session.implementation.name
