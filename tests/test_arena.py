"""Arena: fair schedules, exact duplicate deals, honest intervals, engines that agree, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import baselines
from baselines import Agent
from cockroach_env import GameConfig, raw_env
from cockroach_env.engine import random_deal
from training.cli import eval as eval_cli
from training.evaluation.arena import (
    ArenaError,
    Behaviour,
    batched_available,
    deal_for,
    expand_lineup,
    play_league,
    play_match,
    reset_options,
    schedule,
    seat_entries,
)
from training.evaluation.ratings import games_for_width, plackett_luce_ratings, wilson_interval

needs_batched = pytest.mark.skipif(not batched_available(), reason="cockroach_env.batched is not available")


class FirstLegal(Agent):
    """Deterministic and stateless: the lowest legal action."""

    name = "first-legal"

    def act(self, observation):
        return int(np.flatnonzero(observation["action_mask"])[0])


class Cheater(Agent):
    """Passes a card it was handed without peeking first."""

    name = "cheater"

    def act(self, observation):
        mask = observation["action_mask"]
        if mask[self.encoding.respond_start]:
            return self.encoding.pass_action(1, 0)
        return int(np.flatnonzero(mask)[0])


class BatchCheater(Cheater):
    supports_batch = True

    def act_batch(self, observations, masks):
        return np.array(
            [self.act({"observation": o, "action_mask": m}) for o, m in zip(observations, masks)], dtype=np.int64
        )


class Stringy(FirstLegal):
    name = "stringy"

    def act(self, observation):
        return "peek"


# ---------------------------------------------------------------------------- intervals and ratings
@pytest.mark.parametrize(
    "successes, trials, low, high",
    [
        (0, 10, 0.0, 0.2775),
        (1, 10, 0.0179, 0.4042),
        (5, 10, 0.2366, 0.7634),
        (81, 263, 0.2553, 0.3662),
        (10, 10, 0.7225, 1.0),
        (0, 0, 0.0, 1.0),
    ],
)
def test_wilson_interval_matches_known_values(successes, trials, low, high):
    assert wilson_interval(successes, trials) == pytest.approx((low, high), abs=1e-4)


@pytest.mark.parametrize("players", [2, 3, 4, 6])
def test_games_for_width_is_the_fewest_games_whose_interval_at_parity_is_narrower_than_two_points(players):
    games, parity = games_for_width(1 / players), 1 / players

    def width(n):
        low, high = wilson_interval(round(parity * n), n)
        return high - low

    assert width(games) < 0.02 <= width(games - 1)
    assert 5000 < games < 10000


def test_games_for_width_refuses_rates_outside_zero_and_one():
    for rate, width in ((0.0, 0.02), (1.0, 0.02), (0.5, 0.0), (0.5, 1.5)):
        with pytest.raises(ValueError, match=f"games_for_width\\({rate!r}, {width!r}\\) is not allowed"):
            games_for_width(rate, width)


def test_wilson_interval_refuses_impossible_counts():
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(5, 3)


def test_plackett_luce_ranks_the_player_who_never_loses_first():
    games = [(["a", "b", "c"], ["b", "c"][k % 2]) for k in range(30)]
    ratings = plackett_luce_ratings(["a", "b", "c"], games)
    assert ratings[0].name == "a" and ratings[0].games == 30
    assert ratings[0].ordinal > ratings[1].ordinal


# ---------------------------------------------------------------------------- fairness
def test_lineup_shorthand_repeats_an_agent():
    assert expand_lineup(["heuristic", "random*3"]) == ["heuristic", "random", "random", "random"]


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_every_entry_plays_every_seat_equally_and_each_deal_under_every_rotation(n):
    plan = schedule(n, 5 * n - 1)
    assert len(plan) == 5 * n  # rounded up to whole rotations
    seats = Counter((entry, seat) for game in plan for seat, entry in enumerate(seat_entries(n, game.rotation)))
    assert set(seats.values()) == {5} and len(seats) == n * n
    by_deal = {}
    for game in plan:
        by_deal.setdefault(game.deal, []).append(game.rotation)
    assert all(sorted(r) == list(range(n)) for r in by_deal.values()) and len(by_deal) == 5
    fresh = schedule(n, 5 * n, duplicate=False)
    assert len({g.deal for g in fresh}) == 5 * n


@pytest.mark.parametrize(
    "options", [dict(num_players=4), dict(num_players=3, edition="royal"), dict(num_players=5, opening_cards=1)]
)
def test_reset_options_replay_the_deal_exactly(options):
    config = GameConfig(**options)
    deal = deal_for(config, seed=3, deal=7)
    assert deal == random_deal(config, np.random.default_rng([3, 7]))
    env = raw_env(config=config)
    env.reset(options=reset_options(deal, config, env.possible_agents))
    game = env.game
    assert (game.starter, game.hands, game.collections, game.removed, game.penalty_deck) == (
        deal.starter,
        deal.hands,
        deal.collections,
        deal.removed,
        deal.penalty_deck,
    )


def test_duplicate_deals_replay_the_same_game_for_a_symmetric_deterministic_table():
    """Four copies of one deterministic agent: every rotation of a deal is the very same game."""
    agent = FirstLegal(GameConfig(), seed=0)
    result = play_match([agent] * 4, GameConfig(), games=24, seed=5)
    by_deal = {}
    for record in result.records:
        by_deal.setdefault(record.deal, set()).add((record.loser_seat, record.loss_reason, record.steps))
    assert len(by_deal) == 6 and all(len(outcomes) == 1 for outcomes in by_deal.values())
    fresh = play_match([agent] * 4, GameConfig(), games=24, seed=5, duplicate=False)
    assert len({(r.loser_seat, r.steps) for r in fresh.records}) > 1


def test_matches_are_reproducible_from_the_seed():
    lineup = ["heuristic", "random", "bluffer"]
    config = GameConfig(num_players=3)
    first = play_match(lineup, config, games=9, seed=4, engine="aec")
    again = play_match(lineup, config, games=9, seed=4, engine="aec")
    other = play_match(lineup, config, games=9, seed=5, engine="aec")
    outcome = lambda r: [(g.loser_seat, g.steps) for g in r.records]  # noqa: E731
    assert outcome(first) == outcome(again) != outcome(other)


# ---------------------------------------------------------------------------- statistics
def history_counts(history: list[dict], cards, entrant_of: dict[str, int]) -> dict[str, Counter]:
    """Behaviour counts per entrant (``entrant_of``: player -> entrant) from the public events (the reveal judges every
    claim of its round).
    """
    counts = {name: Counter() for name in Behaviour.FIELDS}
    claims = []
    for event in history:
        kind = event["type"]
        who = entrant_of.get(event.get("player"))
        if kind in ("offer", "pass"):
            claims.append((kind, who, event["claim"]))
        elif kind == "peek":
            counts["peeks"][who] += 1
        elif kind == "call":
            counts["calls"][who] += 1
            counts["right_calls"][who] += event["right"]
            if claims[-1][1] != who:  # the claim judged is the latest one, of another entrant
                counts["calls_on_others"][who] += 1
                counts["right_calls_on_others"][who] += event["right"]
        elif kind == "reveal":
            card = cards.index(event["card"])
            for move, player, claim in claims:
                counts[move + "s" if move == "offer" else "passes"][player] += 1
                false = not cards.truth[card][cards.claim_index(claim)]
                counts["false_offers" if move == "offer" else "false_passes"][player] += false
            counts["collected"][entrant_of[event["taker"]]] += 1
            claims = []
    return counts


@pytest.mark.parametrize("options", [dict(num_players=4), dict(num_players=5, edition="royal")])
@pytest.mark.parametrize("entrants", [None, 2], ids=["one entrant per seat", "two entrants of several seats"])
def test_behaviour_statistics_equal_the_public_history(options, entrants):
    """Every count, including calls on another entrant's claims (not on a claim of the caller's own other seat)."""
    config = GameConfig(**options)
    env = raw_env(config=config)
    rng = np.random.default_rng(0)
    entrant = [seat if entrants is None else seat % entrants for seat in range(config.num_players)]
    behaviour = Behaviour(config, games=1, entrants=max(entrant) + 1)
    env.reset(seed=1)
    while not env.game.over:
        seat = env.game.current
        action = int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])))
        behaviour.update(np.array([0]), np.array([entrant[seat]]), np.array([action]))
        env.step(action)
    expected = history_counts(
        env.history, config.cards, {agent: entrant[seat] for seat, agent in enumerate(env.possible_agents)}
    )
    for k in range(max(entrant) + 1):
        assert behaviour.counts_of(k) == {name: expected[name][k] for name in Behaviour.FIELDS}
    if entrants is not None:
        assert (
            0 < sum(expected["calls_on_others"].values()) < sum(expected["calls"].values())
        )  # both kinds of call happened


def test_report_counts_seat_games_losses_and_reasons():
    result = play_match(["heuristic", "random*3"], GameConfig(), games=40, seed=0, engine="aec")
    hero, rest = result.report("heuristic"), result.report("random")
    assert (hero.seats, hero.games, rest.seats, rest.games) == (1, 40, 3, 120)
    assert hero.losses + rest.losses == result.games - result.truncated
    assert sum(rest.loss_reasons.values()) == rest.losses
    b = rest.behaviour
    assert 0.7 < b["false_offer_rate"] < 0.95 and 0.3 < b["call_accuracy"] < 0.7 and 0.15 < b["peek_rate"] < 0.5


def test_games_cut_by_max_steps_leave_the_loss_rates_comparable_with_parity():
    """A truncated game has no loser: the loss rate and its interval count the seat-games that had one, so the
    seats' loss rates still average to parity (counting truncated games as not lost made every agent look strong).
    """
    config = GameConfig(num_players=4, max_steps=30)
    result = play_match(["heuristic", "random", "bluffer", "honest"], config, games=32, seed=9)
    assert 0 < result.truncated < result.games
    data = result.to_json()
    assert sum(a.loss_rate * a.seats for a in result.agents) / config.num_players == pytest.approx(data["parity"])
    decided = result.games - result.truncated
    for agent, entry in zip(result.agents, data["agents"]):
        assert agent.decided == entry["decided"] == decided * agent.seats
        assert agent.loss_rate == agent.losses / agent.decided and agent.loss_rate_ci95 == wilson_interval(
            agent.losses, agent.decided
        )
    everything_cut = play_match(["random*4"], GameConfig(num_players=4, max_steps=1), games=4, seed=0)
    (agent,) = everything_cut.to_json()["agents"]
    assert (
        everything_cut.truncated == 4
        and agent["decided"] == 0
        and agent["loss_rate"] is None
        and agent["loss_rate_ci95"] == [0.0, 1.0]
    )
    json.dumps(everything_cut.to_json(), allow_nan=False)  # no NaN in the report
    row = next(line for line in everything_cut.table().splitlines() if line.startswith("random"))
    assert "nan" not in row and row.split()[3:5] == ["-", "-"], row  # the table shows no rate either (it printed nan%)


def test_a_league_of_agent_objects_plays_every_table_from_the_agents_as_given():
    """Each table starts from the pool's agents as given, as a Ray task's pickled copies do (locally the objects'
    generators ran on from table to table, so a table's games depended on the tables before it, and --ray differed).
    """
    config = GameConfig(num_players=2)
    pool = lambda: [baselines.make(name, config, seed=5) for name in ("random", "bluffer", "heuristic")]  # noqa: E731
    given = pool()
    league = play_league(given, config, games=8, seed=3)
    for t, lineup in enumerate([(0, 1), (0, 2), (1, 2)]):
        table_seed = int(np.random.SeedSequence([3, t]).generate_state(1)[0] % 2**31)
        alone = play_match([pool()[i] for i in lineup], config, games=8, seed=table_seed)
        assert [(r.loser_seat, r.steps) for r in league.records if r.table == t] == [
            (r.loser_seat, r.steps) for r in alone.records
        ], t
    assert [a.rng.bit_generator.state for a in given] == [a.rng.bit_generator.state for a in pool()], (
        "the pool's own agents are not played"
    )


# ---------------------------------------------------------------------------- engines
@needs_batched
@pytest.mark.parametrize(
    "options, lineup",
    [
        (dict(num_players=4), ["heuristic", "random", "honest", "bluffer"]),
        (dict(num_players=3, edition="royal"), ["heuristic", "bluffer", "random"]),
        (dict(num_players=2, rainbow_loses=True), ["heuristic", "honest"]),
    ],
)
def test_batched_and_aec_arenas_agree_on_the_same_seed(options, lineup):
    config = GameConfig(**options)
    games = 6 * config.num_players
    batched = play_match(lineup, config, games=games, seed=9, engine="batched", batch_size=2 * config.num_players + 1)
    aec = play_match(lineup, config, games=games, seed=9, engine="aec", batch_size=2 * config.num_players + 1)
    assert batched.engine == "batched" and aec.engine == "aec"
    assert [vars(r) for r in batched.records] == [vars(r) for r in aec.records]
    strip = lambda r: {k: v for k, v in r.to_json().items() if k not in ("seconds", "engine")}  # noqa: E731
    assert strip(batched) == strip(aec)


@needs_batched
def test_auto_engine_is_batched_only_when_every_agent_supports_it():
    config = GameConfig(num_players=3)
    assert play_match(["heuristic", "random", "honest"], config, games=3).engine == "batched"
    assert play_match(["heuristic", "random", FirstLegal(config)], config, games=3).engine == "aec"


# ---------------------------------------------------------------------------- output
def test_json_output_follows_the_documented_schema(capsys):
    assert eval_cli.main(["heuristic", "random*2", "--games", "6", "--json", "-", "--seed", "3"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "cockroach-eval/1" and data["mode"] == "match"
    assert set(data) == {
        "schema",
        "mode",
        "config",
        "seed",
        "engine",
        "duplicate",
        "games",
        "truncated",
        "parity",
        "seconds",
        "lineup",
        "agents",
    }
    assert data["config"]["num_players"] == 3 and data["games"] == 6 and data["parity"] == pytest.approx(1 / 3)
    assert data["lineup"] == ["heuristic", "random", "random"]
    for agent in data["agents"]:
        assert set(agent) == {
            "name",
            "spec",
            "seats",
            "games",
            "decided",
            "losses",
            "loss_rate",
            "loss_rate_ci95",
            "loss_reasons",
            "behaviour",
        }
        lo, hi = agent["loss_rate_ci95"]
        assert lo <= agent["loss_rate"] <= hi
        assert set(agent["loss_reasons"]) == {"same_type", "empty_hand", "rainbow"}
        assert set(agent["behaviour"]) == {
            "offers",
            "false_offer_rate",
            "passes",
            "false_pass_rate",
            "calls",
            "call_accuracy",
            "calls_on_others",
            "call_accuracy_on_others",
            "peeks",
            "peek_rate",
            "cards_collected_per_game",
        }


def test_cli_prints_a_table_and_writes_json_and_a_plot(tmp_path, capsys):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    code = eval_cli.main(
        ["heuristic", "bluffer", "--preset", "duel", "--games", "4", "--json", str(out), "--plot", str(png), "--quiet"]
    )
    assert code == 0 and capsys.readouterr().out == ""
    assert json.loads(out.read_text())["config"]["num_players"] == 2
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert eval_cli.main(["heuristic", "honest*3", "--games", "4", "--preset", "royal"]) == 0
    table = capsys.readouterr().out
    assert "4-player royal" in table and "heuristic" in table and "95% CI" in table and "parity" in table


def test_cli_without_rule_options_plays_the_rules_of_the_first_checkpoint(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert eval_cli.main(["heuristic", "mini-recall", "--games", "4", "--json", str(out), "--quiet"]) == 0
    assert GameConfig(**json.loads(out.read_text())["config"]) == GameConfig.from_options("mini", recall=True)
    assert (
        eval_cli.main(["mini", "mini-recall", "--games", "4", "--quiet"]) == 2
    )  # the first checkpoint's rules: mini without recall
    assert "play it with recall=True" in capsys.readouterr().err
    before = out.read_text()
    assert (
        eval_cli.main(["mini-recall", "mini", "--games", "4", "--json", str(out), "--quiet"]) == 2
        and out.read_text() == before
    )
    assert (
        f"--json {out} already exists; pass --overwrite" in capsys.readouterr().err
    )  # a report is kept, checked before any game
    assert (
        eval_cli.main(["mini-recall", "mini", "--games", "4", "--json", str(out), "--quiet", "--overwrite"]) == 0
    )  # mini reads the recall observation's prefix
    assert json.loads(out.read_text())["lineup"] != json.loads(before)["lineup"]
    assert (
        eval_cli.main(["classic-4p", "heuristic", "--games", "4", "--quiet"]) == 2
    )  # 4-player rules for a 2-seat lineup: the default 2-player rules, refused by name
    assert "trained for 4-player classic" in capsys.readouterr().err


def test_cli_plays_networks_on_the_torch_threads_asked_for_and_refuses_a_bad_count(capsys):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert (
            eval_cli.main(["mini", "heuristic", "--games", "4", "--quiet"]) == 0 and torch.get_num_threads() == 2
        )  # default: torch's own
        assert (
            eval_cli.main(["mini", "heuristic", "--games", "4", "--quiet", "--torch-threads", "1"]) == 0
            and torch.get_num_threads() == 1
        )
        for bad, message in (("-2", "-2 is not allowed"), ("1.5", "'1.5' is not a whole number")):
            with pytest.raises(SystemExit):
                eval_cli.main(["mini", "heuristic", "--games", "4", "--torch-threads", bad])
            assert (
                f"argument --torch-threads: {message}; expected 0 (torch's default) or a positive thread count"
                in capsys.readouterr().err
            )
    finally:
        torch.set_num_threads(before)


def test_league_rates_every_agent_of_the_pool(capsys):
    assert (
        eval_cli.main(["random", "honest", "heuristic", "--league", "--players", "2", "--games", "10", "--json", "-"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "league" and len(data["league"]["tables"]) == 3
    assert {r["name"] for r in data["league"]["ratings"]} == {"random", "honest", "heuristic"}
    assert all(a["games"] == 20 for a in data["agents"])
    result = play_league(["random", "honest", "bluffer", "heuristic"], GameConfig(num_players=3), games=6)
    assert "OpenSkill" in result.table() and len(result.ratings) == 4


# ---------------------------------------------------------------------------- bad input
def test_unknown_agent_name_is_named_with_the_alternatives():
    with pytest.raises(ArenaError, match=r"unknown agent 'herostic'.*heuristic"):
        play_match(["herostic", "random"], GameConfig(num_players=2), games=2)


def test_unreadable_checkpoint_is_reported_with_its_path(tmp_path):
    broken = tmp_path / "agent.json"
    broken.write_text("{not json")
    with pytest.raises(ArenaError, match=r"agent '.*agent.json': cannot load the checkpoint"):
        play_match([str(broken), "random"], GameConfig(num_players=2), games=2)


def test_bad_module_class_is_reported():
    with pytest.raises(ArenaError, match=r"cannot import module 'no_such_module_xyz'"):
        play_match(["no_such_module_xyz:Agent", "random"], GameConfig(num_players=2), games=2)
    with pytest.raises(ArenaError, match=r"has no attribute 'Nope'"):
        play_match(["baselines:Nope", "random"], GameConfig(num_players=2), games=2)
    assert play_match(["baselines:RandomAgent", "random"], GameConfig(num_players=2), games=2).games == 2


@pytest.mark.parametrize("engine", ["aec", pytest.param("batched", marks=needs_batched)])
def test_an_illegal_action_is_reported_with_its_move_never_replaced(engine):
    config = GameConfig(num_players=3)
    cheater = (BatchCheater if engine == "batched" else Cheater)(config, seed=0)
    with pytest.raises(
        ArenaError,
        match=r"agent 'cheater' \(seat player_\d, game \d+\) returned illegal action \d+ = "
        r"pass\(target=player_\d, claim=cockroach\)",
    ):
        play_match([cheater, "random", "random"], config, games=3, engine=engine)


def test_a_non_integer_action_is_reported():
    config = GameConfig(num_players=2)
    with pytest.raises(ArenaError, match=r"agent 'stringy' .* returned 'peek'; expected an integer action"):
        play_match([Stringy(config), "random"], config, games=2)


def test_refusals_name_the_problem():
    config = GameConfig(num_players=4)
    with pytest.raises(ArenaError, match=r"2 agent\(s\) for 4 seats.*random\*3"):
        play_match(["heuristic", "random"], config, games=4)
    with pytest.raises(ArenaError, match=r"not supported by \['first-legal'\]"):
        play_match(["random*3", FirstLegal(config)], config, games=4, engine="batched")
    with pytest.raises(ArenaError, match="games=0"):
        play_match(["random*4"], config, games=0)
    with pytest.raises(ArenaError, match="at least 4 agents"):
        play_league(["random", "honest"], config)
    with pytest.raises(ArenaError, match="has no act"):
        play_match([object(), "random*3"], config, games=4)
    for seed in (-1, None, 1.5, "7", 2**64):
        with pytest.raises(
            ArenaError, match=rf"seed={seed!r} is not allowed; expected an integer from 0 to 2\*\*64 - 1"
        ):
            play_match(["random*4"], config, games=4, seed=seed)
        with pytest.raises(ArenaError, match=rf"seed={seed!r} is not allowed"):
            play_league(["random", "honest", "bluffer", "heuristic"], config, games=4, seed=seed)
    with pytest.raises(ArenaError, match=r"config=\{'num_players': 4\} is not allowed; expected a GameConfig"):
        play_match(["random*4"], {"num_players": 4}, games=4)
    with pytest.raises(ArenaError, match=r"duplicate='no' is not allowed; expected True or False"):
        play_match(["random*4"], config, games=4, duplicate="no")
    assert (
        json.loads(json.dumps(play_match(["random*4"], config, games=4, seed=np.uint64(2**64 - 1)).to_json()))["seed"]
        == 2**64 - 1
    )


def test_cli_reports_bad_input_with_exit_status_2(capsys):
    assert eval_cli.main(["heuristic", "nobody*3"]) == 2
    assert "unknown agent 'nobody'" in capsys.readouterr().err
    assert eval_cli.main(["heuristic", "random", "--option", "colour=red"]) == 2
    assert "unknown game option" in capsys.readouterr().err
    assert eval_cli.main(["heuristic", "random", "--seed", "-1", "--games", "2"]) == 2
    assert "seed=-1 is not allowed" in capsys.readouterr().err


def test_the_training_package_imports_no_torch():
    code = (
        "import sys, training, training.evaluation.arena, training.cli.eval, training.evaluation.ratings, "
        "baselines; sys.exit('torch' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=".").returncode == 0


@pytest.mark.slow
def test_a_checkpoint_path_plays_in_the_arena_and_a_mismatched_one_is_refused(tmp_path):
    pytest.importorskip("torch")
    from training.core.checkpoint import save_checkpoint
    from training.core.model import ActorCritic

    config = GameConfig(num_players=4)
    model = ActorCritic(config, [16], "tanh")
    path = tmp_path / "tiny" / "agent"
    save_checkpoint(
        path,
        {f"model.{k}": v for k, v in model.state_dict().items()},
        {"kind": "agent", "game_config": config.to_dict(), "model": {"hidden_sizes": [16], "activation": "tanh"}},
    )
    result = play_match([str(path), "random*3"], config, games=4, seed=0)
    assert result.games == 4 and result.agents[0].spec == str(path)
    with pytest.raises(ArenaError, match=r"cannot load the checkpoint .*trained for 4-player classic"):
        play_match([str(path), "random"], GameConfig(num_players=2), games=2)


def test_a_shipped_agent_is_labelled_by_its_shipped_name_and_a_path_by_its_run(tmp_path, capsys):
    """``classic-4p`` is the label everywhere a user sees it (table, JSON report, saved games), not the name of the
    run that trained it; the same checkpoint loaded by path keeps the run's name.
    """
    pytest.importorskip("torch")
    from cockroach_env.record import load_record
    from training.core.checkpoint import read_metadata

    run_name = read_metadata("classic-4p")["name"]
    assert run_name != "classic-4p"  # what the label must not show
    report, games = tmp_path / "report.json", tmp_path / "games"
    argv = ["classic-4p", "heuristic*3", "--players", "4", "--games", "4", "--json", str(report)]
    assert eval_cli.main([*argv, "--save-games", "1", str(games)]) == 0
    table = capsys.readouterr().out
    assert "classic-4p" in table and run_name not in table
    data = json.loads(report.read_text())
    assert data["lineup"][0] == "classic-4p" and data["agents"][0]["name"] == "classic-4p"
    assert run_name not in report.read_text()
    (saved,) = games.glob("game-*.json")
    assert "classic-4p" in load_record(str(saved))["players"].values()
    path = str(Path(__file__).resolve().parents[1] / "training" / "agents" / "classic-4p")
    by_path = play_match([path, "heuristic*3"], GameConfig(num_players=4), games=4)
    assert by_path.lineup[0] == run_name and by_path.agents[0].spec == path


def test_an_agent_built_for_other_rules_is_refused():
    other = FirstLegal(GameConfig(num_players=3), seed=0)
    with pytest.raises(
        ArenaError, match=r"agent 'first-legal' was built for .*num_players=3.* but the games here are .*num_players=4"
    ):
        play_match([other, "random*3"], GameConfig(num_players=4), games=4)
