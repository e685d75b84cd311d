"""Searching for failures: fuzzing campaigns (``fuzz``, ``fuzz_campaign`` for the output folder,
``strategies`` for hypothesis, ``minimize``), exhaustive fp16 sweeps (``sweep`` runs one; by job:
``sweep_config``, ``sweep_subsets``, ``sweep_tally``, ``sweep_verdict``, ``sweep_state``,
``sweep_migration``, ``sweep_merge``), and what both run on (``campaign``: the worker's adapter,
the checkpoint; ``ranges``; splitting work over ``shards`` and Dask, ``distributed``; the process
pool and the stop flag are ``common.pool``'s). Every element is judged by ``rules.judge``, as
certify judges it.
"""
