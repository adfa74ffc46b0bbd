"""``cockroach-mixture``: one mixture agent from several trained checkpoints.

A mixture (``training.core.mixture``) plays one of its members per game and seat, drawn with
the members' weights. A population of different policies is much harder to exploit than
any of its members (docs/research.md measures it on 4 players), so this command builds
one from checkpoints you already trained (agents, runs or other mixtures, whose members
join with their weights) and writes it as one validated checkpoint for
``training.load_agent``, ``cockroach-eval``, ``cockroach-exploit`` and ``cockroach-play``.

Members keep their names; a repeated name (two checkpoints of one name, or a checkpoint
that a mixture given beside it holds too, which stays a member of its own) becomes
``NAME#2``, ``NAME#3``, ..., skipping the names other members already have, so that
every member's name is distinct. Each MEMBER has an equal weight by default (a mixture
shares its weight among its members by theirs); ``--weights`` gives them, and
``--meta-solver`` solves the weights of every member from their meta-game, the same one
PSRO solves: every table (a multiset of N members) is played for ``--payoff-games``
games in the batched arena, with duplicate deals and seat rotation, and a solver of
``training.algorithms.meta_solvers`` picks the weights.
The result's metadata keeps each member's recipe (its name, source, commands, training
config and evaluation) and the meta-game, so the mixture is reproducible.

    cockroach-mixture runs/mix4p classic-4p runs/ppo_4p_d/final runs/ppo_4p_e/final
    cockroach-mixture runs/mix4p runs/a/final runs/b/final --weights 2 1
    cockroach-mixture runs/mix4p runs/a/final runs/b/final runs/c/final --meta-solver regret_matching --payoff-games 400
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from training.algorithms.meta_solvers import SOLVERS, ExploiterGame, MetaGame, minimax_weights, solve
from training.core import checkpoint as ckpt
from training.core.arguments import positive_integer, unit_weight
from training.core.arguments import seed as seed_argument
from training.core.distributed import (
    LocalExecutor,
    add_ray_option,
    add_torch_threads_option,
    executor,
    use_torch_threads,
)
from training.core.output_paths import output_file_problem
from training.evaluation.payoff_cache import PayoffCache, content_seed, model_digest

RECIPE_KEYS = (
    "name",
    "kind",
    "command",
    "commands",
    "base_run",
    "training_config",
    "step",
    "evaluation",
    "exported_from",
    "created",
    "psro",
)
"""What a checkpoint's metadata contributes to its recipe: a member's entry of ``mixture.recipes`` (one per member, in
member
order), or for a mixture without recipes of its own (PSRO's), its one entry of ``mixture.sources``, which its members'
entries name.
"""
SHARED_KEYS = ("game_config", "model", "observation_size", "num_actions", "layout_version")
"""What every member must have in common (the network shape and the rule set), copied into the mixture's metadata."""


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``cockroach-mixture``."""
    parser = argparse.ArgumentParser(
        prog="cockroach-mixture",
        description=__doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("output", help="the mixture checkpoint to write (OUTPUT.json and its tensor file)")
    parser.add_argument(
        "members",
        nargs="+",
        metavar="MEMBER",
        help="checkpoint paths or shipped names (agents, runs or mixtures) of one rule set and one network shape",
    )
    _add_weighting_options(parser)
    parser.add_argument(
        "--max-loss",
        action="append",
        default=[],
        metavar="BASELINE=RATE",
        help="with --exploiters: keep the loss rate against N-1 copies of BASELINE <= RATE (repeatable)",
    )
    parser.add_argument(
        "--max-weight",
        type=unit_weight,
        metavar="W",
        help="with --exploiters: no member's weight above W (W in [1/MEMBERS, 1])",
    )
    parser.add_argument(
        "--baseline-games",
        type=positive_integer,
        default=4000,
        help="with --max-loss: games of each member against each limited baseline (default 4000)",
    )
    parser.add_argument(
        "--payoff-games",
        type=positive_integer,
        default=400,
        help="with --meta-solver or --exploiters: games per table (default 400)",
    )
    parser.add_argument(
        "--prune-below",
        type=unit_weight,
        default=0.0,
        metavar="W",
        help="drop the members of weight below W, their weight shared among the rest (default 0: keep all)",
    )
    add_torch_threads_option(parser, 1)
    parser.add_argument(
        "--payoff-cache",
        metavar="PATH",
        help="with --exploiters: a JSON file of the tables already played, read and extended (docs/scaling.md)",
    )
    add_ray_option(parser, "--exploiters, --meta-solver: play the tables")
    parser.add_argument(
        "--seed",
        type=seed_argument,
        default=0,
        help="with --meta-solver or --exploiters: seed of the games and of the search (default 0)",
    )
    parser.add_argument("--name", help="the mixture's name in its metadata (default: OUTPUT's file name)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing checkpoint at OUTPUT")
    return parser


def _add_weighting_options(parser: argparse.ArgumentParser) -> None:
    """How the members' weights are chosen: given, solved from their meta-game, or against exploiters (one of them)."""
    weighting = parser.add_mutually_exclusive_group()
    weighting.add_argument(
        "--weights",
        nargs="+",
        metavar="W",
        help="one weight per MEMBER (>= 0, positive sum; normalised); a mixture MEMBER shares its weight "
        "among its members",
    )
    weighting.add_argument(
        "--meta-solver",
        choices=sorted(SOLVERS),
        default="uniform",
        help="solve the members' meta-game for the weights (default uniform: equal weights, nothing played)",
    )
    weighting.add_argument(
        "--exploiters",
        nargs="+",
        metavar="BR",
        help="weights that leave these exploiters (checkpoints) the smallest best loss rate",
    )


def _weights(texts: list[str] | None, count: int) -> np.ndarray:
    if texts is None:
        return np.ones(count)
    if len(texts) != count:
        raise ValueError(f"--weights has {len(texts)} values for {count} members; expected one weight per MEMBER")
    values = []
    for text in texts:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"--weights value {text!r} is not a number; expected a finite number >= 0") from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"--weights value {text!r} is not allowed; expected a finite number >= 0")
        values.append(value)
    if not sum(values) > 0:
        raise ValueError(f"--weights {texts} sum to 0; expected at least one positive weight")
    return np.asarray(values, np.float64)


