"""A PPO rollout on the batched engine: every game plays ``num_steps`` decisions at its drawn table.

The learners' decisions (``Learner.act``) are recorded as their samples; the baselines, the pool's snapshots and the
fixed populations (``training.core.opponents``) play the other seats. A finished game pays its rewards to the learners
(the policy's seats shared with ``opponents.shared_reward``), counts in the outcomes of its table kind, and draws its
next table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

import baselines
from cockroach_env.batched import BatchedGames, random_legal_actions
from cockroach_env.config import GameConfig
from training.core.learner import Learner
from training.core.opponents import POLICY_SEAT, POPULATION_SEAT, FixedOpponents, Snapshot, Tables
from training.core.stacked import PoolSampler


@dataclass
class RolloutArgs:
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
    pool_sampler: PoolSampler = field(default_factory=PoolSampler)
    """Samples the pool's snapshots in one batched pass (keeps their stacked weights while the pool is unchanged)."""


def collect_rollout(args: RolloutArgs, step):
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
        snapshots, groups = [], []
        for who in np.unique(owner[owner > 0]):
            rows = np.flatnonzero(owner == who)
            if who <= len(args.baseline_names):
                actions[rows] = args.opponents[who].act_batch(step.observation[rows], step.action_mask[rows])
            else:
                snapshots.append(args.pool[who - 1 - len(args.baseline_names)].model)
                groups.append(rows)
        if snapshots:  # the pool's snapshots, in one batched pass
            chosen = args.pool_sampler.sample(
                snapshots, groups, step.observation, step.action_mask, step.window, args.sampler, args.device
            )
            for rows, part in zip(groups, chosen):
                actions[rows] = part
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
                baseline_index(args.baseline_names),
                snapshot_indices(args.pool, args.baseline_names),
            )
    return step, outcomes


def start_segment(args: RolloutArgs, seed: int):
    """A checkpoint segment starts: the games restart from ``seed``, the baseline opponents are made anew with seeds
    derived from it, the learners wait for nothing, and every game draws its table; returns the games' first step.
    """
    step = args.games.reset(seed=seed)
    game = args.games.config
    args.opponents = [None] + [baselines.make(name, game, seed=seed + i) for i, name in enumerate(args.baseline_names)]
    for learner in args.learners.values():
        learner.restart()
    args.tables.draw(
        np.arange(len(step.to_act)),
        args.rng,
        baseline_index(args.baseline_names),
        snapshot_indices(args.pool, args.baseline_names),
    )
    return step


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


def baseline_index(names: list[str]) -> dict[str, int]:
    """``{baseline name: its opponent index}`` (``Tables.owner`` code; index 0 is no opponent)."""
    return {name: 1 + i for i, name in enumerate(names)}


def snapshot_indices(pool: list[Snapshot], names: list[str]) -> list[int]:
    """The opponent index (``Tables.owner`` code) of each snapshot of ``pool``, after the baselines'."""
    return [1 + len(names) + i for i in range(len(pool))]


def compile_kernels(game: GameConfig, model, device) -> None:
    """One step of the batched engine, one draw of ``model`` and one decision of each compiled scripted baseline on a
    throwaway game, so that numba compiles (or loads from its cache) the kernels of this rule set before a run starts
    (no generator of the run is touched).
    """
    games = BatchedGames(game, batch_size=1, seed=0)
    step = games.reset()
    for name in ("heuristic", "honest", "bluffer"):
        baselines.make(name, game, seed=0).act_batch(step.observation, step.action_mask)
    games.step(random_legal_actions(step.action_mask, np.random.default_rng(0)))
    obs = torch.from_numpy(step.observation).to(device)
    mask = torch.from_numpy(step.action_mask.astype(bool)).to(device)
    model.sample(obs, mask, torch.Generator(device=device).manual_seed(0))
