"""Symmetric n-player PSRO (policy-space response oracles), read top to bottom.

``algorithm: psro`` in a training config. A population of policies starts with one
network (random, or ``--init-from``). Each iteration:

1. **Best responses.** ``psro.best_responses_per_iteration`` PPO runs (``training.algorithms.ppo``,
   with the config's ``ppo`` and ``model`` settings, warm-started from the newest member)
   each train one seat against opponents that draw their member per seat and per game
   from the current meta-strategy (``opponents.population``). They join the population.
2. **Payoffs.** Every new table of the meta-game (a multiset of ``N`` members that seats
   a new one) is played in the batched arena: ``psro.payoff_games`` games with duplicate
   deals and seat rotation, giving each member's loss rate there with a 95% interval
   (``training.algorithms.meta_solvers.MetaGame``). Only the new entries are played.
3. **Meta-strategy.** ``psro.meta_solver`` solves the meta-game.

The newest best response's gain over the previous meta-strategy, in the updated
meta-game, ``u(BR | x) - u(x | x)``, estimates how exploitable that mixture was (loss
rate points below parity); ``meta_nash_conv`` is the meta-strategy's NashConv within
the meta-game. Both are logged per iteration in ``psro.csv``.

Run directory ``output_dir/name``: ``checkpoint`` (a mixture checkpoint that also holds
the meta-game and the iteration, written at the start, iteration 0, and after every iteration), ``final`` (the
mixture agent: ``training.load_agent``, ``cockroach-eval``, ``cockroach-exploit``),
``br_<iteration>_<k>/`` (each best response's PPO run) and ``psro.csv``.

Exact resume: an iteration's seeds derive from ``(seed, iteration)``; the checkpoint
holds the population, the meta-game and the counters, and a best-response run that was
interrupted resumes from its own PPO checkpoint. ``--resume`` (also with more
``psro.iterations``) gives what the uninterrupted run gives. With ``--ray [ADDRESS]``
the best responses and the payoff tables of an iteration run as Ray tasks
(``training.core.distributed``), with the same results.
"""

from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cockroach_env.config import GameConfig
from training.algorithms.meta_solvers import MetaGame, solve
from training.algorithms.ppo import train as train_ppo
from training.core import checkpoint as ckpt
from training.core.checkpoint import member_models, save_mixture_checkpoint
from training.core.checkpoint.run_state import RESUMABLE_CHANGES
from training.core.config import TrainConfig, config_from_dict
from training.core.distributed import executor
from training.core.mixture import MixtureAgent
from training.core.model import ActorCritic, PolicyAgent
from training.core.opponents import Population
from training.core.runs import (
    AGENT_NAME,
    CHECKPOINT_NAME,
    append_csv,
    config_diff,
    finished_run_agent,
    prepare_csv,
    run_metadata,
)
from training.evaluation.against_baselines import final_evaluation

PSRO_RESUMABLE_CHANGES = (*RESUMABLE_CHANGES, "psro.iterations", "psro.meta_solver")
"""Config entries that may differ between a PSRO run and its resumption."""
LOG_COLUMNS = [
    "iteration",
    "members",
    "decisions",
    "wall_seconds",
    "best_response_seconds",
    "payoff_seconds",
    "new_tables",
    "best_response_gain",
    "meta_nash_conv",
    "meta_strategy",
]


@dataclass
class PSROState:
    """What a PSRO checkpoint carries besides the members' weights (JSON-able)."""

    iteration: int = 0
    names: list[str] = field(default_factory=list)
    meta_strategy: list[float] = field(default_factory=list)
    meta_game: dict[str, Any] | None = None
    decisions: int = 0
    wall_seconds: float = 0.0
    commands: list[str] = field(default_factory=list)
    base_run: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)


