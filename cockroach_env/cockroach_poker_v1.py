"""Deprecated: version 1 of the env, now served by version 2 (``cockroach_env.cockroach_poker_v2``).

Version 1 showed every seat the placing player's ``place_claim`` and ``place_remaining``
during a Royal replacement, which told the other seats whether the placer held a card
fitting the claim. That observation is not kept: importing this module warns and gives
version 2, whose seat to act sees exactly what it saw in version 1 (agents trained on
version 1 act the same). The version history is in the docstring of ``cockroach_env.env``.
"""

import warnings

from cockroach_env.cockroach_poker_v2 import INFO_DEFAULTS, LOSS_REASONS, IllegalActionError, Move, env, raw_env

warnings.warn(
    "cockroach_env.cockroach_poker_v1 is deprecated: it showed every seat whether the player placing a Royal "
    "replacement held a card fitting the claim; it now gives cockroach_env.cockroach_poker_v2 (import that instead)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["env", "raw_env", "Move", "IllegalActionError", "INFO_DEFAULTS", "LOSS_REASONS"]
