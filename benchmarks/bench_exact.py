"""Exact NashConv on the mini presets: baselines, OpenSpiel CFR+ and CFR, and self-play PPO, side by side.

    python benchmarks/bench_exact.py --plot docs/img/exact.png --overwrite   # the table of docs/exact.md and its figure
    python benchmarks/bench_exact.py --ppo-minutes 0.25 0.5 --cfr-seconds 20 --skip-openspiel-python   # a quick look

1. ``training.evaluation.exact`` NashConv of ``random``, ``honest``, ``bluffer``, ``heuristic`` on ``mini`` and
   ``mini-3p`` (tree build and evaluation time), and on ``mini`` the same figure from OpenSpiel's
   Python ``exploitability.nash_conv`` on the ``python_cockroach_poker`` game (time ratio).
2. OpenSpiel's C++ ``CFRPlusSolver`` and ``CFRSolver`` on ``mini``, run on the game tree exported
   by ``training.evaluation.exact.efg_string`` (``pyspiel.load_efg_game``; the Python game is ~10^4 times
   slower per iteration); NashConv of the average policy by ``pyspiel.nash_conv`` at doubling
   iteration counts. The export is checked first: OpenSpiel's NashConv of its uniform random
   policy equals ours of ``random``.
3. ``cockroach-train --config configs/research/ppo_mini.yaml`` (self-play PPO) resumed in stages of wall
   time; each stage's agent is evaluated exactly (``cockroach-exploit --exact``).

Wall times are each method's own: solver iterations, training time as the run measures it;
evaluation time is excluded from the curves and printed separately.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


import baselines  # noqa: E402
from cockroach_env import GameConfig  # noqa: E402
from training.evaluation.exact import efg_string, evaluate, game_tree  # noqa: E402

BASELINES = ("random", "honest", "bluffer", "heuristic")


def baseline_table(presets: list[str]) -> list[dict]:
    rows = []
    for preset in presets:
        config = GameConfig.from_options(preset=preset)
        started = time.perf_counter()
        tree = game_tree(config)
        build = time.perf_counter() - started
        sizes = tree.sizes()
        print(
            f"{preset}: {sizes['deals']} deals, {sizes['histories']:,} histories, {sizes['information_sets']:,} "
            "information sets "
            f"({sizes['information_sets_per_seat']} per seat), {sizes['distinct_observations']:,} distinct "
            f"observations; tree built in {build:.1f} s",
            flush=True,
        )
        for name in BASELINES:
            result = evaluate(baselines.make(name, config, seed=0), config, tree)
            rows.append(
                {
                    "preset": preset,
                    "agent": name,
                    "nash_conv": result.nash_conv,
                    "exploitability": result.exploitability,
                    "seconds": result.seconds,
                    "tree_seconds": build,
                    **{f"tree_{k}": v for k, v in sizes.items()},
                }
            )
            print(
                f"  {name:10s} NashConv {result.nash_conv:.6f}  (evaluated in {result.seconds:.2f} s; with the tree "
                f"{build + result.seconds:.1f} s)",
                flush=True,
            )
    return rows


def openspiel_python_nash_conv(name: str) -> dict:
    import pyspiel
    from open_spiel.python.algorithms import exploitability

    import cockroach_env.openspiel as cos

    game = pyspiel.load_game(cos.SHORT_NAME, {"preset": "mini"})
    agent = baselines.make(name, game.config, seed=0)
    started = time.perf_counter()
    theirs = exploitability.nash_conv(game, cos.AgentPolicy(game, agent))
    seconds = time.perf_counter() - started
    game_tree.cache_clear()
    started = time.perf_counter()
    ours = evaluate(agent, game.config).nash_conv
    ours_seconds = time.perf_counter() - started
    print(
        f"mini, {name}: OpenSpiel Python exploitability.nash_conv {theirs:.9f} in {seconds:.1f} s; "
        f"training.evaluation.exact {ours:.9f} in {ours_seconds:.1f} s "
        f"(tree included): {seconds / ours_seconds:.1f}x faster, difference {abs(theirs - ours):.1e}",
        flush=True,
    )
    return {
        "agent": name,
        "openspiel": theirs,
        "openspiel_seconds": seconds,
        "exact": ours,
        "exact_seconds": ours_seconds,
    }


def cfr_curves(budget_seconds: float) -> dict[str, list[tuple[int, float, float]]]:
    import pyspiel

    config = GameConfig.from_options(preset="mini")
    tree = game_tree(config)
    started = time.perf_counter()
    game = pyspiel.load_efg_game(efg_string(tree))
    print(f"mini exported to OpenSpiel's EFG game in {time.perf_counter() - started:.1f} s", flush=True)
    uniform = pyspiel.nash_conv(game, pyspiel.UniformRandomPolicy(game))
    ours = evaluate(baselines.make("random", config), config, tree).nash_conv
    print(
        f"check: OpenSpiel NashConv of its uniform random policy {uniform:.9f}, ours of random {ours:.9f}", flush=True
    )
    assert abs(uniform - ours) < 1e-6, "the exported tree is not the game"
    curves = {}
    for label, solver_type in (("OpenSpiel CFR+", pyspiel.CFRPlusSolver), ("OpenSpiel CFR", pyspiel.CFRSolver)):
        curves[label] = openspiel_curve(game, solver_type, budget_seconds, label)
    return curves


def openspiel_curve(game, solver_type, budget_seconds: float, label: str) -> list[tuple[int, float, float]]:
    """An OpenSpiel solver on ``game`` (a pyspiel game) for ``budget_seconds`` of iterations: ``(iterations, seconds,
    NashConv of the average policy)`` at doubling iteration counts.
    """
    import pyspiel

    solver = solver_type(game)
    points, spent, done, target = [], 0.0, 0, 1
    while spent < budget_seconds:
        started = time.perf_counter()
        while done < target:
            solver.evaluate_and_update_policy()
            done += 1
        spent += time.perf_counter() - started
        value = pyspiel.nash_conv(game, solver.average_policy())
        points.append((done, spent, value))
        print(f"  {label}: {done} iterations, {spent:.1f} s, NashConv {value:.6f}", flush=True)
        target *= 2
    return points


def ppo_curve(stages: list[float], output_dir: Path) -> list[tuple[float, float, int]]:
    points = []
    for k, minutes in enumerate(stages):
        command = [
            sys.executable,
            "-m",
            "training.cli",
            "--config",
            str(ROOT / "configs/research/ppo_mini.yaml"),
            "--no-progress",
            "--set",
            f"output_dir={output_dir}",
            "--set",
            f"schedule.time_limit_minutes={minutes}",
            "--set",
            "schedule.total_decisions=1000000000",
        ]
        command += ["--resume"] if k else ["--overwrite"]
        subprocess.run(
            command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)}
        )
        with open(output_dir / "ppo_mini" / "metrics.csv") as handle:
            last = list(csv.DictReader(handle))[-1]
        report = output_dir / f"exact{k}.json"  # one per stage: cockroach-exploit keeps an existing report
        subprocess.run(
            [
                sys.executable,
                "-m",
                "training.cli.exploit",
                str(output_dir / "ppo_mini" / "final"),
                "--exact",
                "--json",
                str(report),
            ],
            check=True,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        value = json.loads(report.read_text())["nash_conv"]
        points.append((float(last["wall_seconds"]), value, int(last["decisions"])))
        print(
            f"  PPO self-play: {float(last['wall_seconds']):.0f} s, {int(last['decisions']):,} decisions, NashConv "
            f"{value:.6f}",
            flush=True,
        )
    return points


def plot(rows: list[dict], curves: dict, ppo: list, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for label, points in curves.items():
        ax.plot([p[1] for p in points], [p[2] for p in points], marker="o", label=label)
    if ppo:
        ax.plot([p[0] for p in ppo], [p[1] for p in ppo], marker="s", label="cockroach-train PPO self-play")
    for row in rows:
        if row["preset"] == "mini":
            ax.axhline(row["nash_conv"], linestyle="--", linewidth=1, color="grey")
            ax.annotate(
                row["agent"], (0.01, row["nash_conv"]), xycoords=("axes fraction", "data"), fontsize=8, va="bottom"
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("wall time (s, log)")
    ax.set_ylabel("exact NashConv on mini (log)")
    ax.set_title("mini (2 players): NashConv against wall time; dashed: baselines")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cfr-seconds", type=float, default=90.0, help="iteration time budget of each CFR variant (default 90)"
    )
    parser.add_argument(
        "--ppo-minutes",
        type=float,
        nargs="*",
        default=[0.25, 0.5, 1.0, 2.0, 4.0],
        help="cumulative wall-time limits of the PPO stages (default 0.25 0.5 1 2 4)",
    )
    parser.add_argument(
        "--skip-openspiel-python", action="store_true", help="skip OpenSpiel's (slow) Python nash_conv on mini"
    )
    parser.add_argument(
        "--plot",
        default="exact.png",
        help="where the figure goes (default exact.png in the current directory; the docs' is docs/img/exact.png)",
    )
    parser.add_argument("--json", help="also write every figure as JSON")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --plot or --json file")
    args = parser.parse_args()
    from training.core.output_paths import output_file_problem

    for option, path in (("--plot", args.plot), ("--json", args.json)):
        problem = output_file_problem(option, path, replace=args.overwrite)
        if problem:
            parser.error(problem)

    print("== exact NashConv of the baselines (training.evaluation.exact)", flush=True)
    rows = baseline_table(["mini", "mini-3p"])
    peers = []
    if not args.skip_openspiel_python:
        print("== the same figure from OpenSpiel's Python exploitability.nash_conv", flush=True)
        peers.append(openspiel_python_nash_conv("random"))
    print("== OpenSpiel CFR+ and CFR on mini", flush=True)
    curves = cfr_curves(args.cfr_seconds)
    print("== cockroach-train PPO self-play on mini", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        ppo = ppo_curve(args.ppo_minutes, Path(scratch)) if args.ppo_minutes else []

    random_mini = next(r["nash_conv"] for r in rows if r["preset"] == "mini" and r["agent"] == "random")
    print("\n| method (mini) | wall time | NashConv | vs random |")
    print("|---|---|---|---|")
    for row in rows:
        if row["preset"] == "mini":
            print(f"| {row['agent']} | - | {row['nash_conv']:.4f} | {row['nash_conv'] / random_mini:.2f}x |")
    for label, points in curves.items():
        done, spent, value = points[-1]
        print(f"| {label}, {done} iterations | {spent:.1f} s | {value:.4f} | {value / random_mini:.3f}x |")
    for seconds, value, decisions in ppo[-1:]:
        print(
            f"| PPO self-play, {decisions:,} decisions | {seconds:.0f} s | {value:.4f} | {value / random_mini:.2f}x |"
        )
    print("\n| agent | NashConv mini | NashConv mini-3p |")
    print("|---|---|---|")
    for name in BASELINES:
        values = [
            next(r["nash_conv"] for r in rows if r["preset"] == p and r["agent"] == name) for p in ("mini", "mini-3p")
        ]
        print(f"| {name} | {values[0]:.4f} | {values[1]:.4f} |")
    plot(rows, curves, ppo, Path(args.plot))
    if args.json:
        Path(args.json).write_text(
            json.dumps({"baselines": rows, "openspiel_python": peers, "cfr": curves, "ppo": ppo}, indent=1) + "\n"
        )


if __name__ == "__main__":
    main()
