"""``sl1conf demo``: every evaluation model against the exact oracle, on boundary-weighted data.

A first look at what the suite measures, until ``certify`` exists: how far each
way of evaluating the formula lands from the correctly rounded result, the one
command that takes the worst element apart, and the bundled sample C library
run through the ctypes adapter (guarded worker process) against its model and
the oracle.
"""

from __future__ import annotations

from sl1conf.conformance.cli.args import count_arg, dtype_arg, seed_arg

import numpy as np

from sl1conf.reference import formats
from sl1conf.reference.models import SPEC_ORDER, get_model, models_for
from sl1conf.reference.fast_oracle import smoothl1lossgrad  # exact, bit for bit the mpmath oracle

from sl1conf.conformance.common.commands import explain_command
from sl1conf.conformance.vectors.sampling import hard_batch, random_batch

BATCH = 250


def run_demo(dtypes, *, elements: int, seed: int, out=print) -> int:
    rng = np.random.default_rng(seed)
    for fmt in dtypes or [formats.FP16, formats.FP32]:
        batches = [random_batch(fmt, min(BATCH, elements - i), rng) for i in range(0, elements, BATCH)]
        expected = [formats.to_bits(fmt, smoothl1lossgrad(*b.floats(fmt))) for b in batches]
        out(f"\n{fmt.name}: {elements} boundary-weighted elements, {len(batches)} betas, seed {seed}")
        out(f"  {'model':<16}{'bit-exact':>10}{'max ULP':>12}{'NaN/sign':>9}  worst element (dy, x1, x2, beta)")
        worst_spec = None
        for model in models_for(fmt):
            exact = nan_or_sign = 0
            worst = (-1, None)
            for b, want in zip(batches, expected):
                got = formats.to_bits(fmt, model(*b.floats(fmt)))
                dist = formats.ulp_distance(fmt, got, want)
                exact += int(np.sum(formats.same_result(fmt, got, want)))
                nan_or_sign += int(np.sum((dist == formats.NAN_MISMATCH) | ((dist == 0) & (got != want)
                                                                      & ~formats.is_nan_bits(fmt, got))))
                finite = np.where(dist == formats.NAN_MISMATCH, -1, dist)
                i = int(np.argmax(finite))
                if finite[i] > worst[0]:
                    worst = (int(finite[i]), (b.dy[i], b.x1[i], b.x2[i], b.beta))
            where = ", ".join(formats.hex_bits(fmt, v) for v in worst[1]) if worst[0] > 0 else "-"
            out(f"  {model.name:<16}{exact:>10}{worst[0]:>12}{nan_or_sign:>9}  {where}")
            if model.name == f"{SPEC_ORDER}-{fmt.name}" and worst[0] > 0:
                worst_spec = worst[1]
        if worst_spec is not None:
            out(f"  take the spec-order model's worst element apart:\n"
                f"    {explain_command(fmt.name, *(formats.hex_bits(fmt, v) for v in worst_spec))}")
    return demo_sample_library(dtypes or [formats.FP16, formats.FP32], seed=seed, out=out)


def demo_sample_library(dtypes, *, seed: int, out=print) -> int:
    """The bundled C sample through ctypes, in a guarded worker, against its model and the oracle."""
    from sl1conf.adapters import AdapterError, Case, load
    from sl1conf.adapters.sample import build_library
    from sl1conf.reference.fast_oracle import smoothl1lossgrad as exact

    try:
        impl = load(f"ctypes:{build_library()}")
    except AdapterError as exc:
        out(f"\nsample C library: not run ({exc})")
        return 0
    rng = np.random.default_rng(seed)
    with impl:
        out(f"\nsample C library {impl.path.name} via ctypes (guarded worker): exports {', '.join(impl.symbols)}")
        out(f"  {'dtype':<6}{'cases':>6}{'elements':>10}{'= model':>9}{'max ULP':>9}  memory")
        for fmt in dtypes:
            cases = [Case(fmt.name, b.dy, b.x1, b.x2, b.beta, variant=v, core_mask=m)
                     for v, m in (("p", 0xFF), ("s", 0xFF), ("s", 0x55), ("s", 0x81))
                     for b in (random_batch(fmt, n, rng) if n % 2 else hard_batch(fmt, n, rng)
                               for n in (1, 7, 64, 1001))]
            outcomes = impl.run(cases)
            same = worst = elements = 0
            memory = set()
            for c, o in zip(cases, outcomes):
                if o.status != "ok":
                    memory.add(f"{o.status}: {o.detail}")
                    continue
                memory |= {"wrote outside dx1"} if o.wrote_outside else set()
                memory |= {f"changed {name}" for name in o.inputs_changed or ()}
                want = formats.to_bits(fmt, exact(*c.floats()))
                model = formats.to_bits(fmt, get_model(f"{SPEC_ORDER}-{fmt.name}")(*c.floats()))
                same += int(formats.same_result(fmt, o.out, model).sum())
                dist = formats.ulp_distance(fmt, o.out, want)
                worst = max(worst, int(np.where(dist == formats.NAN_MISMATCH, 0, dist).max(initial=0)))
                elements += c.n
            out(f"  {fmt.name:<6}{len(cases):>6}{elements:>10}{same:>9}{worst:>9}  "
                f"{'; '.join(sorted(memory)) or 'clean (guard pages, canaries, inputs)'}")
    return 0


DEMO_MAX_ELEMENTS = 10_000_000
"""--elements ceiling: about 10 s per million elements and dtype here, so at most minutes."""


def _run(args) -> int:
    return run_demo(args.dtype, elements=args.elements, seed=args.seed)


def register(sub) -> None:
    """Add ``demo`` to the ``sl1conf`` parser."""
    p = sub.add_parser("demo", help="compare every evaluation model with the exact oracle")
    p.add_argument("--dtype", type=dtype_arg, action="append", help="fp16 or fp32 (repeatable; default both)")
    p.add_argument("--elements", type=count_arg(DEMO_MAX_ELEMENTS), default=3000, metavar="N",
                   help=f"elements per dtype, 1 to {DEMO_MAX_ELEMENTS:,} (default 3000)")
    p.add_argument("--seed", type=seed_arg, default=2026, help="random seed (default 2026)")
    p.set_defaults(run=_run)
