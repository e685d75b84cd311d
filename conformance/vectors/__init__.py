"""Golden vectors: the families by what they aim at (``families/``), records (``cases``: each an
``adapters.base.Case`` plus flags, result and alternatives), the on-disk format and its checks
(``store``), exports for boards (``export`` with ``selftest.c``), and the boundary-weighted input
sampling shared with the fuzzer (``sampling``, whose draws are Cases too).
"""
