"""Regularized self-play on the mini rule sets, measured by exact NashConv: a sweep of PPO and magnetic mirror descent.

Each setting trains a history-aware network from scratch by self-play (``game.history``, ``model.event_embedding``; no
warm start, no distillation) and keeps its agent every ``--every`` updates; ``training.evaluation.exact`` then computes
each kept agent's NashConv. The table gives, per setting and rule set, the last and the best NashConv and the mean over
the last third of the run, with the training wall time; ``--json`` writes every curve, ``--plot`` draws them.

    python benchmarks/bench_mmd.py                                     # every setting, mini and mini-3p
    python benchmarks/bench_mmd.py --settings ppo mmd --presets mini --decisions 2000000
    python benchmarks/bench_mmd.py --json mmd.json --plot mmd.png --overwrite

The settings (``SETTINGS``) differ only in ``ppo`` keys; ``--set`` adds overrides to all of them. The targets: NashConv
at most 0.01 on ``mini`` and 0.02 on ``mini-3p`` (the uniform random policy's are 0.637 and 0.407).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from training.core.output_paths import output_file_problem  # noqa: E402

TARGETS = {"mini": 0.01, "mini-3p": 0.02}
"""The NashConv targets of the history-aware recipe on the mini rule sets."""

BASE = [
    "model.hidden_sizes=[64, 64]",
    "ppo.num_envs=128",
    "ppo.num_steps=16",
    "ppo.anneal_lr=false",
    "opponents.self_play=1.0",
    "opponents.snapshots=0",
    "opponents.baselines={}",
    "opponents.snapshot_every=0",
    "opponents.beat_pool_loss_rate=0",
    "warm_start.teacher=null",
    "evaluation.every=0",
    "evaluation.final_games=0",
    "torch_threads=1",
]
"""What every setting shares: self-play only, from scratch, the learner of ``bench_psro.py --nashconv``."""

SETTINGS = {
    "ppo": [],
    "ppo-entropy": ["ppo.ent_coef=0.05"],
    "mmd": ["ppo.ent_coef=0.05", "ppo.kl_coef=0.05"],
    "mmd-annealed": ["ppo.ent_coef=0.1", "ppo.kl_coef=0.05", "ppo.anneal_regularization=0.05"],
    "mmd-ema-magnet": [
        "ppo.ent_coef=0.05",
        "ppo.kl_coef=0.05",
        "ppo.magnet_coef=0.2",
        "ppo.magnet=ema",
        "ppo.magnet_ema=0.05",
    ],
    "mmd-reward": [
        "ppo.ent_coef=0",
        "ppo.magnet_coef=0.1",
        "ppo.magnet=uniform",
        "ppo.magnet_reward=true",
        "ppo.kl_coef=0.1",
        "ppo.norm_adv=false",
    ],
    "mmd-reward-slow": [
        "ppo.ent_coef=0",
        "ppo.magnet_coef=0.1",
        "ppo.magnet=uniform",
        "ppo.magnet_reward=true",
        "ppo.num_envs=512",
        "ppo.learning_rate=1e-4",
        "ppo.update_epochs=1",
        "ppo.num_minibatches=1",
    ],
    "mmd-staged": [
        "ppo.ent_coef=0",
        "ppo.magnet_coef=0.05",
        "ppo.magnet=copy",
        "ppo.magnet_every=200",
        "ppo.kl_coef=10",
        "ppo.reward_units=true",
        "model.separate_critic=true",
        "schedule.average_last=5",
    ],
    "mmd-staged-annealed": [
        "ppo.ent_coef=0",
        "ppo.magnet_coef=0.05",
        "ppo.magnet=copy",
        "ppo.magnet_every=200",
        "ppo.kl_coef=10",
        "ppo.reward_units=true",
        "ppo.anneal_regularization=0.2",
        "ppo.anneal_step=true",
        "model.separate_critic=true",
        "schedule.average_last=5",
    ],
    "nfsp": [
        "algorithm=nfsp",
        "opponents.population=0.8",
        "opponents.self_play=0.2",
        "nfsp.reservoir_size=1000000",
        "nfsp.sl_batch_size=1024",
        "nfsp.sl_steps=4",
        "nfsp.sl_learning_rate=1e-3",
        "ppo.learning_rate=1e-3",
        "ppo.ent_coef=0.1",
    ],
}
"""The settings of the sweep, by name: keys over ``BASE`` (``nfsp``: NFSP's average policy over the same PPO learner,
``bench_psro.py``'s NFSP settings; ``mmd-staged``: the regime that converges in exact MMD, ``bench_exact_mmd.py``:
temperature 0.05 and a step of 0.1 (``kl_coef`` 10) in reward units, the magnet replaced every 200 updates, separate
actor and critic, and the mixture of the last 5 kept agents measured beside the last iterate)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS), metavar="NAME")
    parser.add_argument("--presets", nargs="+", default=list(TARGETS), choices=list(TARGETS), metavar="PRESET")
    parser.add_argument(
        "--decisions", type=int, default=6_000_000, help="training decisions per run (default 6,000,000)"
    )
    parser.add_argument("--every", type=int, default=100, help="updates between two measured agents (default 100)")
    parser.add_argument("--history", type=int, default=16, help="game.history, the window of moves (default 16)")
    parser.add_argument(
        "--event-embedding", type=int, default=16, help="model.event_embedding of the network (default 16)"
    )
    parser.add_argument("--seed", type=int, default=1, help="training seed (default 1)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--compare-seconds",
        type=float,
        default=0.0,
        help="also run PSRO and this project's CFR solver (DCFR over information states) for this long per rule set, "
        "as bench_psro.py --nashconv does, into the same table and plot (default 0: not run)",
    )
    parser.add_argument(
        "--replot",
        nargs="+",
        metavar="JSON",
        help="train nothing: print the table and draw the plot of the runs in these --json files (e.g. one per rule "
        "set, run in parallel)",
    )
    parser.add_argument("--json", help="write every curve to this file")
    parser.add_argument("--plot", help="draw the curves into this PNG")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --json or --plot file")
    args = parser.parse_args(argv)
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        problem = output_file_problem(option, path, replace=args.overwrite)
        if problem:
            print(f"bench_mmd: error: {problem}", file=sys.stderr)
            return 2
    if args.decisions < 1 or args.every < 1:
        print("bench_mmd: error: --decisions and --every must be positive integers", file=sys.stderr)
        return 2

    if args.replot:
        try:
            runs = [run for path in args.replot for run in json.loads(Path(path).read_text())["runs"]]
        except (OSError, ValueError, KeyError, TypeError) as error:
            print(f"bench_mmd: error: --replot reads files written by --json: {error}", file=sys.stderr)
            return 2
        table(runs, "the runs of " + ", ".join(args.replot))
        if args.plot:
            plot(runs, Path(args.plot))
        return 0
    runs = []
    for preset in args.presets:
        for name in args.settings:
            sets = [*BASE, *SETTINGS[name], *args.overrides, f"game.preset={preset}", f"seed={args.seed}"]
            sets += [f"game.history={args.history}", f"model.event_embedding={args.event_embedding}"]
            points, seconds, average = curve(sets, args.decisions, args.every)
            runs.append(
                {"setting": name, "preset": preset, "sets": sets, "points": points, "seconds": seconds,
                 "average": average}
            )  # fmt: skip
            print(f"{preset} {name}: " + " ".join(f"{t:.0f}s:{v:.4f}" for _, t, v in points), flush=True)
    if args.compare_seconds > 0:
        runs += compare(args.presets, args.compare_seconds)
    table(
        runs,
        f"history={args.history}, event_embedding={args.event_embedding}, {args.decisions:,} decisions, seed "
        f"{args.seed}; load average {os.getloadavg()[0]:.2f}",
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    if args.plot:
        plot(runs, Path(args.plot))
    return 0


def table(runs: list[dict], title: str) -> None:
    """Per run: the last and the best NashConv, the mean over the last third of its points, its training seconds, and
    its policy average's NashConv (``schedule.average_last``; ``-`` without).
    """
    print(f"exact NashConv of history-aware self-play from scratch ({title})")
    print(
        f"  {'rule set':8s} {'setting':20s} {'last':>8s} {'best':>8s} {'last third':>10s} {'train s':>8s} "
        f"{'average':>8s}  target"
    )
    for run in runs:
        values = [v for _, _, v in run["points"]]
        third = values[-max(1, len(values) // 3) :]
        target = TARGETS[run["preset"]]
        average = "-" if run.get("average") is None else f"{run['average']:.4f}"
        print(
            f"  {run['preset']:8s} {run['setting']:20s} {values[-1]:8.4f} {min(values):8.4f} "
            f"{statistics.mean(third):10.4f} {run['seconds']:8.0f} {average:>8s}  {target} "
            f"({'met' if values[-1] <= target else 'not met'})"
        )


def curve(sets: list[str], decisions: int, every: int) -> tuple[list[tuple[int, float, float]], float, float | None]:
    """Train one run keeping its agent every ``every`` updates: ``(decisions, wall seconds, NashConv)`` of each kept
    agent and of the final one, the run's training seconds, and with ``schedule.average_last`` the NashConv of its
    policy average (``final-average``; None without).
    """
    from training.algorithms.ppo import train
    from training.core.checkpoint import load_agent, read_metadata
    from training.core.config import load_config
    from training.evaluation.exact import nash_conv

    with tempfile.TemporaryDirectory() as out:
        config = load_config(
            None,
            [
                *sets,
                f"output_dir={out}",
                "name=mmd",
                f"schedule.total_decisions={decisions}",
                f"schedule.keep_agent_every={every}",
                f"schedule.checkpoint_every={every}",
            ],
        )
        game = config.game_config()
        if config.algorithm == "nfsp":
            from training.algorithms.nfsp import train
        started = time.perf_counter()
        final = train(config, progress_bar=False)
        seconds = time.perf_counter() - started
        kept = sorted(Path(out, "mmd").rglob("update_*.json"), key=lambda p: int(p.stem.split("_")[1]))
        points = []
        per_update = config.ppo.num_envs * config.ppo.num_steps
        for path in [*kept, final]:
            step = read_metadata(path)["step"]
            value = nash_conv(load_agent(path, config=game), game)
            points.append((step["update"] * per_update, step["wall_seconds"], value))
        average = None
        if config.schedule.average_last:  # the policy average beside the last iterate
            average = nash_conv(load_agent(Path(out, "mmd", "final-average"), config=game), game)
    return points, seconds, average


def compare(presets: list[str], seconds: float) -> list[dict]:
    """PSRO (``bench_psro.py``'s settings, over the default observation) and DCFR over information states, for about
    ``seconds`` each per rule set: runs in this script's format (decisions: 0, not counted for them).
    """
    import bench_psro

    from cockroach_env import GameConfig
    from training.evaluation.exact import nash_conv

    runs = []
    for preset in presets:
        game = GameConfig.from_options(preset=preset)
        with tempfile.TemporaryDirectory() as tmp:
            psro = bench_psro._psro_curve(preset, game, seconds / 60, Path(tmp), nash_conv)
        cfr = bench_psro._tree_solver_curves(game, seconds, 0)["ours: DCFR (information states)"]
        for name, points in (("psro", psro), ("cfr (tree solver)", cfr)):
            runs.append(
                {"setting": name, "preset": preset, "sets": [], "points": [(0, t, v) for t, v in points[1:]],
                 "seconds": points[-1][0]}
            )  # fmt: skip
    return runs


def plot(runs: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    presets = sorted({run["preset"] for run in runs}, key=list(TARGETS).index)
    fig, axes = plt.subplots(1, len(presets), figsize=(7 * len(presets), 4.5), squeeze=False)
    for ax, preset in zip(axes[0], presets):
        for run in (r for r in runs if r["preset"] == preset):
            ax.plot(
                [t for _, t, _ in run["points"]],
                [v for _, _, v in run["points"]],
                marker="o",
                ms=3,
                label=run["setting"],
            )
        ax.axhline(TARGETS[preset], color="grey", linestyle="--", label=f"target {TARGETS[preset]}")
        ax.set_yscale("log")
        ax.set_xlabel("training wall time (s)")
        ax.set_ylabel("exact NashConv")
        ax.set_title(f"{preset}: exact NashConv over training wall time")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"plot: {out}")


if __name__ == "__main__":
    sys.exit(main())
