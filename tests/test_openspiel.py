"""The OpenSpiel game ``python_cockroach_poker``: registration, params, random_sim_test, and the same
games as the AEC env (masks, observations, returns); information states; NashConv against OpenSpiel's.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

import baselines  # noqa: E402
import cockroach_env.openspiel as cos  # noqa: E402
from cockroach_env import GameConfig, raw_env  # noqa: E402
from training.evaluation.exact import evaluate, game_tree  # noqa: E402

MICRO = {"num_players": 2, "num_types": 2, "copies_per_type": 2, "discard": 2, "loss_count": 2}
RULE_SETS = [
    {"preset": "mini"},
    {"preset": "mini-3p"},
    {"preset": "mini+rainbow"},
    {"num_players": 4},
    {"num_players": 2},
    {"num_players": 5, "preset": "rainbow+creature-to-start"},
    {"num_players": 3, "edition": "royal"},
    {"num_players": 2, "edition": "royal", "blank_counts_as_royal": True},
    {"num_players": 3, "max_steps": 12},
    {"preset": "mini", "starter": 1},
]


def load(params: dict):
    return pyspiel.load_game(cos.SHORT_NAME, params)


def test_params_are_the_config_options_and_preset():
    assert load({"preset": "mini"}).config == GameConfig.from_options(preset="mini")
    assert load({"preset": "mini", "discard": 0}).config == GameConfig.from_options(preset="mini", discard=0)
    assert load({}).config == GameConfig()
    assert load({"num_players": 3, "rainbow_loses": True, "edition": "royal"}).config == GameConfig(
        num_players=3, rainbow_loses=True, edition="royal"
    )
    game = load({"preset": "mini-3p"})
    assert game.num_players() == 3
    assert game.num_distinct_actions() == raw_env(preset="mini-3p").action_space("player_0").n
    assert (
        game.observation_tensor_size()
        == raw_env(preset="mini-3p").observation_space("player_0")["observation"].shape[0]
    )


@pytest.mark.parametrize(
    "params, name",
    [
        ({"num_players": 9}, "num_players"),
        ({"preset": "mega"}, "preset"),
        ({"edition": "deluxe"}, "edition"),
        ({"preset": "mini", "loss_count": 5}, "loss_count"),
    ],
)
def test_bad_params_are_refused_naming_the_option(params, name):
    with pytest.raises(Exception, match=name):
        load(params)


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"starter": -2}, "starter=-2 is not allowed; expected -1 (random) or a seat from 0 to 3"),
        ({"max_steps": -5}, "max_steps=-5 is not allowed; expected -1 or an integer from 1 to 32767"),
        ({"num_players": -3}, "num_players=-3 is not allowed; expected an integer from 2 to 6, or -1 for the default"),
        (
            {"opening_cards": -2},
            "opening_cards=-2 is not allowed; expected 0 or 1 (one face-up card per collection), or -1 for the default",
        ),
        (
            {"preset": "mini", "loss_count": 5},
            "loss_count=5 is not allowed with copies_per_type=2; expected at most 2 "
            "so that the same-type loss can happen, or -1 for the default",
        ),
    ],
)
def test_bad_params_are_refused_in_openspiels_terms(params, expected):
    """OpenSpiel parameters cannot be None: the default is -1, and the refusal says so."""
    with pytest.raises(ValueError) as caught:
        load(params)
    assert str(caught.value) == expected
    load({**params, **{name: cos.DEFAULT for name in params if name != "preset"}})


@pytest.mark.parametrize("params", RULE_SETS, ids=json.dumps)
def test_random_sim_test(params):
    pyspiel.random_sim_test(load(params), num_sims=3, serialize=False, verbose=False)


def test_random_sim_test_with_serialization_on_mini():
    pyspiel.random_sim_test(load({"preset": "mini-3p"}), num_sims=10, serialize=True, verbose=False)


def _deal_options(state, config: GameConfig) -> dict:
    cards, d = config.cards, state.p.dealt
    named = lambda row: {cards.identities[c]: k for c, k in enumerate(row) if k}  # noqa: E731
    options = {
        "starter": f"player_{state.p.starter}",
        "hands": {f"player_{s}": named(row) for s, row in enumerate(d["hand"])},
        "collections": {f"player_{s}": named(row) for s, row in enumerate(d["collection"])},
    }
    if config.edition == "royal":
        options["penalty_deck"] = [cards.identities[c] for c in d["penalty"]]
    return options


@pytest.mark.parametrize("params", RULE_SETS, ids=json.dumps)
def test_same_random_games_as_the_aec_env(params):
    game = load(params)
    config = game.config
    env = raw_env(config=config)
    rng = np.random.default_rng(7)
    for _ in range(4):
        state = game.new_initial_state()
        while state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        env.reset(options=_deal_options(state, config))
        while not state.is_terminal():
            seat = state.current_player()
            assert env.agent_selection == f"player_{seat}"
            for p in range(config.num_players):
                np.testing.assert_array_equal(state.observation_tensor(p), env.observe(f"player_{p}")["observation"])
            mask = env.observe(env.agent_selection)["action_mask"]
            assert state.legal_actions() == np.flatnonzero(mask).tolist()
            action = int(rng.choice(state.legal_actions()))
            state.apply_action(action)
            env.step(action)
        assert all(env.terminations.values()) or all(env.truncations.values())
        assert state.returns() == [env._cumulative_rewards[f"player_{p}"] for p in range(config.num_players)]


def test_chance_nodes_deal_like_the_env():
    """Every complete deal of the chance nodes, with its probability, is engine.deal_distribution's."""
    from cockroach_env.engine import deal_distribution

    game = load({"preset": "mini"})
    found = {}

    def walk(state, p):
        if not state.is_chance_node():
            d = state.p.dealt
            key = (state.p.starter, tuple(map(tuple, d["hand"])), tuple(d["removed"]))
            found[key] = found.get(key, 0.0) + p
            return
        for outcome, q in state.chance_outcomes():
            walk(state.child(outcome), p * q)

    walk(game.new_initial_state(), 1.0)
    expected = {(d.starter, tuple(map(tuple, d.hands)), tuple(d.removed)): p for p, d in deal_distribution(game.config)}
    assert found.keys() == expected.keys()
    for key, p in expected.items():
        assert found[key] == pytest.approx(p, abs=1e-12)


