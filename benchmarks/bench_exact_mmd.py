"""Exact magnetic mirror descent on the mini rule sets: which temperature, step, magnet and annealing converge.

``training.algorithms.mmd_solver.MMDSolver`` runs MMD over the full information-state tree (no sampling, no network),
so each setting's NashConv is exact and free of the sampled runs' noise: the reference for the regime that
``bench_mmd.py``'s self-play should run in. Every combination of the given ``--alpha``, ``--eta``,
``--magnet-period`` (0: a fixed uniform magnet; P: the magnet replaced by the current policy every P iterations) and
``--anneal`` (0: constant; T: alpha and eta both shrink by T / (T + t)) runs ``--iterations`` iterations per rule set.
The table gives the last iterate's NashConv at a quarter, half and all of the run, its lowest and highest over the
last quarter (a wide band is a cycle), the average policy's at the end, and the wall time.

    python benchmarks/bench_exact_mmd.py --presets mini --iterations 2000 --eta 0.1 1 5 --magnet-period 0 200
    python benchmarks/bench_exact_mmd.py --presets mini-3p --iterations 600 --json mmd3p.json

The uniform random policy's NashConv: 0.637 on ``mini``, 0.407 on ``mini-3p``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cockroach_env import GameConfig  # noqa: E402
from training.algorithms.mmd_solver import MMDSolver  # noqa: E402
from training.core.output_paths import output_file_problem  # noqa: E402
from training.evaluation.exact import game_tree  # noqa: E402

PRESETS = ("mini", "mini-3p")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=PRESETS, metavar="PRESET")
    parser.add_argument("--iterations", type=int, default=2000, help="MMD iterations per setting (default 2000)")
    parser.add_argument("--every", type=int, default=0, help="iterations between two measurements (default: 1/20)")
    parser.add_argument("--alpha", type=float, nargs="+", default=[0.05], help="temperatures (default 0.05)")
    parser.add_argument("--eta", type=float, nargs="+", default=[0.1, 1.0, 5.0], help="steps (default 0.1 1 5)")
    parser.add_argument(
        "--magnet-period", type=int, nargs="+", default=[0, 200], help="0: uniform magnet; P: staged (default 0 200)"
    )
    parser.add_argument("--anneal", type=float, nargs="+", default=[0.0], help="0: constant; T: annealed (default 0)")
    parser.add_argument("--keys", choices=("information_state", "observation"), default="information_state")
    parser.add_argument("--json", help="write every curve to this file")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --json file")
    args = parser.parse_args(argv)
    problem = output_file_problem("--json", args.json, replace=args.overwrite)
    if problem:
        print(f"bench_exact_mmd: error: {problem}", file=sys.stderr)
        return 2
    if args.iterations < 1 or args.every < 0:
        print(
            f"bench_exact_mmd: error: --iterations={args.iterations} and --every={args.every} are not allowed; "
            "expected --iterations >= 1 and --every >= 0",
            file=sys.stderr,
        )
        return 2
    every = args.every or max(1, args.iterations // 20)
    grid = list(itertools.product(args.alpha, args.eta, args.magnet_period, args.anneal))
    solvers = []
    for preset in args.presets:
        tree = game_tree(GameConfig.from_options(preset=preset))
        for alpha, eta, period, anneal in grid:
            try:
                solver = MMDSolver(
                    tree,
                    keys=args.keys,
                    alpha=alpha,
                    eta=eta,
                    magnet="stage" if period else "uniform",
                    magnet_period=period,
                    anneal=anneal,
                )
            except ValueError as error:
                print(f"bench_exact_mmd: error: {error}", file=sys.stderr)
                return 2
            solvers.append((preset, (alpha, eta, period, anneal), solver))
    runs = []
    for preset, setting, solver in solvers:
        runs.append(measure(preset, setting, solver, args.iterations, every))
        run = runs[-1]
        print(
            f"{preset} alpha={setting[0]} eta={setting[1]} period={setting[2]} anneal={setting[3]}: "
            + " ".join(f"{i}:{v:.4f}" for i, _, v in run["points"]),
            flush=True,
        )
    print(
        f"\nexact MMD over information states ({args.keys} keys), {args.iterations} iterations; "
        f"load average {os.getloadavg()[0]:.2f}\n"
    )
    quarter, half = args.iterations // 4, args.iterations // 2
    print(
        f"| rule set | alpha | eta | magnet | anneal | last @{quarter} | last @{half} | last @{args.iterations} "
        "| last quarter min-max | average @end | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        values = {i: v for i, _, v in run["points"]}
        tail = [v for i, _, v in run["points"] if i >= args.iterations - quarter]
        alpha, eta, period, anneal = run["setting"]
        print(
            f"| {run['preset']} | {alpha:g} | {eta:g} | {f'staged every {period}' if period else 'uniform'} | "
            f"{f'T={anneal:g}' if anneal else 'none'} | {near(values, quarter):.4f} | {near(values, half):.4f} | "
            f"{values[args.iterations]:.4f} | {min(tail):.4f}-{max(tail):.4f} | {run['average']:.4f} | "
            f"{run['seconds']:.0f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    return 0


def measure(preset: str, setting: tuple, solver: MMDSolver, iterations: int, every: int) -> dict:
    """Run one setting: ``(iteration, solver seconds, last iterate's NashConv)`` every ``every`` iterations and at the
    end, the average policy's NashConv at the end, and the solver's seconds (evaluations excluded).
    """
    state = solver.initial_state()
    points, seconds = [(0, 0.0, solver.nash_conv(state.policy))], 0.0
    for iteration in range(1, iterations + 1):
        started = time.perf_counter()
        state = solver.iterate(state)
        seconds += time.perf_counter() - started
        if iteration % every == 0 or iteration == iterations:
            points.append((iteration, seconds, solver.nash_conv(state.policy)))
    return {
        "preset": preset,
        "setting": list(setting),
        "points": points,
        "average": solver.nash_conv(solver.average_policy(state)),
        "seconds": seconds,
    }


def near(values: dict[int, float], iteration: int) -> float:
    """The measurement at the first measured iteration at or after ``iteration``."""
    return values[min(i for i in values if i >= iteration)]


if __name__ == "__main__":
    sys.exit(main())
