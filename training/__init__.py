"""Self-play training, checkpoints, evaluation (arena) and ratings.

Importing this package does not import torch: the arena and the baselines work with
the environment alone; ``load_agent`` and the trainer import torch when used.
"""


def __getattr__(name):
    if name == "load_agent":
        from training.checkpoint import load_agent

        return load_agent
    raise AttributeError(f"module 'training' has no attribute {name!r}")