def _decision_states(game):
    stack = [game.new_initial_state()]
    while stack:
        state = stack.pop()
        if state.is_terminal():
            continue
        if state.is_chance_node():
            stack.extend(state.child(a) for a, _ in state.chance_outcomes())
            continue
        yield state
        stack.extend(state.child(a) for a in state.legal_actions())


@pytest.mark.parametrize("params", [MICRO, {**MICRO, "num_players": 3, "discard": 1}])
def test_information_states_have_perfect_recall_and_match_the_exact_tree(params):
    game = load(params)
    strings: dict[str, bytes] = {}
    for state in _decision_states(game):
        player = state.current_player()
        key = state.information_state_string(player)
        tensor = np.asarray(state.information_state_tensor(player)).tobytes()
        assert strings.setdefault(key, tensor) == tensor  # the tensor is a function of the string ...
        # ... it never shows another seat's hand nor a card its viewer did not see
        record = json.loads(key)
        assert record["card_in_play"] is None or player in state.p.game.chain.seen
    assert len(set(strings.values())) == len(strings)  # ... and tells the same information sets apart
    assert len(strings) == game_tree(game.config).sizes()["information_sets"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["random"])
def test_nash_conv_equals_openspiels_on_mini(name):
    from open_spiel.python.algorithms import exploitability

    game = load({"preset": "mini"})
    agent = baselines.make(name, game.config, seed=0)
    theirs = exploitability.nash_conv(game, cos.AgentPolicy(game, agent), return_only_nash_conv=False)
    ours = evaluate(agent, game.config)
    assert ours.nash_conv == pytest.approx(theirs.nash_conv, abs=1e-6)
    np.testing.assert_allclose(ours.best_response_values - ours.policy_values, theirs.player_improvements, atol=1e-6)


@pytest.mark.parametrize("names", [("heuristic",), ("honest", "bluffer"), ("random", "heuristic")])
def test_nash_conv_equals_openspiels_on_micro_decks(names):
    from open_spiel.python.algorithms import exploitability

    game = load({**MICRO, "num_types": 3, "discard": 4})
    agents = [baselines.make(name, game.config, seed=0) for name in names]
    profile = agents[0] if len(agents) == 1 else agents
    theirs = exploitability.nash_conv(game, cos.AgentPolicy(game, profile), return_only_nash_conv=False)
    ours = evaluate(profile, game.config)
    np.testing.assert_allclose(ours.best_response_values - ours.policy_values, theirs.player_improvements, atol=1e-9)


