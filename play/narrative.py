"""A recorded game told step by step, with its hidden cards: the end-of-game reveal in
``cockroach-play`` and the frames of a ``cockroach-replay`` page.

Everything here reads a game record (``cockroach_env.record``), which holds the deal:
it is for after the game, never for a seat's live view.
"""

from __future__ import annotations

from typing import Any

from cockroach_env.config import GameConfig
from cockroach_env.record import env_from_deal, replay_record
from cockroach_env.view import describe_event, seat_view


def _start(record: dict[str, Any], check: bool):
    """The env of ``record`` right after its deal (the record is checked first unless ``check`` is false)."""
    if check:
        replay_record(record)
    return env_from_deal(GameConfig(**record["config"]), record["deal"])


def claims(record: dict[str, Any], check: bool = True) -> list[dict[str, Any]]:
    """Every claim of the game with the card it was about and whether it was true.

    ``event`` is the claim's index in the public history and ``revealed_at`` the index
    of the reveal that showed its card (every round ends with a call, so every claim
    of a finished game is revealed; ``None`` for the round a game stopped in).
    """
    env = _start(record, check)
    cards = env.cards
    out: list[dict[str, Any]] = []
    open_round: list[dict[str, Any]] = []
    for action in record["actions"]:
        actor = env.agent_selection
        move = env.decode(action)
        before = len(env.history)
        if move.kind in ("offer", "pass"):
            card = move.card if move.kind == "offer" else cards.identities[env.game.chain.card]
            entry = {
                "event": before,
                "player": actor,
                "target": move.target,
                "claim": move.claim,
                "card": card,
                "true": cards.truth[cards.index(card)][cards.claim_index(move.claim)],
                "revealed_at": None,
            }
            open_round.append(entry)
            out.append(entry)
        env.step(action)
        for k, event in enumerate(env.history[before:], start=before):
            if event["type"] == "reveal":
                for entry in open_round:
                    entry["revealed_at"] = k
                open_round = []
    return out


def summary(record: dict[str, Any], final_env: Any = None) -> dict[str, dict[str, int]]:
    """Per player: claims (true, bluffs), calls (right, wrong), peeks and cards collected.

    ``final_env``, if given, is the game's env at its end (else the record is replayed).
    """
    env = final_env if final_env is not None else replay_record(record)
    view = env.public_view()
    out = {}
    for agent in env.possible_agents:
        stats = view["history"][agent]
        out[agent] = {
            "true_claims": stats["truthful_claims"],
            "bluffs": stats["false_claims"],
            "right_calls": stats["right_calls"],
            "wrong_calls": stats["wrong_calls"],
            "peeks": stats["peeks"],
            "cards_collected": sum(view["collections"][agent].values()),
        }
    return out


def frames(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The table after the deal and after every action: who moved, the new public
    events (described), the public view and the full-information view.
    """
    env = _start(record, True)
    out = [_frame(env, None, None, env.history)]
    for action in record["actions"]:
        actor = env.agent_selection
        move = str(env.decode(action))
        before = len(env.history)
        env.step(action)
        out.append(_frame(env, actor, move, env.history[before:], before))
    return out


def _frame(env, actor, move, events, first_event: int = 0) -> dict[str, Any]:
    return {
        "actor": actor,
        "move": move,
        "events": [
            {"index": first_event + k, "text": describe_event(e), "type": e["type"]} for k, e in enumerate(events)
        ],
        "public": seat_view(env, None),
        "full": seat_view(env, None, full_information=True),
    }
