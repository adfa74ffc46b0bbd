"""Training: configs, checkpoints, the agent loader, and the real entry point on a tiny budget."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("yaml")

import baselines  # noqa: E402
from cockroach_env import GameConfig, env  # noqa: E402
from training.cli import checkpoint as checkpoint_cli  # noqa: E402
from training.core import checkpoint as ckpt  # noqa: E402
from training.core.checkpoint import files as checkpoint_files  # noqa: E402
from training.core.config import ConfigError, load_config  # noqa: E402
from training.core.model import ActorCritic, PolicyAgent  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "configs").rglob("*.yaml"))


# ---------------------------------------------------------------------------- configs


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_loads(path):
    config = load_config(path)
    assert config.game_config().num_players >= 2


def test_the_configs_index_lists_every_config_in_its_folder_and_no_two_names_differ_by_one_character():
    """``configs/README.md``: the per-table recipes and ``quick.yaml`` in ``configs/``, what the research record ran in
    ``configs/research/``, each file once in its folder's table. No two names are one character apart (``royal-2p``
    and ``royal_2p``), but for the table size (``classic-2p``, ``classic-3p``).
    """
    text = (ROOT / "configs" / "README.md").read_text(encoding="utf-8")
    top, research = text.split("(`configs/research/`)")
    listed = {
        "configs": set(re.findall(r"^\| `([\w.-]+\.yaml)` \|", top, re.M)),
        "research": set(re.findall(r"^\| `([\w.-]+\.yaml)` \|", research, re.M)),
    }
    assert listed["configs"] == {p.name for p in (ROOT / "configs").glob("*.yaml")}
    assert listed["research"] == {p.name for p in (ROOT / "configs" / "research").glob("*.yaml")}
    assert {p.parent for p in CONFIGS} == {ROOT / "configs", ROOT / "configs" / "research"}
    stems = sorted(p.stem for p in CONFIGS)
    for i, a in enumerate(stems):
        for b in stems[i + 1 :]:
            assert not _confusable(a, b), f"configs {a!r} and {b!r} differ by one character"


def _confusable(a: str, b: str) -> bool:
    """Whether one substitution, insertion or deletion turns ``a`` into ``b``, other than one digit for another."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    if len(a) == len(b):
        differences = [(x, y) for x, y in zip(a, b) if x != y]
        return len(differences) == 1 and not (differences[0][0].isdigit() and differences[0][1].isdigit())
    short, long = sorted((a, b), key=len)
    return any(long[:k] + long[k + 1 :] == short for k in range(len(long)))


def test_the_one_character_check_sees_a_substitution_an_insertion_and_a_deletion_but_not_a_table_size():
    assert _confusable("royal-2p", "royal_2p") and _confusable("ppo_2p", "ppo_2pp") and _confusable("psro_4p", "pro_4p")
    assert not _confusable("classic-2p", "classic-3p") and not _confusable("ppo_2p", "ppo_4p_robust")


def test_an_unknown_key_is_an_error_naming_the_key_and_the_allowed_keys(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text("ppo:\n  learning_rte: 0.001\n")
    with pytest.raises(ConfigError, match=r"unknown key 'ppo.learning_rte'.*allowed keys: \[.*'learning_rate'"):
        load_config(path)
    with pytest.raises(ConfigError, match=r"unknown key 'ppo.lr'.*allowed keys"):
        load_config(None, ["ppo.lr=1"])
    with pytest.raises(ConfigError, match=r"unknown key 'sed'"):
        load_config(None, ["sed=1"])


@pytest.mark.parametrize(
    "override, message",
    [
        ("ppo.num_envs=0", r"num_envs=0 is not allowed; expected an integer >= 1"),
        ("ppo.gamma=1.5", r"gamma=1.5 is not allowed; expected a number from 0 to 1"),
        ("ppo.learning_rate=fast", r"learning_rate='fast' is not allowed; expected a number"),
        ("model.activation=gelu", r"activation='gelu' is not allowed; expected one of \['tanh', 'relu'\]"),
        ("opponents.baselines={wizard: 1.0}", r"unknown baseline 'wizard'"),
        ("opponents.learner_seats=[4]", r"learner_seats=\[4\] is not allowed; expected .* from 1 to 3"),
        ("game.num_players=9", r"num_players=9 is not allowed"),
        ("game.colour=red", r"unknown game option\(s\) \['colour'\]"),
        ("evaluation.opponents=[grandmaster]", r"unknown baseline 'grandmaster'"),
        ("schedule", r"expected key=value"),
    ],
)
def test_a_bad_value_is_an_error_naming_the_value_and_what_is_allowed(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_overrides_use_dotted_keys_and_yaml_values():
    config = load_config(
        ROOT / "configs" / "quick.yaml",
        ["ppo.learning_rate=1e-3", "model.hidden_sizes=[32, 16]", "game.num_players=3", "opponents.learner_seats=[2]"],
    )
    assert config.ppo.learning_rate == 1e-3
    assert config.model.hidden_sizes == [32, 16]
    assert config.game_config() == GameConfig(num_players=3)


def test_help_lists_every_option_with_its_documentation():
    from training.cli.train import build_parser

    text = build_parser().format_help()
    for key in (
        "ppo.learning_rate",
        "opponents.snapshot_every",
        "schedule.total_decisions",
        "evaluation.opponents",
        "game.loss_count",
    ):
        assert key in text
    assert "Adam learning rate" in text


def test_importing_training_does_not_import_torch():
    code = "import sys, training, training.evaluation.arena; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


# ---------------------------------------------------------------------------- checkpoints

GAME = GameConfig(num_players=4)
SPEC = {"hidden_sizes": [16], "activation": "tanh"}


def _model(seed: int = 0) -> ActorCritic:
    torch.manual_seed(seed)
    return ActorCritic(GAME, SPEC["hidden_sizes"], SPEC["activation"])


def _save(path, model, **extra) -> Path:
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    return ckpt.save_checkpoint(
        path, tensors, {"kind": "agent", "name": "test", "game_config": GAME.to_dict(), "model": SPEC, **extra}
    )


def _same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_checkpoint_round_trip_keeps_weights_optimizer_and_rng_state(tmp_path):
    model = _model()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    obs, mask = torch.rand(8, model.observation_size), torch.ones(8, model.num_actions, dtype=torch.bool)
    logits, value = model(obs, mask)
    (logits.logsumexp(-1).sum() + value.sum()).backward()
    optimizer.step()
    rng = np.random.default_rng(5)
    rng.random(3)
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    opt_tensors, opt_rest = ckpt.optimizer_state(optimizer)
    meta = {
        "kind": "run",
        "game_config": GAME.to_dict(),
        "model": SPEC,
        "optimizer": opt_rest,
        "rng": ckpt.numpy_rng_state(rng),
        "step": {"update": 3},
    }
    ckpt.save_checkpoint(tmp_path / "run", {**tensors, **opt_tensors}, meta)

    loaded = ckpt.load_checkpoint(tmp_path / "run.json", kind="run")
    assert loaded.metadata["step"] == {"update": 3}
    assert loaded.metadata["layout_version"] >= 1 and loaded.metadata["num_actions"] == model.num_actions
    restored = ckpt.build_model(loaded)
    assert _same_weights(model, restored)
    optimizer2 = torch.optim.Adam(restored.parameters(), lr=1e-3)
    ckpt.restore_optimizer(optimizer2, loaded)
    state, state2 = optimizer.state_dict()["state"], optimizer2.state_dict()["state"]
    assert sorted(state) == sorted(state2)
    for index, entries in state.items():
        assert all(torch.equal(value, state2[index][key]) for key, value in entries.items())
    assert ckpt.restore_numpy_rng(json.loads(json.dumps(loaded.metadata["rng"]))).random() == rng.random()


def test_a_failure_in_the_middle_of_a_save_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    old, new = _model(0), _model(1)
    _save(tmp_path / "agent", old)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    real_write = checkpoint_files._write_temporary

    def failing_write(final, data):
        if final.suffix == ".json":  # the tensor file is written, the metadata is being written
            raise OSError(28, "No space left on device")
        return real_write(final, data)

    monkeypatch.setattr(checkpoint_files, "_write_temporary", failing_write)
    with pytest.raises(OSError, match="No space left"):
        _save(tmp_path / "agent", new)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no temporary files left either
    assert _same_weights(ckpt.build_model(ckpt.load_checkpoint(tmp_path / "agent")), old)


def test_a_truncated_tensor_file_is_a_clear_error(tmp_path):
    _save(tmp_path / "agent", _model())
    tensors = ckpt.checkpoint_files(tmp_path / "agent")[1]
    tensors.write_bytes(tensors.read_bytes()[:-100])
    with pytest.raises(ckpt.CheckpointError, match=r"agent\.\d+\.safetensors: .*truncated, corrupted"):
        ckpt.load_agent(tmp_path / "agent")


def test_a_corrupted_tensor_file_is_a_clear_error(tmp_path):
    _save(tmp_path / "agent", _model())
    tensors = ckpt.checkpoint_files(tmp_path / "agent")[1]
    data = bytearray(tensors.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tensors.write_bytes(bytes(data))
    with pytest.raises(ckpt.CheckpointError, match=r"agent\.\d+\.safetensors: .*truncated, corrupted"):
        ckpt.load_agent(tmp_path / "agent")


def test_truncated_metadata_is_a_clear_error(tmp_path):
    _save(tmp_path / "agent", _model())
    meta = tmp_path / "agent.json"
    meta.write_text(meta.read_text()[:50])
    with pytest.raises(ckpt.CheckpointError, match=r"agent.json: the metadata is not valid JSON .*truncated"):
        ckpt.load_agent(tmp_path / "agent.json")


def test_a_missing_checkpoint_names_the_path_and_the_shipped_names(tmp_path):
    with pytest.raises(ckpt.CheckpointError, match=r"nowhere: no checkpoint at .*shipped checkpoints"):
        ckpt.load_agent(tmp_path / "nowhere")


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda m: m.update(layout_version=m["layout_version"] + 1),
            r"observation/action layout version \d+ does not match this code's LAYOUT_VERSION",
        ),
        (lambda m: m.update(num_actions=m["num_actions"] + 1), r"observation/action sizes .* do not match"),
        (lambda m: m.update(format="something-else"), r"not a checkpoint of this project"),
        (
            lambda m: m["game_config"].update(num_players=7),
            r"the recorded game config is not valid here: num_players=7",
        ),
    ],
)
def test_a_mismatched_checkpoint_is_a_clear_error(tmp_path, edit, message):
    _save(tmp_path / "agent", _model())
    meta_path = tmp_path / "agent.json"
    meta = json.loads(meta_path.read_text())
    edit(meta)
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ckpt.CheckpointError, match=r"agent.json: " + message):
        ckpt.load_agent(tmp_path / "agent")


