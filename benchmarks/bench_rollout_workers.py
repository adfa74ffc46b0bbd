"""Rollout workers on a local Ray cluster: decisions/s of the rollout part and the learner's share of each update.

``python benchmarks/bench_training.py --workers 1 2`` runs this. For each worker count (and ``--rounds`` times, the
counts interleaved), the real training loop runs ``--updates`` synchronous updates of the config with
``distributed.workers=N`` on one local Ray cluster of max(N) CPUs; the first two updates (the actors' start) are left
out. Per update it records the rollout's wall time at the learner (send to joined shards), each worker's seconds of
play, the learner's seconds (GAE and the PPO update) and the bytes of weights broadcast. Each round also runs one
worker with half the config's games, and the PPO update is timed alone at several batch sizes. Then it fits the
scaling model of docs/scaling.md to the one-worker figures (a worker's play per update: a fixed part plus a part per
game; the learner's overhead per update; the update's time by batch size), checks its prediction for the other
counts, and prints the model's wall time for the config at 8, 32 and 128 cores:

    python benchmarks/bench_training.py --workers 1 2 --rounds 3 --updates 10
    python benchmarks/bench_training.py --workers 1 2 --config configs/classic-4p.yaml --json scaling.json

Targets: with 2 workers at least 1.6 times the rollout decisions/s of 1 worker (on 2 cores), and the model's 2-worker
prediction within 20% of the measurement. The load average is printed: other work on the same cores lowers both.
"""

from __future__ import annotations

import csv
import json
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

ROLLOUT_TARGET = 1.6
MODEL_TOLERANCE = 0.20
GPU_SPEEDUP = 10.0
"""How much faster than the CPU learner a GPU learner is assumed to update (not measured here: no GPU)."""
WARM_UPDATES = 2
"""Updates left out of each run: the actors start and load the compiled kernels during the first."""


def add_workers_options(parser) -> None:
    """``--workers N [N ...]`` and ``--json PATH`` of ``bench_training.py``."""
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        metavar="N",
        help="rollout workers on a local Ray cluster: decisions/s of the rollout part and the learner's share for each "
        "N, and the scaling model of docs/scaling.md fitted to them (benchmarks/bench_rollout_workers.py)",
    )
    parser.add_argument("--json", metavar="PATH", help="with --workers: also write the figures and the model as JSON")


