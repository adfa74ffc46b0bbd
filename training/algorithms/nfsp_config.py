"""NFSP's settings (the ``nfsp`` section of a training config) and its entry in the algorithm registry
(``training.core.registry``): ``algorithm: nfsp``, trained by ``training.algorithms.nfsp``.
"""

from __future__ import annotations

from training.core.config import NFSPConfig, TrainConfig, require
from training.core.registry import Algorithm, register


def check(config: TrainConfig, where: str) -> None:
    """The best response plays the average policy at ``opponents.population``'s tables, so that weight is needed."""
    require(
        f"{where}: opponents",
        "population",
        config.opponents.population,
        config.opponents.population > 0,
        "a weight > 0 with algorithm: nfsp (the share of the best response's tables against the average policy)",
    )


ALGORITHM = register(
    Algorithm(
        name="nfsp",
        train="training.algorithms.nfsp:train",
        summary="neural fictitious self-play: PPO's best response and an average policy (training.algorithms.nfsp)",
        section=NFSPConfig,
        check=check,
    )
)
