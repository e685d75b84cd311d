"""``sl1conf explain``: one element, taken apart.

Shows what a user investigating a single failing element needs: the exact
inputs, the exact diff and the branch it selects, the class of every intermediate an
evaluation order computes (x1 - x2, diff * dy, diff / beta, 1 / beta: exact, rounded,
subnormal, underflowing or overflowing in the data format), the exact and the correctly
rounded result, the flush-to-zero result, and every evaluation model's bits with their
ULP distance from the correctly rounded result.
"""

from __future__ import annotations

from decimal import Context, Decimal
from fractions import Fraction

import numpy as np

from sl1conf.conformance.cli.args import EXIT_OK, UsageError, dtype_arg
from sl1conf.reference import formats
from sl1conf.reference.models import models_for
from sl1conf.reference.oracle import evaluate_element

SIGNIFICANT = 21


def decimal_text(value: "Fraction | str", sign_bit: int = 0) -> str:
    """Decimal text of an exact value: exact when it fits, else '~' and 21 digits."""
    if isinstance(value, str):
        return value
    q = Fraction(value)
    if q == 0:
        return "-0" if sign_bit else "0"
    d = Context(prec=SIGNIFICANT).divide(Decimal(q.numerator), Decimal(q.denominator))
    text = format(d.normalize(), "g") if abs(d.adjusted()) < 8 else format(d.normalize(), "e")
    return text if Fraction(d) == q else "~" + text


def value_text(fmt: formats.Format, bits: int) -> str:
    cls, sign = formats.classify(fmt, bits)
    if cls is formats.FloatClass.INF:
        return "-inf" if sign else "+inf"
    if cls.is_nan:
        return ("-" if sign else "") + ("sNaN" if cls is formats.FloatClass.SNAN else "NaN")
    return decimal_text(formats.decode(fmt, bits), sign)



def intermediate_class(fmt: formats.Format, value: "Fraction | None") -> str:
    """What the data format does to an exact intermediate: zero, exact, rounded, subnormal (below
    the smallest normal: gradual underflow, or zero where the platform flushes), underflows to
    zero (below half the smallest subnormal), overflows (rounds to infinity)."""
    if value is None:
        return "infinite or NaN (an operand is): no rounding to speak of"
    if value == 0:
        return "zero"
    mag = abs(value)
    rounded = formats.round_to_format(fmt, mag)
    cls, _ = formats.classify(fmt, rounded)
    if cls is formats.FloatClass.INF:
        return f"overflows {fmt.name} (rounds to infinity)"
    if cls is formats.FloatClass.ZERO:
        return f"underflows to zero in {fmt.name}"
    exact = formats.decode(fmt, rounded) == mag
    if mag < fmt.min_normal:
        return f"subnormal in {fmt.name}" + (", exact" if exact else ", rounded") + " (a flushing platform reads zero)"
    return "exact in " + fmt.name if exact else "rounded in " + fmt.name


def _intermediates(fmt: formats.Format, bits: dict, diff) -> list:
    """Lines naming the class of every intermediate an evaluation order computes."""
    def value(name):
        cls, _ = formats.classify(fmt, bits[name])
        return None if cls is formats.FloatClass.INF or cls.is_nan else formats.decode(fmt, bits[name])
    dy, beta = value("dy"), value("beta")
    d = diff if isinstance(diff, Fraction) else None
    terms = [("x1 - x2", d),
             ("(x1 - x2) * dy", None if d is None or dy is None else d * dy),
             ("(x1 - x2) / beta", None if d is None or not beta else d / beta),
             ("1 / beta", None if not beta else 1 / beta)]
    out = ["", f"  intermediates (exact value; what {fmt.name} does to it)"]
    for name, v in terms:
        shown = decimal_text(v) if v is not None else "-"
        out.append(f"  {name:<18}{shown:<30}  {intermediate_class(fmt, v)}")
    return out


