"""Export a golden vector set for use without Python: a C header with a self-test program, or hex text.

Two forms (docs/vector-format.md, "Exports"):

:func:`export_c_header`
    ``sl1_vectors.h``: the set's inputs and correctly rounded results as ``static const``
    arrays of bit patterns (hex literals of the stored values), and per element every result
    the suite's judge accepts under the profile the export names (``rules.acceptance``: an
    interval of the data format, NaN and zero-sign flags, and the further intervals of the
    few elements that need them), a case table and a family table; and ``sl1_selftest.c``: a
    C99 program (plus ``_Float16`` for fp16 sets) that calls the library under test through
    the documented API for every case, checks every element against its record with integer
    comparisons and prints one line per family, with no file I/O, for running on the target
    itself. Its verdict per family is certify's on the same results (``certify --results``),
    tests/test_selftest_gate.py. The program is a fixed C source, ``selftest.c`` beside this
    module, copied unchanged: everything that differs from one set to another is in the
    header it includes, so the file compiles as it stands.

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
from sl1conf.reference import formats

from sl1conf.conformance.common.files import write_atomic
from sl1conf.conformance.common.platforms import DEFAULT_PLATFORM
from sl1conf.conformance.vectors.store import VectorSet, VectorSetError

__all__ = ["HEADER_NAME", "SELFTEST_NAME", "EXPORT_FORMATS", "export_c_header", "export_hex", "export",
           "written_elements", "parse_hex_line", "set_acceptance", "bytes_per_element", "bytes_per_extra"]

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
    return vs.case(row).call.elements_written


def _hex_digits(fmt: formats.Format, arr) -> list[str]:
    """Fixed-width lowercase hex of each pattern, no prefix (fast: one bytes.hex for the array)."""
    width = fmt.bits // 4
    text = np.ascontiguousarray(arr, fmt.uint).astype(fmt.uint.newbyteorder(">")).tobytes().hex()
    return [text[i:i + width] for i in range(0, len(text), width)]


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

def _profile_of(vs: VectorSet, profile, given: "bool | None"):
    """(the profile, whether the export was given it): ``profile`` (a rules.profiles.Profile: the
    command's session loaded it, ieee's when it named none, and says by ``given``), refused where
    it has no budget for the set's dtype. None, from a caller of this module's functions without
    a session: the one default of every command, ``common.platforms.DEFAULT_PLATFORM``."""
    if profile is None:
        from sl1conf.conformance.rules.profiles import load_profile

        profile, given = load_profile(DEFAULT_PLATFORM), False
    if vs.format.name not in profile.max_ulp:
        raise VectorSetError(f"profile {profile.name} has no {vs.format.name} (it documents "
                             f"{', '.join(profile.dtypes)}): it gives no budget for the {vs.format.name} vectors "
                             f"of {vs.path}")
    return profile, True if given is None else bool(given)


def _regenerate(p, given: bool) -> str:
    """The export's command line for this profile: ``--platform NAME`` where the profile is a
    built-in one's bytes (read from a copy or not), else ``--profile FILE`` naming the file by its
    name and sha256 (never a path: the export stays the same wherever it is made)."""
    from sl1conf.conformance.rules.profiles import ProfileError, load_profile

    try:
        builtin = load_profile(p.name).sha256 == p.sha256
    except ProfileError:
        builtin = False
    if builtin or not given:
        return f"--platform {p.name}"
    return f"--profile FILE (FILE: the profile {p.name}, sha256 {p.sha256})"


def _judged_case(row: dict, p) -> bool:
    """Whether certify makes the case's call on profile ``p`` (Profile.lacks_cores)."""
    return not (row["variant"] == "s" and p.lacks_cores(int(row["core_mask"], 16)))


