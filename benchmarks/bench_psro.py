"""PSRO benchmarks: meta-solvers side by side, Ray scaling, and exact NashConv over wall time.

    python benchmarks/bench_psro.py --solvers runs/psro_4p/checkpoint
        every meta-solver on the meta-game of a PSRO checkpoint: the NashConv of its
        strategy inside that meta-game, the support size and the solve time, in one run
    python benchmarks/bench_psro.py --scaling --iterations 2
        the same PSRO run (2 best responses per iteration, 2-player classic) in one
        process, then on a local Ray cluster with 1 and with 2 workers: the cost of each
        task (a best response per million decisions, a payoff table per 100 games) and
        the throughput ratio 2 workers / 1 worker
    python benchmarks/bench_psro.py --nashconv --minutes 10
        exact NashConv over wall time on the `mini` and `mini-3p` rule sets for PSRO and
        PPO self-play (and OpenSpiel's CFR+ where the exact evaluator offers it), one plot;
        needs ``training.exact`` (the mini rule sets' exact evaluator)

The machine's load average is printed with every figure: teammates' jobs on the same
cores change the absolute numbers, not the comparisons made inside one run.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--solvers", metavar="CHECKPOINT", help="compare the meta-solvers on the meta-game of a PSRO checkpoint")
    parser.add_argument("--scaling", action="store_true", help="PSRO in one process and on a local Ray cluster with 1 and 2 workers")
    parser.add_argument("--nashconv", action="store_true", help="exact NashConv over wall time on mini and mini-3p (needs training.exact)")
    parser.add_argument("--iterations", type=int, default=2, help="PSRO iterations for --scaling (default 2)")
    parser.add_argument("--decisions", type=int, default=100_000, help="decisions per best response for --scaling (default 100,000)")
    parser.add_argument("--minutes", type=float, default=10.0, help="wall time per method for --nashconv (default 10)")
    parser.add_argument("--out", default="benchmarks/psro_nashconv.png", help="plot of --nashconv")
    args = parser.parse_args(argv)
    if args.solvers:
        return solvers(args.solvers)
    if args.scaling:
        return scaling(args.iterations, args.decisions)
    if args.nashconv:
        return nashconv(args.minutes, Path(args.out))
    parser.print_help()
    return 2


def solvers(path: str) -> int:
    import numpy as np

    from training.checkpoint import read_metadata
    from training.meta_solvers import SOLVERS, MetaGame

    meta = read_metadata(path)
    if "psro" not in meta:
        print(f"{path}: not a PSRO checkpoint (no psro entry)", file=sys.stderr)
        return 2
    game = MetaGame.from_dict(meta["psro"]["meta_game"])
    print(f"meta-game of {path}: {game.size} members, {game.num_players} players, {len(game.seat_games)} tables; load average {os.getloadavg()[0]:.2f}")
    print(f"  {'solver':16s} {'NashConv (points)':>18s} {'support':>8s} {'seconds':>8s}  strategy")
    for name, solver in SOLVERS.items():
        started = time.perf_counter()
        x = solver(game)
        seconds = time.perf_counter() - started
        support = int((x > 0.01).sum())
        print(f"  {name:16s} {100 * game.nash_conv(x):18.3f} {support:8d} {seconds:8.2f}  {np.round(x, 3).tolist()}")
    return 0


def scaling(iterations: int, decisions: int) -> int:
    """The same PSRO run in one process and on local Ray clusters of 1 and 2 CPUs."""
    import ray

    from training.config import load_config
    from training.psro import train

    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    sets = [
        "algorithm=psro", "game.num_players=2", "ppo.num_envs=128", "ppo.num_steps=32", "model.hidden_sizes=[64, 64]",
        f"psro.iterations={iterations}", "psro.best_responses_per_iteration=2", f"psro.best_response_decisions={decisions}",
        "psro.payoff_games=200", "evaluation.final_games=0",
    ]  # fmt: skip
    results = {}
    with tempfile.TemporaryDirectory() as out:
        for label, cpus in (("one process", None), ("Ray, 1 worker", 1), ("Ray, 2 workers", 2)):
            config = load_config(None, [*sets, f"output_dir={out}", f"name=run_{cpus}"])
            load = os.getloadavg()[0]
            if cpus:
                ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
            started = time.perf_counter()
            train(config, progress_bar=False, ray_address="local" if cpus else None)
            seconds = time.perf_counter() - started
            if cpus:
                ray.shutdown()
            with open(Path(out) / f"run_{cpus}" / "psro.csv", newline="") as handle:
                rows = list(csv.DictReader(handle))
            br = sum(float(r["best_response_seconds"]) for r in rows)
            payoff = sum(float(r["payoff_seconds"]) for r in rows)
            tables = sum(int(r["new_tables"]) for r in rows)
            results[label] = seconds
            responses = 2 * iterations
            print(f"{label}: {seconds:.1f} s for {iterations} iterations ({responses} best responses of {decisions:,} decisions, {tables} payoff tables of 200 games); load average {load:.2f}")
            print(f"    best-response phase {br:.1f} s wall ({br / responses / decisions * 1e6:.1f} s per million best-response decisions),"
                  f" payoff phase {payoff:.1f} s wall ({payoff / tables * 0.5:.2f} s per 100 games of a table)")  # fmt: skip
    print(f"throughput ratio, Ray with 2 workers / Ray with 1 worker: {results['Ray, 1 worker'] / results['Ray, 2 workers']:.2f}x; "
          f"Ray with 1 worker / one process: {results['one process'] / results['Ray, 1 worker']:.2f}x (Ray's start-up and task overhead)")  # fmt: skip
    return 0


PRESETS = {"mini": 0.02, "mini-3p": 0.05}
"""The mini rule sets and their NashConv targets (issue 13)."""
COMMON = ["model.hidden_sizes=[64, 64]", "ppo.num_envs=128", "ppo.num_steps=16", "ppo.learning_rate=3e-4", "evaluation.every=0", "evaluation.final_games=0"]
"""The PPO learner both methods share: the same network, rollout and update."""


def nashconv(minutes: float, out: Path) -> int:
    """Exact NashConv over training wall time, PSRO against PPO self-play, on each mini rule set; one plot."""
    try:
        from training.exact import nash_conv
    except ImportError:
        print("--nashconv needs training.exact, the exact evaluator of the mini rule sets (issue 12)", file=sys.stderr)
        return 2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cockroach_env import GameConfig

    curves: dict[str, dict[str, list[tuple[float, float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for preset in PRESETS:
            game = GameConfig.from_options(preset=preset)
            nash_conv(_uniform(game), game)  # build the game tree once, outside the timed runs
            curves[preset] = {
                "PSRO (regret matching)": _psro_curve(preset, game, minutes, Path(tmp), nash_conv),
                "PPO self-play (snapshots)": _ppo_curve(preset, game, minutes, Path(tmp), nash_conv),
            }
    fig, axes = plt.subplots(1, len(curves), figsize=(6 * len(curves), 4))
    print(f"exact NashConv over training wall time, {minutes:g} minutes per method; load average now {os.getloadavg()[0]:.2f}")
    for ax, (preset, methods) in zip(np.atleast_1d(axes), curves.items()):
        for label, points in methods.items():
            ax.plot([p[0] / 60 for p in points], [p[1] for p in points], marker="o", markersize=3, label=label)
        ax.axhline(PRESETS[preset], color="grey", linestyle="--", label=f"target {PRESETS[preset]}")
        ax.set_yscale("log")
        ax.set_xlabel("training wall time (minutes)")
        ax.set_ylabel("exact NashConv")
        ax.set_title(preset)
        ax.grid(alpha=0.3)
        ax.legend()
        end = min(points[-1][0] for points in methods.values())
        first = next(iter(methods.values()))[0][1]
        parts = []
        for label, points in methods.items():
            at_end = [v for t, v in points if t <= end][-1]
            best = min(points[1:], key=lambda p: p[1])
            parts.append(f"{label} {at_end:.4f} (best trained {best[1]:.4f} at {best[0] / 60:.1f} min)")
        print(f"  {preset} (the uniform random policy: {first:.4f}; target {PRESETS[preset]}), at equal wall time {end / 60:.1f} min: " + "; ".join(parts))
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    print(f"plot: {out}")
    return 0


def _uniform(game):
    import baselines

    return baselines.make("random", game, seed=0)


def _psro_curve(preset: str, game, minutes: float, tmp: Path, nash_conv) -> list[tuple[float, float]]:
    """PSRO one iteration at a time (each call resumes the last): (wall seconds, NashConv of the mixture) after each."""
    from training.checkpoint import load_agent, read_metadata
    from training.config import load_config
    from training.psro import train

    sets = [*COMMON, "algorithm=psro", f"game.preset={preset}", f"output_dir={tmp}", f"name=psro_{preset}", "psro.best_response_decisions=100000", "psro.payoff_games=400"]
    points = [(0.0, nash_conv(_uniform(game), game))]
    iteration = 0
    while points[-1][0] < 60 * minutes:
        iteration += 1
        path = train(load_config(None, [*sets, f"psro.iterations={iteration}"]), resume=iteration > 1, progress_bar=False)
        seconds = read_metadata(path)["step"]["wall_seconds"]
        points.append((seconds, nash_conv(load_agent(path, config=game), game)))
        print(f"  {preset} PSRO iteration {iteration}: {seconds:.0f} s, NashConv {points[-1][1]:.4f}", flush=True)
    return points


def _ppo_curve(preset: str, game, minutes: float, tmp: Path, nash_conv) -> list[tuple[float, float]]:
    """PPO self-play with its snapshot pool, in segments of 200,000 decisions (each resumes the last)."""
    from training.checkpoint import load_agent, read_metadata
    from training.config import load_config
    from training.ppo import train

    segment = 200_000
    per_update = 128 * 16
    sets = [*COMMON, f"game.preset={preset}", f"output_dir={tmp}", f"name=ppo_{preset}", "opponents.self_play=0.5", "opponents.snapshots=0.5",
            "opponents.baselines={}", "opponents.snapshot_every=20", "ppo.anneal_lr=false", f"schedule.checkpoint_every={segment // per_update}"]  # fmt: skip
    points = [(0.0, nash_conv(_uniform(game), game))]
    total = 0
    while points[-1][0] < 60 * minutes:
        total += segment
        path = train(load_config(None, [*sets, f"schedule.total_decisions={total}"]), resume=total > segment, progress_bar=False)
        seconds = read_metadata(path)["step"]["wall_seconds"]
        points.append((seconds, nash_conv(load_agent(path, config=game), game)))
        print(f"  {preset} PPO {total:,} decisions: {seconds:.0f} s, NashConv {points[-1][1]:.4f}", flush=True)
    return points


if __name__ == "__main__":
    sys.exit(main())
