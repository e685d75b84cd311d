"""Searching for failures: fuzzing campaigns (``fuzz``, ``strategies`` for hypothesis, ``minimize``),
exhaustive fp16 sweeps (``sweep``), and splitting work over shards and Dask (``shards``,
``distributed``). Every element is judged by ``rules.judge``, as certify judges it.
"""
