"""Export a golden vector set for use without Python: a C header with a self-test program, or hex text.

Two forms (docs/vector-format.md, "Exports"):

:func:`export_c_header`
    ``sl1_vectors.h``: the set's inputs, the ``oracle`` and ``oracle-ftz`` columns and the
    alternatives as ``static const`` arrays of bit patterns (hex literals of the stored
    values), a case table and a family table; and ``sl1_selftest.c``: a C99 program (plus
    ``_Float16`` for fp16 sets) that calls the library under test through the documented
    API for every case, judges every element and prints one line per family, with no
    file I/O, for running on the target itself. It judges as certify does under the profile
    the header carries (``profile``: name, max_ulp for the set's dtype, strict zero sign,
    flushing accepted; the ieee profile's by default), with no budget on the boundary
    elements the header lists (the exact x1 - x2 is +-beta). The program is a fixed C source,
    ``selftest.c`` beside this module, copied unchanged: everything that differs from one
    set to another is in the header it includes, so the file compiles as it stands.

:func:`export_hex`
    One text file in the manner of Berkeley TestFloat's test cases: ``#`` comment lines,
    then one line per element, ``<case id> <index> <dy> <x1> <x2> <beta> <oracle>`` in
    fixed-width lowercase hex, with trailing ``key=value`` tokens for what else is
    acceptable.

Both write atomically (``common.files.write_atomic``), refuse to replace an existing file
unless ``force`` is given, and are deterministic: the same vector set gives byte-identical
exports (no time stamps, no paths).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator
from urllib.parse import quote, unquote

import numpy as np

from sl1conf import __version__
from sl1conf.adapters.base import FILL_BYTE, fill_bits
from sl1conf.reference import exact
from sl1conf.reference import formats
from sl1conf.reference.models import accepted_models

from sl1conf.conformance.common.files import write_atomic
from sl1conf.conformance.vectors.store import VectorSet, VectorSetError

__all__ = ["HEADER_NAME", "SELFTEST_NAME", "EXPORT_FORMATS", "export_c_header", "export_hex", "export",
           "written_elements", "parse_hex_line", "boundary_elements", "DEFAULT_PROFILE"]

HEADER_NAME = "sl1_vectors.h"
SELFTEST_NAME = "sl1_selftest.c"
SELFTEST_SOURCE = Path(__file__).with_name("selftest.c")
"""The self-test program, installed beside this module (meson install_data)."""
EXPORT_FORMATS = ("c-header", "hex")
_PER_LINE = 8  # array values per line of the C header


# ---- shared helpers -------------------------------------------------------------------

def _fill_byte(vs: VectorSet) -> int:
    """The byte dx1 is filled with before each call (the loader checks it is FILL_BYTE)."""
    return FILL_BYTE


def _fill_bits(vs: VectorSet) -> int:
    return fill_bits(vs.format)


def written_elements(vs: VectorSet, row: dict) -> int:
    """How many leading elements of a case's dx1 a correct call writes (the rest keep the fill):
    :attr:`sl1conf.adapters.base.Case.elements_written`, which the expected columns used too."""
    return vs.case(row).call(vs.format.name).elements_written


def _hex_digits(fmt: formats.Format, arr) -> list[str]:
    """Fixed-width lowercase hex of each pattern, no prefix (fast: one bytes.hex for the array)."""
    width = fmt.bits // 4
    text = np.ascontiguousarray(arr, fmt.uint).astype(fmt.uint.newbyteorder(">")).tobytes().hex()
    return [text[i:i + width] for i in range(0, len(text), width)]


def _models(vs: VectorSet) -> list[str]:
    """The accepted evaluation models (reference.models.ACCEPTED) whose columns the set has."""
    return [m.name for m in accepted_models(vs.format) if f"model-{m.name}" in vs.manifest["columns"]]


def _check_columns(vs: VectorSet) -> None:
    for column in ("oracle", "oracle-ftz"):
        if f"expected-{column}" not in vs.arrays:
            raise VectorSetError(f"{vs.path}: the set has no {column!r} column; it cannot be exported")


def _refuse_existing(paths: Iterable[Path], force: bool) -> None:
    for path in paths:
        if path.is_dir():
            raise VectorSetError(f"{path} is a folder: choose another output path")
        if path.exists() and not force:
            raise VectorSetError(f"{path} exists: choose another output path or pass --force to replace it")


def _comment_safe(text: str) -> str:
    """Text for a C block comment or a one-line # comment: ASCII, one line, no comment end."""
    text = " ".join(str(text).split())
    text = text.encode("ascii", "replace").decode("ascii")
    return text.replace("*/", "* /")


