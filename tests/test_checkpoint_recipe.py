"""``python -m training.checkpoint NAME``: the recipe (every command that made a checkpoint, oldest first) and the
package version that wrote it; ``--json``: the whole metadata. Every save records that version; checkpoints saved
without it still load.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import cockroach_env  # noqa: E402
from cockroach_env import GameConfig  # noqa: E402
from training.cli import checkpoint as checkpoint_cli  # noqa: E402
from training.core import checkpoint as ckpt  # noqa: E402
from training.core.model import ActorCritic  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _described_commands(text: str) -> list[list[str]]:
    """The ``$ command`` lines of a description, continuation lines joined, as shell words."""
    commands, current = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if current is None and stripped.startswith("$ "):
            current = stripped[2:]
        elif current is not None:
            current += " " + stripped
        else:
            continue
        if current.endswith(" \\"):
            current = current[:-2]
        else:
            commands.append(shlex.split(current))
            current = None
    return commands


def _every_command(node: Any) -> list[list[str]]:
    """Every command string anywhere in a metadata tree, as shell words."""
    if isinstance(node, dict):
        found = [shlex.split(node["command"])] if isinstance(node.get("command"), str) else []
        for key, value in node.items():
            if key == "commands" and isinstance(value, list):
                found += [shlex.split(c) for c in value if isinstance(c, str)]
            elif key != "command":
                found += _every_command(value)
        return found
    if isinstance(node, list):
        return [c for item in node for c in _every_command(item)]
    return []


def _describe(capsys, *argv: str) -> str:
    checkpoint_cli.main(list(argv))
    return capsys.readouterr().out


@pytest.mark.parametrize("name", ckpt.shipped_checkpoints())
def test_the_description_of_a_shipped_agent_gives_its_recipe_oldest_command_first(name, capsys):
    meta = ckpt.read_metadata(name)
    text = _describe(capsys, name)
    assert text.splitlines()[0] == name and "Traceback" not in text
    described = _described_commands(text)
    own = [shlex.split(c) for c in meta.get("commands") or [meta["command"]]]
    assert described[-len(own) :] == own  # the checkpoint's own commands come last, in order
    recorded = _every_command(meta)
    assert all(c in recorded for c in described)  # nothing but recorded commands
    base = meta.get("base_run")
    if isinstance(base, dict) and base.get("commands"):
        first = shlex.split(base["commands"][0])
        assert first in described and described.index(first) < len(described) - len(own)  # the base run before
    for member in (meta.get("mixture") or {}).get("recipes") or []:
        assert f"member {member['name']} (" in text
    assert "written by:    not recorded" in text  # the shipped checkpoints predate the record
    assert f"python -m training.checkpoint {name} --json" in text


def test_the_description_of_classic_4p_starts_from_the_member_of_the_mixture_it_was_trained_from(capsys):
    text = _describe(capsys, "classic-4p")
    assert "started from member ppo_4p_g of" in text and "member ppo_4p_strongx2" not in text
    commands = _described_commands(text)
    init = next(k for k, c in enumerate(commands) if "--init-from" in c and "classic-4p-mixture" in c)
    mixture = next(k for k, c in enumerate(commands) if c[0] == "cockroach-mixture")
    assert mixture < init == len(commands) - 2  # the mixture, then the two NFSP stages


def test_json_prints_the_whole_metadata(capsys):
    for name in ("classic-4p", "classic-2p", "mini"):
        expected = ckpt.read_metadata(name)
        expected.pop("_path")
        assert json.loads(_describe(capsys, name, "--json")) == expected


def test_json_does_not_go_with_export(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        checkpoint_cli.main(["mini", "--json", "--export", str(tmp_path / "out")])
    assert exit_.value.code == 2 and "--json" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def _tiny_agent(path: Path) -> Path:
    config = GameConfig(num_players=4)
    model = ActorCritic(config, [16], "tanh")
    return ckpt.save_checkpoint(
        path,
        {f"model.{k}": v for k, v in model.state_dict().items()},
        {
            "kind": "agent",
            "name": "tiny",
            "game_config": config.to_dict(),
            "model": {"hidden_sizes": [16], "activation": "tanh"},
            "commands": ["cockroach-train --config configs/quick.yaml --set name=tiny"],
        },
    )


def test_agent_export_and_mixture_saves_record_the_version_that_wrote_them(tmp_path, capsys):
    version = cockroach_env.__version__
    agent = _tiny_agent(tmp_path / "agent")
    assert ckpt.read_metadata(agent)["package_version"] == version
    text = _describe(capsys, str(tmp_path / "agent"))
    assert f"written by:    cockroach-poker-rl {version}" in text
    assert _described_commands(text) == [["cockroach-train", "--config", "configs/quick.yaml", "--set", "name=tiny"]]
    # an export records the version that wrote it, not its source's
    meta = json.loads(agent.read_text())
    agent.write_text(json.dumps({**meta, "package_version": "0.0.1"}))
    exported = ckpt.export_agent(tmp_path / "agent", tmp_path / "exported")
    assert ckpt.read_metadata(exported)["package_version"] == version
    models = [ckpt.build_model(ckpt.load_checkpoint(path)) for path in (agent, exported)]
    mixture = ckpt.save_mixture_checkpoint(
        tmp_path / "mixture",
        models,
        [0.5, 0.5],
        ["a", "b"],
        {"game_config": meta["game_config"], "model": meta["model"]},
    )
    assert ckpt.read_metadata(mixture)["package_version"] == version


def test_training_runs_and_the_cfr_solver_record_the_version_that_wrote_them(tmp_path):
    from training.cli.train import main as train_cli

    version = cockroach_env.__version__
    tiny = [
        "ppo.num_envs=16",
        "ppo.num_steps=8",
        "ppo.num_minibatches=2",
        "ppo.update_epochs=1",
        "model.hidden_sizes=[16]",
        "evaluation.every=0",
        "evaluation.final_games=0",
        f"schedule.total_decisions={16 * 8}",
        "name=ppo",
        f"output_dir={tmp_path}",
    ]
    argv = ["--config", str(ROOT / "configs" / "quick.yaml"), "--no-progress"]
    assert train_cli([*argv, *[a for s in tiny for a in ("--set", s)]]) == 0
    for written in ("checkpoint", "final"):  # the run's checkpoint and its agent
        assert ckpt.read_metadata(tmp_path / "ppo" / written)["package_version"] == version
    micro = {"num_players": 2, "num_types": 2, "copies_per_type": 2, "discard": 2, "loss_count": 2}
    cfr = [
        "algorithm=cfr",
        "name=cfr",
        f"output_dir={tmp_path}",
        "model.hidden_sizes=[16]",
        "evaluation.final_games=0",
        *[f"game.{k}={v}" for k, v in micro.items()],
        "cfr.iterations=2",
        "cfr.evaluate_every=2",
        "cfr.checkpoint_every=2",
        "cfr.descent_steps=0",
        "cfr.distill_steps=10",
    ]
    assert train_cli([a for s in cfr for a in ("--set", s)]) == 0
    solver = ckpt.read_metadata(tmp_path / "cfr" / "checkpoint")
    assert solver["kind"] == "solver" and solver["package_version"] == version


def test_a_checkpoint_without_the_version_loads_and_a_bad_version_is_refused_by_name(tmp_path):
    assert "package_version" not in ckpt.read_metadata("mini")
    assert ckpt.load_agent("mini", seed=0).name == "mini"
    agent = _tiny_agent(tmp_path / "agent")
    meta = json.loads(agent.read_text())
    del meta["package_version"]
    agent.write_text(json.dumps(meta))
    assert ckpt.load_agent(tmp_path / "agent", seed=0).name == "tiny"  # saved before the version was recorded
    agent.write_text(json.dumps({**meta, "package_version": 2}))
    with pytest.raises(ckpt.CheckpointError, match=r"'package_version' is 2; expected a version string"):
        ckpt.read_metadata(tmp_path / "agent")
