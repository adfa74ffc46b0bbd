"""A player's information state with perfect recall, as one string.

What a seat knows at a point of the game: its seat and the hand it was dealt, every
public event so far (``Game.events``: the deal's public part, claims, targets, calls,
revealed cards, Royal penalties and replacements) and the card in play when it offered
or peeked it. The identities of all earlier cards in play were revealed by their calls,
so nothing else is private to it. The OpenSpiel game's ``information_state_string`` and
the information sets of exact evaluation (``training.evaluation.exact``) are this string.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from cockroach_env.engine import Game


def information_state_string(game: Game, seat: int, dealt_hand: Sequence[int]) -> str:
    """JSON of ``{"player", "dealt_hand", "events", "card_in_play"}`` for ``seat``."""
    cards = game.cards
    chain = game.chain
    seen = chain is not None and seat in chain.seen
    record = {
        "player": seat,
        "dealt_hand": {cards.identities[c]: k for c, k in enumerate(dealt_hand) if k},
        "events": game.events,
        "card_in_play": cards.identities[chain.card] if seen else None,
    }
    return json.dumps(record, sort_keys=True)
