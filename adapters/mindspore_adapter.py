"""MindSpore's own CPU kernel as an implementation under test: ``mindspore:cpu``.

The FT DSP library belongs to the MindSpore ecosystem, so its users compare against
MindSpore's kernel: ``mindspore.ops.operations._grad_ops.SmoothL1LossGrad(beta,
reduction='none')(prediction, target, dout)`` with prediction ``x1``, target ``x2`` and dout
``dy``, so ``dx1 = d loss / d x1`` and ``diff = x1 - x2``. ``beta`` is the primitive's float
attribute (one primitive per beta, kept), holding the exact fp16 or fp32 value. fp16 and
fp32, variant ``p`` only (MindSpore has no cores to mask); no in-place form.

mindspore is imported lazily; it is the optional extra ``mindspore`` (``pip install
'smoothl1-conformance[mindspore]'``, tested with mindspore 2.10.0, the CPU build). Without
it, constructing the adapter raises :class:`AdapterError`. ``GLOG_v=3`` is set (unless
already set) before the import, to keep MindSpore's log lines off the suite's output.

The adapter is an :class:`~sl1conf.adapters.base.ArrayFunction` (docs/adapters.md): the
base hands it copies of the written elements and checks the result and the inputs. A
``RuntimeError`` whose message is MindSpore's check of beta ("the values for beta ...") is
the kernel refusing the input: Outcome status ``rejected``; any other exception is ``error``.

What MindSpore does where the documentation leaves behaviour open
=================================================================

MEASURED_NOTES
"""

from __future__ import annotations

import os

import numpy as np

from .base import AdapterError, ArrayFunction, Capabilities

__all__ = ["MindSporeAdapter", "MISSING_MINDSPORE"]

MISSING_MINDSPORE = ("mindspore is not installed: pip install mindspore==2.10.0 "
                     "(the optional extra 'mindspore')")
_BETA_CHECK = "the values for beta"  # MindSpore's kernel refusing beta <= 0 says this


def _import_mindspore():
    os.environ.setdefault("GLOG_v", "3")
    try:
        import mindspore
        from mindspore.ops.operations import _grad_ops
    except ImportError:
        raise AdapterError(MISSING_MINDSPORE) from None
    except Exception as exc:  # a broken install: missing shared libraries, ABI mismatch
        raise AdapterError(f"mindspore is installed but does not import: {type(exc).__name__}: {exc}") from None
    return mindspore, _grad_ops


class MindSporeAdapter(ArrayFunction):
    """``SmoothL1LossGrad(beta, reduction='none')`` on MindSpore's CPU backend."""

    variants = ("p",)
    capabilities = Capabilities(in_place=False, core_masks=None)

    def __init__(self, device: str = "cpu"):
        device = (device or "cpu").strip().lower()
        if device != "cpu":
            raise AdapterError(f"unknown mindspore device {device!r}: only cpu is supported (mindspore:cpu)")
        self._ms, self._grad_ops = _import_mindspore()
        self._ms.set_context(device_target="CPU")
        super().__init__("mindspore:cpu")
        self._ops: dict = {}

    def refuses(self, exc: BaseException) -> bool:
        return isinstance(exc, RuntimeError) and _BETA_CHECK in str(exc)

    def compute(self, dy, x1, x2, beta, out_alias=None):
        key = np.asarray(beta).tobytes()
        op = self._ops.get(key)
        if op is None:
            op = self._ops[key] = self._grad_ops.SmoothL1LossGrad(beta=float(beta), reduction="none")
        tensor = self._ms.Tensor
        result = op(tensor(x1), tensor(x2), tensor(dy)).asnumpy()
        if result.dtype != dy.dtype:
            raise TypeError(f"mindspore returned {result.dtype}, expected {dy.dtype}")
        return result

    def describe(self) -> dict:
        return {**super().describe(), "mindspore_version": self._ms.__version__, "device": "CPU",
                "op": "mindspore.ops.operations._grad_ops.SmoothL1LossGrad(beta, reduction='none')(x1, x2, dy)"}
