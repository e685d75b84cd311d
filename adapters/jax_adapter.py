"""JAX's gradient of the smooth L1 loss, compiled by XLA on the CPU, as an implementation under
test: ``jax``, ``jax:cpu``.

JAX has no SmoothL1LossGrad op: its users write the loss and let JAX differentiate it. So the
kernel under test is what a JAX user writes (:func:`smooth_l1_loss`, :func:`smooth_l1_grad`)::

    d = x1 - x2
    loss = jnp.where(jnp.abs(d) < beta, 0.5 * d * d / beta, jnp.abs(d) - 0.5 * beta)
    _, vjp = jax.vjp(lambda x1: loss(x1, x2, beta), x1);  dx1 = vjp(dy)[0]

jit-compiled once (``jax.jit``; XLA compiles one executable per dtype and length), with ``dy``,
``x1``, ``x2`` arrays and ``beta`` a 0-d array of the same dtype holding the exact fp16 or
fp32 value (an argument, not a constant: no constant folding of ``1 / beta``). fp16 and fp32;
JAX has no cores, so variants ``p`` and ``s`` are the same call and ``core_mask`` only decides
whether anything is computed (``core_mask == 0`` on ``s`` writes nothing), as torch's adapter;
JAX arrays are immutable, so there is no in-place form.

jax is imported lazily, in a worker process of its own
(:class:`~sl1conf.adapters.process.ProcessAdapter`): importing the suite never needs jax, and
XLA's state (its compiled executables, its thread pool) is per process, so R14's "first calls
of a fresh worker" are a fresh JAX's. It is the optional extra ``jax`` (``pip install
'smoothl1-conformance[jax]'``, tested with jax 0.10.2 and jaxlib 0.10.2). Without it,
constructing the adapter raises :class:`AdapterError` (one line). The worker forces the CPU
backend (``JAX_PLATFORMS=cpu``) and 32-bit types (``jax_enable_x64`` off) before the import, so
a machine with an accelerator, or a user's JAX settings, change nothing; XLA's CPU code has
no run-to-run variation for an elementwise graph (no reductions, no atomics).

What JAX computes (measured on jax 0.10.2, x86-64 AVX2; ``jax.jit(f).lower(...).as_text()``
and ``.compile().as_text()`` show the graph; tests/test_jax_adapter.py checks these claims with
elements derived by hand)
=========================================================================================

The vjp of ``jnp.where`` sends the cotangent ``dy`` to the branch that was taken and ``+0`` to
the other, and differentiates **both** branches. The compiled graph (one XLA loop fusion after
``x1 - x2``, every operation in the data type: fp16 is rounded to half after each operation)
is, with ``diff = x1 - x2``, ``mid = |diff| < beta`` (``jax.jit(f).lower(...).as_text()``; the
compiled loop fusion keeps the order)::

    q     = (mid ? dy : +0) / beta
    o     = mid ? +0 : dy                              # the outer lines' cotangent
    A     = (diff >= 0 ? o : +0) + -(diff >= 0 ? +0 : o)
    dx1   = (A + (0.5 * diff) * q) + 0.5 * (q * diff)  # the middle line's gradient, summed over its factors

R17's grammar of orders (reference.orders) names it: ``dy-divmul-halved-ge-grad`` (equal to
``dy-divmul-halved-ge-plus0abs`` where beta > 0) in half, and in float
``dy-divmul-halved-ge-gradfma-fp32-ftz``: there the multiplies feed the adds unrounded (fused
multiply-adds) and subnormals are flushed, tininess judged before rounding.

So:

(a) **The middle line is ``(dy / beta) * diff``**: halving is exact, so without underflow
    ``(0.5 * diff) * q == 0.5 * (q * diff)`` and their sum is ``q * diff`` rounded once, i.e.
    ``RN(RN(dy / beta) * diff)``: none of the suite's evaluation models (``divmul`` computes
    ``(diff / beta) * dy``, ``muldiv`` ``(diff * dy) / beta``). It is within 2 ULP of the exact
    result, but not bit for bit any model: fp32 ``dy = 1, beta = 3, diff = 1 + 2^-22`` gives
    ``11184814 * 2^-25`` where the exact result rounds to ``11184813 * 2^-25``.
(b) **In fp16, ``dy / beta`` overflows**: ``dy = 60000, beta = 0.5, diff = 0.25`` gives inf
    (``60000 / 0.5 = 120000`` is past half's range) where the exact result is 30000. A small
    beta does it to any large dy (``dy / beta`` is formed before ``diff`` makes it small).
(c) **The unused branch's gradient is added**: in the outer lines ``q = 0 / beta = 0``, and
    ``(0.5 * diff) * 0`` is NaN when ``diff`` is infinite, so ``x2 = -inf`` (or ``x1 = +inf``,
    any infinite diff) gives NaN where the result is ``+-dy``. Also ``beta = 0`` (``0 / 0``)
    and NaN beta make every element NaN, and ``beta = +inf`` a finite diff's zero.
(d) **``+0`` is added to the result**, so a zero loses its sign: ``dy = -1, diff = 0`` gives
    ``+0`` (the exact result is ``-0``), and so does every ``-0`` result, middle or outer.
(e) **Subnormals are flushed** in fp32: XLA's CPU executable runs with FTZ and DAZ on (its
    calling thread and its pool's), so a subnormal input reads as zero and a subnormal result
    becomes zero (an exact result below the smallest normal, even one that rounds up to it);
    even a subnormal ``dy`` in the outer lines, where the result is ``dy``
    itself, is read through an addition and flushed. The suite's own thread is left as it
    was. fp16 keeps its subnormals (inputs, beta and results: half's conversions to and from
    float ignore FTZ and DAZ, and half data never makes a subnormal float).

Time: ``import jax`` takes about 1 s; each new length compiles an executable (tens of ms).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np

from .base import AdapterError, ArrayFunction, Capabilities
from .process import ProcessAdapter

__all__ = ["JaxAdapter", "JaxKernel", "MISSING_JAX", "make_adapter", "smooth_l1_grad", "smooth_l1_loss"]

MISSING_JAX = "jax is not installed: pip install jax==0.10.2 jaxlib==0.10.2 (the optional extra 'jax')"


def _device(spec: str) -> str:
    """The device of ``jax:DEVICE``, checked without jax: only the CPU."""
    device = (spec or "cpu").strip().lower() or "cpu"
    if device != "cpu":
        raise AdapterError(f"unknown jax device {device!r}: only cpu is supported (jax:cpu)")
    return device


def _import_jax():
    """jax on the CPU with 32-bit types, whatever the environment asked for."""
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["JAX_ENABLE_X64"] = "0"
    try:
        import jax
        import jax.numpy  # noqa: F401  (jnp: a broken jaxlib shows here)
    except ImportError:
        raise AdapterError(MISSING_JAX) from None
    except Exception as exc:  # a broken install: a jaxlib that does not match jax, a missing shared library
        raise AdapterError(f"jax is installed but does not import: {type(exc).__name__}: {exc}") from None
    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_enable_x64", False)
    return jax


def smooth_l1_loss(x1, x2, beta):
    """The smooth L1 loss per element, as a JAX user writes it."""
    import jax.numpy as jnp
    d = x1 - x2
    return jnp.where(jnp.abs(d) < beta, 0.5 * d * d / beta, jnp.abs(d) - 0.5 * beta)


def smooth_l1_grad(dy, x1, x2, beta):
    """d loss / d x1 with the cotangent ``dy``: ``jax.vjp`` of :func:`smooth_l1_loss`."""
    import jax
    _, vjp = jax.vjp(lambda a: smooth_l1_loss(a, x2, beta), x1)
    return vjp(dy)[0]


def _xla_threads() -> str:
    """XLA's CPU thread pool in this process, counted by name (Linux: /proc/self/task)."""
    names = []
    for comm in Path("/proc/self/task").glob("*/comm"):
        try:
            names.append(comm.read_text().strip())
        except OSError:
            pass
    if not names:
        return "not counted (no /proc/self/task here)"
    eigen = sum("XLAEigen" in n for n in names)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{eigen} thread{'s' if eigen != 1 else ''} in XLA's CPU pool, on {cpus} CPUs"


