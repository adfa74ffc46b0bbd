"""The algorithm registry (``training.core.registry``): an algorithm added with one declaration is read by the config
loader and trained by ``cockroach-train``; the built-in algorithms keep their names and their checkpoints' configs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from dataclasses import dataclass, replace
from pathlib import Path
from textwrap import dedent

import pytest

pytest.importorskip("yaml")

from training.cli import train as train_cli  # noqa: E402
from training.core import registry  # noqa: E402
from training.core.config import ConfigError, TrainConfig, config_from_dict, load_config  # noqa: E402
from training.core.registry import Algorithm  # noqa: E402
from training.core.schema import require  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class ToyConfig:
    """A toy algorithm's settings."""

    rounds: int = 2
    """Rounds the toy plays."""
    label: str = "toy"
    """What the toy writes."""

    def validate(self, where: str) -> None:
        require(where, "rounds", self.rounds, self.rounds >= 1, "an integer >= 1")


def toy_check(config: TrainConfig, where: str) -> None:
    require(where, "seed", config.seed, config.seed != 13, "any seed but 13 with algorithm: toy")


def toy_train(config, resume=False, command=None, progress_bar=True, initial_weights=None, base_run=None) -> Path:
    """Write what it was given in the run directory; the path it returns stands for the agent."""
    config.run_dir.mkdir(parents=True, exist_ok=True)
    record = {"rounds": config.toy.rounds, "label": config.toy.label, "resume": resume, "command": command}
    (config.run_dir / "toy.json").write_text(json.dumps(record), encoding="utf-8")
    return config.run_dir / "final.json"


TOY = Algorithm(
    name="toy", train=toy_train, summary="a toy that writes its settings", section=ToyConfig, check=toy_check
)


@pytest.fixture
def toy():
    registry.register(TOY)
    yield TOY
    registry.unregister("toy")


def test_the_built_in_algorithms_keep_their_names_and_sections():
    assert sorted(registry.names()) == ["cfr", "nfsp", "ppo", "psro"]
    assert sorted(registry.sections()) == ["cfr", "nfsp", "psro"]
    assert all(registry.get(name).name == name for name in registry.names())