def _c_string(text: str) -> str:
    out = []
    for ch in str(text):
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch <= "~" and ch != "?":  # no trigraphs
            out.append(ch)
        else:
            out.append("".join(f"\\{b:03o}" for b in ch.encode("utf-8")))
    return '"' + "".join(out) + '"'


def _source_line(vs: VectorSet) -> str:
    m = vs.manifest
    sha = m.get("files", {}).get("expected-oracle.bin", {}).get("sha256", "?")
    return (f"vector set: dtype {m['dtype']}, seed {m['seed']}, generator {m['generator']['name']} "
            f"{m['generator']['version']}, schema {m['schema_version']}, {len(m['families'])} families, "
            f"{len(m['cases'])} cases, {m['elements']} elements; expected-oracle.bin sha256 {sha}")


# ---- C header and self-test -------------------------------------------------------------

DEFAULT_PROFILE = "ieee"
"""The profile whose budget the header carries when the export names none."""


def _profile_facts(vs: VectorSet, profile) -> dict:
    """What the self-test takes from the profile: its name, the ULP budget for the set's dtype,
    whether the sign of zero is checked, whether flushing is accepted (``profile``: a
    rules.profiles.Profile, or None for the defaults, ieee's)."""
    from sl1conf.conformance.rules.profiles import load_profile

    given = profile is not None
    p = profile if given else load_profile(DEFAULT_PROFILE)
    fmt = vs.format
    if fmt.name not in p.max_ulp:
        raise VectorSetError(f"profile {p.name} has no {fmt.name} (it documents {', '.join(p.dtypes)}): "
                             f"it gives no budget for the {fmt.name} vectors of {vs.path}")
    return {"name": p.name, "given": given, "sha256": p.sha256 if given else "", "max_ulp": int(p.max_ulp[fmt.name]),
            "strict_zero_sign": bool(p.strict_zero_sign), "accept_ftz": p.flush_to_zero == "accepted"}


def boundary_elements(vs: VectorSet) -> tuple[np.ndarray, np.ndarray]:
    """(first, index): the elements on the boundary (the exact x1 - x2 is +beta or -beta,
    reference.exact.at_boundary), as sorted element indices of the set's arrays; case k's are
    index[first[k]:first[k + 1]] (first has one entry more than there are cases)."""
    fmt = vs.format
    rows = vs.manifest["cases"]
    first = np.zeros(len(rows) + 1, np.int64)
    found = []
    with np.errstate(all="ignore"):
        for k, row in enumerate(rows):
            off, n = row["offset"], row["n"]
            hit = np.flatnonzero(exact.at_boundary(fmt, vs.arrays["x1"][off:off + n], vs.arrays["x2"][off:off + n],
                                               int(row["beta"], 16))) if n else np.zeros(0, np.int64)
            found.append(hit + off)
            first[k + 1] = first[k] + hit.size
    return first, (np.concatenate(found).astype(np.int64) if found else np.zeros(0, np.int64))

def _c_array(name: str, ctype: str, fmt: formats.Format, arr) -> Iterator[str]:
    arr = np.asarray(arr)
    size = max(int(arr.size), 1)
    yield f"static const {ctype} {name}[{size}] = {{"
    if arr.size == 0:
        yield " 0 }; /* empty: one unused element, as C has no empty arrays */\n\n"
        return
    yield "\n"
    digits = [f"0x{h}" for h in _hex_digits(fmt, arr)] if ctype == "sl1_bits_t" else [str(int(v)) for v in arr]
    for i in range(0, len(digits), _PER_LINE):
        yield "    " + ", ".join(digits[i:i + _PER_LINE]) + ",\n"
    yield "};\n\n"


