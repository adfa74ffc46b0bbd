"""An observation holds what its player may know (rules section 6) and nothing else.

For random mid-game states and a random viewer, everything the viewer cannot see is
reshuffled consistently with what they know: other players' hands (keeping their sizes
and any publicly known joker/blank), removed cards, the card in play when the viewer has
not seen it, and the face-down penalty cards (Royal). The reshuffled situation is
rebuilt as a real game (an explicit deal of the matching initial hands, then the same
moves), which must produce the same public history; the viewer's observation, the public
view and the rendered table must then be unchanged, while the full ``state()`` does
change in most cases (so the test can fail). With ``GameConfig.recall`` the observation
also keeps the viewer's dealt hand and every past move: the same must hold (``RECALL_RULE_SETS``), and with a
``history`` window of the last moves (``HISTORY_RULE_SETS``).
"""

from __future__ import annotations

import numpy as np
import pytest

from cockroach_env import Move, raw_env
from cockroach_env.batched import BatchedGames
from cockroach_env.encoding import has_private_view
from cockroach_env.engine import explicit_deal, random_deal
from cockroach_env.vector.every_seat import EverySeatGames
from cockroach_env.view import seat_view

from .conftest import CLASSIC_PRESETS, legal_actions

RULE_SETS = [
    pytest.param(preset, n, flags, id=f"{preset}-{n}p{'-' + next(iter(flags)) if flags else ''}")
    for preset, flags in [(p, {}) for p in CLASSIC_PRESETS + ("royal",)] + [("royal", {"blank_counts_as_royal": True})]
    for n in range(2, 7)
    if not ("three-of-a-kind" in preset and n == 2)
]
RECALL_RULE_SETS = [
    pytest.param(preset, n, {"recall": True}, id=name)
    for preset, n, name in [
        ("mini", 2, "mini-recall"),
        ("mini-3p", 3, "mini-3p-recall"),
        ("creature-to-start", 4, "creature-to-start-4p-recall"),
        ("royal", 3, "royal-3p-recall"),
    ]
]
HISTORY_RULE_SETS = [
    pytest.param(preset, n, {"history": k}, id=f"{preset}-{n}p-history{k}")
    for preset, n, k in [("mini", 2, 3), ("mini-3p", 3, 1), ("creature-to-start", 4, 8), ("royal", 3, 5)]
]


def play_to_a_random_moment(preset: str, num_players: int, flags: dict, seed: int):
    """An env stopped at a random step of a random game (before its end), and the actions played."""

    def fresh():
        e = raw_env(preset=preset, num_players=num_players, render_mode="ansi", **flags)
        e.reset(seed=seed)
        return e

    rng = np.random.default_rng(seed)
    e, actions = fresh(), []
    while not e.game.over:
        actions.append(int(rng.choice(legal_actions(e))))
        e.step(actions[-1])
    actions = actions[: int(rng.integers(1, len(actions)))]
    e = fresh()
    for action in actions:
        e.step(action)
    return e, actions


