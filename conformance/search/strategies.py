"""Hypothesis strategies for whole batches of SmoothL1LossGrad inputs, as bit patterns.

Why a byte buffer: drawing floats element by element gives mostly zeros and simple
values, ``hypothesis.extra.numpy.arrays`` degenerates beyond a few dozen elements, and
one ``st.integers`` draw per element is far too slow for hundreds of thousands of
elements. So each example is ONE ``st.binary`` draw of a fixed size (a few KB; hypothesis
allows about 8 KB of choices per example), which :func:`decode_batch` turns with numpy
into hundreds of elements at once. Hypothesis still shrinks the bytes, and the decoding
is built so that shrinking gives simple counterexamples: a buffer of zero bytes decodes
to ``beta = 1.0`` and elements ``dy = x1 = x2 = +0``, and a zero control byte always
means "no special treatment".

Layout of a buffer (W = 2 bytes for fp16, 4 for fp32; integers little-endian)::

    header   h0          beta selector (see _decode_beta)
             h1..h4      raw beta bits (the first W bytes are used)
             h5 h6 h7    per-example densities ("swarm testing"): how often elements get
                         a special value, a structured (x1, x2) pair, a structured dy
    elements, each `6 + 3W` bytes:
             sdy sx1 sx2   special-value control for dy, x1, x2
             mpair mdy     structure control for (x1, x2) and for dy
             p             small parameters (ulp offsets, bit counts, signs)
             dy x1 x2      raw bit patterns

Per example the densities vary (specials from 0 to about 1/2, structures from 0 to
nearly 1), so some examples are nearly all raw patterns and others are dense with
specials or boundary cases. The structures
(see _pair_modes and _dy_modes) aim at the interesting regions of the operator: diff
exactly on +-beta or a few ulps beside it (also with the exact diff beside beta while
the rounded one is on it), the middle branch with full-precision diff, ties and
near-ties of the final rounding (beta a power of two, dy with few significant bits),
subnormal results, signed zeros, and overflowing intermediates.

The public pieces are :func:`element_batches` (the strategy of the engine's tests),
:func:`calls` (whole calls of variable length, the strategy of the fuzzing property),
:func:`decode_batch` (the pure decoding: ``sl1conf fuzz`` feeds it numpy random bytes),
:func:`elements_per_example`, and the tables ``FORMATS``, ``SPECIALS`` and ``SPECIAL_BETAS``.

Hypothesis is a test extra: it is imported by the strategies only, so the fuzzer, which
needs just :func:`decode_batch`, runs without it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["element_batches", "calls", "decode_batch", "elements_per_example", "FORMATS", "SPECIALS", "SPECIAL_BETAS",
           "DEFAULT_BUFFER_SIZE"]

DEFAULT_BUFFER_SIZE = 6000

_HEADER_SIZE = 8  # h0, then 4 bytes of beta bits (only W used), then 3 density bytes


class _Fmt:
    """Bit layout of one binary interchange format."""

    def __init__(self, name, ebits, mbits, utype, ftype):
        self.name, self.ebits, self.mbits = name, ebits, mbits
        self.utype, self.ftype = utype, ftype
        self.width = (1 + ebits + mbits) // 8
        self.sign = 1 << (ebits + mbits)
        self.emax_field = (1 << ebits) - 1
        self.bias = (1 << (ebits - 1)) - 1
        self.mmask = (1 << mbits) - 1
        self.inf = self.emax_field << mbits
        self.max_finite = self.inf - 1
        self.min_normal = 1 << mbits
        self.one = self.bias << mbits
        self.qnan = self.inf | (1 << (mbits - 1))

    def pack(self, sign, field, mant):
        """Bits from sign (0/1), exponent field and mantissa (numpy int64 arrays or ints)."""
        return (np.asarray(sign, np.int64) << (self.ebits + self.mbits)) | (
            np.asarray(field, np.int64) << self.mbits
        ) | np.asarray(mant, np.int64)

    def pow2(self, k):
        """Bits of 2^k for a normal power of two."""
        return (k + self.bias) << self.mbits

    def nearest(self, x):
        """Bits (int64) of float64 values rounded to this format."""
        with np.errstate(all="ignore"):
            return np.asarray(x, np.float64).astype(self.ftype).view(self.utype).astype(np.int64)

    def value(self, bits):
        """float64 values of bit patterns (exact)."""
        with np.errstate(all="ignore"):  # signalling NaNs raise "invalid" when widened
            return np.asarray(bits).astype(self.utype).view(self.ftype).astype(np.float64)


FORMATS = {
    "fp16": _Fmt("fp16", 5, 10, np.uint16, np.float16),
    "fp32": _Fmt("fp32", 8, 23, np.uint32, np.float32),
}


def _specials(f: _Fmt) -> np.ndarray:
    """Special bit patterns; +0 first, so a zero index is the simplest one."""
    m = f.mbits
    positive = [
        0,  # +0
        1,  # min subnormal
        f.min_normal - 1,  # max subnormal
        f.min_normal,  # min normal
        f.max_finite,  # max finite
        f.inf,
        f.qnan,  # quiet NaN
        f.inf | 1,  # signalling NaN
        f.inf | (1 << (m - 2)) | 5,  # signalling NaN with a payload
        f.one,  # 1
        f.pow2(-1),  # 0.5
        f.one | (1 << (m - 1)),  # 1.5
        f.max_finite - 1,  # max finite - 1 ulp (fp16: 65472)
        f.max_finite & ~f.mmask,  # largest power of two (fp16: 32768)
        f.min_normal + 1,  # min normal + 1 ulp
        1 << (m - 1),  # half of min normal (subnormal)
    ]
    if f.name == "fp16":
        positive += [0x7BFD, 0x7BF0, 0x7A00]  # near 65504: 65440, 65024, 49152
    else:
        positive += [0x7F000000, 0x00000003, 0x3DCCCCCD]  # 2^127, 3 * 2^-149, 0.1
    table = []
    for b in positive:
        table += [b, b | f.sign]
    return np.array(table, dtype=np.int64)


def _special_betas(f: _Fmt) -> np.ndarray:
    """Special betas; 1.0 first (the simple case)."""
    m = f.mbits
    return np.array(
        [
            f.one,  # 1.0
            f.pow2(-1),  # 0.5
            int(f.nearest(0.1)[()]),  # 0.1 rounded
            0,  # +0
            f.sign,  # -0
            f.sign | f.one,  # -1.0
            f.sign | int(f.nearest(0.1)[()]),  # -0.1
            1,  # min subnormal
            f.min_normal - 1,  # max subnormal
            f.min_normal,  # min normal
            1 << (m - 3),  # subnormal 2^(emin-3) (fp16: 2^-17, so 1/beta overflows)
            f.pow2(-10),  # tiny normal
            f.pow2(1),  # 2.0
            f.pow2(min(10, f.bias)),  # large (1024)
            f.max_finite,
            f.inf,
            f.sign | f.inf,  # -inf
            f.qnan,
            f.sign | f.inf | 1,  # negative signalling NaN
            f.sign | f.max_finite,  # most negative finite
        ],
        dtype=np.int64,
    )


SPECIALS = {name: _specials(f) for name, f in FORMATS.items()}
SPECIAL_BETAS = {name: _special_betas(f) for name, f in FORMATS.items()}


def elements_per_example(fmt: str, buffer_size: int = DEFAULT_BUFFER_SIZE) -> int:
    """How many elements one buffer of ``buffer_size`` bytes decodes to."""
    f = FORMATS[fmt]
    return (buffer_size - _HEADER_SIZE) // (6 + 3 * f.width)


def _decode_beta(f: _Fmt, selector: int, raw: int) -> int:
    """One beta per example: special (0..127, 0 is 1.0), typical (128..191), raw (192..)."""
    if selector < 128:
        table = SPECIAL_BETAS[f.name]
        return int(table[selector % len(table)])
    if selector < 192:
        # "typical": positive, 2^-5 .. 2^2, full mantissa or (half the time) a power of two
        field = f.bias - 5 + ((raw >> f.mbits) % 8)
        mant = 0 if selector & 1 else raw & f.mmask
        return int(f.pack(0, field, mant))
    return raw


def _offset(f: _Fmt, bits: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Move finite values k ulps in magnitude (kept finite, and not below zero)."""
    sign = bits & f.sign
    mag = bits & (f.sign - 1)
    moved = np.clip(mag + k, 0, f.max_finite)
    return np.where(mag <= f.max_finite, sign | moved, bits)


