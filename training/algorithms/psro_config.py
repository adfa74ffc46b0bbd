"""PSRO's settings (the ``psro`` section of a training config) and its entry in the algorithm registry
(``training.core.registry``): ``algorithm: psro``, trained by ``training.algorithms.psro``.
"""

from __future__ import annotations

from training.core.config import PSROConfig, TrainConfig, require
from training.core.registry import Algorithm, register


def check(config: TrainConfig, where: str) -> None:
    """A robust best response (``population_share`` below 1) needs an opponents mix for the rest of its tables."""
    if config.psro.population_share < 1:
        mix = config.opponents
        rest = (
            mix.self_play + mix.snapshots + mix.exploiter + sum(mix.baselines.values()) + sum(mix.checkpoints.values())
        )
        require(
            f"{where}: psro",
            "population_share",
            config.psro.population_share,
            rest > 0,
            "1, or opponents weights (self_play, snapshots, exploiter, baselines, checkpoints) with a "
            "positive sum for the rest of a best response's tables",
        )


ALGORITHM = register(
    Algorithm(
        name="psro",
        train="training.algorithms.psro:train",
        summary="a population, its solved meta-game and PPO best responses (training.algorithms.psro)",
        section=PSROConfig,
        check=check,
        ray=True,
        population_start=True,
    )
)
