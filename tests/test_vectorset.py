"""The vector set format: reproducible writing, checked loading, verification, bad input."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from sl1conf.adapters.base import FILL_BYTE
from sl1conf.conformance.vectors import store as V
from sl1conf.conformance.cli import main
from sl1conf.conformance.vectors.sampling import random_batch
from sl1conf.conformance.vectors.cases import Family, VectorCase
from sl1conf.reference import formats as F
from sl1conf.reference.oracle import smoothl1lossgrad as exact_oracle


def _families(fmt, seed=1):
    rng = np.random.default_rng(seed)
    fams = []
    for fid, name in ((1, "first"), (4, "fourth")):  # ids need not be contiguous (removed families leave gaps)
        cases = []
        for n, variant, mask, length in ((5, "p", 0xFF, None), (17, "s", 0x55, None), (9, "s", 0, None),
                                         (6, "p", 0xFF, 0), (8, "p", 0xFF, 3)):
            b = random_batch(fmt, n, rng)
            cases.append(VectorCase(b.replace(variant=variant, core_mask=mask, length=length), flags=(f"n{n}",)))
        b = random_batch(fmt, 4, rng)
        cases.append(VectorCase(b, result="acceptable",
                                alternatives={"zeros": np.zeros(4, fmt.uint)}, note="a test alternative"))
        fams.append(Family(fid, name, f"the {name} family", ("test",), cases))
    return fams


@pytest.fixture(params=[F.FP16, F.FP32], ids=lambda f: f.name)
def written(request, tmp_path):
    fmt = request.param
    return fmt, V.write(tmp_path / "set", fmt, _families(fmt), seed=1)


def test_round_trip_and_expected_columns_come_from_the_oracle(written):
    fmt, path = written
    vs = V.load(path)
    assert vs.manifest["columns"][:2] == ["oracle", "oracle-ftz"]
    for fam in _families(fmt):
        for index, case in enumerate(fam.cases):
            row = next(r for r in vs.manifest["cases"] if r["id"] == f"{fam.id}.{index}")
            back = vs.case(row)
            assert (back.dy == case.dy).all() and (back.x2 == case.x2).all() and back.beta == case.beta
            # the oracle column: the mpmath oracle on the elements a correct call writes, fill elsewhere
            m = 0 if (case.variant == "s" and case.core_mask == 0) else max(0, min(case.call_length, case.n))
            want = np.full(case.n * fmt.dtype.itemsize, FILL_BYTE, np.uint8).view(fmt.uint)
            if m:
                beta = np.array([case.beta], fmt.uint).view(fmt.dtype)[0]
                want[:m] = F.to_bits(fmt, exact_oracle(*(a[:m].view(fmt.dtype) for a in (case.dy, case.x1, case.x2)),
                                                       beta))
            assert F.same_result(fmt, vs.expected("oracle", row), want).all(), row["id"]
            for name, alt in case.alternatives.items():
                assert (back.alternatives[name] == alt).all()
    assert V.verify(vs) == []


def test_same_seed_same_bytes(tmp_path):
    a = V.write(tmp_path / "a", F.FP16, _families(F.FP16), seed=3)
    b = V.write(tmp_path / "b", F.FP16, _families(F.FP16), seed=3)
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_no_overwrite_without_force_and_atomic_replace(tmp_path):
    path = V.write(tmp_path / "set", F.FP32, _families(F.FP32), seed=1)
    before = (path / "manifest.json").read_bytes()
    with pytest.raises(V.VectorSetError, match="--force"):
        V.write(path, F.FP32, _families(F.FP32, seed=2), seed=2)
    assert (path / "manifest.json").read_bytes() == before
    V.write(path, F.FP32, _families(F.FP32, seed=2), seed=2, force=True)
    assert json.loads((path / "manifest.json").read_text())["seed"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["set"]  # no temporary folders left


def test_a_write_that_dies_halfway_leaves_nothing(tmp_path, monkeypatch):
    def boom(arrays):
        raise RuntimeError("killed")
    monkeypatch.setattr(V, "_npz_bytes", boom)
    with pytest.raises(RuntimeError):
        V.write(tmp_path / "set", F.FP16, _families(F.FP16), seed=1)
    assert list(tmp_path.iterdir()) == []


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_verify_reports_a_wrong_expected_value_with_exit_1(written, capsys):
    fmt, path = written
    vs = V.load(path)
    # Change one stored oracle value and re-seal the checksums, as a wrong generator would.
    data = bytearray((path / "expected-oracle.bin").read_bytes())
    oracle = vs.arrays["expected-oracle"]
    i = int(np.flatnonzero(~F.is_nan_bits(fmt, oracle))[0])  # a number: any change to it is a mismatch
    data[i * fmt.dtype.itemsize + fmt.dtype.itemsize - 1] ^= 0x04  # an exponent bit (little-endian top byte)
    (path / "expected-oracle.bin").write_bytes(bytes(data))
    row = next(r for r in vs.manifest["cases"] if r["offset"] <= i < r["offset"] + r["n"])
    manifest = vs.manifest
    import hashlib
    manifest["files"]["expected-oracle.bin"]["sha256"] = hashlib.sha256(bytes(data)).hexdigest()
    (path / "manifest.json").write_text(json.dumps(manifest))
    code, out, _ = _cli(capsys, "vectors", "verify", str(path))
    assert code == 1 and f"expected-oracle.bin, case {row['id']} element {i - row['offset']}:" in out


@pytest.mark.parametrize("damage, words", [
    ("delete:x1.bin", "x1.bin: missing"),
    ("truncate:dy.bin", "truncated"),
    ("flip:x2.bin", "SHA-256 differs"),
    ("flip:vectors.npz", "SHA-256 differs"),
    ("version", "unknown schema version 99"),
    ("json", "not valid JSON"),
    ("schema", "does not match the schema"),
    ("delete:manifest.json", "manifest.json: missing"),
])
def test_bad_sets_are_one_line_and_exit_2(written, capsys, damage, words):
    fmt, path = written
    kind, _, name = damage.partition(":")
    target = path / (name or "manifest.json")
    if kind == "delete":
        target.unlink()
    elif kind == "truncate":
        target.write_bytes(target.read_bytes()[:-2])
    elif kind == "flip":
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0x40
        target.write_bytes(bytes(data))
    elif kind == "version":
        m = json.loads(target.read_text())
        m["schema_version"] = 99
        target.write_text(json.dumps(m))
    elif kind == "json":
        target.write_text("{not json")
    elif kind == "schema":
        m = json.loads(target.read_text())
        m["cases"][0]["variant"] = "q"
        target.write_text(json.dumps(m))
    for argv in (("vectors", "verify", str(path)), ("vectors", "list", str(path))):
        code, out, err = _cli(capsys, *argv)
        assert code == 2 and out == "" and err.count("\n") == 1 and words in err, err


def test_list_and_show(written, capsys):
    fmt, path = written
    code, out, _ = _cli(capsys, "vectors", "list", str(path))
    assert code == 0 and "fourth" in out and " 4  fourth" in out
    code, out, _ = _cli(capsys, "vectors", "show", str(path), "fourth")
    assert code == 0 and "4.5" in out and "acceptable" in out
    code, out, _ = _cli(capsys, "vectors", "show", str(path), "1.1")
    assert code == 0 and "s variant, core_mask 0x55" in out
    for key in ("nosuch", "9.9"):
        code, _, err = _cli(capsys, "vectors", "show", str(path), key)
        assert code == 2 and err.count("\n") == 1


def test_directory_permissions_are_ordinary(written):
    _, path = written
    assert os.stat(path).st_mode & 0o755 == 0o755


def test_generate_command(tmp_path, capsys):
    out = tmp_path / "v"
    code, text, _ = _cli(capsys, "vectors", "generate", "--dtype", "fp32", "--out", str(out),
                         "--families", "signed-zero,nan-inf", "--seed", "7")
    assert code == 0 and "2 families" in text
    assert [f["name"] for f in V.load(out).manifest["families"]] == ["nan-inf", "signed-zero"]
    before = (out / "manifest.json").read_bytes()
    for argv, words in [
        (["--families", "signed-zero"], "exists"),                      # no overwrite without --force
        (["--families", "no-such-family", "--force"], "unknown family"),
        (["--families", "large-random", "--force"], "--large"),
    ]:
        code, _, err = _cli(capsys, "vectors", "generate", "--dtype", "fp32", "--out", str(out), *argv)
        assert code == 2 and words in err and err.count("\n") == 1, err
    assert (out / "manifest.json").read_bytes() == before
    code, _, _ = _cli(capsys, "vectors", "generate", "--dtype", "fp16", "--out", str(out),
                      "--families", "signed-zero", "--force")
    assert code == 0 and V.load(out).manifest["dtype"] == "fp16"
    code, _, err = _cli(capsys, "vectors", "generate", "--dtype", "fp16", "--out", str(out), "--seed", "-3")
    assert code == 2


def test_force_replaces_only_vector_sets(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    with pytest.raises(V.VectorSetError, match="not a vector set folder"):
        V.write(precious, F.FP16, _families(F.FP16), seed=1, force=True)
    assert (precious / "keep.txt").read_text() == "mine"


def test_force_replaces_what_the_suite_wrote_and_keeps_everything_else(tmp_path):
    """--force onto a vector set replaces the manifest and the files it lists; a README, a
    board's result folder and notes beside them stay, byte for byte (issue 16: they were deleted)."""
    path = V.write(tmp_path / "set", F.FP32, _families(F.FP32), seed=1)
    (path / "NOTES.txt").write_text("board 7 results, see results/")
    (path / "results").mkdir()
    (path / "results" / "run1.bin").write_bytes(b"\x01\x02")
    V.write(path, F.FP16, _families(F.FP16, seed=3), seed=3, force=True)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["dtype"] == "fp16" and manifest["seed"] == 3
    assert (path / "NOTES.txt").read_text() == "board 7 results, see results/"
    assert (path / "results" / "run1.bin").read_bytes() == b"\x01\x02"
    assert {p.name for p in path.iterdir()} == set(manifest["files"]) | {"manifest.json", "NOTES.txt", "results"}
    V.load(path)  # and the set itself is whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["set"]  # no temporary folders left