def _pair_modes(f, mode, p, r1, r2, beta):
    """Structured (x1, x2) from raw patterns r1, r2, parameters p, for each mode 0..7."""
    m = f.mbits
    sign1 = (r1 >> (f.ebits + m)) & 1
    mant1, mant2 = r1 & f.mmask, r2 & f.mmask
    s = (p >> 3) & 1  # which boundary: +beta or -beta
    k_small = (p & 7) - 3  # -3 .. 4 ulps
    k_boundary = np.array([0, 0, 0, 0, 1, -1, 2, -2])[p & 7]  # mostly exactly on it
    bfield = (beta >> m) & f.emax_field
    bfield = np.int64(min(max(int(bfield), 1), f.emax_field - 1))  # a finite binade
    top = f.emax_field - 1
    bval = float(f.value(np.int64(beta)))
    sbeta = np.where(s == 1, -bval, bval)
    x1 = np.empty_like(r1)
    x2 = np.empty_like(r2)
    # 0: x2 = x1 moved by a few ulps (k = 0: diff is +0)
    sel = mode == 0
    x1[sel], x2[sel] = r1[sel], _offset(f, r1, k_small)[sel]
    # 1: diff on +-beta: x1 in beta's binade, x2 = x1 -+ beta (rounded), then 0..2 ulps off
    a = f.pack(sign1, np.clip(bfield + ((p >> 4) & 3) - 1, 0, top), mant1)
    with np.errstate(all="ignore"):
        b = _offset(f, f.nearest(f.value(a) - sbeta), k_boundary)
    sel = mode == 1
    x1[sel], x2[sel] = a[sel], b[sel]
    # 2: x2 = -+beta (0..2 ulps off), x1 tiny: the exact diff is beside +-beta,
    #    the rounded diff often on it
    tiny = f.pack(sign1, np.clip(bfield - 1 - ((p >> 4) % (m + 4)), 0, top), mant1)
    on = _offset(f, f.nearest(-sbeta), k_boundary)
    sel = mode == 2
    x1[sel], x2[sel] = tiny[sel], on[sel]
    # 3 / 4: one of them +-0, the other a full-precision value up to 2*|beta|: diff exact
    inside = f.pack(sign1, np.clip(bfield - ((p >> 4) & 7), 0, top), mant1)
    zero = ((p >> 7) & 1) << (f.ebits + m)
    sel = mode == 3
    x1[sel], x2[sel] = inside[sel], zero[sel]
    sel = mode == 4
    x1[sel], x2[sel] = zero[sel], inside[sel]
    # 5: both near beta's binade: middle branch with a rounded-looking diff
    near2 = f.pack((r2 >> (f.ebits + m)) & 1, np.clip(bfield - ((p >> 5) & 3), 0, top), mant2)
    sel = mode == 5
    x1[sel], x2[sel] = inside[sel], near2[sel]
    # 6: two zeros, all four sign combinations (the sign of a zero diff)
    sel = mode == 6
    x1[sel] = ((p[sel] >> 3) & 1) << (f.ebits + m)
    x2[sel] = ((p[sel] >> 4) & 1) << (f.ebits + m)
    # 7: huge values of opposite signs: the exact diff is beyond max finite
    big1 = f.pack(sign1, top - (p & 1), mant1)
    big2 = f.pack(1 - sign1, top - ((p >> 1) & 1), mant2)
    sel = mode == 7
    x1[sel], x2[sel] = big1[sel], big2[sel]
    return x1, x2


