"""The test command itself: the README's and CI's are one, and the suite splits safely over workers."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.conftest import RAY_MODULES

ROOT = Path(__file__).resolve().parent.parent
STARTS_RAY = re.compile(r"ray\.init\(|executor\(\s*\"local\"")


def _readme_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "README.md has no ```bash block of set-up commands"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_starts_with_two_commands_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text()
    assert readme.startswith("```bash\n"), "the README must start with its set-up commands"
    commands = _readme_commands()
    assert len(commands) == 2, commands
    ci = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert ci[-1] == commands[1], f".ci/run's last command {ci[-1]!r} is not the README's test command {commands[1]!r}"


def test_the_test_command_spreads_over_workers_grouped_by_module():
    words = shlex.split(_readme_commands()[1])
    assert words[words.index("pytest") + 1 :][:3] == ["-q", "-n", "auto"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^addopts = "--dist loadgroup"$', pyproject, re.M)
    assert re.search(r'"pytest-xdist>=[0-9.]+"', pyproject)


def test_every_module_that_starts_a_ray_cluster_is_in_the_ray_group():
    modules = {path.name: path.read_text() for path in (ROOT / "tests").glob("test_*.py")}
    for name in RAY_MODULES:
        assert name in modules, f"RAY_MODULES names {name}, which does not exist"
    starting = {name for name, text in modules.items() if STARTS_RAY.search(text) and name != "test_ci.py"}
    # test_integration_docs runs the documented recipes, the RLlib one starting a cluster.
    if STARTS_RAY.search((ROOT / "docs" / "integrations.md").read_text()):
        starting.add("test_integration_docs.py")
    assert starting <= set(RAY_MODULES), (
        f"modules starting Ray outside the group: {sorted(starting - set(RAY_MODULES))}"
    )
