"""The warm start by imitation (``training.algorithms.imitation``): what it collects and fits, how a run uses it."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import baselines  # noqa: E402
from cockroach_env import GameConfig  # noqa: E402
from cockroach_env.batched import BatchedGames  # noqa: E402
from training.algorithms import imitation  # noqa: E402
from training.core import checkpoint as ckpt  # noqa: E402
from training.core.config import ConfigError, load_config  # noqa: E402
from training.core.model import ActorCritic  # noqa: E402
from training.core.runs import announce_when_slow  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GAME = GameConfig(num_players=4)


def _settings(**changes) -> SimpleNamespace:
    values = dict(
        teacher="heuristic", decisions=3000, rounds=1, epochs=2, batch_size=256, learning_rate=1e-3, num_envs=32
    )
    values.update(changes)
    return SimpleNamespace(**values)


def _first_legal(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return mask.argmax(axis=1)


def test_collect_labels_each_decision_with_the_teachers_probabilities_and_the_movers_final_reward():
    teacher = baselines.make("heuristic", GAME, seed=0)
    demos = imitation.collect(GAME, teacher, 400, num_envs=8, seed=3, player=_first_legal)
    assert len(demos) >= 400
    assert np.allclose(demos.probabilities.sum(axis=1), 1.0, atol=1e-5)
    assert not (demos.probabilities * ~demos.mask).any()  # nothing off the mask
    again = teacher.action_probabilities_batch(demos.obs, demos.mask)
    np.testing.assert_allclose(demos.probabilities, again, atol=1e-6)

    # The same games driven directly: each finished game's decisions, in order, with each mover's reward.
    games = BatchedGames(GAME, batch_size=8, seed=3)
    step = games.reset()
    open_games: list[list[tuple[np.ndarray, int]]] = [[] for _ in range(8)]
    expected: list[tuple[np.ndarray, float]] = []
    while len(expected) < len(demos) + 200:
        actions = _first_legal(step.observation, step.action_mask.astype(bool))
        for g in range(8):
            open_games[g].append((step.observation[g].copy(), int(step.to_act[g])))
        step = games.step(actions)
        for g in np.flatnonzero(step.done):
            expected += [(obs, float(step.rewards[g, seat])) for obs, seat in open_games[g]]
            open_games[g] = []
    # ``collect`` keeps the finished games' decisions in the order they were made; compare as multisets of rows.
    key = {(obs.tobytes(), reward) for obs, reward in expected}
    for obs, reward in zip(demos.obs, demos.reward):
        assert (obs.tobytes(), float(reward)) in key


def test_fitting_brings_the_network_to_the_teachers_choices():
    teacher = baselines.make("heuristic", GAME, seed=0)
    demos = imitation.collect(GAME, teacher, 6000, num_envs=64, seed=1)
    model = ActorCritic(GAME, [64], "tanh", True, seed=0)
    before = imitation.fit(model, demos, 1, 512, 0.0 + 1e-12, seed=0, device="cpu")  # (no learning: the start)
    after = imitation.fit(model, demos, 6, 256, 3e-3, seed=0, device="cpu")
    assert after["policy_loss"] < before["policy_loss"] - 0.5
    assert after["agreement"] > 0.6 > before["agreement"]
    assert after["policy_loss"] >= after["teacher_entropy"] - 1e-3  # cross-entropy is bounded below by the entropy


def test_a_warm_started_network_plays_like_its_teacher_against_random():
    from training.evaluation.against_baselines import evaluate_model

    model = ActorCritic(GAME, [64, 64], "tanh", True, seed=0)
    untrained = evaluate_model(model, GAME, ["random"], 400, seed=5)[0]["loss_rate"]
    teacher = baselines.make("heuristic", GAME, seed=0)
    record = imitation.warm_start(model, GAME, teacher, _settings(decisions=30_000, epochs=3), 1, "cpu")
    warmed = evaluate_model(model, GAME, ["random"], 400, seed=5)[0]["loss_rate"]
    assert untrained > 0.15 and warmed < 0.08, (untrained, warmed, record)
    assert set(record) >= {"teacher", "decisions", "rounds", "epochs", "policy_loss", "agreement"}


def test_dagger_rounds_label_the_states_the_network_reaches():
    model = ActorCritic(GAME, [32], "tanh", False, seed=0)
    teacher = baselines.make("honest", GAME, seed=0)
    record = imitation.warm_start(model, GAME, teacher, _settings(teacher="honest", decisions=2000, rounds=2), 1, "cpu")
    assert record["rounds"] == 2 and record["decisions"] >= 2000


def test_a_stop_request_ends_the_warm_start_without_a_record():
    model = ActorCritic(GAME, [16], "tanh", False, seed=0)
    teacher = baselines.make("random", GAME, seed=0)
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 3

    assert imitation.warm_start(model, GAME, teacher, _settings(teacher="random"), 1, "cpu", None, stop) is None


@pytest.mark.parametrize(
    "override, fragment",
    [
        ("warm_start.teacher=nobody", "warm_start.teacher"),
        ("warm_start.decisions=0", "decisions"),
        ("warm_start.rounds=0", "rounds"),
        ("warm_start.learning_rate=0", "learning_rate"),
    ],
)
def test_a_bad_warm_start_is_refused_before_the_run_directory_is_made(tmp_path, override, fragment):
    from training.algorithms.ppo import train

    with pytest.raises(ConfigError) as error:
        config = load_config(ROOT / "configs" / "quick.yaml", [override, f"output_dir={tmp_path}"])
        train(config, progress_bar=False)
    assert fragment in str(error.value)
    assert not (tmp_path / "quick").exists()


def test_cfr_takes_no_warm_start():
    with pytest.raises(ConfigError, match="warm_start"):
        load_config(ROOT / "configs" / "research" / "cfr_mini.yaml", ["warm_start.teacher=heuristic"])


def test_a_teacher_without_action_probabilities_is_refused(tmp_path):
    from training.algorithms.ppo import train

    config = load_config(
        ROOT / "configs" / "quick.yaml", ["warm_start.teacher=tests.test_warm_start:Silent", f"output_dir={tmp_path}"]
    )
    with pytest.raises(ConfigError, match="action_probabilities_batch"):
        train(config, progress_bar=False)


class Silent(baselines.Agent):
    """An agent that plays the first legal action and does not say with what probabilities."""

    def act(self, observation):
        return int(np.flatnonzero(observation["action_mask"])[0])


TINY = [
    "ppo.num_envs=16",
    "ppo.num_steps=8",
    "ppo.num_minibatches=2",
    "ppo.update_epochs=1",
    "model.hidden_sizes=[16]",
    "schedule.checkpoint_every=2",
    "schedule.total_decisions=512",  # 4 updates
    "evaluation.every=0",
    "evaluation.final_games=0",
    "warm_start.decisions=300",
    "warm_start.num_envs=16",
    "warm_start.epochs=1",
]


def _config(tmp_path, name: str, *extra: str):
    return load_config(ROOT / "configs" / "quick.yaml", [*TINY, f"name={name}", f"output_dir={tmp_path}", *extra])


def test_a_run_records_its_warm_start_and_a_resume_continues_after_it_exactly(tmp_path, monkeypatch):
    from training.algorithms import ppo

    whole = ppo.train(_config(tmp_path, "whole"), progress_bar=False)
    record = ckpt.read_metadata(whole)["warm_start"]
    assert record["teacher"] == "heuristic" and record["decisions"] >= 300

    # The same run, stopped in its first rollout: the warm start is already saved in the update-0 checkpoint.
    real_rollout = ppo.collect_rollout

    def fail(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ppo, "collect_rollout", fail)
    with pytest.raises(KeyboardInterrupt):
        ppo.train(_config(tmp_path, "split"), progress_bar=False)
    saved = ckpt.read_metadata(tmp_path / "split" / "checkpoint")
    assert saved["step"]["update"] == 0 and saved["progress"]["warm_start"] == record

    # Resumed, it never imitates again, runs the four updates and ends where the uninterrupted run ended.
    monkeypatch.setattr(ppo, "collect_rollout", real_rollout)

    def no_second_warm_start(*args, **kwargs):
        raise AssertionError("the warm start ran again on resume")

    monkeypatch.setattr(imitation, "warm_start", no_second_warm_start)
    resumed = ppo.train(_config(tmp_path, "split"), resume=True, progress_bar=False)
    a, b = (ckpt.load_checkpoint(path, kind="agent") for path in (whole, resumed))
    assert a.tensors.keys() == b.tensors.keys()
    for key in a.tensors:
        assert torch.equal(a.tensors[key], b.tensors[key]), key
    rows = (tmp_path / "split" / "metrics.csv").read_text().splitlines()
    assert [int(r.split(",")[0]) for r in rows[1:]] == [1, 2, 3, 4]


def test_without_a_teacher_a_run_has_no_warm_start(tmp_path):
    from training.algorithms import ppo

    final = ppo.train(_config(tmp_path, "cold", "warm_start.teacher=null"), progress_bar=False)
    assert "warm_start" not in ckpt.read_metadata(final)
    assert not json.loads((tmp_path / "cold" / "checkpoint.json").read_text())["progress"].get("warm_start")


def test_slow_work_is_announced_and_fast_work_is_not():
    out = io.StringIO()
    with announce_when_slow("compiling", after=0.05, stream=out):
        time.sleep(0.4)
    assert out.getvalue().startswith("compiling ...") and "done in" in out.getvalue()
    quiet = io.StringIO()
    with announce_when_slow("compiling", after=5, stream=quiet):
        pass
    assert quiet.getvalue() == ""
