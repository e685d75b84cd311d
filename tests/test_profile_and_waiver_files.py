"""Profile and waiver files (issue 16, items 3 and 4): checked completely, against the committed
schemas (conformance/schemas/profile.schema.json and waiver.schema.json) and then for what a
schema cannot say, before anything runs. Every problem is one line naming the file and the
field: a ProfileError or WaiverError, exit 2 from the CLI, a usage error under the pytest
plugin; never a traceback, a value coerced into another type, or a failure after the run.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sl1conf.conformance.certify.waivers import WaiverError, load_waivers
from sl1conf.conformance.cli import main
from sl1conf.conformance.common.jsonfiles import schema, validate
from sl1conf.conformance.requirements import CATALOG
from sl1conf.conformance.rules.profiles import (
    PROFILE_DIR, Profile, ProfileError, builtin_profiles, load_profile,
)
from sl1conf.conformance.vectors.families import FAMILY_NAMES

pytest_plugins = ["pytester"]

VALID = {"name": "mine", "title": "My board", "description": "a test profile", "dtypes": ["fp16", "fp32"],
         "variants": ["s", "p"], "cores": 4, "flush_to_zero": "accepted", "strict_zero_sign": False,
         "max_ulp": {"fp16": 2, "fp32": 3}, "assumptions": {"cores": "Assumption: 4 cores."}}


# ------------------------------------------------------------------ writing TOML (tomllib reads only)

def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)  # JSON's escapes are TOML's (the strings drawn here stay in the BMP)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf else repr(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def toml(doc: dict) -> str:
    return "".join(f"{json.dumps(k)} = {_value(v)}\n" for k, v in doc.items())


def profile_file(folder: Path, doc: dict, name: str = "p.toml") -> Path:
    path = folder / name
    path.write_text(toml(doc))
    return path


def changed(**fields) -> dict:
    """VALID with ``fields`` set (None: removed); ``max_ulp__fp16=...`` sets one entry of a table."""
    doc = json.loads(json.dumps(VALID))
    for key, value in fields.items():
        table, _, sub = key.partition("__")
        target, key = (doc[table], sub) if sub else (doc, table)
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
    return doc


# ------------------------------------------------------------------ bad profiles: (document, the field named)

BAD_PROFILES = {
    # tracebacks before
    "assumptions a string": (changed(assumptions="none"), "assumptions"),
    "assumptions a list": (changed(assumptions=[1, 2]), "assumptions"),
    "dtypes a nested list": (changed(dtypes=[["fp16"]]), "dtypes"),
    "variants a nested list": (changed(variants=[["s"]]), "variants"),
    "max_ulp a list": (changed(max_ulp=[2, 3]), "max_ulp"),
    # coerced or accepted silently before
    "strict_zero_sign a string": (changed(strict_zero_sign="false"), "strict_zero_sign"),
    "strict_zero_sign a number": (changed(strict_zero_sign=0), "strict_zero_sign"),
    "cores a boolean": (changed(cores=True), "cores"),
    "cores a float": (changed(cores=4.0), "cores"),
    "cores a string": (changed(cores="8"), "cores"),
    "max_ulp a boolean": (changed(max_ulp__fp16=True), "max_ulp.fp16"),
    "max_ulp a float": (changed(max_ulp__fp16=2.0), "max_ulp.fp16"),
    "max_ulp a string": (changed(max_ulp__fp32="3"), "max_ulp.fp32"),
    "max_ulp for an unknown dtype": (changed(max_ulp__fp64=3), "max_ulp.fp64"),
    "dtypes repeated": (changed(dtypes=["fp16", "fp16"]), "dtypes"),
    "variants repeated": (changed(variants=["p", "p"]), "variants"),
    "name a list": (changed(name=["x"]), "name"),
    "name empty": (changed(name=""), "name"),
    "name two lines": (changed(name="a\nb"), "name"),
    "title a number": (changed(title=7), "title"),
    "title two lines": (changed(title="a\r\nb"), "title"),
    "description a table": (changed(description={"a": "b"}), "description"),
    "assumptions holding a number": (changed(assumptions__cores=8), "assumptions.cores"),
    "assumptions about an unknown field": (changed(assumptions__colour="blue"), "assumptions.colour"),
    "assumptions holding an empty text": (changed(assumptions__cores=""), "assumptions.cores"),
    # refused before too, still one line naming the field
    "dtypes unknown": (changed(dtypes=["fp61"]), "dtypes"),
    "dtypes empty": (changed(dtypes=[]), "dtypes"),
    "dtypes a string": (changed(dtypes="fp16"), "dtypes"),
    "variants unknown": (changed(variants=["q"]), "variants"),
    "variants empty": (changed(variants=[]), "variants"),
    "cores 0": (changed(cores=0), "cores"),
    "cores 33": (changed(cores=33), "cores"),
    "cores negative": (changed(cores=-1), "cores"),
    "flush_to_zero unknown": (changed(flush_to_zero="sometimes"), "flush_to_zero"),
    "flush_to_zero a boolean": (changed(flush_to_zero=True), "flush_to_zero"),
    "max_ulp negative": (changed(max_ulp__fp32=-1), "max_ulp.fp32"),
    "max_ulp missing a dtype": (changed(max_ulp__fp16=None), "max_ulp.fp16"),
    "max_ulp missing": (changed(max_ulp=None), "max_ulp"),
    "cores missing": (changed(cores=None), "cores"),
    "dtypes missing": (changed(dtypes=None), "dtypes"),
    "an unknown key": (changed(colour="blue"), "colour"),
}


@pytest.mark.parametrize("doc, field", BAD_PROFILES.values(), ids=list(BAD_PROFILES))
def test_a_bad_profile_is_one_line_naming_the_file_and_the_field(doc, field, tmp_path):
    path = profile_file(tmp_path, doc)
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    message = str(info.value)
    assert len(message.splitlines()) == 1 and message.startswith(f"{path}: "), message
    assert re.search(rf": {re.escape(field)}(\[\d+\])?: ", message), message


def test_an_unknown_key_is_named_with_the_keys_there_are(tmp_path):
    message = str(pytest.raises(ProfileError, load_profile, str(profile_file(tmp_path, changed(colour="blue")))).value)
    assert message == (f"{tmp_path / 'p.toml'}: colour: unknown key (the keys are name, title, description, dtypes, "
                       "variants, cores, flush_to_zero, strict_zero_sign, max_ulp, error_model, assumptions)")
    message = str(pytest.raises(ProfileError, load_profile,
                                str(profile_file(tmp_path, changed(colour="blue", size=3)))).value)
    assert "unknown keys colour, size (" in message


@pytest.mark.parametrize("doc, words", [
    (changed(cores=True), "cores: must be a whole number, not true"),
    (changed(cores=33), "cores: must be 1 to 32, not 33"),
    (changed(strict_zero_sign="false"), 'strict_zero_sign: must be true or false, not "false"'),
    (changed(max_ulp__fp16=True), "max_ulp.fp16: must be a whole number, not true"),
    (changed(max_ulp__fp16=2.0), "max_ulp.fp16: must be a whole number, not 2.0"),
    (changed(dtypes=["fp16", "fp16"]), 'dtypes: lists "fp16" more than once'),
    (changed(dtypes=[["fp16"]]), 'dtypes[0]: must be one of fp16, fp32, not ["fp16"]'),
    (changed(name=["x"]), 'name: must be a string, not ["x"]'),
    (changed(assumptions="none"), 'assumptions: must be a table, not "none"'),
    (changed(max_ulp__fp16=None), "max_ulp.fp16: missing (dtypes lists fp16"),
])
def test_messages_say_it_in_toml(doc, words, tmp_path):
    """TOML's spelling (true, a list in brackets), not Python's (True, ['x'])."""
    assert words in str(pytest.raises(ProfileError, load_profile, str(profile_file(tmp_path, doc))).value)


def test_a_file_that_is_not_toml_is_one_line(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('name = "x\ncores = 2\n')
    message = str(pytest.raises(ProfileError, load_profile, str(path)).value)
    assert len(message.splitlines()) == 1 and "not valid TOML" in message


def test_the_valid_profile_loads_with_its_values_and_defaults(tmp_path):
    profile = load_profile(str(profile_file(tmp_path, VALID)))
    assert (profile.name, profile.title, profile.cores, profile.dtypes, profile.variants) == (
        "mine", "My board", 4, ("fp16", "fp32"), ("s", "p"))
    assert profile.flush_to_zero == "accepted" and profile.strict_zero_sign is False
    assert profile.max_ulp == {"fp16": 2, "fp32": 3} and profile.assumptions == VALID["assumptions"]
    minimal = {k: VALID[k] for k in ("dtypes", "variants", "cores", "max_ulp")}
    profile = load_profile(str(profile_file(tmp_path, minimal, "bare.toml")))
    assert (profile.name, profile.title, profile.description) == ("bare", "bare", "")
    assert (profile.flush_to_zero, profile.strict_zero_sign, profile.assumptions) == ("forbidden", False, {})
    # a budget for a dtype not listed is allowed and not kept
    narrow = load_profile(str(profile_file(tmp_path, changed(dtypes=["fp32"]), "narrow.toml")))
    assert narrow.max_ulp == {"fp32": 3}


@pytest.mark.parametrize("name", ["ieee", "ft78ne", "mt7004"])
def test_the_builtin_profiles_match_the_schema(name):
    import tomllib

    assert name in builtin_profiles()
    validate(tomllib.loads((PROFILE_DIR / f"{name}.toml").read_text()), "profile.schema.json", ValueError, name)
    _check_types(load_profile(name))


def test_the_schemas_are_draft_2020_12_and_closed():
    import jsonschema

    for name in ("profile.schema.json", "waiver.schema.json"):
        doc = schema(name)
        assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(doc)
    assert schema("profile.schema.json")["additionalProperties"] is False
    assert schema("waiver.schema.json")["$defs"]["waiver"]["additionalProperties"] is False


def test_docs_document_every_field_of_both_schemas():
    doc = (Path(__file__).resolve().parent.parent / "docs" / "conformance.md").read_text()
    rows = {line.split("|")[1].strip() for line in doc.splitlines() if line.startswith("| `")}
    profile = schema("profile.schema.json")["properties"]
    want = {f"`{k}`" for k in profile if k not in ("max_ulp", "assumptions")} | {"`max_ulp`", "`max_ulp.<dtype>`",
                                                                                  "`[assumptions]`"}
    want |= {f"`{k}`" for k in schema("waiver.schema.json")["$defs"]["waiver"]["properties"]} | {"`[[waiver]]`"}
    assert want <= rows, want - rows
    assert "profile.schema.json" in doc and "waiver.schema.json" in doc


@pytest.mark.parametrize("depth", [100, 5000])
def test_deeply_nested_values_are_one_line_too(depth, tmp_path):
    deep = "[" * depth + "]" * depth
    path = tmp_path / "p.toml"
    path.write_text(toml(changed(name=None)) + f"name = {deep}\n")
    message = str(pytest.raises(ProfileError, load_profile, str(path)).value)
    assert len(message.splitlines()) == 1 and len(message) < 300, message
    path = tmp_path / "w.toml"
    path.write_text(f'[[waiver]]\nid = "R05"\nreason = {deep}\n')
    message = str(pytest.raises(WaiverError, load_waivers, path).value)
    assert len(message.splitlines()) == 1 and len(message) < 300, message


# ------------------------------------------------------------------ the CLI: exit 2, one line, nothing written

def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("doc, field", BAD_PROFILES.values(), ids=list(BAD_PROFILES))
def test_certify_with_a_bad_profile_exits_2_with_one_line_and_writes_nothing(doc, field, capsys, tmp_path):
    path = profile_file(tmp_path, doc)
    out = tmp_path / "out"
    code, text, err = _cli(capsys, "certify", "--impl", "builtin:kernel", "--profile", path, "--quick", "--out", out)
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("sl1conf: error: "), err
    assert "Traceback" not in err + text and str(path) in err and field.split(".")[0] in err
    assert not out.exists()


@pytest.mark.parametrize("doc", [changed(assumptions="none"), changed(dtypes=[["fp16"]]), changed(cores=True)])
def test_fuzz_and_sweep_with_a_bad_profile_exit_2_with_one_line(doc, capsys, tmp_path):
    path = profile_file(tmp_path, doc)
    for argv in (["fuzz", "--impl", "builtin:kernel", "--platform", path, "--elements", "100", "--out", tmp_path / "f"],
                 ["sweep", "--impl", "builtin:kernel", "--beta", "1", "--dy", "0.7", "--subset", "around-beta:4",
                  "--platform", path, "--out", tmp_path / "s"]):
        code, text, err = _cli(capsys, *argv)
        assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err + text, (argv[0], err)
        assert str(path) in err


# ------------------------------------------------------------------ waivers

def waiver_file(folder: Path, *tables: dict, extra: str = "") -> Path:
    path = folder / "waivers.toml"
    path.write_text(extra + "".join("[[waiver]]\n" + "".join(f"{k} = {_value(v)}\n" for k, v in t.items())
                                    for t in tables))
    return path


GOOD_WAIVER = {"id": "R05", "families": ["signed-zero"], "dtypes": ["fp16"], "variants": ["s"],
               "reason": "the board's libm returns +0 for -0 results (BUG-123)"}

BAD_WAIVERS = {
    "id a list": ({"id": ["R05"], "reason": "r"}, "id"),
    "id a table": ({"id": {"a": 1}, "reason": "r"}, "id"),
    "id a number": ({"id": 5, "reason": "r"}, "id"),
    "id unknown": ({"id": "R99", "reason": "r"}, "id"),
    "id missing": ({"reason": "r"}, "id"),
    "dtypes unknown": ({**GOOD_WAIVER, "dtypes": ["fp61"]}, "dtypes"),
    "dtypes a string": ({**GOOD_WAIVER, "dtypes": "fp16"}, "dtypes"),
    "dtypes empty": ({**GOOD_WAIVER, "dtypes": []}, "dtypes"),
    "dtypes repeated": ({**GOOD_WAIVER, "dtypes": ["fp16", "fp16"]}, "dtypes"),
    "variants unknown": ({**GOOD_WAIVER, "variants": ["x"]}, "variants"),
    "variants nested": ({**GOOD_WAIVER, "variants": [["s"]]}, "variants"),
    "families unknown": ({**GOOD_WAIVER, "families": ["signed-zeros"]}, "families"),
    "families numbers": ({**GOOD_WAIVER, "families": [1]}, "families"),
    "reason missing": ({"id": "R05"}, "reason"),
    "reason blank": ({"id": "R05", "reason": "   "}, "reason"),
    "reason a number": ({"id": "R05", "reason": 1}, "reason"),
    "an unknown key": ({**GOOD_WAIVER, "until": "2026"}, "until"),
}


@pytest.mark.parametrize("table, field", BAD_WAIVERS.values(), ids=list(BAD_WAIVERS))
def test_a_bad_waiver_is_one_line_naming_the_file_the_waiver_and_the_field(table, field, tmp_path):
    path = waiver_file(tmp_path, GOOD_WAIVER, table)
    with pytest.raises(WaiverError) as info:
        load_waivers(path)
    message = str(info.value)
    assert len(message.splitlines()) == 1 and message.startswith(f"{path}: waiver 2"), message
    assert f": {field}" in message, message


@pytest.mark.parametrize("text, words", [
    ('waiver = 1\n', "waiver: must be a list, not 1"),
    ('other = 1\n', "other: unknown key (the keys are waiver)"),
    ('waiver = [1]\n', "waiver 1: must be a table, not 1"),
    ('[[waiver]]\nid = "R05\n', "not valid TOML"),
])
def test_a_bad_waiver_file_is_one_line(text, words, tmp_path):
    path = tmp_path / "w.toml"
    path.write_text(text)
    message = str(pytest.raises(WaiverError, load_waivers, path).value)
    assert len(message.splitlines()) == 1 and words in message, message


def test_good_waivers_load_as_the_dicts_certify_uses(tmp_path):
    waivers = load_waivers(waiver_file(tmp_path, GOOD_WAIVER, {"id": "R03", "reason": "BUG-1"}))
    assert waivers == [GOOD_WAIVER, {"id": "R03", "reason": "BUG-1"}]
    assert load_waivers(waiver_file(tmp_path)) == []  # an empty file waives nothing
    every = {"id": "R01", "families": list(FAMILY_NAMES), "reason": "r"}
    assert load_waivers(waiver_file(tmp_path, every, *({"id": r.id, "reason": "r"} for r in CATALOG)))


def test_waiver_messages_name_the_unknown_id_and_family(tmp_path):
    message = str(pytest.raises(WaiverError, load_waivers, waiver_file(tmp_path, {"id": "R99", "reason": "x"})).value)
    assert "waiver 1: id: unknown requirement id 'R99' (the catalog has R01 to R18)" in message
    bad = {**GOOD_WAIVER, "families": ["signed-zeros"]}
    message = str(pytest.raises(WaiverError, load_waivers, waiver_file(tmp_path, bad)).value)
    assert 'waiver 1 (R05): families: unknown family "signed-zeros"' in message and "signed-zero," in message


@pytest.mark.parametrize("table", [BAD_WAIVERS["id a list"][0], BAD_WAIVERS["id a table"][0],
                                   BAD_WAIVERS["dtypes unknown"][0]])
def test_certify_with_bad_waivers_exits_2_with_one_line(table, capsys, tmp_path):
    path = waiver_file(tmp_path, table)
    code, text, err = _cli(capsys, "certify", "--impl", "builtin:kernel", "--platform", "ieee", "--quick",
                           "--waivers", path, "--out", tmp_path / "out")
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err + text and str(path) in err, err
    assert not (tmp_path / "out" / "report.json").exists()


# ------------------------------------------------------------------ the pytest plugin: a usage error

@pytest.fixture
def _entry_points_load(monkeypatch):
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)


def test_the_pytest_plugin_turns_a_bad_profile_or_waiver_file_into_a_usage_error(pytester, _entry_points_load):
    profile_file(pytester.path, changed(assumptions="none"), "bad.toml")
    waiver_file(pytester.path, {"id": ["R05"], "reason": "r"})
    for args, line in [(("--sl1-profile", "bad.toml"), "ERROR: --sl1-profile bad.toml: bad.toml: assumptions: *"),
                       (("--sl1-platform", "ieee", "--sl1-waivers", "waivers.toml"),
                        "ERROR: --sl1-waivers: waivers.toml: waiver 1: id: must be a string*")]:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sl1-impl", "builtin:kernel",
                                               "--sl1-quick", *args, timeout=300)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stderr.str()
        result.stderr.fnmatch_lines([line])
        text = result.stderr.str() + result.stdout.str()
        assert "INTERNALERROR" not in text and "Traceback" not in text


# ------------------------------------------------------------------ random mutations: a Profile or a ProfileError

def _check_types(p: Profile) -> None:
    """The documented types, exactly (docs/conformance.md): no bool for an int, no float, no coercion."""
    for text in (p.name, p.title):
        assert type(text) is str and text and len(text.splitlines()) == 1
    assert type(p.description) is str
    assert type(p.dtypes) is tuple and p.dtypes and len(set(p.dtypes)) == len(p.dtypes) <= 2
    assert set(p.dtypes) <= {"fp16", "fp32"} and all(type(d) is str for d in p.dtypes)
    assert type(p.variants) is tuple and p.variants and len(set(p.variants)) == len(p.variants) <= 2
    assert set(p.variants) <= {"s", "p"}
    assert type(p.cores) is int and 1 <= p.cores <= 32
    assert p.flush_to_zero in ("forbidden", "accepted") and type(p.strict_zero_sign) is bool
    assert type(p.max_ulp) is dict and list(p.max_ulp) == list(p.dtypes)
    assert all(type(u) is int and u >= 0 for u in p.max_ulp.values())
    assert type(p.assumptions) is dict and all(type(k) is str and type(v) is str and v
                                               for k, v in p.assumptions.items())


_text = st.text(st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)), max_size=6)
_scalars = st.one_of(st.booleans(), st.integers(-3, 40), st.floats(allow_nan=True), _text,
                     st.sampled_from(["fp16", "fp32", "s", "p", "forbidden", "accepted", "true", "8", ""]))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(_text, inner, max_size=3)), max_leaves=6)
_keys = st.one_of(st.sampled_from(list(VALID) + ["fp16", "fp32", "colour"]), _text)


@st.composite
def _mutated(draw) -> dict:
    doc = json.loads(json.dumps(VALID))
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(list(doc) + ["colour"]))
        action = draw(st.sampled_from(["drop", "set", "inner"]))
        if action == "drop":
            doc.pop(key, None)
        elif action == "set" or not isinstance(doc.get(key), (list, dict)):
            doc[key] = draw(_values)
        elif isinstance(doc[key], list):
            items = doc[key]
            if items and draw(st.booleans()):
                items[draw(st.integers(0, len(items) - 1))] = draw(_values)
            else:
                items.append(draw(st.one_of(_values, st.sampled_from(items or ["fp16"]))))
        else:
            doc[key][draw(_keys)] = draw(_values)
    return doc


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("mutated")


@settings(max_examples=300)
@given(doc=_mutated())
def test_a_mutated_profile_loads_with_the_documented_types_or_is_a_profile_error(folder, doc):
    path = folder / "mutated.toml"
    path.write_text(toml(doc))
    try:
        profile = load_profile(str(path))
    except ProfileError as exc:
        assert len(str(exc).splitlines()) == 1 and str(exc).startswith(f"{path}: "), str(exc)
        return
    _check_types(profile)


def test_the_same_number_twice_is_named_once_in_json_schema_terms(tmp_path):
    """uniqueItems compares as JSON Schema does: 0 and 0.0 are one number (found by hypothesis:
    the message builder looked for two equal TOML spellings and found none)."""
    message = str(pytest.raises(ProfileError, load_profile, str(profile_file(tmp_path, changed(dtypes=[0, 0.0])))).value)
    assert message.endswith("dtypes: lists 0.0 more than once (0 and 0.0 are the same number)"), message
