"""Where a best response's edge lies: its decisions taken one kind at a time.

A best response (``cockroach-exploit``) is usually warm-started from a network of the
checkpoint it exploits (its ``base``). This script plays, in one seat against N-1 copies
of the exploited checkpoint (a mixture draws its member per seat and game), every hybrid
of the two networks that takes some kinds of decision from the best response and the
rest from its base:

* ``offer``: which card to offer, to whom, with which claim;
* ``respond``: call the claim true, call it false, or peek and pass on;
* ``pass``: after peeking, to whom to pass and with which claim;
* ``place`` (Royal edition only): where a royal card goes.

Each line gives the hybrid's loss rate with its 95% interval and its points from parity,
from the base alone (nothing from the best response) to the best response alone. The
gains of single kinds against the base show which decisions carry the edge, and whether
they add up. Every hybrid plays the same deals (duplicate deals, seat rotation, one seed).

    python benchmarks/bench_edge_by_decision.py classic-4p runs/exploit_classic-4p/final runs/members/ppo_4p_g --games 4000
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="the exploited checkpoint: a path or shipped name (an agent or a mixture)")
    parser.add_argument("best_response", help="the best response: an agent or run checkpoint of one network")
    parser.add_argument("base", help="the network the best response started from: an agent or run checkpoint")
    parser.add_argument("--games", type=int, default=4000, help="games per hybrid (default 4000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals and the agents (default 0)")
    parser.add_argument("--torch-threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    if args.games < 1:
        print(f"error: --games {args.games} is not allowed; expected a positive number of games", file=sys.stderr)
        return 2
    import torch

    from baselines.agent import LogitsAgent
    from cockroach_env.encoding import encoding_for
    from training.arena import play_match
    from training.checkpoint import CheckpointError, load_agent, load_checkpoint

    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    try:
        exploited = load_agent(args.checkpoint, seed=args.seed + 1)
        game = exploited.config
        for role, path in (("best_response", args.best_response), ("base", args.base)):
            kind = load_checkpoint(path, game=game).metadata["kind"]
            if kind not in ("agent", "run"):
                raise CheckpointError(f"{role} {path!r} is a {kind!r} checkpoint; expected an agent or run checkpoint of one network")
        best, base = load_agent(args.best_response, seed=args.seed + 2, config=game), load_agent(args.base, seed=args.seed + 3, config=game)
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    slices = {kind: part for kind, part in encoding_for(game).action_slices().items() if part.stop > part.start}

    class Hybrid(LogitsAgent):
        """The base's logits, except at decisions of the chosen kinds (known by which part of the action mask is legal)."""

        def __init__(self, kinds: tuple[str, ...]):
            super().__init__(game, args.seed + 4)
            self.kinds, self.name = kinds, "hybrid"

        def logits(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
            out = np.array(base.logits(observations, masks), np.float64)
            rows = np.zeros(len(masks), bool)
            for kind in self.kinds:
                rows |= masks[:, slices[kind]].any(axis=1)
            if rows.any():
                out[rows] = best.logits(observations[rows], masks[rows])
            return out

    parity = 1 / game.num_players
    load = os.getloadavg()[0]
    print(f"{game.num_players}-player {game.edition}: hybrids of {args.best_response} (best response) and {args.base} (base) "
          f"against {game.num_players - 1} x {args.checkpoint}, {args.games} games each; parity {100 * parity:.1f}%; load average {load:.2f}")  # fmt: skip
    started = time.perf_counter()
    points = {}
    kinds = tuple(slices)
    for size in range(len(kinds) + 1):
        for chosen in itertools.combinations(kinds, size):
            result = play_match([Hybrid(chosen), *[exploited] * (game.num_players - 1)], game, games=args.games, seed=args.seed)
            report = result.report("hybrid")
            low, high = report.loss_rate_ci95
            points[chosen] = 100 * (parity - report.loss_rate)
            print(f"  best response's {'+'.join(chosen) or 'nothing':24s} loss rate {100 * report.loss_rate:5.1f}% [{100 * low:.1f}, {100 * high:.1f}]  {points[chosen]:+5.1f} points", flush=True)
    alone = {kind: points[(kind,)] - points[()] for kind in kinds}
    print("gain over the base of each kind alone: " + ", ".join(f"{kind} {gain:+.1f}" for kind, gain in alone.items())
          + f"; their sum {sum(alone.values()):+.1f}, all together {points[kinds] - points[()]:+.1f} points ({time.perf_counter() - started:.0f} s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