def train(
    config: TrainConfig,
    resume: bool = False,
    command: str | None = None,
    progress_bar: bool = True,
    initial_weights: dict | None = None,
    base_run: dict | None = None,
    ray_address: str | None = None,
    initial_population: list[tuple[str, dict]] | None = None,
) -> Path:
    """Run (or resume) PSRO for ``config``; return the path of the final mixture checkpoint.

    The population starts with one network: random, or ``initial_weights``; or with every ``(name, weights)`` of
    ``initial_population`` (``--init-from`` a mixture), whose meta-game is played and solved before the first iteration.

    PSRO prints one line per iteration; ``progress_bar`` is accepted for the CLI's sake (the best responses run without
    bars).
    """
    game = config.game_config()
    psro = config.psro
    run_dir = config.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    command = command or " ".join(["cockroach-train", *sys.argv[1:]])
    workers = executor(ray_address)

    resolved = False
    if resume:
        members, state, meta_game, resolved = _resume_population(run_dir, config)
        finished = None if resolved else _finished_mixture(run_dir, config, state)
        if finished is not None:
            workers.close()
            print(
                f"{run_dir} is already finished at iteration {state.iteration}; its mixture checkpoint is {finished} "
                "(raise psro.iterations to train on)",
                file=sys.stderr,
            )
            return finished
    else:
        members, state, meta_game = _first_population(workers, config, initial_weights, base_run, initial_population)
    state.commands.append(command)
    if not resume:
        # started again (--overwrite): a stop before the first save leaves none of the replaced run's checkpoints to
        # resume or load
        for name in (CHECKPOINT_NAME, AGENT_NAME):
            ckpt.remove_checkpoint(run_dir / name)
    prepare_csv(run_dir / "psro.csv", LOG_COLUMNS, state.iteration if resume else None, key="iteration")
    started = time.perf_counter() - state.wall_seconds
    if not resume:
        # the population before iteration 1: a stop inside it (its best responses save their own progress) resumes
        # from here
        _save(run_dir / CHECKPOINT_NAME, config, members, state, command)
    stop_reason = None
    # The one iteration whose best-response runs may have been interrupted (and are resumed from their own
    # checkpoints; not after a change of solver).
    resumed_iteration = state.iteration + 1 if resume and not resolved else None

    for iteration in range(state.iteration + 1, psro.iterations + 1):
        gain = _iterate(
            workers, config, members, state, meta_game, iteration, command, iteration == resumed_iteration, started
        )
        _log_iteration(run_dir, config, members, state, gain)
        _save(run_dir / CHECKPOINT_NAME, config, members, state, command)
        limit = config.schedule.time_limit_minutes
        if limit is not None and state.wall_seconds > 60 * limit and iteration < psro.iterations:
            stop_reason = f"time limit of {limit} minutes reached"
            break

    evaluation = _final_evaluation(config, game, members, state)
    if stop_reason:
        print(f"stopped early: {stop_reason}; continue with --resume", file=sys.stderr)
    workers.close()
    return _save(run_dir / AGENT_NAME, config, members, state, command, evaluation=evaluation)


def _finished_mixture(run_dir: Path, config: TrainConfig, state: PSROState) -> Path | None:
    """The mixture ``final`` of a run finished at ``state.iteration`` (written last, evaluated), or None."""
    if state.iteration < config.psro.iterations:
        return None

    def ends_this_run(meta: dict) -> bool:
        step = meta.get("step") or {}
        same = step.get("iteration") == state.iteration and step.get("members") == len(state.names)
        return meta.get("kind") == "mixture" and same

    return finished_run_agent(run_dir, ends_this_run)  # (none when killed before it was written: written on resume)


def _resume_population(run_dir: Path, config: TrainConfig) -> tuple[list[dict], PSROState, MetaGame, bool]:
    """The saved population, state and meta-game; with another meta-solver than the run's, the meta-game solved again
    (the last value: whether it was).
    """
    psro = config.psro
    members, state, meta_game, saved_solver = _restore(run_dir, config)
    print(f"resuming {run_dir} at iteration {state.iteration} ({len(members)} members)", file=sys.stderr)
    if saved_solver == psro.meta_solver:
        return members, state, meta_game, False
    # the meta-game does not depend on the solver: solve it again
    state.meta_strategy = [float(v) for v in solve(psro.meta_solver, meta_game)]
    print(
        f"meta-solver {saved_solver} -> {psro.meta_solver}: meta-strategy {np.round(state.meta_strategy, 4).tolist()}",
        file=sys.stderr,
    )
    return members, state, meta_game, True


