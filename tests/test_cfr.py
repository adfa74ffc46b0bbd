"""``algorithm: cfr``: the tree solver against OpenSpiel's CFR+, exact resume, bad inputs, the distilled agent and the
shipped ``mini`` agents.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import baselines  # noqa: E402
from cockroach_env import GameConfig  # noqa: E402
from training.algorithms.cfr import ObservationTablePolicy, average_policy, load_policy  # noqa: E402
from training.algorithms.cfr_solver import TreeSolver  # noqa: E402
from training.cli.train import main as train_cli  # noqa: E402
from training.core.checkpoint import CheckpointError, load_agent, load_checkpoint, read_metadata  # noqa: E402
from training.core.config import ConfigError, load_config  # noqa: E402
from training.evaluation.exact import evaluate, game_tree  # noqa: E402

MICRO = {"num_players": 2, "num_types": 2, "copies_per_type": 2, "discard": 2, "loss_count": 2}
MICRO_3 = {**MICRO, "num_types": 3, "discard": 4}
"""A 6-card deck, 4 removed: a few thousand histories (the OpenSpiel test's deck)."""


def _sets(tmp_path: Path, game: dict, **cfr) -> list[str]:
    return [a for s in _items(tmp_path, game, **cfr) for a in ("--set", s)]


def _items(tmp_path: Path, game: dict, **cfr) -> list[str]:
    options = {
        "iterations": 12,
        "evaluate_every": 4,
        "checkpoint_every": 4,
        "descent_steps": 3,
        "distill_steps": 200,
        "keys": "information_state",
        **cfr,
    }
    sets = [
        "algorithm=cfr",
        "name=cfr",
        f"output_dir={tmp_path}",
        "model.hidden_sizes=[32]",
        "evaluation.final_games=0",
        *[f"game.{k}={v}" for k, v in game.items()],
        *[f"cfr.{k}={v}" for k, v in options.items()],
    ]
    return sets


@pytest.mark.parametrize("variant", ["cfr+", "dcfr"])
def test_solver_converges_like_openspiels_cfr_plus(variant):
    """On a micro deck, 64 iterations of the tree solver reach the NashConv of 64 iterations of OpenSpiel's C++ CFR+
    (same tree, exported).
    """
    pyspiel = pytest.importorskip("pyspiel")
    from training.evaluation.exact import efg_string

    config = GameConfig(**MICRO_3)
    tree = game_tree(config)
    game = pyspiel.load_efg_game(efg_string(tree))
    theirs = pyspiel.CFRPlusSolver(game)
    for _ in range(64):
        theirs.evaluate_and_update_policy()
    their_nash_conv = pyspiel.nash_conv(game, theirs.average_policy())
    solver = TreeSolver(tree, keys="information_state", variant=variant)
    state = solver.initial_state()
    for _ in range(64):
        state = solver.iterate(state)
    ours = evaluate(average_policy(solver, state), config, tree).nash_conv
    uniform = evaluate(baselines.make("random", config), config, tree).nash_conv
    assert their_nash_conv < 0.1 * uniform
    assert ours <= 1.5 * their_nash_conv + 1e-4, (ours, their_nash_conv)


@pytest.mark.parametrize("variant", ["cfr+", "cfr", "linear", "dcfr"])
def test_each_variant_is_openspiels_solver_iterate_for_iterate(variant):
    """The average strategy after 20 alternating iterations is OpenSpiel's (CFR+, CFR, LCFR, DCFR 1.5/0/2) on the
    exported tree.
    """
    pyspiel = pytest.importorskip("pyspiel")
    from open_spiel.python.algorithms import discounted_cfr

    from training.evaluation.exact import efg_string

    from .test_openspiel import _decision_states

    config = GameConfig(**MICRO_3)
    tree = game_tree(config)
    game = pyspiel.load_efg_game(efg_string(tree))
    theirs = {
        "cfr+": pyspiel.CFRPlusSolver,
        "cfr": pyspiel.CFRSolver,
        "linear": discounted_cfr.LCFRSolver,
        "dcfr": lambda g: discounted_cfr.DCFRSolver(g, alpha=1.5, beta=0.0, gamma=2.0),
    }[variant](game)
    solver = TreeSolver(tree, keys="information_state", variant=variant)
    state = solver.initial_state()
    for _ in range(20):
        theirs.evaluate_and_update_policy()
        state = solver.iterate(state)
    average, ours = theirs.average_policy(), solver.average_strategy(state)
    for node in _decision_states(game):
        infoset = int(node.information_state_string().rsplit("-I", 1)[1])
        pairs = (
            average.get_state_policy(node)
            if hasattr(average, "get_state_policy")
            else average.action_probabilities(node).items()
        )
        for action, p in pairs:
            assert ours[infoset, int(node.action_to_string(action)[1:])] == pytest.approx(p, abs=1e-12), (
                infoset,
                action,
            )


def test_first_iteration_is_the_uniform_policy_and_states_are_not_mutated():
    config = GameConfig(**MICRO)
    tree = game_tree(config)
    for keys in ("observation", "information_state"):
        solver = TreeSolver(tree, keys=keys)
        start = solver.initial_state()
        state = solver.iterate(start)
        assert not start.regrets.any() and not start.strategy_sum.any()
        assert evaluate(average_policy(solver, state), config, tree).nash_conv == pytest.approx(
            evaluate(baselines.make("random", config), config, tree).nash_conv, abs=1e-12
        )


def test_bad_solver_settings_are_refused():
    tree = game_tree(GameConfig(**MICRO))
    with pytest.raises(ValueError, match="keys='seat'"):
        TreeSolver(tree, keys="seat")
    with pytest.raises(ValueError, match="variant='cfr-'"):
        TreeSolver(tree, variant="cfr-")
    for item, message in (
        ("cfr.variant=fast", "variant='fast'"),
        ("cfr.keys=cards", "keys='cards'"),
        ("cfr.iterations=0", "iterations=0"),
        ("cfr.bogus=1", "cfr.bogus"),
    ):
        with pytest.raises(ConfigError, match=message):
            load_config(None, ["algorithm=cfr", item])


def test_a_rule_set_whose_tree_is_too_large_is_refused_before_anything_is_written(tmp_path, capsys):
    assert train_cli(_sets(tmp_path, {"preset": "mini"}, max_nodes=1000)) == 2
    assert "max_nodes=1000" in capsys.readouterr().err
    assert not any(
        (tmp_path / "cfr").iterdir()
    )  # the CLI checks the run directory is writable; nothing is written in it


def test_interrupted_and_resumed_run_equals_the_uninterrupted_one(tmp_path):
    game = MICRO_3
    assert train_cli(_sets(tmp_path / "a", game)) == 0
    assert train_cli(_sets(tmp_path / "b", game, iterations=6)) == 0  # stops at 6 (an interruption at a checkpoint) ...
    assert train_cli([*_sets(tmp_path / "b", game), "--resume"]) == 0  # ... and continues to 12
    a, b = (load_checkpoint(tmp_path / d / "cfr" / "checkpoint") for d in ("a", "b"))
    for name in ("cfr.regrets", "cfr.strategy_sum"):
        assert torch.equal(a.tensors[name], b.tensors[name])
    assert a.metadata["step"]["iteration"] == b.metadata["step"]["iteration"] == 12
    rows = [
        [(r["iteration"], r["nash_conv"]) for r in csv.DictReader((tmp_path / d / "cfr" / "cfr.csv").open())]
        for d in ("a", "b")
    ]
    assert [int(i) for i, _ in rows[0]] == [0, 4, 8, 12]
    assert rows[1] == rows[0][:2] + [rows[1][2]] + rows[0][2:]  # b also logged the end of its first part, iteration 6
    assert len(b.metadata["commands"]) == 2
    # the distilled agents of both are the same network
    fa, fb = (load_checkpoint(tmp_path / d / "cfr" / "final") for d in ("a", "b"))
    assert all(torch.equal(fa.tensors[k], fb.tensors[k]) for k in fa.tensors)
    # a resumption that would change the regrets is refused, naming the key
    from training.algorithms.cfr import train

    with pytest.raises(CheckpointError, match="cfr.variant"):
        train(load_config(None, _items(tmp_path / "b", game, variant="linear")), resume=True)


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_resuming_a_finished_run_changes_nothing_unless_its_distillation_changed(tmp_path, capsys):
    """A finished run is not distilled and evaluated again: ``--resume`` names its agent and leaves every file as it
    was; another distillation (here more steps) is what a resume of a finished run does.
    """
    game = MICRO
    assert train_cli(_sets(tmp_path, game)) == 0
    run = tmp_path / "cfr"
    before = _files(run)
    capsys.readouterr()
    assert train_cli([*_sets(tmp_path, game), "--resume"]) == 0
    assert "is already finished at CFR iteration 12" in capsys.readouterr().err
    assert _files(run) == before
    assert train_cli([*_sets(tmp_path, game, distill_steps=0), "--resume"]) == 0  # the solver is the result
    assert _files(run) == before
    assert train_cli([*_sets(tmp_path, game, distill_steps=201), "--resume"]) == 0
    assert read_metadata(run / "final")["training_config"]["cfr"]["distill_steps"] == 201


def test_run_directory_discipline_and_checkpoint_validation(tmp_path, capsys):
    game = MICRO
    assert (
        train_cli(_sets(tmp_path, game, distill_steps=0, iterations=12)) == 0
    )  # (DCFR's first few iterates can be worse than random)
    assert "solver checkpoint" in capsys.readouterr().out
    assert (
        train_cli(_sets(tmp_path, game, distill_steps=0, iterations=12)) == 2
    )  # an existing run is never overwritten silently
    assert "--overwrite" in capsys.readouterr().err
    path = tmp_path / "cfr" / "checkpoint"
    policy = load_policy(path)
    config = GameConfig(**MICRO)
    assert evaluate(policy, config).nash_conv < evaluate(baselines.make("random", config), config).nash_conv
    with pytest.raises(CheckpointError, match="CFR solver checkpoint"):
        load_agent(path)
    # a tampered shape in the metadata is refused naming the field
    meta_path = tmp_path / "cfr" / "checkpoint.json"
    meta = json.loads(meta_path.read_text())
    meta["cfr"]["shape"] = "big"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="cfr.shape"):
        load_policy(path)


