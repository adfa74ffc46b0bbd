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
The time limit stops at the last segment end before it where it can
(``training.core.runs.time_limit_reason``).

This module holds the loop; the machinery it shares with the other algorithms is in ``training.core``: the opponent
kinds, the pool's snapshots and the tables (``opponents``), the rollout (``rollout``), the learner, its GAE and its
update (``learner``), the run's counters and logs (``runs``), its save and restore (``checkpoint.run_state``), the
rollout workers of a ``distributed`` run (``rollout_workers``); the evaluation against the baselines is
``training.evaluation.against_baselines``.
"""

from __future__ import annotations

import contextlib
import math
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cockroach_env.batched import BatchedGames
from cockroach_env.config import GameConfig
from cockroach_env.encoding import encoding_for
from training.algorithms import imitation
from training.core import checkpoint as ckpt
from training.core.checkpoint.run_state import (
    finished_agent,
    progress_metadata,
    prune_kept_agents,
    restore_run,
    save_agent_checkpoint,
    save_run_checkpoint,
)
from training.core.config import TrainConfig
from training.core.distributed import cluster, executor
from training.core.learner import Learner, gae, magnet_bonus, numbered, ppo_update
from training.core.model import ActorCritic
from training.core.opponents import (
    EXPLOITER,
    EXPLOITER_SEAT,
    POLICY_SEAT,
    SNAPSHOT,
    FixedOpponents,
    Population,
    Snapshot,
    Tables,
    add_snapshot,
    load_checkpoint_opponents,
)
from training.core.policy_average import save_kept_average
from training.core.progress import progress_bar as progress
from training.core.rollout import RolloutArgs, collect_rollout, compile_kernels, start_segment
from training.core.rollout_workers import RolloutWorkers
from training.core.runs import (
    AGENT_NAME,
    BEST_RESPONSE_NAME,
    CHECKPOINT_NAME,
    KEPT_AGENTS,
    Interrupted,
    Progress,
    RunLogs,
    StopSignals,
    announce_when_slow,
    plot_learning_curves,
    remove_run_logs,
    time_limit_reason,
)
from training.core.update_process import UpdateProcess, training_rows
from training.evaluation.against_baselines import evaluate_model

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
    stack.enter_context(cluster(config.distributed.address, config.distributed.local_cpus))  # (warm start, workers)
    run = _set_up(config, command, _table_population(config, population, hooks), hooks)
    if resume:
        finished = _resume(run)  # the whole checkpoint is checked before any file is touched
        if finished is not None:
            return finished
    else:
        _start_fresh(run, initial_weights, base_run)
    _tidy_run_dir(run, resume)
    with announce_when_slow(
        "compiling the batched engine, the sampler and the scripted baselines for this rule set (once: numba caches "
        "them)"
    ):
        compile_kernels(run.game, run.policy.model, run.device)
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
        if loop.shards is not None:
            outcomes = loop.shards.collect()
        elif loop.prefetched is None:
            loop.step, outcomes = collect_rollout(loop.rollout_args, loop.step)
        else:
            (loop.step, outcomes), loop.prefetched = loop.prefetched, None
        run.state.decisions += run.decisions_per_update
        run.state.games += sum(games for games, _, _ in outcomes.values())

        # ---------------------------------------- 2. advantages (GAE) and 3. update, for each learner
        with numbered(update + 1):  # a loss or weight that is not finite stops the run, naming this update
            stats = _advantages_and_update(run, loop, update)

        # ---------------------------------------- 4. snapshots, exploiter reset, evaluation, logs, checkpoints
        run.state.update = update + 1
        _refresh_pool(run, loop, outcomes)
        _log_update(run, loop, iteration_start, stats, outcomes)
        stop_reason = _stop_reason(run, loop, signals) or stop_reason
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
    rollout_args: RolloutArgs
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
    segment_started: float | None = None
    """``perf_counter`` at the current checkpoint segment's start (for the time limit's forecast)."""
    shards: RolloutWorkers | None = None
    """With ``distributed`` workers: the rollout workers that play the rollouts (``training.core.rollout_workers``)."""


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
    run.state, run.rng = restore_run(
        run_dir, run.config, run.policy, run.exploiter, run.sampler, run.pool, run.device, run.hooks
    )
    state = run.state
    run.saved_update = state.update
    finished = finished_agent(run_dir, state, run.config) if state.update >= run.num_updates else None
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


def _warm_start(run: _Run, teacher, signals: StopSignals, progress_bar: bool) -> dict[str, Any]:
    """Imitate ``warm_start.teacher`` into the policy (``training.algorithms.imitation``); the record for the metadata.

    A signal stops it at the next step with ``Interrupted`` (no checkpoint exists yet: the run starts again).
    """
    settings = run.config.warm_start

    def stop_requested() -> bool:
        return signals.received is not None

    bar = progress(settings.decisions, "dec", progress_bar, unit_scale=True, dynamic_ncols=True)
    with bar:
        distributed = run.config.distributed
        workers = executor(distributed.address) if distributed.active else None  # (the teacher plays on them)
        record = imitation.warm_start(
            run.policy.model, run.game, teacher, settings, run.config.seed, run.device, bar, stop_requested,
            workers, distributed.workers,
        )  # fmt: skip
    if record is None:
        raise Interrupted(signals.received, run.run_dir / CHECKPOINT_NAME, 0, saved=False)
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
    add_snapshot(run.pool, run.state, policy.model, run.config)


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
        remove_run_logs(run_dir)  # (and its logs: only the user's own files stay)
    prune_kept_agents(run_dir / KEPT_AGENTS, run.state.update if resume else -1)


def _start_loop(run: _Run, resume: bool, progress_bar: bool, stack: contextlib.ExitStack) -> _Loop:
    """The logs, games, tables, fixed opponents, update process and progress bar of the update loop."""
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
    rollout_args = RolloutArgs(
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
    worker = shards = None
    if config.distributed.active:  # (with ppo.overlap, the workers play while this process updates)
        shards = stack.enter_context(RolloutWorkers(config, run.learners, run.pool, fixed, run.sampler, run.rng))
    elif config.ppo.overlap:
        worker = stack.enter_context(UpdateProcess(config, list(run.learners)))
        for code, learner in run.learners.items():
            worker.push(code, learner)
    started = time.perf_counter() - state.wall_seconds
    bar = progress(
        run.num_updates * run.decisions_per_update,
        "dec",
        progress_bar,
        initial=state.decisions,
        unit_scale=True,
        dynamic_ncols=True,
    )
    bar.set_postfix_str(_eval_summary(state.evaluations))
    return _Loop(games, tables, fixed, rollout_args, logs, evaluated, started, bar, worker, shards=shards)


def _new_segment(run: _Run, loop: _Loop, update: int) -> None:
    """Fresh games and baseline opponents from seeds derived from (seed, update), and a fresh table draw (here, or in
    the rollout workers' shards).
    """
    loop.segment_started = time.perf_counter()
    segment_seed = int(np.random.SeedSequence([run.config.seed, update]).generate_state(1)[0])
    if loop.shards is not None:
        loop.shards.new_segment(segment_seed)
    else:
        loop.step = start_segment(loop.rollout_args, segment_seed)


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
        shuffles = run.rng
        if loop.shards is not None and ppo.overlap:  # the workers play the next rollout (old weights) meanwhile
            shuffles = np.random.default_rng([config.seed, update])  # (the run's generators are with the workers)
            if _prefetches(run, update):
                loop.shards.send()
        for code, learner in learners.items():
            scaled, regularize = regularization[code]
            stats.update(
                _prefixed_stats(
                    code,
                    ppo_update(learner, *batches[code], ppo, shuffles, run.device, scale=scaled, regularize=regularize),
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
        if _prefetches(run, update):
            loop.prefetched = collect_rollout(loop.rollout_args, loop.step)  # (a new segment's first rollout waits)
        stats.update(run.hooks.after_update(batches[POLICY_SEAT], loop.fixed))  # (while the update process trains)
        for code, (weights, learner_stats) in worker.result().items():
            learners[code].model.load_state_dict(weights)
            stats.update(_prefixed_stats(code, learner_stats))
    run.state.samples += len(batches[POLICY_SEAT][3])
    return stats


def _prefetches(run: _Run, update: int) -> bool:
    """Whether ``ppo.overlap`` collects the next rollout during this update (a new segment's first rollout waits)."""
    return (update + 1) % run.config.schedule.checkpoint_every != 0 and update + 1 < run.num_updates


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
        add_snapshot(run.pool, state, policy.model, config)
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
        add_snapshot(run.pool, state, exploiter.model, config, source=EXPLOITER)
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


def _stop_reason(run: _Run, loop: _Loop, signals: StopSignals) -> str | None:
    """Why the run stops after this update before its end (a signal, its time limit: ``time_limit_reason``), or None."""
    config, state = run.config, run.state
    at_checkpoint = _segment_end(run) and loop.segment_started is not None
    segment = time.perf_counter() - loop.segment_started if at_checkpoint else None
    reason = time_limit_reason(config.schedule, state.wall_seconds, state.update == run.num_updates, segment)
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
        save_kept_average(
            run_dir, config.schedule.average_last, progress_metadata(config, state, run.command, "mixture")
        )
    return save_agent_checkpoint(run_dir / AGENT_NAME, config, loop.evaluated, state, run.command)


# ---------------------------------------------------------------------------- the loop's small steps


def _prefixed_stats(code: int, stats: dict[str, float]) -> dict[str, float]:
    """A learner's update statistics as logged: the policy's as they are, the exploiter's prefixed ``exploiter_``."""
    return stats if code == POLICY_SEAT else {f"exploiter_{k}": v for k, v in stats.items()}


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