def explain(fmt: formats.Format, texts: dict[str, str]) -> str:
    """The report for one element given as texts (decimal, hex float or hex bits)."""
    lines = [f"SmoothL1LossGrad, {fmt.name}, one element", ""]
    bits = {}
    lines.append(f"  {'input':<6}{'bits':<{fmt.bits // 4 + 4}}{'class':<11}value")
    for name in ("dy", "x1", "x2", "beta"):
        b, exact = formats.parse_value(fmt, texts[name])
        bits[name] = b
        cls, _ = formats.classify(fmt, b)
        note = "" if exact else f"   ({texts[name]} rounded to {fmt.name})"
        lines.append(f"  {name:<6}{formats.hex_bits(fmt, b):<{fmt.bits // 4 + 4}}{cls.value:<11}{value_text(fmt, b)}{note}")
    e = evaluate_element(fmt, bits["dy"], bits["x1"], bits["x2"], bits["beta"])
    ftz = evaluate_element(fmt, bits["dy"], bits["x1"], bits["x2"], bits["beta"], flush_subnormals=True)
    lines.append("")
    diff = e.diff
    diff_hex = f"  = {formats.hexfloat(diff)}" if isinstance(diff, Fraction) and diff != 0 else ""
    lines.append(f"  diff = x1 - x2 = {decimal_text(diff)}{diff_hex}   (exact)")
    lines.append(f"  branch: {e.branch}" + {
        "diff > beta": "   ->  dx1 = dy",
        "diff < -beta": "   ->  dx1 = -dy",
        "-beta <= diff <= beta": "   ->  dx1 = diff / beta * dy",
    }.get(e.branch, ""))
    lines += _intermediates(fmt, bits, diff)
    lines.append("")
    lines.append(f"  exact dx1 = {decimal_text(e.exact)}" + (f"   ({e.note})" if e.note else ""))
    lines.append(f"  correctly rounded dx1 = {formats.hex_bits(fmt, e.bits)}  {value_text(fmt, e.bits)}")
    if ftz.bits != e.bits:
        lines.append(f"  flush-to-zero oracle:   {formats.hex_bits(fmt, ftz.bits)}  {value_text(fmt, ftz.bits)}"
                     + (f"   ({ftz.note})" if ftz.note else ""))
    else:
        lines.append("  flush-to-zero oracle:   the same")
    lines += ["", "  evaluation models (docs/evaluation-models.md)",
              f"  {'model':<16}{'bits':<{fmt.bits // 4 + 4}}{'ULP':>5}  value"]
    arrays = {k: formats.from_bits(fmt, np.array([v], dtype=fmt.uint)) for k, v in bits.items()}
    for model in models_for(fmt):
        out = int(formats.to_bits(fmt, model(arrays["dy"], arrays["x1"], arrays["x2"], arrays["beta"][0]))[0])
        dist = int(formats.ulp_distance(fmt, out, e.bits))
        ulp = "NaN" if dist == formats.NAN_MISMATCH else str(dist)
        if dist == 0 and out != e.bits and not formats.is_nan_bits(fmt, out):
            ulp = "sign"  # +0 against -0
        lines.append(f"  {model.name:<16}{formats.hex_bits(fmt, out):<{fmt.bits // 4 + 4}}{ulp:>5}  {value_text(fmt, out)}")
    return "\n".join(lines)


def _run(args) -> int:
    texts = {"dy": args.dy, "x1": args.x1, "x2": args.x2, "beta": args.beta}
    for name, text in texts.items():
        try:
            formats.parse_value(args.dtype, text)
        except ValueError as exc:
            raise UsageError(f"--{name}: {exc}") from None
    print(explain(args.dtype, texts))
    return EXIT_OK


def register(sub) -> None:
    """Add ``explain`` to the ``sl1conf`` parser."""
    p = sub.add_parser("explain", help="take one element apart: exact diff, branch, result, models",
                       description="Values are decimals (0.1), hex floats (0x1.8p-1), hex bit "
                                   "patterns (0x3c00), inf, -inf or nan.")
    p.add_argument("--dtype", type=dtype_arg, required=True, help="fp16 or fp32")
    for name, text in (("dy", "the incoming gradient element"), ("x1", "the first input element"),
                       ("x2", "the second input element"), ("beta", "the threshold beta (> 0)")):
        p.add_argument(f"--{name}", required=True, metavar="V", help=f"{text}: a decimal, hex float, hex bit pattern, "
                                                                      "inf, -inf or nan")
    p.set_defaults(run=_run)
