"""Warm start by imitation: behaviour cloning and DAgger of a teacher, on the batched engine.

A fresh network plays its first self-play games at random, and self-play from random
play takes many updates to rediscover what a scripted player already knows (count the
cards, believe an honest table, call the cards a seat cannot hide). A warm start copies
such a player first, then hands the network to the run's algorithm:

1. **Collect.** The teacher (a baseline name, a checkpoint path or a shipped agent's
   name) plays every seat of ``BatchedGames`` tables; each decision keeps its mover's
   observation, its legal-action mask, the teacher's action probabilities there
   (``action_probabilities_batch``: the whole distribution, not only the action drawn)
   and, once the game ends, the mover's final reward.
2. **Fit.** The network's masked policy is fitted to the teacher's distributions
   (cross-entropy), and its value head to the rewards (mean squared error), so that
   PPO's first advantages are not measured against a random critic.
3. **DAgger** (``rounds`` > 1): the fitted network plays the tables itself, the teacher
   labels the states the network reaches, the new decisions join the old ones and the
   network is fitted again (Ross, Gordon and Bagnell, 2011). Cloning alone learns only
   the states the teacher visits; DAgger also those its own mistakes lead to.

Everything is seeded from the run's seed, so a run repeats its warm start exactly; the
run's first checkpoint is written right after it, so a resumed run never repeats it.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from cockroach_env.batched import BatchedGames
from cockroach_env.config import GameConfig
from training.core.config import ConfigError
from training.core.learner import NonFiniteUpdate, check_finite_weights
from training.core.model import mask_bias
from training.core.rollout_workers import shard_seed

REPORT_KEYS = ("teacher", "decisions", "rounds", "epochs", "policy_loss", "teacher_entropy", "value_loss", "agreement")
"""The keys of the record a warm start leaves in the run's metadata."""


@dataclass
class Demonstrations:
    """Decisions labelled by the teacher: observations, masks, the teacher's probabilities, the mover's final reward."""

    obs: np.ndarray
    mask: np.ndarray
    probabilities: np.ndarray
    reward: np.ndarray

    def __len__(self) -> int:
        return len(self.reward)

    @staticmethod
    def concatenate(parts: list[Demonstrations]) -> Demonstrations:
        """The decisions of every part, in order."""
        return Demonstrations(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in ("obs", "mask", "probabilities", "reward"))
        )