def _header_chunks(vs: VectorSet, profile=None) -> Iterator[str]:
    fmt = vs.format
    prof = _profile_facts(vs, profile)
    b_first, b_index = boundary_elements(vs)
    m = vs.manifest
    rows = m["cases"]
    alt_offsets: list[int] = []
    case_lines = []
    buf = 1
    for row in rows:
        core_mask = int(row["core_mask"], 16)
        if core_mask > 0xFFFFFFFF:
            raise VectorSetError(f"{vs.path}: case {row['id']}: core_mask {row['core_mask']} does not fit 32 bits")
        if not -2**31 <= row["length"] < 2**31:
            raise VectorSetError(f"{vs.path}: case {row['id']}: length {row['length']} does not fit an int")
        first = len(alt_offsets)
        alt_offsets.extend(a["offset"] for a in row["alternatives"])
        buf = max(buf, row["n"], row["length"])
        case_lines.append(
            f"    {{{_c_string(row['id'])}, {int(row['family'])}, {row['offset']}u, {row['n']}u, "
            f"{row['length']}, {written_elements(vs, row)}u, {formats.hex_bits(fmt, int(row['beta'], 16))}, "
            f"'{row['variant']}', {core_mask:#x}u, {first}u, {len(row['alternatives'])}u}},"
            f" /* {row['result']}{': ' + _comment_safe(', '.join(row['flags'])) if row['flags'] else ''} */\n")
    cases_per_family: dict[int, int] = {}
    for row in rows:
        cases_per_family[row["family"]] = cases_per_family.get(row["family"], 0) + 1

    yield (f"/* {HEADER_NAME}: golden vectors for SmoothL1LossGrad ({fmt.name}), generated by sl1conf "
           f"{__version__}.\n"
           f" * Do not edit: regenerate with `sl1conf vectors export DIR --format c-header`.\n"
           f" * {_comment_safe(_source_line(vs))}\n"
           " *\n"
           " * Values are the set's stored bit patterns (IEEE binary"
           f"{fmt.bits}, as unsigned integers), one array\n"
           " * per file of the set: inputs dy, x1, x2; expected dx1 in the columns oracle (correctly\n"
           " * rounded, gradual underflow) and oracle-ftz (subnormal inputs and result flushed to\n"
           " * zero); the further acceptable dx1 arrays of open cases (sl1_alternatives, one block\n"
           " * of n elements per alternative, at sl1_alt_offsets[alt_first ...]). Case k's elements\n"
           " * are [offset, offset + n) of every input and column array. Elements at index >= written\n"
           f" * keep the fill pattern {formats.hex_bits(fmt, _fill_bits(vs))} (the byte {_fill_byte(vs):#04x} "
           "in every byte).\n"
           " * See docs/vector-format.md of sl1conf, and sl1_selftest.c for the program that uses them.\n"
           " */\n"
           "#ifndef SL1_VECTORS_H\n#define SL1_VECTORS_H\n\n#include <stdint.h>\n\n")
    yield (f"#define SL1_VEC_DTYPE {_c_string(fmt.name)}\n"
           f"#define SL1_VEC_BITS {fmt.bits}\n"
           f"#define SL1_VEC_SEED {int(m['seed'])}\n"
           f"#define SL1_VEC_SET {_c_string(vs.set_id)} /* the set's name in reports (dtype, seed, manifest sha256) */\n"
           f"#define SL1_VEC_GENERATOR {_c_string(m['generator']['name'] + ' ' + m['generator']['version'])}\n"
           f"#define SL1_VEC_FILL_BYTE {_fill_byte(vs):#04x}\n"
           f"#define SL1_VEC_FILL {formats.hex_bits(fmt, _fill_bits(vs))}u\n"
           f"#define SL1_VEC_ELEMENTS {int(m['elements'])}u\n"
           f"#define SL1_VEC_CASES {len(rows)}u\n"
           f"#define SL1_VEC_FAMILIES {len(m['families'])}u\n"
           f"#define SL1_VEC_ALT_ELEMENTS {int(vs.arrays['alternatives'].size)}u\n"
           f"#define SL1_VEC_MODELS {len(_models(vs))}u /* accepted evaluation models, bit for bit */\n"
           f"#define SL1_VEC_BUF {buf}u /* elements of the largest call (n or length), at least 1 */\n"
           f"#define SL1_VEC_BOUNDARY {int(b_index.size)}u /* elements on the boundary (exact x1 - x2 == +-beta) */\n\n")
    source = ("given to the export" + (f", sha256 {prof['sha256']}" if prof["sha256"] else "") if prof["given"]
              else "the defaults: no --platform or --profile was given to the export")
    yield (f"/* The profile judged by (certify's budget; -D options of sl1_selftest.c override): {prof['name']}, "
           f"{_comment_safe(source)}. */\n"
           f"#define SL1_PROFILE_NAME {_c_string(prof['name'])}\n"
           f"#define SL1_PROFILE_GIVEN {int(prof['given'])} /* 0: the defaults ({DEFAULT_PROFILE}'s) */\n"
           f"#define SL1_PROFILE_MAX_ULP {prof['max_ulp']}u /* ULPs from the oracle accepted off the boundary */\n"
           f"#define SL1_PROFILE_STRICT_ZERO_SIGN {int(prof['strict_zero_sign'])}\n"
           f"#define SL1_PROFILE_ACCEPT_FTZ {int(prof['accept_ftz'])} /* the oracle-ftz column is acceptable */\n\n")
    yield f"typedef uint{fmt.bits}_t sl1_bits_t;\n\n"
    yield ("struct sl1_case {\n"
           "    const char *id;      /* \"<family>.<index>\", stable */\n"
           "    int family;          /* family id */\n"
           "    uint32_t offset;     /* first element in sl1_dy, sl1_x1, sl1_x2, sl1_oracle, sl1_oracle_ftz */\n"
           "    uint32_t n;          /* elements of the arrays */\n"
           "    int32_t length;      /* the length argument of the call (may differ from n) */\n"
           "    uint32_t written;    /* leading elements a correct call writes; the rest keep the fill */\n"
           "    sl1_bits_t beta;     /* beta's bits */\n"
           "    char variant;        /* 's' (shared storage, core_mask) or 'p' (private storage) */\n"
           "    uint32_t core_mask;  /* passed as int to the _s function */\n"
           "    uint32_t alt_first;  /* first index in sl1_alt_offsets */\n"
           "    uint32_t alt_count;  /* alternatives of the case (0 unless its result is acceptable) */\n"
           "};\n\n"
           "struct sl1_family {\n"
           "    int id;              /* stable family id */\n"
           "    const char *name;\n"
           "    uint32_t cases;\n"
           "    uint32_t elements;   /* sum of n over its cases */\n"
           "};\n\n")
    yield from _c_array("sl1_dy", "sl1_bits_t", fmt, vs.arrays["dy"])
    yield from _c_array("sl1_x1", "sl1_bits_t", fmt, vs.arrays["x1"])
    yield from _c_array("sl1_x2", "sl1_bits_t", fmt, vs.arrays["x2"])
    yield from _c_array("sl1_oracle", "sl1_bits_t", fmt, vs.arrays["expected-oracle"])
    yield from _c_array("sl1_oracle_ftz", "sl1_bits_t", fmt, vs.arrays["expected-oracle-ftz"])
    yield from _c_array("sl1_alternatives", "sl1_bits_t", fmt, vs.arrays["alternatives"])
    models = _models(vs)
    yield f"static const char *const sl1_model_names[{max(len(models), 1)}] = {{" + (
        ", ".join(_c_string(name) for name in models) or "\"\"") + "};\n"
    yield from _c_array("sl1_models", "sl1_bits_t", fmt,
                        np.concatenate([vs.arrays[f"expected-model-{name}"] for name in models])
                        if models else np.zeros(0, fmt.uint))
    yield from _c_array("sl1_alt_offsets", "uint32_t", fmt, np.array(alt_offsets, np.int64))
    yield ("/* The boundary: case k's elements whose exact x1 - x2 is +beta or -beta are\n"
           " * sl1_boundary[sl1_boundary_first[k] ... sl1_boundary_first[k + 1]) (element indices of the\n"
           " * input arrays, ascending). There no budget applies (certify's R02). */\n")
    yield from _c_array("sl1_boundary_first", "uint32_t", fmt, b_first)
    yield from _c_array("sl1_boundary", "uint32_t", fmt, b_index)
    yield f"static const struct sl1_case sl1_cases[{max(len(rows), 1)}] = {{\n"
    yield from case_lines if case_lines else ["    {\"\", 0, 0u, 0u, 0, 0u, 0, 'p', 0u, 0u, 0u}, /* none */\n"]
    yield "};\n\n"
    yield f"static const struct sl1_family sl1_families[{max(len(m['families']), 1)}] = {{\n"
    if not m["families"]:
        yield "    {0, \"\", 0u, 0u}, /* none */\n"
    for fam in m["families"]:
        yield (f"    {{{int(fam['id'])}, {_c_string(fam['name'])}, {cases_per_family.get(fam['id'], 0)}u, "
               f"{int(fam['elements'])}u}}, /* {_comment_safe(fam['description'])} */\n")
    yield "};\n\n#endif /* SL1_VECTORS_H */\n"


