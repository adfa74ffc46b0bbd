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
they add up. Then each factor of a kind alone (unless ``--no-factors``): the best
response picks that factor (``offer.card``, ``offer.target``, ``offer.claim``,
``respond.peek``: whether to peek, ``respond.call``: which call, ``pass.target``,
``pass.claim``) with its own marginal probabilities, the base the rest given it. Every
hybrid plays the same deals (duplicate deals, seat rotation, one seed). The hybrids are
``training.evaluation.edge``'s partial agents (``cockroach-exploit --edge`` plays the same table with
the checkpoint itself as the base).

    python benchmarks/bench_edge_by_decision.py classic-4p runs/exploit_classic-4p/final runs/members/ppo_4p_g \
        --games 4000
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

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
    parser.add_argument(
        "--no-factors",
        action="store_true",
        help="only the kinds and their combinations, not the factors within each kind",
    )
    args = parser.parse_args(argv)
    if args.games < 1:
        print(f"error: --games {args.games} is not allowed; expected a positive number of games", file=sys.stderr)
        return 2
    import torch

    from training.core.checkpoint import CheckpointError, load_checkpoint
    from training.evaluation.edge import edge_sources, partitions

    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    try:
        game = load_checkpoint(args.checkpoint).game_config
        table = partitions(game)
        kinds = tuple(p for p in table if "." not in p)
        variants = [chosen for size in range(1, len(kinds)) for chosen in itertools.combinations(kinds, size)]
        if not args.no_factors:
            variants += [(p,) for p in table if "." in p]
        parity = 1 / game.num_players
        print(
            f"{game.num_players}-player {game.edition}: hybrids of {args.best_response} (best response) and "
            f"{args.base} (base) against {game.num_players - 1} x {args.checkpoint}, {args.games} games each; "
            f"parity {100 * parity:.1f}%; load average {os.getloadavg()[0]:.2f}"
        )
        started = time.perf_counter()
        edge = edge_sources(
            args.checkpoint, args.best_response, games=args.games, seed=args.seed, base=args.base, variants=variants
        )
    except (CheckpointError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    by_parts = {tuple(r["parts"]): r for r in edge["rows"]}
    rows = {
        (): edge["baseline"],
        **{v: by_parts[v] for v in variants if "." not in v[0]},
        kinds: edge["whole"],
        **{v: by_parts[v] for v in variants if "." in v[0]},
    }
    points = {}
    for chosen, entry in rows.items():
        low, high = entry["ci95"]
        points[chosen] = 100 * (parity - entry["loss_rate"])
        print(
            f"  best response's {'+'.join(chosen) or 'nothing':24s} loss rate {100 * entry['loss_rate']:5.1f}% "
            f"[{100 * low:.1f}, {100 * high:.1f}]  {points[chosen]:+5.1f} points",
            flush=True,
        )
    alone = {kind: points[(kind,)] - points[()] for kind in kinds}
    print(
        "gain over the base of each kind alone: "
        + ", ".join(f"{kind} {gain:+.1f}" for kind, gain in alone.items())
        + f"; their sum {sum(alone.values()):+.1f}, all together {points[kinds] - points[()]:+.1f} points "
        f"({time.perf_counter() - started:.0f} s)"
    )
    factors = {p: points[(p,)] - points[()] for p in table if (p,) in points and "." in p}
    if factors:
        print(
            "gain over the base of each factor alone: " + ", ".join(f"{p} {gain:+.1f}" for p, gain in factors.items())
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
