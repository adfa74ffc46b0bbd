"""The command lines, one module each: ``train`` (cockroach-train), ``eval`` (cockroach-eval),
``exploit`` (cockroach-exploit), ``mixture`` (cockroach-mixture) and ``checkpoint``
(``python -m training.checkpoint``). ``python -m training.cli`` is cockroach-train.
"""


def __getattr__(name):
    if name == "main":  # ``from training.cli import main``: cockroach-train, as before the split
        from training.cli.train import main

        return main
    raise AttributeError(f"module 'training.cli' has no attribute {name!r}")