def export_c_header(vs: VectorSet, out_dir, *, force: bool = False, profile=None) -> list[Path]:
    """Write ``sl1_vectors.h`` and ``sl1_selftest.c`` into ``out_dir``; their paths.

    ``profile`` (a rules.profiles.Profile): the budget the header carries for the self-test
    (its name, max_ulp for the set's dtype, strict zero sign, flushing accepted); None: the
    defaults, the ieee profile's. Each file is written atomically; existing files are
    replaced only with ``force`` (VectorSetError otherwise, before anything is written).
    """
    _check_columns(vs)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise VectorSetError(f"{out} exists and is not a folder: choose another output folder")
    header, selftest = out / HEADER_NAME, out / SELFTEST_NAME
    _refuse_existing((header, selftest), force)
    header_text = "".join(_header_chunks(vs, profile))  # build first: a bad set writes nothing
    program = SELFTEST_SOURCE.read_bytes()
    write_atomic(header, header_text, encoding="ascii")
    write_atomic(selftest, program)
    return [header, selftest]


# ---- hex text ---------------------------------------------------------------------------

def _hex_header(vs: VectorSet) -> str:
    fmt = vs.format
    w = fmt.bits // 4
    fill = f"{_fill_bits(vs):0{w}x}"
    lines = [
        f"sl1conf golden vectors for SmoothL1LossGrad, TestFloat-style text (sl1conf {__version__}).",
        _source_line(vs),
        f"dtype {fmt.name}: every value is an IEEE binary{fmt.bits} bit pattern, {w} lowercase hex digits, no 0x.",
        "generator: " + _comment_safe(f"{vs.manifest['generator']['name']} {vs.manifest['generator']['version']}, "
                                      f"seed {vs.manifest['seed']}; oracle {vs.manifest['oracle']['name']}: "
                                      f"{vs.manifest['oracle']['precision']}"),
        "",
        "One line per element of every case (cases in order, elements 0 .. n-1):",
        "  <case id> <index> <dy> <x1> <x2> <beta> <oracle> [ftz=<hex>] [acceptable=<name>:<hex>,...] [fill]",
        "  case id  <family id>.<case index> (family ids never change; see the vector format doc); index: element",
        "  dy x1 x2 the inputs of the element; beta: the case's beta (the same on every line of a case)",
        "  oracle   the expected dx1: correctly rounded (round to nearest even, gradual underflow)",
        "  ftz=     present when the flush-to-zero oracle (subnormal inputs and result read and written",
        "           as zeros of the same sign) differs from the oracle; acceptable on flushing targets",
        "  acceptable=  on every element of an 'acceptable' case: each named alternative's dx1",
        "           (names percent-encoded); any one of them is an acceptable result for the element",
        "  fill     the element is not written by a correct call (length <= 0, core_mask 0, index >= length):",
        f"           dx1 holds {fill} (the byte {_fill_byte(vs):#04x} in every byte) before the call",
        "           and must still hold it after",
        "Before each call every element of dx1 holds the fill pattern. A result matches when its bits are",
        "equal, or when both are NaN (NaN is compared as a class).",
        "Each case starts with a comment line: # case <id> family=<id> name=<family name> variant=<s|p>",
        "  core_mask=<hex> length=<the length argument> n=<elements> written=<elements a correct call",
        "  writes> beta=<hex> result=<valid|acceptable> flags=<comma list or ->",
        "",
    ]
    return "".join(f"# {line}".rstrip() + "\n" for line in lines)