def run_with_workers(config_path: str, overrides: list[str], workers: int, updates: int) -> dict[str, list]:
    """One synchronous run of ``updates`` updates on ``workers`` Ray workers; its per-update timings."""
    from training.algorithms import ppo
    from training.core.config import load_config
    from training.core.rollout_workers import RolloutWorkers

    timings: dict[str, list] = {"rollout": [], "workers": [], "cpu": [], "update": [], "update_cpu": [], "bytes": []}
    collect, update = RolloutWorkers.collect, ppo._advantages_and_update

    def timed_collect(self):
        started = time.perf_counter()
        outcomes = collect(self)
        timings["rollout"].append(time.perf_counter() - started)
        timings["workers"].append(list(self.worker_seconds))
        timings["cpu"].append(list(self.worker_cpu_seconds))
        timings["bytes"].append(self.broadcast_bytes)
        return outcomes

    def timed_update(*args):
        started, cpu_started = time.perf_counter(), time.process_time()
        stats = update(*args)
        timings["update"].append(time.perf_counter() - started)
        timings["update_cpu"].append(time.process_time() - cpu_started)
        return stats

    with tempfile.TemporaryDirectory() as out:
        config = load_config(
            config_path,
            [
                *overrides,
                f"output_dir={out}",
                "name=bench",
                "evaluation.every=0",
                "evaluation.final_games=0",
                "warm_start.teacher=null",
                "ppo.overlap=false",
                f"distributed.workers={workers}",
                "distributed.address=local",
            ],
        )
        config.schedule.total_decisions = updates * config.ppo.num_envs * config.ppo.num_steps
        config.schedule.checkpoint_every = updates
        RolloutWorkers.collect, ppo._advantages_and_update = timed_collect, timed_update
        try:
            ppo.train(config, progress_bar=False)
        finally:
            RolloutWorkers.collect, ppo._advantages_and_update = collect, update
        with open(Path(out) / "bench" / "metrics.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
    timings = {key: values[WARM_UPDATES:] for key, values in timings.items()}
    timings["samples"] = [int(rows[-1]["samples"]) / len(rows)]
    return timings


def update_seconds(config_path: str, overrides: list[str], sizes: list[int], repeats: int = 3) -> dict[int, float]:
    """The median seconds of one PPO update (the config's epochs and minibatches) on each of ``sizes`` samples."""
    import numpy as np
    import torch

    from cockroach_env.encoding import encoding_for
    from training.core.config import load_config
    from training.core.learner import Learner, ppo_update
    from training.core.model import ActorCritic

    config = load_config(config_path, overrides)
    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    game = config.game_config()
    enc = encoding_for(game)
    rng = np.random.default_rng(0)
    seconds = {}
    for size in sizes:
        model = ActorCritic.from_spec(game, config.model, seed=0)
        players, obs_size = game.num_players, enc.observation.size
        learner = Learner(model, config.ppo.learning_rate, size, 1, players, obs_size, enc.num_actions)
        rollout = learner.rollout
        rollout.obs[:] = rng.random(rollout.obs.shape) < 0.3
        rollout.mask[:] = True
        rollout.action[:] = rng.integers(0, enc.num_actions, size)
        rollout.logprob[:] = -math.log(enc.num_actions)
        rollout.size = size
        advantages = rng.normal(size=size).astype(np.float32)
        returns = rng.normal(size=size).astype(np.float32)
        rows = np.arange(size)
        times = []
        for _ in range(repeats):  # (CPU seconds: one torch thread, the time on a core of its own)
            started = time.process_time()
            ppo_update(learner, rollout, advantages, returns, rows, config.ppo, rng, torch.device("cpu"))
            times.append(time.process_time() - started)
        seconds[size] = statistics.median(times)
    return seconds


def fit(
    measured: dict[int, dict[str, list]],
    smaller: dict[str, list],
    games: int,
    steps: int,
    samples: int,
    updates_by_size: dict[int, float],
):
    """The scaling model's parameters (docs/scaling.md) from the one-worker runs and the update timings.

    ``measured[1]`` is one worker playing the config's ``games`` games, ``smaller`` one worker playing half as many:
    a worker's play per update is ``c0 + c1 x games``, a fixed part (every step's calls into the engine, the networks
    and the baselines, whatever the number of games) and a part per game. Both are fitted in wall seconds (as
    measured) and in CPU seconds (what a worker does on a core of its own).
    """
    one = measured[1]
    half = games // 2

    def line(key: str) -> tuple[float, float]:
        full = statistics.median(max(w) for w in one[key])
        part = statistics.median(max(w) for w in smaller[key])
        per_game = (full - part) / (games - half)
        return full - per_game * games, per_game

    (fixed, per_game), (fixed_cpu, per_game_cpu) = line("workers"), line("cpu")
    decisions = games * steps
    overhead = statistics.median(r - max(w) for r, w in zip(one["rollout"], one["workers"]))
    sizes = sorted(updates_by_size)
    slope = (updates_by_size[sizes[-1]] - updates_by_size[sizes[0]]) / (sizes[-1] - sizes[0])
    intercept = updates_by_size[sizes[0]] - slope * sizes[0]
    return {
        "games": games,
        "steps": steps,
        "play_fixed_seconds": fixed,
        "play_seconds_per_game": per_game,
        "play_fixed_cpu_seconds": fixed_cpu,
        "play_cpu_seconds_per_game": per_game_cpu,
        "worker_rate": decisions / (fixed + per_game * games),
        "worker_rate_own_core": decisions / (fixed_cpu + per_game_cpu * games),
        "overhead_seconds": overhead,
        "update_intercept_seconds": intercept,
        "update_seconds_per_sample": slope,
        "samples_per_update": samples,
        "decisions_per_update": decisions,
        "learner_update_seconds_measured": statistics.median(one["update"]),
        "broadcast_bytes": statistics.median(one["bytes"]),
    }


def predicted_rollout_seconds(model: dict, games: int, workers: int, own_core: bool = False) -> float:
    """The model's rollout seconds per update: the slowest shard's play (``games / workers`` games each, at the fitted
    fixed and per-game cost of a worker, as measured or on a core of its own), plus the per-update overhead.
    """
    shard = math.ceil(games / workers)
    if own_core:
        return model["play_fixed_cpu_seconds"] + model["play_cpu_seconds_per_game"] * shard + model["overhead_seconds"]
    return model["play_fixed_seconds"] + model["play_seconds_per_game"] * shard + model["overhead_seconds"]


def predicted_update_seconds(model: dict, samples: int) -> float:
    return model["update_intercept_seconds"] + model["update_seconds_per_sample"] * samples


def recipe_hours(model: dict, config_path: str, cores: int, learner_speedup: float = 1.0) -> dict:
    """The config's wall time on ``cores`` cores by the model: one core learns, the others play (the largest divisor
    of ``ppo.num_envs`` that fits), synchronous and with overlap (the rollout and the update at once).
    """
    from training.core.config import load_config

    config = load_config(config_path, [])
    decisions = config.ppo.num_envs * config.ppo.num_steps
    updates = math.ceil(config.schedule.total_decisions / decisions)
    workers = max(d for d in range(1, cores) if config.ppo.num_envs % d == 0)
    samples = decisions * model["samples_per_update"] / max(model["decisions_per_update"], 1)
    roll = predicted_rollout_seconds(model, config.ppo.num_envs, workers, own_core=True)
    learn = predicted_update_seconds(model, samples) / learner_speedup
    return {
        "cores": cores,
        "workers": workers,
        "rollout_seconds": roll,
        "update_seconds": learn,
        "hours_synchronous": updates * (roll + learn) / 3600,
        "hours_overlap": updates * max(roll, learn) / 3600,
        "learner_bound": learn > roll,
    }


def workers_scaling(
    config_path: str, overrides: list[str], counts: list[int], updates: int, rounds: int, json_path: str | None
) -> int:
    """Measure, fit, predict and print (``bench_training.py --workers``)."""
    from training.core.config import load_config
    from training.core.distributed import executor

    config = load_config(config_path, overrides)
    games = config.ppo.num_envs
    decisions = games * config.ppo.num_steps
    if 1 not in counts or games < 2:
        raise SystemExit(
            f"bench_training.py: error: --workers {' '.join(map(str, counts))}: the scaling model is fitted to one "
            f"worker, so the counts must include 1 (and ppo.num_envs={games} must be at least 2)"
        )
    load_before = os.getloadavg()
    cluster = executor("local", num_cpus=max(counts))
    measured: dict[int, dict[str, list]] = {n: {} for n in counts}
    smaller: dict[str, list] = {}  # one worker with half the games: the fixed and the per-game part of its play
    try:
        for _ in range(rounds):
            for n in counts:
                for key, values in run_with_workers(config_path, overrides, n, updates).items():
                    measured[n].setdefault(key, []).extend(values)
            half = [*overrides, f"ppo.num_envs={games // 2}"]
            for key, values in run_with_workers(config_path, half, 1, updates).items():
                smaller.setdefault(key, []).extend(values)
    finally:
        cluster.close()
    load_runs = os.getloadavg()
    samples = round(statistics.mean(measured[1]["samples"]))  # the learner's decisions per update
    sizes = [samples // 4, samples // 2, samples, 2 * samples]
    by_size = update_seconds(config_path, overrides, sizes)
    model = fit(measured, smaller, games, config.ppo.num_steps, samples, by_size)
    print(
        f"config: {config_path} {' '.join(overrides)}: {games} games x {config.ppo.num_steps} steps = "
        f"{decisions:,} decisions per update; {updates} updates x {rounds} rounds per worker count, and of one "
        f"worker with {games // 2} games (the first {WARM_UPDATES} of each run left out)"
    )
    print(
        f"cpu cores: {os.cpu_count()}; load average (1, 5, 15 min) before: {_load(load_before)}, after the runs: "
        f"{_load(load_runs)}, at the end: {_load(os.getloadavg())}"
    )
    rates = _print_counts(measured, counts, decisions)
    print(
        "learner update alone: "
        + ", ".join(f"{size:,} samples {seconds * 1000:.0f} ms" for size, seconds in by_size.items())
    )
    result = {"measured": {n: {k: v for k, v in measured[n].items()} for n in counts}, "model": model}
    if len(counts) > 1:
        low, high = min(counts), max(counts)
        ratio = rates[high] / rates[low]
        print(
            f"rollout decisions/s, {high} workers / {low}: {ratio:.2f} (target >= {ROLLOUT_TARGET} for 2 / 1: "
            f"{'met' if ratio >= ROLLOUT_TARGET else 'NOT met'})"
        )
        for n in counts[1:]:
            predicted = decisions / predicted_rollout_seconds(model, games, n)
            error = predicted / rates[n] - 1
            print(
                f"model for {n} workers: {predicted:,.0f} decisions/s predicted, {rates[n]:,.0f} measured "
                f"({100 * error:+.0f}%; target within {100 * MODEL_TOLERANCE:.0f}%: "
                f"{'met' if abs(error) <= MODEL_TOLERANCE else 'NOT met'})"
            )
            result.setdefault("predictions", {})[n] = {"predicted": predicted, "measured": rates[n]}
    result["recipe"] = _print_model(model, config_path)
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=1, default=float))
    return 0


