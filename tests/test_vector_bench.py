"""``benchmarks/bench_integrations.py --only batched`` runs end to end at tiny settings (timings are not checked)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")
pytest.importorskip("torchrl")

ROOT = Path(__file__).resolve().parents[1]


def test_bench_integrations_measures_each_librarys_one_game_and_batched_routes(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_integrations.py"),
            *("--only", "batched", "--seconds", "0.5", "--rounds", "1", "--num-envs", "4"),
            *("--libraries", "gymnasium,sb3,torchrl"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    for library in ("gymnasium", "sb3", "torchrl"):
        row = re.search(
            rf"^\| {library} \| .+ \| ([\d,]+) \| ([\d,]+) \| ([\d.]+)× \(min [\d.]+\) \| ([\d.]+)% \|$",
            done.stdout,
            re.M,
        )
        assert row, done.stdout
        one, batched, ratio, share = (float(x.replace(",", "")) for x in row.groups())
        assert one > 0 and batched > 0 and ratio > 0 and 0 < share < 100
    assert list(tmp_path.iterdir()) == []


def test_bench_integrations_measures_sb3_learn_on_both_routes_side_by_side(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_integrations.py"),
            *("--only", "sb3-learn", "--libraries", "sb3", "--rounds", "1"),
            *("--sb3-envs", "2,4", "--sb3-rollouts", "1", "--sb3-rollout-size", "16"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    rows = re.findall(
        r"^\| three (random|heuristic) \| (\d+) \| ([\d,]+) \| ([\d,]+) \| ([\d.]+)× \(min [\d.]+\) \|$",
        done.stdout,
        re.M,
    )
    assert [(opponent, int(envs)) for opponent, envs, *_ in rows] == [
        (opponent, envs) for opponent in ("random", "heuristic") for envs in (2, 4)
    ], done.stdout
    assert all(float(x.replace(",", "")) > 0 for row in rows for x in row[2:])
    assert list(tmp_path.iterdir()) == []


def test_the_declared_agent_plugins_resolve_their_names_and_refuse_others():
    from importlib.metadata import EntryPoint

    from cockroach_env import GameConfig
    from cockroach_env.vector.opponents import GROUP, agent_sources

    config = GameConfig(num_players=4)
    declared = agent_sources()
    assert set(declared) == {"baselines", "checkpoints"} and all(isinstance(p, EntryPoint) for p in declared.values())
    assert all(point.group == GROUP for point in declared.values())
    make, load = declared["baselines"].load(), declared["checkpoints"].load()
    assert make("honest", config=config, seed=1).name == "honest"
    assert load("classic-4p", config=config, seed=1).config == config
    for resolver in (make, load):
        with pytest.raises(ValueError, match="nobody"):
            resolver("nobody", config=config, seed=None)


def test_bench_integrations_measures_the_multi_agent_torchrl_env_beside_the_single_learner_one(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_integrations.py"),
            *("--only", "torchrl-marl", "--libraries", "torchrl", "--seconds", "0.5", "--rounds", "1"),
            *("--num-envs", "4"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    row = re.search(r"^\| 4 \| ([\d,]+) \| ([\d,]+) \| ([\d.]+)× \(min [\d.]+\) \|$", done.stdout, re.M)
    assert row, done.stdout
    single, every_seat, ratio = (float(x.replace(",", "")) for x in row.groups())
    assert single > 0 and every_seat > 0 and ratio > 0
    assert list(tmp_path.iterdir()) == []