def _hex_chunks(vs: VectorSet) -> Iterator[str]:
    fmt = vs.format
    fill = f"{_fill_bits(vs):0{fmt.bits // 4}x}"
    names = {fam["id"]: fam["name"] for fam in vs.manifest["families"]}
    yield _hex_header(vs)
    for row in vs.manifest["cases"]:
        n, off = row["n"], row["offset"]
        written = written_elements(vs, row)
        beta = f"{int(row['beta'], 16):0{fmt.bits // 4}x}"
        flags = ",".join(row["flags"]) or "-"
        yield (f"# case {row['id']} family={row['family']} name={names.get(row['family'], '?')} "
               f"variant={row['variant']} core_mask={row['core_mask']} length={row['length']} n={n} "
               f"written={written} beta={beta} result={row['result']} flags={_comment_safe(flags).replace(' ', '_')}\n")
        if not n:
            continue
        s = slice(off, off + n)
        dy, x1, x2 = (_hex_digits(fmt, vs.arrays[k][s]) for k in ("dy", "x1", "x2"))
        oracle = vs.arrays["expected-oracle"][s]
        ftz = vs.arrays["expected-oracle-ftz"][s]
        oracle_hex, ftz_hex = _hex_digits(fmt, oracle), _hex_digits(fmt, ftz)
        differs = oracle != ftz
        alts = [(quote(a["name"], safe="-_.+"),
                 _hex_digits(fmt, vs.arrays["alternatives"][a["offset"]:a["offset"] + n]))
                for a in row["alternatives"]]
        lines = []
        for i in range(n):
            line = f"{row['id']} {i} {dy[i]} {x1[i]} {x2[i]} {beta} {oracle_hex[i]}"
            if differs[i]:
                line += f" ftz={ftz_hex[i]}"
            if alts:
                line += " acceptable=" + ",".join(f"{name}:{h[i]}" for name, h in alts)
            if i >= written:
                line += " fill"
            lines.append(line + "\n")
        yield "".join(lines)
    yield f"# end: {vs.manifest['elements']} elements, fill pattern {fill}\n"