def load_members(sources: list[str]) -> list[tuple[str, ckpt.Checkpoint]]:
    """Load every source and check that they share one rule set and one network; a repeated source is refused."""
    loaded = []
    seen: dict[Path, str] = {}
    for source in sources:
        path = ckpt.resolve(source).resolve()
        if path in seen:
            raise ValueError(
                f"MEMBER {source!r} is the checkpoint {seen[path]!r} again ({path}); give each member once "
                f"and weight it with --weights"
            )
        seen[path] = source
        checkpoint = ckpt.load_checkpoint(source)
        if checkpoint.metadata["kind"] == "solver":
            raise ValueError(
                f"MEMBER {source!r} is a CFR solver checkpoint (kind 'solver'); expected an agent, run or "
                f"mixture checkpoint with a network"
            )
        loaded.append((source, checkpoint))
    first_source, first = loaded[0]
    for source, checkpoint in loaded[1:]:
        if checkpoint.game_config != first.game_config:
            raise ValueError(
                f"MEMBER {source!r} was trained for {checkpoint.game_config} but {first_source!r} for "
                f"{first.game_config}; expected members of one rule set"
            )
        for key in SHARED_KEYS[1:]:
            if checkpoint.metadata.get(key) != first.metadata.get(key):
                raise ValueError(
                    f"MEMBER {source!r} has {key}={checkpoint.metadata.get(key)!r} but {first_source!r} has "
                    f"{first.metadata.get(key)!r}; "
                    "expected members of one network shape and one observation layout"
                )
    return loaded


