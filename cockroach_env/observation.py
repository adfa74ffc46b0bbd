"""Readable view of an observation vector: ``decode_observation(vec, config)``."""

from __future__ import annotations

from typing import Any

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.encoding import PHASES, encoding_for, keeps_moves
from cockroach_env.engine import STAT_NAMES


def decode_observation(vec: np.ndarray, config: GameConfig) -> dict[str, Any]:
    """Unpack an observation into a dict of named, readable fields.

    Seats are relative to the observer: ``0`` is the observer, ``r`` the player ``r``
    seats after them. Counts are ints; one-hot segments become names or seat offsets.
    With ``recall`` or ``history`` the ``moves`` are the filled move slots in slot order:
    oldest first with recall, newest first with a history window. Royal's ``place_claim``
    and ``place_remaining`` are the placing player's own: ``None`` and ``0`` in every
    other player's observation, even during a replacement.
    """
    enc = encoding_for(config)
    vec = np.asarray(vec)
    if vec.shape != (enc.observation.size,):
        raise ValueError(
            f"observation of shape {vec.shape} does not fit this config; expected ({enc.observation.size},)"
        )
    cards = config.cards
    seg = enc.observation.unpack(vec)

    def counts(row) -> dict[str, int]:
        return {cards.identities[c]: int(n) for c, n in enumerate(row) if n}

    def one_hot(row, names=None):
        hits = np.flatnonzero(row)
        if hits.size == 0:
            return None
        return names[int(hits[0])] if names is not None else int(hits[0])

    decoded: dict[str, Any] = {
        "own_hand": counts(seg["own_hand"]),
        "collections": [counts(row) for row in seg["collections"]],
        "hand_sizes": [int(n) for n in seg["hand_sizes"]],
        "phase": one_hot(seg["phase"], [p.value for p in PHASES]),
        "to_act": one_hot(seg["to_act"]),
        "chain": None,
        "history": [dict(zip(STAT_NAMES, map(int, row))) for row in seg["history"]],
    }
    if seg["chain_claim"].any():
        decoded["chain"] = {
            "claim": one_hot(seg["chain_claim"], cards.claims),
            "latest_passer": one_hot(seg["chain_latest_passer"]),
            "holder": one_hot(seg["chain_holder"]),
            "seen": [int(s) for s in np.flatnonzero(seg["chain_seen"])],
            "claims": {int(s): one_hot(row, cards.claims) for s, row in enumerate(seg["chain_claims"]) if row.any()},
            "card": one_hot(seg["chain_card"], cards.identities),
        }
    if config.edition == "royal":
        decoded["penalty_top"] = one_hot(seg["penalty_top"], cards.identities)
        decoded["penalty_size"] = int(seg["penalty_size"][0])
        specials = [name for c, name in enumerate(cards.identities) if cards.is_special[c]]
        decoded["special_holders"] = {
            name: one_hot(row) for name, row in zip(specials, seg["special_holder"]) if row.any()
        }
        decoded["place_claim"] = one_hot(seg["place_claim"], cards.claims)
        decoded["place_remaining"] = int(seg["place_remaining"][0])
    if keeps_moves(config):
        decoded["dealt_hand"] = counts(seg["dealt_hand"])
        decoded["starter"] = one_hot(seg["starter"])
        if "opening_collections" in seg:
            decoded["opening_collections"] = [counts(row) for row in seg["opening_collections"]]
        decoded["moves"] = [
            {
                "actor": one_hot(seg["move_actor"][k]),
                "move": describe_public_move(enc, one_hot(seg["move_public"][k])),
                "revealed": one_hot(seg["move_revealed"][k], cards.identities),
                **({"penalty_top": one_hot(seg["move_top"][k], cards.identities)} if "move_top" in seg else {}),
            }
            for k in np.flatnonzero(seg["move_actor"].any(axis=1))
        ]
    return decoded


def describe_public_move(enc, move: int) -> dict[str, Any]:
    """A public move index (``Encoding.public_move``) as a dict: kind, target offset, claim, placed card."""
    claims, per_target = enc.config.cards.claims, enc.num_targets * enc.num_claims
    if move < per_target:
        return {"kind": "offer", "target": move // enc.num_claims + 1, "claim": claims[move % enc.num_claims]}
    rest = move - per_target
    if rest < 3:
        return {"kind": ("call_true", "call_false", "peek")[rest]}
    rest -= 3
    if rest < per_target:
        return {"kind": "pass", "target": rest // enc.num_claims + 1, "claim": claims[rest % enc.num_claims]}
    return {"kind": "place", "card": enc.config.cards.identities[rest - per_target]}