def _first_population(
    workers,
    config: TrainConfig,
    initial_weights: dict | None,
    base_run: dict | None,
    initial_population: list[tuple[str, dict]] | None,
) -> tuple[list[dict], PSROState, MetaGame]:
    """A new run's population (one network, or ``--init-from`` a mixture's members), its meta-game and solution."""
    game = config.game_config()
    if initial_population:
        # (checks the shapes)
        members = [_model(config, game, weights).state_dict() for _, weights in initial_population]
        names = [name for name, _ in initial_population]
    else:
        first = ActorCritic.from_spec(game, config.model, seed=config.seed)
        if initial_weights is not None:
            first.load_state_dict(initial_weights)
        members, names = [first.state_dict()], ["member_0"]
    meta_game = MetaGame(game.num_players, size=len(members))
    _play_new_tables(workers, config, members, meta_game, iteration=0)
    x = solve(config.psro.meta_solver, meta_game) if len(members) > 1 else np.ones(1)
    state = PSROState(
        names=names, meta_strategy=[float(v) for v in x], base_run=base_run, meta_game=meta_game.to_dict()
    )
    if len(members) > 1:
        print(
            f"psro: a population of {len(members)} from --init-from, meta-strategy {np.round(x, 4).tolist()}",
            file=sys.stderr,
        )
    return members, state, meta_game


def _iterate(
    workers,
    config: TrainConfig,
    members: list[dict],
    state: PSROState,
    meta_game: MetaGame,
    iteration: int,
    command: str,
    resumed: bool,
    started: float,
) -> float:
    """One PSRO iteration: best responses against the meta-strategy join ``members``, the payoffs of the new tables
    enter ``meta_game``, and ``state`` takes its new meta-strategy (``resumed``: the best-response runs continue
    from their own checkpoints); returns the best responses' gain against the old meta-strategy.
    """
    psro, run_dir = config.psro, config.run_dir
    x = np.asarray(state.meta_strategy)
    # ------------------------------------------------------------ 1. best responses against the meta-strategy
    t0 = time.perf_counter()
    jobs = []
    for k in range(psro.best_responses_per_iteration):
        br_config = _best_response_config(config, iteration, k, run_dir)
        start = members[-1] if psro.warm_start else None
        jobs.append((br_config.to_dict(), members, x.tolist(), state.names, start, command, resumed))
    responses = workers.map(train_best_response, jobs)
    best_response_seconds = time.perf_counter() - t0
    previous = len(members)
    members += responses
    state.names += [f"member_{previous + k}" for k in range(len(responses))]
    state.decisions += len(responses) * psro.best_response_decisions

    # ------------------------------------------------------------ 2. payoffs of the new tables
    t0 = time.perf_counter()
    meta_game.size = len(members)
    new_tables = _play_new_tables(workers, config, members, meta_game, iteration)
    payoff_seconds = time.perf_counter() - t0

    # ------------------------------------------------------------ 3. meta-strategy
    padded = np.concatenate([x, np.zeros(len(responses))])
    gain = float(
        max(meta_game.expected_payoffs(padded)[previous:]) - np.dot(padded, meta_game.expected_payoffs(padded))
    )
    x = solve(psro.meta_solver, meta_game)
    state.meta_strategy = [float(v) for v in x]
    state.meta_game = meta_game.to_dict()
    state.iteration = iteration
    state.wall_seconds = time.perf_counter() - started
    state.history.append(
        {
            "iteration": iteration,
            "members": len(members),
            "decisions": state.decisions,
            "wall_seconds": round(state.wall_seconds, 1),
            "best_response_seconds": round(best_response_seconds, 1),
            "payoff_seconds": round(payoff_seconds, 1),
            "new_tables": new_tables,
            "best_response_gain": round(gain, 5),
            "meta_nash_conv": round(meta_game.nash_conv(x), 5),
            "meta_strategy": " ".join(f"{v:.4f}" for v in x),
        }
    )
    return gain


