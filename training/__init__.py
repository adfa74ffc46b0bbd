"""Self-play training, checkpoints, evaluation (arena) and ratings.

The package is split by role: ``training.core`` (what every algorithm uses: config, network,
learner, checkpoints, runs), ``training.algorithms`` (PPO, NFSP, PSRO, CFR), ``training.evaluation``
(arena, exact evaluation, exploitability, ratings) and ``training.cli`` (the command lines). The
module paths of the flat layout (``training.checkpoint``, ``training.ppo``, ...) still import, as
the same module objects (``training._aliases``); all but the three that CONTRIBUTING promises warn
that they are deprecated.

Importing this package registers the training algorithms (``training.algorithms``, see
``training.core.registry``), so that a config can name any of them. It does not import torch:
the arena and the baselines work with the environment alone; ``load_agent`` and the trainer
import torch when used.
"""

from training import _aliases
from training import algorithms as algorithms

_aliases.install()


def __getattr__(name):
    if name == "load_agent":
        from training.core.checkpoint import load_agent

        return load_agent
    raise AttributeError(f"module 'training' has no attribute {name!r}")