def test_overwrite_retires_the_replaced_runs_checkpoints_before_the_new_run_writes(tmp_path, capsys, monkeypatch):
    """A run started again with ``--overwrite`` and stopped before its first save leaves no checkpoint of the replaced
    run
    for ``--resume`` to continue (under the new run's ``cfr.csv``), nor its ``final`` to pass for the new agent.
    """
    import training.algorithms.cfr

    assert train_cli(_sets(tmp_path, MICRO, iterations=4)) == 0
    assert (tmp_path / "cfr" / "checkpoint.json").exists() and (tmp_path / "cfr" / "final.json").exists()

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("second SIGINT")

    monkeypatch.setattr(training.algorithms.cfr, "_save_solver", killed)
    assert train_cli([*_sets(tmp_path, MICRO, iterations=4), "--overwrite"]) == 130
    monkeypatch.undo()
    assert not [p.name for p in (tmp_path / "cfr").iterdir() if p.name.startswith(("checkpoint", "final"))]
    capsys.readouterr()
    assert train_cli([*_sets(tmp_path, MICRO, iterations=4), "--resume"]) == 2
    assert "no checkpoint" in capsys.readouterr().err


def test_observation_keys_and_the_distilled_network_match_their_table(tmp_path):
    """Observation-keyed CFR's table is a profile seat; the distilled network reproduces it closely."""
    game = MICRO_3
    assert train_cli(_sets(tmp_path, game, keys="observation", iterations=8, descent_steps=0, distill_steps=1500)) == 0
    config = GameConfig(**game)
    tree = game_tree(config)
    table = load_policy(tmp_path / "cfr" / "checkpoint")
    assert isinstance(table, ObservationTablePolicy)
    agent = load_agent(tmp_path / "cfr" / "final")
    ours = agent.action_probabilities_batch(tree.observations, tree.masks)
    np.testing.assert_allclose(
        ours, table.action_probabilities_batch(tree.observations.copy(), tree.masks.copy()), atol=0.05
    )
    meta = read_metadata(tmp_path / "cfr" / "final")
    assert meta["kind"] == "agent" and meta["exact"]["solver"]["keys"] == "observation"
    assert meta["exact"]["nash_conv"] == pytest.approx(evaluate(agent, config).nash_conv, abs=1e-6)
    with pytest.raises(ValueError, match="not one of the"):
        table.action_probabilities_batch(tree.observations[:1] + 7, tree.masks[:1])


