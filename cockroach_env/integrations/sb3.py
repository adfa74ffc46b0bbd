"""Stable-Baselines3: one seat of the game as a single-agent ``gymnasium.Env`` with ``action_masks()``.

::

    import baselines
    from sb3_contrib import MaskablePPO
    from cockroach_env.integrations.sb3 import MaskedSelfPlayEnv

    env = MaskedSelfPlayEnv(baselines.make("heuristic", seed=0), seed=0, num_players=4)
    model = MaskablePPO("MlpPolicy", env, seed=0).learn(20_000)

The learner takes one seat, a different one each episode (seat ``k mod N`` in the
``k``-th episode since the last seeded reset); the other seats are played by
``opponents`` inside ``step`` until it is the learner's turn again or the game is over
(a game that ends, or that ``max_steps`` cuts, before the learner's first decision is
dealt again within ``reset``, up to ``REDEALS`` times in a row):

- one agent of the agent protocol (``act(observation_dict) -> int``, e.g.
  ``baselines.make(...)`` or ``training.load_agent(...)``): it plays every other seat
  (agents are seat-independent). An agent with ``new_game()`` (a mixture such as the
  shipped ``classic-4p-mixture``) is told at every reset, so it draws its member per game; one
  mixture plays every seat with the same member, a list of separately loaded ones draws
  per seat;
- a list of ``N - 1`` agents: ``opponents[i]`` plays the seat ``i + 1`` seats after the
  learner;
- a callable ``opponents(episode) -> agent or list``, called at every reset with the
  number of episodes this env has started: self-play against a frozen copy refreshed
  on the callable's own schedule (``training.evaluation.sb3_agent.SelfPlayOpponents``).

``MaskedSelfPlayVecEnv(num_envs, opponents, *, seed=None, learner_seat=None,
illegal_action="raise", **game_options)`` is the batched form: a Stable-Baselines3
``VecEnv`` of ``num_envs`` learner seats over the batched engine
(``cockroach_env.vector.SeatedGames``), which MaskablePPO trains on directly
(``get_action_masks(env)`` works: ``env_method("action_masks")`` gives one mask per
sub-environment). ``opponents`` there may also be names (``"random"``,
``"classic-4p"``) or a list drawn per game (see ``cockroach_env.vector``). SB3's
autoreset convention: a game that ends is dealt again in the same step, the returned
observation is the new game's, and ``infos[i]["terminal_observation"]`` is the learner's
observation of the final state (``infos[i]["TimeLimit.truncated"]`` where ``max_steps``
cut it). Wrap it in SB3's ``VecMonitor`` for episode statistics (SB3 logs none without
it); ``set_opponents(opponents)`` (through wrappers: ``env_method("set_opponents", ...)``)
swaps the opponents between steps, e.g. from a callback that refreshes a pool of
snapshots. Importing the name ``MaskedSelfPlayVecEnv`` imports Stable-Baselines3 (the ``[sb3]`` extra).

``MaskedSelfPlayEnv`` imports neither Stable-Baselines3 nor ``baselines``/``training``:
the user passes the agents in. Observations are the env's float32 vector (a bounded
``Box``), the reward is the learner's terminal reward (−1 for losing, +1/(N−1) for
every other seat) and ``info`` the learner's env info (``cockroach_env.env.INFO_DEFAULTS``).

``reset(seed=s)`` seeds the deals and reseeds every opponent that owns a
``numpy.random.Generator`` as ``rng`` (every baseline and loaded checkpoint does), so
an episode is reproducible from its seed and gymnasium's determinism checks hold. The
constructor's ``seed`` seeds the first reset unless that reset has its own (SB3 seeds
it from ``MaskablePPO(..., seed=...)``).

``illegal_action="raise"`` (the default) raises ``IllegalActionError`` for a masked-out
learner action; the environment checkers of gymnasium and SB3 step unmasked
``action_space.sample()`` actions, so they need ``illegal_action="penalize"`` (the
game ends, −1 for the learner). An opponent's illegal action always raises
``ValueError`` naming the opponent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium
import numpy as np

from cockroach_env.config import GameConfig, check_seed
from cockroach_env.env import INFO_DEFAULTS, IllegalActionError, raw_env

REDEALS = 100
"""How many deals in a row ``reset`` tries before it refuses a table where the learner never gets a decision."""


class MaskedSelfPlayEnv(gymnasium.Env):
    """One learner seat against ``opponents`` (see the module docstring); ``action_masks()`` for MaskablePPO."""

    metadata = {"render_modes": list(raw_env.metadata["render_modes"]), "render_fps": 1}

    def __init__(
        self,
        opponents: Any,
        seed: int | None = None,
        illegal_action: str = "raise",
        render_mode: str | None = None,
        **game_options: Any,
    ):
        seed = check_seed("seed", seed)
        self.game = raw_env(render_mode=render_mode, illegal_action=illegal_action, **game_options)
        self.config: GameConfig = self.game.config
        self.render_mode = render_mode
        self.num_players = self.config.num_players
        if callable(opponents) and not isinstance(opponents, type) and not callable(getattr(opponents, "act", None)):
            self._opponent_source: Callable[[int], Any] | None = opponents
            self._lineup: list[Any] = []
        else:
            self._opponent_source = None
            self._lineup = self._check_lineup(opponents, "opponents")
        space = self.game.observation_space("player_0")
        self.observation_space = space["observation"]
        self.action_space = self.game.action_space("player_0")
        self._episode = 0
        self._seat = 0
        self._learner: str | None = None
        self._seed = seed
        self._done = True

    # ------------------------------------------------------------------ opponents
    def _check_lineup(self, opponents: Any, what: str) -> list[Any]:
        """The agent of each non-learner seat offset 1..N-1, validated; ``ValueError`` naming the problem."""
        n = self.num_players
        if isinstance(opponents, (list, tuple)):
            lineup = list(opponents)
            if len(lineup) != n - 1:
                raise ValueError(
                    f"{what} has {len(lineup)} agents; expected one agent or a list of {n - 1} "
                    f"(one per other seat of a {n}-player game)"
                )
        else:
            lineup = [opponents] * (n - 1)
        for i, agent in enumerate(lineup):
            if isinstance(agent, type):
                raise ValueError(
                    f"{what}[{i}]={agent!r} is a class, not an agent; expected an instance, "
                    f"e.g. {agent.__name__}(config) or baselines.make(name, config)"
                )
            if not callable(getattr(agent, "act", None)):
                raise ValueError(
                    f"{what}[{i}]={agent!r} is not an agent; "
                    "expected an object with act(observation_dict) -> int (see baselines.agent)"
                )
            built_for = getattr(agent, "config", None)
            if isinstance(built_for, GameConfig) and built_for != self.config:
                raise ValueError(
                    f"{what}[{i}] ({_name(agent)}) was built for {built_for}, but this env plays {self.config}"
                )
        return lineup

    def _opponents_for_episode(self) -> list[Any]:
        if self._opponent_source is None:
            return self._lineup
        return self._check_lineup(self._opponent_source(self._episode), f"opponents({self._episode}) result")

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        if seed is None:
            seed = self._seed  # the constructor's seed seeds the first reset, unless that reset has its own
        self._seed = None
        super().reset(seed=seed)
        if seed is not None:
            self._episode = 0
            children = np.random.SeedSequence(seed).spawn(self.num_players)
            deal_seed = int(children[0].generate_state(1)[0])
        else:
            deal_seed = int(self.np_random.integers(2**63))
        self.game.reset(seed=deal_seed, options=options)
        lineup = self._opponents_for_episode()
        distinct = list({id(agent): agent for agent in lineup}.values())
        if seed is not None:
            for agent, child in zip(distinct, children[1:]):
                _reseed(agent, child)
        for agent in distinct:  # a mixture (training.load_agent of a mixture checkpoint) draws the member of this game
            if callable(getattr(agent, "new_game", None)):
                agent.new_game()
        self._opponents = lineup
        self._seat = self._episode % self.num_players
        self._learner = self.game.possible_agents[self._seat]
        self._episode += 1
        self._done = False
        self._play_opponents()
        for _ in range(REDEALS):
            if not self._learner_done():
                break
            # It ended (or max_steps cut it) before the learner's first decision: deal again.
            self.game.reset(seed=int(self.np_random.integers(2**63)), options=options)
            self._play_opponents()
        else:
            raise ValueError(
                f"the learner's seat {self._learner} had no decision in {REDEALS} deals in a row "
                f"(max_steps={self.config.max_steps}, starter={self.config.starter}, reset options {options!r}); "
                "expected a table where every seat gets to decide"
            )
        return self._observation(), dict(self.game.infos[self._learner])

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._done:
            raise RuntimeError("step() called after the episode ended; call reset() first")
        if self.game.agent_selection != self._learner:
            raise RuntimeError(
                f"internal error: {self.game.agent_selection} is to act, not the learner {self._learner}"
            )
        self.game.step(_as_action(action))  # raises IllegalActionError unless illegal_action="penalize"
        self._play_opponents()
        learner = self._learner
        terminated = bool(self.game.terminations[learner])
        truncated = bool(self.game.truncations[learner]) and not terminated
        self._done = terminated or truncated
        reward = float(self.game._cumulative_rewards[learner]) if self._done else 0.0
        return self._observation(), reward, terminated, truncated, dict(self.game.infos[learner])

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions (bool, ``(A,)``); all False once the episode is over."""
        if self._learner is None:
            raise RuntimeError("action_masks() called before reset(); call reset() first")
        return self.game.observe(self._learner)["action_mask"].astype(bool)

    def render(self) -> str | None:
        return self.game.render()

    def close(self) -> None:
        self.game.close()

    # ------------------------------------------------------------------ internals
    def _observation(self) -> np.ndarray:
        return self.game.observe(self._learner)["observation"]

    def _learner_done(self) -> bool:
        return bool(self.game.terminations[self._learner] or self.game.truncations[self._learner])

    def _play_opponents(self) -> None:
        """Let the opponents move until the learner is to act or the game is over."""
        game, n = self.game, self.num_players
        while not self._learner_done() and game.agent_selection != self._learner:
            seat = game.possible_agents.index(game.agent_selection)
            agent = self._opponents[(seat - self._seat) % n - 1]
            observation = game.observe(game.agent_selection)
            action = agent.act(observation)
            try:
                index = int(action)
            except (TypeError, ValueError):
                index = -1
            if not (0 <= index < observation["action_mask"].size and observation["action_mask"][index]) or isinstance(
                action, bool
            ):
                raise ValueError(
                    f"opponent {_name(agent)} (seat {game.agent_selection}) returned {action!r}, which is not a "
                    "legal action; an agent must return one of the actions its action_mask allows"
                )
            game.step(index)


