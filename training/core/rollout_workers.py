"""One PPO rollout played by rollout workers, each with a shard of the games; one learner trains on all of it.

``RolloutWorkers`` is the learner's side. Worker ``k`` of ``N`` (a ``Shard``: a Ray actor, or an object in this
process with ``distributed.address: null``) owns ``ppo.num_envs / N`` games on its own batched engine, copies of the
learners' networks (the policy, the exploiter), the pool's snapshots, the fixed opponents and the baselines. Each
update the learner sends one message, put once in Ray's object store and read by every worker: the learners' weights,
the pool (each snapshot's network put once, when it joins), the fixed opponents' weights that changed (NFSP's average
policy) and, at a checkpoint segment's start, the segment's seed. Each worker plays ``ppo.num_steps`` decisions in
every game of its shard (``training.core.rollout.collect_rollout``, as in one process) and returns its learners'
finished decisions as arrays; the learner joins them in shard order into each learner's rollout, and trains.

Seeds. Shard 0 plays with the run's own generators (action sampling, table draws): the learner sends their states
with the message and takes back the advanced states, so with one worker the run is the in-process run, bit for bit.
Shard ``k > 0`` plays with generators seeded at each segment's start from the segment's seed and ``k``, and its games
and baselines are seeded from them too: N workers give one result on any cluster, whatever the timing, and a resumed
run (which restarts at a segment's start) continues it exactly, with nothing more in its checkpoint.

Faults. A worker is a deterministic function of the messages since its segment's start, which the learner keeps
(references into the object store). A worker that dies (its process killed, its node lost) is restarted by Ray
(``distributed.max_restarts``), and its shard replays those messages: the same rollout as if it had never died.

Overlap (``ppo.overlap`` with workers): the learner sends the next rollout's message before it updates, so the workers
play with the weights from before the update while it trains (one update behind, as ``ppo.overlap`` in one process,
whose update process is then not needed); the update shuffles with its own generator, seeded by (seed, update).
"""

from __future__ import annotations

import copy
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from cockroach_env.batched import BatchedGames
from cockroach_env.encoding import encoding_for
from training.core.config import TrainConfig
from training.core.distributed import connect
from training.core.learner import Learner, Rollout
from training.core.model import ActorCritic
from training.core.opponents import EXPLOITER_SEAT, POLICY_SEAT, FixedOpponents, Snapshot, Tables
from training.core.rollout import RolloutArgs, collect_rollout, start_segment
from training.core.schema import cut

RESTART_TIMEOUT = 300
"""Seconds a replay waits for a restarting worker."""
_COLUMNS = ("obs", "mask", "action", "logprob", "value", "reward", "terminal", "successor")


def shard_seed(segment_seed: int, shard: int) -> int:
    """The seed of shard ``shard``'s games, baselines and (for ``shard > 0``) generators in a segment: shard 0 takes the
    segment's own seed (the in-process run's), every other one a seed derived from it and the shard's index.
    """
    if shard == 0:
        return segment_seed
    return int(np.random.SeedSequence([segment_seed, shard]).generate_state(1)[0])


def generator_states(sampler: torch.Generator, rng: np.random.Generator) -> tuple[torch.Tensor, dict]:
    """The states of a sampler and a numpy generator (sent to shard 0, and taken back from it)."""
    return sampler.get_state(), copy.deepcopy(rng.bit_generator.state)


def set_generator_states(sampler: torch.Generator, rng: np.random.Generator, states: tuple[torch.Tensor, dict]) -> None:
    """Set a sampler's and a numpy generator's states (``generator_states``)."""
    sampler.set_state(states[0])
    rng.bit_generator.state = states[1]


@dataclass
class ShardResult:
    """What a worker returns for one rollout: each learner's finished decisions, the outcomes per table kind, shard
    0's generator states after the rollout, and the seconds it played.
    """

    rollouts: dict[int, dict[str, Any]]
    outcomes: dict[str, list[int]]
    generators: tuple | None
    seconds: float
    cpu_seconds: float
    """The worker process's CPU seconds in the rollout (its rate on a core of its own, whatever else runs there)."""


