"""Game records: one played game as JSON (its deal, the actions, the public history).

A record replays exactly: ``replay_record(record)`` rebuilds the game on the AEC env
from the deal, plays the actions and checks that every action was legal and that the
public history comes out identical, so a corrupt or edited file is refused with a
named error instead of showing a different game.

A record holds the deal, that is every hidden card: it is for after the game (the
replay page hides the cards until its reveal toggle is switched on).

Schema ``cockroach-game/1``::

    {"schema": "cockroach-game/1",
     "config": {GameConfig fields},
     "players": {"player_0": "human", "player_1": "classic-4p", ...},   # labels
     "deal": {"starter": "player_2", "hands": {agent: {card: count}},
              "collections": {agent: {card: count}}, "removed": {card: count},
              "penalty_deck": [card, ...]},                             # top first
     "actions": [int, ...],                                             # env action indices
     "moves": [{"player": agent, "move": "offer(card=fly, ...)"}, ...], # readable, same order
     "history": [public events, as env.history],
     "result": {"loser": agent or null, "loss_reason": str or null, "steps": int, "finished": bool},
     "meta": {free-form: source, seed, created}}
"""

from __future__ import annotations

import json
import os
from dataclasses import fields
from typing import Any

from cockroach_env.config import GameConfig

SCHEMA = "cockroach-game/1"
KEYS = ("schema", "config", "players", "deal", "actions", "moves", "history", "result", "meta")


class RecordError(ValueError):
    """A game record that cannot be read or does not replay; the message names the problem."""


def deal_of(env: Any) -> dict[str, Any]:
    """The deal of ``env``'s game, named; call it right after ``reset`` (before any step)."""
    game, cards, names = env.game, env.cards, env.possible_agents
    if game is None or game.steps != 0 or len(game.events) != 1:
        raise RecordError("deal_of(env) needs a freshly reset env (no move played yet)")
    named = lambda row: {cards.identities[c]: int(n) for c, n in enumerate(row) if n}  # noqa: E731
    return {
        "starter": names[game.starter],
        "hands": {names[s]: named(row) for s, row in enumerate(game.hands)},
        "collections": {names[s]: named(row) for s, row in enumerate(game.collections)},
        "removed": named(game.removed),
        "penalty_deck": [cards.identities[c] for c in game.penalty_deck],
    }


def game_record(
    env: Any,
    deal: dict[str, Any],
    actions: list[int],
    players: dict[str, str] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The record of the game ``env`` has played from ``deal`` through ``actions``."""
    names = env.possible_agents
    probe = env_from_deal(env.config, deal)
    moves = []
    for action in actions:
        moves.append({"player": probe.agent_selection, "move": str(probe.decode(action))})
        probe.step(int(action))
    game = env.game
    finished = game.over or any(env.truncations.values())
    return {
        "schema": SCHEMA,
        "config": env.config.to_dict(),
        "players": dict(players) if players else {a: a for a in names},
        "deal": deal,
        "actions": [int(a) for a in actions],
        "moves": moves,
        "history": env.history,
        "result": {
            "loser": None if game.loser is None else names[game.loser],
            "loss_reason": game.loss_reason,
            "steps": game.steps,
            "finished": bool(finished),
        },
        "meta": dict(meta or {}),
    }


def env_from_deal(config: GameConfig, deal: dict[str, Any]):
    """A fresh raw env reset to a named deal (as ``deal_of`` writes it)."""
    from cockroach_env.env import raw_env

    env = raw_env(config=config)
    options = {"starter": deal["starter"], "hands": deal["hands"], "collections": deal["collections"]}
    if config.edition == "royal":
        options["penalty_deck"] = deal["penalty_deck"]
    env.reset(options=options)
    return env


def save_record(record: dict[str, Any], path: str) -> None:
    """Write ``record`` as JSON to ``path`` atomically (a temp file, then a rename).

    A record that is not JSON (a numpy scalar in ``meta``, say) raises ``RecordError``
    naming the field before any file is touched.
    """
    try:
        text = json.dumps(record, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        field = next((k for k, v in record.items() if not _is_json(v)), None) if isinstance(record, dict) else None
        raise RecordError(f"game record field {field!r} is not JSON: {error}") from None
    temp = f"{path}.tmp{os.getpid()}"
    with open(temp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temp, path)


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def load_record(source: str | dict[str, Any]) -> dict[str, Any]:
    """Read a record (a path or an already parsed dict) and check it replays; ``RecordError`` if not."""
    if isinstance(source, (str, os.PathLike)):
        try:
            with open(source, encoding="utf-8") as handle:
                record = json.load(handle)
        except OSError as error:
            raise RecordError(f"cannot read game record {str(source)!r}: {error.strerror or error}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise RecordError(f"game record {str(source)!r} is not valid JSON: {error}") from None
    else:
        record = source
    replay_record(record)
    return record


def replay_record(record: Any):
    """The AEC env at the end of the recorded game, rebuilt from the deal and the actions.

    Raises ``RecordError`` naming the first problem: a missing or mistyped field, an
    unknown schema, an illegal action, or a public history that differs from the record.
    """
    if not isinstance(record, dict):
        raise RecordError(f"a game record must be a JSON object, got {type(record).__name__}")
    missing = [k for k in KEYS if k not in record]
    if missing:
        raise RecordError(f"game record lacks the field(s) {missing}; expected {list(KEYS)}")
    if record["schema"] != SCHEMA:
        raise RecordError(f"game record schema {record['schema']!r} is not supported; expected {SCHEMA!r}")
    config_fields = {f.name for f in fields(GameConfig)}
    if not isinstance(record["config"], dict) or set(record["config"]) - config_fields:
        raise RecordError(f"game record field 'config' must be an object of GameConfig fields {sorted(config_fields)}")
    try:
        config = GameConfig(**record["config"])
    except (TypeError, ValueError) as error:
        raise RecordError(f"game record field 'config' is not a valid GameConfig: {error}") from None
    deal = record["deal"]
    if not isinstance(deal, dict) or not {"starter", "hands", "collections", "penalty_deck"} <= set(deal):
        raise RecordError("game record field 'deal' must hold starter, hands, collections and penalty_deck")
    actions = record["actions"]
    if not isinstance(actions, list) or not all(type(a) is int for a in actions):
        raise RecordError("game record field 'actions' must be a list of integers")
    try:
        env = env_from_deal(config, deal)
    except (TypeError, ValueError) as error:
        raise RecordError(f"game record field 'deal' is not a valid deal for {config}: {error}") from None
    for k, action in enumerate(actions):
        if env.game.over or not env.agents or any(env.truncations.values()):
            raise RecordError(
                f"game record has {len(actions) - k} action(s) after the end of the game (from action {k})"
            )
        if not 0 <= action < env.encoding.num_actions or not env.observe(env.agent_selection)["action_mask"][action]:
            raise RecordError(f"game record action {k} ({action}) is illegal for {env.agent_selection} at that point")
        env.step(action)
    if env.history != record["history"]:
        first = next(
            (i for i, (a, b) in enumerate(zip(env.history, record["history"])) if a != b),
            min(len(env.history), len(record["history"])),
        )
        raise RecordError(f"game record history differs from the replayed game at event {first}")
    return env