def __getattr__(name: str) -> Any:
    """``MaskedSelfPlayVecEnv``, a subclass of SB3's ``VecEnv``, is defined on first access (SB3 is imported then)."""
    if name == "MaskedSelfPlayVecEnv":
        return _vec_env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_VEC_ENV_CLASS: list[type] = []


class _SeatedVecEnv:
    """What ``MaskedSelfPlayVecEnv`` does over ``SeatedGames``, written without SB3: ``_vec_env_class`` puts SB3's
    ``VecEnv`` under it on first use (``super()`` here is ``VecEnv``).
    """

    def __init__(
        self,
        num_envs: int,
        opponents: Any,
        *,
        seed: int | None = None,
        learner_seat: int | None = None,
        illegal_action: str = "raise",
        **options: Any,
    ):
        from cockroach_env.vector.seated import SeatedGames

        self.games = SeatedGames(
            num_envs, opponents, seed=seed, learner_seat=learner_seat, illegal_action=illegal_action, **options
        )
        self.config = self.games.config
        self.render_mode = None
        single = raw_env(config=self.config)
        super().__init__(
            self.games.num_envs,
            single.observation_space("player_0")["observation"],
            single.action_space("player_0"),
        )
        self._first_seed = self.games.seed
        self._actions: np.ndarray | None = None
        self._rng = np.random.default_rng(self._first_seed)

    def seed(self, seed: int | None = None) -> Sequence[None | int]:
        """Seed the next ``reset`` (``MaskablePPO(..., seed=s)`` calls it): ``reset(seed=s)``'s games of the
        Gymnasium route; a seed that is not None or an integer from 0 to 2**64 - 1 is refused by name.
        """
        return super().seed(check_seed("seed", seed))

    def set_opponents(self, opponents: Any) -> None:
        """Seat ``opponents`` from the next step on (``SeatedGames.set_opponents``); through wrappers such as
        ``VecMonitor``: ``env.env_method("set_opponents", opponents)``.
        """
        self.games.set_opponents(opponents)

    def reset(self) -> np.ndarray:
        self.games.check_open("reset")
        seed = self._seeds[0] if self._seeds[0] is not None else self._first_seed
        self._first_seed = None
        self._reset_seeds()
        self._reset_options()
        if seed is None:
            seed = int(self._rng.integers(2**63))
        step = self.games.reset(seed=seed)
        self.reset_infos = self._infos(step.info)
        return step.observation

    def step_async(self, actions: np.ndarray) -> None:
        self.games.check_open("step")
        self._actions = np.asarray(actions)

    def step_wait(self):
        if self._actions is None:
            raise RuntimeError("step_wait() called without step_async(actions)")
        actions, self._actions = self._actions, None
        step = self.games.step(actions)
        infos = self._infos(step.info)
        for i in np.flatnonzero(step.done):
            infos[i]["terminal_observation"] = step.final_observation[i]
            infos[i]["TimeLimit.truncated"] = bool(step.truncated[i])
        return step.observation, step.reward, step.done, infos

    def action_masks(self) -> np.ndarray:
        """(B, A) bool: the learner's legal actions in every sub-environment."""
        return self.games.action_mask.view(bool)  # a fresh copy of 0s and 1s: viewed, not copied again

    def _infos(self, info: dict[str, np.ndarray]) -> list[dict[str, Any]]:
        """One info dict per sub-environment, plain Python numbers (SB3 keeps infos as a list of dicts)."""
        from cockroach_env.vector.seated import INFO_KEYS

        # Most rows hold the defaults: copy a template, then write the few rows where a game ended.
        template = {key: INFO_DEFAULTS.get(key, -1) for key in INFO_KEYS}
        infos = [dict(template, learner_seat=seat) for seat in info["learner_seat"].tolist()]
        others = [key for key in INFO_KEYS if key != "learner_seat"]
        changed = np.any([info[key] != template[key] for key in others], axis=0)
        for i in np.flatnonzero(changed).tolist():
            infos[i].update({key: info[key][i].item() for key in others})
        return infos

    def close(self) -> None:
        self.games.close()

    def has_attr(self, attr_name: str) -> bool:
        return hasattr(self, attr_name)

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        value = getattr(self, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise AttributeError(
            f"set_attr({attr_name!r}) is not supported: the sub-environments are rows of one batch; "
            "set it on the VecEnv"
        )

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        rows = list(self._get_indices(indices))
        if method_name == "action_masks":  # one mask per sub-environment, as sb3_contrib's get_action_masks stacks
            masks = self.action_masks()
            return [masks[i] for i in rows]
        result = getattr(self, method_name)(*method_args, **method_kwargs)  # once: the rows are one batch
        return [result for _ in rows]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self):
        return [None for _ in range(self.num_envs)]

    def __repr__(self) -> str:
        return f"MaskedSelfPlayVecEnv({self.num_envs}, {self.config.num_players}p {self.config.edition})"