def flatten(
    loaded: list[tuple[str, ckpt.Checkpoint]], weights: np.ndarray
) -> tuple[list[Any], np.ndarray, list[str], list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every member network with its weight, name and recipe, and the recipes of the mixtures it came from (by source).

    A mixture source contributes each of its members, sharing its weight by theirs. A mixture built by this command
    knows each member's own recipe; any other (PSRO's) is one recipe for all its members, kept once in the sources.
    """
    models, member_weights, names, recipes, sources = [], [], [], [], {}
    weights = weights / weights.sum()
    for (source, checkpoint), weight in zip(loaded, weights):
        meta = checkpoint.metadata
        recipe = {"source": source, **{k: meta[k] for k in RECIPE_KEYS if k in meta}}
        if meta["kind"] == "mixture":
            inner_names, inner = ckpt.mixture_weights(checkpoint)
            inner = inner / inner.sum()
            inner_recipes = meta["mixture"].get("recipes")
            own_recipes = isinstance(inner_recipes, list) and len(inner_recipes) == len(inner_names)
            if own_recipes:
                sources.update(meta["mixture"].get("sources") or {})
            else:
                sources[source] = recipe
            for k, (model, inner_name, inner_weight) in enumerate(
                zip(ckpt.member_models(checkpoint), inner_names, inner)
            ):
                models.append(model)
                member_weights.append(weight * inner_weight)
                names.append(inner_name)
                recipes.append(
                    {**inner_recipes[k], "via": source}
                    if own_recipes
                    else {"source": source, "member": k, "name": inner_name, "recipe": "in mixture.sources"}
                )
        else:
            models.append(ckpt.build_model_from(checkpoint, "model"))
            member_weights.append(weight)
            names.append(str(meta.get("name") or Path(source).name))
            recipes.append(recipe)
    return models, np.asarray(member_weights, np.float64), unique_names(names), recipes, sources


def unique_names(names: list[str]) -> list[str]:
    """One distinct name per member, so that reports, leagues and ``cockroach-exploit --start-member`` can tell them
    apart: the first of each name keeps it, and each repeat (another checkpoint of the same name, or a checkpoint that a
    mixture given beside it holds too, which stays a member of its own) takes ``NAME#K`` with the smallest ``K >= 2``
    that no member has.
    """
    taken = set(names)
    seen: set[str] = set()
    unique = []
    for name in names:
        if name in seen:
            k = 2
            while f"{name}#{k}" in taken:
                k += 1
            name = f"{name}#{k}"
            taken.add(name)
        seen.add(name)
        unique.append(name)
    return unique


def play_tables(
    networks: dict[int, dict], tables: list[tuple[tuple[int, ...], dict[int, int], int]], games: int, threads: int
) -> list[tuple[dict[int, int], dict[int, int]]]:
    """Play ``tables`` between portable ``networks`` (``ActorCritic.portable``, by id) for ``games`` games each
    (``training.algorithms.psro.play_table``). A table is ``(seats, players, seed)``: the player index at each seat,
    the network id of each player index, and its seed; its result is per player index, seat-games and losses. The unit
    of work that ``--ray`` sends to a task; every input is plain data or tensors, so it computes the same anywhere.
    """
    import training.algorithms.psro as psro
    from training.core.model import ActorCritic

    use_torch_threads(threads)
    models = {n: ActorCritic.from_portable(data) for n, data in networks.items()}
    game = next(iter(models.values())).game_config
    return [
        psro.play_table({k: models[n] for k, n in players.items()}, game, seats, games, table_seed)
        for seats, players, table_seed in tables
    ]


def play_baseline(
    network: dict, baseline: str, games: int, seed: int, agent_seed: int, threads: int
) -> tuple[int, int]:
    """A portable network in one seat against N-1 copies of ``baseline`` (arena, duplicate deals, seat rotation):
    seat-games and losses.
    """
    from training.core.model import ActorCritic, PolicyAgent
    from training.evaluation.arena import play_match

    use_torch_threads(threads)
    model = ActorCritic.from_portable(network)
    game = model.game_config
    agent = PolicyAgent(model, game, seed=agent_seed, name="member")
    report = play_match([agent, f"{baseline}*{game.num_players - 1}"], game, games=games, seed=seed).report("member")
    return report.games, report.losses


def play_meta_game(models: list[Any], game, games: int, seed: int, workers=None, threads: int = 1) -> MetaGame:
    """The members' symmetric meta-game: every table of ``game.num_players`` members played for ``games`` games
    (``play_tables``; one task a table on ``workers``).
    """
    workers = workers or LocalExecutor()
    meta_game = MetaGame(game.num_players, size=len(models))
    tables = meta_game.missing_tables()
    jobs = []
    for table in tables:
        table_seed = int(np.random.SeedSequence([seed, 2, *table]).generate_state(1)[0] % 2**31)
        jobs.append(
            (
                {m: models[m].portable() for m in set(table)},
                [(table, {m: m for m in set(table)}, table_seed)],
                games,
                threads,
            )
        )
    for index, (table, [(seat_games, losses)]) in enumerate(zip(tables, workers.map(play_tables, jobs))):
        meta_game.record(table, seat_games, losses)
        print(
            f"meta-game table {index + 1}/{len(tables)} {list(table)}: loss rates "
            + ", ".join(f"member {m} {losses[m] / seat_games[m]:.3f}" for m in sorted(seat_games)),
            file=sys.stderr,
        )
    return meta_game


def _limits(items: list[str]) -> dict[str, float]:
    import baselines

    limits = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or name not in baselines.names():
            raise ValueError(
                f"--max-loss {item!r} is not allowed; expected BASELINE=RATE with BASELINE one of {baselines.names()}"
            )
        try:
            rate = float(text)
        except ValueError:
            raise ValueError(f"--max-loss {item!r}: {text!r} is not a number; expected a loss rate in [0, 1]") from None
        if not 0 <= rate <= 1:
            raise ValueError(f"--max-loss {item!r}: {rate} is not allowed; expected a loss rate in [0, 1]")
        limits[name] = rate
    return limits


def load_exploiters(sources: list[str], game) -> list[Any]:
    """The exploiters' networks; each must be an agent or run checkpoint of the members' rule set."""
    models = []
    for source in sources:
        checkpoint = ckpt.load_checkpoint(source, game=game)
        if checkpoint.metadata["kind"] not in ("agent", "run"):
            raise ValueError(
                f"--exploiters {source!r} is a {checkpoint.metadata['kind']!r} checkpoint; expected an agent "
                f"or run checkpoint (one network, such as a cockroach-exploit best response)"
            )
        models.append(ckpt.build_model_from(checkpoint, "model"))
    return models


def play_exploiter_game(
    models: list[Any],
    exploiters: list[Any],
    game,
    games: int,
    seed: int,
    cache: PayoffCache | None = None,
    workers=None,
    threads: int = 1,
) -> ExploiterGame:
    """Every exploiter against every multiset of ``N - 1`` members (``play_tables``), through ``cache``.

    A table is played in a canonical order, the exploiter first and the members by digest, with a seed of its content:
    its result does not depend on where the exploiter and members stand in the command, so a cache can serve it, and it
    is the same whichever process plays it. The tables the cache lacks go to ``workers``
    (``training.core.distributed``), one
    task per exploiter, as many exploiters at once as it has workers; the cache is saved after each such batch.
    """
    cache = cache or PayoffCache(None, game)
    workers = workers or LocalExecutor()
    result = ExploiterGame(game.num_players, size=len(models), exploiters=len(exploiters))
    digests = [model_digest(m) for m in models]
    plans = []  # per exploiter: (rest, cache key, seat order, table seed) of every table
    for exploiter in exploiters:
        exploiter_digest, plan = model_digest(exploiter), []
        for rest in result.rests():
            order = sorted(rest, key=lambda m: digests[m])
            table_key = ",".join(digests[m] for m in order)
            key = f"exploiter {exploiter_digest} vs {table_key} games={games} seed={seed}"
            plan.append((rest, key, order, content_seed(seed, "exploiter", exploiter_digest, table_key, games)))
        plans.append(plan)
    batch = max(1, workers.workers)
    for first in range(0, len(exploiters), batch):
        chosen = range(first, min(first + batch, len(exploiters)))
        jobs, missing = [], []
        for j in chosen:
            lacking = list(
                {key: (key, order, table_seed) for _, key, order, table_seed in plans[j] if key not in cache}.values()
            )
            tables = []
            for _, order, table_seed in lacking:
                local = {m: 1 + k for k, m in enumerate(dict.fromkeys(order))}  # player 0 is the exploiter (network -1)
                tables.append(
                    ((0, *(local[m] for m in order)), {0: -1, **{k: m for m, k in local.items()}}, table_seed)
                )
            if tables:
                members = sorted({m for _, order, _ in lacking for m in order})
                jobs.append(
                    (
                        {-1: exploiters[j].portable(), **{m: models[m].portable() for m in members}},
                        tables,
                        games,
                        threads,
                    )
                )
            missing.append(lacking)
        outcomes = iter(workers.map(play_tables, jobs))
        for j, lacking in zip(chosen, missing):
            for (key, _, _), (seat_games, losses) in zip(lacking, next(outcomes) if lacking else []):
                cache.record(key, seat_games[0], losses[0])
            fresh = {key for key, _, _ in lacking}
            for rest, key, _, _ in plans[j]:
                result.record(j, rest, *(cache.entries[key] if key in fresh else cache.served(key)))
            print(
                f"exploiter {j + 1}/{len(exploiters)}: {len(plans[j])} tables ({len(lacking)} played, "
                f"{len(plans[j]) - len(lacking)} from the payoff cache)",
                file=sys.stderr,
            )
        cache.save()
    return result


def baseline_costs(
    models: list[Any],
    game,
    limits: dict[str, float],
    games: int,
    seed: int,
    cache: PayoffCache | None = None,
    workers=None,
    threads: int = 1,
) -> dict[str, np.ndarray]:
    """Each member's loss rate in one seat against N-1 copies of each limited baseline (``play_baseline``), through
    ``cache``;
    the matches the cache lacks go to ``workers``, one task each, as many at once as it has workers, the cache saved
    after each batch.
    """
    cache = cache or PayoffCache(None, game)
    workers = workers or LocalExecutor()
    digests = [model_digest(m) for m in models]
    keys = {
        (name, k): f"baseline {name} vs {digests[k]} games={games} seed={seed}"
        for name in sorted(limits)
        for k in range(len(models))
    }
    lacking = list({key: (name, k) for (name, k), key in keys.items() if key not in cache}.items())  # one match per key
    batch = max(1, workers.workers)
    for first in range(0, len(lacking), batch):
        chosen = lacking[first : first + batch]
        jobs = [
            (models[k].portable(), name, games, seed, content_seed(seed, "baseline", digests[k]), threads)
            for _, (name, k) in chosen
        ]
        for (key, _), (seat_games, losses) in zip(chosen, workers.map(play_baseline, jobs)):
            cache.record(key, seat_games, losses)
        cache.save()
    fresh = {key for key, _ in lacking}
    costs = {}
    for name in sorted(limits):
        rates = []
        for k in range(len(models)):
            key = keys[name, k]
            seat_games, losses = cache.entries[key] if key in fresh else cache.served(key)
            rates.append(losses / seat_games)
        costs[name] = np.asarray(rates)
        print(
            f"members against {game.num_players - 1} {name}: loss rates {np.round(costs[name], 4).tolist()}",
            file=sys.stderr,
        )
    return costs


def main(argv: list[str] | None = None) -> int:
    """``cockroach-mixture``: build a mixture checkpoint of the members; the exit status."""
    args = build_parser().parse_args(argv)
    output = Path(args.output)
    meta_path, _ = ckpt.checkpoint_files(output)
    problem = output_file_problem("OUTPUT", meta_path, checkpoint=True)
    if problem is None and meta_path.exists() and not args.overwrite:
        problem = (
            f"OUTPUT {args.output!r}: a checkpoint already exists at {meta_path}; pass --overwrite to "
            f"replace it, or choose another path"
        )
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        weights = _weights(args.weights, len(args.members))
        limits = _limits(args.max_loss)
        if limits and not args.exploiters:
            raise ValueError(
                "--max-loss needs --exploiters (the limits constrain the weights that --exploiters solves for)"
            )
        if args.max_weight is not None and not args.exploiters:
            raise ValueError("--max-weight needs --exploiters (it caps the weights that --exploiters solves for)")
        if args.payoff_cache is not None and not args.exploiters:
            raise ValueError(
                "--payoff-cache needs --exploiters (it keeps the exploiter tables and baseline games that "
                "--exploiters plays)"
            )
        if args.ray is not None and not args.exploiters and (args.weights is not None or args.meta_solver == "uniform"):
            raise ValueError(
                "--ray plays the payoff tables; add --exploiters or --meta-solver (equal or given weights play nothing)"
            )
        cache_problem = output_file_problem("--payoff-cache", args.payoff_cache)
        if (
            cache_problem is None
            and args.payoff_cache is not None
            and Path(args.payoff_cache).resolve() == meta_path.resolve()
        ):
            cache_problem = (
                f"--payoff-cache {args.payoff_cache!r} is OUTPUT's metadata file "
                f"{str(meta_path)!r}, which the build writes; expected another path"
            )
        if cache_problem:
            raise ValueError(cache_problem)
        loaded = load_members(args.members)
        game = loaded[0][1].game_config
        exploiters = load_exploiters(args.exploiters, game) if args.exploiters else []
        cache = PayoffCache(args.payoff_cache, game)
    except (ValueError, ckpt.CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    use_torch_threads(args.torch_threads)
    try:
        workers = executor(args.ray) if args.ray is not None else LocalExecutor()
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        return _build(args, output, loaded, game, exploiters, cache, limits, weights, workers, argv)
    finally:
        workers.close()


def _build(
    args,
    output: Path,
    loaded,
    game,
    exploiters: list[Any],
    cache: PayoffCache,
    limits: dict[str, float],
    weights,
    workers,
    argv,
) -> int:
    models, member_weights, names, recipes, sources = flatten(loaded, weights)
    solver = "given" if args.weights is not None else "minimax_exploiters" if exploiters else args.meta_solver
    mixture: dict[str, Any] = {"meta_solver": solver, "recipes": recipes, **({"sources": sources} if sources else {})}
    exploiter_game = None
    if exploiters:
        found = _weights_against_exploiters(args, models, game, exploiters, cache, limits, workers, mixture)
        if isinstance(found, int):
            return found
        member_weights, exploiter_game = found
    elif args.weights is None and args.meta_solver != "uniform":
        member_weights = _solved_weights(args, models, game, workers, mixture)
    member_weights = member_weights / member_weights.sum()
    if args.prune_below > 0:
        pruned = _prune(args, models, names, recipes, member_weights, exploiter_game, mixture)
        if isinstance(pruned, int):
            return pruned
        models, names, recipes, member_weights = pruned
    first = loaded[0][1].metadata
    metadata = {
        **{k: first[k] for k in SHARED_KEYS},
        "game_config": game.to_dict(),
        "name": args.name or output.name,
        "command": shlex.join(["cockroach-mixture", *(sys.argv[1:] if argv is None else argv)]),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "mixture": mixture,
    }
    path = ckpt.save_mixture_checkpoint(output, models, member_weights, names, metadata)
    for name, weight in zip(names, member_weights):
        print(f"  {weight:.4f}  {name}")
    print(
        f"mixture of {len(models)} members: {path}  (load with training.load_agent({str(output)!r}) or cockroach-eval)"
    )
    return 0


def _weights_against_exploiters(args, models, game, exploiters, cache, limits, workers, mixture: dict):
    """``--exploiters``: the weights that minimise the exploiters' best loss rate (within the baseline ``limits``),
    and the exploiter game; its records go into ``mixture``. An exit status on bad input.
    """
    if args.max_weight is not None and args.max_weight * len(models) < 1 - 1e-12:
        print(
            f"error: --max-weight {args.max_weight} is not allowed for {len(models)} members (weights sum to "
            f"1); expected W of at least 1/{len(models)} = {1 / len(models):.4g}",
            file=sys.stderr,
        )
        return 2
    started = time.perf_counter()
    exploiter_game = play_exploiter_game(
        models, exploiters, game, args.payoff_games, args.seed, cache, workers, args.torch_threads
    )
    costs = baseline_costs(models, game, limits, args.baseline_games, args.seed, cache, workers, args.torch_threads)
    try:
        member_weights = minimax_weights(exploiter_game, costs, limits, seed=args.seed, max_weight=args.max_weight)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    rates = exploiter_game.exploiter_loss_rates(member_weights)
    uniform_rates = exploiter_game.exploiter_loss_rates(np.full(len(models), 1 / len(models)))
    mixture.update(
        exploiters=list(args.exploiters),
        exploiter_game=exploiter_game.to_dict(),
        payoff_games=args.payoff_games,
        seed=args.seed,
        exploiter_loss_rates=[round(float(r), 5) for r in rates],
        limits=limits,
        baseline_games=args.baseline_games,
        **({"max_weight": args.max_weight} if args.max_weight is not None else {}),
        member_baseline_loss_rates={b: [round(float(v), 5) for v in c] for b, c in costs.items()},
        **(
            {"payoff_cache": {"path": args.payoff_cache, "tables_played": cache.played, "tables_reused": cache.hits}}
            if args.payoff_cache
            else {}
        ),
    )
    print(
        f"weights against {len(exploiters)} exploiters in {time.perf_counter() - started:.0f} s: their loss "
        f"rates {np.round(rates, 4).tolist()} "
        f"(smallest {rates.min():.4f}; with equal weights {np.round(uniform_rates, 4).tolist()})",
        file=sys.stderr,
    )
    return member_weights, exploiter_game


def _solved_weights(args, models, game, workers, mixture: dict):
    """The weights of ``--meta-solver`` on the members' meta-game; its records go into ``mixture``."""
    started = time.perf_counter()
    meta_game = play_meta_game(models, game, args.payoff_games, args.seed, workers, args.torch_threads)
    member_weights = solve(args.meta_solver, meta_game)
    mixture.update(
        meta_game=meta_game.to_dict(),
        payoff_games=args.payoff_games,
        seed=args.seed,
        meta_nash_conv=round(meta_game.nash_conv(member_weights), 5),
    )
    print(
        f"meta-game of {len(models)} members solved by {args.meta_solver} in "
        f"{time.perf_counter() - started:.0f} s: NashConv {100 * mixture['meta_nash_conv']:.2f} points",
        file=sys.stderr,
    )
    return member_weights