def _log_iteration(run_dir: Path, config: TrainConfig, members: list[dict], state: PSROState, gain: float) -> None:
    """The iteration's row in ``psro.csv`` and its line on stderr."""
    row = state.history[-1]
    append_csv(run_dir / "psro.csv", LOG_COLUMNS, row)
    print(
        f"psro iteration {row['iteration']}/{config.psro.iterations}: {len(members)} members, "
        f"best-response gain {100 * gain:+.1f} points, "
        f"meta NashConv {100 * row['meta_nash_conv']:.2f} points, {state.wall_seconds:.0f} s",
        file=sys.stderr,
    )


def _final_evaluation(config: TrainConfig, game, members: list[dict], state: PSROState) -> dict | None:
    """The mixture agent, evaluated against the baselines (``evaluation.final_games``), or None."""
    models = functools.cache(lambda: [_model(config, game, weights) for weights in members])  # (built if evaluated)

    def make(i: int) -> MixtureAgent:
        return MixtureAgent(
            [PolicyAgent(m, game, seed=config.seed + 7919 * i + j) for j, m in enumerate(models())],
            state.meta_strategy,
            game,
            seed=config.seed + 7919 * i,
            name="policy",
        )

    return final_evaluation(config, game, make, {"iteration": state.iteration})


# -------------------------------------------------- the pieces (module-level: they run as Ray tasks too)


def train_best_response(
    config_data: dict,
    members: list[dict],
    weights: list[float],
    names: list[str],
    start: dict | None,
    command: str,
    may_resume: bool = False,
) -> dict:
    """Train one best response (a PPO run) against ``members`` mixed by ``weights``; return its weights.

    With ``may_resume``, an interrupted run in its directory is resumed from its own checkpoint.
    """
    config = config_from_dict(config_data, where="best-response config")
    game = config.game_config()
    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    population = Population([_model(config, game, m) for m in members], np.asarray(weights), list(names))
    resume = may_resume and (config.run_dir / f"{CHECKPOINT_NAME}.json").exists()
    path = train_ppo(
        config,
        resume=resume,
        command=f"{command} (best response {config.name})",
        progress_bar=False,
        initial_weights=None if resume else start,
        population=population,
    )
    return {k: v.clone() for k, v in ckpt.load_checkpoint(path).group("model").items()}


def evaluate_table(
    config_data: dict, table: tuple[int, ...], members: dict[int, dict], games: int, seed: int
) -> tuple[tuple[int, ...], dict[int, int], dict[int, int]]:
    """Play ``games`` at ``table`` (member indices, weights in ``members``) in the batched arena: per member,
    seat-games and losses.
    """
    config = config_from_dict(config_data, where="payoff config")
    game = config.game_config()
    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    seat_games, losses = play_table({m: _model(config, game, members[m]) for m in set(table)}, game, table, games, seed)
    return table, seat_games, losses


def play_table(
    models: dict[int, ActorCritic], game: GameConfig, table: tuple[int, ...], games: int, seed: int
) -> tuple[dict[int, int], dict[int, int]]:
    """One meta-game table: ``games`` in the batched arena (duplicate deals, seat rotation) between the members
    ``table`` names; per member, seat-games and losses.
    """
    from training.evaluation.arena import play_match

    agents = {m: PolicyAgent(models[m], game, seed=seed + 31 * m, name=f"member_{m}") for m in sorted(set(table))}
    result = play_match([agents[m] for m in table], game, games=games, seed=seed, duplicate=True, engine="batched")
    reports = {m: result.report(f"member_{m}") for m in agents}
    return {m: r.games for m, r in reports.items()}, {m: r.losses for m, r in reports.items()}


def _play_new_tables(workers, config: TrainConfig, members: list[dict], meta_game: MetaGame, iteration: int) -> int:
    tables = meta_game.missing_tables()
    jobs = []
    for table in tables:
        seed = int(np.random.SeedSequence([config.seed, 2, *table]).generate_state(1)[0] % 2**31)
        jobs.append((config.to_dict(), table, {m: members[m] for m in set(table)}, config.psro.payoff_games, seed))
    for table, seat_games, losses in workers.map(evaluate_table, jobs):
        meta_game.record(tuple(table), seat_games, losses)
    return len(tables)


