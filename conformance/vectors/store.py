"""Golden vector sets on disk: write, load (with every check), verify against the oracle.

A vector set is a folder (docs/vector-format.md):

    manifest.json            what the set is: schema and generator versions, seed, dtype,
                             oracle, expected-result columns, families, cases, SHA-256 of files
    dy.bin x1.bin x2.bin     every case's inputs, concatenated, raw little-endian bit patterns
    expected-<column>.bin    dx1 for every element: "oracle" (correctly rounded), "oracle-ftz"
                             (flush-to-zero), "model-<name>" (bit-exact evaluation models)
    alternatives.bin         further acceptable dx1 arrays of cases the manual leaves open
    vectors.npz              the same arrays, by file stem, for numpy users

Before each call dx1 holds FILL_BYTE (0x5a) in every byte; elements a correct call
does not write (length 0, core_mask 0, past length) keep it in every column.

Writing is atomic (a temporary folder beside the target, renamed into place), and
byte-reproducible: the same generator version and seed give identical files.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sl1conf import __version__
from sl1conf.adapters.base import FILL_BYTE, Case
from sl1conf.reference import fast_oracle
from sl1conf.reference import formats
from sl1conf.reference.models import models_for

from sl1conf.conformance.common import jsonfiles
from sl1conf.conformance.common.errors import SuiteError
from sl1conf.conformance.common.files import uninterrupted
from sl1conf.conformance.common.jsonfiles import read_checked
from sl1conf.conformance.vectors.cases import Family, VectorCase

__all__ = ["SCHEMA_VERSION", "VectorSetError", "VectorSet", "write", "remove", "load", "load_per_dtype", "verify"]

SCHEMA_VERSION = 1
INPUTS = ("dy", "x1", "x2")
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the .npz is byte-reproducible


class VectorSetError(SuiteError):
    """A vector set that cannot be used: names the file (or case) and the problem."""


def schema() -> dict:
    """The manifest's JSON Schema (conformance/schemas/vector-manifest.schema.json)."""
    return jsonfiles.schema("vector-manifest.schema.json")


def columns_for(fmt: formats.Format) -> list[str]:
    return ["oracle", "oracle-ftz", *(f"model-{m.name}" for m in models_for(fmt))]


def _columns(fmt: formats.Format, cases: list[VectorCase], columns: list[str]) -> dict:
    """Each column's dx1 for the cases, concatenated: the fill pattern where a correct call
    writes nothing. Computed over all cases at once (every column is computed once per
    distinct beta), element for element what one case at a time gives."""
    calls = [case.call for case in cases]
    n = [call.n for call in calls]
    written = np.concatenate([np.arange(k) < call.elements_written for k, call in zip(n, calls)]) if calls \
        else np.zeros(0, bool)
    cat = lambda parts: np.concatenate(parts).astype(fmt.uint, copy=False) if parts else np.zeros(0, fmt.uint)  # noqa: E731
    args = [cat([getattr(c, a) for c in calls])[written].view(fmt.dtype) for a in ("dy", "x1", "x2")]
    beta_bits = np.repeat(np.array([c.beta for c in calls], np.int64), n).astype(fmt.uint)[written]
    fill = cat([call.initial_out() for call in calls])
    # one group per distinct beta; a case with a NaN input alone (which NaN's payload a model's
    # result carries depends on how numpy's loops meet the elements, so it is computed as the
    # case itself, as one call; the bytes of a set never depend on its other cases)
    case_of = np.repeat(np.arange(len(calls)), n)[written]
    has_nan = [bool(formats.is_nan_bits(fmt, np.concatenate([c.dy, c.x1, c.x2, [c.beta]]).astype(fmt.uint)).any())
               for c in calls]
    alone = np.array(has_nan, bool)[case_of] if calls else np.zeros(0, bool)
    # group key: beta's bits, or (for a case alone) one past every pattern plus the case's index;
    # the elements sorted by it (stably) make every group one contiguous slice, read as views
    key = np.where(alone, (1 << 40) + case_of, beta_bits.astype(np.int64))
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]]) if key.size else np.zeros(0, np.int64)
    bounds = list(zip(starts.tolist(), np.r_[starts[1:], key.size].tolist()))
    groups = []
    for lo, hi in bounds:
        k = int(sorted_key[lo])
        bits = calls[k - (1 << 40)].beta if k >= 1 << 40 else k
        groups.append((np.array([bits], fmt.uint).view(fmt.dtype)[0], slice(lo, hi)))
    group_alone = [int(sorted_key[lo]) >= 1 << 40 for lo, _ in bounds]
    sorted_args = [a[order] for a in args]
    out = {}
    for column in columns:
        if column in ("oracle", "oracle-ftz"):
            fn = lambda *a, _ftz=column == "oracle-ftz": fast_oracle.smoothl1lossgrad(*a, flush_subnormals=_ftz)  # noqa: E731
        else:
            from sl1conf.reference.models import get_model
            fn = get_model(column.removeprefix("model-"))
        res_sorted = np.empty(int(written.sum()), fmt.uint)
        for (beta, at), alone_group in zip(groups, group_alone):  # one scalar beta per call, as one case at a time
            g = fn if alone_group or column in ("oracle", "oracle-ftz") else _kernel_model(column)
            res_sorted[at] = np.asarray(g(*(a[at] for a in sorted_args), beta), fmt.dtype).view(fmt.uint)
        res = np.empty_like(res_sorted)
        res[order] = res_sorted
        col = fill.copy()
        col[written] = res
        out[column] = col
    return out


