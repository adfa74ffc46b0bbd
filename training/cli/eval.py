"""``cockroach-eval``: play agents against each other and print honest statistics.

Examples::

    cockroach-eval heuristic random*3 --games 2000
    cockroach-eval heuristic honest*3 --json results.json --plot results.png
    cockroach-eval heuristic bluffer --players 2 --preset duel
    cockroach-eval random honest bluffer heuristic runs/ppo/agent --league --games 400
    cockroach-eval mypkg.agents:MyAgent random*3 --preset royal --engine aec

Agents are baseline names, ``module:Class``, checkpoint paths/names or Stable-Baselines3
``.zip`` models (``training.evaluation.sb3_agent``), one per seat
(``NAME*K`` repeats). Without any rule option (``--preset``, ``--players``, ``--option``,
...) a match plays the rules its first checkpoint was trained for, when they seat as
many players as the lineup (``cockroach-eval mini-recall heuristic``); otherwise the
default rules for the lineup's size. See ``training.evaluation.arena`` for seat rotation, duplicate deals and
the JSON schema. Exit status: 0 on success, 2 on bad input or a misbehaving agent.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from cockroach_env.config import PRESETS, GameConfig
from training.core.arguments import game_count
from training.core.config import quoted
from training.core.distributed import add_ray_option, add_torch_threads_option, use_torch_threads
from training.core.output_paths import output_file_problem, write_json_report
from training.evaluation.arena import ENGINES, ArenaError, MatchResult, expand_lineup, play_league, play_match
from training.evaluation.report import describe_config, format_result


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``cockroach-eval``."""
    parser = argparse.ArgumentParser(
        prog="cockroach-eval",
        description="Play Cockroach Poker agents against each other with seat rotation and duplicate deals; "
        "report loss rates with 95% Wilson intervals and behaviour statistics.",
        epilog="Agents: "
        + "baseline names (random, honest, bluffer, heuristic), module:Class, checkpoint paths/names, or "
        "Stable-Baselines3 model.zip files; NAME*K repeats an agent K times.",
    )
    parser.add_argument("agents", nargs="+", help="one agent per seat (or the pool, with --league)")
    parser.add_argument(
        "--games",
        type=game_count,
        default=1000,
        help="games to play (per table in a league); rounded up to a multiple of the player count (default 1000)",
    )
    parser.add_argument(
        "--players",
        type=int,
        default=None,
        help="player count (default: the number of agents; in a league 4, or the pool size if smaller)",
    )
    _add_rule_options(parser)
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals and the agents' generators (default 0)")
    parser.add_argument(
        "--no-duplicate",
        action="store_true",
        help="deal every game afresh instead of replaying each deal under every seat rotation",
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="batched engine, AEC env, or auto: batched when every agent supports it (default)",
    )
    parser.add_argument("--batch-size", type=int, default=1024, help="games played in lock step (default 1024)")
    parser.add_argument(
        "--league",
        action="store_true",
        help="round robin over the agents as a pool; prints OpenSkill Plackett-Luce ratings",
    )
    add_ray_option(parser, "--league only: play the tables")
    parser.add_argument(
        "--json",
        metavar="PATH",
        default=None,
        help="write the results as JSON to PATH ('-' for stdout, replacing the table)",
    )
    parser.add_argument(
        "--plot", metavar="PNG", default=None, help="write a bar chart of loss rates with 95%% intervals"
    )
    parser.add_argument(
        "--save-games",
        nargs=2,
        metavar=("N", "DIR"),
        default=None,
        help="save the first N games as JSON game records in DIR (replay one with cockroach-replay)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --json or --plot file, and earlier game records in the --save-games DIR",
    )
    parser.add_argument("--quiet", action="store_true", help="no table and no progress bar")
    add_torch_threads_option(parser, 0)
    return parser


