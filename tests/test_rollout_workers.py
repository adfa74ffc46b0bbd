"""Rollout workers (``distributed:``): one training run whose rollouts are played by N shards of its games.

The same weights bit for bit: one worker on a local Ray cluster and the in-process run; N workers on a cluster, again,
and in this process; a worker killed mid-run and the uninterrupted run; a run stopped by SIGTERM and resumed and the
run that was not stopped. Bad ``distributed`` values get errors that name them.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from training.core import checkpoint as ckpt
from training.core.config import ConfigError, PPOConfig, load_config
from training.core.learner import Rollout, gae
from training.core.rollout_workers import RolloutWorkers, joined_rollout, rollout_arrays

ROOT = Path(__file__).resolve().parents[1]
UPDATES = 4
TINY = [
    "ppo.num_envs=16",
    "ppo.num_steps=8",
    "ppo.anneal_lr=false",
    "ppo.num_minibatches=2",
    "ppo.update_epochs=2",
    "model.hidden_sizes=[16]",
    "warm_start.teacher=null",
    "opponents.snapshot_every=1",
    "opponents.max_snapshots=2",
    "opponents.learner_seats=[1, 3]",
    "schedule.checkpoint_every=2",
    f"schedule.total_decisions={UPDATES * 16 * 8}",
    "evaluation.every=0",
    "evaluation.final_games=0",
]


def _train(tmp_path: Path, name: str, *extra: str) -> dict[str, torch.Tensor]:
    """Train the tiny run ``name`` with the extra command-line words; its final weights."""
    from training.cli.train import main

    sets = [*TINY, f"name={name}", f"output_dir={tmp_path}"]
    argv = ["--config", str(ROOT / "configs" / "quick.yaml"), "--no-progress"]
    argv += [word for item in sets for word in ("--set", item)]
    assert main([*argv, *extra]) == 0
    return ckpt.load_checkpoint(tmp_path / name / "final").tensors


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def in_process(tmp_path_factory) -> dict[str, torch.Tensor]:
    """The tiny run's weights in one process, without workers."""
    return _train(tmp_path_factory.mktemp("here"), "here")


@pytest.fixture(scope="module")
def two_shards(tmp_path_factory) -> dict[str, torch.Tensor]:
    """The tiny run's weights with 2 workers, played in this process (``distributed.address: null``)."""
    return _train(tmp_path_factory.mktemp("shards"), "shards", "--workers", "2")


# ---------------------------------------------------------------------------- bad values


@pytest.mark.parametrize(
    "override, named, expected",
    [
        ("distributed.workers=0", "workers=0", "an integer from 1 to"),
        ("distributed.workers=-1", "workers=-1", "an integer from 1 to"),
        ("distributed.workers=x", "distributed.workers='x'", "an integer"),
        ("distributed.workers=1.5", "distributed.workers=1.5", "an integer"),
        ("distributed.workers=3", "workers=3", "a divisor of ppo.num_envs=512"),
        ("distributed.workers=1024", "workers=1024", "a divisor of ppo.num_envs=512"),
        ("distributed.address=5", "distributed.address=5", "a string"),
        ("distributed.address=[local]", "distributed.address=['local']", "a string"),
        ("distributed.address=http://x y", "address='http://x y'", "'ray://HOST:PORT'"),
        ("distributed.max_restarts=-1", "max_restarts=-1", "an integer from 0 to"),
        ("distributed.cores=2", "'distributed.cores'", "allowed keys: ['workers', 'address', 'max_restarts']"),
    ],
)
def test_a_bad_distributed_value_is_refused_naming_it(override, named, expected):
    with pytest.raises(ConfigError) as error:
        load_config(None, [override])
    assert named in str(error.value) and expected in str(error.value)


@pytest.mark.parametrize("override", ["distributed.workers=2", "distributed.address=local"])
def test_an_algorithm_without_rollout_workers_refuses_them(override):
    with pytest.raises(ConfigError, match="with algorithm: psro .its rollouts do not run on workers"):
        load_config(None, ["algorithm=psro", override])


def test_the_command_line_shortcuts_set_the_section(capsys):
    from training.cli.train import main

    assert main(["--ray", "auto", "--workers", "4", "--print-config"]) == 0
    printed = capsys.readouterr().out
    assert "distributed:\n  workers: 4\n  address: auto\n" in printed
    assert main(["--workers", "3", "--print-config"]) == 2
    assert "distributed: workers=3 is not allowed; expected a divisor of ppo.num_envs=512" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["--workers", "0"])
    assert stop.value.code == 2
    assert "argument --workers: 0 is not allowed" in capsys.readouterr().err


# ---------------------------------------------------------------------------- the shards' join


