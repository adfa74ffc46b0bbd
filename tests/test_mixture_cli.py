"""``cockroach-mixture``: a mixture checkpoint from trained checkpoints, weighted equally, as given, or by a solved
meta-game.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from cockroach_env import GameConfig  # noqa: E402
from training.cli.mixture import main  # noqa: E402
from training.core import checkpoint as ckpt  # noqa: E402
from training.core.mixture import MixtureAgent  # noqa: E402
from training.core.model import ActorCritic  # noqa: E402

GAME = GameConfig.from_options(preset="mini")
SPEC = {"hidden_sizes": [8], "activation": "tanh", "card_counting": False}


def _agent(path, seed: int, game: GameConfig = GAME, spec: dict = SPEC, **extra):
    model = ActorCritic(game, spec["hidden_sizes"], spec["activation"], spec["card_counting"], seed=seed)
    meta = {
        "kind": "agent",
        "game_config": game.to_dict(),
        "model": spec,
        "name": f"agent{seed}",
        "commands": [f"cockroach-train --set seed={seed}"],
        **extra,
    }
    ckpt.save_checkpoint(path, {f"model.{k}": v for k, v in model.state_dict().items()}, meta)
    return model


def _same(a, b) -> bool:
    return all(torch.equal(a.state_dict()[k], v) for k, v in b.state_dict().items())


def test_equal_weights_by_default_and_each_members_recipe_is_kept(tmp_path, capsys):
    models = [_agent(tmp_path / f"a{s}", s) for s in range(3)]
    assert main([str(tmp_path / "mix"), *(str(tmp_path / f"a{s}") for s in range(3))]) == 0
    agent = ckpt.load_agent(tmp_path / "mix", seed=0)
    assert isinstance(agent, MixtureAgent) and np.allclose(agent.weights, 1 / 3)
    assert all(_same(member.model, model) for member, model in zip(agent.members, models))
    meta = ckpt.read_metadata(tmp_path / "mix")
    assert meta["kind"] == "mixture" and meta["name"] == "mix" and meta["mixture"]["meta_solver"] == "uniform"
    assert [r["commands"] for r in meta["mixture"]["recipes"]] == [
        [f"cockroach-train --set seed={s}"] for s in range(3)
    ]
    assert [r["source"] for r in meta["mixture"]["recipes"]] == [str(tmp_path / f"a{s}") for s in range(3)]
    assert meta["command"].startswith("cockroach-mixture ")
    assert "mixture of 3 members" in capsys.readouterr().out


def test_given_weights_are_normalised_and_a_mixture_member_shares_its_weight_among_its_members(tmp_path):
    for s in range(3):
        _agent(tmp_path / f"a{s}", s)
    assert main([str(tmp_path / "inner"), str(tmp_path / "a0"), str(tmp_path / "a1"), "--weights", "1", "3"]) == 0
    assert main([str(tmp_path / "outer"), str(tmp_path / "inner"), str(tmp_path / "a2"), "--weights", "2", "2"]) == 0
    meta = ckpt.read_metadata(tmp_path / "outer")
    weights = [m["weight"] for m in meta["mixture"]["members"]]
    assert np.allclose(weights, [0.125, 0.375, 0.5])
    recipes = meta["mixture"]["recipes"]
    assert [r["source"] for r in recipes] == [
        str(tmp_path / "a0"),
        str(tmp_path / "a1"),
        str(tmp_path / "a2"),
    ]  # the inner mixture's own recipes
    assert [r.get("via") for r in recipes] == [str(tmp_path / "inner"), str(tmp_path / "inner"), None]
    assert meta["mixture"]["meta_solver"] == "given"


def test_the_meta_solver_plays_every_table_and_weights_the_members_by_the_solved_meta_game(tmp_path):
    for s in range(2):
        _agent(tmp_path / f"a{s}", s)
    args = [
        str(tmp_path / "a0"),
        str(tmp_path / "a1"),
        "--meta-solver",
        "regret_matching",
        "--payoff-games",
        "40",
        "--seed",
        "3",
    ]
    assert main([str(tmp_path / "m1"), *args]) == 0
    assert main([str(tmp_path / "m2"), *args]) == 0
    first, second = ckpt.read_metadata(tmp_path / "m1"), ckpt.read_metadata(tmp_path / "m2")
    table = first["mixture"]["meta_game"]
    assert table["size"] == 2 and sorted(tuple(t["members"]) for t in table["tables"]) == [(0, 0), (0, 1), (1, 1)]
    assert all(sum(t["seat_games"]) >= 40 for t in table["tables"])
    assert first["mixture"]["meta_game"] == second["mixture"]["meta_game"]  # the same seed plays the same games
    weights = [m["weight"] for m in first["mixture"]["members"]]
    assert weights == [m["weight"] for m in second["mixture"]["members"]] and abs(sum(weights) - 1) < 1e-9
    assert first["mixture"]["meta_nash_conv"] >= 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["@a0", "@a1", "--weights", "1"], r"--weights has 1 values for 2 members"),
        (["@a0", "@a1", "--weights", "1", "-2"], r"--weights value '-2' is not allowed; expected a finite number >= 0"),
        (["@a0", "@a1", "--weights", "1", "nan"], r"--weights value 'nan' is not allowed"),
        (["@a0", "@a1", "--weights", "0", "0"], r"sum to 0"),
        (["@a0", "@a1", "--weights", "x", "1"], r"--weights value 'x' is not a number"),
        (["@a0", "@a0"], r"is the checkpoint .* again"),
        (["@a0", "@other_rules"], r"MEMBER .*other_rules' was trained for .* expected members of one rule set"),
        (["@a0", "@other_net"], r"MEMBER .*other_net' has model=.* expected members of one network shape"),
        (["@a0", "@missing"], r"no checkpoint at .*missing.json"),
    ],
)
def test_bad_input_is_refused_by_name_and_writes_nothing(tmp_path, capsys, args, message):
    _agent(tmp_path / "a0", 0)
    _agent(tmp_path / "a1", 1)
    _agent(tmp_path / "other_rules", 2, game=GameConfig.from_options(preset="mini-3p"))
    _agent(tmp_path / "other_net", 3, spec={**SPEC, "hidden_sizes": [4]})
    argv = [
        str(tmp_path / "mix"),
        *(str(tmp_path / a[1:]) if a.startswith("@") else a for a in args),
    ]  # "@name": a checkpoint in tmp_path
    assert main(argv) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not list(tmp_path.glob("mix*"))


def test_an_existing_output_is_kept_without_overwrite(tmp_path, capsys):
    _agent(tmp_path / "a0", 0)
    _agent(tmp_path / "a1", 1)
    assert main([str(tmp_path / "mix"), str(tmp_path / "a0")]) == 0
    before = (tmp_path / "mix.json").read_bytes()
    assert main([str(tmp_path / "mix"), str(tmp_path / "a1")]) == 2
    assert "already exists" in capsys.readouterr().err and (tmp_path / "mix.json").read_bytes() == before
    assert main([str(tmp_path / "mix"), str(tmp_path / "a1"), "--overwrite"]) == 0
    assert json.loads((tmp_path / "mix.json").read_text())["mixture"]["recipes"][0]["name"] == "agent1"
    assert main([str(tmp_path / "nowhere" / "mix"), str(tmp_path / "a0")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_solver_checkpoint_is_refused_as_a_member(tmp_path, capsys):
    _agent(tmp_path / "a0", 0)
    ckpt.save_checkpoint(
        tmp_path / "solver",
        {"cfr.regrets": torch.zeros(2)},
        {"kind": "solver", "game_config": GAME.to_dict(), "model": SPEC},
    )
    assert main([str(tmp_path / "mix"), str(tmp_path / "a0"), str(tmp_path / "solver")]) == 2
    assert "CFR solver checkpoint" in capsys.readouterr().err


def test_init_from_a_built_mixture_records_each_members_recipe(tmp_path):
    from training.cli.train import _initial_weights
    from training.core.config import load_config

    for s in range(2):
        _agent(tmp_path / f"a{s}", s)
    assert main([str(tmp_path / "mix"), str(tmp_path / "a0"), str(tmp_path / "a1"), "--weights", "1", "2"]) == 0
    config = load_config(
        None, ["algorithm=psro", "game.preset=mini", "model.hidden_sizes=[8]", "model.card_counting=false"]
    )
    weights, population, base_run = _initial_weights(str(tmp_path / "mix"), config)
    assert weights is None and [name for name, _ in population] == ["agent0", "agent1"]
    assert [r["commands"] for r in base_run["recipes"]] == [
        ["cockroach-train --set seed=0"],
        ["cockroach-train --set seed=1"],
    ]


def test_a_psro_mixture_member_keeps_its_recipe_once(tmp_path):
    from training.core.checkpoint import save_mixture_checkpoint

    models = [ActorCritic(GAME, [8], seed=s) for s in range(3)]
    meta = {
        "game_config": GAME.to_dict(),
        "model": SPEC,
        "name": "psro_run",
        "commands": ["cockroach-train --config psro.yaml"],
        "psro": {"iteration": 2},
    }
    save_mixture_checkpoint(tmp_path / "psro", models, [0.5, 0.25, 0.25], ["member_0", "member_1", "member_2"], meta)
    assert main([str(tmp_path / "mix"), str(tmp_path / "psro")]) == 0
    mixture = ckpt.read_metadata(tmp_path / "mix")["mixture"]
    assert [m["weight"] for m in mixture["members"]] == [0.5, 0.25, 0.25]
    assert [(r["source"], r["member"]) for r in mixture["recipes"]] == [(str(tmp_path / "psro"), k) for k in range(3)]
    assert mixture["sources"][str(tmp_path / "psro")]["commands"] == ["cockroach-train --config psro.yaml"]
    assert mixture["sources"][str(tmp_path / "psro")]["psro"] == {"iteration": 2}
    assert (
        main([str(tmp_path / "again"), str(tmp_path / "mix")]) == 0
    )  # rebuilt from the built one: the same recipes and sources
    again = ckpt.read_metadata(tmp_path / "again")["mixture"]
    assert again["sources"] == mixture["sources"] and [r["member"] for r in again["recipes"]] == [0, 1, 2]


def test_weights_against_exploiters_play_every_exploiter_table_and_keep_the_baseline_limits(tmp_path, capsys):
    for s in range(2):
        _agent(tmp_path / f"a{s}", s)
    _agent(tmp_path / "br", 9)
    args = [
        str(tmp_path / "a0"),
        str(tmp_path / "a1"),
        "--exploiters",
        str(tmp_path / "br"),
        "--payoff-games",
        "40",
        "--baseline-games",
        "40",
    ]
    assert main([str(tmp_path / "mix"), *args, "--max-loss", "random=1"]) == 0
    mixture = ckpt.read_metadata(tmp_path / "mix")["mixture"]
    assert mixture["meta_solver"] == "minimax_exploiters" and mixture["exploiters"] == [str(tmp_path / "br")]
    assert sorted(tuple(t["members"]) for t in mixture["exploiter_game"]["tables"]) == [
        (0,),
        (1,),
    ]  # 2 players: one member per table
    assert len(mixture["member_baseline_loss_rates"]["random"]) == 2 and mixture["limits"] == {"random": 1.0}
    weights = np.array([m["weight"] for m in mixture["members"]])
    rates = np.array(
        [t["losses"] / t["seat_games"] for t in sorted(mixture["exploiter_game"]["tables"], key=lambda t: t["members"])]
    )
    assert mixture["exploiter_loss_rates"][0] == pytest.approx(weights @ rates, abs=1e-4)
    assert (
        weights @ rates >= rates.min() - 1e-9 and weights @ rates >= rates.max() - 0.01
    )  # the member the exploiter beats least
    # a limit no member meets (these untrained members lose about half their games to random) is refused, and nothing is
    # written
    assert min(mixture["member_baseline_loss_rates"]["random"]) > 0
    assert main([str(tmp_path / "none"), *args, "--max-loss", "random=0"]) == 2
    assert "no mixture of these members meets the limits {'random': 0.0}" in capsys.readouterr().err and not list(
        tmp_path.glob("none*")
    )
    for bad, message in (
        (["--max-loss", "nobody=0.1"], "expected BASELINE=RATE with BASELINE one of"),
        (["--max-loss", "random=2"], "expected a loss rate in"),
        (["--max-loss", "random=x"], "is not a number"),
    ):
        assert main([str(tmp_path / "bad"), *args, *bad]) == 2 and message in capsys.readouterr().err
    assert (
        main([str(tmp_path / "bad"), str(tmp_path / "a0"), "--max-loss", "random=0.5"]) == 2
        and "--max-loss needs --exploiters" in capsys.readouterr().err
    )
    assert (
        main([str(tmp_path / "bad"), str(tmp_path / "a0"), "--exploiters", str(tmp_path / "mix")]) == 2
        and "expected an agent or run checkpoint" in capsys.readouterr().err
    )
    assert not list(tmp_path.glob("bad*"))


def test_max_weight_caps_every_member_and_is_recorded_and_a_bad_cap_is_refused_before_any_game(tmp_path, capsys):
    for s in range(3):
        _agent(tmp_path / f"a{s}", s)
    _agent(tmp_path / "br", 9)
    args = [*(str(tmp_path / f"a{s}") for s in range(3)), "--exploiters", str(tmp_path / "br"), "--payoff-games", "40"]
    assert main([str(tmp_path / "mix"), *args, "--max-weight", "0.4"]) == 0
    mixture = ckpt.read_metadata(tmp_path / "mix")["mixture"]
    weights = np.array([m["weight"] for m in mixture["members"]])
    assert mixture["max_weight"] == 0.4 and weights.max() <= 0.4 + 1e-6 and weights.sum() == pytest.approx(1.0)
    assert (
        main([str(tmp_path / "plain"), *args]) == 0
        and "max_weight" not in ckpt.read_metadata(tmp_path / "plain")["mixture"]
    )
    capsys.readouterr()
    for bad in ("0.3", "0"):  # below 1/3 for three members: refused before a table is played
        assert main([str(tmp_path / "bad"), *args, "--max-weight", bad]) == 2
        err = capsys.readouterr().err
        assert (
            f"--max-weight {float(bad)} is not allowed for 3 members (weights sum to 1); expected W of at least 1/3"
            in err
            and "exploiter 1/1" not in err
        )
    for bad, message in (("2", "2.0 is not allowed; expected a weight in [0, 1]"), ("x", "'x' is not a number")):
        with pytest.raises(SystemExit):
            main([str(tmp_path / "bad"), *args, "--max-weight", bad])
        assert message in capsys.readouterr().err
    assert main([str(tmp_path / "bad"), str(tmp_path / "a0"), str(tmp_path / "a1"), "--max-weight", "0.5"]) == 2
    assert "--max-weight needs --exploiters" in capsys.readouterr().err
    assert not list(tmp_path.glob("bad*"))


def _tables(meta) -> dict:
    return {
        (t["exploiter"], tuple(t["members"])): (t["seat_games"], t["losses"])
        for t in meta["mixture"]["exploiter_game"]["tables"]
    }


def test_a_payoff_cache_serves_later_rounds_whatever_the_order_of_members_and_exploiters(tmp_path, capsys):
    """``--payoff-cache``: a second round plays only its new exploiter's tables; the tables do not depend on the
    argument order.
    """
    game3 = GameConfig.from_options(preset="mini-3p")
    for s in range(3):
        _agent(tmp_path / f"a{s}", s, game3)
    for s in (7, 8):
        _agent(tmp_path / f"br{s}", s, game3)
    cache = tmp_path / "payoffs.json"
    common = ["--payoff-games", "24", "--baseline-games", "24", "--max-loss", "random=1"]
    members = [str(tmp_path / f"a{s}") for s in range(3)]
    assert main([str(tmp_path / "plain"), *members, "--exploiters", str(tmp_path / "br7"), *common]) == 0
    assert (
        main(
            [
                str(tmp_path / "first"),
                *members,
                "--exploiters",
                str(tmp_path / "br7"),
                *common,
                "--payoff-cache",
                str(cache),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "exploiter 1/1: 6 tables (6 played, 0 from the payoff cache)" in err  # 3 members, 2 seats: 6 multisets
    plain, first = ckpt.read_metadata(tmp_path / "plain"), ckpt.read_metadata(tmp_path / "first")
    assert _tables(plain) == _tables(first)  # the cache changes nothing it serves
    assert first["mixture"]["payoff_cache"] == {
        "path": str(cache),
        "tables_played": 9,
        "tables_reused": 0,
    }  # 6 tables, 3 baseline matches
    # round two: a new exploiter, the members and exploiters in another order; only br8's 6 tables are played
    reordered = members[::-1]
    assert (
        main(
            [
                str(tmp_path / "second"),
                *reordered,
                "--exploiters",
                str(tmp_path / "br8"),
                str(tmp_path / "br7"),
                *common,
                "--payoff-cache",
                str(cache),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert (
        "exploiter 1/2: 6 tables (6 played, 0 from the payoff cache)" in err
        and "exploiter 2/2: 6 tables (0 played, 6 from the payoff cache)" in err
    )
    second = ckpt.read_metadata(tmp_path / "second")
    assert second["mixture"]["payoff_cache"]["tables_reused"] == 9
    flip = {0: 2, 1: 1, 2: 0}  # member k of the first build is member flip[k] of the second
    assert {rest: value for (j, rest), value in _tables(first).items()} == {
        tuple(sorted(flip[m] for m in rest)): value for (j, rest), value in _tables(second).items() if j == 1
    }
    assert (
        second["mixture"]["member_baseline_loss_rates"]["random"]
        == first["mixture"]["member_baseline_loss_rates"]["random"][::-1]
    )
    # without the cache, the same command plays the same tables
    assert (
        main(
            [str(tmp_path / "third"), *reordered, "--exploiters", str(tmp_path / "br8"), str(tmp_path / "br7"), *common]
        )
        == 0
    )
    assert _tables(ckpt.read_metadata(tmp_path / "third")) == _tables(second)


def test_builds_sharing_a_payoff_cache_keep_each_others_tables(tmp_path):
    """Two builds on one ``--payoff-cache``: each save merges what the other saved since it read the file (none is
    lost),
    and a file replaced meanwhile by something that is not this rule set's cache is refused by name and left as it is.
    """
    from training.evaluation.payoff_cache import PayoffCache

    path = tmp_path / "payoffs.json"
    first, second = PayoffCache(path, GAME), PayoffCache(path, GAME)  # both read the file before either saves
    first.record("table a", 10, 3)
    second.record("table b", 20, 4)
    first.save()
    second.save()
    assert json.loads(path.read_text())["entries"] == {"table a": [10, 3], "table b": [20, 4]}
    first.record("table c", 5, 5)
    first.save()
    assert set(json.loads(path.read_text())["entries"]) == {"table a", "table b", "table c"}
    assert "table b" in first and PayoffCache(path, GAME).served("table c") == (5, 5)
    other = json.dumps(
        {"format": "cockroach-poker-payoff-cache", "game_config": GameConfig(num_players=4).to_dict(), "entries": {}}
    )
    path.write_text(other)
    second.record("table d", 1, 0)
    with pytest.raises(ValueError, match=re.escape(f"--payoff-cache {str(path)!r} holds tables of")):
        second.save()
    assert path.read_text() == other


def test_processes_saving_one_payoff_cache_at_once_lose_no_table(tmp_path):
    """The merge runs under a lock: processes that save the same cache over and over at the same time keep every
    table.
    """
    import subprocess
    import sys

    path = tmp_path / "payoffs.json"
    script = (
        "import sys; from cockroach_env import GameConfig; from training.evaluation.payoff_cache import PayoffCache\n"
        "path, who = sys.argv[1], sys.argv[2]\n"
        "for k in range(40):\n"
        "    cache = PayoffCache(path, GameConfig.from_options(preset='mini'))\n"
        "    cache.record(f'{who} {k}', 10, k % 10)\n"
        "    cache.save()\n"
    )
    workers = [subprocess.Popen([sys.executable, "-c", script, str(path), f"writer{w}"]) for w in range(3)]
    assert [w.wait(timeout=300) for w in workers] == [0, 0, 0]
    assert set(json.loads(path.read_text())["entries"]) == {f"writer{w} {k}" for w in range(3) for k in range(40)}
    assert sorted(p.name for p in tmp_path.iterdir()) == [".payoffs.json.lock", "payoffs.json"]  # no temporary left


def test_a_payoff_cache_is_saved_after_each_exploiter_and_a_bad_one_is_refused(tmp_path, capsys, monkeypatch):
    for s in range(2):
        _agent(tmp_path / f"a{s}", s)
    for s in (7, 8):
        _agent(tmp_path / f"br{s}", s)
    cache = tmp_path / "payoffs.json"
    args = [
        str(tmp_path / "a0"),
        str(tmp_path / "a1"),
        "--exploiters",
        str(tmp_path / "br7"),
        str(tmp_path / "br8"),
        "--payoff-games",
        "20",
        "--payoff-cache",
        str(cache),
    ]
    import training.algorithms.psro as psro

    real, calls = psro.play_table, []

    def stopped_at_the_second_exploiter(models, *rest):
        calls.append(1)
        if len(calls) > 2:  # 2 players: 2 tables per exploiter
            raise KeyboardInterrupt
        return real(models, *rest)

    monkeypatch.setattr(psro, "play_table", stopped_at_the_second_exploiter)
    with pytest.raises(KeyboardInterrupt):
        main([str(tmp_path / "mix"), *args])
    assert len(json.loads(cache.read_text())["entries"]) == 2 and not list(
        tmp_path.glob("mix*")
    )  # the first exploiter's tables survive the stop
    monkeypatch.setattr(psro, "play_table", real)
    assert main([str(tmp_path / "mix"), *args]) == 0
    assert "exploiter 1/2: 2 tables (0 played, 2 from the payoff cache)" in capsys.readouterr().err
    kept = cache.read_bytes()
    for text, message in (
        ("not json", "cannot be read as a payoff cache"),
        ('{"format": "other", "entries": {}}', "is not a payoff cache"),
        (
            json.dumps(
                {
                    "format": "cockroach-poker-payoff-cache",
                    "game_config": GameConfig(num_players=4).to_dict(),
                    "entries": {},
                }
            ),
            "expected a cache of one rule set",
        ),
        (
            json.dumps(
                {"format": "cockroach-poker-payoff-cache", "game_config": GAME.to_dict(), "entries": {"k": [3, 5]}}
            ),
            "expected [seat_games, losses] with 0 <= losses <= seat_games",
        ),
    ):
        cache.write_text(text)
        assert main([str(tmp_path / "bad"), *args]) == 2
        err = capsys.readouterr().err
        assert message in err and str(cache) in err, err
        assert cache.read_text() == text and not list(tmp_path.glob("bad*"))  # nothing changed, nothing written
    cache.write_bytes(kept)
    assert (
        main([str(tmp_path / "bad"), str(tmp_path / "a0"), "--payoff-cache", str(cache)]) == 2
        and "--payoff-cache needs --exploiters" in capsys.readouterr().err
    )
    assert main([str(tmp_path / "bad"), *args[:-1], str(tmp_path)]) == 2 and "is a directory" in capsys.readouterr().err
    assert (
        main([str(tmp_path / "bad"), *args[:-1], str(tmp_path / "bad.json")]) == 2
        and "is OUTPUT's metadata file" in capsys.readouterr().err
    )
    assert not list(tmp_path.glob("bad*"))


def test_ray_without_tables_to_play_is_refused_before_a_cluster_starts(tmp_path, capsys):
    for s in range(2):
        _agent(tmp_path / f"a{s}", s)
    for extra in ([], ["--weights", "1", "2"]):
        assert main([str(tmp_path / "mix"), str(tmp_path / "a0"), str(tmp_path / "a1"), *extra, "--ray"]) == 2
        assert "--ray plays the payoff tables; add --exploiters or --meta-solver" in capsys.readouterr().err
    assert not list(tmp_path.glob("mix*"))


def test_a_negative_seed_is_refused_by_name_before_any_game(tmp_path, capsys):
    for s in range(2):
        _agent(tmp_path / f"a{s}", s)
    for extra in (["--meta-solver", "regret_matching"], ["--exploiters", str(tmp_path / "a1")]):
        with pytest.raises(SystemExit):
            main(
                [
                    str(tmp_path / "bad"),
                    str(tmp_path / "a0"),
                    str(tmp_path / "a1"),
                    *extra,
                    "--payoff-games",
                    "4",
                    "--seed",
                    "-5",
                ]
            )
        assert "argument --seed: -5 is not allowed; expected an integer from 0 to 2**64 - 1" in capsys.readouterr().err
    assert not list(tmp_path.glob("bad*"))


def test_the_games_run_on_the_torch_threads_asked_for(tmp_path, capsys):
    for s in range(2):
        _agent(tmp_path / f"a{s}", s)
    args = [str(tmp_path / "a0"), str(tmp_path / "a1"), "--exploiters", str(tmp_path / "a1"), "--payoff-games", "8"]
    for bad, message in (("-1", "-1 is not allowed"), ("two", "'two' is not a whole number")):
        with pytest.raises(SystemExit):
            main([str(tmp_path / "bad"), *args, "--torch-threads", bad])
        assert (
            f"argument --torch-threads: {message}; expected 0 (torch's default) or a positive thread count"
            in capsys.readouterr().err
        )
    assert not list(tmp_path.glob("bad*"))
    before = torch.get_num_threads()
    try:
        assert main([str(tmp_path / "mix"), *args, "--torch-threads", "3"]) == 0 and torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_members_below_a_weight_are_pruned_and_recorded(tmp_path, capsys):
    for s in range(3):
        _agent(tmp_path / f"a{s}", s)
    members = [str(tmp_path / f"a{s}") for s in range(3)]
    assert (
        main([str(tmp_path / "mix"), *members, "--weights", "0.6", "0.3995", "0.0005", "--prune-below", "0.001"]) == 0
    )
    assert "pruned 1 members below weight 0.001: ['agent2']" in capsys.readouterr().err
    meta = ckpt.read_metadata(tmp_path / "mix")
    assert [m["name"] for m in meta["mixture"]["members"]] == ["agent0", "agent1"]
    assert np.allclose([m["weight"] for m in meta["mixture"]["members"]], [0.6 / 0.9995, 0.3995 / 0.9995])
    assert [r["source"] for r in meta["mixture"]["recipes"]] == members[:2]  # one recipe per kept member
    pruned = meta["mixture"]["pruned"]
    assert pruned["members"] == [{"name": "agent2", "weight": 0.0005}] and pruned["names_before"] == [
        "agent0",
        "agent1",
        "agent2",
    ]
    assert len(ckpt.member_models(ckpt.load_checkpoint(tmp_path / "mix"))) == 2
    # with exploiters: their loss rates against the pruned weights are recorded beside the tables of the members before
    # pruning
    _agent(tmp_path / "br", 9)
    solve = [*members, "--exploiters", str(tmp_path / "br"), "--payoff-games", "20"]
    assert main([str(tmp_path / "whole"), *solve]) == 0
    weights = sorted(m["weight"] for m in ckpt.read_metadata(tmp_path / "whole")["mixture"]["members"])
    assert weights[0] < weights[-1]
    assert main([str(tmp_path / "ex"), *solve, "--prune-below", str(weights[-1])]) == 0  # keeps only the heaviest
    meta = ckpt.read_metadata(tmp_path / "ex")["mixture"]
    assert len(meta["pruned"]["members"]) == 3 - len(meta["members"]) >= 1 and len(meta["members"]) == len(
        meta["recipes"]
    )
    padded = np.array(
        [next((m["weight"] for m in meta["members"] if m["name"] == n), 0.0) for n in meta["pruned"]["names_before"]]
    )
    rates = {
        tuple(t["members"]): t["losses"] / t["seat_games"] for t in meta["exploiter_game"]["tables"]
    }  # 2 players: one member per table
    assert meta["pruned"]["exploiter_loss_rates"][0] == pytest.approx(
        sum(w * rates[(k,)] for k, w in enumerate(padded)), abs=1e-4
    )
    # W above every weight drops everything: refused, nothing written
    assert main([str(tmp_path / "none"), *members, "--prune-below", "0.5"]) == 2
    assert "--prune-below 0.5 drops every member" in capsys.readouterr().err and not list(tmp_path.glob("none*"))
    with pytest.raises(SystemExit):
        main([str(tmp_path / "none"), *members, "--prune-below", "2"])
    assert "2.0 is not allowed; expected a weight in [0, 1]" in capsys.readouterr().err


def test_every_member_has_its_own_name_when_a_mixture_is_mixed_with_one_of_its_members_again(tmp_path):
    """A checkpoint that a mixture holds, given again beside it, stays a member of its own, under the first
    ``NAME#K`` that no member has, so that ``cockroach-exploit --start-member`` and the reports can tell every member
    apart.
    """
    a = _agent(tmp_path / "a", 0)
    _agent(tmp_path / "b", 1, name="agent0")  # another network of the same name
    assert main([str(tmp_path / "mix1"), str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert [m["name"] for m in ckpt.read_metadata(tmp_path / "mix1")["mixture"]["members"]] == ["agent0", "agent0#2"]
    assert main([str(tmp_path / "mix2"), str(tmp_path / "mix1"), str(tmp_path / "a")]) == 0
    members = ckpt.read_metadata(tmp_path / "mix2")["mixture"]["members"]
    assert [m["name"] for m in members] == ["agent0", "agent0#2", "agent0#3"]
    assert [m["weight"] for m in members] == pytest.approx([0.25, 0.25, 0.5])
    agent = ckpt.load_agent(tmp_path / "mix2", seed=0)
    assert len(agent.members) == 3 and _same(agent.members[0].model, a) and _same(agent.members[2].model, a)
    # a repeated name skips the names that later members have
    _agent(tmp_path / "c", 2, name="agent0#2")
    assert main([str(tmp_path / "mix3"), str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "c")]) == 0
    names = [m["name"] for m in ckpt.read_metadata(tmp_path / "mix3")["mixture"]["members"]]
    assert names == ["agent0", "agent0#3", "agent0#2"]