def _print_counts(measured: dict[int, dict[str, list]], counts: list[int], decisions: int) -> dict[int, float]:
    """One line per worker count (wall time, and per CPU second); the rollout's decisions/s of each count."""
    rates = {}
    for n in counts:
        m = measured[n]
        rollout = statistics.median(m["rollout"])
        update = statistics.median(m["update"])
        rates[n] = decisions / rollout
        per_worker = statistics.median(decisions / n / s for w in m["workers"] for s in w)
        own_core = statistics.median(decisions / n / s for w in m["cpu"] for s in w)
        overhead = statistics.median(r - max(w) for r, w in zip(m["rollout"], m["workers"]))
        free_cores = decisions / (decisions / n / own_core + overhead)
        share = update / (rollout + update)
        print(
            f"workers {n}: rollout {rates[n]:,.0f} decisions/s ({rollout * 1000:.0f} ms; each worker "
            f"{per_worker:,.0f} decisions/s), learner {update * 1000:.0f} ms = {100 * share:.0f}% "
            f"of the update, {statistics.median(m['bytes']) / 1e6:.2f} MB of weights broadcast"
        )
        print(
            f"  per CPU second (a core of its own): each worker {own_core:,.0f} decisions/s, the learner "
            f"{statistics.median(m['update_cpu']) * 1000:.0f} ms per update; so {n} free cores would give "
            f"{free_cores:,.0f} decisions/s in the rollout ({overhead * 1000:.0f} ms overhead per update)"
        )
    return rates