@dataclass
class Message:
    """One update's message to every worker (put once in the object store)."""

    weights: dict[int, dict[str, torch.Tensor]]
    """Each learner's state dict, by ``Tables.owner`` code."""
    pool: list[tuple[int, int, str, Any]]
    """Each snapshot's ``(id, update, source, network)``, in pool order; the network is an object reference on Ray."""
    fixed: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)
    """The fixed opponents' state dicts that changed since the last message, by model index."""
    segment_seed: int | None = None
    """At a segment's start: its seed (the games restart and draw their tables); otherwise None."""


class Shard:
    """A worker's games: its batched engine, tables, baselines, copies of the learners and of the opponents, and its
    generators. ``play`` runs one rollout from a ``Message``.
    """

    def __init__(self, config: TrainConfig, index: int, count: int, fixed: FixedOpponents | None):
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        game = config.game_config()
        enc = encoding_for(game)
        batch, steps, players = config.ppo.num_envs // count, config.ppo.num_steps, game.num_players
        codes = [POLICY_SEAT] + ([EXPLOITER_SEAT] if config.opponents.exploiter else [])
        learners = {
            code: Learner(
                ActorCritic.from_spec(game, config.model),
                config.ppo.learning_rate,
                batch * steps + batch * players,
                batch,
                players,
                enc.observation.size,
                enc.num_actions,
            )
            for code in codes
        }
        self.index = index
        self.fixed = copy.deepcopy(fixed)
        for member, model in enumerate(self.fixed.models if self.fixed is not None else []):
            self.fixed.models[member] = _on_cpu(model)
        self._networks: dict[int, ActorCritic] = {}
        """The pool's snapshot networks by snapshot id (each fetched once)."""
        self.args = RolloutArgs(
            learners,
            Tables(config, game, batch, self.fixed),
            BatchedGames(game, batch_size=batch, seed=config.seed),
            [],
            list(config.opponents.baselines),
            self.fixed,
            torch.Generator().manual_seed(config.seed),
            np.random.default_rng(config.seed),
            torch.device("cpu"),
            steps,
            shared_reward=config.opponents.shared_reward,
        )
        self.step = None

    def pid(self) -> int:
        """The worker's process id."""
        return os.getpid()

    def play(self, message: Message, generators: tuple | None) -> ShardResult:
        """One rollout of this shard with the message's weights and opponents (and, for shard 0, the run's
        generators).
        """
        started, cpu_started = time.perf_counter(), time.process_time()
        args = self.args
        for code, weights in message.weights.items():
            args.learners[code].model.load_state_dict(weights)
        args.pool[:] = [Snapshot(i, update, self._network(i, net), source) for i, update, source, net in message.pool]
        self._networks = {snapshot.id: snapshot.model for snapshot in args.pool}  # (those that left the pool go)
        for index, weights in message.fixed.items():
            self.fixed.models[index].load_state_dict(weights)
        if generators is not None:
            set_generator_states(args.sampler, args.rng, generators)
        if message.segment_seed is not None:
            seed = shard_seed(message.segment_seed, self.index)
            if self.index > 0:  # (shard 0 plays on with the run's generators)
                streams = int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])
                args.sampler.manual_seed(streams)
                args.rng = np.random.default_rng(streams)
            self.step = start_segment(args, seed)
        self.step, outcomes = collect_rollout(args, self.step)
        rollouts = {code: rollout_arrays(learner.carry_over()) for code, learner in args.learners.items()}
        states = generator_states(args.sampler, args.rng) if self.index == 0 else None
        return ShardResult(rollouts, outcomes, states, time.perf_counter() - started, time.process_time() - cpu_started)

    def _network(self, snapshot_id: int, network: Any) -> ActorCritic:
        if snapshot_id not in self._networks:
            if not isinstance(network, torch.nn.Module):  # an object reference (on Ray)
                import ray

                network = ray.get(network)
            self._networks[snapshot_id] = network
        return self._networks[snapshot_id]


def rollout_arrays(rollout: Rollout) -> dict[str, Any]:
    """A finished rollout's decisions as plain arrays (what a worker returns)."""
    size = rollout.size
    arrays = {name: getattr(rollout, name)[:size].copy() for name in _COLUMNS}
    if rollout.window is not None:  # the move slots, as indices (a history window)
        arrays["window"] = rollout.window[:size].copy()
    arrays["blocks"] = np.asarray(rollout.blocks, np.int64).reshape(-1, 2)
    return arrays