def set_acceptance(vs: VectorSet, profile):
    """Every result the judge accepts for each element of the set under ``profile``
    (rules.acceptance.Accepted over the set's arrays), the elements a correct call leaves
    unwritten accepting the fill pattern only: the case's own alternatives, the others'
    columns holding the oracle there, as certify judges a run's calls at once."""
    from sl1conf.conformance.rules.acceptance import Accepted, accepted
    from sl1conf.conformance.rules.judge import Expected

    fmt = vs.format
    oracle = vs.arrays["expected-oracle"]
    beta = np.zeros(oracle.size, fmt.uint)
    written = np.zeros(oracle.size, bool)
    alternatives: dict = {}
    for row in vs.manifest["cases"]:
        off, n = row["offset"], row["n"]
        beta[off:off + n] = int(row["beta"], 16)
        written[off:off + written_elements(vs, row)] = True
        for name, bits in vs.case(row).alternatives.items():
            alternatives.setdefault(name, oracle.copy())[off:off + n] = bits
    with np.errstate(all="ignore"):
        acc = accepted(fmt, profile, Expected(oracle, vs.arrays["expected-oracle-ftz"], {}, alternatives),
                       vs.arrays["dy"], vs.arrays["x1"], vs.arrays["x2"], beta)
    fill = _fill_bits(vs)
    keep = written[acc.extra_at]
    return Accepted(fmt, np.where(written, acc.lo, fill).astype(fmt.uint), np.where(written, acc.hi, fill).astype(fmt.uint),
                    np.where(written, acc.flags, 0).astype(np.uint8), acc.extra_at[keep], acc.extra_lo[keep],
                    acc.extra_hi[keep])


def bytes_per_element(fmt: formats.Format) -> int:
    """What the header costs a board per element, compiled: dy, x1, x2, the correctly rounded
    result, the interval's lo and hi (one pattern each) and the flags (one byte)."""
    return 6 * fmt.dtype.itemsize + 1


def bytes_per_extra(fmt: formats.Format) -> int:
    """Per further interval: its element (uint32_t), lo and hi."""
    return 4 + 2 * fmt.dtype.itemsize


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


def _case_line(vs: VectorSet, row: dict, p) -> str:
    """One entry of ``sl1_cases``; VectorSetError where the case does not fit the C types."""
    core_mask = int(row["core_mask"], 16)
    if core_mask > 0xFFFFFFFF:
        raise VectorSetError(f"{vs.path}: case {row['id']}: core_mask {row['core_mask']} does not fit 32 bits")
    if not -2**31 <= row["length"] < 2**31:
        raise VectorSetError(f"{vs.path}: case {row['id']}: length {row['length']} does not fit an int")
    return (f"    {{{_c_string(row['id'])}, {int(row['family'])}, {row['offset']}u, {row['n']}u, "
            f"{row['length']}, {written_elements(vs, row)}u, {formats.hex_bits(vs.format, int(row['beta'], 16))}, "
            f"'{row['variant']}', {core_mask:#x}u, {int(_judged_case(row, p))}}},"
            f" /* {row['result']}{': ' + _comment_safe(', '.join(row['flags'])) if row['flags'] else ''} */\n")


def _data_bytes(vs: VectorSet, acc) -> int:
    """What the header's data costs compiled (said in its comment and SL1_VEC_BYTES)."""
    fmt = vs.format
    return bytes_per_element(fmt) * int(vs.manifest["elements"]) + bytes_per_extra(fmt) * int(acc.extra_at.size)


