"""How far and where one sampled PPO update moves the policy on a mini rule set, against exact magnetic mirror descent.

For a run that kept its agent every update (``schedule.keep_agent_every: 1``) each pair of kept agents ``k`` and
``k + span`` is compared over the exact game tree. The keys are the tree's distinct observations, which are the
information states where ``game.history`` covers the rule set's longest game (8 moves on ``mini``, 12 on
``mini-3p``). The exact step is ``span`` iterations of ``MMDSolver``'s update (temperature ``--alpha``, step
``--eta``) from pi_k, with pi_k as the magnet:

* ``sampled KL``: KL(pi_{k+span} || pi_k), weighted by ``--weights`` (``reach``: how often pi_k reaches each key, the
  distribution that PPO's ``start_kl`` averages over; ``counterfactual``: the other seats' and chance's reach only,
  where a best response may go; ``keys``: every key alike);
* ``exact KL``: the same divergence of the exact step;
* ``cosine``: the cosine, weighted alike (and by pi_k inside each key), between the sampled change of the
  log-probabilities and the exact one (1: the update goes where MMD goes; about 0: noise);
* ``along``: the sampled change projected on the exact one, in units of the exact change;
* ``entropy``: pi_k's entropy, weighted alike; ``nashconv`` (``--nashconv``): pi_k's exact NashConv.

``--substitute UPDATE`` asks where the kept agent of ``UPDATE`` loses to exact MMD: it runs the exact iterations
from the run's first kept agent (as its magnet too) to ``UPDATE``, then prints the NashConv of the exact policy with
the sampled one put in at the ``N`` keys that pi_k reaches most, and of the sampled policy with the exact one put in
there, for each ``N`` of ``--top``.

    python benchmarks/bench_mmd_step.py runs/diag --span 1 10 --every 5 --nashconv
    python benchmarks/bench_mmd_step.py runs/diag --substitute 26 --top 100 500 2000 5000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WEIGHTS = ("reach", "counterfactual", "keys")


def kept_agents(run: Path) -> dict[int, Path]:
    """The run's kept agents (``update_<k>.json``) by update."""
    return {int(p.stem.split("_")[1]): p for p in run.rglob("update_*.json")}


def key_weights(solver, policy: np.ndarray, weighting: str) -> np.ndarray:
    """(K,) weights of the keys summing to 1: the probability that ``policy`` in every seat reaches each key
    (``reach``), the same with the acting seat's own moves counted as certain (``counterfactual``), or alike.
    """
    from training.algorithms.cfr_solver import others_reach

    if weighting == "keys":
        return np.full(policy.shape[0], 1.0 / policy.shape[0])
    tree, passes, nodes = solver.tree, solver.passes, solver.decision_nodes
    reach = passes.reach(policy)
    if weighting == "counterfactual":
        weights = others_reach(reach, tree.player[nodes], nodes) * tree.chance[nodes]
    else:
        weights = reach.prod(0)[nodes] * tree.chance[nodes]
    weight = np.bincount(passes.node_key[nodes], weights=weights, minlength=policy.shape[0])
    return weight / weight.sum()


def exact_steps(solver, policy: np.ndarray, magnet: np.ndarray, steps: int) -> np.ndarray:
    """``steps`` MMD iterations of ``solver`` (its alpha and eta) from ``policy`` with a fixed ``magnet``."""
    legal, alpha, eta = solver.legal, solver.alpha, solver.eta
    log_magnet = np.log(np.where(legal, magnet, 1.0))
    for _ in range(steps):
        q, _ = solver.q_values(policy, magnet, alpha)
        logits = (np.log(np.where(legal, policy, 1.0)) + eta * alpha * log_magnet + eta * q) / (1.0 + eta * alpha)
        logits = np.where(legal, logits, -np.inf)
        policy = np.exp(logits - logits.max(1, keepdims=True))
        policy /= policy.sum(1, keepdims=True)
    return policy