def test_joined_shards_keep_each_decisions_successor_and_advantage():
    """Two shards' rollouts joined: every successor moves with its shard, and GAE of the join is each shard's GAE."""
    rng = np.random.default_rng(0)
    parts, shards = [], []
    for size in (5, 7):
        shard = Rollout(size, 3, 4)
        for start in range(0, size, 2):  # blocks of 2 decisions (1 at the end)
            stop = min(start + 2, size)
            n = stop - start
            shard.append(
                rng.normal(size=(n, 3)), np.ones((n, 4), bool), rng.integers(0, 4, n), -np.ones(n), rng.normal(size=n)
            )
        shard.successor[: size - 2] = np.arange(2, size)
        shard.terminal[size - 2 :] = True
        shard.reward[:] = rng.normal(size=size)
        shards.append(shard)
        parts.append(rollout_arrays(shard))
    joined = joined_rollout(parts, 3, 4)
    assert joined.size == 12
    assert joined.successor.tolist() == [2, 3, 4, -1, -1, 7, 8, 9, 10, 11, -1, -1]
    assert joined.blocks[:3] == [(0, 2), (2, 4), (4, 5)] and joined.blocks[3] == (5, 7)
    ppo = PPOConfig(gamma=0.9, gae_lambda=0.8)
    advantages, returns, rows = gae(joined, ppo)
    each = [gae(shard, ppo) for shard in shards]
    np.testing.assert_array_equal(advantages, np.concatenate([a for a, _, _ in each]))
    np.testing.assert_array_equal(rows, np.concatenate([each[0][2], each[1][2] + 5]))


# ---------------------------------------------------------------------------- in this process


def test_one_worker_in_process_is_the_run_without_workers_and_two_are_another_run(tmp_path, in_process, two_shards):
    assert _same(_train(tmp_path, "one", "--set", "distributed.address=null", "--workers", "1"), in_process)
    assert not _same(two_shards, in_process)  # (each count of workers plays its own games)


@pytest.mark.parametrize(
    "opponents",
    [
        # NFSP: the average policy, which changes every update, plays the population tables in the workers
        ["algorithm=nfsp", "opponents.population=0.5", "nfsp.reservoir_size=300", "nfsp.sl_batch_size=64"],
        # a shipped agent and the exploiter (a second learner) at the workers' tables
        ["opponents.checkpoints={classic-4p: 0.4}", "opponents.exploiter=0.2", "opponents.exploiter_reset_every=2"],
    ],
    ids=["nfsp-average-policy", "shipped-agent-and-exploiter"],
)
def test_every_opponent_plays_in_the_workers_as_in_the_process(tmp_path, opponents):
    """One worker in this process plays with copies sent through its messages: a weight that missed a message (a new
    snapshot, the average policy's update, the exploiter's reset) would change the result.
    """
    sets = [word for item in opponents for word in ("--set", item)]
    here = _train(tmp_path, "here", *sets)
    assert _same(_train(tmp_path, "worker", *sets, "--set", "distributed.address=null", "--workers", "1"), here)


def test_new_snapshots_and_the_changed_average_policy_reach_the_workers_with_the_next_weights(tmp_path, monkeypatch):
    """After each rollout, every worker held the learner's weights, the pool's snapshots and NFSP's average policy as
    they were when the rollout was sent (the average changes every update here; the pool gains a snapshot).
    """
    collect, seen = RolloutWorkers.collect, []

    def checked(self):
        sent = [_state(m) for m in self.fixed.models], [s.id for s in self.pool], _state(self.learners[0].model)
        outcomes = collect(self)
        for shard in self.workers:
            assert all(_equal(_state(m), f) for m, f in zip(shard.fixed.models, sent[0]))
            assert [s.id for s in shard.args.pool] == sent[1]
            assert _equal(_state(shard.args.learners[0].model), sent[2])
        seen.append(sent)
        return outcomes

    monkeypatch.setattr(RolloutWorkers, "collect", checked)
    nfsp = ["algorithm=nfsp", "opponents.population=0.5", "nfsp.reservoir_size=300", "nfsp.sl_batch_size=16"]
    _train(tmp_path, "nfsp", *[w for item in nfsp for w in ("--set", item)], "--workers", "2")
    assert len(seen) == UPDATES
    assert not _equal(seen[1][0][0], seen[2][0][0])  # (the average policy changed between two rollouts of a segment)
    assert seen[1][1] != seen[2][1]  # (and the pool: a snapshot every update)