def _dy_modes(f, mode, p, r):
    """Structured dy from raw pattern r and parameters p, for each mode 0..7."""
    m = f.mbits
    sign = (r >> (f.ebits + m)) & 1
    field = (r >> m) & f.emax_field
    finite_field = np.minimum(field, f.emax_field - 1)
    mant = r & f.mmask
    t = (p >> 2) & 7  # keep t leading mantissa bits: near-ties of the final rounding
    few = f.pack(sign, finite_field, mant & ~((1 << (m - t)) - 1) & f.mmask)
    tie = f.pack(sign, finite_field, 1 << (m - 1))  # 1.5 * 2^j: exact ties with odd diffs
    small = f.pack(sign, (p >> 5) % 3, mant)  # subnormal or barely normal: subnormal results
    one = f.pack(sign, f.bias, 0)
    large = f.pack(sign, f.emax_field - 1 - ((p >> 5) & 3), mant)  # diff * dy overflows
    choices = [few, tie, small, one, large, few, tie, small]
    return np.choose(mode, choices)


def _touched(control: np.ndarray, threshold: int) -> np.ndarray:
    """Whether control bytes select their element, with probability threshold/32.

    The top 5 bits of the byte are compared, the low 3 bits choose the mode. A zero
    threshold (zero header byte) or a zero control byte never selects, so shrinking
    towards zero bytes shrinks towards raw elements.
    """
    return (control >> 3) > 31 - threshold