def collect(
    game: GameConfig,
    teacher,
    decisions: int,
    num_envs: int,
    seed: int,
    player: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Demonstrations:
    """At least ``decisions`` teacher-labelled decisions of finished games (every seat's).

    ``player(observations, masks) -> actions`` chooses the moves (default: a draw from
    the teacher's probabilities); the teacher labels every decision either way.
    ``progress(n)`` is called after each step with the decisions of the games it finished.
    """
    games = BatchedGames(game, batch_size=num_envs, seed=seed)
    rng = np.random.default_rng([seed, 1])
    step = games.reset()
    n = game.num_players
    chunks: list[tuple[np.ndarray, ...]] = []
    game_of: list[np.ndarray] = []
    seat_of: list[np.ndarray] = []
    episode = np.arange(num_envs)  # the episode each game is playing
    next_episode = num_envs
    length = np.zeros(num_envs, np.int64)  # decisions of each game's current episode
    rewards: dict[int, np.ndarray] = {}
    kept = 0  # decisions of finished episodes
    while kept < decisions:
        obs, mask = step.observation.copy(), step.action_mask.astype(bool)
        probabilities = np.asarray(teacher.action_probabilities_batch(obs, mask), np.float32)
        if player is None:
            cumulative = np.cumsum(probabilities, axis=1)
            draw = rng.random(num_envs)[:, None] * cumulative[:, -1:]
            actions = np.minimum((cumulative <= draw).sum(axis=1), mask.shape[1] - 1)
        else:
            actions = np.asarray(player(obs, mask), np.int64)
        chunks.append((obs, mask, probabilities))
        game_of.append(episode.copy())
        seat_of.append(step.to_act.astype(np.int64))
        step = games.step(actions)
        length += 1
        finished = np.flatnonzero(step.done)
        for g in finished:
            rewards[int(episode[g])] = step.rewards[g].astype(np.float32)
        newly_kept = int(length[finished].sum())
        kept += newly_kept
        length[finished] = 0
        episode[finished] = np.arange(next_episode, next_episode + len(finished))
        next_episode += len(finished)
        if progress is not None:
            progress(newly_kept)
    episodes = np.concatenate(game_of)
    seats = np.concatenate(seat_of)
    done = np.array([int(e) in rewards for e in episodes])
    obs, mask, probabilities = (np.concatenate([c[i] for c in chunks])[done] for i in range(3))
    table = np.zeros((next_episode, n), np.float32)
    for e, r in rewards.items():
        table[e] = r
    reward = table[episodes[done], seats[done]]
    return Demonstrations(obs, mask, probabilities, reward)


def fit(
    model,
    demonstrations: Demonstrations,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    seed: int,
    device,
    progress: Callable[[int], None] | None = None,
) -> dict[str, float]:
    """Fit ``model``'s policy to the teacher's probabilities and its value to the rewards; the last epoch's mean losses.

    ``policy_loss`` is the cross-entropy, ``teacher_entropy`` its floor (the teacher's
    own entropy), ``agreement`` the share of decisions where the network's most likely
    action is one the teacher plays with the highest probability.
    """
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    obs = torch.from_numpy(demonstrations.obs)
    bias = mask_bias(torch.from_numpy(demonstrations.mask))
    target = torch.from_numpy(demonstrations.probabilities)
    reward = torch.from_numpy(demonstrations.reward)
    with torch.no_grad():
        inputs = model.network_inputs(obs.to(device)).cpu()
    best = target.max(dim=1, keepdim=True).values
    teacher_entropy = float(-(target * torch.log(target.clamp_min(1e-12))).sum(1).mean())
    total = len(reward)
    stats = {}
    for _ in range(epochs):
        order = torch.randperm(total, generator=generator)
        sums = np.zeros(3)
        for start in range(0, total, batch_size):
            rows = order[start : start + batch_size]
            logits, value = model.heads(inputs[rows].to(device))
            log_policy = torch.log_softmax(logits + bias[rows].to(device), dim=-1)
            p = target[rows].to(device)
            policy_loss = -(p * log_policy.clamp_min(-1e4)).sum(1).mean()
            value_loss = ((value - reward[rows].to(device)) ** 2).mean()
            loss = policy_loss + 0.5 * value_loss
            if not bool(torch.isfinite(loss)):
                raise NonFiniteUpdate(
                    f"the warm start's loss (policy_loss {policy_loss.item()}, value_loss {value_loss.item()})",
                    ["warm_start.learning_rate"],
                )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                agree = (p.gather(1, log_policy.argmax(1, keepdim=True)) >= best[rows].to(device) - 1e-6).float().mean()
            sums += np.array([policy_loss.item(), value_loss.item(), agree.item()]) * len(rows)
            if progress is not None:
                progress(len(rows))
        check_finite_weights(model, ["warm_start.learning_rate"])
        stats = {
            "policy_loss": sums[0] / total,
            "teacher_entropy": teacher_entropy,
            "value_loss": sums[1] / total,
            "agreement": sums[2] / total,
        }
    return {k: round(float(v), 5) for k, v in stats.items()}


def learner_player(model, device, seed: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``(observations, masks) -> actions`` drawn from ``model``'s masked policy (DAgger's rounds after the first)."""
    generator = torch.Generator(device=device).manual_seed(seed)

    def play(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            action, _, _ = model.sample(torch.from_numpy(obs).to(device), torch.from_numpy(mask).to(device), generator)
        return action.cpu().numpy()

    return play


def resolve_teacher(config):
    """The agent ``config.warm_start.teacher`` names (None without a warm start); ``ConfigError`` if it cannot teach."""
    from training.evaluation.lineup import ArenaError, resolve_agent

    name = config.warm_start.teacher
    if name is None:
        return None
    try:
        teacher = resolve_agent(name, config.game_config(), seed=config.seed)
    except ArenaError as error:
        raise ConfigError(f"warm_start.teacher: {error}") from None
    if not _gives_probabilities(teacher, config.game_config()):
        raise ConfigError(
            f"warm_start.teacher={name!r} does not give its action probabilities (action_probabilities_batch); "
            "expected a baseline, a checkpoint, or an agent that gives them"
        )
    return teacher


def _gives_probabilities(teacher, game: GameConfig) -> bool:
    """Whether ``teacher.action_probabilities_batch`` answers for the first decision of a game (the rules engine's:
    the batched engine may not be compiled yet).
    """
    import cockroach_env

    table = cockroach_env.raw_env(config=game)
    table.reset(seed=0)
    observation = table.observe(table.agent_selection)
    obs = np.asarray(observation["observation"], np.float32)[None]
    mask = np.asarray(observation["action_mask"]).astype(bool)[None]
    try:
        probabilities = np.asarray(teacher.action_probabilities_batch(obs, mask), np.float64)
    except (NotImplementedError, AttributeError, TypeError):
        return False
    return probabilities.shape == mask.shape and bool(np.isclose(probabilities.sum(), 1.0))


class _Stopped(Exception):
    """A stop was requested (a signal) during the warm start."""


def collect_on_workers(
    workers, count: int, game: GameConfig, teacher, decisions: int, num_envs: int, seed: int, model, player_seed: int
) -> Demonstrations:
    """``collect`` split over ``count`` shards run by ``workers`` (a ``training.core.distributed`` executor: the
    rollout workers' cluster, or this process), joined in shard order. Shard ``k`` plays ``num_envs / count`` of the
    games (the first ones one more where it does not divide) for ``decisions / count`` decisions, from ``seed`` itself
    for shard 0 and a seed derived from it and ``k`` for the others; ``model`` (None: the teacher plays) draws with
    ``player_seed`` likewise. One shard is ``collect`` itself.
    """
    network = None if model is None else copy.deepcopy(model).to("cpu")
    jobs = [
        (
            game,
            teacher,
            math.ceil(decisions / count),
            max(num_envs // count + (k < num_envs % count), 1),
            shard_seed(seed, k),
            network,
            shard_seed(player_seed, k),
        )
        for k in range(count)
    ]
    return Demonstrations.concatenate(workers.map(_collect_shard, jobs))


def _collect_shard(game, teacher, decisions, num_envs, seed, network, player_seed) -> Demonstrations:
    """One shard's ``collect`` (a module-level function: it runs as a Ray task). The teacher is a copy: its arrays
    are writable even where Ray handed them over read-only, and the caller's teacher stays as it was.
    """
    player = None if network is None else learner_player(network, torch.device("cpu"), player_seed)
    return collect(game, copy.deepcopy(teacher), decisions, num_envs, seed, player)


def warm_start(
    model, game: GameConfig, teacher, settings, seed: int, device, bar=None, stop_requested=None, workers=None, count=1
) -> dict | None:
    """Imitate ``teacher`` into ``model`` (in place) with ``settings`` (a ``WarmStartConfig``); the record for the
    run's metadata, or None if ``stop_requested()`` turned true before the end (the model is then half-fitted).

    ``bar``: a tqdm bar over ``settings.decisions``, advanced as decisions are collected; its description names the
    step (the teacher playing, a DAgger round, the fit). ``workers``: an executor that plays the teacher's (and
    DAgger's) games in ``count`` shards (``collect_on_workers``; the run's rollout workers); None: here.
    """
    rounds = settings.rounds
    per_round = math.ceil(settings.decisions / rounds)
    parts: list[Demonstrations] = []
    stats: dict[str, float] = {}

    def check(_: int) -> None:
        if stop_requested is not None and stop_requested():
            raise _Stopped

    def advance(n: int) -> None:
        check(n)
        if bar is not None:
            bar.update(n)

    def describe(text: str) -> None:
        if bar is not None:
            bar.set_description(text)

    try:
        for round_ in range(rounds):
            describe(
                f"warm start: {settings.teacher} plays" if round_ == 0 else f"warm start: DAgger {round_ + 1}/{rounds}"
            )
            round_seed = seed + 1000 * round_
            if workers is None:
                player = None if round_ == 0 else learner_player(model, device, seed + round_)
                parts.append(collect(game, teacher, per_round, settings.num_envs, round_seed, player, advance))
            else:
                player_model = None if round_ == 0 else model
                parts.append(
                    collect_on_workers(
                        workers, count, game, teacher, per_round, settings.num_envs, round_seed, player_model,
                        seed + round_,
                    )
                )  # fmt: skip
                advance(len(parts[-1]))
            demonstrations = Demonstrations.concatenate(parts)
            describe(f"warm start: fitting {len(demonstrations):,} decisions")
            stats = fit(
                model, demonstrations, settings.epochs, settings.batch_size, settings.learning_rate, seed + round_,
                device, check,
            )  # fmt: skip
    except _Stopped:
        return None
    return {
        "teacher": settings.teacher,
        "decisions": int(sum(len(p) for p in parts)),
        "rounds": rounds,
        "epochs": settings.epochs,
        **stats,
    }
