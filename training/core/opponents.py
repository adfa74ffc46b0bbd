"""Who sits at a training table: the opponent kinds, the pool's snapshots, fixed populations and the tables.

Each game of a PPO rollout draws its table when it starts (``Tables.draw``), with the weights of
``config.opponents``: the kinds ``self``, ``snapshot``, ``exploiter``, ``population``, each baseline and each
``opponents.checkpoints`` entry (``checkpoint_kind``). ``Tables.owner[b, s]`` codes who plays seat ``s`` of game
``b``: ``POLICY_SEAT``, ``EXPLOITER_SEAT``, an opponent index (>= 1: a baseline, then the snapshots of the pool), or
a member of a fixed population (``POPULATION_SEAT - m``, ``FixedOpponents``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from cockroach_env.config import GameConfig
from training.core import checkpoint as ckpt
from training.core.config import TrainConfig
from training.core.learner import frozen_copy
from training.core.model import ActorCritic

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


class SnapshotCounters(Protocol):
    """The counters of a run that the snapshot pool moves (``training.core.runs.Progress`` has them)."""

    update: int
    next_snapshot_id: int
    pool_games: int
    pool_losses: int


@dataclass
class Snapshot:
    """A frozen past policy in the opponent pool."""

    id: int
    update: int
    model: ActorCritic
    source: str = "policy"
    """``policy`` (a past policy) or ``exploiter`` (an exploiter's weights before a reset)."""


def add_snapshot(
    pool: list[Snapshot], state: SnapshotCounters, model: ActorCritic, config: TrainConfig, source: str = "policy"
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
    alone) and its record (resolved metadata path, tensor sha256). ``CheckpointError`` names the entry that fails to
    load or was trained for other rules.
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
