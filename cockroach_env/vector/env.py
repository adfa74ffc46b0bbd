"""``SelfPlayVectorEnv``: a ``gymnasium.vector.VectorEnv`` of learner seats over the batched engine.

::

    from cockroach_env.vector import SelfPlayVectorEnv

    envs = SelfPlayVectorEnv(1024, "random", seed=0, num_players=4)   # autoreset_mode=AutoresetMode.NEXT_STEP
    obs, info = envs.reset()                     # obs["observation"] (B, O) float32, obs["action_mask"] (B, A) int8
    obs, reward, terminated, truncated, info = envs.step(actions)

Sub-environment ``i`` is one learner seat in game ``i`` of a ``BatchedGames``; the other
seats are played inside ``step`` by ``opponents`` (see ``cockroach_env.vector``), each
agent moving in one batch call over every game where one of its seats is to act.

| space | value |
|---|---|
| ``single_observation_space`` | the env's: ``Dict(observation=Box(0, high, (O,), float32),`` |
| | ``action_mask=Box(0, 1, (A,), int8))`` |
| ``single_action_space`` | ``Discrete(A)`` |
| reward | the learner's terminal reward: -1 for losing, +1/(N-1) otherwise, 0 before the end |

**Autoreset** (``autoreset_mode``, also ``metadata["autoreset_mode"]``), as Gymnasium
defines its modes:

- ``AutoresetMode.NEXT_STEP`` (the default, Gymnasium's): the step that ends a game
  returns the learner's observation of the final state (its ``action_mask`` all zero),
  its reward and ``terminated``/``truncated``, and ``info`` of the ended game. The next
  ``step`` ignores that sub-environment's action (any value) and returns the new game's
  first learner decision with reward 0, not done, and the new game's ``info``. Gymnasium's
  wrappers that need this mode (``NormalizeObservation``, ``TransformObservation``, ...)
  take the env as it is.
- ``AutoresetMode.SAME_STEP``: a game that ends is dealt again within the same ``step``:
  the returned observation is the new game's first learner decision, and
  ``info["final_obs"][i]`` (with ``info["_final_obs"][i]`` True) is the learner's
  observation of the final state and ``info["final_info"]`` its info there. Every key is
  present on every step: ``final_obs`` is ``None`` and its mask False where nothing ended.

The engine deals the new game when the old one ends in both modes, so both play the same
games from the same seed.

``info`` holds, per sub-environment, ``learner_seat`` and the env's ``INFO_DEFAULTS``
keys (``loser``, ``loss_reason``, ``illegal_move``, ``offender``, ``truncated_at_step``:
numbers, -1 while unset), each with its ``_key`` mask, all True.

``set_opponents(opponents)`` seats another table from the next step on (see
``SeatedGames.set_opponents``); ``step`` and ``reset`` after ``close()`` raise
``RuntimeError``.

Seeding: ``reset(seed=s)`` deals the games of ``BatchedGames(config, num_envs, seed=s)``
(taken, after the first ones, in the order the games end), seats the learner and draws
the opponents with ``numpy.random.default_rng([s, 1])``, and reseeds each pooled
opponent with an ``rng`` to ``numpy.random.default_rng([s, 7919, k])``.

``illegal_action="raise"`` (the default) refuses a masked-out learner action with
``IllegalActionError`` naming the sub-environment, the action and its move, before
anything changes; ``"penalize"`` (for checkers that sample unmasked actions) ends that
game with -1 for the learner and ``illegal_move``/``offender`` in its final info.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from cockroach_env.config import check_seed
from cockroach_env.env import raw_env
from cockroach_env.vector.seated import INFO_KEYS, SeatedGames, SeatStep


class SelfPlayVectorEnv(VectorEnv):
    """``num_envs`` learner seats against ``opponents`` (see the module docstring)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        opponents: Any,
        *,
        seed: int | None = None,
        learner_seat: int | None = None,
        illegal_action: str = "raise",
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        **game_options: Any,
    ):
        mode = _autoreset_mode(autoreset_mode)
        self.games = SeatedGames(
            num_envs, opponents, seed=seed, learner_seat=learner_seat, illegal_action=illegal_action, **game_options
        )
        self.config = self.games.config
        self.num_envs = self.games.num_envs
        self.render_mode = None
        single = raw_env(config=self.config)
        self.single_observation_space = single.observation_space("player_0")
        self.single_action_space = single.action_space("player_0")
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._seed = self.games.seed
        self.autoreset_mode = mode
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self._waiting = np.zeros(self.num_envs, bool)
        """``NEXT_STEP``: the sub-environments whose game ended in the last step (the next step shows the new one)."""
        self._shown_mask: np.ndarray | None = None
        """``NEXT_STEP``: the action masks of the observations the last step returned."""

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Deal every game afresh; ``seed`` (an integer) seeds everything, the constructor's seed the first reset."""
        if options:
            raise ValueError(
                f"options={options!r} are not allowed; expected None (the vector env has no reset options)"
            )
        seed = check_seed("seed", seed)
        if seed is None:
            seed, self._seed = self._seed, None
        else:
            self._seed = None
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(2**63))
        step = self.games.reset(seed=seed)
        self._waiting[:] = False
        self._shown_mask = None
        return self._observation(step), self._info(step.info)

    def step(self, actions: Any) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray, dict]:
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            return self._step_next(actions)
        step = self.games.step(actions)
        info = self._info({**step.info, "learner_seat": step.learner_seat}, running=True)
        done = step.done
        final_obs = np.full(self.num_envs, None, dtype=object)
        mask = np.zeros_like(step.action_mask[0])
        for i in np.flatnonzero(done):
            final_obs[i] = {"observation": step.final_observation[i], "action_mask": mask.copy()}
        info["final_obs"], info["_final_obs"] = final_obs, done.copy()
        info["final_info"] = self._info(step.info, where=done)
        info["_final_info"] = done.copy()
        return self._observation(step), step.reward, step.terminated, step.truncated, info

    def _step_next(self, actions: Any) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray, dict]:
        """``NEXT_STEP``: a game that ends shows its final observation; the next step shows the new game."""
        step = self.games.step(actions, waiting=self._waiting)
        done = step.done
        observation, mask = step.observation, step.action_mask
        if done.any():
            observation[done] = step.final_observation[done]
            mask[done] = 0
        self._waiting = done
        self._shown_mask = mask
        return (
            {"observation": observation, "action_mask": mask},
            step.reward,
            step.terminated,
            step.truncated,
            self._info(step.info),
        )

    def set_opponents(self, opponents: Any) -> None:
        """Seat ``opponents`` (anything the constructor takes) from the next step on, validated as the constructor
        validates them (a refusal changes nothing); every opponent seat of every game in progress draws again.
        """
        self.games.set_opponents(opponents)

    def action_masks(self) -> np.ndarray:
        """(B, A) bool: the learner's legal actions in every sub-environment (``obs["action_mask"]`` of the last
        ``reset`` or ``step``: with ``NEXT_STEP``, all False where that step ended the game).
        """
        if self._shown_mask is not None:
            return self._shown_mask.astype(bool)
        return self.games.action_mask.astype(bool)

    def describe_action(self, env: int, action: int) -> str:
        """The move ``action`` means for the learner of sub-environment ``env`` now, in words."""
        return self.games.describe_action(env, action)

    def _observation(self, step: SeatStep) -> dict[str, np.ndarray]:
        return {"observation": step.observation, "action_mask": step.action_mask}

    def _info(self, info: dict[str, np.ndarray], running: bool = False, where: np.ndarray | None = None) -> dict:
        """Gymnasium's vector info: every key with its ``_key`` mask (``where``: the envs it holds a value for)."""
        mask = np.ones(self.num_envs, bool) if where is None else where
        out: dict[str, Any] = {}
        for key in INFO_KEYS:
            value = info[key]
            if running and key != "learner_seat":  # the new game's (SAME_STEP: the ended game's is in final_info)
                value = np.zeros_like(value) if key == "illegal_move" else np.full_like(value, -1)
            elif where is not None:
                value = np.where(where, value, np.zeros_like(value) if key == "illegal_move" else -1)
            out[key], out["_" + key] = value, mask.copy()
        return out

    def close_extras(self, **kwargs: Any) -> None:
        games = getattr(self, "games", None)  # None: the constructor refused its arguments
        if games is not None:
            games.close()

    def __repr__(self) -> str:
        config = self.config
        return (
            f"SelfPlayVectorEnv({self.num_envs}, {config.num_players}p {config.edition}, {self.games.opponents.names})"
        )


def _autoreset_mode(value: Any) -> AutoresetMode:
    """``value`` as one of the two autoreset modes the env plays; ``ValueError`` naming it otherwise."""
    modes = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
    try:
        mode = AutoresetMode(value)
    except ValueError:
        mode = None
    if mode not in modes:
        raise ValueError(
            f"autoreset_mode={value!r} is not allowed; expected AutoresetMode.NEXT_STEP (the default) or "
            "AutoresetMode.SAME_STEP (a game that ends is always dealt again, so DISABLED is not offered)"
        )
    return mode


__all__ = ["SelfPlayVectorEnv"]
