"""`sl1conf sweep --scheduler`: the blocks on a Dask cluster (a local one here) give the local
sweep's tally, resume and shard as a local sweep does; a scheduler that cannot be reached is
one error line, exit 2."""

from __future__ import annotations

import json

import pytest

from sl1conf.conformance.cli import main
from sl1conf.conformance.search import distributed as D
from sl1conf.conformance.search import sweep as S
from sl1conf.conformance.search.shards import Shard

distributed = pytest.importorskip("distributed")

BETA, DY = 0x2E66, 0x3C01
SMALL = 4096


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as c:
        yield c


def _config(impl="builtin:kernel:muldiv-fp16", beta=0x63D0, dy=0x63D0):
    # muldiv-fp16 is no accepted model: with beta = dy = 1000 its diff * dy overflows (rejections)
    return S.SweepConfig(impl, beta, dy, "around-beta:8", block=SMALL)


def test_blocks_on_a_dask_cluster_give_the_local_tally(cluster, tmp_path):
    shard = Shard(1, 16)  # blocks 0, 16, 32, ...: blocks 0 and 64 count the rounding bias, 0 runs R18's moves
    local = S.run_sweep(_config(), tmp_path / "local", shard=shard)
    assert 64 in local["done"] and any(e.elements for e in local["tally"].requirements.values())
    with D.dask_executor(cluster.scheduler_address) as (executor, threads):
        assert threads == 2
        part = S.run_sweep(_config(), tmp_path / "dask", shard=shard, max_blocks=5, executor=executor,
                           workers=threads, scheduler=cluster.scheduler_address)
        assert len(part["done"]) == 5 and not part["complete"]
        whole = S.run_sweep(_config(), tmp_path / "dask", shard=shard, executor=executor, workers=threads,
                            scheduler=cluster.scheduler_address)  # resumed
    assert whole["done"] == local["done"] and whole["tally"].to_json() == local["tally"].to_json()
    saved = S.load_state(tmp_path / "dask")
    assert saved["tally"].to_json() == local["tally"].to_json()
    assert [s["scheduler"] for s in saved["sessions"]] == [cluster.scheduler_address] * 2
    assert all(s["workers"] == 2 for s in saved["sessions"])


def test_an_interrupted_dask_sweep_keeps_its_blocks_and_resumes(cluster, tmp_path):
    config = _config("builtin:kernel", BETA, DY)
    shard = Shard(1, 8)
    local = S.run_sweep(config, tmp_path / "local", shard=shard)
    assert local["tally"].statistics["rounding_bias"]

    stopped = []

    def stop(state, session):  # a task is a chunk of blocks on a cluster: stop at the first past 3
        if session["blocks"] >= 3:
            stopped.append(session["blocks"])
            raise KeyboardInterrupt

    with D.dask_executor(cluster.scheduler_address) as (executor, threads):
        with pytest.raises(KeyboardInterrupt):
            S.run_sweep(config, tmp_path / "dask", shard=shard, executor=executor, workers=threads, progress=stop)
        assert len(S.load_state(tmp_path / "dask")["done"]) == stopped[0] < len(local["done"])  # saved on the way out
        resumed = S.run_sweep(config, tmp_path / "dask", shard=shard, executor=executor, workers=threads)
    assert resumed["tally"].to_json() == local["tally"].to_json()


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_line_on_a_dask_cluster_gives_the_local_sweep_json(cluster, tmp_path, capsys):
    args = ["sweep", "--impl", "builtin:kernel", "--beta", "0x2e66", "--dy", "0x3c01", "--subset", "around-beta:4"]
    code, local_text, _ = _cli(capsys, *args, "--workers", 1, "--out", tmp_path / "local")
    assert code == 0
    code, text, err = _cli(capsys, *args, "--scheduler", cluster.scheduler_address, "--out", tmp_path / "dask")
    assert code == 0, err
    local, dask = (json.loads((tmp_path / d / "sweep.json").read_text()) for d in ("local", "dask"))
    assert dask["tally"] == local["tally"] and dask["done"] == local["done"] and dask["complete"]
    assert dask["summary"]["verdict"] == local["summary"]["verdict"]
    assert dask["sessions"][0]["scheduler"] == cluster.scheduler_address
    assert "scheduler" not in local["sessions"][0]
    same = lambda t: [line for line in t.splitlines()[2:] if not line.startswith("summary: ")]  # noqa: E731
    assert same(text) == same(local_text) and "verdict: PASS" in text  # but the time and the folder


@pytest.mark.parametrize("address", ["nosuch://x", "tcp://127.0.0.1:1"])
def test_a_scheduler_that_cannot_be_reached_is_one_line(tmp_path, capsys, monkeypatch, address):
    monkeypatch.setattr(D, "CONNECT_TIMEOUT", "1s")
    code, _, err = _cli(capsys, "sweep", "--impl", "builtin:kernel", "--beta", "0.1", "--dy", "1", "--subset", "x2=0",
                        "--scheduler", address, "--out", tmp_path / "o")
    assert code == 2 and err.startswith("sl1conf: error: cannot reach the Dask scheduler at ")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "o" / "sweep.json").exists()


def test_workers_and_a_scheduler_are_refused_together(tmp_path, capsys):
    code, _, err = _cli(capsys, "sweep", "--impl", "builtin:kernel", "--beta", "0.1", "--dy", "1", "--subset", "x2=0",
                        "--workers", 2, "--scheduler", "tcp://127.0.0.1:1", "--out", tmp_path / "o")
    assert code == 2 and "--workers is for local runs" in err


def test_a_volume_on_a_dask_cluster_gives_the_local_certificate(cluster, tmp_path, capsys):
    """A volume of dy planes (issue 38): the certificate of a run on a LocalCluster is the local
    run's, but for how it was made (``run``: the time, the sessions)."""
    from sl1conf.conformance.search.sweep_certificate import load_certificate

    args = ["sweep", "--impl", "builtin:kernel:muldiv-fp16", "--beta", "1000", "--dy", "0x63c0-0x63df",
            "--subset", "x2=0x0001"]  # 32 planes: 2 blocks; diff * dy overflows fp16 at dy about 1000: rejections
    code, _, _ = _cli(capsys, *args, "--workers", 1, "--out", tmp_path / "local")
    assert code == 1
    code, _, err = _cli(capsys, *args, "--scheduler", cluster.scheduler_address, "--out", tmp_path / "dask")
    assert code == 1, err
    local, dask = (load_certificate(tmp_path / d) for d in ("local", "dask"))
    assert {k: v for k, v in dask.items() if k != "run"} == {k: v for k, v in local.items() if k != "run"}
    assert local["rejected"]["elements"] > 0 and local["coverage"]["planes_complete"] == 32
    assert local["rejected"]["by_requirement"].get("R03")  # an infinity where the result is finite