def _print_model(model: dict, config_path: str) -> list[dict]:
    """The fitted model, and the config's wall time by it at 8, 32 and 128 cores."""
    print(
        f"model: a worker's play per update {model['play_fixed_seconds'] * 1000:.0f} ms + "
        f"{model['play_seconds_per_game'] * 1e6:.0f} us per game as measured "
        f"({model['play_fixed_cpu_seconds'] * 1000:.0f} ms + {model['play_cpu_seconds_per_game'] * 1e6:.0f} us on a "
        f"core of its own; {model['worker_rate']:,.0f} and {model['worker_rate_own_core']:,.0f} decisions/s at "
        f"{model['games']} games); {model['overhead_seconds'] * 1000:.0f} ms overhead per update; update "
        f"{model['update_intercept_seconds'] * 1000:.0f} ms + {model['update_seconds_per_sample'] * 1e6:.1f} us per "
        "sample"
    )
    rows = []
    for speedup, learner in ((1.0, "the CPU learner"), (GPU_SPEEDUP, f"a learner {GPU_SPEEDUP:g}x faster (assumed)")):
        print(f"the config's wall time by the model, workers on cores of their own, {learner}:")
        for cores in (8, 32, 128):
            row = recipe_hours(model, config_path, cores, speedup)
            rows.append({**row, "learner_speedup": speedup})
            print(
                f"  {row['cores']:>3} cores ({row['workers']} workers): rollout {row['rollout_seconds'] * 1000:.0f} "
                f"ms, update {row['update_seconds'] * 1000:.0f} ms per update; {row['hours_synchronous']:.2f} h "
                f"synchronous, {row['hours_overlap']:.2f} h with overlap"
                f"{' (learner-bound)' if row['learner_bound'] else ''}"
            )
    return rows


def _load(load: tuple[float, float, float]) -> str:
    return ", ".join(f"{x:.2f}" for x in load)