def _vec_env_class() -> type:
    """The ``VecEnv`` subclass, defined on first use so that importing this module does not import SB3."""
    if _VEC_ENV_CLASS:
        return _VEC_ENV_CLASS[0]
    from stable_baselines3.common.vec_env import VecEnv

    class MaskedSelfPlayVecEnv(_SeatedVecEnv, VecEnv):
        """``num_envs`` learner seats of batched games as an SB3 ``VecEnv`` (see the module docstring).

        ``env_method("action_masks")`` gives one mask per sub-environment, for MaskablePPO.
        """

    MaskedSelfPlayVecEnv.__module__ = __name__
    _VEC_ENV_CLASS.append(MaskedSelfPlayVecEnv)
    return MaskedSelfPlayVecEnv


def _as_action(action: Any) -> Any:
    """SB3 hands over numpy scalars or 0-d/1-element arrays; the env takes any integer form."""
    if isinstance(action, np.ndarray) and action.size == 1:
        return action.reshape(())
    return action


def _reseed(agent: Any, seed: np.random.SeedSequence) -> None:
    if isinstance(getattr(agent, "rng", None), np.random.Generator):
        agent.rng = np.random.default_rng(seed)


def _name(agent: Any) -> str:
    return repr(getattr(agent, "name", None) or type(agent).__name__)


__all__ = ["MaskedSelfPlayEnv", "IllegalActionError"]  # MaskedSelfPlayVecEnv: on access only (it imports SB3)
