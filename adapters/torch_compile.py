"""PyTorch's kernel compiled by ``torch.compile`` (inductor, CPU): ``torch:inductor``, ``torch:compile``.

The same call as :class:`~sl1conf.adapters.torch_adapter.TorchAdapter` (same mapping,
same data crossing: this class only replaces its ``_call``), but the op,
``torch.ops.aten.smooth_l1_loss_backward(dy, x1, x2, reduction none, beta)``, runs inside a
function compiled by ``torch.compile(backend=inductor, dynamic=True, fullgraph=True)`` on the
CPU: inductor decomposes it and generates C++ (it needs a C++ compiler at run time).

Never silently eager
====================

Dynamo runs a function eagerly, without a word, when it gives up compiling it (after
``recompile_limit``, 8, recompilations of one code object; under the stance ``force_eager``
or ``eager_on_recompile``), and an eager result is torch:cpu's, not the compiled kernel's.
So:

- each dtype has its own compiled function (its own code object: dynamo counts
  recompilations and keeps compiled graphs per code object), and every call runs under
  ``recompile_limit = RECOMPILE_LIMIT`` with ``fail_on_recompile_limit_hit``: going past the
  limit raises instead of falling back;
- the backend is inductor's ``compile_fx`` wrapped so that running a compiled graph counts
  one; a call after which the count did not move ran eagerly, whatever the reason;
- ``fullgraph=True``: a graph break is an error, never the op run eagerly between graphs.

A call that did not run the compiled kernel (compiling failed, no C++ compiler, the limit
hit, an eager fallback) is the status ``error``, "the compiled kernel did not run: ...",
never a result.

Recompilations are expected: the op's ``beta`` is a ``float`` argument, which dynamo
always specializes (it guards ``beta == value``, whatever ``specialize_float`` says, and
the op does not take a SymFloat), so every distinct beta value is a graph of its own with
beta a constant, as in a user's own compiled model. ``dynamic=True`` makes the length
symbolic, except that dynamo specializes a length of 1 (0 is never passed: the base
answers an empty call itself), so a dtype compiles at most two graphs per beta.
In-place calls run the same compiled kernel and the base writes its result over the
aliased input (under torch.compile an ``out=`` overload such as ``grad_input=`` becomes the
out-of-place op and a copy anyway), where one graph per aliasing would multiply the
compilations by four.

What the compiled kernel does where the documentation leaves behaviour open
==========================================================================

Measured on torch 2.13.0+cpu (x86-64, AVX512, 2 threads, g++) with ``sl1conf certify --impl
torch:inductor --platform ieee`` (full and ``--quick``) and read in the generated C++
(``TORCH_LOGS=output_code``); tests/test_torch_inductor.py checks the main claims. Inductor
does not call ATen's kernel: it lowers the op's decomposition (``torch._decomp``),

    |diff| < beta ? (dy * diff) / beta : dy * sign(diff),   sign(d) = (0 < d) - (d < 0)

with beta a constant, fp16 widened to float and rounded to half once at the end.

- **NaN x1 or x2 gives a signed zero** (``sign(NaN) = 0``, so ``dy * 0``; NaN only where
  dy is NaN or infinite), and so does ``inf - inf``; eager torch gives NaN. This is the one
  failure: R04, and the NaN elements of R01, R06 and R07, in fp16 and fp32 ("a number where
  the result is NaN": 316,158 fp16 and 278,648 fp32 elements of the full run's 8.3 million).
- Everything else is within the ieee profile: fp16 at most 1 ULP (computed in float,
  rounded again to half), fp32 at most 3 ULP; fp32 ``dy * diff`` overflows or underflows
  before the division (``muldiv-fp32``: 70,989 infinities where the result is finite, 9,467
  elements far beyond the budget at tiny beta), all reachable under the error model.
- ``|diff| == beta`` gives ``+-dy`` exactly (the outer branch is closed), as the oracle.
- One code path for every element (the vector loop and its masked tail run the same
  code): no position dependence, unlike eager torch's SIMD body and scalar tail (R18
  passes); R17 finds no single model (closest ``muldiv-fp32``).
- Open cases (R16, recorded): ``beta = 0`` gives ``sign(diff) * dy`` (a signed zero at
  ``diff = 0``, the oracle NaN); ``beta < 0`` gives ``sign(diff) * dy`` for every diff;
  a NaN beta gives ``sign(diff) * dy``, never NaN; ``beta = +inf`` gives a signed zero
  for finite diff and ``+-dy`` for an infinite one (fp32 also where diff overflows).
- The same verdict, failures and counts in every run (R14 passes; the graphs are reused).
- Timing (2 shared cores): every distinct beta is a compilation, 124 graphs in a full
  certification (60 fp16, 64 fp32). The full run took 261 s with an empty inductor cache and
  72 s once inductor's on-disk cache (``/tmp/torchinductor_$USER``) held the graphs; ``--quick``
  153 s with an empty cache; eager torch:cpu's full run 28 s.
"""