def joined_rollout(parts: list[dict[str, Any]], obs_size: int, num_actions: int, window=None) -> Rollout:
    """The shards' decisions in shard order, as one rollout (each shard's successors and blocks moved by its offset).

    ``window`` is the learner's ``cockroach_env.window.WindowLayout`` where its model reads a history window: the
    rollout then holds each observation up to its move slots, and the slots as indices.
    """
    sizes = [len(part["action"]) for part in parts]
    joined = Rollout(max(sum(sizes), 1), obs_size, num_actions, window)
    columns = _COLUMNS + (("window",) if window is not None else ())
    offset = 0
    for part, size in zip(parts, sizes):
        for name in columns:
            getattr(joined, name)[offset : offset + size] = part[name]
        successor = joined.successor[offset : offset + size]
        successor[successor >= 0] += offset
        joined.blocks += [(int(start) + offset, int(stop) + offset) for start, stop in part["blocks"]]
        offset += size
    joined.size = offset
    return joined


class RolloutWorkers:
    """The learner's side of the rollout workers: sends each update's message, gathers the shards in order (replaying
    a restarted worker's segment), and fills the learners' rollouts.
    """

    def __init__(
        self,
        config: TrainConfig,
        learners: dict[int, Learner],
        pool: list[Snapshot],
        fixed: FixedOpponents | None,
        sampler: torch.Generator,
        rng: np.random.Generator,
    ):
        settings = config.distributed
        self.learners, self.pool, self.fixed, self.sampler, self.rng = learners, pool, fixed, sampler, rng
        enc = encoding_for(config.game_config())
        self.obs_size, self.num_actions = enc.observation.size, enc.num_actions
        self.ray = None
        self.started = False
        count = settings.workers
        if settings.address is None:
            self.workers = [Shard(config, k, count, fixed) for k in range(count)]
        else:
            self.ray, self.started = connect(settings.address, settings.local_cpus)
            cpus = int(self.ray.cluster_resources().get("CPU", 0))
            if cpus < count:
                print(
                    f"warning: distributed.workers={count} and the cluster at {settings.address!r} has {cpus} CPUs: "
                    f"{count - cpus} worker(s) wait until it has more (each takes one CPU)",
                    file=sys.stderr,
                )
            actor = self.ray.remote(num_cpus=1, max_restarts=settings.max_restarts, max_task_retries=0)(Shard)
            self.workers = [actor.remote(config, k, count, fixed) for k in range(count)]
        self.max_restarts = settings.max_restarts
        self._segment_seed: int | None = None
        self._log: list[tuple[Any, tuple | None]] = []
        """The current segment's messages, with shard 0's generator states of each: what a restarted worker replays."""
        self._in_flight: list[Any] | None = None
        self._snapshots: dict[int, Any] = {}
        self._sent_fixed: list[dict[str, torch.Tensor]] | None = None
        self.broadcast_bytes = 0
        """Bytes of the last message's weights (the learners' and the changed fixed opponents')."""
        self.replays = 0
        """Replays of a shard's segment begun after its worker died (one more each time the restarting worker was not
        back yet)."""
        self._replaying: tuple[int, int] | None = None
        self.worker_seconds: list[float] = []
        """Each worker's seconds of play in the last rollout."""
        self.worker_cpu_seconds: list[float] = []
        """Each worker's CPU seconds in the last rollout."""

    def __enter__(self) -> RolloutWorkers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def new_segment(self, segment_seed: int) -> None:
        """The next rollout starts a checkpoint segment: its games restart from ``segment_seed``."""
        self._segment_seed = segment_seed
        self._log = []
        self._sent_fixed = None

    def collect(self) -> dict[str, list[int]]:
        """The rollout (sent now, unless ``send`` already did): the learners' rollouts are the shards' decisions, the
        run's generators are advanced as shard 0 advanced them; returns the outcomes per table kind.
        """
        if self._in_flight is None:
            self.send()
        calls, self._in_flight = self._in_flight, None
        results = [self._result(k, call) for k, call in enumerate(calls)]
        set_generator_states(self.sampler, self.rng, results[0].generators)
        for code, learner in self.learners.items():
            learner.restart()
            learner.rollout = joined_rollout(
                [r.rollouts[code] for r in results], self.obs_size, self.num_actions, learner.model.window
            )
        self.worker_seconds = [r.seconds for r in results]
        self.worker_cpu_seconds = [r.cpu_seconds for r in results]
        outcomes = {kind: [0, 0, 0] for kind in results[0].outcomes}
        for result in results:
            for kind, counts in result.outcomes.items():
                outcomes[kind] = [a + b for a, b in zip(outcomes[kind], counts)]
        return outcomes

    def send(self) -> None:
        """Send the next rollout's message with the current weights, pool and opponents (``ppo.overlap``: before the
        update, which then runs while the workers play).
        """
        message = Message(
            {code: _cpu_state(learner.model) for code, learner in self.learners.items()},
            [(s.id, s.update, s.source, self._snapshot(s)) for s in self.pool],
            self._changed_fixed(),
            self._segment_seed,
        )
        self._segment_seed = None
        tensors = [*message.weights.values(), *message.fixed.values()]
        self.broadcast_bytes = sum(t.numel() * t.element_size() for sd in tensors for t in sd.values())
        sent = self.ray.put(message) if self.ray is not None else message
        states = generator_states(self.sampler, self.rng)
        self._log.append((sent, states))
        self._in_flight = [self._call(k, sent, states) for k in range(len(self.workers))]

    def close(self) -> None:
        if self.ray is not None:
            for worker in self.workers:
                self.ray.kill(worker, no_restart=True)
            if self.started:
                self.ray.shutdown()
            self.ray = None

    def _call(self, k: int, message: Any, states: tuple) -> Any:
        generators = states if k == 0 else None
        if self.ray is None:
            return self.workers[k].play(message, generators)
        return self.workers[k].play.remote(message, generators)

    def _result(self, k: int, call: Any) -> ShardResult:
        """Worker ``k``'s result; if it died, its replay of the segment's messages once Ray has restarted it."""
        if self.ray is None:
            return call
        exceptions = self.ray.exceptions
        deaths, deadline = 0, time.monotonic() + RESTART_TIMEOUT
        while True:
            try:
                return self.ray.get(call)
            except exceptions.ActorUnavailableError:  # (killed, or restarting: the replay waits for it)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"rollout worker {k} was not back {RESTART_TIMEOUT} s after it died") from None
                time.sleep(0.2)
            except exceptions.RayActorError as error:
                deaths += 1
                if deaths > self.max_restarts:
                    raise RuntimeError(
                        f"rollout worker {k} died {deaths} times in one update (distributed.max_restarts="
                        f"{self.max_restarts}): {cut(error)}"
                    ) from None
            if not self.replays or self._replaying != (k, len(self._log)):
                print(
                    f"rollout worker {k} died; Ray restarts it and it replays the {len(self._log)} rollout(s) of this "
                    "segment",
                    file=sys.stderr,
                )
            self.replays += 1
            self._replaying = (k, len(self._log))
            calls = [self._call(k, message, states) for message, states in self._log]
            call = calls[-1]  # (the earlier calls only rebuild the shard's games; their results are not read)

    def _snapshot(self, snapshot: Snapshot) -> Any:
        """The snapshot's network as sent: on Ray, put once when it joins the pool."""
        if snapshot.id not in self._snapshots:
            self._snapshots = {i: r for i, r in self._snapshots.items() if i in {s.id for s in self.pool}}
            network = _on_cpu(snapshot.model)
            self._snapshots[snapshot.id] = self.ray.put(network) if self.ray is not None else network
        return self._snapshots[snapshot.id]

    def _changed_fixed(self) -> dict[int, dict[str, torch.Tensor]]:
        """The fixed opponents' weights that changed since the last message (all of them at a segment's start)."""
        if self.fixed is None:
            return {}
        now = [_cpu_state(model) for model in self.fixed.models]
        sent = self._sent_fixed
        changed = {
            i: weights
            for i, weights in enumerate(now)
            if sent is None or any(not torch.equal(weights[k], sent[i][k]) for k in weights)
        }
        self._sent_fixed = now
        return changed


def _on_cpu(model: ActorCritic) -> ActorCritic:
    """``model``, or a copy of it on the CPU (the workers play on their CPUs)."""
    on_cpu = all(p.device.type == "cpu" for p in model.parameters())
    return model if on_cpu else copy.deepcopy(model).to("cpu")


def _cpu_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A copy of ``model``'s state dict on the CPU (the weights a message carries)."""
    return {key: value.detach().to("cpu", copy=True) for key, value in model.state_dict().items()}