def test_mixtures_equal_openspiels_policy_aggregator():
    """A mixture weighted by reach is OpenSpiel's realization-equivalent aggregate policy (as in PSRO)."""
    from open_spiel.python.algorithms import exploitability, policy_aggregator

    game = load({**MICRO, "num_types": 3, "discard": 4})
    config = game.config
    honest, bluffer, random = (baselines.make(name, config) for name in ("honest", "bluffer", "random"))
    weights = [[0.25, 0.75], [0.6, 0.4]]
    components = [[honest, bluffer], [random, bluffer]]
    policies = [[cos.AgentPolicy(game, agent) for agent in seat] for seat in components]
    aggregate = policy_aggregator.PolicyAggregator(game).aggregate(list(range(2)), policies, weights)
    theirs = exploitability.nash_conv(game, aggregate, return_only_nash_conv=False)
    ours = evaluate([list(zip(w, c)) for w, c in zip(weights, components)], config)
    np.testing.assert_allclose(ours.best_response_values - ours.policy_values, theirs.player_improvements, atol=1e-9)


def test_cfr_average_policies_are_evaluated_like_openspiel():
    """Information-state policies (here OpenSpiel's CFR+ average policy) evaluate to OpenSpiel's NashConv."""
    from open_spiel.python.algorithms import cfr, exploitability

    from training.evaluation.exact import InformationSetPolicy

    game = load({**MICRO, "num_types": 3, "discard": 4})
    solver = cfr.CFRPlusSolver(game)
    for _ in range(5):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    theirs = exploitability.nash_conv(game, average, return_only_nash_conv=False)
    ours = evaluate(InformationSetPolicy.from_openspiel(average), game.config)
    np.testing.assert_allclose(ours.best_response_values - ours.policy_values, theirs.player_improvements, atol=1e-9)
    assert ours.nash_conv > 0


def test_exported_tree_is_the_game_for_openspiels_cpp_solvers():
    """``efg_string``: the same game as a C++ OpenSpiel tree (uniform random and CFR+ NashConv agree with ours)."""
    from training.evaluation.exact import InformationSetPolicy, efg_string

    config = GameConfig(**{**MICRO, "num_types": 3, "discard": 4})
    tree = game_tree(config)
    game = pyspiel.load_efg_game(efg_string(tree))
    assert game.num_players() == 2
    uniform = pyspiel.nash_conv(game, pyspiel.UniformRandomPolicy(game))
    assert uniform == pytest.approx(evaluate(baselines.make("random", config), config).nash_conv, abs=1e-9)
    solver = pyspiel.CFRPlusSolver(game)
    for _ in range(20):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    # the C++ policy, read back by information set ("I<k>") and action ("a<index>")
    table = {}
    for state in _decision_states(game):
        infoset = int(state.information_state_string().rsplit("-I", 1)[1])
        row = np.zeros(tree.masks.shape[1])
        for action, p in average.get_state_policy(state):
            row[int(state.action_to_string(action)[1:])] = p
        table[tree.infoset_strings[infoset]] = row
    ours = evaluate(InformationSetPolicy(table), config).nash_conv
    assert ours == pytest.approx(pyspiel.nash_conv(game, average), abs=1e-9)


# ---------------------------------------------------------------------------- refused actions


def _snapshot(state) -> tuple:
    """What a refused action must leave as it was (OpenSpiel's history and every player's view of the state)."""
    players = range(state.num_players())
    return (
        state.history(),
        state.move_number(),
        state.current_player(),
        str(state),
        state.legal_actions() if not state.is_chance_node() else state.chance_outcomes(),
        [state.information_state_string(p) for p in players] if not state.is_chance_node() else [],
    )


def _first_decision(params: dict):
    state = load(params).new_initial_state()
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[-1][0])
    return state


def _second_chance_node(params: dict):
    state = load(params).new_initial_state()
    state.apply_action(0)  # the starter; then how many cards of the first type are removed
    assert state.is_chance_node()
    return state


def _terminal(params: dict):
    state, rng = _first_decision(params), np.random.default_rng(0)
    while not state.is_terminal():
        state.apply_action(int(rng.choice(state.legal_actions())))
    return state