def decode_batch(fmt: str, buf: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Decode a byte buffer into ``(dy, x1, x2, beta)``: uint16/uint32 arrays and an int.

    Deterministic and total: any buffer of at least the header size decodes (extra
    bytes after the last whole element are ignored).
    """
    f = FORMATS[fmt]
    raw = np.frombuffer(buf, dtype=np.uint8)
    head, body = raw[:_HEADER_SIZE], raw[_HEADER_SIZE:]
    head = np.pad(head, (0, _HEADER_SIZE - len(head)))
    beta_raw = int.from_bytes(bytes(head[1 : 1 + f.width]), "little")
    beta = _decode_beta(f, int(head[0]), beta_raw)
    # densities, as thresholds of _touched: 0..15 for specials, 0..31 for structures
    thr_special = int(head[5]) >> 4
    thr_pair, thr_dy = int(head[6]) >> 3, int(head[7]) >> 3

    stride = 6 + 3 * f.width
    n = len(body) // stride
    el = body[: n * stride].reshape(n, stride)
    ctl = el[:, :6].astype(np.int64)
    vals = np.ascontiguousarray(el[:, 6:]).view(np.dtype(f.utype).newbyteorder("<"))
    vals = vals.reshape(n, 3).astype(np.int64)
    dy, x1, x2 = vals[:, 0].copy(), vals[:, 1].copy(), vals[:, 2].copy()
    sdy, sx1, sx2, mpair, mdy, p = (ctl[:, i] for i in range(6))

    if n:
        on = _touched(mpair, thr_pair)
        px1, px2 = _pair_modes(f, mpair & 7, p, x1, x2, beta)
        x1, x2 = np.where(on, px1, x1), np.where(on, px2, x2)
        on = _touched(mdy, thr_dy)
        dy = np.where(on, _dy_modes(f, mdy & 7, p, dy), dy)
        # specials override: the table index comes from the (replaced) raw pattern
        table = SPECIALS[fmt]
        for arr, ctl_byte in ((dy, sdy), (x1, sx1), (x2, sx2)):
            on = _touched(ctl_byte, thr_special)
            arr[:] = np.where(on, table[arr % len(table)], arr)  # zero pattern -> +0
    return dy.astype(f.utype), x1.astype(f.utype), x2.astype(f.utype), int(beta)


def element_batches(fmt: str, buffer_size: int = DEFAULT_BUFFER_SIZE):
    """Strategy for ``(dy, x1, x2, beta)``: arrays of ``elements_per_example(fmt)`` bit
    patterns (uint16 for fp16, uint32 for fp32) and one beta bit pattern (int)."""
    from hypothesis import strategies as st

    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    return st.binary(min_size=buffer_size, max_size=buffer_size).map(lambda b: decode_batch(fmt, b))


def calls(fmt: str, variant: str = "p", core_mask: int = 0xFF, max_elements: int = 64):
    """Strategy for one API call (an adapters ``Case``) of 1 to ``max_elements`` elements.

    The buffer's length is free, so hypothesis shrinks a failure towards the shortest array
    (and, by shrinking bytes to zero, towards beta = 1.0 and zeros); the shared variant draws
    a core_mask within ``core_mask`` that shrinks to ``core_mask`` itself (every core)."""
    from hypothesis import strategies as st

    from sl1conf.adapters.base import Case

    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    stride = 6 + 3 * FORMATS[fmt].width
    buffers = st.binary(min_size=_HEADER_SIZE + stride, max_size=_HEADER_SIZE + stride * max_elements)
    masks = st.integers(0, core_mask).map(lambda m: m & core_mask or core_mask)

    def build(buf: bytes, mask: int) -> Case:
        dy, x1, x2, beta = decode_batch(fmt, buf)
        return Case(fmt, dy, x1, x2, beta, variant=variant, core_mask=mask if variant == "s" else core_mask)

    return st.builds(build, buffers, masks if variant == "s" else st.just(core_mask))