def test_a_checkpoint_for_other_rules_is_refused(tmp_path):
    _save(tmp_path / "agent", _model())
    with pytest.raises(
        ckpt.CheckpointError, match=r"trained for 4-player classic, but the game here is 4-player royal"
    ):
        ckpt.load_agent(tmp_path / "agent", config=GameConfig(num_players=4, edition="royal"))
    with pytest.raises(
        ckpt.CheckpointError,
        match=r"trained for 4-player classic, but the game here is 4-player classic \{'rainbow_loses': True\}",
    ):
        ckpt.load_agent(tmp_path / "agent", config=GameConfig(num_players=4, rainbow_loses=True))
    with pytest.raises(ckpt.CheckpointError, match=r"cannot resume training"):
        ckpt.load_checkpoint(tmp_path / "agent", kind="run")


def test_loading_and_resuming_never_unpickle(tmp_path, monkeypatch):
    """A checkpoint is data: loading an agent or a run checkpoint, and resuming a run, unpickle nothing (no
    ``pickle.load``/``loads``/``Unpickler``, no ``torch.load``, no ``np.load`` that allows pickles).
    """
    import pickle

    _save(tmp_path / "agent", _model())
    assert _train(tmp_path, "run", 2) == 0
    unpickled = []

    def forbidden(name: str):
        def refuse(*args, **kwargs):
            unpickled.append(name)
            raise AssertionError(f"{name} must not be used")

        return refuse

    numpy_load = np.load

    def load_without_pickles(*args, allow_pickle=False, **kwargs):
        if allow_pickle:
            forbidden("np.load(allow_pickle=True)")()
        return numpy_load(*args, allow_pickle=False, **kwargs)

    for module, name in ((torch, "load"), (pickle, "load"), (pickle, "loads"), (pickle, "Unpickler")):
        monkeypatch.setattr(module, name, forbidden(f"{module.__name__}.{name}"))
    monkeypatch.setattr(np, "load", load_without_pickles)
    ckpt.load_agent(tmp_path / "agent")
    ckpt.load_checkpoint(tmp_path / "run" / "checkpoint", kind="run")
    ckpt.load_agent(tmp_path / "run" / "final")
    assert _train(tmp_path, "run", 4, "--resume") == 0
    assert ckpt.read_metadata(tmp_path / "run" / "checkpoint")["step"]["update"] == 4 and not unpickled


def test_a_loaded_checkpoint_is_a_protocol_agent_that_plays_legal_moves_in_the_aec_env(tmp_path):
    _save(tmp_path / "agent", _model())
    agent = ckpt.load_agent(tmp_path / "agent", seed=3)
    assert isinstance(agent, PolicyAgent) and agent.supports_batch and agent.name == "test"
    game = env(num_players=4)
    for seed in range(3):
        game.reset(seed=seed)
        for _name in game.agent_iter():
            observation, _, terminated, truncated, _ = game.last()
            if terminated or truncated:
                game.step(None)
                continue
            action = agent.act(observation)
            assert observation["action_mask"][action] == 1
            game.step(action)  # the env raises on an illegal action
    masks = np.zeros((5, agent.model.num_actions), np.int8)
    masks[np.arange(5), [0, 3, 7, 100, 218]] = 1
    actions = agent.act_batch(np.zeros((5, agent.model.observation_size), np.float32), masks)
    assert actions.dtype == np.int64 and actions.tolist() == [0, 3, 7, 100, 218]


def test_the_agent_is_reproducible_from_its_seed(tmp_path):
    _save(tmp_path / "agent", _model())
    obs = np.random.default_rng(0).random((64, ActorCritic(GAME, [4]).observation_size)).astype(np.float32)
    masks = np.ones((64, ActorCritic(GAME, [4]).num_actions), np.int8)
    a = ckpt.load_agent(tmp_path / "agent", seed=11).act_batch(obs, masks)
    b = ckpt.load_agent(tmp_path / "agent", seed=11).act_batch(obs, masks)
    c = ckpt.load_agent(tmp_path / "agent", seed=12).act_batch(obs, masks)
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()


@pytest.mark.parametrize("name", ckpt.shipped_checkpoints())
def test_shipped_checkpoints_load_by_name_and_play(name):
    meta = ckpt.read_metadata(name)
    if meta["kind"] == "mixture":  # made by cockroach-mixture from trained agents, each with its own recipe
        assert meta["command"].startswith("cockroach-mixture ") and len(meta["mixture"]["recipes"]) == len(
            meta["mixture"]["members"]
        )
        assert all(
            recipe["command"].startswith("cockroach-train --config configs/") for recipe in meta["mixture"]["recipes"]
        )
    else:
        assert meta["command"].startswith("cockroach-train --config configs/")
    agent = ckpt.load_agent(name, seed=0)
    config = GameConfig(**meta["game_config"])
    game = env(config=config)
    game.reset(seed=1)
    for _ in game.agent_iter():
        observation, _, terminated, truncated, _ = game.last()
        game.step(None if terminated or truncated else agent.act(observation))
    assert os.path.getsize(ckpt.checkpoint_files(meta["_path"])[1]) < 2_000_000


# ---------------------------------------------------------------------------- the real entry point

TINY = [
    "ppo.num_envs=16",
    "ppo.num_steps=8",
    "ppo.anneal_lr=false",
    "ppo.num_minibatches=2",
    "ppo.update_epochs=2",
    "model.hidden_sizes=[16]",
    "opponents.snapshot_every=1",
    "opponents.max_snapshots=2",
    "opponents.learner_seats=[1, 3]",
    "schedule.checkpoint_every=2",
    "evaluation.every=2",
    "evaluation.games=8",
    "evaluation.final_games=8",
    "warm_start.decisions=200",
    "warm_start.num_envs=16",
    "warm_start.epochs=1",
]


def _train(tmp_path, name: str, updates: int, *extra: str) -> int:
    from training.cli.train import main

    sets = [*TINY, f"name={name}", f"output_dir={tmp_path}", f"schedule.total_decisions={updates * 16 * 8}"]
    argv = [
        "--config",
        str(ROOT / "configs" / "quick.yaml"),
        "--no-progress",
        *[a for s in sets for a in ("--set", s)],
        *extra,
    ]
    return main(argv)


def _metrics(path: Path) -> list[list[str]]:
    rows = [line.split(",") for line in path.read_text().splitlines()]
    skip = {rows[0].index(c) for c in ("wall_seconds", "decisions_per_second") if c in rows[0]}
    return [[v for i, v in enumerate(r) if i not in skip] for r in rows]


@pytest.fixture
def updates_trained():
    """The PPO updates trained in this process, in order (the real update step, recorded as it runs): a resume that
    trained again from the start would list them all.
    """
    from training.algorithms import ppo

    trained: list[int] = []
    update = ppo._advantages_and_update

    def recorded(run, loop, number):
        trained.append(number)
        return update(run, loop, number)

    with pytest.MonkeyPatch.context() as patch:  # (its own: a test's monkeypatch.undo() leaves it in place)
        patch.setattr(ppo, "_advantages_and_update", recorded)
        yield trained


def test_train_checkpoint_resume_load_and_evaluate_on_a_tiny_budget(tmp_path, updates_trained):
    """The smoke test of ``cockroach-train``: an interrupted and resumed run equals an uninterrupted one."""
    assert _train(tmp_path, "whole", 4) == 0
    run = tmp_path / "whole"
    for name in ("checkpoint.json", "final.json", "metrics.csv", "eval.csv", "learning_curves.png"):
        assert (run / name).exists(), name
    for name in ("checkpoint", "final"):
        assert ckpt.checkpoint_files(run / name)[1].exists(), name
    assert _train(tmp_path, "whole", 4) == 2  # refuses to overwrite a run without --resume or --overwrite

    # The same run, stopped after two updates (a checkpoint) and resumed for the last two.
    assert _train(tmp_path, "split", 2) == 0
    assert ckpt.read_metadata(tmp_path / "split" / "checkpoint")["step"]["update"] == 2
    updates_trained.clear()
    assert _train(tmp_path, "split", 4, "--resume") == 0
    assert updates_trained == [2, 3]  # only the updates after the checkpoint
    whole = ckpt.load_checkpoint(run / "checkpoint", kind="run")
    split = ckpt.load_checkpoint(tmp_path / "split" / "checkpoint", kind="run")
    assert whole.metadata["step"]["decisions"] == split.metadata["step"]["decisions"] == 4 * 16 * 8
    for key, value in whole.tensors.items():
        assert torch.equal(value, split.tensors[key]), key
    assert _metrics(run / "metrics.csv") == _metrics(tmp_path / "split" / "metrics.csv")

    # The final agent loads as a protocol agent and plays in the arena.
    from training.evaluation.arena import play_match

    agent = ckpt.load_agent(run / "final", seed=0)
    result = play_match([agent, "random*3"], GameConfig(num_players=4), games=40, seed=0)
    assert result.report("whole").games == 40
    from training.cli.eval import main as evaluate

    assert evaluate([str(run / "final.safetensors"), "heuristic", "honest", "random", "--games", "8", "--quiet"]) == 0
    meta = ckpt.read_metadata(run / "final")
    assert meta["kind"] == "agent" and meta["command"].startswith("cockroach-train --config")
    assert meta["evaluation"]["final"] and {r["opponent"] for r in meta["evaluation"]["results"]} == {
        "random",
        "heuristic",
    }