def _best_response_config(config: TrainConfig, iteration: int, k: int, run_dir: Path) -> TrainConfig:
    """The PPO run of best response ``k`` of ``iteration``: the config's PPO and model, the population in every other
    seat (in ``psro.population_share`` of its tables; the config's opponent mix in the rest).
    """
    data = config.to_dict()
    data.update(
        algorithm="ppo",
        name=f"br_{iteration}_{k}",
        output_dir=str(run_dir),
        seed=int(np.random.SeedSequence([config.seed, 1, iteration, k]).generate_state(1)[0] % 2**31),
    )
    share = config.psro.population_share
    if share >= 1:  # PSRO's pure best response
        data["opponents"] = {
            **data["opponents"],
            "self_play": 0.0,
            "snapshots": 0.0,
            "exploiter": 0.0,
            "exploiter_reset_every": 0,
            "population": 1.0,
            "baselines": {},
            "checkpoints": {},
            "snapshot_every": 0,
            "beat_pool_loss_rate": 0.0,
        }
    else:  # a robust best response: the config's opponent mix in the rest of its tables
        mix = data["opponents"]
        rest = (
            mix["self_play"]
            + mix["snapshots"]
            + mix["exploiter"]
            + sum(mix["baselines"].values())
            + sum(mix["checkpoints"].values())
        )
        scale = (1 - share) / rest
        data["opponents"] = {
            **mix,
            "self_play": mix["self_play"] * scale,
            "snapshots": mix["snapshots"] * scale,
            "exploiter": mix["exploiter"] * scale,
            "baselines": {name: weight * scale for name, weight in mix["baselines"].items()},
            "checkpoints": {name: weight * scale for name, weight in mix["checkpoints"].items()},
            "population": share,
        }
    data["schedule"] = {
        **data["schedule"],
        "total_decisions": config.psro.best_response_decisions,
        "time_limit_minutes": None,
    }
    data["evaluation"] = {**data["evaluation"], "every": 0, "final_games": 0}
    return config_from_dict(data, where=f"best-response config {iteration}/{k}")


def _model(config: TrainConfig, game: GameConfig, weights: dict) -> ActorCritic:
    model = ActorCritic.from_spec(game, config.model)
    model.load_state_dict(weights)
    return model


# ---------------------------------------------------------------------------- checkpoints


def _save(
    path: Path, config: TrainConfig, members: list[dict], state: PSROState, command: str, evaluation: dict | None = None
) -> Path:
    game = config.game_config()
    models = [_model(config, game, weights) for weights in members]
    step = {
        "iteration": state.iteration,
        "members": len(members),
        "decisions": state.decisions,
        "wall_seconds": round(state.wall_seconds, 1),
    }
    metadata = run_metadata(
        config,
        command,
        state.commands,
        step,
        base_run=state.base_run,
        evaluation=evaluation,
        mixture={"meta_solver": config.psro.meta_solver},
        psro={k: v for k, v in state.__dict__.items() if k not in ("commands", "base_run", "names", "meta_strategy")},
    )
    return save_mixture_checkpoint(path, models, state.meta_strategy, state.names, metadata)


def _restore(run_dir: Path, config: TrainConfig) -> tuple[list[dict], PSROState, MetaGame, str]:
    checkpoint = ckpt.load_checkpoint(run_dir / CHECKPOINT_NAME, game=config.game_config())
    meta = checkpoint.metadata
    if meta["kind"] != "mixture" or "psro" not in meta:
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: not a PSRO run checkpoint (kind {meta['kind']!r}, no 'psro' entry); cannot "
            f"resume it with algorithm: psro"
        )
    saved = config_from_dict(meta["training_config"], where=str(checkpoint.path))
    differences = [
        key for key in config_diff(saved.to_dict(), config.to_dict()) if not key.startswith(PSRO_RESUMABLE_CHANGES)
    ]
    if differences:
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: cannot resume with a different config; changed: {differences} (only "
            f"{list(PSRO_RESUMABLE_CHANGES)} may change)"
        )
    members = [m.state_dict() for m in member_models(checkpoint)]
    entries = meta["mixture"]["members"]
    state = PSROState(
        **meta["psro"],
        names=[m["name"] for m in entries],
        meta_strategy=[m["weight"] for m in entries],
        commands=meta["commands"],
        base_run=meta.get("base_run"),
    )
    return members, state, MetaGame.from_dict(state.meta_game), saved.psro.meta_solver
