"""PyTorch's own kernel as an implementation under test: ``torch``, ``torch:cpu``, ``torch:cuda``.

The operator maps onto ``torch.ops.aten.smooth_l1_loss_backward(grad_output, self,
target, reduction, beta)`` with reduction none (0): ``dy`` is ``grad_output``, ``x1``
is ``self`` (the prediction), ``x2`` is ``target``, so ``dx1 = d loss / d x1`` and
``diff = x1 - x2``. ``beta`` is passed as a Python float holding the exact fp16 or fp32
value (``-0.0`` kept; a NaN's payload and signalling bit are lost, which torch would
lose anyway). Data crosses as bit patterns: ``torch.from_numpy`` on a copy of the float
view, results back through ``.cpu().numpy()``. The adapter is an
:class:`~sl1conf.adapters.base.ArrayFunction` (docs/adapters.md): the base hands it copies
of the written elements and checks the result and the inputs.

torch has no cores: variants ``p`` and ``s`` are the same call, and ``core_mask`` only
decides whether anything is computed (``core_mask == 0`` on ``s`` writes nothing, as
:attr:`Case.elements_written` says). Only the first ``elements_written`` elements go to
torch, as one contiguous 1-d call. With dx1 over an input (``out_alias``) the call is
torch's own in-place form, the ``grad_input=`` overload writing over that input tensor.

torch is imported lazily; it is the optional extra ``torch`` (``pip install
'smoothl1-conformance[torch]'``). Without it, or with ``torch:cuda`` and no CUDA
device, constructing the adapter raises :class:`AdapterError`.

What torch does where the documentation leaves behaviour open
=============================================================

Measured on torch 2.13.0+cpu (x86-64, AVX512, 2 threads) against the exact oracle and
the models of :mod:`sl1conf.reference.models`; the CPU kernel's source
(``smooth_l1_backward_cpu_kernel`` in ``aten/src/ATen/native/cpu/PointwiseOpsKernel.cpp``)
explains every observation. tests/test_torch_adapter.py checks these claims.

**The CPU result depends on the element's position.** The CPU kernel has two code paths:
``cpu_kernel_vec`` runs the SIMD one over whole blocks of V elements and the scalar one
over the rest, the last ``n % V`` elements of each thread's range, with V = 16 for fp32
and 32 for fp16 (the same with ``ATEN_CPU_CAPABILITY`` avx512, avx2 and default). Up to
32768 elements (torch's grain size) there is one range; longer calls are split between
threads, and each part has its own scalar tail, so the thread count moves them too
(:meth:`TorchAdapter.describe` records it). The two paths:

- SIMD: ``|diff| >= beta ? (diff > 0 ? 1 : -1) * dy : (diff / beta) * dy``. For **fp32
  and fp16 alike** this is bit for bit the ``divmul-fp32`` model: fp16 is widened to
  float, computed in float and rounded to half once at the end (no fp16 intermediate
  rounding, so not ``divmul-fp16``). 0 differences in 245,760 elements per format of
  ``random_batch`` data (finite inputs, TYPICAL_BETAS) in calls of 1024 elements.
- scalar: ``diff <= -beta ? -dy : diff >= beta ? dy : diff * dy / beta``, the product
  rounded to float and the division done in double (which rounds like a float
  division). This is the ``muldiv-fp32`` model except at ``diff == +-beta``, where it
  returns ``+-dy`` itself and the model computes ``(beta * dy) / beta`` (in fp32 that
  can be 1 ULP off ``dy``). For fp16 that product is exact in float, so fp16 tails are
  exactly ``muldiv-fp32``. 0 differences on the same data in calls of 7 elements.

So no model of :mod:`sl1conf.reference.models` matches every torch CPU call bit for bit:
``divmul-fp32`` matches calls whose length is a multiple of 32 (up to 32768), the scalar
rule matches calls shorter than 16 (fp32) or 32 (fp16) elements. On ordinary inputs
(finite, positive normal beta, no intermediate overflow or underflow) both paths are
within 2 ULP of the exact oracle. The paths disagree (by 1 or 2 ULP) in about 12% of
fp32 middle-branch elements of such data, and for fp16 only where the double rounding
float -> half differs (a few in 100,000).

Open cases (both paths unless said; "oracle" is docs/special-values.md):

- ``beta == +-0``: no error, no switch to l1_loss's gradient. ``diff > 0`` gives ``dy``,
  ``diff < 0`` gives ``-dy``, and ``diff == +-0`` gives **-dy** (the oracle: NaN, 0/0).
- ``beta < 0`` (finite or ``-inf``): no error (the forward ``smooth_l1_loss`` rejects
  it, the backward does not), and the two paths **disagree**. SIMD: ``diff > 0`` gives
  ``dy``, ``diff <= 0`` gives ``-dy`` (``|diff| >= beta`` always holds). Scalar:
  ``diff > |beta|`` gives ``dy``, anything else ``-dy`` (``diff <= -beta`` is tested
  first). The oracle: ``diff > beta`` gives ``dy``, else ``-dy``. With ``beta = -inf``
  the scalar path returns ``-dy`` for every non-NaN diff.
- NaN ``beta``: every result is NaN (both comparisons false, the middle line divides by
  NaN), as the oracle.
- ``beta = +inf``: finite diff gives a signed zero, as the oracle; ``diff = +-inf``
  gives ``+-dy`` (``|diff| >= beta`` holds) where the oracle gives NaN (inf / inf).
- infinite inputs otherwise as the oracle: ``x1 = +inf`` gives ``dy``, ``x1 = -inf``
  gives ``-dy``, ``inf - inf`` gives NaN, ``dy = +-inf`` in the middle gives a signed
  infinity (NaN when diff is 0). fp32 ``diff`` is rounded to fp32 and can overflow to
  inf (then ``+-dy`` where the oracle, with ``beta = inf``, gives 0); fp16 ``diff`` is
  computed in float and never overflows.
- The scalar path forms ``diff * dy`` in float before dividing, so it can overflow
  where the formula does not (fp32 ``dy = FLT_MAX, diff = 2, beta = 4`` gives inf, the
  SIMD path and the oracle 1.7e38); fp16 data cannot overflow there.
- signed zeros: the IEEE sign rules throughout, as the oracle: ``-(+0) = -0`` in the
  ``-dy`` branch, ``x - x = +0``, ``(-0) - (+0) = -0``, a zero middle result has the
  sign ``sign(diff) xor sign(beta) xor sign(dy)``.
- NaN inputs give NaN (torch returns some NaN; NaNs are compared as a class).
- subnormals: no flushing (torch leaves FTZ/DAZ off unless ``torch.set_flush_denormal``
  is called; this adapter never calls it): subnormal inputs, beta and results are kept.
- diff exactly ``+-beta`` gives ``+-dy`` bit for bit, as the oracle.

CUDA (read from ``aten/src/ATen/native/cuda/PointwiseOpsKernel.cu``, not measured: no
GPU was at hand): one code path, ``diff < -beta ? -dy : diff > beta ? dy : ((1 * diff)
* dy) / beta`` in the data type, i.e. ``muldiv-fp32`` for fp32 and, because each
``c10::Half`` operation rounds to half, ``muldiv-fp16`` for fp16 (unless the compiler
keeps intermediates in float); ``beta <= 0`` then follows the C if / else-if chain
(``beta = 0, diff = 0`` gives 0 / 0 = NaN). Run the suite on ``torch:cuda`` to measure.
"""