def step_statistics(solver, start: np.ndarray, end: np.ndarray, exact: np.ndarray, weighting: str) -> dict:
    """The columns of the module docstring for one pair (``start``, ``end``) and the exact step's policy ``exact``."""
    legal = solver.legal
    weight = key_weights(solver, start, weighting)
    log_start = np.log(np.where(legal, start, 1.0))

    def log_change(policy: np.ndarray) -> np.ndarray:
        return np.where(legal, np.log(np.where(legal, policy, 1.0)) - log_start, 0.0)

    def centred(policy: np.ndarray) -> np.ndarray:  # a shift of every log-probability is no change
        delta = log_change(policy)
        return delta - (start * delta).sum(1, keepdims=True)

    def mean(per_key: np.ndarray) -> float:
        return float((weight * per_key).sum())

    sampled, target = centred(end), centred(exact)
    inner = mean((start * sampled * target).sum(1))
    norm_s, norm_t = mean((start * sampled**2).sum(1)), mean((start * target**2).sum(1))
    return {
        "sampled_kl": mean((end * log_change(end)).sum(1)),
        "exact_kl": mean((exact * log_change(exact)).sum(1)),
        "cosine": inner / max(np.sqrt(norm_s * norm_t), 1e-30),
        "along": inner / max(norm_t, 1e-30),
        "entropy": mean(-(start * log_start).sum(1)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a run directory with an agent kept every update")
    parser.add_argument("--preset", default="mini", choices=["mini", "mini-3p"])
    parser.add_argument("--history", type=int, default=16, help="the run's game.history (default 16)")
    parser.add_argument("--alpha", type=float, default=0.05, help="the exact step's temperature (default 0.05)")
    parser.add_argument("--eta", type=float, default=0.1, help="the exact step's size (default 0.1)")
    parser.add_argument("--span", type=int, nargs="+", default=[1], help="updates between the compared agents")
    parser.add_argument("--every", type=int, default=1, help="compare from every this many kept agents")
    parser.add_argument("--weights", choices=WEIGHTS, default="reach", help="the keys' weights (default reach)")
    parser.add_argument("--nashconv", action="store_true", help="also the exact NashConv of each start policy")
    parser.add_argument("--substitute", type=int, metavar="UPDATE", help="where UPDATE's agent loses to exact MMD")
    parser.add_argument("--top", type=int, nargs="+", default=[100, 500, 2000, 5000], help="--substitute's N")
    args = parser.parse_args(argv)

    from cockroach_env import GameConfig
    from training.algorithms.mmd_solver import MMDSolver
    from training.core.checkpoint import load_agent
    from training.evaluation.exact import _probabilities, game_tree

    agents = kept_agents(args.run)
    if not agents:
        print(f"bench_mmd_step: error: {args.run} holds no kept agent (update_*.json)", file=sys.stderr)
        return 2
    game = GameConfig.from_options(preset=args.preset, history=args.history)
    tree = game_tree(game)
    solver = MMDSolver(tree, keys="observation", alpha=args.alpha, eta=args.eta)
    tables: dict[int, np.ndarray] = {}

    def table(update: int) -> np.ndarray:
        if update not in tables:
            tables[update] = _probabilities(load_agent(agents[update], config=game), tree.observations, tree.masks)
        return tables[update]

    if args.substitute is not None:
        return substitute(solver, table, min(agents), args.substitute, args.top, agents)
    print(f"{'update':>6s} {'span':>4s} {'sampled KL':>11s} {'exact KL':>10s} {'cosine':>7s} {'along':>7s} "
          f"{'entropy':>7s} {'nashconv':>8s}   (weights: {args.weights})")  # fmt: skip
    for k in sorted(agents)[:: args.every]:
        start = table(k)
        value = solver.nash_conv(start) if args.nashconv else float("nan")
        for span in (s for s in args.span if k + s in agents):
            row = step_statistics(solver, start, table(k + span), exact_steps(solver, start, start, span), args.weights)
            print(
                f"{k:6d} {span:4d} {row['sampled_kl']:11.5f} {row['exact_kl']:10.5f} {row['cosine']:7.3f} "
                f"{row['along']:7.3f} {row['entropy']:7.3f} {value:8.4f}",
                flush=True,
            )
    return 0


def substitute(solver, table, first: int, update: int, top: list[int], agents: dict) -> int:
    """``--substitute``: the NashConv of the exact and the sampled policy, each with the other's at the top keys."""
    if update not in agents or update <= first:
        print(f"bench_mmd_step: error: --substitute {update} is not a kept update after {first}", file=sys.stderr)
        return 2
    start, sampled = table(first), table(update)
    exact = exact_steps(solver, start, start, update - first)
    order = np.argsort(-key_weights(solver, start, "reach"))
    print(
        f"NashConv: start (update {first}) {solver.nash_conv(start):.3f}, sampled (update {update}) "
        f"{solver.nash_conv(sampled):.3f}, exact MMD ({update - first} iterations) {solver.nash_conv(exact):.3f}"
    )
    for n in top:
        keys = order[:n]
        mixed, reverse = exact.copy(), sampled.copy()
        mixed[keys], reverse[keys] = sampled[keys], exact[keys]
        print(
            f"  top {n:5d} keys ({float(key_weights(solver, start, 'reach')[keys].sum()):.0%} of the reach): "
            f"exact with the sampled policy there {solver.nash_conv(mixed):.3f}, sampled with the exact policy "
            f"there {solver.nash_conv(reverse):.3f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
