"""The action mask is exactly the set of moves the rules engine accepts, in every phase.

Illegal actions raise ``IllegalActionError`` (naming the action, its move and the
reason) and leave the game untouched; the opt-in ``illegal_action="penalize"`` mode ends
the game with -1 for the offender instead.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from cockroach_env import IllegalActionError, IllegalMove, Phase, env, raw_env
from cockroach_env.encoding import apply_action

from .conftest import call, dealt_env, legal_actions, offer, pass_to, peek, play, rule_sets


def sample_states(preset: str, num_players: int, seeds=range(2), per_phase: int = 2) -> list:
    """Copies of envs taken along random games, up to ``per_phase`` per phase and game."""
    states = []
    for seed in seeds:
        e = raw_env(preset=preset, num_players=num_players)
        e.reset(seed=seed)
        rng = np.random.default_rng(seed)
        taken = dict.fromkeys(Phase, 0)
        while not e.game.over:
            phase = e.game.phase
            if taken[phase] < per_phase and (taken[phase] == 0 or rng.random() < 0.3):
                taken[phase] += 1
                states.append(copy.deepcopy(e))
            e.step(int(rng.choice(legal_actions(e))))
        states.append(e)  # the finished game
    return states


def royal_replacement_env(claim_fits: bool):
    """Royal: player_1 wrongly doubts a joker and must place replacement cards."""
    claim = "rat" if claim_fits else "fly"
    e = dealt_env(
        {0: {"joker": 1, "toad": 2}, 1: {"rat": 2, "royal_rat": 1, "bat": 1, "blank": 1}, 2: {"fly": 2}},
        preset="royal",
        num_players=3,
    )
    play(e, offer("joker", to=1, says=claim), call(False))
    assert e.game.phase is Phase.PLACE
    return e


def assert_mask_matches_engine(e) -> set:
    """Every action: the engine accepts it iff its mask bit is set. Returns the actions it accepted."""
    game, enc = e.game, e.encoding
    mask = e.observe(e.agent_selection)["action_mask"] if not game.over else np.zeros(enc.num_actions, np.int8)
    before = copy.deepcopy(vars(game))
    # probes share the immutable rules and skip the event log: the same copy, only faster
    shared = {id(game.config): game.config, id(game.cards): game.cards, id(game.events): []}
    accepted = set()
    for action in range(enc.num_actions):
        if mask[action]:
            probe = copy.deepcopy(game, dict(shared))
            apply_action(probe, enc, action)  # must not raise
            accepted.add(action)
        else:
            with pytest.raises(IllegalMove):
                apply_action(game, enc, action)
            assert vars(game) == before, f"refused action {action} changed the game"
    return accepted


@pytest.mark.parametrize("preset, num_players", rule_sets())
def test_mask_equals_the_moves_the_engine_accepts_in_every_phase(preset, num_players):
    phases = set()
    for e in sample_states(preset, num_players):
        assert_mask_matches_engine(e)
        phases.add(e.game.phase)
    expected = {Phase.OFFER, Phase.RESPOND, Phase.OVER} | ({Phase.PASS} if num_players > 2 else set())
    assert expected <= phases


@pytest.mark.parametrize("claim_fits", [True, False], ids=["fitting-claim", "no-fitting-card"])
def test_mask_equals_the_moves_the_engine_accepts_in_the_royal_place_phase(claim_fits):
    e = royal_replacement_env(claim_fits)
    placeable = {
        e.encoding.place_action(e.cards.index(name))
        for name in (("rat", "royal_rat") if claim_fits else ("rat", "royal_rat", "bat"))
    }
    assert assert_mask_matches_engine(e) == placeable


def observable(e) -> tuple:
    """Everything an outside caller can read from the env."""
    return (
        e.public_view(),
        e.history,
        e.state().tobytes(),
        [(obs["observation"].tobytes(), obs["action_mask"].tobytes()) for obs in map(e.observe, e.possible_agents)],
        e.agent_selection,
        dict(e.rewards),
        dict(e._cumulative_rewards),
        dict(e.terminations),
        dict(e.infos),
    )


@pytest.mark.parametrize("preset, num_players", rule_sets(("classic", "royal")))
def test_illegal_actions_raise_naming_action_move_and_reason_and_change_nothing(preset, num_players):
    for e in sample_states(preset, num_players, seeds=[7], per_phase=1)[:-1]:
        mask = e.observe(e.agent_selection)["action_mask"]
        before = observable(e)
        for action in np.flatnonzero(mask == 0):
            move = e.decode(action)
            with pytest.raises(IllegalActionError) as refused:
                e.step(int(action))
            error = refused.value
            assert error.action == action and error.move == move and error.agent == e.agent_selection
            assert str(action) in str(error) and str(move) in str(error) and error.reason in str(error)
            assert error.reason
        assert observable(e) == before
        e.step(int(np.flatnonzero(mask)[0]))  # and it is still playable


def test_illegal_action_in_the_royal_place_phase_is_refused_with_the_placeable_cards():
    e = royal_replacement_env(claim_fits=True)
    before = observable(e)
    with pytest.raises(IllegalActionError, match="bat"):
        e.step(e.encoding.place_action(e.cards.index("bat")))
    with pytest.raises(IllegalActionError, match="blank"):
        e.step(e.encoding.place_action(e.cards.index("blank")))
    assert observable(e) == before


@pytest.mark.parametrize("preset, num_players", rule_sets(("classic", "royal")))
def test_mask_is_all_zeros_for_agents_not_to_act(preset, num_players):
    for e in sample_states(preset, num_players, seeds=[1], per_phase=2):
        for a in e.possible_agents:
            mask = e.observe(a)["action_mask"]
            assert mask.dtype == np.int8 and mask.shape == (e.encoding.num_actions,)
            if a == e.agent_selection and not e.game.over:
                assert mask.any()
            else:
                assert not mask.any(), a


@pytest.mark.parametrize("action", [-1, 219, 10_000, 1.5, "3", None, "peek", [0]])
def test_out_of_range_and_non_integer_actions_raise_naming_the_action(action):
    e = env(num_players=4)
    e.reset(seed=0)
    before = observable(e.unwrapped)
    with pytest.raises(IllegalActionError) as refused:
        e.step(action)
    assert repr(action) in str(refused.value)
    assert observable(e.unwrapped) == before


def test_numpy_integer_actions_are_accepted():
    e = env(num_players=4)
    e.reset(seed=0)
    action = legal_actions(e)[0]
    e.step(np.int32(action))
    assert e.unwrapped.history[-1]["type"] == "offer"


def test_wrong_phase_moves_are_refused():
    e = dealt_env({0: {"fly": 2}, 1: {"bat": 2}, 2: {"rat": 2}})
    with pytest.raises(IllegalActionError, match="offer"):
        play(e, call(True))  # nothing to call before the offer
    play(e, offer("fly", to=1, says="fly"))
    with pytest.raises(IllegalActionError):
        play(e, offer("bat", to=2, says="bat"))  # the holder responds, no new offer
    with pytest.raises(IllegalActionError, match="pass"):
        e.step(e.encoding.pass_action(1, 0))  # passing needs a peek first
    play(e, peek())
    with pytest.raises(IllegalActionError):
        play(e, call(False))  # after peeking, the holder can no longer call


@pytest.mark.parametrize("bad", [-1, 219, 1.5])
def test_penalize_mode_ends_the_game_with_minus_one_for_the_offender(bad):
    e = env(num_players=4, illegal_action="penalize")
    e.reset(seed=0)
    offender = e.agent_selection
    illegal = int(np.flatnonzero(e.observe(offender)["action_mask"] == 0)[0]) if bad == -1 else bad
    e.step(illegal)
    finals = {}
    for a in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        assert terminated and not truncated
        assert not obs["action_mask"].any()
        finals[a] = (reward, info)
        e.step(None)
    assert set(finals) == set(e.possible_agents)
    assert finals[offender][0] == -1
    assert all(reward == 0 for a, (reward, _) in finals.items() if a != offender)
    assert all(e.possible_agents[info["offender"]] == offender and info["illegal_move"] for _, info in finals.values())


def test_penalize_mode_plays_legal_actions_normally():
    a, b = env(num_players=3, illegal_action="penalize"), env(num_players=3)
    for e in (a, b):
        e.reset(seed=5)
    rng = np.random.default_rng(0)
    while not a.unwrapped.game.over:
        action = int(rng.choice(legal_actions(a)))
        a.step(action)
        b.step(action)
    assert a.unwrapped.history == b.unwrapped.history
    assert a.rewards == b.rewards


def test_forced_call_masks_the_peek_bit_when_everybody_has_seen_the_card():
    e = dealt_env({0: {"fly": 2}, 1: {"bat": 2}, 2: {"rat": 2}})
    play(e, offer("fly", to=1, says="bat"), peek(), pass_to(2, says="fly"))
    mask = e.observe("player_2")["action_mask"]
    assert list(mask[e.encoding.respond_start : e.encoding.pass_start]) == [1, 1, 0]
    with pytest.raises(IllegalActionError, match="must call"):
        play(e, peek())
