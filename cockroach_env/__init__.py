"""Cockroach Poker for reinforcement learning: rules engine, PettingZoo AEC env, batched engine."""

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
    "decode_observation",
    "BatchedGames",
    "BatchStep",
]
__version__ = "0.1.0"


def __getattr__(name: str):
    """``BatchedGames`` and ``BatchStep`` load on first use (the batched engine imports numba)."""
    if name in ("BatchedGames", "BatchStep"):
        from cockroach_env import batched

        return getattr(batched, name)
    raise AttributeError(f"module 'cockroach_env' has no attribute {name!r}")