def export_hex(vs: VectorSet, out_path, *, force: bool = False) -> Path:
    """Write the TestFloat-style hex text of the set to ``out_path`` (atomically); its path."""
    _check_columns(vs)
    out = Path(out_path)
    _refuse_existing([out], force)
    return write_atomic(out, _hex_chunks(vs), encoding="ascii")


# ---- one entry point ----------------------------------------------------------------------

def export(vs: VectorSet, fmt: str, out, *, force: bool = False, profile=None) -> list[Path]:
    """Export in ``fmt`` (``"c-header"``: ``out`` is a folder; ``"hex"``: ``out`` is a file); the paths
    written. ``profile``: for the c-header, the profile whose budget the header carries."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; known: {', '.join(EXPORT_FORMATS)}")
    if fmt == "c-header":
        return export_c_header(vs, out, force=force, profile=profile)
    return [export_hex(vs, out, force=force)]


def parse_hex_line(line: str) -> dict:
    """One element line of the hex text: {"case", "index", "dy", "x1", "x2", "beta", "oracle",
    "ftz", "acceptable": {name: bits}, "fill"} with bit patterns as ints (ftz defaults to oracle)."""
    parts = line.split()
    if len(parts) < 7 or line.startswith("#"):
        raise ValueError(f"not an element line: {line!r}")
    case, index, *values = parts[:7]
    rec = {"case": case, "index": int(index)}
    rec.update({k: int(v, 16) for k, v in zip(("dy", "x1", "x2", "beta", "oracle"), values)})
    rec.update(ftz=rec["oracle"], acceptable={}, fill=False)
    for token in parts[7:]:
        if token == "fill":
            rec["fill"] = True
        elif token.startswith("ftz="):
            rec["ftz"] = int(token[4:], 16)
        elif token.startswith("acceptable="):
            for item in token[len("acceptable="):].split(","):
                name, _, bits = item.rpartition(":")
                rec["acceptable"][unquote(name)] = int(bits, 16)
        else:
            raise ValueError(f"unknown token {token!r} in {line!r}")
    return rec