@pytest.mark.parametrize("name", ["mini", pytest.param("mini-3p", marks=pytest.mark.slow)])
def test_shipped_mini_agents_load_by_name_and_their_exact_nash_conv_is_the_recorded_one(name, capsys):
    from training.cli.exploit import main as exploit

    agent = load_agent(name)
    config = GameConfig.from_options(preset=name)
    assert agent.config == config
    meta = read_metadata(name)
    assert meta["commands"] and meta["training_config"]["algorithm"] == "cfr"
    assert evaluate(agent, config).nash_conv == pytest.approx(meta["exact"]["nash_conv"], abs=1e-6)
    assert exploit([name, "--exact"]) == 0
    assert "NashConv" in capsys.readouterr().out


def test_cockroach_eval_plays_the_shipped_mini_agent(capsys):
    from training.cli.eval import main as eval_main

    assert eval_main(["mini", "random", "--preset", "mini", "--games", "20"]) == 0
    assert "mini" in capsys.readouterr().out


def test_exploitability_descent_gradient_is_the_exact_nash_conv_and_lowers_it():
    """``training.algorithms.descent``: its objective equals training.evaluation.exact's NashConv; a finite difference
    matches its gradient; steps lower it.
    """
    from training.algorithms.descent import ObservationDescent

    config = GameConfig(**MICRO_3)
    tree = game_tree(config)
    descent = ObservationDescent(tree)
    table = _random_table(tree, seed=0)
    value, gradient = descent.nash_conv_and_gradient(table)
    assert value == pytest.approx(evaluate(ObservationTablePolicy(tree, table), config, tree).nash_conv, abs=1e-9)
    _check_gradient(descent.nash_conv_and_gradient, table, value, gradient, tree)
    result = descent.run(table, steps=30)
    assert result.nash_conv < value and result.history[0][2] == pytest.approx(value)