MINI = {"preset": "mini"}
ROYAL_3P = {"num_players": 3, "edition": "royal"}
ROYAL_PLACE = load(ROYAL_3P).shape.encoding.place_start
REFUSED_ACTIONS = [
    ("starter 999", lambda: load(MINI).new_initial_state(), 999, ["chance outcome 999", "the starter", "[0, 1]"]),
    ("starter 10**9", lambda: load(MINI).new_initial_state(), 10**9, ["chance outcome 1000000000", "[0, 1]"]),
    ("starter 2", lambda: load(MINI).new_initial_state(), 2, ["chance outcome 2", "expected one of [0, 1]"]),
    ("deal count 999", lambda: _second_chance_node(MINI), 999, ["chance outcome 999", "how many"]),
    ("decision 999", lambda: _first_decision(MINI), 999, ["action 999", "out of range", "[0, 15)"]),
    ("decision 10**9", lambda: _first_decision(MINI), 10**9, ["action 1000000000", "out of range"]),
    ("a pass in the offer phase", lambda: _first_decision(MINI), 14, ["action 14", "illegal", "offer phase"]),
    ("a card not in hand", lambda: _first_decision({"preset": "mini", "starter": 0}), 0, ["illegal", "in hand"]),
    ("after the end", lambda: _terminal(MINI), 3, ["terminal state"]),
    ("a place in the offer phase", lambda: _first_decision(ROYAL_3P), ROYAL_PLACE, ["illegal", "cannot place"]),
]


@pytest.mark.parametrize("make, action, fragments", [pytest.param(m, a, f, id=i) for i, m, a, f in REFUSED_ACTIONS])
def test_a_refused_action_is_a_spiel_error_that_changes_nothing(make, action, fragments):
    state = make()
    before = _snapshot(state)
    with pytest.raises(pyspiel.SpielError) as caught:
        state.apply_action(action)
    for fragment in fragments:
        assert fragment in str(caught.value)
    assert _snapshot(state) == before


def test_a_refused_action_raises_the_error_of_openspiels_own_games():
    with pytest.raises(pyspiel.SpielError):  # leduc_poker, C++: SPIEL_CHECK on the dealt card
        pyspiel.load_game("leduc_poker").new_initial_state().apply_action(999)
    with pytest.raises(pyspiel.SpielError):
        load(MINI).new_initial_state().apply_action(999)


@pytest.mark.parametrize("params", [MINI, {"preset": "mini-3p"}, ROYAL_3P], ids=json.dumps)
def test_exactly_the_legal_actions_are_accepted(params):
    """Every action in range and every chance outcome up to the largest is tried: refused iff not offered."""
    game, rng = load(params), np.random.default_rng(3)
    for _ in range(2):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                offered = [a for a, _ in state.chance_outcomes()]
                tried = range(game.max_chance_outcomes() + 1)
            else:
                offered, tried = state.legal_actions(), range(game.num_distinct_actions())
            for action in tried:
                child = state.clone()
                try:
                    child.apply_action(action)
                except pyspiel.SpielError:
                    assert action not in offered
                else:
                    assert action in offered
            state.apply_action(int(rng.choice(offered)))


ACTION_STRINGS = [
    ("action 10**6", lambda: _first_decision(MINI), 0, 10**6, ["action 1000000", "out of range", "[0, 15)"]),
    ("action -5", lambda: _first_decision(MINI), 1, -5, ["action -5", "out of range"]),
    ("player 7", lambda: _first_decision(MINI), 7, 0, ["player 7", "from 0 to 1"]),
    ("player -4", lambda: _first_decision(MINI), -4, 0, ["player -4", "from 0 to 1"]),
    ("chance after the deal", lambda: _first_decision(MINI), -1, 0, ["the deal is complete"]),
    ("chance outcome 999", lambda: load(MINI).new_initial_state(), -1, 999, ["chance outcome 999", "[0, 1]"]),
]


@pytest.mark.parametrize("make, player, action, fragments", [pytest.param(*c[1:], id=c[0]) for c in ACTION_STRINGS])
def test_action_to_string_refuses_an_action_or_player_out_of_range(make, player, action, fragments):
    state = make()
    with pytest.raises(pyspiel.SpielError) as caught:
        state.action_to_string(player, action)
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_action_to_string_describes_any_action_in_range_for_any_player():
    state = _first_decision(MINI)
    assert state.action_to_string(1, 14) == "pass to player_0 claiming fly"  # not legal now, still described
    assert state.action_to_string(0, 0).startswith("offer cockroach to player_1")
    assert load(MINI).new_initial_state().action_to_string(-1, 1) == "starter player_1"
