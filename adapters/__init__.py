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
====================================  ==============================================

Third parties add prefixes through the ``sl1conf.adapters`` entry point group: the
entry point's name is the prefix, its object a callable taking the rest of the
string and returning an :class:`~sl1conf.adapters.base.Adapter`.
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
    from .torch_adapter import TorchAdapter
    return TorchAdapter(rest or "cpu")


def _builtin(rest):
    from .builtin import builtin
    return builtin(rest)


_BUILTIN_PREFIXES = {"builtin": _builtin, "ctypes": _ctypes, "sim": _sim, "torch": _torch}


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
    if not rest and prefix not in ("torch",):
        raise AdapterError(f"{spec!r}: say which {prefix} implementation, e.g. {prefix}:...")
    return factory(rest)