def _header_comment(vs: VectorSet, p, given: bool, cost: int) -> str:
    """The opening comment (what the header holds, how to write it again) and the include guard."""
    fmt = vs.format
    return (f"/* {HEADER_NAME}: golden vectors for SmoothL1LossGrad ({fmt.name}), generated by sl1conf "
            f"{__version__}.\n"
            f" * Do not edit: regenerate with `sl1conf vectors export DIR --format c-header {_regenerate(p, given)}`\n"
            f" * (DIR: the vector set {vs.set_id}).\n"
            f" * {_comment_safe(_source_line(vs))}\n"
            " *\n"
            " * Values are the set's stored bit patterns (IEEE binary"
            f"{fmt.bits}, as unsigned integers): inputs dy, x1, x2\n"
            " * and the correctly rounded dx1 (sl1_oracle), one element per array entry; then per element\n"
            " * every result the suite's judge accepts under the profile below (sl1conf's\n"
            " * conformance/rules/acceptance.py): an interval sl1_lo .. sl1_hi on the ordered line of the\n"
            " * numbers other than zero, flags (sl1_accept: SL1_ACCEPT_NAN, _PLUS_ZERO, _MINUS_ZERO; _BOUNDARY\n"
            " * says no budget applies there), and the further intervals of the few elements whose accepted\n"
            " * numbers are not one interval (sl1_extra_at/_lo/_hi, case k's from sl1_extra_first[k]).\n"
            " * Case k's elements are [offset, offset + n) of every per-element array. Elements at\n"
            f" * index >= written keep the fill pattern {formats.hex_bits(fmt, _fill_bits(vs))} (the byte "
            f"{_fill_byte(vs):#04x} in every byte).\n"
            f" * Compiled, the data costs {bytes_per_element(fmt)} bytes per element and {bytes_per_extra(fmt)} per "
            f"further interval: {cost} bytes here.\n"
            " * See docs/vector-format.md of sl1conf, and sl1_selftest.c for the program that uses them.\n"
            " */\n"
            "#ifndef SL1_VECTORS_H\n#define SL1_VECTORS_H\n\n#include <stdint.h>\n\n")


def _set_macros(vs: VectorSet, acc, p, cost: int) -> str:
    """The SL1_VEC_ macros: what the set is and the sizes the program needs."""
    from sl1conf.conformance.rules import acceptance as A

    fmt, m = vs.format, vs.manifest
    rows = m["cases"]
    buf = max([1] + [max(row["n"], row["length"]) for row in rows])
    n_boundary = int(((acc.flags & A.BOUNDARY) != 0).sum())
    not_judged = sum(not _judged_case(row, p) for row in rows)
    return (f"#define SL1_VEC_DTYPE {_c_string(fmt.name)}\n"
            f"#define SL1_VEC_BITS {fmt.bits}\n"
            f"#define SL1_VEC_SEED {int(m['seed'])}\n"
            f"#define SL1_VEC_SET {_c_string(vs.set_id)} /* the set's name in reports (dtype, seed, manifest sha256) */\n"
            f"#define SL1_VEC_GENERATOR {_c_string(m['generator']['name'] + ' ' + m['generator']['version'])}\n"
            f"#define SL1_VEC_FILL_BYTE {_fill_byte(vs):#04x}\n"
            f"#define SL1_VEC_FILL {formats.hex_bits(fmt, _fill_bits(vs))}u\n"
            f"#define SL1_VEC_ELEMENTS {int(m['elements'])}u\n"
            f"#define SL1_VEC_CASES {len(rows)}u\n"
            f"#define SL1_VEC_FAMILIES {len(m['families'])}u\n"
            f"#define SL1_VEC_BUF {buf}u /* elements of the largest call (n or length), at least 1 */\n"
            f"#define SL1_VEC_BOUNDARY {n_boundary}u /* elements on the boundary (exact x1 - x2 == +-beta) */\n"
            f"#define SL1_VEC_EXTRA {int(acc.extra_at.size)}u /* further intervals (sl1_extra_*) */\n"
            f"#define SL1_VEC_NOT_JUDGED {not_judged}u /* cases certify does not call on the profile */\n"
            f"#define SL1_VEC_BYTES {cost}u /* the data above, compiled */\n\n")


