"""PSRO: the population opponents of the PPO loop, mixture agents and checkpoints, and the PSRO loop with exact
resume.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("yaml")

import baselines  # noqa: E402
from cockroach_env import GameConfig  # noqa: E402
from training.core import checkpoint as ckpt  # noqa: E402
from training.core.checkpoint import save_mixture_checkpoint  # noqa: E402
from training.core.config import load_config  # noqa: E402
from training.core.mixture import MixtureAgent  # noqa: E402
from training.core.model import ActorCritic  # noqa: E402
from training.evaluation.arena import play_match  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY_PSRO = [
    "algorithm=psro",
    "game.preset=mini",
    "ppo.num_envs=16",
    "ppo.num_steps=8",
    "model.hidden_sizes=[16]",
    "psro.best_response_decisions=256",
    "psro.payoff_games=16",
    "schedule.checkpoint_every=1",
    "evaluation.final_games=8",
    "evaluation.opponents=[random]",
]


def _psro(tmp_path, name: str, iterations: int, *extra: str) -> int:
    from training.cli.train import main

    sets = [*TINY_PSRO, f"name={name}", f"output_dir={tmp_path}", f"psro.iterations={iterations}"]
    return main(["--no-progress", *[a for s in sets for a in ("--set", s)], *extra])


# ---------------------------------------------------------------------------- population opponents in the PPO loop


def test_population_tables_seat_the_learner_and_draw_every_other_seat_from_the_weights():
    from training.core.opponents import POLICY_SEAT, POPULATION_SEAT, FixedOpponents, Population, Tables

    game = GameConfig(num_players=4)
    config = load_config(
        None, ["opponents.population=1", "opponents.self_play=0", "opponents.snapshots=0", "opponents.baselines={}"]
    )
    models = [ActorCritic(game, [8], seed=s) for s in range(3)]
    population = Population(models, np.array([0.2, 0.0, 0.8]), ["a", "b", "c"])
    tables = Tables(config, game, 2000, FixedOpponents(population, {}))
    tables.draw(np.arange(2000), np.random.default_rng(0), {}, [])
    owners = tables.owner
    assert ((owners == POLICY_SEAT).sum(1) == 1).all()
    members = POPULATION_SEAT - owners[owners != POLICY_SEAT]
    assert set(np.unique(members)) == {0, 2}  # member "b" has weight 0
    assert abs((members == 2).mean() - 0.8) < 0.03
    # each seat draws its own member: tables with both members at once are common
    mixed = [(len(set(row[row != POLICY_SEAT])) > 1) for row in owners]
    assert abs(np.mean(mixed) - (1 - 0.8**3 - 0.2**3)) < 0.03


def test_a_population_is_refused_without_its_weight_and_with_bad_weights(tmp_path):
    from training.algorithms.ppo import train
    from training.core.opponents import Population

    game = GameConfig(num_players=2)
    with pytest.raises(ValueError, match=r"population weights \[-1.0, 2.0\] are not allowed"):
        Population([ActorCritic(game, [8]), ActorCritic(game, [8])], np.array([-1.0, 2.0]), ["a", "b"])
    with pytest.raises(ValueError, match=r"opponents.population=1.0 needs a Population"):
        train(
            load_config(None, ["opponents.population=1", "game.num_players=2", f"output_dir={tmp_path}"]),
            progress_bar=False,
        )
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


# ---------------------------------------------------------------------------- mixtures


def test_a_mixture_draws_one_member_per_game_and_seat_the_same_on_both_engines():
    game = GameConfig(num_players=3)
    honest = baselines.make("honest", game, seed=1)
    random_agent = baselines.make("random", game, seed=2)
    mixture = MixtureAgent([honest, random_agent], [1.0, 0.0], game, name="mix")
    alone = play_match([baselines.make("honest", game, seed=1), "heuristic*2"], game, games=30, seed=5)
    mixed = play_match([mixture, "heuristic*2"], game, games=30, seed=5)
    assert [r.loser_seat for r in mixed.records] == [
        r.loser_seat for r in alone.records
    ]  # weight 1 on one member: that member alone

    def lineup():
        return [
            MixtureAgent(
                [baselines.make("honest", game, seed=1), baselines.make("random", game, seed=2)],
                [0.5, 0.5],
                game,
                name="mix",
            ),
            "heuristic",
            "random",
        ]

    batched = play_match(lineup(), game, games=60, seed=3, engine="batched")
    aec = play_match(lineup(), game, games=60, seed=3, engine="aec")
    assert [(r.loser_seat, r.steps) for r in batched.records] == [(r.loser_seat, r.steps) for r in aec.records]
    assert batched.report("mix").counts == aec.report("mix").counts
    with pytest.raises(ValueError, match=r"mixture weights \[0.0, 0.0\] are not allowed"):
        MixtureAgent([honest, random_agent], [0.0, 0.0], game)


def test_a_mixture_checkpoint_loads_as_an_agent_and_a_bad_one_is_refused(tmp_path):
    game = GameConfig(num_players=2)
    models = [ActorCritic(game, [8], seed=s) for s in range(2)]
    meta = {
        "game_config": game.to_dict(),
        "model": {"hidden_sizes": [8], "activation": "tanh", "card_counting": False},
        "name": "mix",
    }
    path = save_mixture_checkpoint(tmp_path / "mix", models, [0.25, 0.75], ["a", "b"], meta)
    agent = ckpt.load_agent(tmp_path / "mix", seed=0)
    assert isinstance(agent, MixtureAgent) and agent.weights.tolist() == [0.25, 0.75]
    for member, model in zip(agent.members, models):
        for key, value in model.state_dict().items():
            assert torch.equal(member.model.state_dict()[key], value)
    assert play_match([str(tmp_path / "mix"), "random"], game, games=10, seed=0).games == 10
    with pytest.raises(ckpt.CheckpointError, match=r"a mixture checkpoint holds several networks"):
        ckpt.build_model(ckpt.load_checkpoint(path))
    document = json.loads(path.read_text())
    document["mixture"]["members"][0]["weight"] = -1
    path.write_text(json.dumps(document))
    with pytest.raises(ckpt.CheckpointError, match=r"needs mixture.members, a list of \{name, weight >= 0\}"):
        ckpt.load_agent(tmp_path / "mix")


# ---------------------------------------------------------------------------- the PSRO loop


def test_psro_trains_a_mixture_and_an_interrupted_run_resumes_exactly(tmp_path):
    assert _psro(tmp_path, "whole", 2) == 0
    run = tmp_path / "whole"
    for name in ("checkpoint.json", "final.json", "psro.csv", "br_1_0/final.json", "br_2_0/final.json"):
        assert (run / name).exists(), name
    final = ckpt.read_metadata(run / "final")
    assert (run / final["tensors"]["file"]).exists()  # the tensor generation the metadata points to
    assert final["kind"] == "mixture" and len(final["mixture"]["members"]) == 3
    assert (
        final["psro"]["meta_game"]["size"] == 3 and len(final["psro"]["meta_game"]["tables"]) == 6
    )  # multisets of 2 from 3 members
    assert abs(sum(m["weight"] for m in final["mixture"]["members"]) - 1) < 1e-9
    assert final["evaluation"]["results"][0]["opponent"] == "random"

    assert _psro(tmp_path, "split", 1) == 0
    assert ckpt.read_metadata(tmp_path / "split" / "checkpoint")["step"]["iteration"] == 1
    assert _psro(tmp_path, "split", 2, "--resume") == 0
    whole = ckpt.load_checkpoint(run / "checkpoint")
    split = ckpt.load_checkpoint(tmp_path / "split" / "checkpoint")
    assert whole.tensors.keys() == split.tensors.keys()
    for key, value in whole.tensors.items():
        assert torch.equal(value, split.tensors[key]), key
    assert whole.metadata["psro"]["meta_game"] == split.metadata["psro"]["meta_game"]
    assert whole.metadata["mixture"] == split.metadata["mixture"]
    assert len(split.metadata["commands"]) == 2
    timing = ("wall_seconds", "best_response_seconds", "payoff_seconds")

    def rows(path):
        return [{k: v for k, v in row.items() if k not in timing} for row in csv.DictReader(path.open())]

    assert rows(run / "psro.csv") == rows(tmp_path / "split" / "psro.csv")

    # the result plays in cockroach-eval and refuses a resume with another config
    from training.cli.eval import main as evaluate

    assert evaluate([str(run / "final"), "random", "--preset", "mini", "--games", "8", "--quiet"]) == 0
    from training.cli.exploit import main as exploit

    assert (
        exploit([str(run / "final"), "--exact", "--json", str(tmp_path / "exact.json")]) == 0
    )  # the mixture, weighted by reach
    assert 0 <= json.loads((tmp_path / "exact.json").read_text())["nash_conv"] <= 4
    assert _psro(tmp_path, "split", 3, "--resume", "--set", "psro.payoff_games=32") == 2
    # another meta-solver on resume: the saved meta-game is solved again
    assert _psro(tmp_path, "split", 2, "--resume", "--set", "psro.meta_solver=uniform") == 0
    assert [m["weight"] for m in ckpt.read_metadata(tmp_path / "split" / "final")["mixture"]["members"]] == [1 / 3] * 3


def test_resuming_a_finished_run_changes_nothing_and_names_its_mixture(tmp_path, capsys):
    assert _psro(tmp_path, "done", 1) == 0
    run = tmp_path / "done"
    before = {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}
    capsys.readouterr()
    assert _psro(tmp_path, "done", 1, "--resume") == 0
    assert "is already finished at iteration 1" in capsys.readouterr().err
    assert {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()} == before


def test_overwrite_retires_the_replaced_runs_checkpoints_before_the_new_run_writes(tmp_path, capsys, monkeypatch):
    """A PSRO run started again with ``--overwrite`` and stopped in its first iteration leaves no checkpoint of the
    replaced
    run for ``--resume`` to continue (under the new run's ``psro.csv``), nor its ``final`` mixture: only the new run's
    own.
    """
    import training.algorithms.psro

    assert _psro(tmp_path, "again", 2) == 0

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("second SIGINT")

    monkeypatch.setattr(training.algorithms.psro, "train_best_response", killed)
    assert _psro(tmp_path, "again", 2, "--overwrite") == 130
    monkeypatch.undo()
    assert not (tmp_path / "again" / "final.json").exists()
    saved = ckpt.read_metadata(tmp_path / "again" / "checkpoint")
    assert saved["step"]["iteration"] == 0 and len(saved["commands"]) == 1 and "--overwrite" in saved["commands"][0]


def test_a_signal_during_the_first_iterations_best_response_leaves_a_run_that_resumes_exactly(
    tmp_path, capsys, monkeypatch
):
    """Ctrl-C in iteration 1: the best response saves its update and the command says to continue with ``--resume``,
    which must then find a PSRO checkpoint (the population before iteration 1) and give the uninterrupted run's result.
    """
    import signal

    import training.algorithms.ppo

    assert _psro(tmp_path, "whole", 1) == 0
    rollout, calls = training.algorithms.ppo.collect_rollout, []

    def ctrl_c_in_the_first_rollout(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            signal.raise_signal(signal.SIGINT)
        return rollout(*args, **kwargs)

    monkeypatch.setattr(training.algorithms.ppo, "collect_rollout", ctrl_c_in_the_first_rollout)
    assert _psro(tmp_path, "split", 1) == 130
    monkeypatch.undo()
    assert "--resume" in capsys.readouterr().err
    assert _psro(tmp_path, "split", 1, "--resume") == 0
    whole, split = (ckpt.load_checkpoint(tmp_path / name / "checkpoint") for name in ("whole", "split"))
    assert whole.tensors.keys() == split.tensors.keys() and all(
        torch.equal(v, split.tensors[k]) for k, v in whole.tensors.items()
    )
    assert whole.metadata["mixture"] == split.metadata["mixture"]


def test_init_from_a_mixture_seeds_psro_with_every_member_and_ppo_with_the_heaviest(tmp_path):
    game = GameConfig.from_options(preset="mini")
    models = [ActorCritic(game, [16], "tanh", True, seed=s) for s in range(2)]
    meta = {
        "game_config": game.to_dict(),
        "model": {"hidden_sizes": [16], "activation": "tanh", "card_counting": True},
        "name": "seed",
        "commands": ["made by hand"],
    }
    save_mixture_checkpoint(tmp_path / "seed", models, [0.25, 0.75], ["low", "high"], meta)
    assert (
        _psro(
            tmp_path,
            "seeded",
            1,
            "--init-from",
            str(tmp_path / "seed"),
            "--set",
            "psro.population_share=0.5",
            "--set",
            "opponents.baselines={random: 1}",
        )
        == 0
    )
    br = ckpt.read_metadata(tmp_path / "seeded" / "br_1_0" / "final")["training_config"][
        "opponents"
    ]  # a robust best response
    assert br["population"] == 0.5 and sum(
        [br["self_play"], br["snapshots"], br["exploiter"], *br["baselines"].values()]
    ) == pytest.approx(0.5)
    final = ckpt.load_checkpoint(tmp_path / "seeded" / "final")
    assert [m["name"] for m in final.metadata["mixture"]["members"]] == ["low", "high", "member_2"]
    assert final.metadata["psro"]["meta_game"]["size"] == 3 and len(final.metadata["psro"]["meta_game"]["tables"]) == 6
    assert final.metadata["base_run"]["members"] == ["low", "high"] and final.metadata["base_run"]["commands"] == [
        "made by hand"
    ]
    for k, model in enumerate(models):
        assert all(
            torch.equal(final.group(f"member.{k}.model")[key], value) for key, value in model.state_dict().items()
        )
    # anything else (PPO) starts from the heaviest member
    from training.cli.train import _initial_weights

    weights, population, base_run = _initial_weights(
        str(tmp_path / "seed"), load_config(None, ["game.preset=mini", "model.hidden_sizes=[16]"])
    )
    assert population is None and base_run["member"] == "high"
    assert all(torch.equal(weights[key], value) for key, value in models[1].state_dict().items())


def test_exact_evaluation_weights_a_mixture_by_reach():
    from training.evaluation.exact import nash_conv

    game = GameConfig.from_options(preset="mini")
    members = [baselines.make("random", game, seed=0), baselines.make("honest", game, seed=0)]
    mixture = MixtureAgent(members, [0.25, 0.75], game)
    assert nash_conv(mixture, game) == pytest.approx(nash_conv([(0.25, members[0]), (0.75, members[1])], game))
    assert nash_conv(MixtureAgent(members, [1.0, 0.0], game), game) == pytest.approx(nash_conv(members[0], game))


def test_the_psro_config_is_validated():
    from training.core.config import ConfigError

    with pytest.raises(
        ConfigError,
        match=r"meta_solver='nash' is not allowed; expected one of \['alpharank', 'prd', 'regret_matching', "
        r"'uniform'\]",
    ):
        load_config(None, ["psro.meta_solver=nash"])
    with pytest.raises(
        ConfigError, match=r"algorithm='dqn' is not allowed; expected one of \['cfr', 'nfsp', 'ppo', 'psro'\]"
    ):
        load_config(None, ["algorithm=dqn"])
    with pytest.raises(ConfigError, match=r"iterations=0 is not allowed"):
        load_config(None, ["psro.iterations=0"])
    for share in ("0", "1.5"):
        with pytest.raises(
            ConfigError, match=rf"population_share={float(share)} is not allowed; expected a number in \(0, 1\]"
        ):
            load_config(None, [f"psro.population_share={share}"])
    only_population = [
        "algorithm=psro",
        "psro.population_share=0.5",
        "opponents.self_play=0",
        "opponents.snapshots=0",
        "opponents.population=1",
        "opponents.baselines={}",
    ]
    with pytest.raises(
        ConfigError,
        match=r"population_share=0.5 is not allowed; expected 1, or opponents weights .* with a positive sum",
    ):
        load_config(None, only_population)


def test_a_robust_best_response_keeps_the_configs_opponent_mix_beside_the_population(tmp_path):
    from training.algorithms.psro import _best_response_config

    sets = [
        "algorithm=psro",
        "opponents.self_play=0.3",
        "opponents.snapshots=0.1",
        "opponents.exploiter=0",
        "opponents.baselines={heuristic: 0.4, random: 0.2}",
    ]
    pure = _best_response_config(load_config(None, sets), 1, 0, tmp_path).opponents
    assert (pure.population, pure.self_play, pure.snapshots, pure.baselines) == (1.0, 0.0, 0.0, {})
    robust = _best_response_config(load_config(None, [*sets, "psro.population_share=0.6"]), 1, 0, tmp_path).opponents
    assert (
        robust.population == 0.6 and robust.self_play == pytest.approx(0.12) and robust.snapshots == pytest.approx(0.04)
    )
    assert robust.baselines == pytest.approx({"heuristic": 0.16, "random": 0.08})


# ---------------------------------------------------------------------------- Ray


@pytest.mark.slow
def test_psro_on_a_local_ray_cluster_gives_the_single_process_result(tmp_path, ray_cluster):
    """Two best responses per iteration and the payoff tables run as Ray tasks on a local cluster: the same mixture as
    in one process.
    """
    parallel = ["--set", "psro.best_responses_per_iteration=2"]
    assert _psro(tmp_path, "here", 2, *parallel) == 0
    assert _psro(tmp_path, "ray", 2, *parallel, "--ray") == 0
    here = ckpt.load_checkpoint(tmp_path / "here" / "final")
    on_ray = ckpt.load_checkpoint(tmp_path / "ray" / "final")
    assert len(here.metadata["mixture"]["members"]) == 5
    for key, value in here.tensors.items():
        assert torch.equal(value, on_ray.tensors[key]), key
    assert here.metadata["psro"]["meta_game"] == on_ray.metadata["psro"]["meta_game"]
    assert here.metadata["mixture"] == on_ray.metadata["mixture"]


def test_ray_is_refused_for_an_algorithm_without_ray_or_rollout_workers(capsys):
    from training.cli.train import main

    assert main(["--ray", "--set", "algorithm=ppo", "--print-config"]) == 0  # printing needs no cluster
    cfr = ["--set", "algorithm=cfr", "--set", "game.preset=mini", "--set", "output_dir=/nonexistent-psro-test"]
    assert main(["--ray", *cfr]) == 2
    assert "--ray is not allowed with algorithm: cfr" in capsys.readouterr().err


def test_cockroach_exploit_trains_against_a_mixture_drawn_per_seat_and_game(tmp_path, capsys):
    from training.cli.exploit import main

    game = GameConfig(num_players=3)
    models = [ActorCritic(game, [8], seed=s) for s in range(2)]
    meta = {
        "game_config": game.to_dict(),
        "model": {"hidden_sizes": [8], "activation": "tanh", "card_counting": False},
        "name": "mix",
    }
    save_mixture_checkpoint(tmp_path / "mix", models, [0.3, 0.7], ["a", "b"], meta)
    report = tmp_path / "report.json"
    sets = ["ppo.num_envs=16", "ppo.num_steps=8", "evaluation.every=0", "schedule.checkpoint_every=2"]
    argv = [
        str(tmp_path / "mix"),
        "--decisions",
        "256",
        "--games",
        "30",
        "--output-dir",
        str(tmp_path),
        "--no-progress",
    ]
    assert main(argv + ["--json", str(report)] + [a for s in sets for a in ("--set", s)]) == 0
    result = json.loads(report.read_text())
    assert result["mixture_members"] == 2 and result["games"] == 30 and result["parity"] == pytest.approx(1 / 3)
    run = ckpt.read_metadata(tmp_path / "exploit_mix" / "checkpoint")
    assert run["progress"]["population"] == {"names": ["a", "b"], "weights": [0.3, 0.7]}
    assert (
        run["training_config"]["opponents"]["population"] == 1.0
        and run["training_config"]["opponents"]["baselines"] == {}
    )
    assert result["start_member"] == "b"  # the heaviest member by default
    # from another member: its own run directory, recorded in the report
    from_a, every_report = (
        tmp_path / "from-a.json",
        tmp_path / "every.json",
    )  # cockroach-exploit keeps an existing report
    assert main([*argv, "--json", str(from_a), "--start-member", "a", *[a for s in sets for a in ("--set", s)]]) == 0
    assert (
        json.loads(from_a.read_text())["start_member"] == "a"
        and (tmp_path / "exploit_mix-from-a" / "final.json").exists()
    )
    capsys.readouterr()
    assert (
        main([*argv, "--start-member", "c"]) == 2
        and "--start-member 'c' is not allowed; expected one of its members ['a', 'b']" in capsys.readouterr().err
    )
    assert (
        main([*argv, "--start-member", "a", "--from-scratch"]) == 2
        and "--from-scratch starts from a random network" in capsys.readouterr().err
    )
    # every start: the runs are checked before any is trained (from-a exists), then one run per member, the worst
    # reported
    every = [*argv, "--json", str(every_report), "--start-member", "all", *[a for s in sets for a in ("--set", s)]]
    assert main(every) == 2 and "exploit_mix-from-a already holds a best-response run" in capsys.readouterr().err
    assert not (tmp_path / "exploit_mix-from-b").exists()
    assert main([*every, "--overwrite"]) == 0
    result = json.loads(every_report.read_text())
    assert [r["start_member"] for r in result["starts"]] == ["a", "b"] and (
        tmp_path / "exploit_mix-from-b" / "final.json"
    ).exists()
    worst = min(result["starts"], key=lambda r: r["best_response_loss_rate"])
    assert (
        result["start_member"] == worst["start_member"]
        and result["best_response_loss_rate"] == worst["best_response_loss_rate"]
    )
    assert "worst over 2 starts: from " in capsys.readouterr().out
    # a minimum weight that leaves one start; one that leaves none; one without "all"; one out of range
    assert main([*every, "--overwrite", "--min-start-weight", "0.5"]) == 0
    one = json.loads(every_report.read_text())
    assert "starts" not in one and one["start_member"] == "b" and "worst over" not in capsys.readouterr().out
    assert (
        main([*every, "--overwrite", "--min-start-weight", "0.8"]) == 2
        and "--min-start-weight 0.8 leaves no start; the members' weights are {'a': 0.3, 'b': 0.7}"
        in capsys.readouterr().err
    )
    assert (
        main([*argv, "--min-start-weight", "0.5"]) == 2
        and "only used with --start-member all" in capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        main([*every, "--min-start-weight", "1.5"])
    assert "1.5 is not allowed; expected a weight in [0, 1]" in capsys.readouterr().err
    assert main([str(tmp_path / "exploit_mix" / "final"), "--start-member", "all", "--output-dir", str(tmp_path)]) == 2
    assert "is not a mixture" in capsys.readouterr().err


def test_cockroach_exploit_starts_from_a_network_outside_the_mixture(tmp_path, capsys):
    """``--start-from CKPT``: one more start, from a network that is not a member, reported beside the members'
    starts.
    """
    from training.cli.exploit import main

    game = GameConfig(num_players=3)
    spec = {"hidden_sizes": [8], "activation": "tanh", "card_counting": False}
    models = [ActorCritic(game, [8], seed=s) for s in range(2)]
    save_mixture_checkpoint(
        tmp_path / "mix", models, [0.3, 0.7], ["a", "b"], {"game_config": game.to_dict(), "model": spec, "name": "mix"}
    )
    outside = ActorCritic(game, [8], seed=9)
    ckpt.save_checkpoint(
        tmp_path / "strong",
        {f"model.{k}": v for k, v in outside.state_dict().items()},
        {"kind": "agent", "game_config": game.to_dict(), "model": spec, "name": "strong"},
    )
    report = tmp_path / "report.json"
    sets = [
        a
        for s in ["ppo.num_envs=16", "ppo.num_steps=8", "evaluation.every=0", "schedule.checkpoint_every=2"]
        for a in ("--set", s)
    ]
    argv = [
        str(tmp_path / "mix"),
        "--decisions",
        "256",
        "--games",
        "30",
        "--output-dir",
        str(tmp_path),
        "--json",
        str(report),
        "--no-progress",
        *sets,
    ]
    assert main([*argv, "--start-from", str(tmp_path / "strong")]) == 0
    result = json.loads(report.read_text())
    assert [r["start_member"] for r in result["starts"]] == [
        "b",
        "strong (--start-from)",
    ]  # the heaviest member, then the outside start
    run = ckpt.read_metadata(tmp_path / "exploit_mix-from-strong" / "checkpoint")
    assert run["progress"]["population"]["names"] == ["a", "b"]  # it plays the mixture
    assert "worst over 2 starts" in capsys.readouterr().out
    # its weights, not a member's, are where the best response began: after one small update it is still the outside
    # network
    assert (
        main(
            [*argv, "--start-member", "a", "--start-from", str(tmp_path / "strong"), "--overwrite", "--decisions", "1"]
        )
        == 0
    )
    start = ckpt.build_model(ckpt.load_checkpoint(tmp_path / "exploit_mix-from-strong" / "final")).state_dict()

    def distance(model) -> float:
        return max(float((v - start[k]).abs().max()) for k, v in model.state_dict().items())

    assert distance(outside) < 0.02 < 0.2 < min(distance(m) for m in models)
    assert [r["start_member"] for r in json.loads(report.read_text())["starts"]] == ["a", "strong (--start-from)"]
    # a --start-from with the weights of a start already planned (a member saved on its own, a file given twice) trains
    # once
    ckpt.save_checkpoint(
        tmp_path / "a_alone",
        {f"model.{k}": v for k, v in models[0].state_dict().items()},
        {"kind": "agent", "game_config": game.to_dict(), "model": spec, "name": "a_alone"},
    )
    again = [
        *argv,
        "--start-member",
        "all",
        "--start-from",
        str(tmp_path / "a_alone"),
        "--start-from",
        str(tmp_path / "strong"),
        "--start-from",
        str(tmp_path / "strong"),
        "--overwrite",
    ]
    assert main(again) == 0
    assert [r["start_member"] for r in json.loads(report.read_text())["starts"]] == ["a", "b", "strong (--start-from)"]
    err = capsys.readouterr().err
    assert (
        "--start-from a_alone: the same weights as the start a; trained once" in err
        and "--start-from strong: the same weights as the start strong; trained once" in err
    )
    assert not (tmp_path / "exploit_mix-from-a_alone").exists()
    # against a single network: its own weights are one start, named so in the summary
    assert main([str(tmp_path / "a_alone"), *argv[1:], "--start-from", str(tmp_path / "strong"), "--overwrite"]) == 0
    out = capsys.readouterr().out
    assert re.search(
        r"worst over 2 starts: from (its own weights \(a_alone\)|strong \(--start-from\)), .* \(by start: its "
        r"own weights \(a_alone\) [+-][\d.]+, strong \(--start-from\) [+-][\d.]+\)",
        out,
    ), out
    assert [r["start_member"] for r in json.loads(report.read_text())["starts"]] == [None, "strong (--start-from)"]
    # refused before anything is trained: another network shape, a mixture, a missing file, two starts of one name,
    # --from-scratch
    ckpt.save_checkpoint(
        tmp_path / "elsewhere" / "strong",
        {f"model.{k}": v for k, v in ActorCritic(game, [8], seed=10).state_dict().items()},
        {"kind": "agent", "game_config": game.to_dict(), "model": spec, "name": "strong"},
    )
    wide = ActorCritic(game, [16], seed=1)
    ckpt.save_checkpoint(
        tmp_path / "wide",
        {f"model.{k}": v for k, v in wide.state_dict().items()},
        {"kind": "agent", "game_config": game.to_dict(), "model": {**spec, "hidden_sizes": [16]}},
    )
    for extra, message in (
        (["--start-from", str(tmp_path / "wide")], "expected one network shape"),
        (["--start-from", str(tmp_path / "mix")], "is a 'mixture' checkpoint; expected an agent or run checkpoint"),
        (["--start-from", str(tmp_path / "nothing")], "no checkpoint at"),
        (
            ["--start-from", str(tmp_path / "strong"), "--start-from", str(tmp_path / "elsewhere" / "strong")],
            "are named twice",
        ),
        (
            ["--start-from", str(tmp_path / "strong"), "--from-scratch"],
            "--start-from is not allowed with --from-scratch",
        ),
    ):
        assert (
            main([*argv[:5], "--output-dir", str(tmp_path / "refused"), *argv[9:], *extra]) == 2
        )  # without --json (report.json exists)
        assert message in capsys.readouterr().err
        assert not (tmp_path / "refused").exists()


@pytest.mark.slow
def test_a_league_on_a_local_ray_cluster_equals_the_league_here(ray_cluster):
    import baselines
    from training.evaluation.arena import play_league

    game = GameConfig(num_players=2)
    pool = [
        "random",
        baselines.make("honest", game, seed=5),
        "heuristic",
    ]  # an agent object: each table (task) gets a copy
    here = play_league(pool, game, games=20, seed=4)
    on_ray = play_league(pool, game, games=20, seed=4, workers=ray_cluster)
    assert here.to_json()["agents"] == on_ray.to_json()["agents"]
    assert [(r.table, r.loser_seat, r.steps) for r in here.records] == [
        (r.table, r.loser_seat, r.steps) for r in on_ray.records
    ]
    assert [r.to_dict() for r in here.ratings] == [r.to_dict() for r in on_ray.ratings]


def test_cockroach_mixture_on_a_local_ray_cluster_plays_the_tables_of_one_process(tmp_path, ray_cluster):
    """``cockroach-mixture --ray``: exploiter tables, baseline games and meta-game tables as Ray tasks give the same
    tables, weights and payoff cache as the single-process build; a cache written by one serves the other.
    """
    from training.cli.mixture import main

    game = GameConfig.from_options(preset="mini-3p")
    spec = {"hidden_sizes": [8], "activation": "tanh", "card_counting": False}
    for name, seed in (("a0", 0), ("a1", 1), ("a2", 2), ("br7", 7), ("br8", 8), ("br9", 9)):
        model = ActorCritic(game, spec["hidden_sizes"], spec["activation"], spec["card_counting"], seed=seed)
        ckpt.save_checkpoint(
            tmp_path / name,
            {f"model.{k}": v for k, v in model.state_dict().items()},
            {"kind": "agent", "game_config": game.to_dict(), "model": spec, "name": name},
        )
    members = [str(tmp_path / f"a{s}") for s in range(3)]
    exploiters = ["--exploiters", *(str(tmp_path / f"br{s}") for s in (7, 8, 9))]
    common = ["--payoff-games", "12", "--baseline-games", "12", "--max-loss", "random=1"]
    assert (
        main(
            [
                str(tmp_path / "here"),
                *members,
                *exploiters,
                *common,
                "--payoff-cache",
                str(tmp_path / "cache_here.json"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                str(tmp_path / "ray"),
                *members,
                *exploiters,
                *common,
                "--payoff-cache",
                str(tmp_path / "cache_ray.json"),
                "--ray",
            ]
        )
        == 0
    )
    here, on_ray = (ckpt.read_metadata(tmp_path / name)["mixture"] for name in ("here", "ray"))
    for key in ("exploiter_game", "member_baseline_loss_rates", "exploiter_loss_rates", "members"):
        assert here[key] == on_ray[key], key
    assert (
        on_ray["payoff_cache"]["tables_played"] == 3 * 6 + 3
    )  # 3 exploiters x 6 pairs of members (3 players), 3 baseline matches
    assert json.loads((tmp_path / "cache_here.json").read_text()) == json.loads(
        (tmp_path / "cache_ray.json").read_text()
    )
    # a later build on the cluster with the first build's cache plays only what it lacks: none of it
    assert (
        main(
            [
                str(tmp_path / "again"),
                *members[::-1],
                *exploiters,
                *common,
                "--payoff-cache",
                str(tmp_path / "cache_here.json"),
                "--ray",
            ]
        )
        == 0
    )
    assert ckpt.read_metadata(tmp_path / "again")["mixture"]["payoff_cache"] == {
        "path": str(tmp_path / "cache_here.json"),
        "tables_played": 0,
        "tables_reused": 21,
    }
    # the members' own meta-game, one task a table
    assert (
        main([str(tmp_path / "meta_here"), *members, "--meta-solver", "regret_matching", "--payoff-games", "12"]) == 0
    )
    assert (
        main(
            [str(tmp_path / "meta_ray"), *members, "--meta-solver", "regret_matching", "--payoff-games", "12", "--ray"]
        )
        == 0
    )
    meta_here, meta_ray = (ckpt.read_metadata(tmp_path / name)["mixture"] for name in ("meta_here", "meta_ray"))
    assert meta_here["meta_game"] == meta_ray["meta_game"] and meta_here["members"] == meta_ray["members"]


def test_cockroach_exploit_on_a_local_ray_cluster_trains_every_start_at_once_with_the_reports_of_one_process(
    tmp_path, capsys, ray_cluster
):
    """``cockroach-exploit --ray``: each start's best response is a Ray task; the reports and networks are those of the
    starts trained one after another.
    """
    from training.cli.exploit import main

    game = GameConfig(num_players=3)
    spec = {"hidden_sizes": [8], "activation": "tanh", "card_counting": False}
    models = [ActorCritic(game, [8], seed=s) for s in range(2)]
    save_mixture_checkpoint(
        tmp_path / "mix", models, [0.4, 0.6], ["a", "b"], {"game_config": game.to_dict(), "model": spec, "name": "mix"}
    )
    ckpt.save_checkpoint(
        tmp_path / "strong",
        {f"model.{k}": v for k, v in ActorCritic(game, [8], seed=9).state_dict().items()},
        {"kind": "agent", "game_config": game.to_dict(), "model": spec, "name": "strong"},
    )
    sets = [
        a
        for s in ["ppo.num_envs=16", "ppo.num_steps=8", "evaluation.every=0", "schedule.checkpoint_every=2"]
        for a in ("--set", s)
    ]
    results = {}
    for where, extra in (("here", []), ("ray", ["--ray"])):
        report = tmp_path / f"{where}.json"
        argv = [
            str(tmp_path / "mix"),
            "--decisions",
            "256",
            "--games",
            "30",
            "--output-dir",
            str(tmp_path / where),
            "--json",
            str(report),
            "--no-progress",
            *sets,
        ]
        assert main([*argv, "--start-member", "all", "--start-from", str(tmp_path / "strong"), *extra]) == 0
        results[where] = json.loads(report.read_text())
        assert "worst over 3 starts" in capsys.readouterr().out
    here, on_ray = results["here"], results["ray"]
    assert [r["start_member"] for r in on_ray["starts"]] == ["a", "b", "strong (--start-from)"]
    for a, b in zip(here["starts"], on_ray["starts"]):
        assert {k: v for k, v in a.items() if k != "best_response_checkpoint"} == {
            k: v for k, v in b.items() if k != "best_response_checkpoint"
        }
        for key, value in ckpt.load_checkpoint(a["best_response_checkpoint"]).tensors.items():
            assert torch.equal(value, ckpt.load_checkpoint(b["best_response_checkpoint"]).tensors[key]), key
    # a single network (the frozen checkpoint is a baseline registered inside the task) gives the same report too
    for where, extra in (("here", []), ("ray", ["--ray"])):
        argv = [
            str(tmp_path / "strong"),
            "--decisions",
            "256",
            "--games",
            "30",
            "--output-dir",
            str(tmp_path / where),
            "--json",
            str(tmp_path / f"{where}1.json"),
            "--no-progress",
            *sets,
        ]
        assert main([*argv, *extra]) == 0
    single = [json.loads((tmp_path / f"{where}1.json").read_text()) for where in ("here", "ray")]
    assert (
        single[0]["best_response_loss_rate"] == single[1]["best_response_loss_rate"]
        and single[0]["mixture_members"] is None
    )