def _prune(args, models, names, recipes, member_weights, exploiter_game, mixture: dict):
    """``--prune-below``: drop the members below that weight (recorded in ``mixture``); the kept models, names,
    recipes and weights, or an exit status when none is left.
    """
    keep = member_weights >= args.prune_below
    if not keep.any():
        print(
            f"error: --prune-below {args.prune_below} drops every member; the weights are "
            f"{dict(zip(names, member_weights.round(4).tolist()))}; expected W at most the largest weight",
            file=sys.stderr,
        )
        return 2
    kept = np.where(keep, member_weights, 0.0) / member_weights[keep].sum()
    mixture["pruned"] = {
        "below": args.prune_below,
        "members": [{"name": n, "weight": round(float(w), 6)} for n, w, k in zip(names, member_weights, keep) if not k],
        "names_before": list(names),
        "weights_before": [round(float(w), 6) for w in member_weights],
        **(
            {"exploiter_loss_rates": [round(float(r), 5) for r in exploiter_game.exploiter_loss_rates(kept)]}
            if exploiter_game is not None
            else {}
        ),
    }  # (the exploiter tables index the members before pruning: names_before)
    models, names, recipes = (
        [m for m, k in zip(models, keep) if k],
        [n for n, k in zip(names, keep) if k],
        [r for r, k in zip(recipes, keep) if k],
    )
    member_weights, mixture["recipes"] = kept[keep], recipes
    print(
        f"pruned {int((~keep).sum())} members below weight {args.prune_below}: "
        f"{[entry['name'] for entry in mixture['pruned']['members']]}",
        file=sys.stderr,
    )
    return models, names, recipes, member_weights


if __name__ == "__main__":
    sys.exit(main())
