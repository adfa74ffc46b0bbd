"""The choices of ``algorithm: cfr`` measured side by side: keys, variants, updates, descent.

    python benchmarks/bench_cfr.py --preset mini --iterations 512 --descent-steps 400

1. How much the env's observation aliases perfect-recall information states on the rule
   set (information sets per distinct observation, observations seen by several seats).
2. The tree solver (``training.algorithms.cfr_solver``) for every variant, keyed by information state
   and by observation, alternating and simultaneous updates: exact NashConv of the average
   strategy after ``--iterations`` and the solver's wall time; beside it OpenSpiel's C++
   ``CFRPlusSolver`` on the same tree (exported), same iteration count, with the time ratio.
3. What a network over observations can play: the information-state solution projected
   onto observations (``training.algorithms.cfr.observation_table``), then exploitability descent
   (``training.algorithms.descent``) from that projection and from the uniform policy.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cockroach_env import GameConfig  # noqa: E402
from training.algorithms.cfr import ObservationTablePolicy, average_policy, observation_table  # noqa: E402
from training.algorithms.cfr_solver import VARIANTS, TreeSolver  # noqa: E402
from training.algorithms.descent import ObservationDescent  # noqa: E402
from training.evaluation.exact import efg_string, evaluate, game_tree  # noqa: E402


def aliasing(tree) -> None:
    decision = tree.player >= 0
    pairs = np.unique(np.stack([tree.observation[decision], tree.infoset[decision]]), axis=1)
    per_row = np.bincount(pairs[0], minlength=len(tree.observations))
    seats = np.unique(np.stack([tree.observation[decision], tree.player[decision]]), axis=1)
    shared = int((np.bincount(seats[0], minlength=len(tree.observations)) > 1).sum())
    print(
        f"aliasing: {len(tree.infoset_seat):,} information sets, {len(tree.observations):,} distinct observations; "
        f"information sets per observation mean {per_row.mean():.1f}, max {per_row.max()}, "
        f"{int((per_row > 1).sum()):,} observations alias more than one; {shared:,} are seen by more than one seat"
    )


def solve(tree, config, keys: str, variant: str, alternating: bool, iterations: int):
    solver = TreeSolver(tree, keys=keys, variant=variant, alternating=alternating)
    state = solver.initial_state()
    started = time.perf_counter()
    for _ in range(iterations):
        state = solver.iterate(state)
    seconds = time.perf_counter() - started
    return solver, state, seconds, evaluate(average_policy(solver, state), config, tree).nash_conv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="mini")
    parser.add_argument("--iterations", type=int, default=512)
    parser.add_argument("--descent-steps", type=int, default=400)
    parser.add_argument("--skip-openspiel", action="store_true")
    args = parser.parse_args()
    config = GameConfig.from_options(preset=args.preset)
    tree = game_tree(config)
    print(f"{args.preset}: {tree.num_nodes:,} histories; load average {os.getloadavg()[0]:.2f}")
    aliasing(tree)
    uniform = evaluate(
        ObservationTablePolicy(tree, tree.masks / tree.masks.sum(1, keepdims=True)), config, tree
    ).nash_conv
    print(f"uniform random policy: NashConv {uniform:.5f}")

    if not args.skip_openspiel:
        import pyspiel

        efg = pyspiel.load_efg_game(efg_string(tree))
        theirs = pyspiel.CFRPlusSolver(efg)
        started = time.perf_counter()
        for _ in range(args.iterations):
            theirs.evaluate_and_update_policy()
        their_seconds = time.perf_counter() - started
        their_value = pyspiel.nash_conv(efg, theirs.average_policy())
        print(
            f"OpenSpiel C++ CFR+ (information states, alternating): {args.iterations} iterations in "
            f"{their_seconds:.1f} s, NashConv {their_value:.5f}"
        )

    print(
        f"\n| keys | variant | updates | NashConv after {args.iterations} | solver seconds |"
        + (" x OpenSpiel CFR+ time |" if not args.skip_openspiel else "")
    )
    print("|---|---|---|---|---|" + ("---|" if not args.skip_openspiel else ""))
    best = None
    for keys in ("information_state", "observation"):
        for variant in VARIANTS:
            for alternating in (True, False):
                if not alternating and variant not in ("cfr+", "dcfr"):
                    continue
                solver, state, seconds, value = solve(tree, config, keys, variant, alternating, args.iterations)
                ratio = f" {their_seconds / seconds:.2f}x faster |" if not args.skip_openspiel else ""
                print(
                    f"| {keys} | {variant} | {'alternating' if alternating else 'simultaneous'} | {value:.5f} | "
                    f"{seconds:.1f} |{ratio}",
                    flush=True,
                )
                if keys == "information_state" and (best is None or value < best[3]):
                    best = (solver, state, variant, value)

    solver, state, variant, value = best
    table = observation_table(solver, state)[0]
    projected = evaluate(ObservationTablePolicy(tree, table), config, tree).nash_conv
    print(
        f"\nthe best information-state solution ({variant}, NashConv {value:.5f}) projected onto observations: "
        f"NashConv {projected:.5f}"
    )
    descent = ObservationDescent(tree)
    for label, start in (
        ("from that projection", table),
        ("from the uniform policy", tree.masks / tree.masks.sum(1, keepdims=True)),
    ):
        result = descent.run(start, args.descent_steps)
        print(
            f"exploitability descent over observations {label}: {args.descent_steps} steps in "
            f"{result.history[-1][1]:.1f} s, NashConv {result.history[0][2]:.5f} -> {result.nash_conv:.5f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
