"""Ray RLlib (new API stack): the game as a turn-based ``MultiAgentEnv`` and one shared masked PPO policy.

::

    import ray
    from cockroach_env.integrations.rllib import ppo_config

    ray.init(num_cpus=2)
    algo = ppo_config({"num_players": 4}).build_algo()
    for _ in range(10):
        # per seat: the game is zero-sum, so the episode return is 0
        print(algo.train()["env_runners"]["agent_episode_returns_mean"])

``RLlibMultiAgentEnv(env_config)``: ``env_config`` holds ``GameConfig`` options
(``num_players``, ``preset``, ``edition``, ...), or ``config`` (a ``GameConfig``), and
``illegal_action``. Only the agent to act is in the observation dict of a step; its
observation is ``{"observations": float32 (O,), "action_mask": float32 (A,)}``, the keys
and the float mask that RLlib's ``ActionMaskingTorchRLModule``
(``ray.rllib.examples.rl_modules.classes.action_masking_rlm``) expects. When the game
ends every seat receives its final observation and its terminal reward (−1 for the
loser, +1/(N−1) for the others) with ``terminateds["__all__"] = True`` (truncations
likewise for ``max_steps``); RLlib credits each reward to that agent's last action.

``illegal_action`` defaults to ``"penalize"`` here (not ``"raise"`` as in
``cockroach_env.env``): RLlib checks every env it builds (unless
``disable_env_checking=True``) by stepping ``action_space.sample()``, unmasked, which
would raise. A masked policy never plays an illegal action, so training is unchanged;
a penalized game ends at once with −1 for the offender and ``info["illegal_move"]``.

``ppo_config(env_config, ...)`` returns a ``PPOConfig`` that trains one shared policy
(module id ``"shared"``) for every seat with the action-masking RLModule; observations
are ego-centric, so one policy serves every seat.

This module imports Ray; ``import cockroach_env`` does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from cockroach_env.config import GameConfig
from cockroach_env.env import raw_env

SHARED_POLICY = "shared"
ENV_OPTIONS = ("config", "preset", "illegal_action")
"""``env_config`` keys besides the ``GameConfig`` fields."""


class RLlibMultiAgentEnv(MultiAgentEnv):
    """Cockroach Poker as an RLlib ``MultiAgentEnv`` (see the module docstring)."""

    metadata = {"render_modes": list(raw_env.metadata["render_modes"])}

    def __init__(self, env_config: Mapping[str, Any] | None = None):
        super().__init__()
        if env_config is not None and not isinstance(env_config, Mapping):
            raise ValueError(
                f"env_config={env_config!r} is not allowed; expected a dict of GameConfig options (or config) "
                "and illegal_action, or None"
            )
        options = dict(env_config or {})  # an EnvContext is a dict with runner attributes
        unknown = sorted(set(options) - set(ENV_OPTIONS) - set(GameConfig.__dataclass_fields__) - {"render_mode"})
        if unknown:
            raise ValueError(
                f"env_config has unknown key(s) {unknown}; expected GameConfig fields "
                f"({sorted(GameConfig.__dataclass_fields__)}) or {list(ENV_OPTIONS) + ['render_mode']}"
            )
        options.setdefault("illegal_action", "penalize")
        self.game = raw_env(**options)
        self.config: GameConfig = self.game.config
        self.render_mode = self.game.render_mode
        self.possible_agents = list(self.game.possible_agents)
        self.agents = list(self.possible_agents)
        self._over = True
        size = self.game.encoding.observation.size
        num_actions = self.game.encoding.num_actions
        space = gymnasium.spaces.Dict(
            {
                "observations": gymnasium.spaces.Box(0.0, self.game.encoding.observation_high, (size,), np.float32),
                "action_mask": gymnasium.spaces.Box(0.0, 1.0, (num_actions,), np.float32),
            }
        )
        self.observation_spaces = {agent: space for agent in self.possible_agents}
        self.action_spaces = {agent: self.game.action_space(agent) for agent in self.possible_agents}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.game.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        self._over = False
        agent = self.game.agent_selection
        return {agent: self._observe(agent)}, {agent: dict(self.game.infos[agent])}

    def step(self, action_dict: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        agent = self.game.agent_selection
        if self._over:
            raise RuntimeError("step() called after the episode ended; call reset() first")
        if agent not in action_dict or len(action_dict) != 1:
            raise ValueError(
                f"action_dict={dict(action_dict)!r} is not allowed; expected exactly one action, for {agent!r}, "
                "the agent to act"
            )
        self.game.step(action_dict[agent])
        game = self.game
        terminated = all(game.terminations.values())
        truncated = all(game.truncations.values()) and not terminated
        if terminated or truncated:
            agents = list(self.possible_agents)
            observations = {a: self._observe(a) for a in agents}
            rewards = {a: float(game._cumulative_rewards[a]) for a in agents}
            infos = {a: dict(game.infos[a]) for a in agents}
            self._over = True  # ``agents`` keeps every seat: RLlib checks the final dicts against it
            return (
                observations,
                rewards,
                {**{a: terminated for a in agents}, "__all__": terminated},
                {**{a: truncated for a in agents}, "__all__": truncated},
                infos,
            )
        following = game.agent_selection
        return (
            {following: self._observe(following)},
            {agent: 0.0},
            {"__all__": False},
            {"__all__": False},
            {following: dict(game.infos[following])},
        )

    def render(self) -> str | np.ndarray | None:
        """The public table (``render_mode`` "ansi", "human" or "rgb_array"); never the hidden cards."""
        return self.game.render()

    def _observe(self, agent: str) -> dict[str, np.ndarray]:
        observation = self.game.observe(agent)
        return {
            "observations": observation["observation"],
            "action_mask": observation["action_mask"].astype(np.float32),
        }


def ppo_config(
    env_config: Mapping[str, Any] | None = None,
    *,
    hidden: tuple[int, ...] = (256, 256),
    num_env_runners: int = 0,
    **training: Any,
):
    """A ``PPOConfig`` training one shared masked policy for every seat of ``RLlibMultiAgentEnv(env_config)``.

    ``hidden`` sets the policy and value heads' layer sizes; ``training`` goes to
    ``PPOConfig.training`` (``lr``, ``train_batch_size_per_learner``, ``minibatch_size``,
    ``num_epochs``, ...). Change anything else on the returned config as usual.
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    if (
        not isinstance(hidden, (tuple, list))
        or not hidden
        or not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in hidden)
    ):
        raise ValueError(
            f"hidden={hidden!r} is not allowed; expected a non-empty tuple of positive layer sizes, e.g. (256, 256)"
        )
    RLlibMultiAgentEnv(env_config)  # validate the options here, not inside a remote runner
    env_config = dict(env_config or {})
    module = RLModuleSpec(
        module_class=ActionMaskingTorchRLModule,
        model_config={"head_fcnet_hiddens": list(hidden), "head_fcnet_activation": "relu"},
    )
    config = (
        PPOConfig()
        .environment(RLlibMultiAgentEnv, env_config=env_config)
        .env_runners(num_env_runners=num_env_runners)
        .multi_agent(policies={SHARED_POLICY}, policy_mapping_fn=_shared_policy)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={SHARED_POLICY: module}))
    )
    if training:
        config = config.training(**training)
    return config


def _shared_policy(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    return SHARED_POLICY


__all__ = ["RLlibMultiAgentEnv", "ppo_config", "SHARED_POLICY"]