def resampled_replay(e, actions: list[int], viewer: int, rng: np.random.Generator):
    """Rebuild the game with the hidden cards reshuffled; ``None`` if that deal tells a different public story.

    The replay's actions (the same but for the card of the offer in play) are left in ``replay.replayed_actions``.
    """
    game, cards, n = e.game, e.cards, e.config.num_players
    width = len(cards.identities)
    chain = game.chain

    # what is fixed: the viewer's hand, public cards, and publicly known joker/blank positions
    fixed = [[0] * width for _ in range(n)]
    chain_fixed = chain is not None and viewer in chain.seen
    for card, seat in game.special_holder.items():
        if game.hands[seat][card] > fixed[seat][card]:
            fixed[seat][card] += 1
        elif chain is not None and chain.card == card:
            chain_fixed = True
    pool: list[int] = []
    for seat in range(n):
        if seat != viewer:
            pool += [c for c in range(width) for _ in range(game.hands[seat][c] - fixed[seat][c])]
    pool += [c for c in range(width) for _ in range(game.removed[c])]
    pool += game.penalty_deck[1:]
    if chain is not None and not chain_fixed:
        pool.append(chain.card)
    rng.shuffle(pool)

    # deal the pool back into the same hidden places
    draw = iter(pool)
    hands = [list(row) for row in game.hands]
    for seat in range(n):
        if seat != viewer:
            hands[seat] = list(fixed[seat])
            for _ in range(game.hand_size(seat) - sum(fixed[seat])):
                hands[seat][next(draw)] += 1
    penalty = game.penalty_deck[:1] + [next(draw) for _ in game.penalty_deck[1:]]
    chain_card = None if chain is None else chain.card if chain_fixed else next(draw)

    # initial hands = current hands + cards that left them - cards that joined them (all public moves)
    seat_of = {a: s for s, a in enumerate(e.possible_agents)}
    initial = [list(row) for row in hands]
    drawn_penalties: list[int] = []
    offerer = None
    for event in e.history:
        kind = event["type"]
        if kind == "offer":
            offerer = seat_of[event["player"]]
        elif kind == "reveal":
            initial[offerer][cards.index(event["card"])] += 1
            offerer = None
        elif kind == "place" and event["source"] == "replacement":
            initial[seat_of[event["player"]]][cards.index(event["card"])] += 1
        elif kind == "place" and event["source"] == "penalty":
            drawn_penalties.append(cards.index(event["card"]))
        elif kind == "penalty_to_hand":
            drawn_penalties.append(cards.index(event["card"]))
            initial[seat_of[event["player"]]][cards.index(event["card"])] -= 1
        elif kind == "take_into_hand":
            initial[seat_of[event["player"]]][cards.index(event["card"])] -= 1
    if chain is not None:
        initial[chain.offerer][chain_card] += 1
    if min(min(row) for row in initial) < 0:
        return None

    deal = e.history[0]
    names = lambda row: {cards.identities[c]: k for c, k in enumerate(row) if k}  # noqa: E731
    options = {
        "starter": deal["starter"],
        "hands": {a: names(initial[s]) for s, a in enumerate(e.possible_agents)},
        "collections": deal["collections"],
    }
    if e.config.edition == "royal":
        options["penalty_deck"] = [cards.identities[c] for c in drawn_penalties + penalty]
    replay = raw_env(config=e.config, render_mode="ansi")
    replay.reset(options=options)
    replay.deal = explicit_deal(
        e.config,
        seat_of[deal["starter"]],
        {seat_of[a]: hand for a, hand in options["hands"].items()},
        {seat_of[a]: row for a, row in deal["collections"].items()},
        options.get("penalty_deck"),
    )
    current_offer = max((i for i, a in enumerate(actions) if a < e.encoding.respond_start), default=None)
    replay.replayed_actions = []
    for i, action in enumerate(actions):
        if chain is not None and i == current_offer:
            m = e.decode(action, actor=e.possible_agents[chain.offerer])
            action = replay.encode(Move("offer", card=cards.identities[chain_card], target=m.target, claim=m.claim))
        if not replay.observe(replay.agent_selection)["action_mask"][action]:
            return None
        replay.step(action)
        replay.replayed_actions.append(action)
    if replay.history != e.history:
        return None
    assert replay.game.hands == hands and replay.game.penalty_deck == penalty
    assert (replay.game.chain.card if replay.game.chain else None) == chain_card
    return replay


@pytest.mark.parametrize("preset, num_players, flags", RULE_SETS + RECALL_RULE_SETS + HISTORY_RULE_SETS)
def test_observation_is_unchanged_when_everything_the_viewer_cannot_see_is_reshuffled(preset, num_players, flags):
    rng = np.random.default_rng(num_players)
    compared = state_changed = refused = 0
    for seed in range(8):
        e, actions = play_to_a_random_moment(preset, num_players, flags, seed)
        viewers = [e.game.current, int(rng.integers(num_players))]
        if e.game.chain is not None:
            viewers.append(e.game.chain.offerer)
        for viewer in viewers:
            for _ in range(2):
                replay = resampled_replay(e, actions, viewer, rng)
                if replay is None:
                    refused += 1
                    continue
                agent = e.possible_agents[viewer]
                original, other = e.observe(agent), replay.observe(agent)
                np.testing.assert_array_equal(
                    other["observation"], original["observation"], err_msg=f"{agent} sees a hidden difference"
                )
                np.testing.assert_array_equal(other["action_mask"], original["action_mask"])
                assert replay.public_view() == e.public_view()
                assert replay.render() == e.render()
                compared += 1
                state_changed += not np.array_equal(replay.state(), e.state())
    assert compared >= 24 and refused <= compared, (compared, refused)
    assert state_changed >= compared // 3, "the reshuffle should usually change the hidden state"


@pytest.mark.parametrize("preset, num_players, flags", RULE_SETS[::3] + RECALL_RULE_SETS[::2] + HISTORY_RULE_SETS[::2])
def test_observation_is_the_state_gathered_through_the_observation_mask(preset, num_players, flags):
    e, _ = play_to_a_random_moment(preset, num_players, flags, seed=3)
    rng = np.random.default_rng(3)
    enc = e.encoding
    for _ in range(20):
        state = np.append(e.state(), 0.0)
        for seat, agent in enumerate(e.possible_agents):
            private = has_private_view(e.game, seat)
            index = enc.observation_index(seat, private)
            np.testing.assert_array_equal(e.observe(agent)["observation"], state[index])
            mask = e.observation_mask(agent)
            assert mask.shape == e.state().shape and mask.dtype == bool
            assert set(np.flatnonzero(mask)) == set(index[index != enc.zero_slot].tolist())
            hidden = {"removed", "penalty_hidden"}
            if not private:
                hidden |= {"chain_card", "place_claim", "place_remaining"}
            for name, segment in enc.state.segments.items():
                visible = mask[segment.start : segment.stop]
                if name in hidden:
                    assert not visible.any(), (agent, name)
                elif name in ("hands", "dealt_hands"):
                    assert visible.reshape(segment.shape)[seat].all() and visible.sum() == segment.shape[1]
                else:
                    assert visible.all(), (agent, name)
        if e.game.over:
            break
        e.step(int(rng.choice(legal_actions(e))))