class JaxAdapter(ProcessAdapter):
    """``jax:cpu``: :class:`JaxKernel` in a worker process of its own."""

    def __init__(self, device: str = "cpu"):
        device = _device(device)
        try:
            found = all(importlib.util.find_spec(m) is not None for m in ("jax", "jaxlib"))
        except (ImportError, ValueError):
            found = False
        if not found:
            raise AdapterError(MISSING_JAX)
        super().__init__(f"{__name__}:JaxKernel", device)


class JaxKernel(ArrayFunction):
    """:func:`smooth_l1_grad` through ``jax.jit`` on the CPU, in this process."""

    capabilities = Capabilities(in_place=False, core_masks=None)

    def __init__(self, device: str = "cpu"):
        self.device = _device(device)
        self._jax = _import_jax()
        self._cpu = self._jax.devices("cpu")[0]
        self._fn = self._jax.jit(smooth_l1_grad)
        super().__init__(f"jax:{self.device}")

    def compute(self, dy, x1, x2, beta, out_alias=None):
        put = lambda a: self._jax.device_put(a, self._cpu)  # noqa: E731
        result = np.asarray(self._fn(put(dy), put(x1), put(x2), put(np.asarray(beta, dy.dtype))))
        if result.dtype != dy.dtype:
            raise TypeError(f"jax returned {result.dtype}, expected {dy.dtype}")
        return result

    def describe(self) -> dict:
        import jaxlib
        jax = self._jax
        return {**super().describe(), "jax_version": jax.__version__, "jaxlib_version": jaxlib.__version__,
                "device": str(self._cpu), "backend": jax.default_backend(), "x64": bool(jax.config.jax_enable_x64),
                "threads": _xla_threads(), "xla_flags": os.environ.get("XLA_FLAGS", ""),
                "op": "jax.jit(jax.vjp of jnp.where(|d| < beta, 0.5*d*d/beta, |d| - 0.5*beta), d = x1 - x2, "
                      "cotangent dy)"}


def make_adapter(rest: str = "") -> JaxAdapter:
    """The factory of the ``jax`` prefix: ``jax`` and ``jax:cpu``."""
    return JaxAdapter(rest or "cpu")
