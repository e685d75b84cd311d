"""Golden vectors: the families by what they aim at (``families/``), cases (``cases``), the on-disk
format and its checks (``store``), exports for boards (``export`` with ``selftest.c``), and the
boundary-weighted input sampling shared with the fuzzer (``sampling``).
"""
