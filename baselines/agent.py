"""The agent protocol: what everything that plays Cockroach Poker implements.

An agent is built for one ``GameConfig`` and is seat-independent (observations are
ego-centric, so the same object may play every seat). It owns a seeded
``numpy.random.Generator`` and always returns a legal action::

    agent = MyAgent(config, seed=0)
    action = agent.act({"observation": obs, "action_mask": mask})     # -> int
    actions = agent.act_batch(observations, masks)                   # (B, O), (B, A) -> (B,) int64
    probs = agent.action_probabilities({"observation": obs, "action_mask": mask})  # -> (A,) float64

``action_probabilities`` (and ``action_probabilities_batch``, ``(B, O), (B, A) -> (B, A)``)
is the exact distribution ``act`` samples from: zero off the mask, summing to 1. Exact
evaluation (``training.evaluation.exact``) and the OpenSpiel adapter use it.

``act_batch`` is optional in spirit: the base class provides one that loops over
``act``. Agents whose ``act_batch`` is genuinely vectorized set ``supports_batch =
True``; the arena then runs them on the batched engine. A vectorized ``act_batch``
must draw from the generator exactly as the same rows played one by one through
``act`` would, so that batched and one-at-a-time play agree move for move.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import numpy as np

try:  # optional: the compiled pick_uniform
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None

from cockroach_env.config import GameConfig
from cockroach_env.encoding import Encoding, encoding_for, keeps_moves, without_moves


@runtime_checkable
class AgentProtocol(Protocol):
    """Structural type of an agent (``Agent`` subclasses satisfy it; so may any object)."""

    name: str

    def act(self, observation: Mapping[str, np.ndarray]) -> int: ...


class Agent:
    """Base class of the baselines: config, encoding, seeded generator, a looping ``act_batch``."""

    name: str = "agent"
    supports_batch: bool = False
    """True when ``act_batch`` is vectorized (and equivalent to calling ``act`` row by row)."""

    def __init__(self, config: GameConfig, seed: int | None = None):
        if not isinstance(config, GameConfig):
            raise ValueError(f"config={config!r} is not allowed; expected a GameConfig")
        if seed is not None and (
            isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0
        ):
            raise ValueError(
                f"seed={seed!r} is not allowed; expected None or a non-negative integer (the agent's generator is "
                f"numpy.random.default_rng(seed))"
            )
        self.config = config
        self.encoding: Encoding = encoding_for(config)
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        """One legal action for the observation dict ``{"observation", "action_mask"}``."""
        if self.supports_batch and type(self).act_batch is not Agent.act_batch:
            obs = np.asarray(observation["observation"], dtype=np.float32)[None]
            mask = np.asarray(observation["action_mask"])[None]
            return int(self.act_batch(obs, mask)[0])
        raise NotImplementedError(f"{type(self).__name__} must implement act() or a vectorized act_batch()")

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Legal actions for a batch of observations ``(B, O)`` and masks ``(B, A)``; ``(B,)`` int64."""
        return np.array(
            [self.act({"observation": o, "action_mask": m}) for o, m in zip(observations, masks)],
            dtype=np.int64,
        ).reshape(len(observations))

    def action_probabilities(self, observation: Mapping[str, np.ndarray]) -> np.ndarray:
        """``(A,)`` float64: the probability that ``act`` picks each action (zero off the mask, summing to 1)."""
        obs = np.asarray(observation["observation"], dtype=np.float32)[None]
        mask = np.asarray(observation["action_mask"])[None]
        return self.action_probabilities_batch(obs, mask)[0]

    def action_probabilities_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``(B, A)`` float64: ``action_probabilities`` of each row (exact evaluation calls this once for a whole
        game tree).
        """
        raise NotImplementedError(f"{type(self).__name__} does not define its action probabilities")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, {self.config.num_players}p {self.config.edition})"


class LogitsAgent(Agent):
    """An agent whose policy scores every action (``logits``): trained networks of any library.

    ``act_batch`` samples the masked softmax by Gumbel-max with the agent's own generator
    (one draw per row and action, so a batch plays exactly like its rows one by one), or
    plays the most likely legal action when ``greedy``; ``action_probabilities_batch`` is
    that same distribution. Subclasses give ``logits(observations, masks) -> (B, A)``.
    """

    supports_batch = True
    greedy: bool = False

    def logits(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``(B, A)`` scores of every action for float32 ``observations`` and bool ``masks``."""
        raise NotImplementedError(f"{type(self).__name__} must implement logits()")

    def _legal_rows(self, masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(masks).astype(bool, copy=False)
        if not masks.any(axis=1).all():
            bad = int(np.flatnonzero(~masks.any(axis=1))[0])
            raise ValueError(
                f"{self.name}: the action mask of row {bad} allows no action; expected at least one legal action"
            )
        return masks

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        masks = self._legal_rows(masks)
        logits = self.logits(np.asarray(observations, np.float32), masks)
        if not self.greedy:
            logits = logits - np.log(-np.log(self.rng.random(logits.shape).clip(1e-20)))  # Gumbel-max sampling
        return np.argmax(np.where(masks, logits, -np.inf), axis=1).astype(np.int64)

    def action_probabilities_batch(self, observations: np.ndarray, masks: np.ndarray, chunk: int = 65536) -> np.ndarray:
        """``(B, A)`` float64 masked softmax of the logits (one-hot on the most likely legal action when greedy), in
        chunks of ``chunk`` rows.
        """
        masks = self._legal_rows(masks)
        observations = np.asarray(observations, np.float32)
        out = np.zeros(masks.shape)
        for start in range(0, len(masks), chunk):
            rows = slice(start, start + chunk)
            logits = np.where(
                masks[rows], np.asarray(self.logits(observations[rows], masks[rows]), np.float64), -np.inf
            )
            if self.greedy:
                out[np.arange(start, start + len(logits)), logits.argmax(1)] = 1.0
            else:
                logits -= logits.max(1, keepdims=True)
                weights = np.exp(logits)
                out[rows] = weights / weights.sum(1, keepdims=True)
        return out


def uniform_over(allowed: np.ndarray) -> np.ndarray:
    """(B, K) float64: the distribution of ``pick_uniform(allowed, u)`` for uniform ``u`` (zero rows stay zero)."""
    allowed = np.asarray(allowed, dtype=np.float64)
    return allowed / np.maximum(allowed.sum(1, keepdims=True), 1.0)


def pick_uniform(allowed: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per row, the index of one ``True`` entry of ``allowed`` (B, K), chosen uniformly by ``u`` (B,) in [0, 1).

    Entry ``k`` of the row's allowed entries, in order, where ``k = floor(u * count)``;
    rows without any allowed entry give -1. One uniform per row, so a batch draws
    exactly what the same rows drawn one by one would. With numba, one compiled pass
    per row (``random``'s moves, the vector envs' opponents); without it, numpy
    (``_pick_uniform_numpy``, the reference a test compares it with).
    """
    allowed = np.ascontiguousarray(allowed, dtype=bool)
    u = np.ascontiguousarray(u, dtype=np.float64)
    if _pick_uniform_compiled is None:
        return _pick_uniform_numpy(allowed, u)
    out = np.empty(len(allowed), np.int64)
    _pick_uniform_compiled(allowed, u, out)
    return out


def _pick_uniform_numpy(allowed: np.ndarray, u: np.ndarray) -> np.ndarray:
    counts = allowed.sum(1)
    k = np.minimum((u * counts).astype(np.int64), np.maximum(counts - 1, 0))
    ranks = np.cumsum(allowed, axis=1) - 1
    hit = allowed & (ranks == k[:, None])
    return np.where(counts > 0, hit.argmax(1), -1)


def _pick_uniform_rows(allowed, u, out):
    for b in range(allowed.shape[0]):
        count = 0
        for j in range(allowed.shape[1]):
            count += allowed[b, j]
        out[b] = -1
        if count == 0:
            continue
        k = min(np.int64(u[b] * count), count - 1)
        for j in range(allowed.shape[1]):
            if allowed[b, j]:
                if k == 0:
                    out[b] = j
                    break
                k -= 1


_pick_uniform_compiled = numba.njit(cache=True)(_pick_uniform_rows) if numba is not None else None


class RecallPrefixAgent:
    """An agent built for a rule set without ``recall`` or ``history`` playing at the same table with one of them.

    The recall segments (a window's too) come after every other segment
    (``cockroach_env.encoding``), so the observation without them is the first
    ``encoding_for(agent.config).observation.size`` entries of the one with them: this
    wrapper passes the agent that prefix, and nothing of the moves. ``config`` is the
    table's (recall or history) config; everything else is the agent's.
    """

    def __init__(self, agent, config: GameConfig):
        trained = getattr(agent, "config", None)
        if (
            not isinstance(config, GameConfig)
            or not keeps_moves(config)
            or not isinstance(trained, GameConfig)
            or keeps_moves(trained)
            or without_moves(config) != trained
        ):
            raise ValueError(
                "RecallPrefixAgent plays an agent of a rule set without recall or history at the same rule set with "
                f"recall=True or history=K; got the agent's {trained!r} and the table's {config!r}"
            )
        self.agent = agent
        self.config = config
        self.name = getattr(agent, "name", type(agent).__name__)
        self.supports_batch = bool(getattr(agent, "supports_batch", False))
        self.size = encoding_for(trained).observation.size

    def _prefix(self, observation: Mapping[str, np.ndarray]) -> dict:
        return {**observation, "observation": np.asarray(observation["observation"])[..., : self.size]}

    def act(self, observation: Mapping[str, np.ndarray]) -> int:
        return int(self.agent.act(self._prefix(observation)))

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return self.agent.act_batch(np.ascontiguousarray(np.asarray(observations)[:, : self.size]), masks)

    def action_probabilities(self, observation: Mapping[str, np.ndarray]) -> np.ndarray:
        return self.agent.action_probabilities(self._prefix(observation))

    def action_probabilities_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return self.agent.action_probabilities_batch(
            np.ascontiguousarray(np.asarray(observations)[:, : self.size]), masks
        )

    @property
    def rng(self):
        """The wrapped agent's generator: reseeding the wrapper (``agent.rng = ...``) reseeds the agent that plays."""
        return self.agent.rng

    @rng.setter
    def rng(self, value) -> None:
        self.agent.rng = value

    def __getattr__(self, name: str):
        return getattr(self.__dict__["agent"], name)  # greedy, model, ... of the wrapped agent

    def __repr__(self) -> str:
        return f"RecallPrefixAgent({self.agent!r})"
