"""The training algorithms: PPO, NFSP (around PPO), PSRO (+ meta-solvers), CFR (+ its tree solver),
NashConv descent and distillation.

Each algorithm registers itself (``training.core.registry``) in its declaration module, ``<name>_config.py``: its
config section, its checks and its entry point, without importing the algorithm's code. Importing this package (the
``training`` package does) registers the algorithms below, one line each.
"""

from training.algorithms import cfr_config as cfr_config
from training.algorithms import nfsp_config as nfsp_config
from training.algorithms import ppo_config as ppo_config
from training.algorithms import psro_config as psro_config
