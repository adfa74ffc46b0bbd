"""The main job's promise, and what a warm start by imitation buys, measured.

``--main-job`` (the default) trains ``configs/quick.yaml`` from scratch with each of
``--train-seeds`` (default 1 2 3), as the README's first command does, and measures
every agent in the arena (seat rotation, duplicate deals, 95% Wilson intervals):

* against three ``heuristic`` (``--games``, default 4,000) and three ``random``;
* in the README's mixed table: the agent, ``heuristic``, ``honest`` and ``random``
  (2,000 games).

It prints each agent's figures beside the targets (under parity against three
``heuristic`` and in the mixed table, at most 5% against three ``random``), the worst
over the seeds, and each run's training wall time::

    python benchmarks/bench_warm_start.py
    python benchmarks/bench_warm_start.py --train-seeds 1 --games 1000
    python benchmarks/bench_warm_start.py --set warm_start.teacher=null   # the same budget, no warm start

``--curve CONFIG`` trains ``CONFIG`` twice per seed, with and without its warm start
(``--teacher``, default ``heuristic``, when the config has none), evaluating the policy
against three ``heuristic`` every ``--every`` updates, and prints the decisions each
needed to reach ``--threshold`` (default 10%) and their ratio::

    python benchmarks/bench_warm_start.py --curve configs/research/ppo_4p.yaml --decisions 20000000
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIXED_TABLE = ["heuristic", "honest", "random"]


def _train(config_path: str, overrides: list[str], out: str) -> tuple[Path, float, dict]:
    from training.algorithms.ppo import train
    from training.core.config import load_config

    config = load_config(config_path, [*overrides, f"output_dir={out}"])
    started = time.perf_counter()
    agent = train(config, progress_bar=False, command="bench_warm_start")
    return agent, time.perf_counter() - started, config


def _loss_rate(agent_path: Path, lineup: list[str], games: int, seed: int):
    from training import load_agent
    from training.evaluation.arena import play_match

    agent = load_agent(str(agent_path.with_suffix("")), seed=seed)
    game = agent.config
    match = play_match([agent, *lineup], game, games=games, seed=seed)
    report = match.report(agent.name)
    return report.loss_rate, report.loss_rate_ci95


def main_job(config: str, seeds: list[int], games: int, mixed_games: int, arena_seed: int, overrides: list[str]) -> int:
    rows = []
    with tempfile.TemporaryDirectory() as out:
        for seed in seeds:
            agent, seconds, cfg = _train(config, [*overrides, f"seed={seed}", f"name=quick_seed{seed}"], out)
            n = cfg.game_config().num_players
            heuristic = _loss_rate(agent, [f"heuristic*{n - 1}"], games, arena_seed)
            random = _loss_rate(agent, [f"random*{n - 1}"], games, arena_seed)
            mixed = _loss_rate(agent, MIXED_TABLE, mixed_games, arena_seed)
            rows.append(
                {"seed": seed, "train_seconds": seconds, "heuristic": heuristic, "random": random, "mixed": mixed}
            )
            print(_row(rows[-1]), flush=True)
    parity = 1 / n
    worst = {key: max(r[key][0] for r in rows) for key in ("heuristic", "random", "mixed")}
    shown = f"{config} {' '.join(f'--set {o}' for o in overrides)}".strip()
    print(f"\nconfig {shown}, seeds {seeds}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end")
    print(
        "training wall time: "
        f"{min(r['train_seconds'] for r in rows):.0f} to {max(r['train_seconds'] for r in rows):.0f} s"
    )
    checks = [
        ("against three heuristic", worst["heuristic"], parity),
        ("in the mixed table", worst["mixed"], parity),
        ("against three random", worst["random"], 0.05),
    ]
    for what, value, bound in checks:
        print(
            f"worst over seeds {what}: {100 * value:.1f}% "
            f"(target below {100 * bound:.0f}%): {'met' if value < bound else 'NOT met'}"
        )
    print(json.dumps({"config": config, "rows": rows}, default=float))
    return 0


def _row(row: dict) -> str:
    def cell(key: str) -> str:
        rate, (low, high) = row[key]
        return f"{100 * rate:5.1f}% [{100 * low:.1f}, {100 * high:.1f}]"

    return (
        f"seed {row['seed']}: trained in {row['train_seconds']:.0f} s; vs 3 heuristic {cell('heuristic')}, "
        f"vs 3 random {cell('random')}, mixed table {cell('mixed')}"
    )


def curve(
    config: str,
    seeds: list[int],
    decisions: int,
    every: int,
    games: int,
    threshold: float,
    teacher: str,
    overrides: list[str],
) -> int:
    from training.core.config import load_config

    base = load_config(config, overrides)
    warm = [] if base.warm_start.teacher else [f"warm_start.teacher={teacher}"]
    variants = {"without warm start": ["warm_start.teacher=null"], "with warm start": warm}
    common = [
        *overrides,
        f"schedule.total_decisions={decisions}",
        "schedule.time_limit_minutes=null",
        f"evaluation.every={every}",
        f"evaluation.games={games}",
        "evaluation.final_games=0",
        "evaluation.opponents=[heuristic]",
    ]
    reached: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as out:
        for seed in seeds:
            for name, extra in variants.items():
                run = f"curve_{seed}_{'warm' if extra == warm else 'cold'}"
                _, seconds, cfg = _train(config, [*common, *extra, f"seed={seed}", f"name={run}"], out)
                points = _evaluations(Path(out) / run / "eval.csv")
                first = next((d for d, rate in points if rate <= threshold), float("inf"))
                reached[name].append(first)
                shown = ", ".join(f"{d / 1e6:.1f}M: {100 * r:.1f}%" for d, r in points)
                print(f"seed {seed}, {name} ({seconds:.0f} s): {shown}", flush=True)
    print(
        f"\nconfig {config}: decisions to reach {100 * threshold:.0f}% losses against three heuristic "
        f"({games} games each)"
    )
    for name, values in reached.items():
        print(f"  {name}: " + ", ".join("not reached" if v == float("inf") else f"{v / 1e6:.1f}M" for v in values))
    cold, hot = (max(v) for v in reached.values())
    if hot < float("inf"):
        print(
            f"worst over seeds, ratio without/with: {cold / hot:.1f}x"
            if cold < float("inf")
            else "only with warm start"
        )
    return 0


def _evaluations(path: Path) -> list[tuple[int, float]]:
    with open(path, newline="") as handle:
        return [
            (int(r["decisions"]), float(r["loss_rate"])) for r in csv.DictReader(handle) if r["opponent"] == "heuristic"
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "configs" / "quick.yaml"), help="the main job's config")
    parser.add_argument("--train-seeds", type=int, nargs="+", default=[1, 2, 3], help="training seeds")
    parser.add_argument("--games", type=int, default=4000, help="arena games against N-1 heuristic and N-1 random")
    parser.add_argument("--mixed-games", type=int, default=2000, help="arena games of the mixed table")
    parser.add_argument("--seed", type=int, default=0, help="arena seed")
    parser.add_argument("--curve", metavar="CONFIG", help="decisions to a loss rate, with and without warm start")
    parser.add_argument("--decisions", type=int, default=20_000_000, help="--curve: training budget of each run")
    parser.add_argument("--every", type=int, default=25, help="--curve: updates between evaluations")
    parser.add_argument("--threshold", type=float, default=0.10, help="--curve: the loss rate to reach")
    parser.add_argument("--teacher", default="heuristic", help="--curve: the teacher when the config names none")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="config override"
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.curve:
        return curve(
            args.curve,
            args.train_seeds,
            args.decisions,
            args.every,
            args.games,
            args.threshold,
            args.teacher,
            args.overrides,
        )
    return main_job(args.config, args.train_seeds, args.games, args.mixed_games, args.seed, args.overrides)


if __name__ == "__main__":
    raise SystemExit(main())
