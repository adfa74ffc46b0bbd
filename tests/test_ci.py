"""The test command itself: the README's and CI's are one, and the suite splits safely over workers."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import RAY_MODULES

ROOT = Path(__file__).resolve().parent.parent
STARTS_RAY = re.compile(r"ray\.init\(|executor\(\s*\"local\"")


def _readme_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "README.md has no ```bash block of set-up commands"
    return [line for line in block.group(1).splitlines() if line.strip()]


def _ci_lines() -> list[str]:
    return [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def test_the_readme_starts_with_two_commands_and_ci_runs_the_second_then_ruff_and_the_docs_build():
    readme = (ROOT / "README.md").read_text()
    assert readme.startswith("```bash\n"), "the README must start with its set-up commands"
    commands = _readme_commands()
    assert len(commands) == 2, commands
    ci = _ci_lines()
    assert commands[1] in ci, f".ci/run does not run the README's test command {commands[1]!r} as written"
    after = ci[ci.index(commands[1]) :]
    checks = ["ruff check .", "ruff format --check .", 'mkdocs build --strict -d "$site"']
    assert all(check in after for check in checks), after
    assert [after.index(check) for check in checks] == sorted(after.index(check) for check in checks)
    assert re.search(r'"ruff>=[0-9.]+"', (ROOT / "pyproject.toml").read_text())  # in the test extra


FAKE = """#!/usr/bin/env bash
# A stand-in for {name}: logs its arguments, fails where CI_FAIL names them.
echo "{name} $*" >> "$CI_LOG"
if [ "{name}" = python3 ] && [ "$1" = -m ] && [ "$2" = venv ]; then
    mkdir -p "$3/bin" && : > "$3/bin/activate"
fi
case "{name} $*" in $CI_FAIL) exit 1 ;; esac
exit 0
"""


@pytest.mark.parametrize(
    "failing, last_run",
    [
        ("", "mkdocs build --strict -d"),
        ("python -m pip install torch==2.13.0*", "python -m pip install torch==2.13.0"),
        ("python -m pytest*", "python -m pytest -q -n auto"),
        ("ruff check*", "ruff check ."),
        ("ruff format*", "ruff format --check ."),
        ("mkdocs*", "mkdocs build --strict -d"),
    ],
)
def test_ci_fails_when_any_step_fails_and_stops_there(tmp_path, failing, last_run):
    """``.ci/run`` with its commands replaced by stand-ins: a failing install, test run, lint, format check or docs
    build fails the run and nothing after it runs; with none failing, every step runs in order.
    """
    bin_dir, repo = tmp_path / "bin", tmp_path / "repo"
    bin_dir.mkdir()
    (repo / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", repo / ".ci" / "run")
    for name in ("python", "python3", "ruff", "mkdocs", "apt-get", "chromium"):
        fake = bin_dir / name
        fake.write_text(FAKE.format(name=name))
        fake.chmod(0o755)
    log = tmp_path / "log"
    env = {
        "PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "CI_LOG": str(log),
        "CI_FAIL": failing or "no-such-command",
        "HOME": str(tmp_path),
    }
    result = subprocess.run(["bash", str(repo / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60)
    assert (result.returncode == 0) == (not failing), (result.returncode, result.stderr)
    ran = [line for line in log.read_text().splitlines() if not line.startswith(("apt-get", "chromium"))]
    assert ran[-1].startswith(last_run), ran
    if not failing:
        assert [line.split(" -d ")[0] for line in ran[-5:]] == [
            "python -m pip install torch==2.13.0 -e .[all,test]",
            "python -m pytest -q -n auto",
            "ruff check .",
            "ruff format --check .",
            "mkdocs build --strict",
        ]
        site = ran[-1].split(" -d ", 1)[1]
        assert not os.path.exists(site), "the documentation build's temporary folder is removed"


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
