"""Strength of the scripted baselines: ``heuristic`` (or ``--hero``) against three copies of each other baseline.

    python benchmarks/bench_baselines.py [--games 4000] [--seed 0] [--players 4] [--preset classic] [--engine auto]
    python benchmarks/bench_baselines.py --hero counter --opponents heuristic random --games 2000

Targets (4-player classic): ``heuristic`` loses at most 5% of its games against three
``random`` agents (parity is 25%), and clearly below 25% against three ``honest``
agents (the upper end of its 95% Wilson interval below 25%). The games use the arena:
duplicate deals under every seat rotation, reproducible from ``--seed``. The exit
status is 1 when a target is missed. Other rule sets (``--players``, or a preset such as
``duel`` that sets its own player count) are measured the same way, against no target, and
so is any other ``--hero`` (a baseline name or a checkpoint, such as ``classic-4p``, measured
at the table it was trained for unless ``--preset`` or ``--players`` says otherwise).
"""

from __future__ import annotations

import argparse
import sys

import baselines
from cockroach_env.config import GameConfig
from training.cli.eval import format_result
from training.evaluation.arena import play_match

TARGETS = {"random": 0.05, "honest": 0.25}
"""Highest acceptable heuristic loss rate (point estimate vs random, interval top vs honest)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=4000, help="games per match (default 4000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--players", type=int, default=None, help="player count (default: the preset's, else 4)")
    parser.add_argument("--preset", default=None, help="rule set (default classic)")
    parser.add_argument("--engine", default="auto", choices=("auto", "batched", "aec"))
    parser.add_argument("--opponents", nargs="+", default=["random", "honest", "bluffer"])
    parser.add_argument("--hero", default="heuristic", help="the agent measured (default heuristic; no target else)")
    args = parser.parse_args(argv)
    players = {} if args.players is None else {"num_players": args.players}
    config = GameConfig.from_options(preset=args.preset, **players)
    if args.preset is None and args.players is None and args.hero not in baselines.names():
        from training.core.checkpoint import load_checkpoint

        config = load_checkpoint(args.hero).game_config  # a checkpoint hero: the table it was trained for
    failures = []
    summary = []
    for opponent in args.opponents:
        result = play_match(
            [args.hero, f"{opponent}*{config.num_players - 1}"],
            config,
            games=args.games,
            seed=args.seed,
            engine=args.engine,
            progress=None,
        )
        print(format_result(result))
        print()
        hero = result.agents[0]
        low, high = hero.loss_rate_ci95
        verdict = ""
        if args.hero == "heuristic" and opponent in TARGETS and config == GameConfig(num_players=4):
            limit = TARGETS[opponent]
            ok = hero.loss_rate <= limit if opponent == "random" else high < limit
            verdict = f"target {'<=' if opponent == 'random' else 'CI top <'} {limit:.0%}: {'met' if ok else 'MISSED'}"
            if not ok:
                failures.append(opponent)
        summary.append(
            f"{hero.name} vs {config.num_players - 1}x {opponent:8s} loss rate {hero.loss_rate:6.2%}  "
            f"95% CI [{low:.2%}, {high:.2%}]  {result.games} games, {result.seconds:.1f} s  {verdict}"
        )
    print("\n".join(summary))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
