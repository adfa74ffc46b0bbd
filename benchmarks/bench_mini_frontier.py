"""How much can a near-equilibrium `mini` agent win from `heuristic`? The exploitability / exploitation frontier.

    python benchmarks/bench_mini_frontier.py --weights 0.05 0.2 1 --steps 1000

The strength targets ask two things of the `mini` agent: exact NashConv at most 0.02, and at most
half of parity's loss rate (25%) against `heuristic`. This measures, in one run, whether
a policy can do both. On the rule set with ``recall=True`` (the observation is the
information state, so a table over observations can play any behaviour strategy):

1. DCFR over information states (``training.algorithms.cfr_solver``), projected onto observations
   (``training.algorithms.cfr.observation_table``): the equilibrium's NashConv and its value against
   `heuristic` (the mean over seats of the reward when one seat plays it and the other
   plays `heuristic`; loss rate = (1 - (N-1) value) / N).
2. The best response to `heuristic` (exact): the most any policy can win from it.
3. From the equilibrium, gradient descent on ``NashConv(pi) - weight * value(pi vs heuristic)``
   for each ``--weights`` (Adam on the table's logits, exact gradients on the tree:
   ``training.algorithms.descent``: ``nash_conv_and_gradient`` and ``value_against_and_gradient``, the
   counterfactual value of each observation's actions with `heuristic` in the other seats). For each weight it
   prints the end point and, for each NashConv budget, the largest value seen within it.

This is a local search over the frontier (a restricted Nash response would solve it
exactly), so it bounds from below what is possible at each budget.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import baselines  # noqa: E402
from cockroach_env import GameConfig  # noqa: E402
from training.algorithms.cfr import observation_table  # noqa: E402
from training.algorithms.cfr_solver import TreeSolver  # noqa: E402
from training.algorithms.descent import ObservationDescent  # noqa: E402
from training.evaluation.exact import _probabilities, evaluate, game_tree  # noqa: E402

BUDGETS = (0.005, 0.01, 0.02, 0.05, 0.1)


def frontier(
    descent: ObservationDescent, start: np.ndarray, fixed: np.ndarray, weight: float, steps: int, learning_rate: float
) -> tuple[list, dict]:
    logits = np.where(descent.legal, np.log(np.clip(start, 1e-6, None)), 0.0)
    first, second = np.zeros_like(logits), np.zeros_like(logits)
    history, best = [], {}
    for step in range(steps + 1):
        policy = descent.softmax(logits)
        nash_conv, grad_nash_conv = descent.nash_conv_and_gradient(policy)
        value, grad_value = descent.value_against_and_gradient(policy, fixed)
        history.append((step, nash_conv, value))
        for budget in BUDGETS:
            if nash_conv <= budget and value > best.get(budget, (-np.inf,))[0]:
                best[budget] = (value, nash_conv, step)
        gradient = grad_nash_conv - weight * grad_value
        through = policy * (gradient - (policy * gradient).sum(1, keepdims=True))
        first = 0.9 * first + 0.1 * through
        second = 0.999 * second + 0.001 * through**2
        k = step + 1
        logits = logits - learning_rate * (first / (1 - 0.9**k)) / (np.sqrt(second / (1 - 0.999**k)) + 1e-12)
    return history, best


def loss(value: float, n: int) -> str:
    """The loss rate of a seat whose expected reward is ``value`` (the loser gets -1, the others 1/(N-1)): ``(1 - (N-1)
    value) / N``.
    """
    return f"{100 * (1 - (n - 1) * value) / n:.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="mini")
    parser.add_argument(
        "--iterations", type=int, default=1000, help="DCFR iterations for the equilibrium (default 1000)"
    )
    parser.add_argument("--weights", type=float, nargs="+", default=[0.05, 0.2, 1.0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    args = parser.parse_args()
    config = GameConfig.from_options(args.preset, recall=True)
    n = config.num_players
    started = time.perf_counter()
    tree = game_tree(config)
    descent = ObservationDescent(tree)
    heuristic = baselines.make("heuristic", config, seed=0)
    fixed = _probabilities(heuristic, tree.observations, tree.masks)
    solver = TreeSolver(tree, keys="information_state", variant="dcfr")
    state = solver.initial_state()
    for _ in range(args.iterations):
        state = solver.iterate(state)
    start, *_ = observation_table(solver, state)
    nash_conv, _ = descent.nash_conv_and_gradient(start)
    value, _ = descent.value_against_and_gradient(start, fixed)
    parity = 1 / config.num_players
    print(
        f"{args.preset} with recall: {len(tree.observations):,} observations; DCFR {args.iterations} iterations in "
        f"{time.perf_counter() - started:.0f} s"
    )
    print(
        f"equilibrium (DCFR table): NashConv {nash_conv:.4f}, value vs heuristic {value:+.4f} (loses "
        f"{loss(value, n)}; parity {100 * parity:.0f}%, target <= {50 * parity:.0f}%)"
    )
    br = evaluate(heuristic, config, tree).best_response_values.mean()
    print(f"best response to heuristic: value {br:+.4f} (loses {loss(br, n)}): the most any policy wins from it")
    print(
        "\n| weight | steps | end NashConv | end value (loss) | "
        + " | ".join(f"best value at NashConv <= {b:g}" for b in BUDGETS)
        + " |"
    )
    print("|" + "---|" * (4 + len(BUDGETS)))
    for weight in args.weights:
        t = time.perf_counter()
        history, best = frontier(descent, start, fixed, weight, args.steps, args.learning_rate)
        _, end_nash_conv, end_value = history[-1]
        cells = [
            f"{best[b][0]:+.4f} ({loss(best[b][0], n)}, NashConv {best[b][1]:.4f})" if b in best else "none"
            for b in BUDGETS
        ]
        print(
            f"| {weight:g} | {args.steps} ({time.perf_counter() - t:.0f} s) | {end_nash_conv:.4f} | {end_value:+.4f} "
            f"({loss(end_value, n)}) | " + " | ".join(cells) + " |",
            flush=True,
        )


if __name__ == "__main__":
    main()
