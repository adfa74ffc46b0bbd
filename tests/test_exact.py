"""Exact evaluation (``training.evaluation.exact``): values computed by hand on a micro deck, profiles, mixtures,
sizes.
"""

from __future__ import annotations

import numpy as np
import pytest

import baselines
from cockroach_env import GameConfig
from training.evaluation.exact import TreeTooLarge, best_response_values, build_tree, evaluate, game_tree, nash_conv

MICRO = GameConfig(num_players=2, num_types=2, copies_per_type=2, discard=2, loss_count=2)
"""Cards X X Y Y, two removed unseen, one card each. The round's taker always loses, except
the responder in round one, who starts round two: the starter cannot win round one, so
it is won or lost by the responder's call, then round two by the starter's call."""


def test_micro_deck_tree():
    tree = game_tree(MICRO)
    sizes = tree.sizes()
    # starter (2) x deals: A's card and B's card, 2 x 2 = 4 type pairs
    assert sizes["deals"] == 8
    np.testing.assert_allclose(sorted(tree.chance[tree.parent < 0]), sorted([1 / 12] * 4 + [1 / 6] * 4))
    # offer (2 claims) -> call (2) -> [responder took it: offer (2) -> call (2)]
    assert sizes["terminal_histories"] == 8 * (2 * (1 + 2 * 2))
    assert sizes["max_depth"] == 4


def test_uniform_random_by_hand():
    # B's call is right w.p. 1/2, then A's is: A loses 3/4 of its games as starter, policy values 0.
    # Best response as responder: given its own card, the claimed type is the other one w.p. 2/3:
    # right w.p. 2/3; if wrong, loses to a random call w.p. 1/2: loses 1/6, value 2/3. As starter:
    # loses round one w.p. 1/2, otherwise calls right w.p. 2/3: loses 2/3, value -1/3. Seat value 1/6.
    random = baselines.make("random", MICRO)
    result = evaluate(random, MICRO)
    np.testing.assert_allclose(result.policy_values, [0, 0], atol=1e-12)
    np.testing.assert_allclose(result.best_response_values, [1 / 6, 1 / 6], atol=1e-12)
    assert nash_conv(random, MICRO) == pytest.approx(1 / 3, abs=1e-12)
    assert result.exploitability == pytest.approx(1 / 6, abs=1e-12)


def test_honest_by_hand():
    # Honest claims are true: a responder believing them never loses (value 1). An honest responder
    # believes a claim iff it is not of its own card's type; it is then wrong iff both cards are of
    # one type (1/3), so a starter loses 2/3 of the time whatever it claims, then wins round two by
    # believing the honest claim: value -1/3. Seat value (1 - 1/3) / 2 = 1/3.
    honest = baselines.make("honest", MICRO)
    np.testing.assert_allclose(best_response_values(honest, MICRO), [1 / 3, 1 / 3], atol=1e-12)
    assert nash_conv(honest, MICRO) == pytest.approx(2 / 3, abs=1e-12)


def test_one_agent_per_seat():
    random, honest = baselines.make("random", MICRO), baselines.make("honest", MICRO)
    # seat 0 best-responds to honest in seat 1, seat 1 to random in seat 0
    np.testing.assert_allclose(best_response_values([random, honest], MICRO), [1 / 3, 1 / 6], atol=1e-12)


def test_mixtures_are_weighted_by_reach():
    config = GameConfig.from_options(preset="mini")
    random, honest, bluffer = (baselines.make(name, config) for name in ("random", "honest", "bluffer"))
    weights = (0.3, 0.7)
    mixture = [(weights[0], honest), (weights[1], bluffer)]
    # a mixture in one seat: every seat's value is linear in the weights (one component per game)
    mixed = evaluate([mixture, random], config).policy_values
    parts = [evaluate([agent, random], config).policy_values for agent in (honest, bluffer)]
    np.testing.assert_allclose(mixed, weights[0] * parts[0] + weights[1] * parts[1], atol=1e-12)
    # the best response to a mixture is worth at most the mixed best responses to its parts, and more than none
    against = evaluate([random, mixture], config).best_response_values[0]
    alone = [evaluate([random, agent], config).best_response_values[0] for agent in (honest, bluffer)]
    assert against <= weights[0] * alone[0] + weights[1] * alone[1] + 1e-12
    assert against < max(alone)

    # an object with ``components`` is a mixture too; a weight-one mixture is its agent
    class Population:
        components = mixture

    np.testing.assert_allclose(
        evaluate(Population(), config).best_response_values, evaluate(mixture, config).best_response_values
    )
    np.testing.assert_allclose(
        evaluate([(1.0, honest)], config).best_response_values, evaluate(honest, config).best_response_values
    )