def test_force_refuses_when_a_kept_file_has_a_name_the_new_set_writes(tmp_path):
    path = V.write(tmp_path / "set", F.FP32, _families(F.FP32), seed=1)
    manifest = json.loads((path / "manifest.json").read_text())
    victim = next(name for name in manifest["files"] if name.endswith(".bin"))
    listed = dict(manifest["files"])
    del listed[victim]  # the old manifest no longer lists it: it is the user's file now
    manifest["files"] = listed
    (path / "manifest.json").write_text(json.dumps(manifest))
    (path / victim).write_bytes(b"mine")
    with pytest.raises(V.VectorSetError, match="move it away first"):
        V.write(path, F.FP32, _families(F.FP32, seed=2), seed=2, force=True)
    assert (path / victim).read_bytes() == b"mine"


@pytest.mark.parametrize("edit, words", [
    (lambda m: m["cases"][1].update(offset=m["cases"][0]["offset"]), "not where the previous case ends"),
    (lambda m: m["cases"][1].update(id=m["cases"][0]["id"]), "appears twice"),
    (lambda m: m["families"][0].update(elements=123456), "its cases add up to"),
    (lambda m: m["cases"][0].update(length=m["cases"][0]["n"] + 1), "length must be <= n"),
    (lambda m: m["cases"][0].update(beta="0xfffffffff"), "not a fp"),
])
def test_inconsistent_manifests_are_refused(written, capsys, edit, words):
    fmt, path = written
    m = json.loads((path / "manifest.json").read_text())
    edit(m)
    (path / "manifest.json").write_text(json.dumps(m))
    code, out, err = _cli(capsys, "vectors", "verify", str(path))
    assert code == 2 and words in err and err.count("\n") == 1, err


def test_remove_takes_the_set_and_leaves_what_the_user_put_beside_it(tmp_path):
    path = V.write(tmp_path / "set", F.FP32, _families(F.FP32), seed=1)
    (path / "NOTES.txt").write_text("mine")
    V.remove(path)
    assert sorted(p.name for p in path.iterdir()) == ["NOTES.txt"]
    bare = V.write(tmp_path / "bare", F.FP32, _families(F.FP32), seed=1)
    V.remove(bare)
    assert not bare.exists()  # nothing else was in it: the folder goes too