def _state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def _equal(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


def test_overlap_with_workers_repeats_itself_and_differs_from_the_synchronous_run(tmp_path, two_shards):
    overlap = ["--workers", "2", "--set", "ppo.overlap=true"]
    first = _train(tmp_path, "a", *overlap)
    assert _same(_train(tmp_path, "b", *overlap), first)
    assert not _same(first, two_shards)  # (its rollouts play the weights of one update before)


def test_a_run_with_workers_stopped_by_sigterm_resumes_exactly(tmp_path, monkeypatch, capsys, two_shards):
    from training.cli.train import main

    collect, calls = RolloutWorkers.collect, []

    def sigterm_in_the_third_rollout(self):
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return collect(self)

    monkeypatch.setattr(RolloutWorkers, "collect", sigterm_in_the_third_rollout)
    sets = [*TINY, "name=stopped", f"output_dir={tmp_path}"]
    argv = ["--config", str(ROOT / "configs" / "quick.yaml"), "--no-progress", "--workers", "2"]
    argv += [word for item in sets for word in ("--set", item)]
    assert main(argv) == 143
    resume_command = capsys.readouterr().err.split("Continue with:")[1]
    assert "--set distributed.workers=2" in resume_command and "--resume" in resume_command
    monkeypatch.setattr(RolloutWorkers, "collect", collect)
    assert main([*argv, "--resume"]) == 0
    assert _same(ckpt.load_checkpoint(tmp_path / "stopped" / "final").tensors, two_shards)


# ---------------------------------------------------------------------------- on a local Ray cluster


WARM_START = ["warm_start.teacher=heuristic", "warm_start.decisions=300", "warm_start.rounds=2"]


HISTORY = ["game.history=4", "model.event_embedding=8", "model.event_pooling=true"]


def test_one_worker_on_a_ray_cluster_equals_the_in_process_run(tmp_path, ray_cluster):
    """The whole run, its warm start included (the teacher and DAgger's network play on the cluster too), with a
    history window, as the recipes have: the worker's move slots travel as indices and join the learner's rollout.
    """
    warm = [word for item in WARM_START + HISTORY for word in ("--set", item)]
    assert _same(_train(tmp_path, "ray1", "--ray", "--workers", "1", *warm), _train(tmp_path, "here", *warm))


def test_the_warm_start_on_two_workers_repeats_itself_and_plays_other_games(tmp_path):
    warm = [word for item in WARM_START for word in ("--set", item)]
    first = _train(tmp_path, "a", *warm, "--workers", "2")
    assert _same(_train(tmp_path, "b", *warm, "--workers", "2"), first)
    assert not _same(first, _train(tmp_path, "c", *warm))


def test_two_workers_on_a_ray_cluster_repeat_their_weights_and_equal_the_shards_here(tmp_path, ray_cluster, two_shards):
    first = _train(tmp_path, "ray2a", "--ray", "--workers", "2")
    assert _same(first, two_shards)
    assert _same(_train(tmp_path, "ray2b", "--ray", "--workers", "2"), first)


def test_a_worker_killed_mid_run_is_restarted_and_changes_nothing(tmp_path, monkeypatch, ray_cluster, two_shards):
    import ray

    send, made = RolloutWorkers.send, []

    def kill_worker_1_in_the_third_rollout(self):
        made.append(self)
        if len(made) == 3:
            pid = ray.get(self.workers[1].pid.remote())  # (idle between two rollouts)
            send(self)
            os.kill(pid, signal.SIGKILL)  # while it plays the third rollout
        else:
            send(self)

    monkeypatch.setattr(RolloutWorkers, "send", kill_worker_1_in_the_third_rollout)
    assert _same(_train(tmp_path, "killed", "--ray", "--workers", "2"), two_shards)
    assert made[0].replays >= 1


# ---------------------------------------------------------------------------- the scaling model of docs/scaling.md


def test_the_scaling_model_fits_a_fixed_and_a_per_game_play_an_overhead_and_a_linear_update_time():
    """Synthetic timings made by the model itself: the fit gives back its parameters and predicts the 2-worker
    rollout it was not fitted to, whose shards of half the games each keep the fixed part of the play.
    """
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_rollout_workers import fit, predicted_rollout_seconds, predicted_update_seconds

    games, steps, fixed, per_game, overhead = 512, 32, 0.06, 0.0002, 0.05

    def run(g: int) -> dict[str, list]:
        play = fixed + per_game * g
        timings = {"workers": [[play]] * 3, "cpu": [[play / 2]] * 3, "rollout": [play + overhead] * 3}
        return {**timings, "update": [1.0] * 3, "bytes": [280_000] * 3}

    model = fit({1: run(games)}, run(games // 2), games, steps, 4_000, {1_000: 0.3, 2_000: 0.5, 4_000: 0.9})
    assert model["play_fixed_seconds"] == pytest.approx(fixed)
    assert model["play_seconds_per_game"] == pytest.approx(per_game)
    assert model["play_fixed_cpu_seconds"] == pytest.approx(fixed / 2)
    assert model["worker_rate"] == pytest.approx(games * steps / (fixed + per_game * games))
    assert model["worker_rate_own_core"] == pytest.approx(2 * model["worker_rate"])
    assert model["overhead_seconds"] == pytest.approx(overhead)
    assert model["update_seconds_per_sample"] == pytest.approx(0.2 / 1_000)
    assert predicted_update_seconds(model, 3_000) == pytest.approx(0.7)
    assert predicted_rollout_seconds(model, games, 2) == pytest.approx(fixed + per_game * games / 2 + overhead)
    assert predicted_rollout_seconds(model, games, 2, own_core=True) == pytest.approx(
        (fixed + per_game * games / 2) / 2 + overhead
    )