def test_a_toy_algorithm_is_read_by_the_config_loader(toy, tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text("name: toy_run\nalgorithm: toy\ntoy:\n  rounds: 5\n", encoding="utf-8")
    config = load_config(path, ["toy.label=hello"])
    assert (config.algorithm, config.toy.rounds, config.toy.label) == ("toy", 5, "hello")
    assert config.sections["toy"] == ToyConfig(rounds=5, label="hello")
    assert config_from_dict(config.to_dict()) == config  # (a checkpoint's metadata)
    assert config != config_from_dict({**config.to_dict(), "toy": {"rounds": 6}})
    assert replace(config, seed=4).toy == config.toy and "sections" not in config.to_dict()
    with pytest.raises(ConfigError, match=r"toy: rounds=0 is not allowed; expected an integer >= 1"):
        load_config(path, ["toy.rounds=0"])
    with pytest.raises(ConfigError, match=r"unknown key 'toy.bogus' in section 'toy'; allowed keys: \['rounds'"):
        load_config(path, ["toy.bogus=1"])
    with pytest.raises(ConfigError, match=r"seed=13 is not allowed; expected any seed but 13 with algorithm: toy"):
        load_config(path, ["seed=13"])
    load_config(None, ["seed=13"])  # the check is the toy's alone


def test_cockroach_train_trains_a_toy_algorithm_in_process(toy, tmp_path, capsys):
    path = tmp_path / "toy.yaml"
    path.write_text(f"name: toy_run\nalgorithm: toy\noutput_dir: {tmp_path}\ntoy:\n  rounds: 3\n", encoding="utf-8")
    assert train_cli.main(["--config", str(path), "--set", "toy.label=cli", "--no-progress"]) == 0
    record = json.loads((tmp_path / "toy_run" / "toy.json").read_text(encoding="utf-8"))
    assert record == {"rounds": 3, "label": "cli", "resume": False, "command": record["command"]}
    assert record["command"].startswith("cockroach-train --config")
    assert f"agent checkpoint: {tmp_path / 'toy_run' / 'final.json'}" in capsys.readouterr().out
    assert train_cli.main(["--config", str(path), "--ray"]) == 2  # the toy does not run on Ray
    assert "--ray is not allowed with algorithm: toy" in capsys.readouterr().err
    assert "algorithm: toy  a toy that writes its settings" in train_cli.build_parser().format_help()
    assert "  toy.rounds = 2  Rounds the toy plays." in train_cli.build_parser().format_help()


def test_a_config_of_an_unregistered_algorithm_is_refused(toy, tmp_path):
    registry.unregister("toy")
    try:
        with pytest.raises(ConfigError, match=r"unknown key 'toy'; allowed keys: \[.*'psro'"):
            config_from_dict({"algorithm": "toy", "toy": {"rounds": 3}})
        with pytest.raises(ConfigError, match=r"algorithm='toy' is not allowed; expected one of \["):
            config_from_dict({"algorithm": "toy"})
    finally:
        registry.register(TOY)


def test_registering_refuses_a_taken_name_or_section_key(toy):
    with pytest.raises(ValueError, match="algorithm 'toy' is already registered"):
        registry.register(TOY)
    for key, owner in (("ppo", "a key shared by every algorithm"), ("psro", "algorithm 'psro''s section")):
        clash = Algorithm(name="clash", train=toy_train, summary="", section=ToyConfig, section_key=key)
        with pytest.raises(ValueError, match=f"section key '{key}' is {owner}"):
            registry.register(clash)
    with pytest.raises(ValueError, match="expected 'module:function'"):
        Algorithm(name="bad", train="no_colon", summary="")
    with pytest.raises(ValueError, match="expected a dataclass"):
        Algorithm(name="bad", train=toy_train, summary="", section=dict)
    with pytest.raises(KeyError, match=r"algorithm 'nope' is not registered; registered: \["):
        registry.get("nope")


def _shipped_training_configs() -> list[Path]:
    """The shipped agents whose metadata holds a training config (a mixture's or a distilled agent's may not)."""
    return [
        path
        for path in sorted((ROOT / "training" / "agents").glob("*.json"))
        if json.loads(path.read_text(encoding="utf-8")).get("training_config") is not None
    ]


def test_most_shipped_agents_carry_a_training_config():
    assert len(_shipped_training_configs()) >= 5


@pytest.mark.parametrize("path", _shipped_training_configs(), ids=lambda p: p.stem)
def test_the_shipped_agents_training_configs_load_with_every_section(path):
    """Checkpoints written before the algorithms registered themselves hold ``psro``, ``cfr`` and ``nfsp`` as
    top-level sections: they load, with those values (and the defaults of the settings added since).
    """
    data = json.loads(path.read_text(encoding="utf-8"))["training_config"]
    config = config_from_dict(data, where=str(path))
    for key in ("psro", "cfr", "nfsp"):
        if key in data:
            loaded = config.to_dict()[key]
            assert {name: loaded[name] for name in data[key]} == data[key], key


def test_reading_a_config_of_every_algorithm_imports_neither_torch_nor_the_algorithms():
    code = (
        "import sys\n"
        "from training.core.config import load_config\n"
        "for name in ('psro_2p', 'cfr_mini', 'nfsp_4p'):\n"
        "    load_config(f'configs/research/{name}.yaml')\n"
        "heavy = [m for m in ('torch', 'training.algorithms.ppo', 'training.algorithms.psro') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_contributings_recipe_registers_an_algorithm_with_one_module(monkeypatch):
    """The declaration that CONTRIBUTING's "Adding an algorithm" shows, run as a module, adds ``algorithm: mine``."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    recipe = text[text.index("## Adding an algorithm") :]
    snippet = recipe[
        recipe.index("```python\n") + len("```python\n") : recipe.index("```\n", recipe.index("```python"))
    ]
    module = dedent(snippet)
    mine = types.ModuleType("training.algorithms.mine")
    monkeypatch.setitem(sys.modules, mine.__name__, mine)
    exec(compile(module, "CONTRIBUTING.md", "exec"), mine.__dict__)
    namespace = mine.__dict__
    try:
        assert registry.get("mine") is namespace["ALGORITHM"]
        config = config_from_dict({"algorithm": "mine", "mine": {"rounds": 3}})
        assert config.mine == namespace["MyConfig"](rounds=3)
        assert "`from training.algorithms import mine as mine`" in recipe  # the one line
    finally:
        registry.unregister("mine")


def test_import_training_registers_the_algorithms_and_stays_light():
    code = (
        "import sys, training\n"
        "from training.core import registry\n"
        "assert sorted(registry.names()) == ['cfr', 'nfsp', 'ppo', 'psro'], registry.names()\n"
        "heavy = [m for m in ('torch', 'numpy', 'cockroach_env', 'training.core.config') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
