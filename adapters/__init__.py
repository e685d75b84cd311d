"""Implementations under test, behind one interface (``sl1conf.adapters.base``).

:func:`load` turns the one-string name of an implementation into an adapter:

====================================  ==============================================
``builtin:oracle`` / ``oracle-ftz``    the exact mpmath oracle (IEEE / flush-to-zero)
``builtin:fast-oracle``                the fast exact oracle
``builtin:kernel[:<model>]``           the Cython kernel (default: spec order)
``builtin:model:<name>``               an evaluation model's numpy emulation
``ctypes:<path to .so>``               a host build of the C API, in a guarded worker
``sim:<command template>``             a simulator or board, through case files
``torch`` / ``torch:cpu|cuda``         PyTorch's smooth_l1_loss_backward
``torch:inductor|compile``             the same op through torch.compile (inductor, CPU)
``mindspore`` / ``mindspore:cpu``      MindSpore's SmoothL1LossGrad (CPU)
``jax`` / ``jax:cpu``                  the loss as a JAX user writes it, its gradient by jax.vjp (XLA, CPU)
``python:<module or file.py>:<fn>``    a Python function fn(dy, x1, x2, beta) of arrays
====================================  ==============================================

Third parties add prefixes through the ``sl1conf.adapters`` entry point group: the
entry point's name is the prefix, its object a callable taking the rest of the
string (empty for a bare prefix: the plugin chooses its default) and returning an
:class:`~sl1conf.adapters.base.Adapter`. ``builtin``, ``ctypes``, ``sim`` and ``python`` need a rest.
"""

from __future__ import annotations

from importlib import metadata

from .base import Adapter, AdapterError, Case, Outcome

__all__ = ["load", "prefixes", "Adapter", "AdapterError", "Case", "Outcome"]


def _ctypes(rest):
    from .ctypes_lib import CtypesAdapter
    return CtypesAdapter(rest)


def _sim(rest):
    from .simulator import SimulatorAdapter
    return SimulatorAdapter(rest)


def _torch(rest):
    kind, _, option = rest.partition(":")
    if kind in ("inductor", "compile"):  # the op through torch.compile, on the CPU
        from .torch_compile import InductorAdapter
        return InductorAdapter(option)
    from .torch_adapter import TorchAdapter
    return TorchAdapter(rest or "cpu")


def _mindspore(rest):
    from .mindspore_adapter import MindSporeAdapter
    return MindSporeAdapter(rest or "cpu")


def _jax(rest):
    from .jax_adapter import JaxAdapter
    return JaxAdapter(rest or "cpu")


def _python(rest):
    from .python_adapter import PythonFunction
    return PythonFunction(rest)


def _builtin(rest):
    from .builtin import builtin
    return builtin(rest)


_BUILTIN_PREFIXES = {"builtin": _builtin, "ctypes": _ctypes, "sim": _sim, "torch": _torch, "mindspore": _mindspore,
                     "jax": _jax, "python": _python}
_NEEDS_REST = ("builtin", "ctypes", "sim", "python")  # a bare prefix names nothing; torch, mindspore, jax, plugins default


def prefixes() -> dict:
    """Prefix -> factory, the suite's own and those of installed plugins."""
    found = dict(_BUILTIN_PREFIXES)
    for ep in metadata.entry_points(group="sl1conf.adapters"):
        found.setdefault(ep.name, ep)
    return found


def load(spec: str) -> Adapter:
    """The adapter for an implementation's name; AdapterError says what is wrong."""
    prefix, _, rest = spec.partition(":")
    factories = prefixes()
    if prefix not in factories:
        raise AdapterError(f"unknown implementation {spec!r}: the name starts with one of "
                           f"{', '.join(sorted(factories))}")
    factory = factories[prefix]
    if isinstance(factory, metadata.EntryPoint):
        try:
            factory = factory.load()
        except Exception as exc:
            raise AdapterError(f"plugin {factory.value!r} for {prefix!r} does not load: {exc}") from None
    if not rest and prefix in _NEEDS_REST:
        raise AdapterError(f"{spec!r}: say which {prefix} implementation, e.g. {prefix}:...")
    try:
        adapter = factory(rest)
    except AdapterError:
        raise
    except Exception as exc:  # a plugin's factory failing is the plugin's problem, said in one line
        raise AdapterError(f"{spec!r}: the adapter factory failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(adapter, Adapter):
        raise AdapterError(f"{spec!r}: the factory returned {type(adapter).__name__}, not an Adapter")
    return adapter
