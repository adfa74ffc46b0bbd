"""What one seat sees of the table, as a JSON-ready dict: the single source of every
picture (``render_mode="rgb_array"``), text table and web page of a game.

``seat_view(env, viewer)`` is the public view plus the viewer's own hand, only
when the viewer offered or peeked it the card in play, and, only for the player placing
a Royal replacement, whether their hand fits the claim and how many cards are left. ``viewer=None`` is a
spectator: public information only. ``full_information=True`` adds every hand, the
card in play, the removed cards and the face-down penalty deck, for debugging and for
the end-of-game reveal; nothing else ever adds a hidden card.
"""

from __future__ import annotations

from typing import Any

from cockroach_env.engine import Game


def seat_view(env: Any, viewer: str | None = None, full_information: bool = False) -> dict[str, Any]:
    """The table as ``viewer`` (an agent name, or ``None`` for a spectator) may see it."""
    game, cards, names = env.game, env.cards, env.possible_agents
    if viewer is not None and viewer not in names:
        raise ValueError(
            f"viewer={viewer!r} is not an agent of this game; expected None (a spectator) or one of {names}"
        )
    if not isinstance(full_information, bool):  # a truthy "false" from a request must not show every hand
        raise ValueError(f"full_information={full_information!r} is not allowed; expected True or False")
    named = lambda row: {cards.identities[c]: int(n) for c, n in enumerate(row) if n}  # noqa: E731
    view = env.public_view()
    view["num_players"] = env.config.num_players
    view["players"] = list(names)
    view["viewer"] = viewer
    view["full_information"] = full_information
    seat = None if viewer is None else names.index(viewer)
    view["hand"] = None if seat is None else named(game.hands[seat])
    chain = game.chain
    if view["chain"] is not None:
        allowed = full_information or (seat is not None and seat in chain.seen)
        view["chain"]["card"] = cards.identities[chain.card] if allowed else None
    if view.get("replacement") is not None and (full_information or seat == game.replacement.player):
        view["replacement"] = replacement_view(game, names, private=True)
    history = env.history
    view["last_event"] = history[-1] if history else None
    if full_information:
        view["hands"] = {names[s]: named(row) for s, row in enumerate(game.hands)}
        view["removed"] = named(game.removed)
        if env.config.edition == "royal":
            view["penalty_deck"] = [cards.identities[c] for c in game.penalty_deck]
    return view


def describe_event(event: dict[str, Any]) -> str:
    """One public event (an entry of ``env.history``) as a short sentence."""
    kind = event.get("type")

    def name(key: str) -> str:
        value = str(event.get(key, "?"))
        return value.replace("_", " ") if key in ("card", "claim") else value

    if kind == "deal":
        return f"cards dealt; {name('starter')} starts"
    if kind == "offer":
        return f'{name("player")} offers a card to {name("target")}: "it\'s a {name("claim")}"'
    if kind == "pass":
        return f'{name("player")} passes the card to {name("target")}: "it\'s a {name("claim")}"'
    if kind == "peek":
        return f"{name('player')} peeks at the card"
    if kind == "call":
        verdict = "true" if event.get("believe") else "false"
        return f"{name('player')} calls {verdict}: {'right' if event.get('right') else 'wrong'}"
    if kind == "reveal":
        truth = "the claim was true" if event.get("truth") else "it was a bluff"
        return f"the card is a {name('card')} ({truth}); {name('taker')} takes it"
    if kind == "place":
        where = {"call": "", "penalty": " from the penalty deck", "replacement": " as a replacement"}.get(
            event.get("source"), ""
        )
        return f"{name('player')} places a {name('card')}{where}"
    if kind == "take_into_hand":
        return f"{name('player')} takes the {name('card')} into their hand"
    if kind == "penalty_to_hand":
        return f"{name('player')} draws the {name('card')} from the penalty deck into their hand"
    if kind == "loss":
        return f"{name('player')} loses ({str(event.get('reason', '?')).replace('_', ' ')})"
    return str(event)


def replacement_view(game: Game, names: list[str], private: bool) -> dict[str, Any]:
    """A pending Royal replacement as JSON-ready data.

    ``called`` (the claim of the revealed joker or blank) and ``placed`` (cards placed so
    far) are public. ``fits`` (whether the placer's hand held a card fitting ``called``:
    then one fitting card is placed, else any two) and ``remaining`` (cards still to
    place) are ``None`` unless ``private`` (the placing player's own view, or full
    information) or a card was placed: before that they would tell the other seats what
    the placer's hand holds.
    """
    replacement = game.replacement
    known = private or replacement.placed > 0
    return {
        "player": names[replacement.player],
        "called": game.cards.claims[replacement.called],
        "placed": replacement.placed,
        "fits": (replacement.claim is not None) if known else None,
        "remaining": replacement.remaining if known else None,
    }
