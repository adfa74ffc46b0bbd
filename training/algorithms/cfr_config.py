"""CFR's settings (the ``cfr`` section of a training config) and its entry in the algorithm registry
(``training.core.registry``): ``algorithm: cfr``, trained by ``training.algorithms.cfr``.
"""

from __future__ import annotations

from training.core.config import CFRConfig, TrainConfig, require
from training.core.registry import Algorithm, register


def check(config: TrainConfig, where: str) -> None:
    """CFR solves the game tree: it trains no network from play, so nothing warms one up."""
    require(
        where,
        "algorithm",
        config.algorithm,
        config.warm_start.teacher is None,
        "ppo, psro or nfsp with warm_start (cfr solves the game tree and trains no network from play)",
    )


ALGORITHM = register(
    Algorithm(
        name="cfr",
        train="training.algorithms.cfr:train",
        summary="regret minimisation over a small rule set's exact tree, distilled into a network "
        "(training.algorithms.cfr)",
        section=CFRConfig,
        check=check,
    )
)
