"""``configs/<table>.yaml``: one history-aware recipe per table, the same in everything but the table and the budget."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from training.core.config import load_config

ROOT = Path(__file__).resolve().parents[1]
TABLES = {
    "classic-2p": (2, "classic"),
    "classic-3p": (3, "classic"),
    "classic-4p": (4, "classic"),
    "classic-5p": (5, "classic"),
    "classic-6p": (6, "classic"),
    "royal-2p": (2, "royal"),
    "royal-4p": (4, "royal"),
}


def _comparable(table: str) -> dict:
    """The config as a dict without what may differ: its name, its rules and its budget."""
    config = load_config(str(ROOT / "configs" / f"{table}.yaml"), [])
    data = config.to_dict()
    for key in ("name", "game"):
        data.pop(key)
    data["schedule"].pop("total_decisions")
    return data


@pytest.mark.parametrize("table", TABLES)
def test_each_tables_recipe_is_the_history_aware_one_for_its_rules(table):
    config = load_config(str(ROOT / "configs" / f"{table}.yaml"), [])
    game = config.game_config()
    assert (game.num_players, game.edition) == TABLES[table] and config.name == table
    assert game.history > 0 and config.model.event_embedding > 0 and config.warm_start.teacher == "heuristic"
    assert config.ppo.kl_coef > 0 and config.ppo.magnet_coef > 0 and config.ppo.anneal_regularization < 1
    assert _comparable(table) == _comparable("classic-4p")
    text = (ROOT / "configs" / f"{table}.yaml").read_text()
    assert re.search(
        r"about [\d.]+ hours on 2 idle cores\n# \([\d,]+ decisions/s, measured by `python benchmarks/bench_training.py",
        text,
    ), table


def test_a_recipe_trains_and_saves_a_history_aware_agent(tmp_path):
    from training.algorithms.ppo import train
    from training.core.checkpoint import load_agent, read_metadata

    tiny = ["ppo.num_envs=16", "ppo.num_steps=8", "ppo.overlap=false", "model.hidden_sizes=[16]"]
    tiny += ["warm_start.decisions=200", "warm_start.num_envs=16", "schedule.checkpoint_every=2", "evaluation.every=0"]
    tiny += ["evaluation.final_games=8", f"output_dir={tmp_path}", "schedule.total_decisions=512"]
    final = train(load_config(str(ROOT / "configs" / "royal-2p.yaml"), tiny), progress_bar=False)
    meta = read_metadata(final)
    assert meta["model"]["event_embedding"] == 16 and meta["model"]["event_pooling"] is True
    assert meta["game_config"]["history"] == 8
    assert meta["warm_start"]["teacher"] == "heuristic"
    agent = load_agent(final)
    assert agent.config.history == 8 and agent.config.edition == "royal"
    from training.evaluation.arena import play_match

    result = play_match([str(final), "heuristic"], config=agent.config, games=8, seed=0)
    assert result.config == agent.config and result.games == 8


def test_every_shipped_config_warns_of_nothing():
    """No setting of a config in ``configs/`` is one that does nothing (``unused_options``)."""
    from training.core.config import unused_options

    for path in sorted((ROOT / "configs").glob("*.yaml")):
        assert unused_options(load_config(path)) == [], path