# ---------------------------------------------------------------------------- Royal replacement
# A player placing cards for the joker or blank they took knows from their hand whether a
# card fits the claim; nobody else may learn it before the first placed card shows it.


def play_to_a_replacement(num_players: int, flags: dict, seed: int, placed: int):
    """A Royal env (dealt by ``env.deal``) stopped at a placement with ``placed`` cards already placed, and the
    actions played; ``None`` if the random game has no such moment.
    """
    config = raw_env(preset="royal", num_players=num_players, **flags).config
    rng = np.random.default_rng(seed)
    deal = random_deal(config, rng)
    names = lambda row: {config.cards.identities[c]: k for c, k in enumerate(row) if k}  # noqa: E731
    e = raw_env(config=config, render_mode="ansi")
    agents = e.possible_agents
    e.reset(
        options={
            "starter": agents[deal.starter],
            "hands": {agents[s]: names(row) for s, row in enumerate(deal.hands)},
            "penalty_deck": [config.cards.identities[c] for c in deal.penalty_deck],
        }
    )
    e.deal, actions = deal, []
    while not e.game.over:
        if e.game.replacement is not None and e.game.replacement.placed == placed:
            return e, actions
        actions.append(int(rng.choice(legal_actions(e))))
        e.step(actions[-1])
    return None


def every_seat_observations(config, deals: list, actions: list[list[int]]) -> np.ndarray:
    """(G, N, O): every seat's observation after the same number of ``actions`` in games dealt by ``deals``, from the
    multi-agent vector env (``EverySeatGames``) on each batched backend; the backends must agree.
    """
    views = []
    for backend in ("numpy", "numba"):
        vector = EverySeatGames(len(deals), config=config)
        vector.games = BatchedGames(config, len(deals), seed=0, backend=backend)
        vector._take(vector.games.reset(deals=deals))  # the vector env deals only at random: start it on these deals
        vector._started = True
        for step in zip(*actions):
            vector.step(np.array(step, np.int64))
        views.append(vector.observation)
    np.testing.assert_array_equal(views[0], views[1], err_msg="the batched backends disagree")
    return views[0]


@pytest.mark.parametrize("num_players, flags", [(3, {}), (4, {"blank_counts_as_royal": True})])
def test_no_seat_but_the_placer_learns_whether_its_hand_fits_the_claim(num_players, flags):
    """During a Royal replacement every seat's observation (AEC env, batched backends, vector env), the public
    view, the rendering and each seat's table are unchanged when the hidden cards are reshuffled, including
    reshuffles that change whether the placer holds a card fitting the claim.
    """
    rng = np.random.default_rng(num_players)
    compared = fit_changed = 0
    for seed in range(30):
        found = play_to_a_replacement(num_players, flags, seed, placed=seed % 2)
        if found is None:
            continue
        e, actions = found
        placer = e.game.replacement.player
        pairs = []
        for viewer in range(num_players):
            if viewer == placer:
                continue
            replay = resampled_replay(e, actions, viewer, rng)
            if replay is None:
                continue
            agent = e.possible_agents[viewer]
            np.testing.assert_array_equal(
                replay.observe(agent)["observation"], e.observe(agent)["observation"], err_msg=f"{agent} sees it"
            )
            assert replay.public_view() == e.public_view()
            assert replay.render() == e.render()
            assert seat_view(replay, agent) == seat_view(e, agent)
            pairs.append((viewer, replay))
            compared += 1
            fit_changed += (replay.game.replacement.claim is None) != (e.game.replacement.claim is None)
        if pairs:
            views = every_seat_observations(
                e.config,
                [e.deal] + [replay.deal for _, replay in pairs],
                [actions] + [r.replayed_actions for _, r in pairs],
            )
            for k, (viewer, replay) in enumerate(pairs, start=1):
                np.testing.assert_array_equal(views[k, viewer], views[0, viewer])
                np.testing.assert_array_equal(
                    views[k, viewer], replay.observe(e.possible_agents[viewer])["observation"]
                )
            for seat in range(num_players):  # and the batched view is the env's, the placer's included
                np.testing.assert_array_equal(views[0, seat], e.observe(e.possible_agents[seat])["observation"])
    assert compared >= 10, compared
    assert fit_changed >= 2, "some reshuffles should change whether the placer's hand fits the claim"
