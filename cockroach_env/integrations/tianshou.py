"""Tianshou: the plain ``tianshou.env.PettingZooEnv(cockroach_env.env())`` recipe, and every seat its reward.

``PettingZooEnv`` turns the AEC game into one transition per decision: the observation
of the seat to act (``obs.agent_id``, ``obs.obs``, ``obs.mask``) and, as ``rew``, the
vector of every seat's reward of that step. ``MultiAgentOffPolicyAlgorithm`` /
``MultiAgentOnPolicyAlgorithm`` then train each seat's algorithm on the transitions
where that seat acted, with column ``rew[:, seat]``. In this game rewards come only
at the end, in the row of the final decision, so only the seat that made the last
move sees a terminal reward on one of its own transitions; every other seat's
transitions all carry 0 (with a 1-step return; an ``n_step_return_horizon`` of ``n``
reaches the end only from a seat's last ``n`` global steps).

``EverySeatRewarded(env)`` is a Tianshou episode hook that moves each seat's terminal
reward onto that seat's own last transition of the episode, where its dispatcher
finds it::

    collector = Collector(algorithm, train_envs, buffer, on_episode_done_hook=EverySeatRewarded(env))

Tianshou accepts a hook that rewrites the buffer only when collecting whole episodes
(``collector.collect(n_episode=...)``, ``collection_step_num_episodes`` in the trainer's
parameters); collecting by steps with it raises ``ValueError``. A seat that never acted
in a game has no transition to carry its reward, which stays in the last row.
Tianshou's dispatcher still bootstraps a transition from the next decision's
observation, which is another seat's: that is its design for multi-agent games;
``cockroach_env.integrations.sb3.MaskedSelfPlayEnv`` gives a single seat's view with
correct bootstrapping in any single-agent library.

This module imports Tianshou; ``import cockroach_env`` does not.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tianshou.data.collector import EpisodeRolloutHook


class EverySeatRewarded(EpisodeRolloutHook):
    """Episode hook: each seat's reward of the episode on that seat's own last transition."""

    def __init__(self, env: Any):
        agents = getattr(env, "agents", None)
        if not isinstance(agents, (list, tuple)) or not agents:
            raise ValueError(
                f"env={env!r} is not allowed; expected a tianshou.env.PettingZooEnv (its agents list the seats)"
            )
        self.agents = list(agents)

    def __call__(self, episode_batch: Any) -> dict[str, np.ndarray]:
        rew = np.asarray(episode_batch.rew, dtype=np.float64)
        if rew.ndim != 2 or rew.shape[1] != len(self.agents):
            raise ValueError(
                f"episode rewards of shape {rew.shape} do not fit {len(self.agents)} seats; "
                f"expected (T, {len(self.agents)}) from PettingZooEnv"
            )
        acted = np.asarray(episode_batch.obs.agent_id)
        moved = np.zeros_like(rew)
        for seat, agent in enumerate(self.agents):
            own = np.flatnonzero(acted == agent)
            moved[own[-1] if own.size else -1, seat] = rew[:, seat].sum()
        return {
            "rew": moved.astype(
                rew.dtype if np.issubdtype(np.asarray(episode_batch.rew).dtype, np.floating) else np.float64
            )
        }


__all__ = ["EverySeatRewarded"]
