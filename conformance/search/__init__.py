"""Searching for failures: fuzzing campaigns (``fuzz``, ``fuzz_campaign`` for the output folder,
``strategies`` for hypothesis, ``minimize``), exhaustive fp16 sweeps (``sweep``), and what both
run on (``campaign``: the process pool, the stop flag, the worker's adapter, the checkpoint;
``ranges``; splitting work over ``shards`` and Dask, ``distributed``). Every element is judged
by ``rules.judge``, as certify judges it.
"""