from __future__ import annotations

import re

import numpy as np

from .base import AdapterError, ArrayFunction, Capabilities

__all__ = ["TorchAdapter", "MISSING_TORCH", "REDUCTION_NONE"]

MISSING_TORCH = "torch is not installed: pip install torch (the optional extra 'torch')"
_DEVICE = re.compile(r"^(?:cpu|(cuda)(?::(\d+))?)$")
REDUCTION_NONE = 0  # torch.nn._reduction: none (one gradient per element)


def _import_torch():
    try:
        import torch
    except ImportError:
        raise AdapterError(MISSING_TORCH) from None
    except Exception as exc:  # a broken install: missing shared libraries, ABI mismatch
        raise AdapterError(f"torch is installed but does not import: {type(exc).__name__}: {exc}") from None
    return torch


class TorchAdapter(ArrayFunction):
    """``torch.ops.aten.smooth_l1_loss_backward`` (reduction none) on one device.

    ``device`` is ``cpu``, ``cuda`` or ``cuda:<index>``. See the module docstring for
    what torch computes where the specification leaves the behaviour open.
    """

    capabilities = Capabilities(in_place=True, core_masks=None)

    def __init__(self, device: str = "cpu"):
        device = (device or "cpu").strip()
        m = _DEVICE.match(device)
        if not m:
            raise AdapterError(f"unknown torch device {device!r}: expected cpu, cuda or cuda:<index>")
        torch = _import_torch()
        if m.group(1):
            if not torch.cuda.is_available():
                built = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
                raise AdapterError(f"torch:{device}: no CUDA device is available "
                                   f"(torch {torch.__version__}, {built})")
            index = int(m.group(2) or 0)
            if index >= torch.cuda.device_count():
                raise AdapterError(f"torch:{device}: no such CUDA device "
                                   f"({torch.cuda.device_count()} available)")
        self._torch = torch
        self.device = device
        self.name = f"torch:{device}"
        self._op = torch.ops.aten.smooth_l1_loss_backward
        self._tdtype = {"fp16": torch.float16, "fp32": torch.float32}
        # Old torch builds lack some dtypes on some devices (fp16 on CPU before 2.1):
        # offer only what a one-element call accepts, and say why in describe().
        self._missing: dict = {}
        offered = []
        for dtype, tdtype in self._tdtype.items():
            try:
                one = torch.ones(1, dtype=tdtype, device=device)
                self._op(one, one, one, REDUCTION_NONE, 1.0)
                offered.append(dtype)
            except Exception as exc:  # RuntimeError "not implemented for 'Half'", ...
                self._missing[dtype] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        self.dtypes = tuple(offered)

    def compute(self, dy, x1, x2, beta, out_alias=None):
        torch = self._torch
        tensors = {name: torch.from_numpy(a).to(self.device) for name, a in (("dy", dy), ("x1", x1), ("x2", x2))}
        result = self._call(tensors, float(beta), out_alias)
        if result.is_cuda:
            torch.cuda.synchronize(result.device)
        want = self._tdtype[{np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32"}[dy.dtype]]
        if result.dtype != want:
            raise TypeError(f"torch returned {result.dtype}, expected {want}")
        if self.device != "cpu":  # on the CPU the tensors are the arrays: what torch did to them is there already
            for name, a in (("dy", dy), ("x1", x1), ("x2", x2)):  # so that the base's input check sees it
                if name != out_alias:
                    a[...] = tensors[name].cpu().numpy()
        return result.cpu().numpy()

    def _call(self, tensors: dict, beta: float, out_alias):
        """The op on the tensors ``dy``, ``x1``, ``x2`` (on the device): the one place the kernel
        is called, which :mod:`~sl1conf.adapters.torch_compile` replaces by its compiled form."""
        if out_alias:  # torch's own in-place form: the grad_input= overload writing over that input
            return self._op.grad_input(tensors["dy"], tensors["x1"], tensors["x2"], REDUCTION_NONE, beta,
                                       grad_input=tensors[out_alias])
        return self._op(tensors["dy"], tensors["x1"], tensors["x2"], REDUCTION_NONE, beta)

    def describe(self) -> dict:
        torch = self._torch
        info = {**super().describe(), "torch_version": torch.__version__, "device": self.device,
                "op": "torch.ops.aten.smooth_l1_loss_backward(dy, x1, x2, reduction=none, beta)"}
        if self.device.startswith("cuda"):
            info["device_name"] = torch.cuda.get_device_name(torch.device(self.device))
            info["cuda_version"] = torch.version.cuda
        else:
            info["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
            info["threads"] = torch.get_num_threads()
        if self._missing:
            info["dtypes_not_offered"] = dict(self._missing)
        return info
