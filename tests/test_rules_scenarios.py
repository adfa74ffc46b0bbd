"""The rulebook, one rule per test: explicit deals, tables of moves, the expected outcome.

Section numbers refer to the rules specification (classic game, duel, variants,
rewards, information). Seats are numbers in the tables; ``player_k`` in the env.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cockroach_env import GameConfig, IllegalActionError, Move, decode_observation, env, raw_env
from cockroach_env.engine import LOSS_REASONS, Game, explicit_deal
from cockroach_env.env import INFO_DEFAULTS

from .conftest import agent, call, dealt_env, offer, pass_to, peek, play, play_random, rule_sets


def collection(e, seat: int) -> dict:
    return e.unwrapped.public_view()["collections"][agent(seat)]


def hand(e, seat: int) -> dict:
    return decode_observation(e.observe(agent(seat))["observation"], e.unwrapped.config)["own_hand"]


def pass_targets(e) -> set[int]:
    """Seats the holder may pass to now, read from the action mask."""
    return {int(m.target.removeprefix("player_")) for m in e.unwrapped.legal_moves() if m.kind == "pass"}


def can_peek(e) -> bool:
    return Move("peek") in e.unwrapped.legal_moves()


# ---------------------------------------------------------------- 1.2 the taker of a called card
FOUR_HANDS = {0: {"fly": 3, "bat": 1}, 1: {"bat": 2, "rat": 1}, 2: {"toad": 2}, 3: {"spider": 2}}

TAKER_AFTER_A_CALL = [
    # moves, right call?, taker
    pytest.param(
        [offer("fly", to=1, says="fly"), call(True)], True, 0, id="no-pass: true claim called true -> the offerer takes"
    ),
    pytest.param(
        [offer("fly", to=1, says="fly"), call(False)],
        False,
        1,
        id="no-pass: true claim called false -> the holder takes",
    ),
    pytest.param(
        [offer("fly", to=1, says="bat"), call(False)],
        True,
        0,
        id="no-pass: false claim called false -> the offerer takes",
    ),
    pytest.param(
        [offer("fly", to=1, says="bat"), call(True)],
        False,
        1,
        id="no-pass: false claim called true -> the holder takes",
    ),
    pytest.param(
        [offer("fly", to=1, says="bat"), peek(), pass_to(2, says="fly"), call(True)],
        True,
        1,
        id="one-pass: true claim called true -> the passer takes",
    ),
    pytest.param(
        [offer("fly", to=1, says="bat"), peek(), pass_to(2, says="fly"), call(False)],
        False,
        2,
        id="one-pass: true claim called false -> the holder takes",
    ),
    pytest.param(
        [offer("fly", to=1, says="fly"), peek(), pass_to(2, says="toad"), call(False)],
        True,
        1,
        id="one-pass: only the latest claim counts",
    ),
    pytest.param(
        [offer("fly", to=1, says="fly"), peek(), pass_to(2, says="toad"), call(True)],
        False,
        2,
        id="one-pass: false latest claim called true -> the holder takes",
    ),
    pytest.param(
        [offer("fly", to=1, says="bat"), peek(), pass_to(2, says="fly"), peek(), pass_to(3, says="spider"), call(True)],
        False,
        3,
        id="two-passes: false claim called true -> the last holder takes",
    ),
    pytest.param(
        [
            offer("fly", to=1, says="bat"),
            peek(),
            pass_to(2, says="fly"),
            peek(),
            pass_to(3, says="spider"),
            call(False),
        ],
        True,
        2,
        id="two-passes: false claim called false -> the latest passer takes",
    ),
    pytest.param(
        [offer("fly", to=3, says="fly"), peek(), pass_to(1, says="fly"), peek(), pass_to(2, says="fly"), call(True)],
        True,
        1,
        id="two-passes: true claim called true -> the latest passer takes",
    ),
]


@pytest.mark.parametrize("moves, right, taker", TAKER_AFTER_A_CALL)
def test_rule_1_2_the_taker_is_the_latest_passer_on_a_right_call_and_the_holder_on_a_wrong_one(moves, right, taker):
    e = dealt_env(FOUR_HANDS)
    play(e, *moves)
    history = e.unwrapped.history
    called, revealed, placed = history[-3:]
    assert called["type"] == "call" and called["right"] is right
    assert revealed == {
        "type": "reveal",
        "card": "fly",
        "claim": moves[-2].claim,
        "truth": moves[-2].claim == "fly",
        "taker": agent(taker),
    }
    assert placed == {"type": "place", "player": agent(taker), "card": "fly", "source": "call"}
    assert collection(e, taker) == {"fly": 1}
    assert all(collection(e, s) == {} for s in range(4) if s != taker)
    view = e.unwrapped.public_view()
    assert view["phase"] == "offer" and view["to_act"] == agent(taker), "the taker starts the next round"
    assert view["chain"] is None


def test_rule_1_2_a_false_call_is_right_whenever_the_card_is_not_the_claimed_type():
    for claimed in ("cockroach", "bat", "toad", "rat", "scorpion", "spider", "stink_bug"):
        e = dealt_env(FOUR_HANDS)
        play(e, offer("fly", to=1, says=claimed), call(False))
        assert e.unwrapped.history[-3]["right"] is True, claimed
        assert collection(e, 0) == {"fly": 1}


# ---------------------------------------------------------------- 1.3 eligibility
def test_rule_1_3_the_offerer_and_every_peeker_are_ineligible_and_the_last_holder_must_call():
    e = dealt_env(FOUR_HANDS)
    steps = [
        # move, seats the holder may pass to afterwards (None: not in the pass phase), holder may peek?
        (offer("fly", to=2, says="bat"), None, True),
        (peek(), {1, 3}, False),
        (pass_to(1, says="bat"), None, True),
        (peek(), {3}, False),
        (pass_to(3, says="toad"), None, False),
    ]
    for move, targets, peek_allowed in steps:
        play(e, move)
        if targets is not None:
            assert pass_targets(e) == targets, move
        assert can_peek(e) is peek_allowed, move
    assert e.unwrapped.public_view()["chain"]["seen"] == ["player_0", "player_2", "player_1"]
    with pytest.raises(IllegalActionError, match="must call"):
        play(e, peek())
    play(e, call(True))  # the forced call is still a call: toad claimed, fly revealed -> wrong
    assert collection(e, 3) == {"fly": 1}


@pytest.mark.parametrize("target", [0, 1], ids=["to-the-offerer", "to-an-earlier-peeker"])
def test_rule_1_3_passing_to_a_player_who_has_seen_the_card_is_refused(target):
    e = dealt_env(FOUR_HANDS)
    play(e, offer("fly", to=1, says="bat"), peek(), pass_to(2, says="bat"), peek())
    before = e.unwrapped.public_view()
    with pytest.raises(IllegalActionError):
        play(e, pass_to(target, says="bat"))
    assert e.unwrapped.public_view() == before


def test_rule_1_3_three_players_the_second_holder_must_call():
    e = dealt_env({0: {"fly": 2}, 1: {"bat": 2}, 2: {"rat": 2}})
    play(e, offer("fly", to=1, says="fly"))
    assert can_peek(e)
    play(e, peek())
    assert pass_targets(e) == {2}
    play(e, pass_to(2, says="fly"))
    assert not can_peek(e)


def test_rule_1_4_everybody_is_eligible_again_for_the_next_card():
    e = dealt_env(FOUR_HANDS)
    play(e, offer("fly", to=1, says="bat"), peek(), pass_to(2, says="fly"), call(False))  # 2 takes, starts
    offers = {m.target for m in e.unwrapped.legal_moves() if m.kind == "offer"}
    assert offers == {"player_0", "player_1", "player_3"}
    play(e, offer("toad", to=3, says="toad"), peek())
    assert pass_targets(e) == {0, 1}


# ---------------------------------------------------------------- 2 the duel
def test_rule_2_duel_deals_27_each_and_removes_10_unseen():
    for seed in range(5):
        e = raw_env(num_players=2)
        e.reset(seed=seed)
        assert e.public_view()["hand_sizes"] == {"player_0": 27, "player_1": 27}
        assert sum(e.game.removed) == 10
        assert e.config.loss_count == 5


def test_rule_2_duel_every_offer_is_called_because_nobody_can_receive_a_passed_card():
    e = raw_env(num_players=2)
    e.reset(seed=1)
    rng = np.random.default_rng(1)
    while not e.game.over:
        if e.game.phase.value == "respond":
            assert not can_peek(e)
        play_random(e, rng, max_steps=1)
    types = [event["type"] for event in e.history]
    assert "peek" not in types and "pass" not in types
    assert all(types[i + 1] == "call" for i, t in enumerate(types) if t == "offer")


# ---------------------------------------------------------------- 1 setup: deals
@pytest.mark.parametrize(
    "num_players, starter, sizes",
    [
        (3, 0, [22, 21, 21]),
        (3, 1, [21, 22, 21]),
        (3, 2, [21, 21, 22]),
        (4, 2, [16, 16, 16, 16]),
        (5, 0, [13, 13, 13, 13, 12]),
        (5, 3, [13, 13, 12, 13, 13]),
        (6, 0, [11, 11, 11, 11, 10, 10]),
        (6, 4, [11, 11, 10, 10, 11, 11]),
        (2, 1, [27, 27]),
    ],
)
def test_rule_1_setup_dealing_starts_with_the_starter_so_uneven_hands_differ_by_one(num_players, starter, sizes):
    e = raw_env(num_players=num_players)
    e.reset(seed=starter, options={"starter": agent(starter)})
    assert list(e.public_view()["hand_sizes"].values()) == sizes
    assert e.agent_selection == agent(starter)
    assert all(row == {} for row in e.public_view()["collections"].values()), "every collection starts empty"
    assert sum(e.game.removed) == (10 if num_players == 2 else 0)


@pytest.mark.parametrize("num_players, each, loss_count", [(2, 30, 5), (3, 20, 4), (4, 15, 4), (5, 12, 4), (6, 10, 4)])
def test_rule_3_even_deal_removes_4_and_deals_60_evenly(num_players, each, loss_count):
    e = raw_env(preset="even-deal", num_players=num_players)
    e.reset(seed=0)
    assert set(e.public_view()["hand_sizes"].values()) == {each}
    assert sum(e.game.removed) == 4
    assert e.config.loss_count == loss_count


@pytest.mark.parametrize("num_players, discard", [(2, 10), (3, 0), (4, 0), (6, 0)])
def test_rule_3_creature_to_start_deals_one_face_up_card_into_each_collection_first(num_players, discard):
    for seed in range(3):
        e = raw_env(preset="creature-to-start", num_players=num_players)
        e.reset(seed=seed)
        view = e.public_view()
        assert all(sum(row.values()) == 1 for row in view["collections"].values())
        assert sum(view["hand_sizes"].values()) == 64 - discard - num_players
        assert max(view["hand_sizes"].values()) - min(view["hand_sizes"].values()) <= 1
        for a in e.possible_agents:  # public: every player sees every opening card
            seen = decode_observation(e.observe(a)["observation"], e.config)["collections"]
            seat = e.possible_agents.index(a)
            assert seen == [view["collections"][agent((seat + r) % num_players)] for r in range(num_players)]


def test_rule_3_creature_to_start_opening_card_counts_toward_the_loss():
    e = dealt_env(
        {0: {"fly": 2, "bat": 1}, 1: {"rat": 3}, 2: {"toad": 2}},
        collections={0: {"bat": 1}, 1: {"fly": 1}, 2: {"rat": 1}},
        preset="three-of-a-kind+creature-to-start",
    )
    table = [
        # moves, collection of player_1 afterwards
        ([offer("fly", to=1, says="bat"), call(True)], {"fly": 2}),  # wrong call: 1 takes a fly
        ([offer("rat", to=0, says="toad"), call(False)], {"fly": 2, "rat": 1}),  # right call: 1 takes its rat
        ([offer("rat", to=0, says="rat"), call(False)], {"fly": 2, "rat": 1}),  # wrong call: 0 takes it
    ]
    for moves, expected in table:
        play(e, *moves)
        assert collection(e, 1) == expected
        assert not e.unwrapped.game.over
    play(e, offer("fly", to=1, says="fly"), call(False))  # wrong call: the second fly taken, the third in total
    game = e.unwrapped.game
    assert (game.loser, game.loss_reason) == (1, "same_type")


# ---------------------------------------------------------------- End: same type at exactly loss_count
LOSS_COUNTS = [
    pytest.param({"num_players": 4}, 4, id="classic-4"),
    pytest.param({"num_players": 3, "preset": "three-of-a-kind"}, 3, id="three-of-a-kind-3"),
    pytest.param({"num_players": 2}, 5, id="duel-5"),
    pytest.param({"num_players": 2, "preset": "even-deal"}, 5, id="even-deal-duel-5"),
    pytest.param({"num_players": 5, "loss_count": 6}, 6, id="explicit-6"),
    pytest.param({"num_players": 2, "loss_count": 3}, 3, id="explicit-duel-3"),
]


@pytest.mark.parametrize("config, loss_count", LOSS_COUNTS)
def test_end_same_type_loses_at_exactly_loss_count_not_before(config, loss_count):
    n = config["num_players"]
    hands = {0: {"fly": 2, "rat": 1}, 1: {"bat": 3}} | {s: {"toad": 1} for s in range(2, n)}
    e = dealt_env(hands, collections={1: {"fly": loss_count - 2, "spider": loss_count - 1}}, **config)
    assert e.unwrapped.config.loss_count == loss_count
    play(e, offer("fly", to=1, says="bat"), call(True))  # wrong call: 1 takes its (loss_count-1)th fly
    assert collection(e, 1)["fly"] == loss_count - 1
    assert not e.unwrapped.game.over
    play(e, offer("bat", to=0, says="bat"), call(False))  # wrong call: 0 takes a bat
    play(e, offer("fly", to=1, says="bat"), call(True))  # wrong call: 1 takes the loss_count-th fly
    game = e.unwrapped.game
    assert game.over and game.loser == 1 and game.loss_reason == "same_type"
    assert collection(e, 1)["fly"] == loss_count
    assert e.unwrapped.history[-1] == {"type": "loss", "player": "player_1", "reason": "same_type"}


def test_end_a_deal_whose_collection_already_loses_is_refused():
    e = raw_env(num_players=3)
    with pytest.raises(ValueError, match="player_1|seat 1"):
        e.reset(options={"hands": {"player_0": {"fly": 1}}, "collections": {"player_1": {"bat": 4}}})


# ---------------------------------------------------------------- End: empty hand
def test_end_playing_your_last_card_is_not_a_loss_and_an_empty_hand_still_plays():
    e = dealt_env({0: {"fly": 1}, 1: {"bat": 2}, 2: {"rat": 2}})
    table = [
        # moves, who acts next
        ([offer("fly", to=1, says="fly"), call(False)], 1),  # 0 played its last card; 1 took it
        ([offer("bat", to=0, says="rat")], 0),  # the empty-handed player receives...
        ([peek(), pass_to(2, says="bat")], 2),  # ...peeks and passes
        ([call(False)], 2),  # bat claimed, bat revealed: wrong, 2 takes and starts
        ([offer("rat", to=0, says="rat"), call(True)], 2),  # ...and calls: right, 2 takes
    ]
    for moves, next_to_act in table:
        play(e, *moves)
        assert not e.unwrapped.game.over
        assert e.agent_selection == agent(next_to_act)
    assert e.unwrapped.public_view()["hand_sizes"]["player_0"] == 0


@pytest.mark.parametrize(
    "moves, loser",
    [
        pytest.param(
            [offer("fly", to=1, says="fly"), call(True)], 0, id="a right call gives the offerer its last card back"
        ),
        pytest.param(
            [offer("fly", to=1, says="bat"), call(True), offer("bat", to=0, says="fly"), call(True)],
            0,
            id="an empty hand takes a card on its own wrong call",
        ),
        pytest.param(
            [
                offer("fly", to=1, says="bat"),
                call(True),
                offer("bat", to=0, says="toad"),
                peek(),
                pass_to(2, says="bat"),
                call(True),
            ],
            0,
            id="an empty-handed passer takes the card on a right call",
        ),
    ],
)
def test_end_the_player_who_must_start_a_round_with_an_empty_hand_loses(moves, loser):
    e = dealt_env({0: {"fly": 1}, 1: {"bat": 2}, 2: {"rat": 2}})
    play(e, *moves)
    game = e.unwrapped.game
    assert game.over and game.loser == loser and game.loss_reason == "empty_hand"
    assert e.unwrapped.infos[agent(loser)] == {
        **INFO_DEFAULTS,
        "loser": loser,
        "loss_reason": LOSS_REASONS.index("empty_hand"),
    }


def test_end_the_round_of_the_last_card_is_resolved_first_same_type_before_empty_hand():
    e = dealt_env({0: {"fly": 1}, 1: {"bat": 1}, 2: {"rat": 2}}, collections={0: {"fly": 3}})
    play(e, offer("fly", to=1, says="fly"), call(True))
    game = e.unwrapped.game
    assert game.loser == 0 and game.loss_reason == "same_type"


def test_end_a_starter_dealt_an_empty_hand_loses_at_once():
    config = GameConfig(num_players=3)
    game = Game(config, explicit_deal(config, 1, {0: {"fly": 2}, 2: {"bat": 1}}))
    assert game.over and game.loser == 1 and game.loss_reason == "empty_hand"


# ---------------------------------------------------------------- 3 rainbow
SEVEN_TYPES = {"cockroach": 1, "bat": 1, "fly": 1, "toad": 1, "rat": 1, "scorpion": 1, "spider": 1}


@pytest.mark.parametrize("rainbow_loses", [True, False])
def test_rule_3_rainbow_a_collection_of_every_type_loses_only_with_the_flag(rainbow_loses):
    e = dealt_env(
        {0: {"stink_bug": 1, "fly": 1}, 1: {"bat": 1}, 2: {"rat": 1}},
        collections={1: SEVEN_TYPES},
        rainbow_loses=rainbow_loses,
    )
    assert not e.unwrapped.game.over, "seven types are not a rainbow"
    play(e, offer("stink_bug", to=1, says="fly"), call(True))  # wrong: 1 takes the eighth type
    game = e.unwrapped.game
    assert game.over is rainbow_loses
    if rainbow_loses:
        assert (game.loser, game.loss_reason) == (1, "rainbow")
        assert e.unwrapped.infos["player_0"] == {
            **INFO_DEFAULTS,
            "loser": 1,
            "loss_reason": LOSS_REASONS.index("rainbow"),
        }


def test_rule_3_rainbow_a_full_rainbow_in_the_deal_is_refused():
    with pytest.raises(ValueError):
        dealt_env({0: {"fly": 1}, 1: {"bat": 1}}, collections={1: SEVEN_TYPES | {"stink_bug": 1}}, rainbow_loses=True)


# ---------------------------------------------------------------- 5 rewards
@pytest.mark.parametrize("num_players", [2, 3, 4, 5, 6])
def test_rule_5_the_loser_gets_minus_one_and_the_others_share_plus_one(num_players):
    hands = {0: {"fly": 1, "bat": 1}} | {s: {"toad": 1} for s in range(1, num_players)}
    e = env(num_players=num_players)
    e.reset(
        options={
            "starter": "player_0",
            "hands": {agent(s): h for s, h in hands.items()},
            "collections": {"player_1": {"fly": e.unwrapped.config.loss_count - 1}},
        }
    )
    finals = {}
    for a in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        if terminated:
            finals[a] = (reward, info)
            e.step(None)
            continue
        assert reward == 0
        play(e, offer("fly", to=1, says="bat") if a == "player_0" else call(True))
    assert finals["player_1"][0] == -1
    assert all(finals[a][0] == pytest.approx(1 / (num_players - 1)) for a in finals if a != "player_1")
    assert sum(r for r, _ in finals.values()) == pytest.approx(0.0, abs=1e-12)
    assert all(
        info == {**INFO_DEFAULTS, "loser": 1, "loss_reason": LOSS_REASONS.index("same_type")}
        for _, info in finals.values()
    )


# ---------------------------------------------------------------- 6 information: public view, history, render
def moves_from_history(history: list[dict]) -> list[tuple[str, Move]]:
    """The moves of a game, recovered from its public events (an offered card is named by its reveal)."""
    moves: list = []
    offer_at = None
    for event in history:
        kind = event["type"]
        if kind == "offer":
            offer_at = len(moves)
            moves.append((event["player"], event))
        elif kind == "reveal":
            player, offered = moves[offer_at]
            moves[offer_at] = (
                player,
                Move("offer", card=event["card"], target=offered["target"], claim=offered["claim"]),
            )
        elif kind == "peek":
            moves.append((event["player"], Move("peek")))
        elif kind == "pass":
            moves.append((event["player"], Move("pass", target=event["target"], claim=event["claim"])))
        elif kind == "call":
            moves.append((event["player"], Move("call", believe=event["believe"])))
        elif kind == "place" and event["source"] == "replacement":
            moves.append((event["player"], Move("place", card=event["card"])))
    return moves


@pytest.mark.parametrize("preset, num_players", rule_sets(("classic", "rainbow+creature-to-start", "royal")))
def test_rule_6_public_view_and_history_are_json_and_replay_the_game(preset, num_players):
    e = raw_env(preset=preset, num_players=num_players)
    e.reset(seed=21)
    rng = np.random.default_rng(21)
    while not e.game.over:
        json.dumps(e.public_view())
        play_random(e, rng, max_steps=1)
    view, history = e.public_view(), e.history
    assert json.loads(json.dumps(view)) == view
    assert json.loads(json.dumps(history)) == history
    for key in ("collections", "hand_sizes", "chain"):
        assert key in view
    assert history[0]["type"] == "deal" and history[-1]["type"] == "loss"

    replay = raw_env(preset=preset, num_players=num_players)
    replay.reset(seed=21)
    for player, move in moves_from_history(history):
        assert replay.agent_selection == player
        play(replay, move)
    assert replay.history == history
    assert replay.public_view() == view
    assert replay.rewards == e.rewards


def test_rule_6_ansi_render_shows_no_hidden_information_unless_asked():
    def rendered(hand0: dict, full: bool) -> str:
        e = dealt_env({0: hand0, 1: {"bat": 2}, 2: {"rat": 1, "toad": 1}}, render_mode="ansi")
        card = next(iter(hand0))
        play(e, offer(card, to=1, says="toad"), peek(), pass_to(2, says="toad"))
        return e.render(full_information=full)

    a, b = rendered({"fly": 2, "bat": 1}, False), rendered({"spider": 3}, False)
    assert a == b, "same public information, different hidden cards: same picture"
    assert "player_0" in a and "toad" in a
    assert rendered({"fly": 2, "bat": 1}, True) != rendered({"spider": 3}, True)


def test_rule_6_render_modes(capsys):
    e = raw_env(render_mode="human", num_players=3)
    e.reset(seed=0)
    assert e.render() is None
    assert "player_0" in capsys.readouterr().out
    e = raw_env(num_players=3)
    e.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert e.render() is None  # no render mode: a warning, nothing drawn
    e = raw_env(render_mode="ansi", num_players=3)
    e.reset(seed=0)
    play_random(e, np.random.default_rng(0))
    assert e.public_view()["loser"] in e.render()


def test_rule_6_decode_observation_reads_the_observers_view():
    e = dealt_env(
        {0: {"fly": 2, "bat": 1}, 1: {"rat": 2}, 2: {"toad": 1, "spider": 1}}, collections={2: {"cockroach": 1}}
    )
    play(e, offer("fly", to=1, says="bat"))
    config = e.unwrapped.config
    holder = decode_observation(e.observe("player_1")["observation"], config)
    assert holder["own_hand"] == {"rat": 2}
    assert holder["collections"] == [{}, {"cockroach": 1}, {}]  # self, next seat, the seat after
    assert holder["hand_sizes"] == [2, 2, 2]
    assert holder["phase"] == "respond" and holder["to_act"] == 0
    assert holder["chain"] == {
        "claim": "bat",
        "latest_passer": 2,
        "holder": 0,
        "seen": [2],
        "claims": {2: "bat"},
        "card": None,
    }
    offerer = decode_observation(e.observe("player_0")["observation"], config)
    assert offerer["own_hand"] == {"fly": 1, "bat": 1}
    assert offerer["chain"]["card"] == "fly" and offerer["chain"]["holder"] == 1 and offerer["to_act"] == 1
    json.dumps(holder)
    third = decode_observation(e.observe("player_2")["observation"], config)
    assert third["chain"]["card"] is None
    play(e, peek())  # the holder now knows the card; the third player still does not
    assert decode_observation(e.observe("player_1")["observation"], config)["chain"]["card"] == "fly"
    peeked = third["history"][2] | {"peeks": 1}  # player_1 is two seats after player_2
    expected = third | {
        "phase": "pass",
        "chain": third["chain"] | {"seen": [1, 2]},
        "history": third["history"][:2] + [peeked],
    }
    assert decode_observation(e.observe("player_2")["observation"], config) == expected
    play(e, pass_to(2, says="bat"), call(True))  # wrong: bat claimed, fly revealed; 2 takes
    after = decode_observation(e.observe("player_2")["observation"], config)
    assert after["history"][1]["false_claims"] == 1  # player_0, one seat after player_2
    assert after["history"][2]["false_claims"] == 1 and after["history"][2]["peeks"] == 1  # player_1
    assert after["history"][0]["wrong_calls"] == 1  # player_2 itself
    assert after["collections"][0] == {"cockroach": 1, "fly": 1}
    assert after["chain"] is None
    with pytest.raises(ValueError):
        decode_observation(np.zeros(3, np.float32), config)


def test_rule_6_encode_and_decode_name_moves_by_agent_and_type():
    e = dealt_env(FOUR_HANDS)
    u = e.unwrapped
    move = offer("fly", to=2, says="bat")
    assert u.decode(u.encode(move)) == move
    assert u.decode(u.encode(Move("pass", target="player_0", claim="rat"), actor="player_3"), actor="player_3") == Move(
        "pass", target="player_0", claim="rat"
    )
    for bad, named in [
        (Move("offer", card="dragon", target="player_1", claim="bat"), "dragon"),
        (Move("offer", card="fly", target="player_1", claim="dragon"), "dragon"),
        (Move("offer", card="fly", target="player_0", claim="bat"), "player_0"),
        (Move("offer", card="fly", target="player_9", claim="bat"), "player_9"),
        (Move("call", believe="yes"), "yes"),
        (Move("place", card="fly"), "place"),
        (Move("shout"), "shout"),
    ]:
        with pytest.raises(ValueError, match=named):
            u.encode(bad)
    with pytest.raises(ValueError, match="1000"):
        u.decode(1000)


# ---------------------------------------------------------------- reset options
@pytest.mark.parametrize(
    "options, named",
    [
        pytest.param({"hands": {"player_0": {"fly": 9}}}, "fly", id="too-many-of-a-type"),
        pytest.param({"hands": {"player_0": {"fly": 5}, "player_1": {"fly": 4}}}, "fly", id="too-many-across-hands"),
        pytest.param(
            {"hands": {"player_0": {"fly": 5}}, "collections": {"player_1": {"fly": 4}}},
            "fly",
            id="too-many-with-collections",
        ),
        pytest.param({"hands": {"player_0": {"dragon": 1}}}, "dragon", id="unknown-card"),
        pytest.param({"hands": {"player_0": {"royal_rat": 1}}}, "royal_rat", id="royal-card-in-classic"),
        pytest.param({"hands": {"player_9": {"fly": 1}}}, "player_9", id="unknown-agent"),
        pytest.param({"hands": {"player_0": {"fly": -1}}}, "-1", id="negative-count"),
        pytest.param({"hands": {"player_0": {"fly": 1.5}}}, "1.5", id="fractional-count"),
        pytest.param({"hands": ["fly"]}, "hands", id="hands-not-a-dict"),
        pytest.param({"hands": {"player_0": ["fly"]}}, "fly", id="hand-not-a-dict"),
        pytest.param({"collections": {"player_0": {"fly": 1}}}, "hands", id="collections-without-hands"),
        pytest.param({"starter": "player_7"}, "player_7", id="unknown-starter"),
        pytest.param(
            {"hands": {"player_0": {"fly": 1}}, "penalty_deck": ["fly"]}, "penalty_deck", id="penalty-deck-in-classic"
        ),
    ],
)
def test_reset_refuses_a_deal_the_deck_cannot_supply_and_stays_usable(options, named):
    e = env(num_players=4)
    e.reset(seed=0)
    play_random(e.unwrapped, np.random.default_rng(0), max_steps=5)
    before = e.unwrapped.public_view()
    with pytest.raises(ValueError) as refused:
        e.reset(seed=1, options=options)
    assert named in str(refused.value)
    assert e.unwrapped.public_view() == before, "a refused reset leaves the current game alone"
    e.reset(seed=2)
    play_random(e.unwrapped, np.random.default_rng(2))
    assert e.unwrapped.game.over
    e.reset(options={"starter": "player_1", "hands": {"player_1": {"fly": 1}, "player_2": {"bat": 1}}})
    assert e.agent_selection == "player_1"


def test_reset_explicit_deal_takes_exactly_the_named_cards_and_the_rest_is_out_of_play():
    e = dealt_env({0: {"fly": 2, "bat": 1}, 1: {"rat": 3}, 2: {}}, collections={2: {"toad": 2}})
    game = e.unwrapped.game
    assert e.unwrapped.public_view()["hand_sizes"] == {"player_0": 3, "player_1": 3, "player_2": 0}
    assert hand(e, 0) == {"fly": 2, "bat": 1}
    assert collection(e, 2) == {"toad": 2}
    assert sum(game.removed) == 64 - 8
    assert e.agent_selection == "player_0"


def test_reset_warns_about_unknown_option_keys():
    e = raw_env(num_players=3)
    with pytest.warns(UserWarning, match="colour"):
        e.reset(seed=0, options={"colour": "red"})
    assert e.agents == e.possible_agents
