"""The PSRO meta-game and its solvers: known equilibria of small symmetric games."""

from __future__ import annotations

import numpy as np
import pytest

from training.algorithms.meta_solvers import SOLVERS, MetaGame, solve


def _rock_paper_scissors(games: int = 100) -> MetaGame:
    """Two players; at each table of two different members the beaten one loses every game."""
    game = MetaGame(num_players=2, size=3)
    beats = {(0, 2), (1, 0), (2, 1)}  # rock beats scissors, paper beats rock, scissors beats paper
    for table in game.tables():
        a, b = table
        if a == b:
            game.record(table, {a: 2 * games}, {a: games})
        else:
            loser = b if (a, b) in beats else a
            game.record(table, {a: games, b: games}, {a: games * (loser == a), b: games * (loser == b)})
    return game


def _dominated(num_players: int) -> MetaGame:
    """Member 1 loses every game it plays against member 0 (at any table with both), else seats share the losses."""
    game = MetaGame(num_players=num_players, size=2)
    for table in game.tables():
        counts = {m: table.count(m) * 60 for m in set(table)}
        if len(set(table)) == 1:
            losses = {m: 60 for m in set(table)}
        else:
            losses = {0: 0, 1: 60}
        game.record(table, counts, losses)
    return game


@pytest.mark.parametrize("name", ["prd", "regret_matching", "alpharank"])
def test_rock_paper_scissors_has_the_uniform_equilibrium(name):
    x = solve(name, _rock_paper_scissors())
    np.testing.assert_allclose(x, [1 / 3] * 3, atol=0.02)


@pytest.mark.parametrize("num_players", [2, 3, 4])
@pytest.mark.parametrize("name", ["prd", "regret_matching", "alpharank"])
def test_a_dominated_member_gets_almost_no_weight(name, num_players):
    game = _dominated(num_players)
    x = solve(name, game)
    assert x[0] > 0.98
    assert game.nash_conv(x) < 0.01
    assert game.nash_conv(np.array([0.0, 1.0])) == pytest.approx(
        1 / num_players
    )  # member 0 never loses against all-1 tables: parity - 0


def test_expected_payoffs_are_multinomial_over_the_opponent_seats():
    game = _dominated(3)
    x = np.array([0.25, 0.75])
    u = game.expected_payoffs(x)
    # member 1 loses every game with a member 0 at the table, shared between its seats; a third of them at an all-1
    # table
    assert u[1] == pytest.approx(-(0.25**2 * 1 + 2 * 0.25 * 0.75 / 2 + 0.75**2 / 3))
    assert u[0] == pytest.approx(-(0.25**2) / 3)


def test_the_meta_game_round_trips_through_json_and_reports_missing_tables():
    game = _rock_paper_scissors()
    again = MetaGame.from_dict(game.to_dict())
    assert again.to_dict() == game.to_dict()
    np.testing.assert_allclose(again.expected_payoffs(np.ones(3) / 3), game.expected_payoffs(np.ones(3) / 3))
    again.size = 4
    assert again.missing_tables() == [(0, 3), (1, 3), (2, 3), (3, 3)]
    with pytest.raises(ValueError, match=r"lacks the payoffs of tables \[\(0, 3\)"):
        again.expected_payoffs(np.ones(4) / 4)
    low, high = game.payoff_ci95((0, 0), 0)
    assert low < game.payoff((0, 0), 0) == -0.5 < high


def test_bad_input_is_refused_by_name():
    game = MetaGame(num_players=2, size=2)
    with pytest.raises(ValueError, match=r"table \(0, 5\) is not allowed"):
        game.record((0, 5), {0: 1, 5: 1}, {0: 1, 5: 0})
    with pytest.raises(ValueError, match=r"meta_solver='nash' is not allowed; expected one of"):
        solve("nash", game)
    assert set(SOLVERS) >= {"prd", "regret_matching", "alpharank", "uniform"}


# ---------------------------------------------------------------------------- weights against known exploiters


def _exploiter_game(num_players: int, table: dict[tuple[int, tuple[int, ...]], float], size: int, exploiters: int):
    from training.algorithms.meta_solvers import ExploiterGame

    game = ExploiterGame(num_players, size=size, exploiters=exploiters)
    for (j, rest), rate in table.items():
        game.record(j, rest, 1000, round(1000 * rate))
    return game


def test_minimax_weights_balance_two_exploiters_that_each_beat_one_member():
    from training.algorithms.meta_solvers import minimax_weights

    # 2 players: exploiter 0 beats member 1 (loses 10%) but not member 0 (50%); exploiter 1 the other way round
    game = _exploiter_game(2, {(0, (0,)): 0.5, (0, (1,)): 0.1, (1, (0,)): 0.1, (1, (1,)): 0.5}, size=2, exploiters=2)
    x = minimax_weights(game)
    assert x == pytest.approx([0.5, 0.5], abs=0.01)
    assert game.exploiter_loss_rates(x) == pytest.approx([0.3, 0.3], abs=0.005)
    # member 0 loses 2% against the baseline, member 1 10%: at most 4% needs x_0 >= 0.75
    x = minimax_weights(game, {"heuristic": np.array([0.02, 0.10])}, {"heuristic": 0.04})
    assert x == pytest.approx([0.75, 0.25], abs=0.01) and x @ [0.02, 0.10] <= 0.04 + 1e-9
    with pytest.raises(
        ValueError,
        match=r"no mixture of these members meets the limits \{'heuristic': 0.01\}; the lowest loss rate each "
        r"allows is \{'heuristic': 0.02\}",
    ):
        minimax_weights(game, {"heuristic": np.array([0.02, 0.10])}, {"heuristic": 0.01})


