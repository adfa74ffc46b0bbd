"""Masked PPO self-play on the batched engine, in the CleanRL manner: one loop, read top to bottom.

One shared, seat-relative ``ActorCritic`` plays every learner seat. Each game draws
its table when it starts, with the weights of ``config.opponents``:

* ``self_play``: every seat is the current policy, and every seat's decisions are samples;
* ``snapshots``: ``learner_seats`` seats are the current policy, the others one past snapshot;
* ``baselines``: ``learner_seats`` seats are the current policy, the others one baseline agent;
* ``population``: ``learner_seats`` seats are the current policy, and every other seat draws
  its own member of a fixed population for the game, with the population's weights (the
  opponents of a PSRO best response: each seat samples the meta-strategy; a mixture agent);
* ``checkpoints``: like ``population``, for each saved checkpoint of the config (a league of
  frozen agents: an agent, a run, or a mixture whose seats draw their members);
* ``exploiter``: one seat is the exploiter, a second network trained at the same time to
  beat the current policy, and all the other seats are the current policy. Both learn
  from these games: the exploiter finds the policy's weaknesses, and the policy learns
  to close them (a best response in the population, as in PSRO and AlphaStar's league).

Only the learners' decisions are training samples. Turns are not alternating, so a
learner transition runs from one of its decisions to that seat's next decision in the
same game, or to the end of the game, whose terminal reward is the transition's reward.
A decision whose successor has not happened yet when a rollout ends is carried into
the next rollout, so every transition is trained once, with its exact one-step TD error;
the GAE lambda-sum stops at the rollout's end (truncated GAE, as in CleanRL).

Each iteration has three sections: rollout, advantages (GAE), update (for the policy,
then the exploiter; the learner, its GAE and its update are ``training.core.learner``, which
``ppo.overlap``'s update process shares). The policy's update may add the regularization of
magnetic mirror descent (Sokota et al. 2022): a KL pull towards a magnet (``ppo.magnet_coef``;
``ppo.magnet``: a frozen copy of itself refreshed every ``ppo.magnet_every`` updates as in
R-NaD, a moving average of its weights, or the uniform policy), a KL pull towards the
policy at the update's start (``ppo.kl_coef``), and an entropy bonus and magnet weight
that decay over the run (``ppo.anneal_regularization``). Then come the bookkeeping
steps: snapshots (on a schedule, or when the policy beats the pool), exploiter resets,
evaluation in the arena against baselines, logs and checkpoints.

Exact resume: the games restart (from a seed derived from the run seed and the
update number) at every ``schedule.checkpoint_every`` updates, where checkpoints are
written, and baseline opponents are rebuilt with derived seeds there too. A checkpoint
holds everything else (weights, Adam state, pool, RNG states, counters), so
``--resume`` continues exactly as the uninterrupted run would have. A fresh run writes
its checkpoint at update 0; a stop (SIGINT, SIGTERM, the time limit) inside a segment
writes none, since the games in flight are in no checkpoint: ``--resume`` plays the
segment again from its start, which gives the same updates and evaluations bit for bit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import baselines
from cockroach_env.batched import BatchedGames, random_legal_actions
from cockroach_env.config import GameConfig
from cockroach_env.encoding import encoding_for
from training.algorithms import imitation
from training.core import checkpoint as ckpt
from training.core.config import ConfigError, TrainConfig, config_from_dict
from training.core.learner import Learner, frozen_copy, gae, magnet_bonus, ppo_update
from training.core.model import ActorCritic, PolicyAgent
from training.core.policy_average import save_kept_average
from training.core.runs import (
    AGENT_NAME,
    BEST_RESPONSE_NAME,
    CHECKPOINT_NAME,
    KEPT_AGENTS,
    Interrupted,
    StopSignals,
    announce_when_slow,
    append_csv,
    config_diff,
    plot_learning_curves,
    prepare_csv,
    tensorboard_writer,
)
from training.core.update_process import UpdateProcess, training_rows

SELF = "self"
SNAPSHOT = "snapshot"
EXPLOITER = "exploiter"
POPULATION = "population"
POLICY_SEAT = 0
"""``Tables.owner`` code of a seat played by the policy being trained."""
EXPLOITER_SEAT = -1
"""``Tables.owner`` code of the seat played by the exploiter."""
POPULATION_SEAT = -2
"""``Tables.owner`` code of a seat played by population member 0; member ``m`` is ``POPULATION_SEAT - m``."""


# ---------------------------------------------------------------------------- run state


@dataclass
class Snapshot:
    """A frozen past policy in the opponent pool."""

    id: int
    update: int
    model: ActorCritic
    source: str = "policy"
    """``policy`` (a past policy) or ``exploiter`` (an exploiter's weights before a reset)."""


@dataclass
class Progress:
    """Counters that a checkpoint carries (JSON-able)."""

    update: int = 0
    decisions: int = 0
    samples: int = 0
    games: int = 0
    wall_seconds: float = 0.0
    next_snapshot_id: int = 0
    pool_games: int = 0
    """Learner seat-games against snapshots since the last snapshot entered (for the beat-the-pool rule)."""
    pool_losses: int = 0
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    """Every command that trained this run (the first, then each ``--resume``)."""
    base_run: dict[str, Any] | None = None
    """The checkpoint a fresh run started from (``--init-from``): path, commands, step, and its own ``base_run``."""
    population: dict[str, Any] | None = None
    """The fixed population of ``opponents.population`` (``Population.record``), checked on resume."""
    checkpoints: dict[str, Any] | None = None
    """The frozen opponents of ``opponents.checkpoints`` (their records from ``load_checkpoint_opponents``), checked on
    resume.
    """
    warm_start: dict[str, Any] | None = None
    """What the warm start by imitation did (``training.algorithms.imitation``): teacher, decisions, final losses."""


@dataclass
class Population:
    """Fixed opponents for ``opponents.population``: frozen networks and the weight of each (a meta-strategy)."""

    models: list[ActorCritic]
    weights: np.ndarray
    names: list[str]
    """One label per member (recorded in the run, so that a resume against another population is refused)."""

    def __post_init__(self):
        weights = np.asarray(self.weights, np.float64)
        if len(self.models) == 0 or len(weights) != len(self.models) or len(self.names) != len(self.models):
            raise ValueError(
                f"a population needs one weight and one name per member; got {len(self.models)} members, "
                f"{len(weights)} weights, {len(self.names)} names"
            )
        if (weights < 0).any() or not weights.sum() > 0:
            raise ValueError(
                f"population weights {weights.tolist()} are not allowed; expected weights >= 0 with a positive sum"
            )
        self.weights = weights / weights.sum()
        self.models = [frozen_copy(m) for m in self.models]

    @property
    def record(self) -> dict[str, Any]:
        return {"names": list(self.names), "weights": [float(w) for w in self.weights]}


def checkpoint_kind(name: str) -> str:
    """The table kind (and ``metrics.csv`` column suffix) of ``opponents.checkpoints`` entry ``name``."""
    return f"checkpoint:{name}"


class FixedOpponents:
    """The frozen networks of the ``population`` table kind (given by the caller) and of each ``opponents.checkpoints``
    entry: one flat list of models, and for each table kind the members it draws from (``Tables.owner`` code
    ``POPULATION_SEAT - m`` is model ``m``).
    """

    def __init__(self, population: Population | None, checkpoints: dict[str, tuple[Population, dict[str, Any]]]):
        # ``(kind, first model index, member weights)``; the caller's population first (so its draws are those of a run
        # without checkpoints).
        self.groups: list[tuple[str, int, np.ndarray]] = []
        self.models: list[ActorCritic] = []
        for kind, group in ([(POPULATION, population)] if population is not None else []) + [
            (checkpoint_kind(k), g) for k, (g, _) in checkpoints.items()
        ]:
            self.groups.append((kind, len(self.models), group.weights))
            self.models += group.models

    def act(self, member: int, obs: np.ndarray, masks: np.ndarray, sampler, device) -> np.ndarray:
        action, _, _ = self.models[member].sample(
            torch.from_numpy(obs).to(device), torch.from_numpy(masks.astype(bool)).to(device), sampler
        )
        return action.cpu().numpy()


def load_checkpoint_opponents(config: TrainConfig, game: GameConfig) -> dict[str, tuple[Population, dict[str, Any]]]:
    """Each ``opponents.checkpoints`` entry as a ``Population`` (a mixture's members and weights; an agent or a run
    alone)
    and its record (resolved metadata path, tensor sha256). ``CheckpointError`` names the entry that fails to load or
    was trained for other rules.
    """
    loaded = {}
    for name in config.opponents.checkpoints:
        try:
            checkpoint = ckpt.load_checkpoint(name, game=game)
            if checkpoint.metadata["kind"] == "mixture":
                names, weights = ckpt.mixture_weights(checkpoint)
                group = Population(ckpt.member_models(checkpoint), weights, names)
            else:
                group = Population(
                    [ckpt.build_model(checkpoint)],
                    np.ones(1),
                    [checkpoint.metadata.get("name") or checkpoint.path.stem],
                )
        except ckpt.CheckpointError as error:
            raise ckpt.CheckpointError(f"opponents.checkpoints: {name!r}: {error}") from None
        loaded[name] = (
            group,
            {"path": str(checkpoint.path), "sha256": checkpoint.metadata["tensors"]["sha256"], "members": group.record},
        )
    return loaded


class Tables:
    """Who sits where in each game: ``owner[b, s]`` is ``POLICY_SEAT``, ``EXPLOITER_SEAT``, else an index (>= 1) into
    ``opponents``.
    """

    def __init__(self, config: TrainConfig, game: GameConfig, batch: int, fixed: FixedOpponents | None = None):
        self.n = game.num_players
        self.learner_seat_counts = np.asarray(config.opponents.learner_seats)
        mix = config.opponents
        exploiter = [EXPLOITER] if mix.exploiter else []
        members = [POPULATION] if mix.population else []
        self.fixed_groups = fixed.groups if fixed is not None else []
        self.checkpoint_kinds = set(map(checkpoint_kind, mix.checkpoints))
        self.checkpoint_seats = mix.checkpoint_seats
        self.kinds = [SELF, SNAPSHOT, *exploiter, *members, *mix.baselines, *map(checkpoint_kind, mix.checkpoints)]
        weights = np.array(
            [
                mix.self_play,
                mix.snapshots,
                *[mix.exploiter for _ in exploiter],
                *[mix.population for _ in members],
                *mix.baselines.values(),
                *mix.checkpoints.values(),
            ],
            np.float64,
        )
        self.weights = weights / weights.sum()
        self.owner = np.zeros((batch, self.n), np.int64)
        # Index into ``kinds`` of each game's table.
        self.kind = np.zeros(batch, np.int64)
        # Number of seats of the policy in each game.
        self.learner_seats = np.full(batch, self.n, np.int64)

    def draw(
        self, games: np.ndarray, rng: np.random.Generator, baseline_index: dict[str, int], snapshot_indices: list[int]
    ) -> None:
        """Draw new tables for ``games`` (indices)."""
        if len(games) == 0:
            return
        kinds = rng.choice(len(self.kinds), size=len(games), p=self.weights)
        seat_order = rng.permuted(np.tile(np.arange(self.n), (len(games), 1)), axis=1)
        picks = rng.integers(0, max(len(snapshot_indices), 1), size=len(games))
        seat_counts = rng.choice(self.learner_seat_counts, size=len(games))
        # each seat's member, for the tables of each fixed group (drawn only with one, so that other runs draw as they
        # always did)
        member_codes = {
            kind: POPULATION_SEAT - first - rng.choice(len(weights), size=(len(games), self.n), p=weights)
            for kind, first, weights in self.fixed_groups
        }
        for i, (b, k, order, pick, count) in enumerate(zip(games, kinds, seat_order, picks, seat_counts)):
            name = self.kinds[k]
            if name == SNAPSHOT and not snapshot_indices:
                k, name = 0, SELF
            self.kind[b] = k
            if name in (SELF, EXPLOITER):
                self.owner[b] = POLICY_SEAT
                self.learner_seats[b] = self.n
                if name == EXPLOITER:
                    self.owner[b, order[0]] = EXPLOITER_SEAT
                    self.learner_seats[b] = self.n - 1
                continue
            opponent = (
                member_codes[name][i]
                if name in member_codes
                else snapshot_indices[pick]
                if name == SNAPSHOT
                else baseline_index[name]
            )
            if self.checkpoint_seats and name in self.checkpoint_kinds:
                count = self.n - self.checkpoint_seats
            self.owner[b] = opponent
            self.owner[b, order[:count]] = POLICY_SEAT
            self.learner_seats[b] = count


# ---------------------------------------------------------------------------- training


class PPOHooks:
    """The points at which an algorithm built on this loop joins it; each default does nothing.

    NFSP (``training.algorithms.nfsp``) wraps PPO through these, as OpenSpiel's NFSP wraps DQN: PPO
    knows nothing of NFSP. ``train`` calls them in this order: ``population`` (set-up), ``restore``
    (on ``--resume``), ``start`` (the fixed opponents built), ``evaluated_model``, ``after_update``
    (every update), ``checkpoint_state`` (every run checkpoint), ``before_final`` (before ``final``).
    """

    run_files: tuple[str, ...] = ()
    """Checkpoints it writes in the run directory besides ``checkpoint`` and ``final`` (tidied on start)."""
    log_columns: tuple[str, ...] = ()
    """Its statistics' columns in ``metrics.csv`` (the keys ``after_update`` returns)."""

    def population(self) -> Population | None:
        """The opponents of the ``opponents.population`` tables, if it provides them."""
        return None

    def restore(self, checkpoint: ckpt.Checkpoint) -> None:
        """Load its part of a run checkpoint (check it first: a refused resume changes nothing)."""

    def start(self, fixed: FixedOpponents | None) -> None:
        """The fixed opponents are built (and the run restored): the loop is about to begin."""

    def evaluated_model(self, policy: ActorCritic) -> ActorCritic:
        """The network evaluated and saved as the run's agent (``final``); by default the policy."""
        return policy

    def after_update(self, batch: tuple, fixed: FixedOpponents | None) -> dict[str, float]:
        """After the policy's update on ``batch`` (its rollout, advantages, returns and trained rows): statistics to
        log.
        """
        return {}

    def checkpoint_state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Tensors and top-level metadata entries to add to a run checkpoint."""
        return {}, {}

    def before_final(
        self, run_dir: Path, config: TrainConfig, policy: ActorCritic, state: Progress, command: str
    ) -> None:
        """The run finished; called before its agent checkpoint ``final`` is written (which marks it finished)."""


def train(
    config: TrainConfig,
    resume: bool = False,
    command: str | None = None,
    progress_bar: bool = True,
    initial_weights: dict | None = None,
    base_run: dict | None = None,
    population: Population | None = None,
    hooks: PPOHooks | None = None,
) -> Path:
    """Train (or resume) the run of ``config``; return the path of the final agent checkpoint.

    ``initial_weights``: a state dict to start a fresh run from (instead of a random network);
    ``base_run``: where those weights came from (recorded in every checkpoint's metadata);
    ``population``: the opponents of ``opponents.population`` (required when its weight is positive);
    ``hooks``: what an algorithm built on this loop adds to it (``PPOHooks``; NFSP's average policy).
    SIGINT or SIGTERM (in the main thread) stops after the current update with a run
    checkpoint and raises ``Interrupted`` (its ``exit_code`` is 130 or 143).
    """
    with StopSignals() as signals, contextlib.ExitStack() as stack:
        return _train(
            config,
            resume,
            command,
            progress_bar,
            initial_weights,
            base_run,
            population,
            hooks or PPOHooks(),
            signals,
            stack,
        )


def _train(
    config: TrainConfig,
    resume: bool,
    command: str | None,
    progress_bar: bool,
    initial_weights: dict | None,
    base_run: dict | None,
    population: Population | None,
    hooks: PPOHooks,
    signals: StopSignals,
    stack: contextlib.ExitStack,
) -> Path:
    # (the teacher is checked before anything is written: a bad name changes nothing)
    teacher = imitation.resolve_teacher(config) if not resume and initial_weights is None else None
    run = _set_up(config, command, _table_population(config, population, hooks), hooks)
    if resume:
        finished = _resume(run)  # the whole checkpoint is checked before any file is touched
        if finished is not None:
            return finished
    else:
        _start_fresh(run, initial_weights, base_run)
    _tidy_run_dir(run, resume)
    with announce_when_slow("compiling the batched engine and the sampler for this rule set (once: numba caches them)"):
        _compile(run)
    if not resume:
        if teacher is not None:
            run.state.warm_start = _warm_start(run, teacher, signals, progress_bar)
        _copy_policy(run)
    loop = _start_loop(run, resume, progress_bar, stack)
    if not resume:
        # the first segment's start: a stop inside it resumes from here, and a resume never repeats the warm start
        _save_run(run, loop)
    stop_reason = None
    first_update = run.state.update

    for update in range(first_update, run.num_updates):
        iteration_start = time.perf_counter()
        if update % config.schedule.checkpoint_every == 0 or update == first_update:
            _new_segment(run, loop, update)
        _anneal_learning_rates(run, update)

        # ---------------------------------------- 1. rollout (with ppo.overlap: collected during the last update)
        if loop.prefetched is None:
            loop.step, outcomes = _rollout(loop.rollout_args, loop.step)
        else:
            (loop.step, outcomes), loop.prefetched = loop.prefetched, None
        run.state.decisions += run.decisions_per_update
        run.state.games += sum(games for games, _, _ in outcomes.values())

        # ---------------------------------------- 2. advantages (GAE) and 3. update, for each learner
        stats = _advantages_and_update(run, loop, update)

        # ---------------------------------------- 4. snapshots, exploiter reset, evaluation, logs, checkpoints
        run.state.update = update + 1
        _refresh_pool(run, loop, outcomes)
        _log_update(run, loop, iteration_start, stats, outcomes)
        stop_reason = _stop_reason(run, signals) or stop_reason
        _evaluate_and_save(run, loop, stop_reason)
        if stop_reason:
            break
    return _finish(run, loop, signals, stop_reason)


@dataclass
class _Run:
    """One training run while it trains: its config, networks, generators, opponent pool and counters."""

    config: TrainConfig
    game: GameConfig
    command: str
    hooks: PPOHooks
    population: Population | None
    """The opponents of the ``opponents.population`` tables (the caller's, or the hooks')."""
    checkpoint_opponents: dict[str, tuple[Population, dict[str, Any]]]
    checkpoint_records: dict[str, Any] | None
    num_updates: int
    device: torch.device
    policy: Learner
    exploiter: Learner | None
    sampler: torch.Generator
    """Action sampling of the learners and the snapshots."""
    rng: np.random.Generator
    """Table draws and minibatch shuffles."""
    pool: list[Snapshot] = field(default_factory=list)
    state: Progress = field(default_factory=Progress)
    saved_update: int = 0
    """The update of the run checkpoint on disk (the latest segment's start), where ``--resume`` continues."""

    @property
    def run_dir(self) -> Path:
        return self.config.run_dir

    @property
    def decisions_per_update(self) -> int:
        return self.config.ppo.num_envs * self.config.ppo.num_steps

    @property
    def learners(self) -> dict[int, Learner]:
        return {POLICY_SEAT: self.policy, **({EXPLOITER_SEAT: self.exploiter} if self.exploiter else {})}


@dataclass
class _Loop:
    """What the update loop advances besides the run: games, tables, the update process, logs and the progress bar."""

    games: BatchedGames
    tables: Tables
    fixed: FixedOpponents | None
    rollout_args: _RolloutArgs
    logs: RunLogs
    evaluated: ActorCritic
    """The network evaluated and saved as the run's agent: the policy, or NFSP's average policy."""
    started: float
    """``perf_counter`` at the run's start, as if it had never stopped (for ``Progress.wall_seconds``)."""
    bar: Any
    worker: UpdateProcess | None = None
    """With ``ppo.overlap``: the process that runs the updates (``training.core.update_process``)."""
    step: Any = None
    """The games' current step (``BatchedGames.reset`` or the last rollout's)."""
    prefetched: tuple | None = None
    """With ``ppo.overlap``: the next rollout's ``(step, outcomes)``, collected during the update."""


def _table_population(config: TrainConfig, population: Population | None, hooks: PPOHooks) -> Population | None:
    """The opponents of the ``opponents.population`` tables: the caller's or the hooks', checked against the config."""
    hooked = hooks.population()
    if hooked is not None:
        if population is not None:
            raise ValueError(
                "train() takes a population or an average policy for the opponents.population tables, not both"
            )
        population = hooked
    if bool(config.opponents.population) != (population is not None):
        raise ValueError(
            f"opponents.population={config.opponents.population} needs a Population passed to train()"
            if population is None
            else "a Population was passed to train() but opponents.population is 0; give it a positive weight"
        )
    return population


def _set_up(config: TrainConfig, command: str | None, population: Population | None, hooks: PPOHooks) -> _Run:
    """The run's opponents, networks and generators, before anything is restored or trained."""
    game = config.game_config()
    # (before anything is written: a bad entry changes nothing)
    checkpoint_opponents = load_checkpoint_opponents(config, game)
    enc = encoding_for(game)
    n_players = game.num_players
    ppo = config.ppo
    B, T = ppo.num_envs, ppo.num_steps
    config.run_dir.mkdir(parents=True, exist_ok=True)
    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    device = torch.device(config.device)

    def new_learner(seed: int | None, learning_rate: float) -> Learner:
        model = ActorCritic.from_spec(game, config.model, seed=seed).to(device)
        return Learner(model, learning_rate, B * T + B * n_players, B, n_players, enc.observation.size, enc.num_actions)

    policy = new_learner(config.seed, ppo.learning_rate)
    exploiter = (
        new_learner(None, config.opponents.exploiter_learning_rate or ppo.learning_rate)
        if config.opponents.exploiter
        else None
    )
    return _Run(
        config=config,
        game=game,
        command=command or " ".join(["cockroach-train", *sys.argv[1:]]),
        hooks=hooks,
        population=population,
        checkpoint_opponents=checkpoint_opponents,
        checkpoint_records={name: record for name, (_, record) in checkpoint_opponents.items()} or None,
        num_updates=math.ceil(config.schedule.total_decisions / (B * T)),
        device=device,
        policy=policy,
        exploiter=exploiter,
        sampler=torch.Generator(device=device).manual_seed(config.seed),
        rng=np.random.default_rng(config.seed),
    )


def _resume(run: _Run) -> Path | None:
    """Restore the run from its checkpoint; the agent checkpoint if the run is already finished, else None."""
    run_dir, population = run.run_dir, run.population
    run.state, run.rng = _restore(
        run_dir, run.config, run.policy, run.exploiter, run.sampler, run.pool, run.device, run.hooks
    )
    state = run.state
    run.saved_update = state.update
    finished = _finished_agent(run_dir, state, run.config) if state.update >= run.num_updates else None
    if finished is not None:
        print(
            f"{run_dir} is already finished at update {state.update}; its agent checkpoint is {finished} "
            "(raise schedule.total_decisions to train on)",
            file=sys.stderr,
        )
        return finished
    print(f"resuming {run_dir} at update {state.update} ({state.decisions:,} decisions)", file=sys.stderr)
    if population is not None and state.population != population.record:
        raise ckpt.CheckpointError(
            f"{run_dir}: cannot resume against another population; the run trained against {state.population}, "
            f"given {population.record}"
        )
    saved, now = ({k: v["sha256"] for k, v in (r or {}).items()} for r in (state.checkpoints, run.checkpoint_records))
    changed = [name for name in set(saved) | set(now) if saved.get(name) != now.get(name)]
    if changed:
        raise ckpt.CheckpointError(
            f"{run_dir}: cannot resume against other opponents.checkpoints: {sorted(changed)} differ from the run's "
            f"(tensor sha256: trained against { {k: v[:12] for k, v in saved.items()} }, "
            f"given { {k: v[:12] for k, v in now.items()} })"
        )
    return None


def _start_fresh(run: _Run, initial_weights: dict | None, base_run: dict | None) -> None:
    """A new run: its opponents' records, its initial weights, the exploiter and magnet from them, the first
    snapshot.
    """
    state, policy = run.state, run.policy
    state.population = run.population.record if run.population is not None else None
    state.checkpoints = run.checkpoint_records
    if initial_weights is not None:
        policy.model.load_state_dict(initial_weights)
        state.base_run = base_run


def _compile(run: _Run) -> None:
    """One step of the batched engine and one draw of the policy on a throwaway game, so that numba compiles (or loads
    from its cache) the kernels of this rule set before the run starts (the run's generators are not touched).
    """
    games = BatchedGames(run.game, batch_size=1, seed=0)
    step = games.reset()
    games.step(random_legal_actions(step.action_mask, np.random.default_rng(0)))
    obs = torch.from_numpy(step.observation).to(run.device)
    mask = torch.from_numpy(step.action_mask.astype(bool)).to(run.device)
    run.policy.model.sample(obs, mask, torch.Generator(device=run.device).manual_seed(0))


def _warm_start(run: _Run, teacher, signals: StopSignals, progress_bar: bool) -> dict[str, Any]:
    """Imitate ``warm_start.teacher`` into the policy (``training.algorithms.imitation``); the record for the metadata.

    A signal stops it at the next step with ``Interrupted`` (no checkpoint exists yet: the run starts again).
    """
    from tqdm import tqdm

    settings = run.config.warm_start

    def stop_requested() -> bool:
        return signals.received is not None

    bar = tqdm(total=settings.decisions, unit="dec", unit_scale=True, dynamic_ncols=True, disable=not progress_bar)
    with bar:
        record = imitation.warm_start(
            run.policy.model, run.game, teacher, settings, run.config.seed, run.device, bar, stop_requested
        )
    if record is None:
        raise Interrupted(signals.received, run.run_dir / CHECKPOINT_NAME, 0)
    run.policy.model.train()
    print(
        f"warm start: imitated {settings.teacher} on {record['decisions']:,} decisions; the network's first choice "
        f"is one of the teacher's in {100 * record['agreement']:.1f}% of them",
        file=sys.stderr,
    )
    return record


def _copy_policy(run: _Run) -> None:
    """A fresh run's exploiter and magnet start from the policy's weights, which are also the first snapshot."""
    policy = run.policy
    if run.exploiter:
        run.exploiter.model.load_state_dict(policy.model.state_dict())
    if run.config.ppo.magnet_network:
        policy.refresh_magnet()
    _add_snapshot(run.pool, run.state, policy.model, run.config)


def _tidy_run_dir(run: _Run, resume: bool) -> None:
    """Record the command; remove what killed saves left, and on a fresh start the replaced run's checkpoints."""
    run_dir = run.run_dir
    run.state.commands.append(run.command)
    for name in (CHECKPOINT_NAME, AGENT_NAME, *run.hooks.run_files):
        ckpt.remove_stale(run_dir / name)  # temporary files of killed saves, tensors of replaced generations
    if not resume:
        # started again (--overwrite): the replaced run's checkpoints go before the new run writes anything, so that
        # a stop before its first save leaves none of them to resume or load
        for name in (CHECKPOINT_NAME, AGENT_NAME, BEST_RESPONSE_NAME):
            ckpt.remove_checkpoint(run_dir / name)
    _prune_kept_agents(run_dir / KEPT_AGENTS, run.state.update if resume else -1)


def _start_loop(run: _Run, resume: bool, progress_bar: bool, stack: contextlib.ExitStack) -> _Loop:
    """The logs, games, tables, fixed opponents, update process and progress bar of the update loop."""
    from tqdm import tqdm

    config, state = run.config, run.state
    logs = RunLogs(
        run.run_dir, config, resume_update=state.update if resume else None, extra_columns=run.hooks.log_columns
    )
    B = config.ppo.num_envs
    games = BatchedGames(run.game, batch_size=B, seed=config.seed)
    fixed = (
        FixedOpponents(run.population, run.checkpoint_opponents)
        if run.population is not None or run.checkpoint_opponents
        else None
    )
    tables = Tables(config, run.game, B, fixed)
    run.hooks.start(fixed)
    evaluated = run.hooks.evaluated_model(run.policy.model)
    rollout_args = _RolloutArgs(
        run.learners,
        tables,
        games,
        run.pool,
        list(config.opponents.baselines),
        fixed,
        run.sampler,
        run.rng,
        run.device,
        config.ppo.num_steps,
        shared_reward=config.opponents.shared_reward,
    )
    worker = None
    if config.ppo.overlap:
        worker = stack.enter_context(UpdateProcess(config, list(run.learners)))
        for code, learner in run.learners.items():
            worker.push(code, learner)
    started = time.perf_counter() - state.wall_seconds
    bar = tqdm(
        total=run.num_updates * run.decisions_per_update,
        initial=state.decisions,
        unit="dec",
        unit_scale=True,
        dynamic_ncols=True,
        disable=not progress_bar,
    )
    bar.set_postfix_str(_eval_summary(state.evaluations))
    return _Loop(games, tables, fixed, rollout_args, logs, evaluated, started, bar, worker)


def _new_segment(run: _Run, loop: _Loop, update: int) -> None:
    """Fresh games and baseline opponents from seeds derived from (seed, update), and a fresh table draw."""
    config, args = run.config, loop.rollout_args
    segment_seed = int(np.random.SeedSequence([config.seed, update]).generate_state(1)[0])
    loop.step = loop.games.reset(seed=segment_seed)
    args.opponents = [None] + [
        baselines.make(name, run.game, seed=segment_seed + i) for i, name in enumerate(args.baseline_names)
    ]
    for learner in run.learners.values():
        learner.restart()
    loop.tables.draw(
        np.arange(config.ppo.num_envs),
        run.rng,
        _baseline_index(args.baseline_names),
        _snapshot_indices(run.pool, args.baseline_names),
    )


def _anneal_learning_rates(run: _Run, update: int) -> None:
    ppo = run.config.ppo
    for code, learner in run.learners.items():
        tied = ppo.anneal_step and code == POLICY_SEAT  # (the policy's step follows its temperature)
        if ppo.anneal_lr or tied:
            linear = 1.0 - update / run.num_updates if ppo.anneal_lr else 1.0
            step = ppo.step_scale(update / run.num_updates) if tied else 1.0
            learner.optimizer.param_groups[0]["lr"] = learner.learning_rate * linear * step


def _advantages_and_update(run: _Run, loop: _Loop, update: int) -> dict[str, float]:
    """GAE and the PPO update of every learner (here, or with ``ppo.overlap`` in the update process while the next
    rollout is collected), then the hooks' step; the statistics to log.
    """
    config, ppo, learners, worker = run.config, run.config.ppo, run.learners, loop.worker
    scale = ppo.regularization_scale(update / run.num_updates)
    batches = {}
    for code, learner in learners.items():
        rollout = learner.rollout
        bonus = magnet_bonus(learner, rollout, ppo, scale, run.device) if code == POLICY_SEAT else None
        batches[code] = (rollout, *gae(rollout, ppo, bonus))
        learner.carry_over()  # the decisions still waiting continue in the next rollout
    stats = {}
    regularization = {code: (scale, True) if code == POLICY_SEAT else (1.0, False) for code in learners}
    if worker is None:
        for code, learner in learners.items():
            scaled, regularize = regularization[code]
            stats.update(
                _prefixed_stats(
                    code,
                    ppo_update(learner, *batches[code], ppo, run.rng, run.device, scale=scaled, regularize=regularize),
                )
            )
        stats.update(run.hooks.after_update(batches[POLICY_SEAT], loop.fixed))
    else:
        # the update process trains; the next rollout is collected meanwhile, with the weights from before this update
        # (this process's networks take the new weights only once that rollout is done, so it needs no frozen copy)
        lrs = {code: learner.optimizer.param_groups[0]["lr"] for code, learner in learners.items()}
        # (the shuffles: their own generator)
        worker.submit(
            {code: training_rows(*batches[code], lrs[code], *regularization[code]) for code in learners},
            [config.seed, update],
        )
        if (update + 1) % config.schedule.checkpoint_every != 0 and update + 1 < run.num_updates:
            loop.prefetched = _rollout(loop.rollout_args, loop.step)  # (a new segment's first rollout waits)
        stats.update(run.hooks.after_update(batches[POLICY_SEAT], loop.fixed))  # (while the update process trains)
        for code, (weights, learner_stats) in worker.result().items():
            learners[code].model.load_state_dict(weights)
            stats.update(_prefixed_stats(code, learner_stats))
    run.state.samples += len(batches[POLICY_SEAT][3])
    return stats


def _refresh_pool(run: _Run, loop: _Loop, outcomes: dict) -> None:
    """Snapshots (on a schedule, or when the policy beats the pool), the magnet's refresh, the exploiter's reset."""
    config, state, policy, exploiter, worker = run.config, run.state, run.policy, run.exploiter, loop.worker
    _, pool_seat_games, pool_losses = outcomes[SNAPSHOT]
    state.pool_games += pool_seat_games
    state.pool_losses += pool_losses
    beats_pool = (
        config.opponents.beat_pool_loss_rate > 0
        and state.pool_games >= config.opponents.beat_pool_games
        and state.pool_losses / state.pool_games < config.opponents.beat_pool_loss_rate / run.game.num_players
    )
    scheduled = config.opponents.snapshot_every and state.update % config.opponents.snapshot_every == 0
    if beats_pool or scheduled:
        _add_snapshot(run.pool, state, policy.model, config)
    if config.ppo.magnet_network:
        if config.ppo.magnet == "ema":
            policy.average_into_magnet(config.ppo.magnet_ema)
        elif state.update % config.ppo.magnet_every == 0:
            policy.refresh_magnet()
        if worker is not None and (config.ppo.magnet == "ema" or state.update % config.ppo.magnet_every == 0):
            worker.push(POLICY_SEAT, policy, optimizer=False)
    reset_every = config.opponents.exploiter_reset_every
    if exploiter and reset_every and state.update % reset_every == 0:
        # The exploiter joins the pool, and starts again from the current policy with a fresh optimizer.
        _add_snapshot(run.pool, state, exploiter.model, config, source=EXPLOITER)
        exploiter.model.load_state_dict(policy.model.state_dict())
        exploiter.reset_optimizer()
        if worker is not None:
            worker.push(EXPLOITER_SEAT, exploiter)


def _log_update(run: _Run, loop: _Loop, iteration_start: float, stats: dict, outcomes: dict) -> None:
    now = time.perf_counter()
    run.state.wall_seconds = now - loop.started
    sps = run.decisions_per_update / max(now - iteration_start, 1e-9)
    loop.logs.train_row(run.state, run.policy.optimizer.param_groups[0]["lr"], sps, stats, outcomes, len(run.pool))
    loop.bar.update(run.decisions_per_update)


def _stop_reason(run: _Run, signals: StopSignals) -> str | None:
    """Why the run stops after this update before its end (its time limit, a signal), or None."""
    config, state = run.config, run.state
    reason = None
    last = state.update == run.num_updates
    out_of_time = (
        config.schedule.time_limit_minutes is not None and state.wall_seconds > 60 * config.schedule.time_limit_minutes
    )
    if out_of_time and not last:
        reason = f"time limit of {config.schedule.time_limit_minutes} minutes reached"
    if signals.received is not None:
        reason = f"{signal.Signals(signals.received).name} received"
    return reason


def _segment_end(run: _Run) -> bool:
    """Whether the update just done ends a checkpoint segment (or the run), where a run checkpoint is written."""
    return run.state.update % run.config.schedule.checkpoint_every == 0 or run.state.update == run.num_updates


def _evaluate_and_save(run: _Run, loop: _Loop, stop_reason: str | None) -> None:
    """The scheduled evaluation, the kept agent and the run checkpoint of this update (each when due).

    A stop inside a segment writes nothing: the games in flight are not in a checkpoint, so the run resumes from the
    segment's start and plays its updates again, exactly as before (evaluations included). A stop at a segment's end
    saves as usual, after this update's evaluation.
    """
    config, state = run.config, run.state
    last = state.update == run.num_updates
    if stop_reason and not _segment_end(run):
        return
    if config.evaluation.every and state.update % config.evaluation.every == 0 and not last:
        results = evaluate_model(
            loop.evaluated,
            run.game,
            config.evaluation.opponents,
            config.evaluation.games,
            seed=config.seed + state.update,
        )
        _record_evaluation(state, loop.logs, results)
        loop.bar.set_postfix_str(_eval_summary(state.evaluations))
    if config.schedule.keep_agent_every and state.update % config.schedule.keep_agent_every == 0:
        # before the run checkpoint of the same update: a kill between the two leaves the agent after the checkpoint,
        # written again on resume
        state.wall_seconds = time.perf_counter() - loop.started
        save_agent_checkpoint(
            run.run_dir / KEPT_AGENTS / f"update_{state.update:07d}", config, loop.evaluated, state, run.command
        )
    if _segment_end(run):
        _save_run(run, loop)


def _save_run(run: _Run, loop: _Loop) -> None:
    """The run checkpoint of the current update, a segment's start (with ``ppo.overlap``, the Adam states pulled from
    the update process).
    """
    run.state.wall_seconds = time.perf_counter() - loop.started
    for code, learner in run.learners.items() if loop.worker is not None else ():
        loop.worker.pull(code, learner)
    run.saved_update = run.state.update
    save_run_checkpoint(
        run.run_dir / CHECKPOINT_NAME,
        run.config,
        run.policy,
        run.exploiter,
        run.sampler,
        run.rng,
        run.pool,
        run.state,
        run.command,
        run.hooks,
    )


def _replayed(update: int, saved_update: int) -> str:
    """How a resume gets back to ``update`` from the checkpoint at ``saved_update`` (a segment's start)."""
    if update == saved_update:
        return ""
    return f" (it plays updates {saved_update + 1}-{update} again, with the same result)"


def _finish(run: _Run, loop: _Loop, signals: StopSignals, stop_reason: str | None) -> Path:
    """Stop the loop; after a signal raise ``Interrupted``, else the final evaluation, the plots and the agent."""
    config, state, run_dir = run.config, run.state, run.run_dir
    loop.bar.close()
    if loop.worker is not None:
        loop.worker.close()
    if signals.received is not None:
        loop.logs.close()
        raise Interrupted(signals.received, run_dir / CHECKPOINT_NAME, state.update, saved_step=run.saved_update)
    if config.evaluation.final_games:
        results = evaluate_model(
            loop.evaluated,
            run.game,
            config.evaluation.opponents,
            config.evaluation.final_games,
            seed=config.seed + 10**6,
        )
        _record_evaluation(state, loop.logs, results, final=True)
        print("final evaluation: " + _eval_summary(state.evaluations), file=sys.stderr)
    if stop_reason:
        print(
            f"stopped early at update {state.update}: {stop_reason}; --resume continues exactly from the run "
            f"checkpoint at update {run.saved_update}" + _replayed(state.update, run.saved_update),
            file=sys.stderr,
        )
    # ``final`` last: it marks the run finished for --resume, so a kill before it leaves everything else to be
    # written again
    run.hooks.before_final(run_dir, config, run.policy.model, state, run.command)
    loop.logs.close()
    plot_learning_curves(
        run_dir / "eval.csv",
        run_dir / "learning_curves.png",
        title=f"{config.name}: {run.game.num_players}-player {run.game.edition}",
    )
    if config.schedule.average_last:
        save_kept_average(run_dir, config.schedule.average_last, _metadata(config, state, run.command, "mixture"))
    return save_agent_checkpoint(run_dir / AGENT_NAME, config, loop.evaluated, state, run.command)


@dataclass
class _RolloutArgs:
    """What a rollout reads and advances: the learners (their networks and rollouts), the tables, the games, the
    opponents and the generators.
    """

    learners: dict[int, Learner]
    tables: Tables
    games: BatchedGames
    pool: list[Snapshot]
    baseline_names: list[str]
    fixed: FixedOpponents | None
    sampler: torch.Generator
    rng: np.random.Generator
    device: torch.device
    num_steps: int
    opponents: list = field(default_factory=list)
    """``[None, baseline, ...]``, made anew for each checkpoint segment."""
    shared_reward: bool = False
    """``opponents.shared_reward``: the policy's seats at a table with another agent share their rewards."""


def _rollout(args: _RolloutArgs, step):
    """Play ``num_steps`` decisions in every game; returns the new step and the outcomes per table kind (games, policy
    seat-games, policy losses).
    """
    for learner in args.learners.values():
        learner.model.eval()
    outcomes = {kind: [0, 0, 0] for kind in args.tables.kinds}  # kind -> [games, policy seat-games, policy losses]
    actions = np.zeros(len(step.to_act), np.int64)
    for _ in range(args.num_steps):
        seat = step.to_act
        owner = args.tables.owner[np.arange(len(seat)), seat]
        for code, learner in args.learners.items():
            rows = np.flatnonzero(owner == code)
            if len(rows):
                actions[rows] = learner.act(step, rows, seat, args.sampler, args.device)
        for who in np.unique(owner[owner > 0]):
            rows = np.flatnonzero(owner == who)
            actions[rows] = _act(
                args.opponents,
                args.pool,
                args.baseline_names,
                who,
                step.observation[rows],
                step.action_mask[rows],
                args.sampler,
                args.device,
            )
        for code in np.unique(owner[owner <= POPULATION_SEAT]):
            rows = np.flatnonzero(owner == code)
            actions[rows] = args.fixed.act(
                POPULATION_SEAT - code, step.observation[rows], step.action_mask[rows], args.sampler, args.device
            )

        step = args.games.step(actions)

        finished = np.flatnonzero(step.done)
        if len(finished):
            policy_rewards = (
                shared_rewards(step.rewards, finished, args.tables.owner) if args.shared_reward else step.rewards
            )
            for code, learner in args.learners.items():
                learner.finish(finished, policy_rewards if code == POLICY_SEAT else step.rewards)
            for b in finished:
                if step.loser[b] >= 0:  # (a game truncated by max_steps has no loser and zero rewards)
                    kind = args.tables.kinds[args.tables.kind[b]]
                    outcomes[kind][0] += 1
                    outcomes[kind][1] += int(args.tables.learner_seats[b])
                    outcomes[kind][2] += int(args.tables.owner[b, step.loser[b]] == POLICY_SEAT)
            args.tables.draw(
                finished,
                args.rng,
                _baseline_index(args.baseline_names),
                _snapshot_indices(args.pool, args.baseline_names),
            )
    return step, outcomes


def shared_rewards(rewards: np.ndarray, finished: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """``rewards`` (games, seats) with the policy's seats of each ``finished`` game that has another agent at its table
    given their mean reward (``opponents.shared_reward``); other rows and seats are unchanged.
    """
    out = rewards.copy()
    policy = owner[finished] == POLICY_SEAT
    mixed = policy & ~policy.all(axis=1, keepdims=True)
    r = rewards[finished]
    mean = (r * policy).sum(axis=1, keepdims=True) / np.maximum(policy.sum(axis=1, keepdims=True), 1)
    out[finished] = np.where(mixed, mean, r)
    return out


# ---------------------------------------------------------------------------- opponents


def _prefixed_stats(code: int, stats: dict[str, float]) -> dict[str, float]:
    """A learner's update statistics as logged: the policy's as they are, the exploiter's prefixed ``exploiter_``."""
    return stats if code == POLICY_SEAT else {f"exploiter_{k}": v for k, v in stats.items()}


def _baseline_index(names: list[str]) -> dict[str, int]:
    return {name: 1 + i for i, name in enumerate(names)}


def _snapshot_indices(pool: list[Snapshot], names: list[str]) -> list[int]:
    return [1 + len(names) + i for i in range(len(pool))]


def _act(opponents, pool, baseline_names, who, obs, masks, sampler, device) -> np.ndarray:
    """Actions of opponent ``who`` (a baseline, or a snapshot sampled with the run's generator)."""
    if who <= len(baseline_names):
        return opponents[who].act_batch(obs, masks)
    snapshot = pool[who - 1 - len(baseline_names)]
    action, _, _ = snapshot.model.sample(
        torch.from_numpy(obs).to(device), torch.from_numpy(masks.astype(bool)).to(device), sampler
    )
    return action.cpu().numpy()


def _add_snapshot(
    pool: list[Snapshot], state: Progress, model: ActorCritic, config: TrainConfig, source: str = "policy"
) -> None:
    """A frozen copy of ``model`` enters the pool (the oldest leaves past ``max_snapshots``)."""
    snapshot = Snapshot(state.next_snapshot_id, state.update, frozen_copy(model), source)
    if len(pool) < config.opponents.max_snapshots:
        pool.append(snapshot)
    else:  # replace the oldest in place, so that the other snapshots keep their table indices
        pool[min(range(len(pool)), key=lambda k: pool[k].id)] = snapshot
    state.next_snapshot_id += 1
    if source == "policy":  # the beat-the-pool rule counts from the latest policy snapshot
        state.pool_games = state.pool_losses = 0


# ---------------------------------------------------------------------------- evaluation


def evaluate_model(
    model: ActorCritic, game: GameConfig, opponents: list[str], num_games: int, seed: int
) -> list[dict[str, Any]]:
    """The policy in one seat against each baseline in all the others, in the arena (seat rotation, duplicate deals)."""
    results = evaluate_agent(
        lambda i: PolicyAgent(model, game, seed=seed + 7919 * i, name="policy"), game, opponents, num_games, seed
    )
    model.train()
    return results


def evaluate_agent(
    make_agent, game: GameConfig, opponents: list[str], num_games: int, seed: int
) -> list[dict[str, Any]]:
    """``make_agent(i)`` (an agent named ``policy``) in one seat against baseline ``opponents[i]`` in all the others,
    in the arena.

    Each result holds the policy's loss rate and its behaviour (``false_offer_rate``,
    ``false_pass_rate``, ``call_accuracy``), and the same three of the opponents' seats
    together (``opponent_*``): what a best response exploits shows in both.
    ``opponent_call_accuracy_on_policy`` is the opponents' accuracy on the policy's claims
    alone (their ``call_accuracy`` also counts their calls on each other's).
    """
    from training.evaluation.arena import behaviour_summary, play_match

    results = []
    for i, name in enumerate(opponents):
        policy = make_agent(i)
        match = play_match([policy, f"{name}*{game.num_players - 1}"], game, games=num_games, seed=seed + 7919 * i + 1)
        report = match.report("policy")
        behaviour = report.behaviour
        others = [agent for agent in match.agents if agent is not report]
        theirs = behaviour_summary(
            {k: sum(a.counts[k] for a in others) for k in report.counts}, sum(a.games for a in others)
        )
        results.append(
            {
                "opponent": name,
                "games": report.games,
                "losses": report.losses,
                "loss_rate": report.loss_rate,
                "ci95": list(report.loss_rate_ci95),
                "parity": 1 / game.num_players,
                "false_offer_rate": behaviour.get("false_offer_rate"),
                "false_pass_rate": behaviour.get("false_pass_rate"),
                "call_accuracy": behaviour.get("call_accuracy"),
                **{f"opponent_{k}": theirs.get(k) for k in ("false_offer_rate", "false_pass_rate", "call_accuracy")},
                "opponent_call_accuracy_on_policy": theirs.get("call_accuracy_on_others"),
            }
        )
    return results


def _record_evaluation(state: Progress, logs: RunLogs, results: list[dict[str, Any]], final: bool = False) -> None:
    entry = {
        "update": state.update,
        "decisions": state.decisions,
        "wall_seconds": round(state.wall_seconds, 1),
        "final": final,
        "results": results,
    }
    state.evaluations.append(entry)
    logs.eval_rows(entry)


def _eval_summary(evaluations: list[dict[str, Any]]) -> str:
    if not evaluations:
        return "eval: pending"
    latest = evaluations[-1]
    return "loss rate " + ", ".join(f"vs {r['opponent']} {100 * r['loss_rate']:.1f}%" for r in latest["results"])


# ---------------------------------------------------------------------------- checkpoints


def _metadata(config: TrainConfig, state: Progress, command: str, kind: str) -> dict[str, Any]:
    game = config.game_config()
    return {
        "kind": kind,
        "name": config.name,
        "game_config": game.to_dict(),
        "model": config.model.entry(),
        "training_config": config.to_dict(),
        "command": command,
        "commands": state.commands,
        **({"base_run": state.base_run} if state.base_run else {}),
        **({"warm_start": state.warm_start} if state.warm_start else {}),
        "step": {
            "update": state.update,
            "decisions": state.decisions,
            "samples": state.samples,
            "games": state.games,
            "wall_seconds": round(state.wall_seconds, 1),
        },
        "evaluation": state.evaluations[-1] if state.evaluations else None,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def save_run_checkpoint(
    path: Path,
    config,
    policy: Learner,
    exploiter: Learner | None,
    sampler,
    rng,
    pool: list[Snapshot],
    state: Progress,
    command: str,
    hooks: PPOHooks | None = None,
) -> Path:
    """Everything ``--resume`` needs: weights, Adam state (of the policy and the exploiter), magnet, pool, RNG states,
    counters;
    and what ``hooks`` adds (NFSP: the average policy's weights, Adam state, reservoir and generator).
    """
    tensors, optimizers = {}, {}
    for prefix, learner in _prefixed(policy, exploiter):
        tensors.update({f"{prefix}model.{k}": v for k, v in learner.model.state_dict().items()})
        optimizer_tensors, optimizers[f"{prefix}optimizer"] = ckpt.optimizer_state(
            learner.optimizer, prefix=f"{prefix}optimizer"
        )
        tensors.update(optimizer_tensors)
    if policy.magnet is not None:
        tensors.update({f"magnet.{k}": v for k, v in policy.magnet.state_dict().items()})
    for snapshot in pool:
        tensors.update({f"pool.{snapshot.id}.{k}": v for k, v in snapshot.model.state_dict().items()})
    tensors["rng.sampler"] = sampler.get_state()
    metadata = _metadata(config, state, command, "run")
    metadata.update(
        optimizers,
        pool=[{"id": s.id, "update": s.update, "source": s.source} for s in pool],
        progress={k: v for k, v in state.__dict__.items()},
        rng={"numpy": ckpt.numpy_rng_state(rng)},
    )
    if hooks is not None:
        hook_tensors, hook_metadata = hooks.checkpoint_state()
        tensors.update(hook_tensors)
        metadata.update(hook_metadata)
    return ckpt.save_checkpoint(path, tensors, metadata)


def _prune_kept_agents(directory: Path, update: int) -> None:
    """Remove the kept agents (``schedule.keep_agent_every``) after ``update``: on resume those of the continuation
    that the
    checkpoint does not hold (the resumed run writes its own at those updates), on a fresh start (``update=-1``, with
    ``--overwrite``) all of the replaced run's; tidy the others' stale files.
    """
    if not directory.is_dir():
        return
    for meta in sorted(directory.glob("update_*.json")):
        stem = meta.with_suffix("")
        kept = stem.name[len("update_") :]
        if kept.isdigit() and int(kept) > update:
            for path in [meta, *directory.glob(f"{stem.name}.*.safetensors")]:
                path.unlink(missing_ok=True)
        else:
            ckpt.remove_stale(stem)


def save_agent_checkpoint(
    path: Path, config: TrainConfig, model: ActorCritic, state: Progress, command: str, network: str | None = None
) -> Path:
    """The weights only (small), with the metadata users and the arena need. ``network``: which of an NFSP run's
    networks
    it is, if not the evaluated one (``best response``: recorded, without the evaluations, which are the average
    policy's).
    """
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    metadata = _metadata(config, state, command, "agent")
    metadata["evaluations"] = state.evaluations
    if network is not None:
        metadata.update(network=network, evaluation=None, evaluations=[])
    return ckpt.save_checkpoint(path, tensors, metadata)


def _prefixed(policy: Learner, exploiter: Learner | None) -> list[tuple[str, Learner]]:
    """The learners with the prefix of their tensors and optimizer state in a run checkpoint."""
    return [("", policy)] + ([("exploiter.", exploiter)] if exploiter else [])


RESUMABLE_CHANGES = (
    "schedule.total_decisions",
    "schedule.time_limit_minutes",
    "schedule.keep_agent_every",
    "evaluation",
    "device",
    "torch_threads",
    "output_dir",
    "nfsp.sl_learning_rate",
    "nfsp.sl_steps",
    "nfsp.sl_batch_size",
)
"""Config entries that may differ between a run and its resumption (NFSP's supervised steps: an average policy that
should
settle, e.g. a lower ``nfsp.sl_learning_rate`` late in a run; the reservoir's size may not change)."""


def _restore(
    run_dir: Path,
    config: TrainConfig,
    policy: Learner,
    exploiter: Learner | None,
    sampler,
    pool: list[Snapshot],
    device,
    hooks: PPOHooks,
) -> tuple[Progress, np.random.Generator]:
    checkpoint = ckpt.load_checkpoint(
        run_dir / CHECKPOINT_NAME, game=config.game_config(), kind="run", schema=ckpt.RUN_SCHEMA
    )
    try:
        return _restore_from(checkpoint, config, policy, exploiter, sampler, pool, device, hooks)
    except ckpt.CheckpointError:
        raise
    except ConfigError as error:
        raise ckpt.CheckpointError(f"{checkpoint.path}: its training config is not valid here: {error}") from None
    except (KeyError, TypeError, ValueError, RuntimeError, IndexError, AttributeError) as error:
        # Everything was validated against RUN_SCHEMA; what is left is a checkpoint altered in a way the schema cannot
        # see.
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: the run state cannot be restored ({type(error).__name__}: {error}); the "
            f"checkpoint is inconsistent"
        ) from None


def _restore_from(
    checkpoint,
    config: TrainConfig,
    policy: Learner,
    exploiter: Learner | None,
    sampler,
    pool: list[Snapshot],
    device,
    hooks: PPOHooks,
) -> tuple[Progress, np.random.Generator]:
    meta = checkpoint.metadata
    saved = config_from_dict(meta["training_config"], where=str(checkpoint.path))
    differences = [
        key for key in config_diff(saved.to_dict(), config.to_dict()) if not key.startswith(RESUMABLE_CHANGES)
    ]
    if differences:
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: cannot resume with a different config; changed: {differences} (only "
            f"{list(RESUMABLE_CHANGES)} may change)"
        )
    for prefix in (
        [f"{p}model" for p, _ in _prefixed(policy, exploiter)]
        + (["magnet"] if config.ppo.magnet_network else [])
        + [f"pool.{e['id']}" for e in meta["pool"]]
    ):
        ckpt.check_shapes(checkpoint, prefix)  # before anything is loaded: a refused resume changes nothing
    progress_keys = {f.name for f in dataclasses.fields(Progress)}
    if set(meta["progress"]) - progress_keys:
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: metadata field 'progress' has unknown entries "
            f"{sorted(set(meta['progress']) - progress_keys)}; expected some of {sorted(progress_keys)}"
        )
    hooks.restore(checkpoint)  # (checks its part of the checkpoint before it loads it)
    for prefix, learner in _prefixed(policy, exploiter):
        learner.model.load_state_dict(checkpoint.group(f"{prefix}model"))
        ckpt.restore_optimizer(learner.optimizer, checkpoint, prefix=f"{prefix}optimizer")
    if config.ppo.magnet_network:
        policy.refresh_magnet()
        policy.magnet.load_state_dict(checkpoint.group("magnet"))
    sampler.set_state(checkpoint.tensors["rng.sampler"])
    game = config.game_config()
    for entry in meta["pool"]:
        frozen = ActorCritic.from_spec(game, config.model).to(device)
        frozen.load_state_dict(checkpoint.group(f"pool.{entry['id']}"))
        pool.append(
            Snapshot(entry["id"], entry["update"], frozen.eval().requires_grad_(False), entry.get("source", "policy"))
        )
    state = Progress(**meta["progress"])
    return state, ckpt.restore_numpy_rng(meta["rng"]["numpy"])


def _finished_agent(run_dir: Path, state: Progress, config: TrainConfig) -> Path | None:
    """The agent checkpoint of a run that finished at ``state.update`` (final evaluation included), else None."""
    try:
        meta = ckpt.read_metadata(run_dir / AGENT_NAME)
    except ckpt.CheckpointError:
        return None
    step = meta.get("step") or {}
    evaluated = not config.evaluation.final_games or bool((meta.get("evaluation") or {}).get("final"))
    return (
        Path(meta["_path"])
        if step.get("update") == state.update and step.get("decisions") == state.decisions and evaluated
        else None
    )


# ---------------------------------------------------------------------------- logs and plots


class RunLogs:
    """``metrics.csv`` (one row per update), ``eval.csv`` (one row per opponent per evaluation) and TensorBoard."""

    def __init__(
        self, run_dir: Path, config: TrainConfig, resume_update: int | None, extra_columns: tuple[str, ...] = ()
    ):
        self.run_dir = run_dir
        exploiter = [EXPLOITER] if config.opponents.exploiter else []
        members = [POPULATION] if config.opponents.population else []
        self.opponent_kinds = [
            SNAPSHOT,
            *exploiter,
            *members,
            *config.opponents.baselines,
            *map(checkpoint_kind, config.opponents.checkpoints),
        ]
        stats = ["pg_loss", "v_loss", "entropy", "approx_kl", "clipfrac", "explained_variance"]
        self.metrics_columns = [
            "update",
            "decisions",
            "samples",
            "games",
            "wall_seconds",
            "decisions_per_second",
            "learning_rate",
            *stats,
            *(["magnet_kl"] if config.ppo.magnet_coef and not config.ppo.magnet_reward else []),
            *(["start_kl"] if config.ppo.kl_coef else []),
            *extra_columns,
            "pool_size",
            *[f"train_loss_rate_vs_{k}" for k in self.opponent_kinds],
            *[f"exploiter_{k}" for s in exploiter for k in ("loss_rate", *stats)],
        ]
        self.eval_columns = [
            "update",
            "decisions",
            "wall_seconds",
            "final",
            "opponent",
            "games",
            "loss_rate",
            "ci95_low",
            "ci95_high",
            "parity",
            "false_offer_rate",
            "false_pass_rate",
            "call_accuracy",
        ]
        for name, columns in (("metrics.csv", self.metrics_columns), ("eval.csv", self.eval_columns)):
            prepare_csv(run_dir / name, columns, resume_update)
        self.writer = tensorboard_writer(run_dir, resume_update)

    def train_row(self, state: Progress, lr: float, sps: float, stats: dict, outcomes: dict, pool_size: int) -> None:
        row = {
            "update": state.update,
            "decisions": state.decisions,
            "samples": state.samples,
            "games": state.games,
            "wall_seconds": round(state.wall_seconds, 2),
            "decisions_per_second": round(sps),
            "learning_rate": lr,
            **{k: round(v, 6) for k, v in stats.items()},
            "pool_size": pool_size,
        }
        for kind in self.opponent_kinds:
            _, seat_games, losses = outcomes.get(kind, (0, 0, 0))
            row[f"train_loss_rate_vs_{kind}"] = (
                round(losses / seat_games, 4) if seat_games else ""
            )  # per learner seat; parity 1/N
        if (
            EXPLOITER in outcomes
        ):  # the exploiter loses the games that the policy's seats do not: an online exploitability estimate
            games, _, policy_losses = outcomes[EXPLOITER]
            row["exploiter_loss_rate"] = round(1 - policy_losses / games, 4) if games else ""
        append_csv(self.run_dir / "metrics.csv", self.metrics_columns, row)
        for key, value in row.items():
            if (
                key not in ("update", "decisions")
                and value != ""
                and not (isinstance(value, float) and math.isnan(value))
            ):
                self.writer.add_scalar(f"train/{key}", value, state.update)

    def eval_rows(self, entry: dict) -> None:
        for result in entry["results"]:
            row = {
                "update": entry["update"],
                "decisions": entry["decisions"],
                "wall_seconds": entry["wall_seconds"],
                "final": int(entry["final"]),
                "opponent": result["opponent"],
                "games": result["games"],
                "loss_rate": round(result["loss_rate"], 4),
                "ci95_low": round(result["ci95"][0], 4),
                "ci95_high": round(result["ci95"][1], 4),
                "parity": round(result["parity"], 4),
                **{
                    k: ("" if result.get(k) is None else round(result[k], 4))
                    for k in ("false_offer_rate", "false_pass_rate", "call_accuracy")
                },
            }
            append_csv(self.run_dir / "eval.csv", self.eval_columns, row)
            self.writer.add_scalar(f"eval/loss_rate_vs_{result['opponent']}", result["loss_rate"], entry["update"])
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
