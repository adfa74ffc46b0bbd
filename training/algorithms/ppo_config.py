"""PPO's entry in the algorithm registry (``training.core.registry``): ``algorithm: ppo``, self-play PPO
(``training.algorithms.ppo``). Its settings, the ``ppo`` and ``model`` sections, are shared by the algorithms built on
PPO's loop (NFSP, PSRO's best responses, ``cockroach-exploit``) and live in ``training.core.config``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from training.core.registry import Algorithm, register

if TYPE_CHECKING:
    from training.core.config import TrainConfig


def population_problem(config: TrainConfig) -> str | None:
    """A plain PPO run has no population to play (PSRO and ``cockroach-exploit`` give theirs to ``ppo.train``)."""
    if config.opponents.population > 0:
        return (
            f"opponents.population={config.opponents.population} is not allowed with algorithm: ppo; its tables are "
            "against a population that PSRO or cockroach-exploit gives, or NFSP's average policy (algorithm: nfsp); "
            "expected 0"
        )
    return None


ALGORITHM = register(
    Algorithm(
        name="ppo",
        train="training.algorithms.ppo:train",
        summary="self-play masked PPO against the opponents mix (training.algorithms.ppo)",
        problem=population_problem,
        rollout_workers=True,
    )
)