def _profile_macros(fmt: formats.Format, p, given: bool) -> str:
    """The SL1_PROFILE_ macros (which profile the accepted sets are for) and the SL1_ACCEPT_ flags."""
    from sl1conf.conformance.rules import acceptance as A

    source = ("given to the export" + (f", sha256 {p.sha256}" if p.sha256 else "") if given
              else "the defaults: no --platform or --profile was given to the export")
    return (f"/* The profile the accepted sets are computed for: {p.name}, {_comment_safe(source)}. */\n"
            f"#define SL1_PROFILE_NAME {_c_string(p.name)}\n"
            f"#define SL1_PROFILE_GIVEN {int(given)} /* 0: the defaults ({DEFAULT_PLATFORM}'s) */\n"
            f"#define SL1_PROFILE_MAX_ULP {int(p.max_ulp[fmt.name])}u /* ULPs from the oracle accepted off the boundary */\n"
            f"#define SL1_PROFILE_STRICT_ZERO_SIGN {int(p.strict_zero_sign)}\n"
            f"#define SL1_PROFILE_ACCEPT_FTZ {int(p.flush_to_zero == 'accepted')} /* flushing subnormals accepted */\n\n"
            f"#define SL1_ACCEPT_NAN {A.NAN}u /* any NaN */\n"
            f"#define SL1_ACCEPT_PLUS_ZERO {A.PLUS_ZERO}u\n"
            f"#define SL1_ACCEPT_MINUS_ZERO {A.MINUS_ZERO}u\n"
            f"#define SL1_ACCEPT_BOUNDARY {A.BOUNDARY}u /* on the boundary: no budget (said, not judged by) */\n\n")


def _types(fmt: formats.Format) -> str:
    """sl1_bits_t and the case and family records."""
    return (f"typedef uint{fmt.bits}_t sl1_bits_t;\n\n"
            "struct sl1_case {\n"
            "    const char *id;      /* \"<family>.<index>\", stable */\n"
            "    int family;          /* family id */\n"
            "    uint32_t offset;     /* first element in every per-element array */\n"
            "    uint32_t n;          /* elements of the arrays */\n"
            "    int32_t length;      /* the length argument of the call (may differ from n) */\n"
            "    uint32_t written;    /* leading elements a correct call writes; the rest keep the fill */\n"
            "    sl1_bits_t beta;     /* beta's bits */\n"
            "    char variant;        /* 's' (shared storage, core_mask) or 'p' (private storage) */\n"
            "    uint32_t core_mask;  /* passed as int to the _s function */\n"
            "    int judged;          /* 0: certify makes no such call on the profile (cores it lacks) */\n"
            "};\n\n"
            "struct sl1_family {\n"
            "    int id;              /* stable family id */\n"
            "    const char *name;\n"
            "    uint32_t cases;\n"
            "    uint32_t elements;   /* sum of n over its cases */\n"
            "};\n\n")


def _element_arrays(vs: VectorSet, acc) -> Iterator[str]:
    """The per-element arrays (inputs, oracle, accepted sets) and the further intervals."""
    fmt = vs.format
    yield from _c_array("sl1_dy", "sl1_bits_t", fmt, vs.arrays["dy"])
    yield from _c_array("sl1_x1", "sl1_bits_t", fmt, vs.arrays["x1"])
    yield from _c_array("sl1_x2", "sl1_bits_t", fmt, vs.arrays["x2"])
    yield from _c_array("sl1_oracle", "sl1_bits_t", fmt, vs.arrays["expected-oracle"])
    yield from _c_array("sl1_lo", "sl1_bits_t", fmt, acc.lo)
    yield from _c_array("sl1_hi", "sl1_bits_t", fmt, acc.hi)
    yield from _c_array("sl1_accept", "uint8_t", fmt, acc.flags)
    yield ("/* The further intervals: case k's are sl1_extra_first[k] .. sl1_extra_first[k + 1] - 1, ascending by\n"
           " * element (sl1_extra_at: an index of the per-element arrays). */\n")
    starts = [row["offset"] for row in vs.manifest["cases"]] + [int(vs.manifest["elements"])]
    yield from _c_array("sl1_extra_first", "uint32_t", fmt, np.searchsorted(acc.extra_at, starts))
    yield from _c_array("sl1_extra_at", "uint32_t", fmt, acc.extra_at)
    yield from _c_array("sl1_extra_lo", "sl1_bits_t", fmt, acc.extra_lo)
    yield from _c_array("sl1_extra_hi", "sl1_bits_t", fmt, acc.extra_hi)