@pytest.mark.parametrize(
    "profile, message",
    [
        ([(0.5, "random"), (0.6, "honest")], "weights"),
        ([(-0.5, "random"), (1.5, "honest")], "weights"),
        ("random", "action_probabilities"),
        ([None, None, None], "3 seats"),
    ],
)
def test_bad_profiles_are_refused(profile, message):
    with pytest.raises(ValueError, match=message):
        evaluate(profile, MICRO)


def test_agents_of_another_rule_set_are_refused():
    with pytest.raises(ValueError, match="built for"):
        evaluate(baselines.make("random", GameConfig.from_options(preset="mini")), MICRO)


def test_trees_beyond_the_budget_are_refused():
    with pytest.raises(TreeTooLarge, match="max_nodes=1000"):
        build_tree(GameConfig.from_options(preset="mini"), max_nodes=1000)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["mini", "mini-3p"])
def test_mini_presets_are_evaluated_in_full(preset):
    config = GameConfig.from_options(preset=preset)
    result = evaluate(baselines.make("heuristic", config), config)
    assert result.nash_conv > 0
    assert np.all(result.best_response_values >= result.policy_values - 1e-12)
    np.testing.assert_allclose(result.policy_values.sum(), 0.0, atol=1e-9)  # zero-sum


def test_cockroach_exploit_exact_for_a_baseline(tmp_path, capsys):
    import json

    from training.cli.exploit import main

    out = tmp_path / "exact.json"
    assert main(["honest", "--exact", "--preset", "mini", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    config = GameConfig.from_options(preset="mini")
    assert report["nash_conv"] == pytest.approx(nash_conv(baselines.make("honest", config), config), abs=1e-12)
    assert report["tree"]["information_sets"] == game_tree(config).sizes()["information_sets"]
    assert "NashConv" in capsys.readouterr().out
    # the printed duel is far too big to traverse: a clear refusal, not a hang
    assert main(["honest", "--exact", "--preset", "duel"]) == 2
    assert "distinct deals" in capsys.readouterr().err


def test_training_on_mini_and_exact_evaluation_of_its_checkpoint(tmp_path):
    """cockroach-train on a smaller deck, its checkpoint (deck shape in the metadata), and --exact on it."""
    pytest.importorskip("torch")
    import json
    from pathlib import Path

    from training.cli.exploit import main as exploit
    from training.cli.train import main as train
    from training.core.checkpoint import load_agent

    sets = [
        "ppo.num_envs=16",
        "ppo.num_steps=8",
        "ppo.num_minibatches=2",
        "ppo.update_epochs=1",
        "model.hidden_sizes=[16]",
        "schedule.total_decisions=512",
        "schedule.checkpoint_every=2",
        "evaluation.final_games=8",
        f"output_dir={tmp_path}",
    ]
    config_path = Path(__file__).resolve().parents[1] / "configs" / "research" / "ppo_mini.yaml"
    assert train(["--config", str(config_path), "--no-progress", *[a for s in sets for a in ("--set", s)]]) == 0
    final = tmp_path / "ppo_mini" / "final"
    agent = load_agent(final)
    config = GameConfig.from_options(preset="mini")
    assert agent.config == config
    assert exploit([str(final), "--exact", "--json", str(tmp_path / "exact.json")]) == 0
    report = json.loads((tmp_path / "exact.json").read_text())
    assert report["nash_conv"] == pytest.approx(evaluate(agent, config).nash_conv, abs=1e-9)
    assert report["game_config"]["num_types"] == 3 and report["game_config"]["copies_per_type"] == 2
