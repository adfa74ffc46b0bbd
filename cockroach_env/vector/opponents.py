"""The opponents of the vector envs: names resolved through agent plugins, and one vectorised move per seat group.

Agent plugins are entry points of the group ``cockroach_poker.agents`` (``GROUP``). Each
is a callable ``resolve(spec, config=GameConfig, seed=int | None) -> agent`` that raises
``ValueError`` (or ``LookupError``, ``ImportError``, ``OSError``) for a spec it does not
know. The project registers two in ``pyproject.toml``::

    [project.entry-points."cockroach_poker.agents"]
    baselines = "baselines.registry:make"             # "random", "heuristic", ...
    checkpoints = "training:load_agent"               # a checkpoint path or a shipped name

so this package names neither ``baselines`` nor ``training``: a name is tried on every
plugin in the order of their names, the first agent returned wins, and a name no plugin
knows is refused with every plugin's answer (the baselines' answer lists their names).
An install made before the entry points existed needs ``pip install -e .`` again to
register them.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.encoding import encoding_for, keeps_moves, observation_option, without_moves

GROUP = "cockroach_poker.agents"
PROJECT = "cockroach-poker-rl"


def agent_sources() -> dict[str, EntryPoint]:
    """``{name: entry point}`` of every installed agent plugin, in the order of their names."""
    return dict(sorted((point.name, point) for point in entry_points(group=GROUP)))


def resolve_agent(spec: str, config: GameConfig | None, seed: int | None = None) -> Any:
    """The agent a name or path stands for, built for ``config`` (None: the rules it was made for, a checkpoint's);
    ``ValueError`` listing every plugin's answer.
    """
    answers = []
    for name, point in agent_sources().items():
        try:
            resolver: Callable[..., Any] = point.load()
            return resolver(spec, config=config, seed=seed)
        except (ValueError, LookupError, ImportError, OSError) as error:
            answers.append(f"{name}: {error}")
    known = "; ".join(answers) if answers else f"no agent plugin is installed (entry point group {GROUP!r})"
    raise ValueError(
        f"opponent {spec!r} is not a known agent; expected a baseline name, a checkpoint path or shipped "
        f"checkpoint name, or an agent object ({known})"
    )


def is_mixture(agent: Any) -> bool:
    """An agent that draws one of its ``members`` per game with ``weights`` (``training.core.mixture.MixtureAgent``)."""
    return isinstance(getattr(agent, "members", None), list) and getattr(agent, "weights", None) is not None


class Opponents:
    """A pool of agents for the seats the learner does not take, drawn per game and seat, moved in batches.

    ``opponents`` is one agent or name, or a list of them (each seat of each new game
    draws one uniformly). A name goes through ``resolve_agent``. An agent object must
    follow the agent protocol (``baselines.agent``) and be built for ``config``, or, at a
    table with a ``history`` window, for the same rules without it: it is then handed the
    observations without the window (their prefix, as ``baselines.agent.RecallPrefixAgent``
    does). An agent that sees a window (``history=K``) plays only at a table with that
    window; elsewhere it is refused, naming the window to build the vector env with. A
    callable that is not an agent is a policy on batches (``BatchPolicy``). Agents and
    callables are used as they are, never copied: one whose weights the caller updates
    plays its current weights at the next step.
    """

    def __init__(self, opponents: Any, config: GameConfig):
        self.config = config
        entries = list(opponents) if isinstance(opponents, (list, tuple)) else [opponents]
        if not entries:
            raise ValueError("opponents=[] is not allowed; expected an agent, a name, or a non-empty list of them")
        self.pool: list[Any] = []
        self._sizes: list[int | None] = []
        """Per pooled agent: the observation prefix it reads (an agent without the table's window), or None."""
        for index, entry in enumerate(entries):
            agent = self._resolved(entry, index) if isinstance(entry, str) else entry
            self.pool.append(self._checked(agent, entry, index))
        self.names = [_name(agent) for agent in self.pool]
        self._single = len(self.pool) == 1 and not is_mixture(self.pool[0])
        self._stride = 1 + max((len(a.members) for a in self.pool if is_mixture(a)), default=0)

    def _resolved(self, entry: str, index: int) -> Any:
        """The agent a name stands for at this table; an agent that sees a window the table lacks is named as such."""
        try:
            return resolve_agent(entry, self.config)
        except ValueError as refusal:
            try:  # refused for these rules: is it an agent of these rules with another window of moves?
                own = getattr(resolve_agent(entry, None), "config", None)
            except ValueError:
                own = None
            if isinstance(own, GameConfig) and keeps_moves(own) and without_moves(own) == without_moves(self.config):
                raise ValueError(self._window_refusal(f"opponents[{index}] ({entry!r})", own)) from None
            raise refusal

    def _window_refusal(self, label: str, built_for: GameConfig) -> str:
        option, table = observation_option(built_for), observation_option(self.config)
        if built_for.recall:
            return (
                f"{label} was trained with recall=True: it sees every move of the game, which the vector envs do not "
                "support; expected an agent without recall or with a history=K window (play it in cockroach_env.env "
                "or cockroach_env.batched.BatchedGames)"
            )
        return (
            f"{label} was trained with {option}: it sees a window of the game's moves that "
            f"{f'these games do not have ({table})' if table else 'these games do not have'}; "
            f"build the vector env with {option} (SelfPlayVectorEnv(..., {option}), "
            f"MaskedSelfPlayVecEnv(..., {option}), BatchedCockroachEnv(..., {option}) or GameConfig(..., {option}))"
        )

    def _checked(self, agent: Any, entry: Any, index: int) -> Any:
        label = f"opponents[{index}] ({entry!r})"
        if isinstance(agent, type):
            raise ValueError(f"{label} is a class, not an agent; expected an instance built for the game's GameConfig")
        if not callable(getattr(agent, "act", None)) and not callable(getattr(agent, "act_batch", None)):
            if not callable(agent):
                raise ValueError(
                    f"{label} is not an agent; expected an object with act_batch(observations, masks) or "
                    "act(observation), or a callable policy(observations, masks) -> actions"
                )
            agent = BatchPolicy(agent)
        built_for = getattr(agent, "config", None)
        size = None
        if isinstance(built_for, GameConfig) and built_for != self.config:
            if without_moves(built_for) != without_moves(self.config):
                raise ValueError(f"{label} was built for {built_for}, but these games are {self.config}")
            if keeps_moves(built_for):
                raise ValueError(self._window_refusal(label, built_for))
            size = encoding_for(built_for).observation.size  # the same rules without the window: the prefix
        self._sizes.append(size)
        return agent

    def reseed(self, seed: int) -> None:
        """Give every pooled agent that owns a ``numpy.random.Generator`` as ``rng`` one derived from ``seed``."""
        for k, agent in enumerate(self.pool):
            if isinstance(getattr(agent, "rng", None), np.random.Generator):
                agent.rng = np.random.default_rng([seed, 7919, k])

    def draw(self, rng: np.random.Generator, games: int, seats: int) -> tuple[np.ndarray, np.ndarray]:
        """``(entrant, member)``, both ``(games, seats)`` int64: each seat's pooled agent and mixture member (or -1)."""
        entrant = rng.integers(len(self.pool), size=(games, seats)) if len(self.pool) > 1 else np.zeros((games, seats))
        entrant = entrant.astype(np.int64)
        member = np.full((games, seats), -1, np.int64)
        for k, agent in enumerate(self.pool):
            if is_mixture(agent):
                mine = entrant == k
                weights = np.asarray(agent.weights, np.float64)
                member[mine] = rng.choice(len(agent.members), size=int(mine.sum()), p=weights / weights.sum())
        return entrant, member

    @property
    def single(self) -> bool:
        """One agent (not a mixture) plays every seat: ``act_single`` moves all rows, whoever sits where."""
        return self._single

    def act_single(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``act`` of a ``single`` table: one batch call, without the seats' (agent, member) draws."""
        return self._checked_batch(0, self.pool[0], observations, masks)

    def act(self, entrant: np.ndarray, member: np.ndarray, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """One action per row: each (agent, member) group moves in one batch call (the engine checks legality)."""
        if self._single:
            return self._checked_batch(0, self.pool[0], observations, masks)
        actions = np.zeros(len(entrant), np.int64)
        key = entrant * self._stride + member + 1
        for group in np.unique(key):
            rows = np.flatnonzero(key == group)
            k, m = int(entrant[rows[0]]), int(member[rows[0]])
            agent = self.pool[k] if m < 0 else self.pool[k].members[m]
            actions[rows] = self._checked_batch(k, agent, observations[rows], masks[rows])
        return actions

    def _checked_batch(self, k: int, agent: Any, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if self._sizes[k] is not None:
            observations = np.ascontiguousarray(observations[:, : self._sizes[k]])
        chosen = np.asarray(_act_batch(agent, observations, masks))
        if chosen.shape != (len(masks),) or chosen.dtype.kind not in "iu":
            raise ValueError(
                f"opponent {self.names[k]} returned {chosen!r} for {len(masks)} observations; "
                f"expected ({len(masks)},) integers"
            )
        return chosen

    def name_of(self, entrant: int, member: int) -> str:
        """The opponent's name (and its mixture member's) for messages."""
        agent = self.pool[entrant]
        if member < 0:
            return self.names[entrant]
        return f"{self.names[entrant]} (member {_name(agent.members[member])})"


class BatchPolicy:
    """A callable ``policy(observations, masks) -> actions`` as an opponent: one call per batch of rows.

    ``observations`` is ``(k, O)`` float32 and ``masks`` ``(k, A)`` int8 (the seats to act in ``k`` games); it
    returns ``k`` integer actions (a numpy array, a list or a CPU tensor), each one its mask allows. The
    callable is called as it is at every step, so a policy whose weights change during training plays its
    current weights.
    """

    supports_batch = True

    def __init__(self, policy: Callable[[np.ndarray, np.ndarray], Any]):
        self.policy = policy
        self.name = getattr(policy, "__name__", None) or type(policy).__name__

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return np.asarray(self.policy(observations, masks))

    def act(self, observation: dict[str, np.ndarray]) -> int:
        return int(self.act_batch(observation["observation"][None], observation["action_mask"][None])[0])


def _act_batch(agent: Any, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The agent's vectorised move: ``act_batch`` if vectorised, else a draw from ``action_probabilities_batch``."""
    if getattr(agent, "supports_batch", False) and callable(getattr(agent, "act_batch", None)):
        return agent.act_batch(observations, masks)
    probabilities = getattr(agent, "action_probabilities_batch", None)
    if callable(probabilities):
        try:
            p = np.asarray(probabilities(observations, masks), np.float64)
        except NotImplementedError:
            p = None
        if p is not None:
            rng = getattr(agent, "rng", None)
            u = (rng if isinstance(rng, np.random.Generator) else np.random.default_rng()).random(len(p))
            chosen = (np.cumsum(p, axis=1) > u[:, None] * p.sum(1, keepdims=True)).argmax(1)
            return chosen.astype(np.int64)
    if callable(getattr(agent, "act_batch", None)):
        return agent.act_batch(observations, masks)
    return np.array(
        [agent.act({"observation": o, "action_mask": m}) for o, m in zip(observations, masks)], np.int64
    ).reshape(len(observations))


def _name(agent: Any) -> str:
    return repr(getattr(agent, "name", None) or type(agent).__name__)