def test_the_value_against_a_fixed_policy_and_its_gradient_are_exact():
    """``value_against_and_gradient``: the mean over seats of the exact value with the other seat fixed; a finite
    difference matches its gradient.
    """
    from training.algorithms.descent import ObservationDescent
    from training.evaluation.exact import _probabilities

    config = GameConfig(**MICRO_3)
    tree = game_tree(config)
    descent = ObservationDescent(tree)
    table = _random_table(tree, seed=1)
    heuristic = baselines.make("heuristic", config, seed=0)
    fixed = _probabilities(heuristic, tree.observations, tree.masks)
    value, gradient = descent.value_against_and_gradient(table, fixed)
    mine = ObservationTablePolicy(tree, table)
    seats = [
        evaluate([mine, heuristic], config, tree).policy_values[0],
        evaluate([heuristic, mine], config, tree).policy_values[1],
    ]
    assert value == pytest.approx(np.mean(seats), abs=1e-9)
    _check_gradient(lambda t: descent.value_against_and_gradient(t, fixed), table, value, gradient, tree)


def _random_table(tree, seed: int) -> np.ndarray:
    """A random policy table over the tree's observations (every legal action likely)."""
    table = np.random.default_rng(seed).random(tree.masks.shape) * tree.masks + 1e-3 * tree.masks
    return table / table.sum(1, keepdims=True)


def _check_gradient(objective, table: np.ndarray, value: float, gradient: np.ndarray, tree) -> None:
    """A finite difference (moving probability between two legal actions of one row) matches ``gradient``."""
    row = int(np.flatnonzero(tree.masks.sum(1) >= 2)[0])
    a, b = np.flatnonzero(tree.masks[row])[:2]
    moved = table.copy()
    moved[row, a] += 1e-6
    moved[row, b] -= 1e-6
    assert (objective(moved)[0] - value) / 1e-6 == pytest.approx(
        gradient[row, a] - gradient[row, b], rel=1e-3, abs=1e-6
    )


def test_sigterm_saves_the_solver_and_exits_143_and_the_run_resumes(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    command = [
        sys.executable,
        "-m",
        "training.cli.train",
        *_sets(tmp_path, MICRO_3, iterations=10**6, evaluate_every=0, checkpoint_every=10**6),
    ]
    process = subprocess.Popen(
        command, cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stderr=subprocess.PIPE, text=True
    )
    for line in process.stderr:  # the first row of cfr.csv is logged before the first iteration
        if line.startswith("cfr iteration 0"):
            break
    process.send_signal(signal.SIGTERM)
    _, rest = process.communicate(timeout=120)
    assert process.returncode == 143, rest
    assert "--resume" in rest
    meta = read_metadata(tmp_path / "cfr" / "checkpoint")
    done = meta["step"]["iteration"]
    assert f"SIGTERM at iteration {done};" in rest  # CFR counts iterations, not updates
    assert 0 < done < 10**6
    assert (
        train_cli(
            [*_sets(tmp_path, MICRO_3, iterations=done + 2, evaluate_every=0, checkpoint_every=10**6), "--resume"]
        )
        == 0
    )
    assert read_metadata(tmp_path / "cfr" / "checkpoint")["step"]["iteration"] == done + 2


@pytest.mark.parametrize(
    "seats, preset, seed", [(["human", "mini"], "mini", 5), (["mini-3p", "human", "random"], "mini-3p", 6)]
)
def test_the_shipped_mini_agents_play_in_the_browser_api(tmp_path, seats, preset, seed):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from play.server import create_app
    from play.store import GameStore
    from tests.test_play_api import check_payload, play_through_the_api

    with TestClient(create_app(GameStore(max_games=4, idle_seconds=600), save_dir=str(tmp_path))) as client:
        assert (
            preset in client.get("/api/rules", params={"preset": preset}).json()["agents"]
        )  # the shipped agent named like its rule set
        _, _, payloads, session = play_through_the_api(client, seats, preset, None, seed)
    assert session.over and payloads
    for agent, view in payloads:  # each seat sees only its own view
        check_payload(agent, view, session)


def test_interrupted_names_its_unit_and_step():
    import signal

    from training.core.runs import Interrupted

    stop = Interrupted(signal.SIGTERM, Path("run/checkpoint"), 7, "iteration")
    assert (stop.step, stop.unit, stop.exit_code) == (7, "iteration", 143)
    assert str(stop) == f"SIGTERM at iteration 7; the run is saved in {Path('run/checkpoint')}"
    assert Interrupted(signal.SIGINT, Path("c"), 3).unit == "update"
