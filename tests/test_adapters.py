"""One adapter test-suite, the same tests for every adapter, against the exact oracle.

Every adapter that can run here takes part: the builtin references, the bundled
sample library through ctypes (in a guarded worker) and through the simulator
protocol (host-built harness), and PyTorch. Expected bits come from the oracle:
references must match it exactly, honest evaluation orders within 2 ULP on
ordinary inputs (the models' error bound; docs/evaluation-models.md).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from sl1conf.adapters import AdapterError, Case, load
from sl1conf.conformance.vectors.sampling import TYPICAL_BETAS, random_batch
from sl1conf.reference import fast_oracle
from sl1conf.reference import formats as F

EXACT = {"builtin:oracle", "builtin:fast-oracle"}
LENGTHS = (0, 1, 7, 17, 100, 1025)


def _sample_library():
    from sl1conf.adapters.sample import build_library
    return build_library()


def _sim_template():
    from sl1conf.adapters.simulator import host_template
    return host_template()


SPECS = {
    "builtin:oracle": lambda: "builtin:oracle",
    "builtin:fast-oracle": lambda: "builtin:fast-oracle",
    "builtin:kernel": lambda: "builtin:kernel",
    "builtin:model:divmul-fp32": lambda: "builtin:model:divmul-fp32",
    "builtin:model:muldiv-fp64": lambda: "builtin:model:muldiv-fp64",
    "ctypes:sample": lambda: f"ctypes:{_sample_library()}",
    "sim:sample-host": lambda: f"sim:{_sim_template()}",
    "torch:cpu": lambda: "torch:cpu",
}


@pytest.fixture(scope="module", params=list(SPECS))
def adapter(request):
    name = request.param
    if name.startswith("torch") and not os.environ.get("CI"):
        pytest.importorskip("torch")  # CI installs torch: there a missing torch fails below
    a = load(SPECS[name]())
    yield a
    a.close()


def _ordinary_cases(adapter, rng, lengths=LENGTHS):
    """Finite inputs on the scale of a typical beta: where every honest order is within 2 ULP."""
    cases = []
    for dtype in adapter.dtypes:
        fmt = F.format_by_name(dtype)
        for variant in adapter.variants:
            for n in lengths:
                beta = np.array([TYPICAL_BETAS[n % len(TYPICAL_BETAS)]], fmt.dtype).view(fmt.uint)[0]
                b = random_batch(fmt, n, rng, beta=int(beta))
                dy, x1, x2, _ = b.floats(fmt)
                ok = np.isfinite(dy) & np.isfinite(x1) & np.isfinite(x2)
                with np.errstate(all="ignore"):
                    ok &= np.isfinite((x1.astype(np.float64) - x2) * dy)
                    ok &= np.abs(x1.astype(np.float64) - x2) < float(fmt.max_finite)
                    ok &= (np.abs(dy) > 2.0 ** (fmt.emin + 8)) | (dy == 0)  # results far from underflow
                keep = lambda a: np.where(ok, a, 0).astype(fmt.uint)  # noqa: E731
                cases.append(Case(dtype, keep(b.dy), keep(b.x1), keep(b.x2), b.beta, variant=variant,
                                  core_mask=0xFF, id=f"{dtype}-{variant}-n{n}"))
    return cases


def _expected(case):
    m = case.elements_written
    want = case.initial_out()
    if m:
        dy, x1, x2, beta = case.floats()
        want[:m] = F.to_bits(case.format, fast_oracle.smoothl1lossgrad(dy[:m], x1[:m], x2[:m], beta))
    return want


def test_ordinary_inputs_against_the_oracle(adapter):
    cases = _ordinary_cases(adapter, np.random.default_rng(1))
    assert cases, f"{adapter.name} offers nothing"
    for case, outcome in zip(cases, adapter.run(cases)):
        assert outcome.status == "ok", f"{adapter.name} {case.id}: {outcome.status} {outcome.detail}"
        want = _expected(case)
        dist = F.ulp_distance(case.format, outcome.out, want)
        limit = 0 if adapter.name in EXACT else 2
        worst = int(np.argmax(dist)) if dist.size else 0
        assert dist.size == 0 or dist[worst] <= limit, (
            f"{adapter.name} {case.id} element {worst}: got {F.hex_bits(case.format, outcome.out[worst])}, "
            f"oracle {F.hex_bits(case.format, want[worst])} ({int(dist[worst])} ULP)")
        assert outcome.wrote_outside in (None, False) and not outcome.inputs_changed


def test_length_zero_and_core_mask_zero_write_nothing(adapter):
    rng = np.random.default_rng(2)
    base = _ordinary_cases(adapter, rng, lengths=(9,))
    cases = []
    for c in base:
        cases.append(Case(c.dtype, c.dy, c.x1, c.x2, c.beta, variant=c.variant, length=0, id=c.id + "-len0"))
        if c.variant == "s":
            cases.append(Case(c.dtype, c.dy, c.x1, c.x2, c.beta, variant="s", core_mask=0, id=c.id + "-mask0"))
    for case, outcome in zip(cases, adapter.run(cases)):
        assert outcome.status == "ok", f"{case.id}: {outcome.detail}"
        assert (outcome.out == case.initial_out()).all(), f"{adapter.name} {case.id} wrote into dx1"


def test_core_mask_never_changes_the_result(adapter):
    if "s" not in adapter.variants:
        pytest.skip(f"{adapter.name} has no shared-storage variant")
    rng = np.random.default_rng(3)
    for c in _ordinary_cases(adapter, rng, lengths=(1, 13, 1001)):
        if c.variant != "s":
            continue
        masks = (0x1, 0xFF, 0x55, 0xAA, 0x81, 0x80)
        outs = adapter.run([Case(c.dtype, c.dy, c.x1, c.x2, c.beta, variant="s", core_mask=m) for m in masks])
        for m, o in zip(masks, outs):
            assert o.status == "ok" and F.same_result(c.format, o.out, outs[0].out).all(), \
                f"{adapter.name} {c.id}: core_mask {m:#x} differs from 0x1"


def test_unsupported_case_is_reported_not_run():
    half_only = load("builtin:model:divmul-fp16")  # computes in fp16: offers no fp32
    assert half_only.dtypes == ("fp16",)
    z = np.zeros(3, np.uint32)
    assert half_only.run([Case("fp32", z, z, z, 0)])[0].status == "unsupported"


def test_unknown_names_are_clear_errors():
    for spec, words in [("nosuch:thing", "unknown implementation"), ("builtin:nope", "unknown builtin"),
                        ("builtin:model:divmul-fp8", "unknown evaluation model"),
                        ("ctypes:/no/such/lib.so", "no such library"), ("builtin", "say which")]:
        with pytest.raises(AdapterError, match=words):
            load(spec)


def test_plugins_add_prefixes_through_entry_points(monkeypatch):
    """A third-party adapter registered in the sl1conf.adapters group is found by its prefix."""
    from importlib import metadata

    import sl1conf.adapters as registry

    ep = metadata.EntryPoint(name="myboard", value="sl1conf.adapters.builtin:builtin", group="sl1conf.adapters")
    real = metadata.entry_points
    monkeypatch.setattr(registry.metadata, "entry_points",
                        lambda group=None, **kw: [ep] if group == "sl1conf.adapters" else real(group=group, **kw))
    assert "myboard" in registry.prefixes()
    adapter = load("myboard:fast-oracle")  # the plugin's factory receives the rest of the name
    assert adapter.name == "builtin:fast-oracle"
    broken = metadata.EntryPoint(name="broken", value="no_such_module_xyz:make", group="sl1conf.adapters")
    monkeypatch.setattr(registry.metadata, "entry_points", lambda group=None, **kw: [broken])
    with pytest.raises(AdapterError, match="does not load"):
        load("broken:x")


def test_without_a_c_compiler_ctypes_offers_fp32_and_says_why(monkeypatch, tmp_path):
    from sl1conf.adapters.sample import build_library

    lib = build_library()  # built while the compiler is still there
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("SL1CONF_CACHE", str(tmp_path / "cache"))  # no cached shim either
    with load(f"ctypes:{lib}") as impl:
        assert impl.dtypes == ("fp32",)
        assert "no C compiler" in impl.describe()["note"]
        case = _ordinary_cases(impl, np.random.default_rng(5), lengths=(33,))[0]
        [outcome] = impl.run([case])
        assert outcome.status == "ok" and (F.ulp_distance(case.format, outcome.out, _expected(case)) <= 2).all()


def test_calls_are_counted_and_a_restart_gives_a_fresh_worker(tmp_path):
    """Adapter.calls_made numbers call history (R14 reports where a change was first seen by it);
    restart() makes the next call the first of a new process: a library counting its calls in a
    static variable starts again from one. An in-process adapter cannot restart and says so."""
    from sl1conf.adapters.cbuild import build_shared

    src = tmp_path / "counter.c"
    src.write_text("static int calls;\n"
                   "void fp_smoothl1lossgrad_p(float *dy, float *dx1, float *x1, float *x2, int n, float b)\n"
                   "{ calls++; for (int i = 0; i < n; i++) dx1[i] = (float)calls; }\n")
    one = Case("fp32", np.ones(3, np.uint32), np.ones(3, np.uint32), np.ones(3, np.uint32), 0x3F800000)
    skipped = Case("fp16", np.ones(3, np.uint16), np.ones(3, np.uint16), np.ones(3, np.uint16), 0x3C00)
    with load(f"ctypes:{build_shared('counter', [src])}") as impl:
        outs = impl.run([one, skipped, one])  # fp16 is not offered: not a call
        assert impl.calls_made == 2 and outs[1].status == "unsupported"
        assert [o.out.view(np.float32)[0] for o in (outs[0], outs[2])] == [1.0, 2.0]
        assert impl.restart() is True and impl.calls_made == 0
        [again] = impl.run([one])
        assert again.out.view(np.float32)[0] == 1.0 and impl.calls_made == 1
    kernel = load("builtin:kernel")
    kernel.run([one])
    assert kernel.restart() is False and kernel.calls_made == 1
