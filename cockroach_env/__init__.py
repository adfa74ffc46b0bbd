"""Cockroach Poker for reinforcement learning: rules engine, PettingZoo AEC env, batched engine."""

from cockroach_env import cockroach_poker_v2
from cockroach_env.cards import CARD_TYPES, ROYAL_IDENTITIES, CardSet
from cockroach_env.config import PRESETS, GameConfig
from cockroach_env.encoding import LAYOUT_VERSION, Encoding, encoding_for
from cockroach_env.engine import Game, IllegalMove, Phase
from cockroach_env.env import IllegalActionError, Move, env, raw_env
from cockroach_env.observation import decode_observation

__all__ = [
    "CARD_TYPES",
    "ROYAL_IDENTITIES",
    "CardSet",
    "PRESETS",
    "GameConfig",
    "LAYOUT_VERSION",
    "Encoding",
    "encoding_for",
    "Game",
    "IllegalMove",
    "Phase",
    "IllegalActionError",
    "Move",
    "env",
    "raw_env",
    "cockroach_poker_v2",
    "decode_observation",
    "BatchedGames",
    "BatchStep",
]
DISTRIBUTION = "cockroach-poker-rl"
"""The name this package is installed under (``pip install cockroach-poker-rl``)."""


def __getattr__(name: str):
    """``BatchedGames`` and ``BatchStep`` load on first use (the batched engine imports numba);
    ``__version__`` is read on first use (reading the package metadata takes a tenth of a second).
    """
    if name in ("BatchedGames", "BatchStep"):
        from cockroach_env import batched

        return getattr(batched, name)
    if name == "__version__":
        version = globals()["__version__"] = package_version()
        return version
    raise AttributeError(f"module 'cockroach_env' has no attribute {name!r}")


def package_version(distribution: str = DISTRIBUTION) -> str:
    """The installed package's version (its metadata); in a source tree that is not installed,
    ``[project].version`` of the ``pyproject.toml`` beside the package; ``"0+unknown"`` without either.
    """
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        pass
    from pathlib import Path

    try:
        import tomllib  # Python 3.11+

        with (Path(__file__).resolve().parent.parent / "pyproject.toml").open("rb") as file:
            return str(tomllib.load(file)["project"]["version"])
    except (ImportError, OSError, KeyError, ValueError):
        return "0+unknown"
