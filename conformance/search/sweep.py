"""Exhaustive fp16 sweeps: every (x1, x2) pair of a subset, for one beta and one dy or a set of dy planes,
against the oracle.

fp16 has 2^16 patterns, so for one (beta, dy) all 2^32 (x1, x2) pairs can be checked:
no sampling, and no argument about coverage. The pairs of a subset are numbered and
cut into blocks of :data:`BLOCK` elements (for ``all``: 16 x2 values times every x1,
4096 blocks). A block is one adapter call (big arrays, so an in-process kernel runs
at memory speed), one task of the worker pool or of a Dask cluster (:func:`block_task`,
a pure function of the configuration and k), the unit of ``--shard I/N`` (block k
belongs to shard k % N + 1) and of checkpointing: the state (which blocks are done,
their merged :class:`PlaneTally`) is rewritten atomically at most every
:data:`CHECKPOINT_SECONDS` and whenever the run ends (finished, Ctrl-C, an error), so an
interrupted sweep resumes where it stopped (a killed one loses at most the last second).

Elements are judged by the one judge (``rules.judge``) under the sweep's platform profile,
exactly as certify judges them: every element rule of the catalog (accuracy, the boundary,
overflow, NaN and infinity, zero signs on strict profiles, subnormals), the profile's error
model (what its arithmetic can reach), and the open-behaviour alternatives (beta <= 0,
beta = +inf, a rounded diff) computed by the policy the vector families use. Every block is
also checked by the requirements' probes (``search.probing``: memory faults, a moved tail on
the sampled blocks, ...), and the sampled blocks are counted by their statistics (the
rounding bias).

This module runs a sweep: one block in a worker (:class:`_Block`), the blocks in this process,
a local pool or a Dask cluster, the checkpointed run. The rest, by job: ``sweep_config`` (what
identifies a sweep, its error), ``sweep_subsets`` (the ``--subset`` grammar: which pairs,
numbered), ``sweep_tally`` (what blocks found, summed in any order), ``sweep_verdict`` (the
verdict in certify's words, the summary), ``sweep_state`` (OUT/sweep.json), ``sweep_migration``
(older formats read as today's), ``sweep_merge`` (shards made one), ``sweep_dy`` (the ``--dy``
grammar: one plane or a set of them), ``sweep_planes`` (a volume's elements numbered plane after
plane, in blocks that may span planes), ``sweep_blocks`` (the blocks done, as runs),
``sweep_certificate`` (certificate.json and .md) and ``sweep_rejections`` (the rejected elements
as a vector set). Their public names are importable from here too.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import signal
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from sl1conf.adapters import load
from sl1conf.adapters.base import Case
from sl1conf.reference import formats, kernel
from sl1conf.reference.models import accepted_models

from sl1conf.conformance.common.memory import keep_freed_memory
from sl1conf.conformance.common.pool import process_pool
from sl1conf.conformance.rules import openbehaviour
from sl1conf.conformance.search.campaign import Checkpoint, per_worker
from sl1conf.conformance.search.distributed import submitted
from sl1conf.conformance.search.fuzz import add_statistics
from sl1conf.conformance.search.probing import run_probed
from sl1conf.conformance.search.shards import WHOLE, Shard
from sl1conf.conformance.search.sweep_config import BLOCK, SweepConfig, SweepError
from sl1conf.conformance.search.sweep_blocks import BlockSet
from sl1conf.conformance.search.sweep_merge import merge_folders, merge_states
from sl1conf.conformance.search.sweep_planes import Planes
from sl1conf.conformance.search.sweep_state import (STATE_FILE, STATE_FORMAT, check_same, load_state, save_state,
                                                    state_folder)
from sl1conf.conformance.search.sweep_subsets import Subset, parse_subset
from sl1conf.conformance.search.sweep_tally import BUCKETS, PlaneTally
from sl1conf.conformance.search.sweep_verdict import elapsed, finish, verdict

__all__ = ["BLOCK", "BUCKETS", "SweepConfig", "SweepError", "Subset", "PlaneTally", "parse_subset", "block_task",
           "run_sweep", "run_sweep_on", "merge_states", "merge_folders", "load_state", "save_state", "state_folder",
           "finish", "verdict", "elapsed", "STATE_FILE", "STATE_FORMAT", "SAMPLE_EVERY", "CHECKPOINT_SECONDS"]

FP16 = formats.FP16
SAMPLE_EVERY = 64
"""Every 64th block (block 0 first) is sampled: the probes marked ``sampled`` make their calls
(the position probe's 2 small calls: a full sweep makes 128, not 8,192, and each call can be a
simulator's start) and the statistics (the rounding bias) count it whole."""
CHECKPOINT_SECONDS = 1.0
"""The checkpoint is rewritten at most this often while blocks finish, and once more when the
run ends however it ends (a write with its schema check costs about 7 ms, half a block: once
per block it was a quarter of a full sweep's time)."""


class _Block:
    """What a worker needs to run blocks: the adapter, the subset, the profile, and arrays of a
    block's size kept from block to block (dy; x1 and x2 of an ``all`` or ``x2=V`` subset; the
    oracle's bits): a block allocates and faults in no 2 MiB array of its own but the adapter's
    output. ``threads``: the oracle's threads where a probe's finding needs its bits (1 in a pool
    of worker processes, which fill the CPUs already; None: the kernel's default). The check of
    every block (``kernel.f16_judge_pass``: the correctly rounded result, the comparison and
    the judge's shortcut in C) runs on one thread: a sweep is parallel by blocks."""

    def __init__(self, config: SweepConfig, adapter=None, threads: "int | None" = None):
        keep_freed_memory()
        self.config = config
        self.subset = parse_subset(config.subset, config.beta)
        self.adapter = adapter if adapter is not None else load(config.impl)
        self.planes = volume(config, self.subset)
        self.dy = np.full(config.block, self.planes.dys[0], np.uint16)  # refilled where a block's planes differ
        self.dy_is = int(self.planes.dys[0])  # the one dy self.dy holds, or None
        from sl1conf.conformance.rules.profiles import load_profile

        self.profile = load_profile(config.platform)
        self.shortcut = shortcut_of(self.profile)
        self.threads = threads
        self.want = np.empty(config.block, np.uint16)
        self.scratch = (np.empty(config.block, np.uint16), np.empty(config.block, bool))
        n, sub = self.subset.table.size, self.subset
        self.whole_runs = sub.cum[-1] == n * sub.x2.size and not sub.start.any() and config.block % n == 0
        self.runs = None
        if self.whole_runs:  # every block is whole runs: x1 is the table repeated, x2 one value per run
            self.x1 = np.tile(sub.table, config.block // n)
            self.x2 = np.empty(config.block, np.uint16)
            self.runs = (n, kernel.f16_table_runs(sub.table))  # the check's rows (kernel.f16_judge_pass)

    def pairs(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """``subset.pairs(lo, hi)`` for a block, in this worker's arrays where the subset allows."""
        if not self.whole_runs:
            return self.subset.pairs(lo, hi)
        n = self.subset.table.size
        x2 = self.x2[:hi - lo]
        x2.reshape(-1, n)[:] = self.subset.x2[lo // n:hi // n, None]
        return self.x1[:hi - lo], x2

    def oracle(self, dy, x1, x2) -> np.ndarray:
        """``fast_oracle.smoothl1lossgrad``'s bits, into this worker's array: for fp16 that is
        the muldiv-fp64 kernel (correctly rounded: fast_oracle's proof) with every NaN made
        the canonical quiet NaN, here in place (``tests/test_sweep.py`` checks the two agree)."""
        f = lambda a: a.view(np.float16)  # noqa: E731
        want, (mag, nan) = self.want[:dy.size], (a[:dy.size] for a in self.scratch)
        kernel.smoothl1lossgrad(f(dy), f(x1), f(x2), np.uint16(self.config.beta).view(np.float16), out=f(want),
                                model="muldiv-fp64", threads=self.threads)
        np.bitwise_and(want, FP16.exp_mask | FP16.frac_mask, out=mag)
        np.putmask(want, np.greater(mag, FP16.exp_mask, out=nan), FP16.qnan_bits)
        return want

    def inputs(self, k: int) -> tuple:
        """(lo, hi, dy, x1, x2): block k's elements (numbered in the volume: element p * pairs + q
        is pair q at the p-th dy) and their inputs; a block within one plane reuses this worker's
        arrays, one spanning planes (a subset smaller than a block) puts its planes' pairs one
        after another."""
        lo, hi = self.planes.span(k)
        parts = self.planes.segments(lo, hi)
        if len(parts) == 1:
            p, q, end = parts[0]
            if self.dy_is != int(self.planes.dys[p]):
                self.dy_is = int(self.planes.dys[p])
                self.dy.fill(self.dy_is)
            x1, x2 = self.pairs(q, end)
            return lo, hi, self.dy[:hi - lo], x1, x2
        self.dy_is = None
        pairs = [self.subset.pairs(q, end) for _, q, end in parts]
        x1, x2 = (np.concatenate([pr[i] for pr in pairs]) for i in (0, 1))
        return lo, hi, self.planes.dy_of(lo, hi, self.dy), x1, x2

    def check(self, dy, x1, x2, got) -> tuple:
        """``kernel.f16_judge_pass`` on a block: the elements that differ from the correctly
        rounded result, but for those within_budget_alone accepts (counted in C), with their
        correctly rounded bits; given the block's rows where it is whole runs of one dy (the
        outer branches then cost a comparison)."""
        return kernel.f16_judge_pass(dy, x1, x2, self.config.beta, got, *self.shortcut, rows=self.rows())

    def rows(self) -> "tuple | None":
        """The block's rows (``kernel.f16_judge_pass``'s) where it is whole runs of one dy, else None:
        of the block :meth:`inputs` gave last."""
        return self.runs if self.runs is not None and self.dy_is is not None else None

    def run(self, k: int, tally: "PlaneTally | None" = None) -> PlaneTally:
        """Block ``k`` checked, its findings added to ``tally`` (a task's: blocks_task) or to a
        new one; that tally returned."""
        c = self.config
        lo, hi, dy, x1, x2 = self.inputs(k)
        tally = PlaneTally() if tally is None else tally
        call = Case("fp16", dy, x1, x2, c.beta, variant=c.variant, core_mask=self.profile.core_mask, id=f"block {k}",
                    guard=("end", "start")[k % 2])  # reads and writes before the start fault in odd blocks
        sampled = k % SAMPLE_EVERY == 0
        probed = run_probed(self.adapter, self.profile, [call], ask_late=False, sampled=sampled, statistics=sampled,
                            rows={0: self.rows()})
        outcome = probed.outcomes[0]
        if outcome.status == "rejected" and openbehaviour.open_input(FP16, c.beta, c.variant, call.core_mask):
            tally.refused(hi - lo)  # refused for a beta the manual leaves open: an answer, nothing checked
            return tally
        if outcome.status != "ok":
            tally.fail(k, hi - lo, outcome.status, outcome.detail)
            return tally
        got = outcome.out[:hi - lo]
        bad, want, alone = self.check(dy, x1, x2, got)
        tally.block(lo, dy, x1, x2, c.beta, got, want, self.profile, bad=bad, alone=alone)
        if probed.seen:  # a probe's few changed elements: the oracle's bits for those
            want = self.oracle(dy, x1, x2)
        for s in probed.seen:
            tally.seen(k, lo, dy, x1, x2, c.beta, want, s)
        add_statistics(tally.statistics, probed.counts)
        return tally


def shortcut_of(profile) -> tuple:
    """``kernel.f16_judge_pass``'s profile arguments: what ``judge.within_budget_alone`` reads of
    the profile (the fp16 budget, the zero-sign rule) and the accepted models (``judge.model_match``)."""
    return (profile.max_ulp[FP16.name], profile.strict_zero_sign, tuple(m.name for m in accepted_models(FP16)))


def volume(config: SweepConfig, subset: Subset) -> Planes:
    """The sweep's planes (its dy set) of the subset's pairs, in its blocks."""
    return Planes(config.planes, subset.size, config.block)


def _close_block(worker: "_Block") -> None:
    worker.adapter.close()


def block_task(config: SweepConfig, k: int) -> tuple:
    """(k, the block's PlaneTally): block ``k`` of the sweep ``config`` in a worker, a local pool's
    process or a Dask worker's thread. A block is a pure function of (config, k); the adapter,
    profile and arrays are made once per process and thread and kept for the next block of the
    same sweep (``campaign.per_worker``: a thread's earlier sweep is closed)."""
    return k, _worker(config).run(k)


def _worker(config: SweepConfig) -> "_Block":
    """This process's (or Dask thread's) worker for ``config``'s blocks."""
    # the pool or the cluster fills the CPUs: the oracle on one thread
    return per_worker(("sweep", config), functools.partial(_Block, config, threads=1), _close_block)


def blocks_task(config: SweepConfig, blocks: list) -> tuple:
    """(``blocks``, their PlaneTally): one task of a local pool or a cluster. One tally for the
    task, in the worker: each block adds to it (no tally made and merged a block), and the process
    that keeps the checkpoint merges one tally per task, not per block (a whole volume is 2^28
    blocks; at about 0.1 ms a merge, one process could not keep up)."""
    worker, tally = _worker(config), PlaneTally()
    for k in blocks:
        worker.run(k, tally)
    return blocks, tally


POOL_CHUNK = 4
"""Blocks a local pool hands a worker at a time: the pool's own bookkeeping costs the parent
about 0.75 ms of CPU per task (about 0.3 ms a block in fours), which the workers' cores pay
for; a Ctrl-C loses at most the chunks in flight."""
CLUSTER_CHUNK = 64
"""At most this many blocks a task on a cluster (fewer where a sweep is short: every worker
thread gets tasks): a scheduler handles a few thousand tasks a second, a whole volume is 2^28
blocks; a lost worker loses at most its tasks in flight (64 blocks: about a second of a core)."""


@contextlib.contextmanager
def _results(config, blocks, count: int, workers, adapter, executor=None):
    """([blocks], their merged PlaneTally) for the ``count`` blocks of the iterable ``blocks``: one
    block at a time in this process, chunks from a spawn pool of ``workers`` or through
    ``executor`` (2 chunks per worker process or thread in flight); any order."""
    if executor is None and workers == 1:
        worker = _Block(config, adapter)
        try:
            yield (([k], worker.run(k)) for k in blocks)
        finally:
            if adapter is None:
                worker.adapter.close()
        return
    # a short sweep: every worker gets blocks
    chunk = max(1, min(POOL_CHUNK if executor is None else CLUSTER_CHUNK, count // (8 * workers)))
    blocks = iter(blocks)
    chunks = ((config, part) for part in iter(lambda: list(itertools.islice(blocks, chunk)), []))
    # the workers leave Ctrl-C to this process, which keeps the blocks done and ends them
    pool = process_pool(workers, ignore=(signal.SIGINT,)) if executor is None else contextlib.nullcontext(executor)
    with pool as runner, contextlib.closing(submitted(runner, blocks_task, chunks, 2 * workers)) as futures:
        yield (fut.result() for fut in futures)  # what is in flight is cancelled at the end


def run_sweep(config: SweepConfig, out, *, workers: int = 1, shard: Shard = WHOLE, max_blocks=None,
              adapter=None, progress=None, executor=None, scheduler: "str | None" = None) -> dict:
    """Run (or resume) the blocks of ``shard`` not yet done; return the state.

    ``executor`` (a Dask client's, ``distributed.dask_executor``) runs the blocks instead of
    this process or a local pool; ``workers`` is then its cluster's threads and ``scheduler``
    its address, recorded in the session. ``adapter`` (workers == 1 only, no executor) runs an
    adapter object instead of loading ``config.impl``;
    ``max_blocks`` stops after that many blocks (run again to continue); ``progress(state,
    session)`` is called after every task (a block, or a pool's or cluster's chunk of them). The state is written to ``out`` at most every
    :data:`CHECKPOINT_SECONDS` and when the run ends, normally or by an exception (Ctrl-C).
    """
    subset = parse_subset(config.subset, config.beta)
    key = config.key(subset)
    out = Path(out)
    state = load_state(out)
    if state is not None:
        check_same(state, key, out)
    if adapter is not None and (workers != 1 or executor is not None):
        raise ValueError("an adapter object runs in this process only (workers=1, no executor)")
    probe = adapter if adapter is not None else load(config.impl)
    try:
        from sl1conf.conformance.rules.profiles import load_profile

        load_profile(config.platform).select(probe, ["fp16"], [config.variant], what="sweep")
        described = probe.describe()
    finally:
        if adapter is None:
            probe.close()
    nblocks = volume(config, subset).blocks
    if state is None:
        state = {"format": STATE_FORMAT, "config": key, "pairs": subset.size, "planes": len(config.planes),
                 "blocks": nblocks,
                 "done": BlockSet(), "complete": nblocks == 0, "shards": [], "adapter": described,
                 "sessions": [], "tally": PlaneTally()}
    if str(shard) not in state["shards"]:
        state["shards"].append(str(shard))
    # the blocks to do, walked lazily around the runs done (a copy: the set grows meanwhile)
    done_before = BlockSet._of_runs(state["done"].runs())
    count = len(shard.items(0, nblocks)) - done_before.owned(shard)
    if max_blocks is not None:
        count = min(count, max_blocks)
    todo = itertools.islice(done_before.missing(shard.items(0, nblocks)), count)
    if executor is None:
        workers = max(1, min(workers, count))  # no process without a block to run
    from sl1conf.conformance.common.hostinfo import describe_host

    session = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "shard": str(shard),
               "workers": workers, "todo": count, "blocks": 0, "elements": 0, "seconds": 0.0,
               "host": describe_host()}
    if scheduler:
        session["scheduler"] = scheduler
    if count:
        state["sessions"].append(session)
    t0 = time.perf_counter()
    # nothing to run: the state is written once, as it is; however the run ends (done, Ctrl-C,
    # an error): the blocks done are kept
    with Checkpoint(functools.partial(save_state, out, state), CHECKPOINT_SECONDS, unsaved=not count) as checkpoint, \
            _results(config, todo, count, workers, adapter, executor) as results:
        for ks, tally in results:
            state["tally"].merge(tally)
            for k in ks:
                state["done"].add(k)
            state["complete"] = len(state["done"]) == nblocks
            session["blocks"] += len(ks)
            session["elements"] += tally.elements
            session["seconds"] = round(time.perf_counter() - t0, 3)
            checkpoint.changed()
            if progress:
                progress(state, session)
    return state


def run_sweep_on(config: SweepConfig, out, *, workers: "int | None" = None, scheduler: "str | None" = None,
                 **options) -> dict:
    """:func:`run_sweep` (``options``: shard, max_blocks, progress) on local processes
    (``workers``, default the CPUs available) or on the Dask cluster at ``scheduler`` (its
    client open meanwhile; a scheduler that cannot be reached is one error line)."""
    if not scheduler:
        return run_sweep(config, out, workers=workers or kernel.default_threads(), **options)
    from sl1conf.conformance.search.distributed import dask_executor

    with dask_executor(scheduler) as (executor, threads):
        return run_sweep(config, out, workers=threads, executor=executor, scheduler=scheduler, **options)
