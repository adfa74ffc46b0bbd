"""Adapters for RL libraries, one module per library; importing this package imports none of them.

| module | entry point | library (extra) |
|---|---|---|
| ``rllib`` | ``RLlibMultiAgentEnv(env_config)``, ``ppo_config(...)`` | Ray RLlib (``[rllib]``) |
| ``sb3`` | ``MaskedSelfPlayEnv(opponents, seed=None, illegal_action="raise", **game_options)`` | SB3 (``[sb3]``) |
| ``sb3`` | ``MaskedSelfPlayVecEnv(num_envs, opponents, ...)``: a ``VecEnv`` over the batched engine | SB3 (``[sb3]``) |
| ``tianshou`` | ``EverySeatRewarded(env)`` | Tianshou (``[tianshou]``) |
| ``torchrl`` | ``BatchedCockroachEnv(batch_size=[B], opponents=...)``: an ``EnvBase``, batched | TorchRL |
| ``torchrl_marl`` | ``BatchedCockroachMultiAgentEnv(batch_size=[B])``: every seat a learner, batched | TorchRL |

One game at a time TorchRL needs no adapter: ``torchrl.envs.PettingZooWrapper(cockroach_env.env(),
use_mask=True)``. The batched routes (and Gymnasium's ``cockroach_env.vector.SelfPlayVectorEnv``)
are described in ``cockroach_env.vector``. ``docs/integrations.md`` has a tested recipe for each.
"""
