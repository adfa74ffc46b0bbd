"""Adapters for RL libraries, one module per library; importing this package imports none of them.

| module | entry point | library (extra) |
|---|---|---|
| ``cockroach_env.integrations.rllib`` | ``RLlibMultiAgentEnv(env_config)``, ``ppo_config(...)`` | Ray RLlib (``[rllib]``) |
| ``cockroach_env.integrations.sb3`` | ``MaskedSelfPlayEnv(opponents, seed=None, illegal_action="raise", **game_options)`` | Stable-Baselines3 / sb3-contrib (``[sb3]``) |
| ``cockroach_env.integrations.tianshou`` | ``EverySeatRewarded(env)`` | Tianshou (``[tianshou]``) |

TorchRL needs no adapter: ``torchrl.envs.PettingZooWrapper(cockroach_env.env(), use_mask=True)``.
``docs/integrations.md`` has a tested recipe for each library.
"""