def _kernel_model(column: str):
    """The Cython kernel's evaluation of a model column, for groups without a NaN input: the
    numpy emulation's bits (the kernel's tests and the committed sets' byte-for-byte
    regeneration check it), at memory speed. Groups with a NaN input keep the emulation,
    whose NaN payloads are what the committed sets hold."""
    from sl1conf.reference import kernel

    name = column.removeprefix("model-")
    return lambda dy, x1, x2, beta: kernel.smoothl1lossgrad(dy, x1, x2, beta, model=name, threads=1)


def _expected(fmt: formats.Format, column: str, case: VectorCase) -> np.ndarray:
    """One column's dx1 for one case (what :func:`verify` recomputes)."""
    return _columns(fmt, [case], [column])[column]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _npz_bytes(arrays: dict) -> bytes:
    """An .npz with fixed timestamps and order, stored uncompressed (compressed bytes can
    differ between zlib builds), so equal arrays give equal bytes on every machine."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name in sorted(arrays):
            entry = io.BytesIO()
            np.lib.format.write_array(entry, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            zf.writestr(info, entry.getvalue())
    return buf.getvalue()


def _build(fmt: formats.Format, families: list[Family], seed: int, large: bool) -> tuple[dict, dict, dict]:
    """(manifest without file hashes, {file name: bytes}, {file stem: array})."""
    columns = columns_for(fmt)
    data = {name: [] for name in INPUTS}
    alternatives, cases, fam_rows = [], [], []
    offset = alt_offset = 0
    for fam in families:
        elements = 0
        for index, case in enumerate(fam.cases):
            call = case.call
            if call.dtype != fmt.name:
                raise ValueError(f"family {fam.name} case {index}: a {call.dtype} call in a {fmt.name} set")
            for name in INPUTS:
                data[name].append(getattr(call, name))
            alts = []
            for alt_name in sorted(case.alternatives):
                arr = np.ascontiguousarray(case.alternatives[alt_name], fmt.uint)
                if arr.shape != (call.n,):
                    raise ValueError(f"family {fam.name} case {index}: alternative {alt_name} has "
                                     f"{arr.shape} elements, the case {call.n}")
                alternatives.append(arr)
                alts.append({"name": alt_name, "offset": alt_offset})
                alt_offset += call.n
            cases.append({
                "id": f"{fam.id}.{index}", "family": fam.id, "offset": offset, "n": call.n,
                "length": int(call.call_length), "beta": formats.hex_bits(fmt, call.beta), "variant": call.variant,
                "core_mask": f"{call.core_mask:#x}", "flags": list(case.flags), "result": case.result,
                "alternatives": alts, "note": case.note,
            })
            offset += call.n
            elements += call.n
        fam_rows.append({"id": fam.id, "name": fam.name, "description": fam.description,
                         "flags": list(fam.flags), "cases": len(fam.cases), "elements": elements})
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, fmt.uint)  # noqa: E731
    arrays = {name: cat(data[name]) for name in INPUTS}
    expected = _columns(fmt, [case for fam in families for case in fam.cases], columns)
    arrays.update({f"expected-{c}": expected[c] for c in columns})
    arrays["alternatives"] = cat(alternatives)
    files = {f"{stem}.bin": arrays[stem].astype(fmt.uint.newbyteorder("<")).tobytes() for stem in arrays}
    files["vectors.npz"] = _npz_bytes(arrays)
    manifest = {
        "schema": "sl1conf-vectors", "schema_version": SCHEMA_VERSION,
        "generator": {"name": "sl1conf", "version": __version__,
                      "numpy": ".".join(np.__version__.split(".")[:2])},
        "dtype": fmt.name, "seed": seed, "large": large, "fill_byte": f"{FILL_BYTE:#04x}",
        "oracle": {"name": "sl1conf.reference.fast_oracle",
                   "precision": "correctly rounded (round to nearest even, gradual underflow); "
                                "cross-checked with the mpmath oracle (64-bit truncated quotient and sticky bit)"},
        "columns": columns, "elements": int(offset), "families": fam_rows, "cases": cases,
    }
    return manifest, files, arrays


def _manifest_text(manifest: dict) -> str:
    return json.dumps(manifest, indent=1, sort_keys=True) + "\n"


def _complete(fmt, families: list[Family], seed: int, large: bool) -> tuple[dict, dict, dict]:
    """(manifest with file hashes, {file name: bytes}, {file stem: array})."""
    manifest, files, arrays = _build(fmt, families, seed, large)
    manifest["files"] = {name: {"sha256": _sha256(blob), "bytes": len(blob)} for name, blob in sorted(files.items())}
    return manifest, files, arrays


def in_memory(fmt, families: list[Family], *, seed: int, large: bool = False) -> "VectorSet":
    """The vector set :func:`write` would write, without the disk: the same manifest (and so the
    same manifest SHA-256 and set id) and arrays, nothing to load back or validate again."""
    fmt = formats.format_by_name(fmt)
    manifest, _, arrays = _complete(fmt, families, seed, large)
    # Not validated here (about a second for the canonical families, on every certify): the
    # manifest is built by _complete, as for write(), which validates it, and the tests check
    # that generated sets validate.
    return VectorSet(None, manifest, arrays, _sha256(_manifest_text(manifest).encode()))


def write(out_dir, fmt, families: list[Family], *, seed: int, large: bool = False, force: bool = False) -> Path:
    """Write a vector set atomically; an existing folder is replaced only with ``force``, and
    then only what the suite wrote there (manifest.json and the files it lists): every other
    file and folder in it is kept, moved into the new set as it is swapped in."""
    fmt = formats.format_by_name(fmt)
    out = Path(out_dir)
    if out.exists() and not force:
        raise VectorSetError(f"{out} exists: choose another folder or pass --force to replace it")
    if out.exists() and not is_replaceable(out):
        raise VectorSetError(f"{out} is not a vector set folder (no sl1conf manifest.json) and not empty: "
                             "--force replaces only vector sets")
    manifest, files, _ = _complete(fmt, families, seed, large)
    jsonfiles.validate(manifest, "vector-manifest.schema.json", RuntimeError, f"the manifest for {out}")  # a bug if not
    foreign = _foreign_entries(out) if out.exists() else []
    clash = sorted(name for name in foreign if name in files or name == "manifest.json")
    if clash:
        raise VectorSetError(f"{out / clash[0]}: not listed in the old manifest, but the new set writes a file "
                             "of that name: move it away first")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as exc:
        raise VectorSetError(f"{out}: cannot write there ({exc.strerror or exc})") from None
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; a vector set is ordinary data
    try:
        for name, blob in files.items():
            (tmp / name).write_bytes(blob)
        (tmp / "manifest.json").write_text(_manifest_text(manifest))
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            with uninterrupted():  # the user's files move with the swap, all or none of them
                moved = []
                try:
                    for name in foreign:
                        os.replace(out / name, tmp / name)
                        moved.append(name)
                    os.replace(out, old / "set")
                    try:
                        os.replace(tmp, out)
                    except OSError:
                        os.replace(old / "set", out)  # put the old set back
                        raise
                except OSError:
                    for name in moved:  # and the user's files into it
                        os.replace(tmp / name, out / name)
                    raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except OSError as exc:
        raise VectorSetError(f"{out}: cannot write the vector set ({exc.strerror or exc})") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def remove(path) -> None:
    """Remove the vector set in folder ``path``: its manifest and the files it lists, and the
    folder too if nothing else is left in it (what the suite did not write stays)."""
    path = Path(path)
    foreign = set(_foreign_entries(path))
    for entry in path.iterdir():
        if entry.name not in foreign:
            entry.unlink()
    if not foreign:
        path.rmdir()


def _foreign_entries(path: Path) -> list:
    """The names in vector set folder ``path`` the suite did not write: neither manifest.json
    nor a file its manifest lists (a README, a board's result folder, notes)."""
    files = (_old_manifest(path) or {}).get("files")
    listed = set(files) if isinstance(files, dict) else set()
    return sorted(e.name for e in path.iterdir() if e.name != "manifest.json" and e.name not in listed)


def _old_manifest(path: Path) -> "dict | None":
    """The manifest in folder ``path`` as far as it can be read (unchecked: a set about to be
    replaced), or None."""
    try:
        manifest = json.loads((path / "manifest.json").read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return manifest if isinstance(manifest, dict) else None


def is_replaceable(path: Path) -> bool:
    """An empty folder, or a folder holding a vector set: what --force may replace."""
    if not path.is_dir():
        return False
    if not any(path.iterdir()):
        return True
    return (_old_manifest(path) or {}).get("schema") == "sl1conf-vectors"


@dataclass
class VectorSet:
    """A loaded (and checked) vector set, or one generated in memory (``path`` None)."""

    path: "Path | None"
    manifest: dict
    arrays: dict  # file stem -> uint array
    manifest_sha256: str = ""  # of manifest.json as written (the set's identity in reports)
    _cases: dict = field(default_factory=dict, repr=False, compare=False)  # case id -> VectorCase, built once

    @property
    def format(self) -> formats.Format:
        return formats.format_by_name(self.manifest["dtype"])

    @property
    def set_id(self) -> str:
        """The set's name in reports and in its exported self-test's output: dtype, seed and the
        manifest's sha256 (its first 12 hex digits)."""
        return f"{self.manifest['dtype']}-seed{self.manifest['seed']}-{self.manifest_sha256[:12]}"

    def family(self, key) -> dict:
        for fam in self.manifest["families"]:
            if str(fam["id"]) == str(key) or fam["name"] == key:
                return fam
        raise VectorSetError(f"{self.path or 'the generated vectors'}: no family {key!r}")

    def case_rows(self, family_id=None) -> list[dict]:
        return [c for c in self.manifest["cases"] if family_id is None or c["family"] == family_id]

    def case(self, row: dict) -> VectorCase:
        """The record of a manifest row, built once: its call (with the row's id; arrays are
        views into the loaded files) and what the row says about it."""
        built = self._cases.get(row["id"])
        if built is not None:
            return built
        s = slice(row["offset"], row["offset"] + row["n"])
        alts = {a["name"]: self.arrays["alternatives"][a["offset"]:a["offset"] + row["n"]]
                for a in row["alternatives"]}
        call = Case(self.manifest["dtype"], self.arrays["dy"][s], self.arrays["x1"][s], self.arrays["x2"][s],
                    int(row["beta"], 16), variant=row["variant"], core_mask=int(row["core_mask"], 16),
                    length=row["length"], id=row["id"])
        built = VectorCase(call, flags=tuple(row["flags"]), result=row["result"], alternatives=alts, note=row["note"])
        self._cases[row["id"]] = built
        return built

    def expected(self, column: str, row: dict) -> np.ndarray:
        return self.arrays[f"expected-{column}"][row["offset"]:row["offset"] + row["n"]]


def load_per_dtype(dirs) -> dict:
    """dtype -> VectorSet, one per folder of ``dirs``, each loaded and checked (:func:`load`);
    VectorSetError naming the folder when one does not load, or when two hold the same dtype."""
    found = {}
    for d in dirs:
        vs = load(d)  # its errors name the folder
        dtype = vs.manifest["dtype"]
        if dtype in found:
            raise VectorSetError(f"{found[dtype].path} and {d} both hold {dtype} vectors (one set per dtype)")
        found[dtype] = vs
    return found


def load(path) -> VectorSet:
    """Load and check a vector set: schema, versions, checksums, sizes. VectorSetError otherwise."""
    root = Path(path)
    mpath = root / "manifest.json"
    if not root.is_dir():
        raise VectorSetError(f"{root}: no such vector set folder")
    manifest = read_checked(mpath, "vector-manifest.schema.json", SCHEMA_VERSION, VectorSetError)
    fmt = formats.format_by_name(manifest["dtype"])
    arrays = {}
    for name, meta in manifest["files"].items():
        fpath = root / name
        try:
            blob = fpath.read_bytes()
        except OSError:
            raise VectorSetError(f"{fpath}: missing") from None
        if len(blob) != meta["bytes"]:
            raise VectorSetError(f"{fpath}: {len(blob)} bytes, the manifest says {meta['bytes']} (truncated?)")
        if _sha256(blob) != meta["sha256"]:
            raise VectorSetError(f"{fpath}: SHA-256 differs from the manifest (the file was changed)")
        if name.endswith(".bin"):
            if len(blob) % fmt.dtype.itemsize:
                raise VectorSetError(f"{fpath}: not a whole number of {fmt.name} elements")
            arrays[name[:-4]] = np.frombuffer(blob, fmt.uint.newbyteorder("<")).astype(fmt.uint)
    needed = [*INPUTS, "alternatives", *(f"expected-{c}" for c in manifest["columns"])]
    for stem in needed:
        if stem not in arrays:
            raise VectorSetError(f"{root / (stem + '.bin')}: not listed in the manifest")
    total = manifest["elements"]
    for stem in needed[:3] + needed[4:]:
        if arrays[stem].size != total:
            raise VectorSetError(f"{root / (stem + '.bin')}: {arrays[stem].size} elements, expected {total}")
    _check_consistency(mpath, manifest, fmt, arrays)
    return VectorSet(root, manifest, arrays, _sha256(mpath.read_bytes()))


def _check_consistency(mpath: Path, manifest: dict, fmt: formats.Format, arrays: dict) -> None:
    """What the schema cannot say: cases tile the data in order, fields fit the C API, totals add up."""
    bad = lambda what: VectorSetError(f"{mpath}: {what}")  # noqa: E731
    if manifest["columns"][:2] != ["oracle", "oracle-ftz"]:
        raise bad("the first expected columns must be oracle and oracle-ftz")
    if manifest["fill_byte"] != f"{FILL_BYTE:#04x}":
        raise bad(f"fill_byte {manifest['fill_byte']} is not {FILL_BYTE:#04x}")
    if "vectors.npz" not in manifest["files"]:
        raise bad("vectors.npz is not listed")
    fams = {f["id"]: f for f in manifest["families"]}
    counts = {fid: [0, 0] for fid in fams}
    offset, alt_offset, ids = 0, 0, set()
    for row in manifest["cases"]:
        cid = row["id"]
        if cid in ids:
            raise bad(f"case id {cid} appears twice")
        ids.add(cid)
        if row["family"] not in fams or not cid.startswith(f"{row['family']}."):
            raise bad(f"case {cid} names family {row['family']}, which the set does not have")
        if row["offset"] != offset:
            raise bad(f"case {cid} starts at {row['offset']}, not where the previous case ends ({offset})")
        if int(row["beta"], 16) >= 1 << fmt.bits:
            raise bad(f"case {cid}: beta {row['beta']} is not a {fmt.name} pattern")
        if int(row["core_mask"], 16) >= 1 << 32 or not -(1 << 31) <= row["length"] <= row["n"]:
            raise bad(f"case {cid}: core_mask or length outside the C API's range (length must be <= n)")
        for a in row["alternatives"]:
            if a["offset"] != alt_offset:
                raise bad(f"case {cid}: alternative {a['name']} is not where the previous one ends")
            alt_offset += row["n"]
        offset += row["n"]
        counts[row["family"]][0] += 1
        counts[row["family"]][1] += row["n"]
    if offset != manifest["elements"] or alt_offset != arrays["alternatives"].size:
        raise bad("the cases do not cover the data exactly")
    for fid, (n_cases, n_elements) in counts.items():
        if [fams[fid]["cases"], fams[fid]["elements"]] != [n_cases, n_elements]:
            raise bad(f"family {fid}: the manifest says {fams[fid]['cases']} cases and {fams[fid]['elements']} "
                      f"elements, its cases add up to {n_cases} and {n_elements}")


def verify(vs: VectorSet) -> list[str]:
    """Recompute every expected column from the oracle and the models: one line per mismatch."""
    fmt = vs.format
    problems = []
    for row in vs.manifest["cases"]:
        case = vs.case(row)
        for column in vs.manifest["columns"]:
            want = _expected(fmt, column, case)
            got = vs.expected(column, row)
            bad = np.flatnonzero(~formats.same_result(fmt, got, want))
            if bad.size:
                i = int(bad[0])
                problems.append(f"expected-{column}.bin, case {row['id']} element {i}: stored "
                                f"{formats.hex_bits(fmt, got[i])}, recomputed {formats.hex_bits(fmt, want[i])} ({bad.size} elements differ)")
    return problems
