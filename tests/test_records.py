"""Game records: saved, checked on load, replayed as an offline page; arena games saved with --save-games."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest

from cockroach_env import raw_env
from cockroach_env.record import RecordError, deal_of, game_record, load_record, replay_record, save_record
from training.cli import eval as eval_cli
from training.evaluation.arena import play_match
from training.evaluation.game_saving import GameSaver

from .conftest import legal_actions


def random_record(preset="classic", num_players=4, seed=0):
    env = raw_env(preset=preset, num_players=num_players)
    env.reset(seed=seed)
    deal, actions = deal_of(env), []
    rng = np.random.default_rng(seed)
    while not env.game.over:
        actions.append(int(rng.choice(legal_actions(env))))
        env.step(actions[-1])
    return game_record(env, deal, actions, meta={"test": True}), env


@pytest.mark.parametrize(
    "preset, num_players", [("classic", 4), ("royal", 5), ("duel", 2), ("creature-to-start+rainbow", 3)]
)
def test_a_record_replays_to_the_same_game(preset, num_players, tmp_path):
    record, env = random_record(preset, num_players)
    path = tmp_path / "game.json"
    save_record(record, str(path))
    loaded = load_record(str(path))
    assert loaded == json.loads(json.dumps(record))
    replayed = replay_record(loaded)
    assert replayed.history == env.history and replayed.game.loser == env.game.loser
    assert loaded["result"] == {
        "loser": f"player_{env.game.loser}",
        "loss_reason": env.game.loss_reason,
        "steps": env.game.steps,
        "finished": True,
    }
    assert len(loaded["moves"]) == len(loaded["actions"])


def test_a_record_that_is_not_json_is_refused_leaving_no_file(tmp_path):
    record, _ = random_record("duel", 2)
    path = tmp_path / "game.json"
    path.write_text("the previous record")
    record["meta"]["seed"] = np.int64(3)  # numpy scalars are not JSON
    with pytest.raises(RecordError, match="meta.*int64"):
        save_record(record, str(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["game.json"] and path.read_text() == "the previous record"


def test_a_damaged_record_is_refused_by_name(tmp_path):
    record, _ = random_record()
    cases = []
    for field in ("history", "deal", "actions"):
        damaged = copy.deepcopy(record)
        del damaged[field]
        cases.append((damaged, f"lacks the field(s) ['{field}']"))
    damaged = copy.deepcopy(record)
    damaged["history"][3]["claim"] = "unicorn"
    cases.append((damaged, "history differs from the replayed game at event 3"))
    damaged = copy.deepcopy(record)
    damaged["actions"][0] = 10**6
    cases.append((damaged, "action 0 (1000000) is illegal"))
    damaged = copy.deepcopy(record)
    damaged["actions"].append(0)
    cases.append((damaged, "after the end of the game"))
    damaged = copy.deepcopy(record)
    damaged["schema"] = "cockroach-game/0"
    cases.append((damaged, "schema 'cockroach-game/0' is not supported"))
    damaged = copy.deepcopy(record)
    damaged["config"]["num_players"] = 9
    cases.append((damaged, "not a valid GameConfig"))
    damaged = copy.deepcopy(record)
    damaged["deal"]["hands"]["player_0"]["fly"] = 99
    cases.append((damaged, "not a valid deal"))
    cases.append(([1, 2], "must be a JSON object"))
    for damaged, message in cases:
        with pytest.raises(
            RecordError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")
        ):
            load_record(damaged)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(RecordError, match="not valid JSON"):
        load_record(str(broken))
    with pytest.raises(RecordError, match="cannot read"):
        load_record(str(tmp_path / "missing.json"))


def test_cockroach_replay_writes_one_offline_page(tmp_path, capsys):
    from play import replay

    record, _ = random_record("royal", 4, seed=3)
    path = tmp_path / "game.json"
    save_record(record, str(path))
    assert replay.main([str(path), "-o", str(tmp_path / "game.html")]) == 0
    html = (tmp_path / "game.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//|<link |<script src|@import|url\(""", html), (
        "self-contained: it fetches nothing"
    )
    data = json.loads(
        html.split('id="replay-data" type="application/json">')[1].split("</script>")[0].replace("<\\/", "</")
    )
    assert len(data["frames"]) == len(record["actions"]) + 1
    assert all(
        "card" not in (f["public"]["chain"] or {}) or f["public"]["chain"]["card"] is None for f in data["frames"]
    )
    assert sum(not c["true"] for c in data["claims"]) == sum(s["bluffs"] for s in data["summary"].values())
    assert replay.main([str(tmp_path / "nope.json"), "-o", str(tmp_path / "x.html")]) == 2
    assert replay.main([str(path), "-o", str(tmp_path / "no" / "x.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
    before = path.read_bytes()
    assert (
        replay.main([str(path), "-o", str(path)]) == 2 and path.read_bytes() == before
    )  # the record is never its own page
    assert "is the game record itself" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["aec", "batched"])
def test_save_games_keeps_the_very_games_of_the_match(engine, tmp_path):
    pytest.importorskip("numba") if engine == "batched" else None
    saver = GameSaver(5, str(tmp_path / "games"))
    result = play_match(
        ["heuristic", "random", "honest", "bluffer"], games=8, seed=4, engine=engine, on_decisions=saver
    )
    paths = saver.write(result)
    assert len(paths) == 5
    for path, game in zip(paths, result.records[:5]):
        record = load_record(path)
        assert record["result"]["finished"] and record["result"]["steps"] == game.steps
        assert record["result"]["loser"] == f"player_{game.loser_seat}"
        assert record["meta"]["game"] == game.index and record["meta"]["engine"] == engine
        assert sorted(record["players"].values()) == sorted(["heuristic", "random", "honest", "bluffer"])


def test_save_games_arguments_are_checked_before_any_game(tmp_path, capsys):
    file = tmp_path / "file"
    file.write_text("x")
    for args, message in [
        (["0", str(tmp_path / "g")], "positive integer"),
        (["two", str(tmp_path / "g")], "'two'"),
        (["3", str(file)], "is a file"),
        (["3", str(tmp_path / "a" / "b")], "does not exist"),
    ]:
        assert eval_cli.main(["heuristic", "random", "--games", "4", "--quiet", "--save-games", *args]) == 2
        assert message in capsys.readouterr().err
    assert (
        eval_cli.main(["heuristic", "random", "--games", "4", "--quiet", "--save-games", "2", str(tmp_path / "ok")])
        == 0
    )
    assert sorted(p.name for p in (tmp_path / "ok").iterdir()) == ["game-00000.json", "game-00001.json"]
    # a second match into the same directory keeps the first one's records unless told to replace them
    first = {p.name: p.read_bytes() for p in (tmp_path / "ok").iterdir()}
    assert (
        eval_cli.main(["random", "heuristic", "--games", "4", "--quiet", "--save-games", "1", str(tmp_path / "ok")])
        == 2
    )
    assert (
        "already holds 2 game records (game-00000.json, game-00001.json); pass --overwrite" in capsys.readouterr().err
    )
    assert {p.name: p.read_bytes() for p in (tmp_path / "ok").iterdir()} == first
    assert (
        eval_cli.main(
            ["random", "heuristic", "--games", "4", "--quiet", "--save-games", "1", str(tmp_path / "ok"), "--overwrite"]
        )
        == 0
    )
    assert (
        load_record(str(tmp_path / "ok" / "game-00000.json"))["players"]["player_0"] == "random"
    )  # the new match's first game
    assert (tmp_path / "ok" / "game-00000.json").read_bytes() != first["game-00000.json"]