def test_a_run_with_an_exploiter_and_a_magnet_trains_both_networks_and_resumes_exactly(tmp_path, updates_trained):
    """The exploiter (its weights and Adam state) is in the run checkpoint; a reset puts it in the pool and restarts it
    from the policy.
    """
    exploiter = [
        "--set",
        "opponents.exploiter=0.5",
        "--set",
        "opponents.exploiter_reset_every=3",
        "--set",
        "opponents.snapshot_every=0",
    ]
    exploiter += [
        "--set",
        "ppo.magnet_coef=0.5",
        "--set",
        "ppo.magnet_every=3",
    ]  # and a magnet, refreshed after the checkpoint
    assert _train(tmp_path, "whole", 4, *exploiter) == 0
    assert _train(tmp_path, "split", 2, *exploiter) == 0
    updates_trained.clear()
    assert _train(tmp_path, "split", 4, "--resume", *exploiter) == 0
    assert updates_trained == [2, 3]
    whole = ckpt.load_checkpoint(tmp_path / "whole" / "checkpoint", kind="run")
    split = ckpt.load_checkpoint(tmp_path / "split" / "checkpoint", kind="run")
    assert whole.tensors.keys() == split.tensors.keys()
    for key, value in whole.tensors.items():
        assert torch.equal(value, split.tensors[key]), key
    assert _metrics(tmp_path / "whole" / "metrics.csv") == _metrics(tmp_path / "split" / "metrics.csv")

    assert any(k.startswith("exploiter.optimizer.") for k in whole.tensors)
    policy, exploit = whole.group("model"), whole.group("exploiter.model")
    assert policy.keys() == exploit.keys() and any(
        not torch.equal(policy[k], exploit[k]) for k in policy
    )  # trained apart since the reset
    assert [entry["source"] for entry in whole.metadata["pool"]] == [
        "policy",
        "exploiter",
    ]  # the initial policy, the exploiter reset at update 3
    exploiter_pool_weights = whole.group(f"pool.{whole.metadata['pool'][1]['id']}")
    assert any(not torch.equal(exploiter_pool_weights[k], exploit[k]) for k in exploit)
    rows = (tmp_path / "whole" / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    assert {"exploiter_loss_rate", "exploiter_entropy", "train_loss_rate_vs_exploiter", "magnet_kl"} <= set(header)
    magnet = whole.group("magnet")
    assert any(
        not torch.equal(magnet[k], policy[k]) for k in policy
    )  # refreshed at update 3, trained away from it at update 4
    assert any(row.split(",")[header.index("exploiter_entropy")] for row in rows[1:])

    agent = ckpt.load_checkpoint(ckpt.export_agent(tmp_path / "whole" / "checkpoint", tmp_path / "agent"))
    assert agent.tensors.keys() == {f"model.{k}" for k in policy} and "exploiter.optimizer" not in agent.metadata


def test_shared_reward_gives_the_policys_seats_their_mean_at_tables_with_another_agent():
    from training.core.opponents import EXPLOITER_SEAT, POLICY_SEAT
    from training.core.rollout import shared_rewards

    P, X = POLICY_SEAT, EXPLOITER_SEAT
    owner = np.array([[P, P, P, P], [P, X, P, P], [P, 2, 2, 2], [P, P, 3, 3], [P, X, P, P]])
    third = 1 / 3
    rewards = np.array(
        [
            [-1, third, third, third],  # self-play: every seat keeps its own reward
            [third, -1, third, third],  # the exploiter lost: the three policy seats gain 1 together, a third each
            [-1, third, third, third],  # one policy seat against a baseline: unchanged
            [-1, third, third, third],  # two policy seats against a snapshot: they share -2/3
            [third, third, -1, third],  # not finished now: unchanged
        ],
        np.float32,
    )
    out = shared_rewards(rewards, np.array([0, 1, 2, 3]), owner)
    assert (
        out[0] == pytest.approx(rewards[0])
        and out[2] == pytest.approx(rewards[2])
        and out[4] == pytest.approx(rewards[4])
    )
    assert out[1] == pytest.approx([third, -1, third, third])
    assert out[3] == pytest.approx([-third, -third, third, third])
    # a policy seat lost to the exploiter: the team shares -1 + 2/3 = -1/3, and still gets exactly what the exploiter
    # loses
    lost = shared_rewards(np.array([[-1, third, third, third]], np.float32), np.array([0]), owner[1:2])
    assert lost[0] == pytest.approx([-1 / 9, third, -1 / 9, -1 / 9]) and lost[0][owner[1] == P].sum() == pytest.approx(
        -third
    )
    assert rewards[1] == pytest.approx([third, -1, third, third])  # the input is not changed


def test_a_run_with_shared_rewards_trains_another_policy_and_resumes_exactly(tmp_path, updates_trained):
    # 64 steps per update (4 updates of 1024 decisions; _train counts updates of 128): a 4-player game takes about 87
    # decisions, so games end in every checkpoint segment of two updates, and their rewards differ
    long = ["--set", "ppo.num_steps=64", "--set", "opponents.exploiter=0.5"]
    team = [*long, "--set", "opponents.shared_reward=true"]
    assert _train(tmp_path, "own", 32, *long) == 0
    assert _train(tmp_path, "team", 32, *team) == 0
    assert _train(tmp_path, "split", 16, *team) == 0
    updates_trained.clear()
    assert _train(tmp_path, "split", 32, "--resume", *team) == 0
    assert updates_trained == [2, 3]
    own, whole, split = (
        ckpt.load_checkpoint(tmp_path / name / "checkpoint", kind="run") for name in ("own", "team", "split")
    )
    assert whole.metadata["training_config"]["opponents"]["shared_reward"] is True
    assert all(torch.equal(v, split.tensors[k]) for k, v in whole.tensors.items())
    assert any(
        not torch.equal(v, own.group("model")[k]) for k, v in whole.group("model").items()
    )  # the same games, other rewards
    with pytest.raises(ConfigError, match="shared_reward"):
        load_config(None, ["opponents.shared_reward=3"])


def test_checkpoint_opponents_seat_the_learner_and_each_other_seat_draws_from_that_checkpoint(tmp_path):
    """``opponents.checkpoints``: a table of a saved agent puts it in every other seat; a mixture's seats draw their
    members.
    """
    from training.core.opponents import (
        POLICY_SEAT,
        POPULATION_SEAT,
        FixedOpponents,
        Tables,
        checkpoint_kind,
        load_checkpoint_opponents,
    )

    agent = _save(tmp_path / "agent", _model(1))
    mixture = ckpt.save_mixture_checkpoint(
        tmp_path / "mix",
        [_model(2), _model(3)],
        [0.25, 0.75],
        ["a", "b"],
        {"name": "mix", "game_config": GAME.to_dict(), "model": SPEC},
    )
    config = load_config(
        None,
        [
            "opponents.self_play=0",
            "opponents.snapshots=0",
            "opponents.baselines={}",
            "opponents.learner_seats=[1]",
            f"opponents.checkpoints={{{agent}: 1, {mixture}: 3}}",
        ],
    )
    loaded = load_checkpoint_opponents(config, GAME)
    assert [g.names for g, _ in loaded.values()] == [["test"], ["a", "b"]] and loaded[str(mixture)][1][
        "sha256"
    ] == ckpt.read_metadata(mixture)["tensors"]["sha256"]
    tables = Tables(config, GAME, 4000, FixedOpponents(None, loaded))
    tables.draw(np.arange(4000), np.random.default_rng(0), {}, [])
    kinds = np.array(tables.kinds)[tables.kind]
    assert (
        set(kinds) == {checkpoint_kind(str(agent)), checkpoint_kind(str(mixture))}
        and abs((kinds == checkpoint_kind(str(mixture))).mean() - 0.75) < 0.03
    )
    assert ((tables.owner == POLICY_SEAT).sum(1) == 1).all()
    others = [POPULATION_SEAT - row[row != POLICY_SEAT] for row in tables.owner]
    assert all(
        set(o) == {0} for o, k in zip(others, kinds) if k == checkpoint_kind(str(agent))
    )  # the agent is model 0 ...
    drawn = np.concatenate([o for o, k in zip(others, kinds) if k == checkpoint_kind(str(mixture))])
    assert (
        set(drawn) == {1, 2} and abs((drawn == 2).mean() - 0.75) < 0.02
    )  # ... the mixture's members 1 and 2, by their weights

    # checkpoint_seats=1: a checkpoint takes one seat and the policy all the others (an exploiter's table)
    config = load_config(
        None,
        [
            *[
                f"opponents.{k}"
                for k in ("self_play=0", "snapshots=0", "baselines={heuristic: 1}", "learner_seats=[1]")
            ],
            f"opponents.checkpoints={{{agent}: 1}}",
            "opponents.checkpoint_seats=1",
        ],
    )
    tables = Tables(config, GAME, 4000, FixedOpponents(None, load_checkpoint_opponents(config, GAME)))
    tables.draw(np.arange(4000), np.random.default_rng(0), {"heuristic": 1}, [])
    against_checkpoint = np.array(tables.kinds)[tables.kind] == checkpoint_kind(str(agent))
    assert 0.4 < against_checkpoint.mean() < 0.6
    assert (
        (tables.owner == POLICY_SEAT).sum(1) == np.where(against_checkpoint, 3, 1)
    ).all()  # baselines keep learner_seats
    assert (tables.learner_seats == np.where(against_checkpoint, 3, 1)).all()
    with pytest.raises(
        ConfigError, match=r"checkpoint_seats=4 is not allowed; expected null or a seat count from 1 to 3"
    ):
        load_config(None, ["opponents.checkpoint_seats=4"])


def test_a_run_against_checkpoints_logs_them_resumes_exactly_and_refuses_changed_or_bad_ones(tmp_path, updates_trained):
    agent = _save(tmp_path / "agent", _model(1))
    league = [
        "--set",
        f"opponents.checkpoints={{{agent}: 2}}",
        "--set",
        "ppo.num_steps=64",
        "--set",
        "schedule.checkpoint_every=4",
    ]  # (long enough segments to finish games)

    def updates(n: int) -> list[str]:
        return ["--set", f"schedule.total_decisions={n * 16 * 64}"]

    assert _train(tmp_path, "whole", 0, *league, *updates(8)) == 0
    assert _train(tmp_path, "split", 0, *league, *updates(4)) == 0
    updates_trained.clear()
    assert _train(tmp_path, "split", 0, "--resume", *league, *updates(8)) == 0
    assert updates_trained == [4, 5, 6, 7]
    whole = ckpt.load_checkpoint(tmp_path / "whole" / "checkpoint", kind="run")
    split = ckpt.load_checkpoint(tmp_path / "split" / "checkpoint", kind="run")
    for key, value in whole.tensors.items():
        assert torch.equal(value, split.tensors[key]), key
    rows = _metrics(tmp_path / "whole" / "metrics.csv")
    assert rows == _metrics(tmp_path / "split" / "metrics.csv")
    column = rows[0].index(f"train_loss_rate_vs_checkpoint:{agent}")
    assert any(row[column] for row in rows[1:])  # games against the checkpoint were played and counted
    assert whole.metadata["progress"]["checkpoints"][str(agent)]["path"] == str(ckpt.resolve(agent))

    _save(tmp_path / "agent", _model(5))  # the opponent's weights changed under the run
    assert _train(tmp_path, "split", 0, "--resume", *league, *updates(12)) == 2
    assert ckpt.load_checkpoint(tmp_path / "split" / "checkpoint", kind="run").metadata["step"]["update"] == 8

    other_rules = tmp_path / "two"
    ckpt.save_checkpoint(
        other_rules,
        {f"model.{k}": v for k, v in ActorCritic(GameConfig(num_players=2), [16]).state_dict().items()},
        {"kind": "agent", "game_config": GameConfig(num_players=2).to_dict(), "model": SPEC},
    )
    for entry, name in ((tmp_path / "nowhere", "missing"), (other_rules, "rules")):
        assert _train(tmp_path, name, 2, "--set", f"opponents.checkpoints={{{entry}: 1}}") == 2
        assert not list((tmp_path / name).glob("*"))  # refused before anything was written
    with pytest.raises(
        ConfigError, match=r"opponents.checkpoints: .*agent.json=-1.0 is not allowed; expected a weight >= 0"
    ):
        load_config(None, [f"opponents.checkpoints={{{agent}: -1}}"])


def test_resume_refuses_a_changed_config(tmp_path):
    assert _train(tmp_path, "run", 2) == 0
    assert _train(tmp_path, "run", 4, "--resume", "--set", "ppo.learning_rate=0.1") == 2


def test_card_counting_inputs_are_derived_from_the_observation_and_round_trip(tmp_path):
    from training.core.model import CardCounting

    features = CardCounting(GAME)
    enc_obs = np.zeros((1, ActorCritic(GAME, [4]).observation_size), np.float32)
    from cockroach_env.encoding import encoding_for

    layout = encoding_for(GAME).observation
    layout.view(enc_obs, "own_hand")[0, 2] = 3  # three flies in hand
    layout.view(enc_obs, "collections")[0, 1, 2] = 2  # two flies collected by the next seat
    layout.view(enc_obs, "chain_claim")[0, 2] = 1  # "this is a fly"
    out = features(torch.from_numpy(enc_obs))[0]
    unseen = 64 - 5
    assert out[2].item() == pytest.approx((8 - 5) / unseen)  # chance that an unseen card is a fly
    assert out[8].item() == pytest.approx((8 - 5) / unseen)  # ... for the claim in play
    assert out[9].item() == pytest.approx(3 / 8)  # own flies
    assert out[11 + 1].item() == pytest.approx(2 / 4)  # flies collected by seat +1, over loss_count

    torch.manual_seed(0)
    model = ActorCritic(GAME, [8], "relu", card_counting=True)
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    ckpt.save_checkpoint(
        tmp_path / "cc",
        tensors,
        {
            "kind": "agent",
            "game_config": GAME.to_dict(),
            "model": {"hidden_sizes": [8], "activation": "relu", "card_counting": True},
        },
    )
    assert _same_weights(ckpt.build_model(ckpt.load_checkpoint(tmp_path / "cc")), model)


def test_the_edge_by_decision_benchmark_plays_every_hybrid_and_refuses_a_mixture_as_a_network(tmp_path, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_edge_by_decision", Path(__file__).resolve().parents[1] / "benchmarks" / "bench_edge_by_decision.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    for name, seed in (("target", 0), ("br", 1), ("base", 2)):
        _save(tmp_path / name, _model(seed))
    assert bench.main([str(tmp_path / "target"), str(tmp_path / "br"), str(tmp_path / "base"), "--games", "8"]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "best response's" in line]
    assert (
        len(lines) == 8 + 7 and "nothing" in lines[0] and "offer+respond+pass" in lines[7]
    )  # classic: three kinds, 2**3 hybrids
    assert [line.split()[2] for line in lines[8:]] == [
        "offer.card",
        "offer.target",
        "offer.claim",
        "respond.peek",
        "respond.call",
        "pass.target",
        "pass.claim",
    ]
    assert (
        "gain over the base of each kind alone: offer" in out
        and "gain over the base of each factor alone: offer.card" in out
    )
    assert (
        bench.main(
            [str(tmp_path / "target"), str(tmp_path / "br"), str(tmp_path / "base"), "--games", "8", "--no-factors"]
        )
        == 0
    )
    assert len([line for line in capsys.readouterr().out.splitlines() if "best response's" in line]) == 8
    assert bench.main([str(tmp_path / "target"), "classic-4p-mixture", str(tmp_path / "base"), "--games", "8"]) == 2
    assert "is a 'mixture' checkpoint; expected an agent or run checkpoint of one network" in capsys.readouterr().err
    assert bench.main([str(tmp_path / "target"), str(tmp_path / "br"), str(tmp_path / "base"), "--games", "0"]) == 2
    assert "--games 0 is not allowed" in capsys.readouterr().err


def test_a_portable_network_rebuilds_the_same_network_elsewhere():
    """``ActorCritic.portable``: rules, shape and weights as plain data and tensors (what a Ray task receives);
    ``from_portable`` gives the same network.
    """
    import pickle

    royal = GameConfig(num_players=3, edition="royal")
    for game, spec in ((GAME, ([8, 6], "relu", True)), (royal, ([5], "tanh", False))):
        model = ActorCritic(game, *spec, seed=3)
        data = pickle.loads(pickle.dumps(model.portable()))
        assert (
            data["spec"] == {"hidden_sizes": list(spec[0]), "activation": spec[1], "card_counting": spec[2]}
            and data["game_config"] == game.to_dict()
        )
        again = ActorCritic.from_portable(data)
        assert _same_weights(again, model) and again.game_config == game
        obs = torch.rand(4, model.observation_size)
        mask = torch.ones(4, model.num_actions, dtype=torch.bool)
        assert torch.equal(model(obs, mask)[0], again(obs, mask)[0])


def test_exploitability_trains_a_best_response_against_a_frozen_checkpoint(tmp_path, capsys):
    from training.cli.exploit import main

    _save(tmp_path / "target", _model())
    report = tmp_path / "report.json"
    sets = ["ppo.num_envs=16", "ppo.num_steps=8", "evaluation.every=0", "schedule.checkpoint_every=2"]
    argv = [
        str(tmp_path / "target"),
        "--decisions",
        "256",
        "--games",
        "20",
        "--output-dir",
        str(tmp_path),
        "--json",
        str(report),
        "--no-progress",
    ]
    assert main(argv + [a for s in sets for a in ("--set", s)]) == 0
    result = json.loads(report.read_text())
    assert result["parity"] == 0.25 and result["games"] == 20
    assert result["exploitability"] == pytest.approx(0.25 - result["best_response_loss_rate"])
    assert set(result["behaviour"]) == {"best_response", "checkpoint"}
    for side in result["behaviour"].values():
        assert 0 <= side["call_accuracy"] <= 1 and 0 <= side["false_offer_rate"] <= 1
    assert 0 <= result["behaviour"]["checkpoint"]["call_accuracy_on_best_response"] <= 1
    out = capsys.readouterr().out
    assert "exploitability" in out and "calls judged right: the best response" in out

    assert "frozen" not in baselines.names()  # the checkpoint was a baseline only while the command ran
    assert main(argv + [a for s in sets for a in ("--set", s)]) == 2  # the same best-response run again: refused
    assert "--overwrite" in capsys.readouterr().err


def test_a_stopped_best_response_continues_with_resume_to_the_uninterrupted_result(
    tmp_path, capsys, monkeypatch, updates_trained
):
    """Ctrl-C saves the best response's run; the same command with ``--resume`` continues it (re-running without is
    refused,
    naming ``--resume``), and the report and weights equal those of a run that was never stopped.
    """
    import signal

    import training.algorithms.ppo
    from training.cli.exploit import main

    _save(tmp_path / "target", _model())
    sets = ["ppo.num_envs=16", "ppo.num_steps=8", "evaluation.every=0", "schedule.checkpoint_every=2"]

    def argv(out):
        return [
            str(tmp_path / "target"),
            *("--decisions", "512", "--games", "20", "--output-dir", str(tmp_path / out)),
            *("--json", str(tmp_path / f"{out}.json"), "--no-progress"),
            *[a for s in sets for a in ("--set", s)],
        ]

    assert main(argv("whole")) == 0
    rollout, calls = training.algorithms.ppo.collect_rollout, []

    def ctrl_c_in_the_second_rollout(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            signal.raise_signal(signal.SIGINT)
        return rollout(*args, **kwargs)

    monkeypatch.setattr(training.algorithms.ppo, "collect_rollout", ctrl_c_in_the_second_rollout)
    assert main(argv("split")) == 130
    monkeypatch.undo()
    assert "--resume" in capsys.readouterr().err
    assert main(argv("split")) == 2
    assert "--resume" in capsys.readouterr().err
    updates_trained.clear()
    assert main([*argv("split"), "--resume"]) == 0
    assert updates_trained == [2, 3]  # (512 decisions: 4 updates; stopped after 2, at a checkpoint)
    whole, split = (json.loads((tmp_path / f"{out}.json").read_text()) for out in ("whole", "split"))
    assert (
        split["best_response_loss_rate"] == whole["best_response_loss_rate"] and split["games"] == whole["games"] == 20
    )
    a, b = (ckpt.load_checkpoint(Path(r["best_response_checkpoint"])) for r in (whole, split))
    assert all(torch.equal(v, b.tensors[k]) for k, v in a.tensors.items())
    assert (
        main([*argv("split"), "--resume", "--json", str(tmp_path / "other.json"), "--set", "ppo.num_envs=32"]) == 2
    )  # another config: named
    assert "ppo.num_envs" in capsys.readouterr().err
    # stopped before its first checkpoint: its logs are not replaced without --overwrite (or --resume, which starts it
    # again)
    early = tmp_path / "early" / "exploit_target"
    early.mkdir(parents=True)
    (early / "metrics.csv").write_text("update\n")
    assert main(argv("early")) == 2
    assert "stopped before its first checkpoint (metrics.csv); pass --overwrite" in capsys.readouterr().err
    assert (early / "metrics.csv").read_text() == "update\n" and not (tmp_path / "early.json").exists()
    assert main([*argv("early"), "--overwrite"]) == 0


def test_an_evaluation_reports_the_opponents_behaviour_beside_the_policys():
    """``opponent_*``: the false offers, false passes and call accuracy of the opponents' seats together, as the arena
    counts them.
    """
    from training.evaluation.against_baselines import evaluate_agent
    from training.evaluation.arena import play_match

    model = _model()
    make = lambda i: PolicyAgent(model, GAME, seed=11 + i, name="policy")  # noqa: E731
    results = evaluate_agent(make, GAME, ["heuristic", "bluffer"], 40, seed=3)
    for i, (name, result) in enumerate(zip(["heuristic", "bluffer"], results)):
        match = play_match([make(i), f"{name}*{GAME.num_players - 1}"], GAME, games=40, seed=3 + 7919 * i + 1)
        theirs, mine = match.report(name).behaviour, match.report("policy").behaviour
        for key in ("false_offer_rate", "false_pass_rate", "call_accuracy"):
            assert result[f"opponent_{key}"] == theirs[key] and result[key] == mine[key]
        assert (
            result["opponent_call_accuracy_on_policy"] == theirs["call_accuracy_on_others"]
        )  # on the policy's claims only
    assert (
        results[1]["opponent_false_offer_rate"] > results[0]["opponent_false_offer_rate"]
    )  # the bluffer lies more than the heuristic


def test_best_response_runs_of_two_runs_final_checkpoints_get_different_names():
    from training.evaluation.exploitability import checkpoint_label as _label

    assert _label("runs/ppo_4p/final") == "ppo_4p-final" and _label("runs/other/final.json") == "other-final"
    assert _label("classic-4p") == "classic-4p" and _label("agents/mine.safetensors") == "mine"


def test_a_run_checkpoint_exports_to_a_small_agent_checkpoint(tmp_path):
    model = _model()
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    tensors["optimizer.0.exp_avg"] = torch.zeros(3)
    ckpt.save_checkpoint(
        tmp_path / "run",
        tensors,
        {
            "kind": "run",
            "game_config": GAME.to_dict(),
            "model": SPEC,
            "optimizer": {},
            "command": "cockroach-train ...",
        },
    )
    path = ckpt.export_agent(tmp_path / "run", tmp_path / "small", extra={"note": "exported"})
    loaded = ckpt.load_checkpoint(path)
    assert (
        loaded.metadata["kind"] == "agent"
        and loaded.metadata["note"] == "exported"
        and "optimizer" not in loaded.metadata
    )
    assert set(loaded.tensors) == {k for k in tensors if k.startswith("model.")}
    assert _same_weights(ckpt.build_model(loaded), model)
    assert Path(loaded.metadata["exported_from"]).name == "run.json"
    renamed = ckpt.load_checkpoint(
        ckpt.export_agent(
            tmp_path / "small", tmp_path / "named", extra={"exported_from": "runs/x/final.json", "kind": "run"}
        )
    )
    assert (
        renamed.metadata["exported_from"] == "runs/x/final.json" and renamed.metadata["kind"] == "agent"
    )  # extra replaces a key, but not the kind


def test_an_export_refuses_an_existing_destination_unless_overwrite(tmp_path, capsys):
    first, second = _model(1), _model(2)
    _save(tmp_path / "a", first)
    _save(tmp_path / "b", second)
    ckpt.export_agent(tmp_path / "a", tmp_path / "out")
    before = (tmp_path / "out.json").read_bytes()
    with pytest.raises(ckpt.CheckpointError, match="already exists.*--overwrite"):
        ckpt.export_agent(tmp_path / "b", tmp_path / "out")
    assert (tmp_path / "out.json").read_bytes() == before  # nothing changed
    with pytest.raises(SystemExit, match="already exists"):
        checkpoint_cli.main([str(tmp_path / "b"), "--export", str(tmp_path / "out")])
    with pytest.raises(ckpt.CheckpointError, match="is its source"):
        ckpt.export_agent(tmp_path / "a", tmp_path / "a", overwrite=True)
    checkpoint_cli.main([str(tmp_path / "b"), "--export", str(tmp_path / "out"), "--overwrite"])
    assert _same_weights(ckpt.build_model(ckpt.load_checkpoint(tmp_path / "out")), second)
    with pytest.raises(SystemExit):
        checkpoint_cli.main([str(tmp_path / "b"), "--overwrite"])  # --overwrite without --export
    assert "go with --export" in capsys.readouterr().err


def test_a_run_exports_the_average_of_its_policy_and_its_late_policy_snapshots(tmp_path, capsys):
    """``--average-from U``: the policy and every policy snapshot of the pool from update U on, averaged; exploiter
    snapshots are not the policy.
    """
    sets = [
        "opponents.exploiter=0.5",
        "opponents.exploiter_reset_every=3",
        "opponents.snapshot_every=2",
        "opponents.max_snapshots=8",
    ]
    assert _train(tmp_path, "avg", 6, *[a for s in sets for a in ("--set", s)]) == 0
    run = ckpt.load_checkpoint(tmp_path / "avg" / "checkpoint", kind="run")
    pool = run.metadata["pool"]
    assert {e["source"] for e in pool} == {"policy", "exploiter"}
    late = [e for e in pool if e["source"] == "policy" and e["update"] >= 3]
    assert 0 < len(late) < len([e for e in pool if e["source"] == "policy"])  # some snapshots are left out
    path = ckpt.export_agent(tmp_path / "avg" / "checkpoint", tmp_path / "swa", average_from=3)
    agent = ckpt.load_checkpoint(path)
    policy = run.group("model")
    for key, value in agent.group("model").items():
        expected = torch.stack(
            [policy[key].double(), *(run.group(f"pool.{e['id']}")[key].double() for e in late)]
        ).mean(0)
        assert torch.allclose(value.double(), expected, atol=1e-6), key
    assert agent.metadata["averaged"] == {
        "from_update": 3,
        "policy_update": 6,
        "snapshots": [{"id": e["id"], "update": e["update"]} for e in sorted(late, key=lambda e: e["update"])],
        "networks": 1 + len(late),
    }
    assert ckpt.load_agent(path) is not None

    for source, value, message in [
        (
            tmp_path / "avg" / "checkpoint",
            7,
            "no policy snapshot in the pool was taken at update 7 or later .*run is at update 6",
        ),
        (tmp_path / "avg" / "checkpoint", -1, "average_from=-1 is not allowed; expected an update number"),
        (tmp_path / "avg" / "final", 0, "needs a run checkpoint .*of kind 'agent'"),
    ]:
        with pytest.raises(ckpt.CheckpointError, match=message):
            ckpt.export_agent(source, tmp_path / "refused", average_from=value)
    assert not list(tmp_path.glob("refused*"))
    checkpoint_cli.main(
        [str(tmp_path / "avg" / "checkpoint"), "--export", str(tmp_path / "cli"), "--average-from", "3"]
    )
    assert ckpt.read_metadata(tmp_path / "cli")["averaged"] == agent.metadata["averaged"]
    with pytest.raises(SystemExit):
        checkpoint_cli.main([str(tmp_path / "avg" / "checkpoint"), "--average-from", "3"])  # without --export
    assert "go with --export" in capsys.readouterr().err


def test_one_member_of_a_mixture_exports_as_an_agent_with_its_recipe(tmp_path):
    models = [_model(1), _model(2)]
    recipes = [
        {
            "name": "left",
            "kind": "agent",
            "command": "cockroach-train --set name=left",
            "commands": ["cockroach-train --set name=left"],
            "training_config": {"seed": 3},
        }
    ]
    meta = {"name": "mix", "game_config": GAME.to_dict(), "model": SPEC, "mixture": {"recipes": recipes}}
    ckpt.save_mixture_checkpoint(tmp_path / "mix", models, [1.0, 3.0], ["left", "right"], meta)
    with pytest.raises(ckpt.CheckpointError, match="mixture of 2 members.*0: left \\(0.250\\), 1: right \\(0.750\\)"):
        ckpt.export_agent(tmp_path / "mix", tmp_path / "none")
    with pytest.raises(ckpt.CheckpointError, match="no member 'middle'"):
        ckpt.export_agent(tmp_path / "mix", tmp_path / "none", member="middle")
    with pytest.raises(ckpt.CheckpointError, match="no member '2'"):
        ckpt.export_agent(tmp_path / "mix", tmp_path / "none", member="2")
    with pytest.raises(ckpt.CheckpointError, match="needs a mixture"):
        ckpt.export_agent(_save(tmp_path / "single", models[0]), tmp_path / "none", member="left")
    assert not list(tmp_path.glob("none*"))

    left = ckpt.load_checkpoint(ckpt.export_agent(tmp_path / "mix", tmp_path / "left", member="left"))
    assert (
        left.metadata["kind"] == "agent"
        and left.metadata["name"] == "left"
        and _same_weights(ckpt.build_model(left), models[0])
    )
    assert left.metadata["commands"] == recipes[0]["commands"] and left.metadata["training_config"] == {"seed": 3}
    assert left.metadata["exported_member"] == {"name": "left", "index": 0, "weight": 0.25, "mixture": "mix"}
    checkpoint_cli.main(
        [str(tmp_path / "mix"), "--export", str(tmp_path / "right"), "--member", "1"]
    )  # by index; no recipe recorded for it
    right = ckpt.load_checkpoint(tmp_path / "right")
    assert (
        right.metadata["name"] == "right"
        and "commands" not in right.metadata
        and _same_weights(ckpt.build_model(right), models[1])
    )
    agent = ckpt.load_agent(tmp_path / "right")  # a playable agent
    assert agent is not None


def test_printing_metadata_into_a_reader_that_stops_early_is_quiet():
    """``python -m training.checkpoint classic-4p --json | head -1``: the closed pipe ends the command without a
    traceback.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "training.checkpoint", "classic-4p", "--json"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.readline().strip() == b"{"
    proc.stdout.close()  # as ``head`` does after its line
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr


def test_a_run_can_start_from_the_weights_of_another(tmp_path):
    assert _train(tmp_path, "base", 1) == 0
    assert _train(tmp_path, "tuned", 1, "--init-from", str(tmp_path / "base" / "final")) == 0
    assert _train(tmp_path, "tuned_again", 1, "--init-from", str(tmp_path / "tuned" / "final")) == 0
    record = ckpt.read_metadata(tmp_path / "tuned_again" / "final")["base_run"]  # the whole history of the weights
    assert (
        record["path"].endswith("final")
        and "tuned" in record["commands"][0]
        and "base" in record["base_run"]["commands"][0]
    )
    assert record["step"]["update"] == 1 and "base_run" not in record["base_run"]
    assert (
        _train(
            tmp_path, "wider", 1, "--init-from", str(tmp_path / "base" / "final"), "--set", "model.hidden_sizes=[32]"
        )
        == 2
    )


def test_games_carry_on_across_updates_between_checkpoints(tmp_path):
    """A game is longer than one rollout here (8 decisions), so games end only if they continue from update to
    update.
    """
    from training.cli.train import main

    sets = [
        *TINY,
        "name=long",
        f"output_dir={tmp_path}",
        "schedule.checkpoint_every=12",
        f"schedule.total_decisions={12 * 16 * 8}",
        "evaluation.every=0",
        "evaluation.final_games=0",
    ]
    assert (
        main(
            [
                "--config",
                str(ROOT / "configs" / "quick.yaml"),
                "--no-progress",
                *[a for s in sets for a in ("--set", s)],
            ]
        )
        == 0
    )
    games = ckpt.read_metadata(tmp_path / "long" / "checkpoint")["step"]["games"]
    assert games >= 5  # 16 tables x 96 decisions; no game ends within a single 8-decision rollout


def _weights(model) -> tuple:
    return tuple(round(float(p.detach().double().sum()), 12) for p in model.parameters())


@pytest.mark.parametrize("overlap", [False, True])
def test_the_exploiter_learns_at_its_own_rate_annealed_like_the_policys(tmp_path, overlap):
    """``opponents.exploiter_learning_rate``: the exploiter's Adam rate, annealed with ``ppo.anneal_lr`` as the
    policy's is; the policy keeps ``ppo.learning_rate``.
    """
    sets = [
        "--set",
        "opponents.exploiter=0.5",
        "--set",
        "opponents.exploiter_learning_rate=0.004",
        "--set",
        "ppo.learning_rate=0.001",
        "--set",
        f"ppo.overlap={str(overlap).lower()}",
    ]
    assert _train(tmp_path, "fixed", 2, *sets) == 0
    assert _train(tmp_path, "annealed", 2, *sets, "--set", "ppo.anneal_lr=true") == 0
    fixed = ckpt.read_metadata(tmp_path / "fixed" / "checkpoint")
    assert fixed["exploiter.optimizer"]["param_groups"][0]["lr"] == pytest.approx(0.004)
    assert fixed["optimizer"]["param_groups"][0]["lr"] == pytest.approx(0.001)
    annealed = ckpt.read_metadata(tmp_path / "annealed" / "checkpoint")  # the second of two updates: half the rate
    assert annealed["exploiter.optimizer"]["param_groups"][0]["lr"] == pytest.approx(0.002)
    assert annealed["optimizer"]["param_groups"][0]["lr"] == pytest.approx(0.0005)
    assert _metrics(tmp_path / "fixed" / "metrics.csv") != _metrics(tmp_path / "annealed" / "metrics.csv")


def test_overlap_rollouts_play_the_weights_from_before_the_update_they_overlap(tmp_path, monkeypatch):
    """``ppo.overlap``: within a checkpoint segment, rollout k+1 is collected during update k (in the update process)
    with the weights update k started from; a segment's first rollout waits for the update before it.
    """
    import training.algorithms.ppo as ppo
    from training.core.learner import Learner
    from training.core.opponents import POLICY_SEAT
    from training.core.update_process import UpdateProcess

    seen, before_update, order = [], [], []
    rollout, submit, result = ppo.collect_rollout, UpdateProcess.submit, UpdateProcess.result

    def recording_rollout(args, step):
        seen.append(_weights(args.learners[POLICY_SEAT].model))
        order.append("rollout")
        return rollout(args, step)

    def recording_submit(self, jobs, shuffle_seed):
        before_update.append(_weights(learners[0].model))
        order.append("submit")
        return submit(self, jobs, shuffle_seed)

    def recording_result(self):
        order.append("result")
        return result(self)

    learners = []
    init = Learner.__init__

    def remember(self, *a, **k):
        init(self, *a, **k)
        learners.append(self)

    monkeypatch.setattr(ppo, "collect_rollout", recording_rollout)
    monkeypatch.setattr(UpdateProcess, "submit", recording_submit)
    monkeypatch.setattr(UpdateProcess, "result", recording_result)
    monkeypatch.setattr(Learner, "__init__", remember)
    assert _train(tmp_path, "overlap", 6, "--set", "ppo.overlap=true", "--set", "schedule.checkpoint_every=3") == 0
    assert len(seen) == len(before_update) == 6
    after = before_update[1:] + [None]
    for k in range(6):
        if k % 3 == 0:  # a segment's first rollout: the weights of the update before it (the initial ones at 0)
            assert seen[k] == before_update[k]
        else:  # collected during update k-1, with the weights it started from
            assert seen[k] == before_update[k - 1] and seen[k] != after[k - 1]
    # the rollouts inside a segment run between an update's submission and its result
    assert order == ["rollout", "submit", "rollout", "result", "submit", "rollout", "result", "submit", "result"] * 2


def test_an_overlapped_run_is_reproducible_and_resumes_exactly(tmp_path, updates_trained):
    """The rollouts and the update process draw from their own generators, so overlap changes nothing run to run (the
    Adam states come back for each checkpoint).
    """
    overlap = [
        "--set",
        "ppo.overlap=true",
        "--set",
        "schedule.checkpoint_every=3",
        "--set",
        "opponents.exploiter=0.5",
        "--set",
        "ppo.magnet_coef=0.5",
    ]
    assert _train(tmp_path, "whole", 6, *overlap) == 0
    assert _train(tmp_path, "again", 6, *overlap) == 0
    assert _train(tmp_path, "split", 3, *overlap) == 0
    updates_trained.clear()
    assert _train(tmp_path, "split", 6, "--resume", *overlap) == 0
    assert updates_trained == [3, 4, 5]
    assert _train(tmp_path, "serial", 6, *overlap[2:]) == 0
    runs = {
        name: ckpt.load_checkpoint(tmp_path / name / "checkpoint", kind="run")
        for name in ("whole", "again", "split", "serial")
    }
    for name in ("again", "split"):
        assert runs[name].tensors.keys() == runs["whole"].tensors.keys()
        for key, value in runs["whole"].tensors.items():
            assert torch.equal(value, runs[name].tensors[key]), (name, key)
        assert _metrics(tmp_path / "whole" / "metrics.csv") == _metrics(tmp_path / name / "metrics.csv")
    model = runs["whole"].group("model")
    assert any(
        not torch.equal(model[k], runs["serial"].group("model")[k]) for k in model
    )  # the overlapped rollouts did play older weights


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("signum", ["SIGTERM", "SIGINT"])
def test_a_run_stopped_by_a_signal_inside_a_segment_resumes_to_the_uninterrupted_run(
    tmp_path, capsys, monkeypatch, updates_trained, signum, overlap
):
    """A stop between two checkpoints keeps the checkpoint at the segment's start (the games in flight are in no
    checkpoint); ``--resume`` plays the segment again from there, so the weights, the metrics and the evaluations of
    every update (the one stopped at included) equal those of a run that never stopped.
    """
    import signal

    from training.algorithms import ppo

    stop = getattr(signal, signum)
    every = ["--set", "schedule.checkpoint_every=4", "--set", "evaluation.every=1"]
    every += ["--set", f"ppo.overlap={str(overlap).lower()}"]
    assert _train(tmp_path, "whole", 8, *every) == 0
    rollout, calls = ppo.collect_rollout, []

    def signal_in_the_seventh_rollout(*args, **kwargs):
        calls.append(1)
        if len(calls) == 7:
            signal.raise_signal(stop)
        return rollout(*args, **kwargs)

    monkeypatch.setattr(ppo, "collect_rollout", signal_in_the_seventh_rollout)
    capsys.readouterr()
    updates_trained.clear()
    assert _train(tmp_path, "split", 8, *every) == 128 + stop
    monkeypatch.undo()
    err = capsys.readouterr().err
    stopped_at = max(updates_trained) + 1  # (with overlap, the seventh rollout is collected during update 6)
    assert 4 < stopped_at < 8
    assert f"{signum} at update {stopped_at}" in err and "at update 4" in err, err
    split = tmp_path / "split"
    assert ckpt.read_metadata(split / "checkpoint")["step"]["update"] == 4  # the segment's start

    updates_trained.clear()
    assert _train(tmp_path, "split", 8, "--resume", *every) == 0
    assert updates_trained == [4, 5, 6, 7]  # the segment again, then the rest
    whole = ckpt.load_checkpoint(tmp_path / "whole" / "checkpoint", kind="run")
    resumed = ckpt.load_checkpoint(split / "checkpoint", kind="run")
    assert whole.tensors.keys() == resumed.tensors.keys()
    for key, value in whole.tensors.items():
        assert torch.equal(value, resumed.tensors[key]), key
    assert (
        ckpt.load_checkpoint(split / "final").tensors.keys()
        == ckpt.load_checkpoint(tmp_path / "whole" / "final").tensors.keys()
    )
    for key, value in ckpt.load_checkpoint(tmp_path / "whole" / "final").tensors.items():
        assert torch.equal(value, ckpt.load_checkpoint(split / "final").tensors[key]), key
    assert _metrics(tmp_path / "whole" / "metrics.csv") == _metrics(split / "metrics.csv")
    evaluations = _metrics(split / "eval.csv")
    assert evaluations == _metrics(tmp_path / "whole" / "eval.csv")
    assert str(stopped_at) in {row[0] for row in evaluations[1:]}  # the evaluation due at the stop


def test_sampling_draws_legal_actions_with_the_softmax_probabilities():
    """``ActorCritic.sample`` (inverse-CDF, one draw per row): never an illegal action, frequencies within sampling
    error of the masked softmax.
    """
    model = ActorCritic(GameConfig(num_players=4), [32], card_counting=True, seed=0).eval()
    gen = torch.Generator().manual_seed(0)
    for _trial in range(3):
        obs = torch.rand(1, model.observation_size, generator=gen) * 3
        mask = torch.rand(1, model.num_actions, generator=gen) > 0.8
        mask[0, -1] = True  # the last action legal too: the draw's upper edge
        rows = 100_000
        action, logprob, _ = model.sample(obs.repeat(rows, 1), mask.repeat(rows, 1), gen)
        assert mask[0, action].all()
        with torch.no_grad():
            probs = torch.softmax(model(obs, mask)[0], -1)[0].double().numpy()
        freq = np.bincount(action.numpy(), minlength=len(probs)) / rows
        assert np.all(np.abs(freq - probs) <= 5 * np.sqrt(probs * (1 - probs) / rows) + 1e-12)
        assert torch.allclose(logprob, torch.log(torch.from_numpy(probs)).float()[action], atol=1e-5)
    spiky = torch.full((4, model.num_actions), False)
    spiky[:, [0, 5]] = True
    action, _, _ = model.sample(torch.rand(4, model.observation_size) * 100, spiky, gen)
    assert set(action.tolist()) <= {0, 5}


def test_the_readability_benchmark_scores_a_reader_beside_the_copies_own_calls(tmp_path, capsys):
    """``benchmarks/bench_readability.py``: responses among copies, labelled with the hidden truth; honest claims are
    all readable.
    """
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_readability", Path(__file__).resolve().parents[1] / "benchmarks" / "bench_readability.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    _save(tmp_path / "target", _model(0))
    out = tmp_path / "r.json"
    assert bench.main([str(tmp_path / "target"), "honest", "random", "--games", "20", "--json", str(out)]) == 0
    results = {r["agent"]: r for r in json.loads(out.read_text())["results"]}
    assert json.loads(out.read_text())["config"]["num_players"] == GAME.num_players  # the checkpoint's rules
    honest, rand = results["honest"], results["random"]
    assert honest["truth_rate"] == 1.0 and honest["reader_accuracy"] == 1.0  # never lies: every claim is read
    for r in results.values():
        assert (
            r["responses"] > r["test_responses"] > 0
            and 0 <= r["reader_accuracy"] <= 1
            and r["base_rate_accuracy"] >= 0.5
        )
        assert r["calls"] <= r["test_responses"] and 0 <= r["peek_rate"] <= 1
    # the truths are the engine's: random's calls right about as often as the base rate allows, not more
    assert abs(rand["own_call_accuracy"] - 0.5) < 0.2
    assert "reader / own" in capsys.readouterr().out
    assert bench.main(["honest", "--games", "5"]) == 2 and "--games 5 is not allowed" in capsys.readouterr().err
    assert (
        bench.main([str(tmp_path / "target"), "--players", "5", "--games", "20"]) == 2
        and "--players 5 is not allowed" in capsys.readouterr().err
    )
    assert (
        bench.main(["nothing-of-that-name", "--games", "20"]) == 2 and "nothing-of-that-name" in capsys.readouterr().err
    )


@pytest.mark.parametrize("minibatches", [1, 3])
def test_the_magnets_kl_in_an_update_is_kl_of_the_policy_from_the_magnet_on_the_same_rows(minibatches):
    """The magnet's policy is computed once per update (it is frozen); each minibatch's KL must still pair every row
    with the magnet's policy on that row. With learning rate 0 the reported KL (the last minibatch's) is computed
    directly.
    """
    from cockroach_env.batched import BatchedGames
    from training.core.config import PPOConfig
    from training.core.learner import Learner, ppo_update

    games = BatchedGames(GAME, 64, seed=5)
    step = games.reset()
    model, magnet = _model(1), _model(2)
    with torch.no_grad():  # initial policy heads are near uniform; make the two policies differ
        for net, seed in ((model, 3), (magnet, 4)):
            net.policy_head.weight.copy_(
                torch.randn(net.policy_head.weight.shape, generator=torch.Generator().manual_seed(seed))
            )
    learner = Learner(model, 0.0, 4096, 64, GAME.num_players, model.observation_size, model.num_actions)
    learner.magnet = magnet.eval().requires_grad_(False)
    obs, mask = step.observation, step.action_mask.astype(bool)
    action = np.array([np.flatnonzero(m)[0] for m in mask])
    learner.rollout.append(obs, mask, action, np.zeros(len(obs), np.float32), np.zeros(len(obs), np.float32))
    ppo = PPOConfig(num_minibatches=minibatches, update_epochs=1, magnet_coef=1.0, norm_adv=False)
    order = np.random.default_rng(0).permutation(
        len(obs)
    )  # the update's own draw with the same seed: its last minibatch
    minibatch = -(-len(obs) // minibatches)
    last = np.sort(order[(minibatches - 1) * minibatch :])
    stats = ppo_update(
        learner,
        learner.rollout,
        np.zeros(len(obs), np.float32),
        np.zeros(len(obs), np.float32),
        np.arange(len(obs)),
        ppo,
        np.random.default_rng(0),
        "cpu",
    )
    with torch.no_grad():
        x = torch.from_numpy(obs[last])
        legal = torch.from_numpy(mask[last])
        log_p = torch.log_softmax(model(x, legal)[0], -1)
        log_q = torch.log_softmax(magnet(x, legal)[0], -1)
        expected = torch.where(legal, log_p.exp() * (log_p - log_q), 0.0).sum(-1).mean().item()
    assert expected > 1e-3 and stats["magnet_kl"] == pytest.approx(expected, rel=1e-4, abs=1e-6)


def test_keep_agent_every_keeps_the_agent_at_those_updates_and_a_resume_rewrites_the_ones_after_its_checkpoint(
    tmp_path,
):
    """``schedule.keep_agent_every``: ``agents/update_<U>`` at every multiple (the run's agent at that update, the last
    one ``final``'s
    weights); a resumed run keeps those its checkpoint holds and writes its own after it, identical to the
    uninterrupted run's.
    """
    from training.core.checkpoint import load_agent, load_checkpoint

    keep = ["--set", "schedule.keep_agent_every=1"]
    assert _train(tmp_path, "whole", 4, *keep) == 0
    whole = tmp_path / "whole" / "agents"
    assert sorted(p.name for p in whole.glob("*.json")) == [f"update_{u:07d}.json" for u in (1, 2, 3, 4)]
    kept = {u: load_checkpoint(whole / f"update_{u:07d}", kind="agent") for u in (1, 2, 3, 4)}
    assert [kept[u].metadata["step"]["update"] for u in (1, 2, 3, 4)] == [1, 2, 3, 4]
    assert not all(torch.equal(kept[1].tensors[k], kept[4].tensors[k]) for k in kept[1].tensors)
    final = load_checkpoint(tmp_path / "whole" / "final", kind="agent")
    assert all(torch.equal(final.tensors[k], kept[4].tensors[k]) for k in final.tensors)
    assert load_agent(whole / "update_0000002").name

    assert _train(tmp_path, "split", 2, *keep) == 0
    split = tmp_path / "split" / "agents"
    for name in (
        "update_0000003.json",
        "update_0000003.1.safetensors",
    ):  # a killed continuation's agent after the checkpoint (update 2)
        (split / name).write_bytes((split / name.replace("3", "2", 1)).read_bytes())
    assert _train(tmp_path, "split", 4, "--resume", *keep) == 0
    assert sorted(p.name for p in split.iterdir()) == sorted(p.name for p in whole.iterdir())
    for u in (1, 2, 3, 4):
        resumed = load_checkpoint(split / f"update_{u:07d}", kind="agent")
        assert all(torch.equal(resumed.tensors[k], kept[u].tensors[k]) for k in kept[u].tensors), u

    assert (
        _train(tmp_path, "split", 1, "--overwrite") == 0
    )  # a fresh run in its place, keeping none: the replaced run's are gone
    assert not list(split.iterdir())


@pytest.mark.parametrize("value", ["-1", "1.5"])
def test_keep_agent_every_is_validated(tmp_path, value, capsys):
    assert _train(tmp_path, "bad", 2, "--set", f"schedule.keep_agent_every={value}") == 2
    assert f"keep_agent_every={value}" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize(
    "gamma, lam, players, learner_seats, max_steps",
    [(1.0, 0.95, 4, (1, 2, 3), None), (0.8, 0.5, 2, (1,), None), (0.9, 0.8, 3, (1, 2), 25)],
)
def test_advantages_match_a_reference_rebuilt_from_the_logged_games(
    monkeypatch, gamma, lam, players, learner_seats, max_steps
):
    """Every learner decision of six real rollouts (policy and exploiter tables, several learner seats, games ending and
    dealt again in a slot, games cut by ``max_steps``) is trained exactly once, in the rollout where its seat's next
    decision in that game or the game's end arrives, with the advantage and return that GAE gives on the seat's own
    trajectory rebuilt from a log of every step: the terminal reward on the seat's last decision, and the lambda-sum
    cut at the end of the rollout (truncated GAE, as in CleanRL).
    """
    import torch

    from cockroach_env.batched import BatchedGames
    from training.core.config import config_from_dict
    from training.core.learner import Learner, gae
    from training.core.opponents import EXPLOITER_SEAT, POLICY_SEAT, Tables, add_snapshot
    from training.core.rollout import RolloutArgs, baseline_index, collect_rollout, snapshot_indices
    from training.core.runs import Progress

    envs, steps, rollouts = 12, 30, 6
    options = {"num_players": players, **({"max_steps": max_steps} if max_steps else {})}
    cfg = config_from_dict(
        {
            "game": options,
            "ppo": {"num_envs": envs, "num_steps": steps, "gamma": gamma, "gae_lambda": lam},
            "opponents": {
                "self_play": 0.3,
                "snapshots": 0.2,
                "exploiter": 0.3,
                "baselines": {"random": 0.2},
                "learner_seats": list(learner_seats),
            },
        }
    )
    game = cfg.game_config()
    models = {code: ActorCritic(game, [16], seed=seed) for code, seed in ((POLICY_SEAT, 1), (EXPLOITER_SEAT, 2))}
    learners = {
        code: Learner(m, 1e-3, envs * steps + envs * players, envs, players, m.observation_size, m.num_actions)
        for code, m in models.items()
    }
    games, tables, rng = (
        BatchedGames(game, batch_size=envs, seed=0),
        Tables(cfg, game, envs),
        np.random.default_rng(0),
    )
    pool: list = []
    add_snapshot(pool, Progress(), models[POLICY_SEAT], cfg)
    args = RolloutArgs(
        learners,
        tables,
        games,
        pool,
        ["random"],
        None,
        torch.Generator().manual_seed(0),
        rng,
        torch.device("cpu"),
        steps,
    )
    args.opponents = [None, baselines.make("random", game, seed=1)]
    step = games.reset(seed=0)
    tables.draw(np.arange(envs), rng, baseline_index(["random"]), snapshot_indices(pool, ["random"]))

    # the log: every learner decision (time, game, seat, value) and every game's end (rewards, time)
    decisions = {code: [] for code in learners}
    row_ids = {code: {} for code in learners}  # rollout row -> decision id, in the current rollout
    game_of_slot, dealt, ends, clock = np.arange(envs), [envs], {}, [0]
    act, step_games = Learner.act, games.step

    def logged_act(self, step_, rows, seat, sampler, device):
        code = next(c for c, learner in learners.items() if learner is self)
        before = self.rollout.size
        out = act(self, step_, rows, seat, sampler, device)
        for k, b in enumerate(rows):
            row_ids[code][before + k] = len(decisions[code])
            decisions[code].append(
                {
                    "t": clock[0],
                    "game": int(game_of_slot[b]),
                    "seat": int(seat[b]),
                    "value": float(self.rollout.value[before + k]),
                }
            )
        return out

    def logged_step(actions):
        out = step_games(actions)
        for b in np.flatnonzero(out.done):
            ends[int(game_of_slot[b])] = (out.rewards[b].copy(), clock[0])
            game_of_slot[b], dealt[0] = dealt[0], dealt[0] + 1
        clock[0] += 1
        return out

    monkeypatch.setattr(Learner, "act", logged_act)
    monkeypatch.setattr(games, "step", logged_step)
    trained = {code: {} for code in learners}  # decision id -> (rollout, advantage, return, rollout end time)
    for r in range(rollouts):
        step, _ = collect_rollout(args, step)
        for code, learner in learners.items():
            advantages, returns, rows = gae(learner.rollout, cfg.ppo)
            for i in rows:
                assert row_ids[code][i] not in trained[code], "a decision trained twice"
                trained[code][row_ids[code][i]] = (r, float(advantages[i]), float(returns[i]), clock[0])
            pending = {
                (b, s): row_ids[code][learner.pending[b, s]]
                for b in range(envs)
                for s in range(players)
                if learner.pending[b, s] >= 0
            }
            learner.carry_over()
            row_ids[code] = {learner.pending[b, s]: d for (b, s), d in pending.items()}
    assert len(ends) > envs, "games ended and were dealt again"

    checked = 0
    for code, log in decisions.items():
        by_seat: dict = {}
        for i, d in enumerate(log):
            by_seat.setdefault((d["game"], d["seat"]), []).append(i)
        successor = {a: b for ids in by_seat.values() for a, b in zip(ids, ids[1:])}
        last = {ids[-1]: ends[g] for (g, _), ids in by_seat.items() if g in ends}

        # its next decision or its game's end happened within the rollouts up to t_end
        def done_by(i, t_end, log=log, successor=successor, last=last):
            return (log[successor[i]]["t"] if i in successor else last[i][1] if i in last else t_end) < t_end

        for r in range(rollouts):
            t_end = max(t for (rr, _, _, t) in trained[code].values() if rr == r)
            memo: dict = {}

            def advantage(i, memo=memo, t_end=t_end, log=log, successor=successor, last=last):
                if i not in memo:
                    if not done_by(i, t_end):
                        memo[i] = 0.0
                    elif i in successor:
                        j = successor[i]
                        memo[i] = gamma * log[j]["value"] - log[i]["value"] + gamma * lam * advantage(j)
                    else:
                        memo[i] = float(last[i][0][log[i]["seat"]]) - log[i]["value"]
                return memo[i]

            expected = {
                i
                for i, d in enumerate(log)
                if d["t"] < t_end and done_by(i, t_end) and trained[code].get(i, (rollouts,))[0] >= r
            }
            assert {i for i, (rr, *_) in trained[code].items() if rr == r} == expected, (code, r)
            for i in expected:
                _, a, ret, _ = trained[code][i]
                assert a == pytest.approx(advantage(i), abs=1e-4) and ret == pytest.approx(
                    advantage(i) + log[i]["value"], abs=1e-4
                ), (code, r, i)
                checked += 1
    assert checked > 500


def _update_once(model, ppo, mask_seed: int = 5, learning_rate: float = 0.0, magnet=None):
    """One ``ppo_update`` of ``model`` on a batch of first decisions (random advantages), and the batch."""
    from cockroach_env.batched import BatchedGames
    from training.core.learner import Learner, ppo_update

    step = BatchedGames(GAME, 64, seed=mask_seed).reset()
    learner = Learner(model, learning_rate, 4096, 64, GAME.num_players, model.observation_size, model.num_actions)
    learner.magnet = magnet
    obs, mask = step.observation, step.action_mask.astype(bool)
    action = np.array([np.flatnonzero(m)[0] for m in mask])
    with torch.no_grad():
        logits = model(torch.from_numpy(obs), torch.from_numpy(mask))[0]
        logprob = torch.log_softmax(logits, -1)[torch.arange(len(obs)), torch.from_numpy(action)].numpy()
    learner.rollout.append(obs, mask, action, logprob, np.zeros(len(obs), np.float32))
    advantages = np.random.default_rng(1).normal(size=len(obs)).astype(np.float32)
    stats = ppo_update(
        learner, learner.rollout, advantages, advantages, np.arange(len(obs)), ppo, np.random.default_rng(0), "cpu"
    )
    return stats, obs, mask


def test_a_uniform_magnets_kl_is_the_policys_negative_entropy_plus_the_log_of_its_legal_actions():
    """``ppo.magnet: uniform`` pulls towards the uniform policy over the legal actions: KL(p || u) = sum p log p +
    log(legal actions), row by row (learning rate 0: the reported KL is the initial policy's).
    """
    from training.core.config import PPOConfig

    model = _model(1)
    with torch.no_grad():
        model.policy_head.weight.copy_(
            torch.randn(model.policy_head.weight.shape, generator=torch.Generator().manual_seed(3))
        )
    ppo = PPOConfig(num_minibatches=1, update_epochs=1, magnet_coef=1.0, magnet="uniform", norm_adv=False)
    stats, obs, mask = _update_once(model, ppo)
    with torch.no_grad():
        legal = torch.from_numpy(mask)
        log_p = torch.log_softmax(model(torch.from_numpy(obs), legal)[0], -1)
        expected = (
            (torch.where(legal, log_p.exp() * log_p, 0.0).sum(-1) + torch.log(legal.sum(-1).float())).mean().item()
        )
    assert expected > 1e-3 and stats["magnet_kl"] == pytest.approx(expected, rel=1e-4, abs=1e-6)


def test_the_kl_to_the_start_of_the_update_holds_the_policy_near_it():
    """``ppo.kl_coef`` adds KL(policy || policy at the update's start): zero before the first step, and a large
    coefficient keeps the updated policy nearer the old one than the same update without it.
    """
    from training.core.config import PPOConfig

    stats, _, _ = _update_once(_model(1), PPOConfig(num_minibatches=1, update_epochs=1, kl_coef=1.0))
    assert stats["start_kl"] == pytest.approx(0.0, abs=1e-7)  # learning rate 0: the policy is still the start's
    moved = {}
    for kl_coef in (0.0, 50.0):
        model = _model(1)
        before = _model(1)
        ppo = PPOConfig(num_minibatches=1, update_epochs=8, kl_coef=kl_coef, clip_coef=10.0, ent_coef=0.0)
        _, obs, mask = _update_once(model, ppo, learning_rate=3e-3)
        with torch.no_grad():
            x, legal = torch.from_numpy(obs), torch.from_numpy(mask)
            log_new = torch.log_softmax(model(x, legal)[0], -1)
            log_old = torch.log_softmax(before(x, legal)[0], -1)
            moved[kl_coef] = torch.where(legal, log_new.exp() * (log_new - log_old), 0.0).sum(-1).mean().item()
    assert moved[0.0] > 1e-4 and moved[50.0] < 0.2 * moved[0.0], moved


def test_annealed_regularization_decays_geometrically_and_is_validated():
    from training.core.config import ConfigError, PPOConfig, load_config

    ppo = PPOConfig(anneal_regularization=0.01)
    assert ppo.regularization_scale(0.0) == 1.0 and ppo.regularization_scale(0.5) == pytest.approx(0.1)
    assert ppo.regularization_scale(1.0) == pytest.approx(0.01) and PPOConfig().regularization_scale(0.7) == 1.0
    for key, value, expected in (
        ("ppo.magnet", "average", "one of ['copy', 'ema', 'uniform']"),
        ("ppo.magnet_ema", "0", "a number > 0 and at most 1"),
        ("ppo.anneal_regularization", "1.5", "a number > 0 and at most 1"),
        ("ppo.kl_coef", "-1", "a number from 0 to MAX_COEFFICIENT=100"),
    ):
        with pytest.raises(ConfigError, match=re.escape(expected)) as error:
            load_config(None, [f"{key}={value}"])
        assert key.split(".")[1] in str(error.value)


def test_a_run_with_a_moving_average_magnet_resumes_exactly(tmp_path, updates_trained):
    """The ``ema`` magnet moves towards the policy after every update and is part of the run checkpoint; with the
    proximal KL too, a split run equals the whole one, with and without overlap.
    """
    mmd = ["ppo.magnet_coef=0.5", "ppo.magnet=ema", "ppo.magnet_ema=0.5", "ppo.kl_coef=0.2"]
    mmd += ["schedule.checkpoint_every=2"]
    for overlap in ("false", "true"):
        args = [a for s in [*mmd, f"ppo.overlap={overlap}"] for a in ("--set", s)]
        assert _train(tmp_path, f"whole{overlap}", 4, *args) == 0
        assert _train(tmp_path, f"split{overlap}", 2, *args) == 0
        updates_trained.clear()
        assert _train(tmp_path, f"split{overlap}", 4, "--resume", *args) == 0
        assert updates_trained == [2, 3]
        whole = ckpt.load_checkpoint(tmp_path / f"whole{overlap}" / "checkpoint", kind="run")
        split = ckpt.load_checkpoint(tmp_path / f"split{overlap}" / "checkpoint", kind="run")
        assert whole.tensors.keys() == split.tensors.keys()
        for key, value in whole.tensors.items():
            assert torch.equal(value, split.tensors[key]), (overlap, key)
        assert _metrics(tmp_path / f"whole{overlap}" / "metrics.csv") == _metrics(
            tmp_path / f"split{overlap}" / "metrics.csv"
        )
        header = (tmp_path / f"whole{overlap}" / "metrics.csv").read_text().splitlines()[0].split(",")
        assert {"magnet_kl", "start_kl"} <= set(header)
        magnet, policy = whole.group("magnet"), whole.group("model")
        assert any(not torch.equal(magnet[k], policy[k]) for k in policy)  # between its start and the policy


def test_annealed_regularization_follows_the_runs_schedule_across_a_stop(tmp_path, monkeypatch, updates_trained):
    """The entropy and magnet factors decay over ``schedule.total_decisions``: a run stopped by SIGTERM and resumed
    (same total) equals the run that never stopped.
    """
    import signal

    from training.algorithms import ppo

    sets = ["ppo.magnet_coef=0.5", "ppo.magnet=uniform", "ppo.anneal_regularization=0.01", "ppo.ent_coef=0.5"]
    sets += ["schedule.checkpoint_every=2"]
    args = [a for s in sets for a in ("--set", s)]
    assert _train(tmp_path, "whole", 4, *args) == 0
    rollout, calls = ppo.collect_rollout, []

    def signal_in_the_third_rollout(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            signal.raise_signal(signal.SIGTERM)
        return rollout(*a, **k)

    monkeypatch.setattr(ppo, "collect_rollout", signal_in_the_third_rollout)
    assert _train(tmp_path, "split", 4, *args) == 128 + signal.SIGTERM
    monkeypatch.undo()
    updates_trained.clear()
    assert _train(tmp_path, "split", 4, "--resume", *args) == 0
    assert updates_trained == [2, 3]
    whole = ckpt.load_checkpoint(tmp_path / "whole" / "checkpoint", kind="run")
    split = ckpt.load_checkpoint(tmp_path / "split" / "checkpoint", kind="run")
    for key, value in whole.tensors.items():
        assert torch.equal(value, split.tensors[key]), key
    assert _metrics(tmp_path / "whole" / "metrics.csv") == _metrics(tmp_path / "split" / "metrics.csv")
    assert _train(tmp_path, "constant", 4, *args[:-4], *args[-2:]) == 0  # the same without the annealing
    constant = ckpt.load_checkpoint(tmp_path / "constant" / "checkpoint", kind="run")
    assert any(not torch.equal(v, constant.tensors[k]) for k, v in whole.tensors.items() if k.startswith("model."))


def test_exploitability_plays_by_default_enough_games_for_an_interval_narrower_than_two_points(tmp_path):
    """Without ``--games`` the evaluation is sized so that the 95% Wilson interval at parity is under 2 points wide."""
    from training.cli.exploit import main
    from training.evaluation.ratings import games_for_width, wilson_interval

    mini = GameConfig.from_options("mini")
    torch.manual_seed(0)
    model = ActorCritic(mini, [8])
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    meta = {
        "kind": "agent",
        "name": "m",
        "game_config": mini.to_dict(),
        "model": {"hidden_sizes": [8], "activation": "tanh"},
    }
    ckpt.save_checkpoint(tmp_path / "target", tensors, meta)
    report = tmp_path / "report.json"
    sets = ["ppo.num_envs=16", "ppo.num_steps=8", "evaluation.every=0", "model.hidden_sizes=[8]"]
    argv = [str(tmp_path / "target"), "--decisions", "128", "--output-dir", str(tmp_path), "--json", str(report)]
    assert main([*argv, "--no-progress", *[a for s in sets for a in ("--set", s)]]) == 0
    result = json.loads(report.read_text())
    assert result["games"] == games_for_width(0.5) == 9600
    low, high = result["ci95"]
    assert high - low < 0.02 + 1e-9 and (low, high) == pytest.approx(
        wilson_interval(round(result["best_response_loss_rate"] * 9600), 9600)
    )


def test_a_magnet_in_the_rewards_gives_each_decision_minus_the_log_ratio_to_its_magnet():
    """``ppo.magnet_reward``: every decision earns ``-scale * magnet_coef * log(pi(a|s) / magnet(a|s))``, the uniform
    magnet's probability being one over the legal actions; GAE adds it to the decision's reward.
    """
    from training.core.config import PPOConfig
    from training.core.learner import Learner, gae, magnet_bonus

    model = _model(1)
    learner = Learner(model, 0.0, 64, 4, GAME.num_players, model.observation_size, model.num_actions)
    mask = np.zeros((3, model.num_actions), bool)
    mask[0, :2], mask[1, :5], mask[2, :1] = True, True, True
    obs = np.zeros((3, model.observation_size), np.float32)
    logprob = np.log(np.array([0.5, 0.1, 1.0], np.float32))
    learner.rollout.append(obs, mask, np.zeros(3, np.int64), logprob, np.zeros(3, np.float32))
    learner.rollout.reward[:3] = [1.0, -1.0, 0.0]
    learner.rollout.terminal[:3] = True
    ppo = PPOConfig(magnet_coef=0.2, magnet="uniform", magnet_reward=True)
    bonus = magnet_bonus(learner, learner.rollout, ppo, 0.5, "cpu")
    assert bonus == pytest.approx(-0.5 * 0.2 * (logprob + np.log([2, 5, 1])), abs=1e-6)
    advantages, returns, rows = gae(learner.rollout, ppo, bonus)
    assert returns[rows] == pytest.approx(np.array([1.0, -1.0, 0.0]) + bonus, abs=1e-6)
    assert magnet_bonus(learner, learner.rollout, PPOConfig(magnet_coef=0.2, magnet="uniform"), 1.0, "cpu") is None
    learner.magnet = _model(2).eval()  # a network magnet: its own log-probability of the action taken
    with torch.no_grad():
        magnet_logprob = torch.log_softmax(learner.magnet(torch.from_numpy(obs), torch.from_numpy(mask))[0], -1)[:, 0]
    bonus = magnet_bonus(learner, learner.rollout, PPOConfig(magnet_coef=1.0, magnet_reward=True), 1.0, "cpu")
    assert bonus == pytest.approx(-(logprob - magnet_logprob.numpy()), abs=1e-5)