def _tables(m: dict, case_lines: list[str]) -> Iterator[str]:
    """sl1_cases and sl1_families (one unused entry where there is none: C has no empty arrays),
    and the include guard's end."""
    rows = m["cases"]
    yield f"static const struct sl1_case sl1_cases[{max(len(rows), 1)}] = {{\n"
    yield from case_lines if case_lines else ["    {\"\", 0, 0u, 0u, 0, 0u, 0, 'p', 0u, 0}, /* none */\n"]
    yield "};\n\n"
    cases_per_family: dict[int, int] = {}
    for row in rows:
        cases_per_family[row["family"]] = cases_per_family.get(row["family"], 0) + 1
    yield f"static const struct sl1_family sl1_families[{max(len(m['families']), 1)}] = {{\n"
    if not m["families"]:
        yield "    {0, \"\", 0u, 0u}, /* none */\n"
    for fam in m["families"]:
        yield (f"    {{{int(fam['id'])}, {_c_string(fam['name'])}, {cases_per_family.get(fam['id'], 0)}u, "
               f"{int(fam['elements'])}u}}, /* {_comment_safe(fam['description'])} */\n")
    yield "};\n\n#endif /* SL1_VECTORS_H */\n"


def _header_chunks(vs: VectorSet, profile=None, given: "bool | None" = None) -> Iterator[str]:
    """``sl1_vectors.h`` in pieces; every case is checked (``_case_line``) before the first piece."""
    p, given = _profile_of(vs, profile, given)
    acc = set_acceptance(vs, p)
    case_lines = [_case_line(vs, row, p) for row in vs.manifest["cases"]]
    cost = _data_bytes(vs, acc)
    yield _header_comment(vs, p, given, cost)
    yield _set_macros(vs, acc, p, cost)
    yield _profile_macros(vs.format, p, given)
    yield _types(vs.format)
    yield from _element_arrays(vs, acc)
    yield from _tables(vs.manifest, case_lines)


def export_c_header(vs: VectorSet, out_dir, *, force: bool = False, profile=None,
                    given: "bool | None" = None) -> list[Path]:
    """Write ``sl1_vectors.h`` and ``sl1_selftest.c`` into ``out_dir``; their paths.

    ``profile`` (a rules.profiles.Profile): the profile whose accepted results the header carries
    per element (:func:`set_acceptance`), named in the header with the command that writes it
    again; the command's session loads it (ieee's when the command names none, ``given`` False:
    the header says it holds the defaults'); None, from a caller without a session: the defaults.
    ``given`` None: whether ``profile`` is given. Each file is written atomically; existing files
    are replaced only with ``force`` (VectorSetError otherwise, before anything is written).
    """
    _check_columns(vs)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise VectorSetError(f"{out} exists and is not a folder: choose another output folder")
    header, selftest = out / HEADER_NAME, out / SELFTEST_NAME
    _refuse_existing((header, selftest), force)
    header_text = "".join(_header_chunks(vs, profile, given))  # build first: a bad set writes nothing
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

def export(vs: VectorSet, fmt: str, out, *, force: bool = False, profile=None,
           given: "bool | None" = None) -> list[Path]:
    """Export in ``fmt`` (``"c-header"``: ``out`` is a folder; ``"hex"``: ``out`` is a file); the paths
    written. ``profile``, ``given``: for the c-header, the profile whose accepted results the header
    carries and whether the export was asked for it (:func:`export_c_header`)."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; known: {', '.join(EXPORT_FORMATS)}")
    if fmt == "c-header":
        return export_c_header(vs, out, force=force, profile=profile, given=given)
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

