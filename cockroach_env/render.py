"""Text rendering of a game: a table of hand sizes and collections, the chain, the last event."""

from __future__ import annotations


def render_text(env, full_information: bool = False, viewer: str | None = None) -> str:
    """Public table, plus ``viewer``'s hand and the card in play if they have seen it;
    ``full_information`` adds every hand and the card in play (debugging only).
    """
    view = env.public_view()
    game, cards = env.game, env.cards
    short = [name.replace("royal_", "R.")[:5] for name in cards.identities]  # R.rat, not seven columns of "royal"
    width = max(len(a) for a in env.possible_agents) + 2
    header = "player".ljust(width) + "hand  " + " ".join(f"{s:>5}" for s in short)
    lines = [
        f"Cockroach Poker ({env.config.edition}, {env.config.num_players} players) - phase: {view['phase']}",
        header,
    ]
    for seat, agent in enumerate(env.possible_agents):
        marker = "*" if view["to_act"] == agent else " "
        row = game.collections[seat]
        lines.append(
            f"{marker}{agent.ljust(width - 1)}{view['hand_sizes'][agent]:>4}  "
            + " ".join(f"{n:>5}" if n else "    ." for n in row)
        )
        if full_information:
            lines.append(" " * width + "hand: " + " ".join(f"{n:>5}" if n else "    ." for n in game.hands[seat]))
    chain = view["chain"]
    if chain is not None:
        claims = " -> ".join(f"{c['player']} says {c['claim']}" for c in chain["claims"])
        lines.append(f"chain: {claims}; holder {chain['holder']}; seen by {', '.join(chain['seen'])}")
        if full_information or (viewer is not None and env.possible_agents.index(viewer) in game.chain.seen):
            lines.append(f"card in play: {cards.identities[game.chain.card]}")
    if viewer is not None and not full_information:
        hand = game.hands[env.possible_agents.index(viewer)]
        lines.append(
            f"hand of {viewer}: "
            + (", ".join(f"{cards.identities[c]} {n}" for c, n in enumerate(hand) if n) or "empty")
        )
    if env.config.edition == "royal":
        lines.append(f"penalty deck: {view['penalty_size']} cards, top {view['penalty_top']}")
    last = env.history[-1]
    lines.append("last event: " + ", ".join(f"{k}={v}" for k, v in last.items()))
    if view["loser"] is not None:
        lines.append(f"{view['loser']} loses ({view['loss_reason']})")
    elif view["phase"] == "over":  # ended by the env, without a loss
        if env.offender is not None:
            lines.append(f"game over: {env.offender} chose an illegal action")
        else:
            lines.append(f"game over: cut at max_steps={env.config.max_steps}, nobody loses")
    return "\n".join(lines)
