"""Every recipe of docs/integrations.md runs as written, in a fresh interpreter, with the real library."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "integrations.md"
RECIPE = re.compile(r"<!-- recipe: (?P<name>[\w-]+) -->\n```(?P<lang>\w+)\n(?P<code>.*?)```", re.S)
NEEDS = {
    "rllib": "ray.rllib",
    "sb3": "sb3_contrib",
    "tianshou": "tianshou",
    "torchrl": "torchrl",
    "gymnasium-vector": "torch",
    "sb3-vector": "sb3_contrib",
    "sb3-self-play": "sb3_contrib",
    "torchrl-vector": "torchrl",
    "torchrl-marl": "torchrl",
}


def recipes() -> dict[str, tuple[str, str]]:
    return {m["name"]: (m["lang"], m["code"]) for m in RECIPE.finditer(DOC.read_text())}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _environment() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "RAY_DISABLE_USAGE_STATS": "1"}


def run_recipe(name: str, cwd: Path, timeout: float = 420) -> str:
    lang, code = recipes()[name]
    if lang == "python":
        script = cwd / f"recipe_{name.replace('-', '_')}.py"  # not named like the library it imports
        script.write_text(code)
        commands = [[sys.executable, str(script)]]
    else:
        assert lang == "bash", f"recipe {name}: unexpected language {lang}"
        commands = []
        for line in code.strip().splitlines():
            words = shlex.split(line)
            if words[0] == "cockroach-eval" and shutil.which("cockroach-eval") is None:
                words = [sys.executable, "-m", "training.cli.eval", *words[1:]]  # the project is not pip-installed here
            commands.append(words)
    output = ""
    for command in commands:
        done = subprocess.run(command, cwd=cwd, env=_environment(), capture_output=True, text=True, timeout=timeout)
        output += done.stdout
        assert done.returncode == 0, f"recipe {name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return output


def test_the_doc_has_one_recipe_per_library():
    assert set(recipes()) == {"sb3-eval", *NEEDS}


@pytest.mark.slow
@pytest.mark.parametrize("library", sorted(NEEDS))
def test_recipe_runs_as_written(library, tmp_path):
    if not _installed(NEEDS[library]):
        pytest.skip(f"{library} is not installed (pip install '.[{library}]')")
    output = run_recipe(library, tmp_path)
    if library == "rllib":
        assert (tmp_path / "cockroach_rllib").is_dir()
        assert re.search(r"^1 [\d.]+ ", output, re.M)
    elif library == "sb3":
        assert "loser seat" in output
        table = run_recipe("sb3-eval", tmp_path)
        assert "cockroach_sb3" in table and "loss rate" in table
    elif library == "tianshou":
        assert output.strip()
    elif library == "gymnasium-vector":  # iteration, games ended, mean terminal reward of the learner
        lines = [line.split() for line in output.strip().splitlines()]
        assert [int(line[0]) for line in lines] == [0, 1, 2] and all(int(line[1]) > 10 for line in lines)
        assert all(-1.0 <= float(line[2]) <= 1 / 3 for line in lines)
    elif library == "sb3-vector":
        assert (tmp_path / "cockroach_sb3_vec.zip").is_file()
        assert int(re.search(r"^episodes logged (\d+)$", output, re.M).group(1)) > 0  # VecMonitor's statistics
        games, reward = re.search(r"^games (\d+) mean reward against three heuristic (\S+)$", output, re.M).groups()
        assert int(games) >= 200 and -1.0 <= float(reward) <= 1 / 3
    elif library == "sb3-self-play":  # 8,192 steps of 64 envs: 4 rollouts, a snapshot after each, the newest 3 kept
        assert re.search(r"^rollouts 4 table 'heuristic' 'snapshot-2' 'snapshot-3' 'snapshot-4'$", output, re.M)
        episodes, reward = re.search(r"^episodes (\d+) mean reward (\S+)$", output, re.M).groups()
        assert int(episodes) > 0 and -1.0 <= float(reward) <= 1 / 3
    elif library == "torchrl-vector":
        pattern = r"^decisions (\d+) games (\d+) mean reward \S+ exploration random$"
        decisions, games = re.search(pattern, output, re.M).groups()
        assert int(decisions) == 25_600 and int(games) > 100
    elif library == "torchrl-marl":  # both seats learn; the first iterations answer random-like play
        iterations = re.findall(r"^iteration (\d+) games (\d+) critic loss \S+$", output, re.M)
        assert [int(i) for i, _ in iterations] == list(range(6)) and all(int(g) > 100 for _, g in iterations)
        pattern = r"^mean reward against random before (\S+) after (\S+)$"
        before, after = (float(x) for x in re.search(pattern, output, re.M).groups())
        assert abs(before) < 0.1 and after > before + 0.1, (before, after)
    else:
        rewards = [float(line.split()[-1]) for line in output.strip().splitlines()[-4:]]
        assert sorted(rewards) == pytest.approx([-1.0, 1 / 3, 1 / 3, 1 / 3], abs=1e-6)