def _add_rule_options(parser: argparse.ArgumentParser) -> None:
    """The rule set's options: a preset, the edition, the losing count, ... (``GameConfig``)."""
    parser.add_argument(
        "--preset", default=None, help=f"rule set: {', '.join(PRESETS)}; combine with '+', e.g. rainbow+even-deal"
    )
    parser.add_argument("--edition", choices=("classic", "royal"), default=None, help="card edition")
    parser.add_argument(
        "--loss-count", type=int, default=None, help="cards of one type that lose (default 4, 5 with two players)"
    )
    parser.add_argument("--discard", type=int, default=None, help="cards removed unseen before dealing")
    parser.add_argument(
        "--rainbow", action="store_true", default=None, help="a collection with every creature type loses"
    )
    parser.add_argument(
        "--opening-cards", type=int, default=None, help="face-up cards dealt into each collection (0 or 1)"
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other GameConfig option, e.g. blank_counts_as_royal=true (repeatable)",
    )


def _game_saver(args: argparse.Namespace):
    if args.save_games is None:
        return None
    from training.evaluation.game_saving import GameSaver

    count, directory = args.save_games
    if args.league:
        raise ValueError("--save-games saves the games of one match; it cannot be combined with --league")
    try:
        count = int(count)
    except ValueError:
        raise ValueError(f"--save-games N {quoted(count)} is not allowed; expected a positive integer") from None
    saver = GameSaver(count, directory, replace=args.overwrite)
    try:  # the folder is made now, so that a place where no record can be written is named before any game
        os.makedirs(directory, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        raise ValueError(
            f"--save-games directory {quoted(directory)}: cannot write game records there ({error.strerror or error})"
        ) from None
    return saver


def plot_file_problem(path: str | None) -> str | None:
    """Why ``--plot PATH`` cannot be written by matplotlib (a suffix it has no writer for), or None."""
    if path is None or str(path) == "-":
        return None if path is None else "--plot '-' is not allowed; expected a file name such as results.png"
    suffix = os.path.splitext(str(path))[1].lstrip(".").lower()
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backend_bases import FigureCanvasBase

    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    if suffix not in formats:
        what = f".{suffix}" if suffix else "a file without a suffix"
        return (
            f"--plot {quoted(str(path))}: matplotlib cannot write {what}; expected a file name ending in one of "
            f"{['.' + f for f in formats]}"
        )
    return None


def _rules_given(args: argparse.Namespace) -> bool:
    return (
        bool(args.option)
        or args.players is not None
        or args.rainbow
        or any(
            getattr(args, key) is not None for key in ("preset", "edition", "loss_count", "discard", "opening_cards")
        )
    )


def checkpoint_rules(entries: Sequence[Any]) -> GameConfig | None:
    """The rules the first checkpoint among ``entries`` was trained for (None if no entry is a checkpoint)."""
    import baselines

    for entry in entries:
        if not isinstance(entry, str) or entry in baselines.names() or ":" in entry or entry.endswith(".zip"):
            continue
        try:
            from training.core.checkpoint import read_metadata

            return GameConfig(**read_metadata(entry)["game_config"])
        except Exception:  # noqa: BLE001
            continue  # not a readable checkpoint: the arena names the problem when it loads the entry
    return None


def config_from_args(args: argparse.Namespace, default_players: int, entries: Sequence[Any] = ()) -> GameConfig:
    """The rules from the options; without any, a match of the lineup's size plays the rules of its first checkpoint."""
    if not _rules_given(args) and not args.league:
        trained = checkpoint_rules(entries)
        if trained is not None and trained.num_players == default_players:
            return trained
    options: dict[str, Any] = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--option {quoted(item)} is not allowed; expected KEY=VALUE")
        options[key.strip().replace("-", "_")] = _parse_value(value.strip())
    if "num_players" in options:  # the player count is --players or the lineup's size: one value, never overridden
        given = options.pop("num_players")
        if isinstance(given, bool) or not isinstance(given, int):
            raise ValueError(
                f"--option num_players={quoted(given)} is not allowed; expected an integer (or use --players N)"
            )
        if args.players is not None and args.players != given:
            raise ValueError(
                f"--option num_players={given} is not allowed with --players {args.players}; give the player count once"
            )
        args.players = given
    for key in ("edition", "loss_count", "discard", "opening_cards"):
        if getattr(args, key) is not None:
            options[key] = getattr(args, key)
    if args.rainbow:
        options["rainbow_loses"] = True
    preset_players = any("num_players" in PRESETS.get(p, {}) for p in (args.preset or "").split("+"))
    players = args.players if args.players is not None else (None if preset_players else default_players)
    if players is not None:
        options["num_players"] = players
    return GameConfig.from_options(preset=args.preset, **options)


def _parse_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return int(text)
    except ValueError:
        return text


def main(argv: Sequence[str] | None = None) -> int:
    """``cockroach-eval``: play the lineup and print the report; the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # before any game is played
    problem = (
        output_file_problem("--json", args.json, replace=args.overwrite)
        or output_file_problem("--plot", args.plot, replace=args.overwrite)
        or plot_file_problem(args.plot)
    )
    if problem:
        print(f"cockroach-eval: error: {problem}", file=sys.stderr)
        return 2
    use_torch_threads(args.torch_threads)
    try:
        entries = expand_lineup(args.agents)
        if len(entries) < 2 and args.players is None:
            raise ArenaError(
                f"the lineup {args.agents} has {len(entries)} agent(s); expected one per seat, at least 2 "
                f"(NAME*K repeats an agent K times)"
            )
        default_players = (4 if len(entries) >= 4 else len(entries)) if args.league else len(entries)
        config = config_from_args(args, default_players, entries)
        saver = _game_saver(args)
        common = dict(
            games=args.games,
            seed=args.seed,
            duplicate=not args.no_duplicate,
            engine=args.engine,
            batch_size=args.batch_size,
            progress=False if args.quiet else None,
        )
        if args.ray is not None and not args.league:
            raise ArenaError(
                "--ray plays the tables of a league in parallel; add --league (a single match is one task)"
            )
        if args.league:
            from training.core.distributed import executor

            workers = executor(args.ray) if args.ray is not None else None
            try:
                result = play_league(entries, config, **common, workers=workers)
            finally:
                if workers is not None:
                    workers.close()
        else:
            result = play_match(entries, config, **common, on_decisions=saver)
        if saver is not None:
            saver.write(result)
    except (ArenaError, ValueError) as error:
        print(f"cockroach-eval: error: {error}", file=sys.stderr)
        return 2
    if args.json != "-" and not args.quiet:  # '-': the JSON replaces the table on stdout
        print(format_result(result))
    if args.json:
        write_json_report(args.json, result.to_json(), indent=2)
    if args.plot:
        plot_result(result, args.plot)
    return 0


# ---------------------------------------------------------------------------- output
def plot_result(result: MatchResult, path: str) -> None:
    """A PNG bar chart of each agent's loss rate with its 95% Wilson interval and the parity line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [a.name for a in result.agents]
    rates = [a.loss_rate for a in result.agents]
    lows = [a.loss_rate - a.loss_rate_ci95[0] for a in result.agents]
    highs = [a.loss_rate_ci95[1] - a.loss_rate for a in result.agents]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(names) + 2), 3.5))
    ax.bar(names, rates, yerr=[lows, highs], capsize=6, color="#4c72b0")
    ax.axhline(1 / result.config.num_players, color="gray", linestyle="--", label="parity")
    ax.set_ylabel("loss rate (95% Wilson interval)")
    ax.set_ylim(0, min(1.0, max(r + h for r, h in zip(rates, highs)) * 1.15 + 0.02))
    ax.set_title(f"{describe_config(result.config)}, {result.games} games")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