from __future__ import annotations

import types

from .base import AdapterError, one_line
from .torch_adapter import REDUCTION_NONE, TorchAdapter

__all__ = ["InductorAdapter", "RECOMPILE_LIMIT", "NotCompiled"]

RECOMPILE_LIMIT = 4096
"""Graphs one dtype may compile (one per distinct beta and length class): far more than a
certification's distinct betas, so reaching it means something recompiles without end."""


def _dtype_name(tdtype) -> str:
    return {"torch.float16": "fp16", "torch.float32": "fp32"}.get(str(tdtype), str(tdtype))


class NotCompiled(RuntimeError):
    """The call did not run the compiled kernel: its outcome is an error, not a result."""


class InductorAdapter(TorchAdapter):
    """``torch.ops.aten.smooth_l1_loss_backward`` through ``torch.compile`` (inductor) on the CPU.

    See the module docstring for how an eager fallback is caught and what the compiled
    kernel computes where the specification leaves the behaviour open.
    """

    def __init__(self, rest: str = ""):
        if rest not in ("", "cpu"):
            raise AdapterError(f"unknown torch:inductor option {rest!r}: torch:inductor runs on the CPU only")
        super().__init__("cpu")
        self.name = "torch:inductor"
        self._compiled: dict = {}      # torch dtype -> compiled function
        self._graphs: dict = {}        # torch dtype -> graphs compiled
        self._graph_runs = 0           # compiled graphs run, all dtypes

    def _compiled_for(self, tdtype):
        """The compiled function for one dtype, made on first use (compiling happens on its calls)."""
        if tdtype not in self._compiled:
            torch, op, name = self._torch, self._op, _dtype_name(tdtype)
            from torch._inductor.compile_fx import compile_fx

            def backend(gm, example_inputs):
                self._graphs[tdtype] = self._graphs.get(tdtype, 0) + 1
                graph = compile_fx(gm, example_inputs)

                def run(*args):
                    self._graph_runs += 1
                    return graph(*args)
                return run

            def kernel(dy, x1, x2, beta):
                return op(dy, x1, x2, REDUCTION_NONE, beta)
            # A code object of its own per dtype: dynamo keeps graphs and counts recompilations per code object.
            code = kernel.__code__.replace(co_name=f"smooth_l1_loss_backward_{name}",
                                           co_qualname=f"smooth_l1_loss_backward_{name}")
            fn = types.FunctionType(code, kernel.__globals__, code.co_name, None, kernel.__closure__)
            self._compiled[tdtype] = torch.compile(fn, backend=backend, dynamic=True, fullgraph=True)
        return self._compiled[tdtype]

    def _call(self, tensors: dict, beta: float, out_alias):
        import torch._dynamo

        compiled = self._compiled_for(tensors["dy"].dtype)
        before = self._graph_runs
        try:
            with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT,
                                            accumulated_recompile_limit=4 * RECOMPILE_LIMIT,
                                            fail_on_recompile_limit_hit=True):
                result = compiled(tensors["dy"], tensors["x1"], tensors["x2"], beta)
        except torch._dynamo.exc.FailOnRecompileLimitHit:
            raise NotCompiled(f"the compiled kernel did not run: dynamo reached its recompile limit "
                              f"({RECOMPILE_LIMIT} graphs) for {_dtype_name(tensors['dy'].dtype)}") from None
        except Exception as exc:  # compiling failed (no C++ compiler, an inductor error), a graph break
            raise NotCompiled(f"the compiled kernel did not run: {one_line(exc)}") from None
        if self._graph_runs == before:
            raise NotCompiled("the compiled kernel did not run: torch.compile ran the op eagerly "
                              "(a recompile limit or the compiler's stance made dynamo fall back)")
        return result

    def describe(self) -> dict:
        info = super().describe()
        info.update(op="torch.compile(backend='inductor', dynamic=True, fullgraph=True) of "
                       "torch.ops.aten.smooth_l1_loss_backward(dy, x1, x2, reduction=none, beta)",
                    graphs_compiled={_dtype_name(k): v for k, v in self._graphs.items()})
        return info