def test_cap_weights_keeps_every_row_a_distribution_under_the_cap_and_leaves_rows_inside_alone():
    from training.algorithms.meta_solvers import cap_weights

    rows = np.array([[1.0, 0.0, 0.0, 0.0], [0.7, 0.2, 0.1, 0.0], [0.25, 0.25, 0.25, 0.25], [0.3, 0.3, 0.3, 0.1]])
    capped = cap_weights(rows, 0.3)
    assert capped.sum(axis=1) == pytest.approx(np.ones(4)) and (capped >= 0).all() and (capped <= 0.3 + 1e-12).all()
    assert capped[0] == pytest.approx([0.3, 0.7 / 3, 0.7 / 3, 0.7 / 3])  # the others all 0: shared equally
    assert capped[1] == pytest.approx(
        [0.3, 0.3, 0.3, 0.1]
    )  # 0.7 -> 0.3, then 0.2 * 0.7 / 0.3 -> 0.3 is capped in turn, 0.1 keeps the rest
    assert capped[2:] == pytest.approx(rows[2:])  # already inside
    assert cap_weights(rows, 0.25) == pytest.approx(np.full((4, 4), 0.25))  # a cap of 1/K leaves only the centre
    rng = np.random.default_rng(0)
    random_rows = cap_weights(rng.dirichlet(np.full(6, 0.3), size=500), 0.2)
    assert (
        random_rows.sum(axis=1) == pytest.approx(np.ones(500))
        and (random_rows <= 0.2 + 1e-12).all()
        and (random_rows >= 0).all()
    )


def test_minimax_weights_under_a_cap_spread_the_weight_and_refuse_a_cap_below_one_over_k():
    from training.algorithms.meta_solvers import minimax_weights

    # 2 players, 3 members: no exploiter beats member 0 (50%); exploiter 0 beats member 2 (10%) more than member 1
    # (40%),
    # exploiter 1 member 1 (10%) more than member 2 (20%)
    table = {(0, (0,)): 0.5, (0, (1,)): 0.4, (0, (2,)): 0.1, (1, (0,)): 0.5, (1, (1,)): 0.1, (1, (2,)): 0.2}
    game = _exploiter_game(2, table, size=3, exploiters=2)
    assert minimax_weights(game) == pytest.approx([1.0, 0.0, 0.0], abs=0.01)  # uncapped: all on member 0
    # capped at 0.5: member 0 takes the cap and the rest is split so that both exploiters lose alike,
    # 0.3 + 0.3 a = 0.35 - 0.1 a with a = x_1: a = 0.125, both at 0.3375
    x = minimax_weights(game, max_weight=0.5)
    assert x.max() <= 0.5 + 1e-9 and x == pytest.approx([0.5, 0.125, 0.375], abs=0.01)
    assert game.exploiter_loss_rates(x) == pytest.approx([0.3375, 0.3375], abs=0.003)
    assert minimax_weights(game, max_weight=1 / 3) == pytest.approx([1 / 3] * 3)
    for bad in (0.0, 0.3, 1.5):
        with pytest.raises(
            ValueError,
            match=rf"a largest member weight of {bad} is not allowed for 3 members; expected a value in \[1/3, 1\]",
        ):
            minimax_weights(game, max_weight=bad)
    # a cap and a baseline limit that cannot both hold: member 0 alone meets the limit, and the cap forbids it
    with pytest.raises(ValueError, match=r"no mixture of these members with no weight above 0.5 meets the limits"):
        minimax_weights(game, {"heuristic": np.array([0.02, 0.10, 0.10])}, {"heuristic": 0.03}, max_weight=0.5)


def test_an_exploiter_at_a_four_player_table_meets_multinomial_draws():
    from training.algorithms.meta_solvers import ExploiterGame

    game = ExploiterGame(4, size=2, exploiters=1)
    for rest in game.rests():
        game.record(0, rest, 100, 10 * rest.count(1))  # loses 10% more for each copy of member 1 at the table
    assert game.exploiter_loss_rates(np.array([0.5, 0.5])) == pytest.approx([0.15])  # 0.1 * E[copies] = 0.1 * 1.5
    assert ExploiterGame.from_dict(game.to_dict()).exploiter_loss_rates(np.array([0.2, 0.8])) == pytest.approx([0.24])
    with pytest.raises(ValueError, match="lacks the tables"):
        ExploiterGame(4, size=2, exploiters=1).loss_table()


def test_more_games_at_a_table_already_played_change_the_expected_payoffs():
    """``record`` adds games to a table that has some: the payoffs used afterwards are the pooled ones, not those
    cached before.
    """
    game = _dominated(2)
    x = np.array([0.5, 0.5])
    before = game.expected_payoffs(x)
    game.record(
        (0, 1), {0: 60, 1: 60}, {0: 60, 1: 0}
    )  # as many games again, now member 0 loses them all: the table is even
    fresh = MetaGame.from_dict(game.to_dict())
    assert game.payoff((0, 1), 0) == game.payoff((0, 1), 1) == -0.5
    np.testing.assert_allclose(game.expected_payoffs(x), fresh.expected_payoffs(x))
    assert not np.allclose(game.expected_payoffs(x), before)
