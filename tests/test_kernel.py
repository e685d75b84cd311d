"""The Cython kernel: bit-identical to the numpy emulation of every model it offers.

Expected bits come from ``sl1conf.reference.models`` (itself checked against an
independent scalar emulation in test_models.py). NaN is compared as a class.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

from sl1conf.adapters.base import Case
from sl1conf.conformance.vectors.sampling import hard_batch, random_batch, special_patterns
from sl1conf.reference import formats as F
from sl1conf.reference import kernel
from sl1conf.reference.models import get_model, models_for

MODEL_CASES = [pytest.param(fmt, m.name, id=f"{fmt.name}-{m.name}")
               for fmt in (F.FP16, F.FP32) for m in models_for(fmt)]
# Lengths that hit the vector body only, the tail only, and both (8 and 16 lanes).
LENGTHS = [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 255, 1000, 1025]


def assert_same(fmt, got, want, batch=None, what=""):
    got, want = F.to_bits(fmt, got), F.to_bits(fmt, want)
    ok = F.same_result(fmt, got, want)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        where = (f" dy={int(batch.dy[i]):#x} x1={int(batch.x1[i]):#x} x2={int(batch.x2[i]):#x} "
                 f"beta={batch.beta:#x}" if batch is not None else "")
        raise AssertionError(f"{what} element {i}:{where} got {int(got[i]):#x}, want {int(want[i]):#x}")


def batches(fmt, rng, count=30):
    for k in range(count):
        n = LENGTHS[k % len(LENGTHS)]
        yield (hard_batch if k % 3 == 2 else random_batch)(fmt, n, rng)


@pytest.mark.parametrize("fmt, model", MODEL_CASES)
def test_kernel_matches_numpy_model(fmt, model):
    rng = np.random.default_rng([11, fmt.bits])
    m = get_model(model)
    for b in batches(fmt, rng):
        args = b.floats(fmt)
        assert_same(fmt, kernel.smoothl1lossgrad(*args, model=model), m(*args), b, model)


@pytest.mark.parametrize("fmt, model", MODEL_CASES)
def test_kernel_on_every_special_combination(fmt, model):
    specials = special_patterns(fmt)
    t = np.array(list(itertools.product(specials, repeat=3)), dtype=fmt.uint)
    for beta in specials.tolist():
        b = Case(fmt.name, t[:, 0].copy(), t[:, 1].copy(), t[:, 2].copy(), beta)
        args = b.floats(fmt)
        assert_same(fmt, kernel.smoothl1lossgrad(*args, model=model), get_model(model)(*args), b, model)


@pytest.mark.parametrize("model", [m.name for m in models_for(F.FP16)])
def test_fp16_every_x1_pattern(model):
    """All 65,536 fp16 x1 against a handful of (x2, dy, beta)."""
    x1 = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    for x2, dy, beta in [(0.0, 1.0, 1.0), (0.5, -3.0, 0.1), (-2.0, 1e-3, 2.0 ** -20), (100.0, 60000.0, 7.0)]:
        args = (np.full_like(x1, dy), x1, np.full_like(x1, x2), np.float16(beta))
        assert_same(F.FP16, kernel.smoothl1lossgrad(*args, model=model), get_model(model)(*args),
                    what=f"{model} x2={x2} dy={dy} beta={beta}")


@pytest.mark.parametrize("fmt", [F.FP16, F.FP32], ids=lambda f: f.name)
def test_core_mask_and_threads_never_change_the_result(fmt):
    rng = np.random.default_rng(5)
    for n in (1, 7, 1000, 1025, 70_001, 300_001):  # 300,001: large enough for the thread pool
        b = random_batch(fmt, n, rng)
        args = b.floats(fmt)
        want = kernel.smoothl1lossgrad(*args, core_mask=0x1, threads=1)
        for mask, threads in [(0xFF, None), (0xFF, 3), (0x55, 2), (0xAA, 1), (0x81, 8), (0x80000001, 2),
                              (None, 1), (None, 2), (None, 5)]:
            assert_same(fmt, kernel.smoothl1lossgrad(*args, core_mask=mask, threads=threads), want, b,
                        f"n={n} core_mask={mask} threads={threads}")


def test_core_mask_zero_writes_nothing():
    x = np.ones(10, np.float32)
    out = np.full(10, 7.0, np.float32)
    kernel.smoothl1lossgrad(x, x, x, np.float32(1), out=out, core_mask=0)
    assert (out == 7.0).all()


@pytest.mark.parametrize("fmt", [F.FP16, F.FP32], ids=lambda f: f.name)
def test_in_place_output_over_dy(fmt):
    b = random_batch(fmt, 1001, np.random.default_rng(9))
    dy, x1, x2, beta = b.floats(fmt)
    want = kernel.smoothl1lossgrad(dy, x1, x2, beta)
    inplace = dy.copy()
    kernel.smoothl1lossgrad(inplace, x1, x2, beta, out=inplace)
    assert_same(fmt, inplace, want)


def test_default_model_is_the_spec_order_in_the_data_precision():
    b = hard_batch(F.FP16, 500, np.random.default_rng(1))
    args = b.floats(F.FP16)
    assert_same(F.FP16, kernel.smoothl1lossgrad(*args), get_model("divmul-fp16")(*args))


def test_bad_arguments():
    f = np.zeros(4, np.float32)
    with pytest.raises(TypeError):
        kernel.smoothl1lossgrad(f, f.astype(np.float16), f, np.float32(1))
    with pytest.raises(ValueError):
        kernel.smoothl1lossgrad(f, f[:3], f[:3], np.float32(1))
    with pytest.raises(ValueError):
        kernel.smoothl1lossgrad(f[::2], f[::2], f[::2], np.float32(1))
    with pytest.raises(ValueError):
        kernel.smoothl1lossgrad(f, f, f, np.float32(1), model="nosuch-fp32")
    with pytest.raises(ValueError):
        kernel.smoothl1lossgrad(f, f, f, np.float32(1), model="divmul-fp16")
    with pytest.raises(ValueError):
        kernel.smoothl1lossgrad(f, f, f, np.float32(1), out=np.zeros(3, np.float32))


@pytest.mark.parametrize("forced", ["baseline", "avx2"])
def test_every_instruction_set_variant_gives_the_same_bits(forced):
    """The portable loops (what a CPU without AVX2/F16C, or aarch64, runs) and the AVX2
    loops, forced with SL1CONF_KERNEL_ISA, against the numpy models."""
    code = (
        "import numpy as np, sys\n"
        "from sl1conf.reference import kernel\n"
        "from sl1conf.reference.models import models_for\n"
        "from sl1conf.conformance.vectors.sampling import hard_batch, random_batch\n"
        "from sl1conf.reference import formats as F\n"
        "print(kernel.ISA)\n"
        "rng = np.random.default_rng(4)\n"
        "for fmt in (F.FP16, F.FP32):\n"
        "    for make in (random_batch, hard_batch):\n"
        "        b = make(fmt, 777, rng)\n"
        "        for m in models_for(fmt):\n"
        "            np.save(sys.stdout.buffer, F.to_bits(fmt, kernel.smoothl1lossgrad(*b.floats(fmt), model=m.name)))\n"
    )
    def run(env_isa):
        env = dict(os.environ)
        env.pop("SL1CONF_KERNEL_ISA", None)
        if env_isa:
            env["SL1CONF_KERNEL_ISA"] = env_isa
        return subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, check=True).stdout
    forced_out = run(forced)
    isa = forced_out.split(b"\n", 1)[0]
    if forced == "baseline":
        assert isa in (b"x86-64 baseline", b"generic")
    else:
        assert isa in (b"x86-64 AVX2+F16C", b"x86-64 baseline", b"generic")  # never wider than asked
    arrays = _load_all(forced_out.split(b"\n", 1)[1])
    assert len(arrays) == 2 * (9 + 6)
    # The same batches again here, and the numpy models' bits for them.
    rng = np.random.default_rng(4)
    expected = []
    for fmt in (F.FP16, F.FP32):
        for make in (random_batch, hard_batch):
            b = make(fmt, 777, rng)
            expected += [(fmt, F.to_bits(fmt, m(*b.floats(fmt))), m.name) for m in models_for(fmt)]
    for got, (fmt, want, name) in zip(arrays, expected):
        assert_same(fmt, got.view(fmt.dtype), want.view(fmt.dtype), what=f"{isa.decode()} {name}")


def _load_all(data: bytes) -> list:
    import io
    stream, arrays = io.BytesIO(data), []
    while stream.tell() < len(data):
        arrays.append(np.load(stream))
    return arrays


@pytest.mark.parametrize("fmt", [F.FP16, F.FP32], ids=lambda f: f.name)
def test_pool_threads_from_many_callers_and_after_fork(fmt):
    """The C worker pool: callers on several Python threads at once (one holds the pool,
    the others run alone), and a forked child (which starts workers of its own)."""
    import threading
    b = random_batch(fmt, 200_003, np.random.default_rng(21))
    args = b.floats(fmt)
    want = kernel.smoothl1lossgrad(*args, threads=1)
    assert_same(fmt, kernel.smoothl1lossgrad(*args, threads=2), want)
    assert kernel.pool_workers() >= 1
    errors = []

    def hammer(k):
        try:
            for i in range(20):
                got = kernel.smoothl1lossgrad(*args, threads=1 + (i + k) % 3,
                                              core_mask=None if i % 2 else 0xF0F)
                assert_same(fmt, got, want, what=f"caller {k} call {i}")
        except AssertionError as e:
            errors.append(e)

    callers = [threading.Thread(target=hammer, args=(k,)) for k in range(4)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert not errors, errors[0]
    pid = os.fork()
    if pid == 0:  # the child: its own workers, the same bits
        ok = False
        try:
            got = kernel.smoothl1lossgrad(*args, threads=2)
            ok = bool(F.same_result(fmt, F.to_bits(fmt, got), F.to_bits(fmt, want)).all())
            ok = ok and kernel.pool_workers() >= 1
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_traffic_probe():
    """bench/run.py's bandwidth probe: out = a ^ b ^ c on bits, threaded like the kernel."""
    rng = np.random.default_rng(3)
    for dtype in (np.uint16, np.uint32):
        a, b, c = (rng.integers(0, 1 << 16, 100_001).astype(dtype) for _ in range(3))
        out = np.empty_like(a)
        for threads in (1, 2):
            kernel._traffic(a, b, c, out, threads=threads)
            assert (out == a ^ b ^ c).all()
    with pytest.raises(ValueError):
        kernel._traffic(a, b, c, out[:-1])
