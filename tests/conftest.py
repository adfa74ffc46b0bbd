"""Shared move builders and checks for the rules, environment and property tests.

Moves read like the rulebook: ``offer("fly", to=1, says="bat")``, ``call(True)``,
``peek()``, ``pass_to(2, says="fly")``; seats are given as numbers and turned into
agent names here.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from cockroach_env import Move, raw_env

CLASSIC_PRESETS = (
    "classic",
    "even-deal",
    "rainbow",
    "three-of-a-kind",
    "creature-to-start",
    "rainbow+even-deal",
    "three-of-a-kind+creature-to-start",
    "rainbow+creature-to-start+even-deal",
)
ROYAL_PRESETS = ("royal",)


def rule_sets(presets=CLASSIC_PRESETS + ROYAL_PRESETS) -> list:
    """``(preset, num_players)`` params for every rule set and allowed player count."""
    params = []
    for preset in presets:
        for n in range(2, 7):
            if "three-of-a-kind" in preset and n == 2:
                continue
            params.append(pytest.param(preset, n, id=f"{preset}-{n}p"))
    return params


def agent(seat: int) -> str:
    return f"player_{seat}"


def offer(card: str, to: int, says: str) -> Move:
    return Move("offer", card=card, target=agent(to), claim=says)


def call(believe: bool) -> Move:
    return Move("call", believe=believe)


def peek() -> Move:
    return Move("peek")


def pass_to(to: int, says: str) -> Move:
    return Move("pass", target=agent(to), claim=says)


def dealt_env(hands: dict, collections: dict | None = None, starter: int = 0, **config) -> raw_env:
    """A raw env reset to an explicit deal; ``hands``/``collections`` are ``{seat: {type: count}}``.

    The player count defaults to the highest seat in ``hands`` plus one.
    """
    config.setdefault("num_players", max(hands) + 1)
    env = raw_env(**config)
    options = {"starter": agent(starter), "hands": {agent(s): h for s, h in hands.items()}}
    if collections:
        options["collections"] = {agent(s): c for s, c in collections.items()}
    env.reset(seed=0, options=options)
    return env


def play(env, *moves: Move) -> None:
    """Play ``moves`` in order, each by the agent to act."""
    for move in moves:
        env.step(env.unwrapped.encode(move))


def legal_actions(env) -> np.ndarray:
    return np.flatnonzero(env.observe(env.agent_selection)["action_mask"])


def play_random(env, rng: np.random.Generator, max_steps: int = 100_000) -> list[int]:
    """Play uniformly random legal actions until the game ends (or ``max_steps``); returns the actions."""
    actions = []
    while not env.unwrapped.game.over and len(actions) < max_steps:
        action = int(rng.choice(legal_actions(env)))
        env.step(action)
        actions.append(action)
    return actions


# ---------------------------------------------------------------------------- CI: no silent skips
# `.ci/run` installs every extra and Chromium, so there a test skipped for a missing
# library or browser is a broken install, not a choice: COCKROACH_NO_SKIPS=1 turns such a
# skip into a failure. Skips that depend on the hardware (CUDA) stay skips.
HARDWARE_SKIPS = ("CUDA",)


def _no_silent_skip(report) -> None:
    if (
        os.environ.get("COCKROACH_NO_SKIPS") == "1"
        and report.skipped
        and not any(word in str(report.longrepr) for word in HARDWARE_SKIPS)
    ):
        report.outcome = "failed"
        report.longrepr = f"skipped where every extra is installed (COCKROACH_NO_SKIPS=1): {report.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _no_silent_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _no_silent_skip(outcome.get_result())


# ---------------------------------------------------------------------------- CI: two cores
# The README's test command runs the suite over every core with pytest-xdist (`-n auto`;
# pyproject.toml adds `--dist loadgroup`). Each test module is one group, kept on one
# worker, so a module-scoped fixture (a trained checkpoint, a started server) is built once
# and not once per worker. The modules that start a local Ray cluster (directly, through
# training.core.distributed, or in a documented recipe they run) share one group, so only one
# cluster runs at a time: each would claim every CPU and a share of memory for its object
# store. tests/test_ci.py checks that this list names every such module.
RAY_MODULES = ("test_psro.py", "test_integration_rllib.py", "test_integration_docs.py", "test_rollout_workers.py")


@pytest.fixture(scope="module")
def ray_cluster():
    """One local Ray cluster of 2 CPUs for a module's Ray tests (``--ray``, the executors and the rollout workers use
    it).
    """
    pytest.importorskip("ray")
    from training.core.distributed import executor

    workers = executor("local", num_cpus=2)
    yield workers
    workers.close()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if not any(mark.name == "xdist_group" for mark in item.iter_markers()):
            module = item.path.name
            item.add_marker(pytest.mark.xdist_group("ray" if module in RAY_MODULES else module))


# ---------------------------------------------------------------------------- CI: the hostile suite's counts
# The hostile files try bad inputs as a careless or malicious user would. Each case passes only if the input got a
# clear, named error (or was handled as documented) and nothing changed; the summary at the end of every run counts
# them by area, and a failed case by how it failed: no error at all (a silent acceptance) or another exception (a
# crash). docs/reliability.md quotes these counts.
HOSTILE_FILES = {
    "test_hostile_env.py": "rule options, PettingZoo env",
    "test_hostile_batched.py": "batched engine",
    "test_hostile_checkpoints.py": "checkpoints",
    "test_hostile_runs.py": "training runs",
    "test_hostile_cli.py": "command lines",
    "test_play_guard.py": "web server",
    "test_play_replay.py": "replay pages",
}


def hostile_counts(reports) -> dict[str, dict[str, int]]:
    """``{area: {"cases", "passed", "silent acceptances", "crashes"}}`` of the hostile files' test reports."""
    counts = {
        area: dict.fromkeys(("cases", "passed", "silent acceptances", "crashes"), 0) for area in HOSTILE_FILES.values()
    }
    for report in reports:
        area = HOSTILE_FILES.get(report.nodeid.split("::")[0].rsplit("/", 1)[-1])
        if area is None or report.when != "call" and report.passed:
            continue
        row = counts[area]
        row["cases"] += 1
        if report.passed:
            row["passed"] += 1
        elif "DID NOT RAISE" in str(report.longrepr):
            row["silent acceptances"] += 1
        else:
            row["crashes"] += 1
    return counts


def pytest_terminal_summary(terminalreporter):
    reports = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])]
    counts = {area: row for area, row in hostile_counts(reports).items() if row["cases"]}
    if not counts:
        return
    terminalreporter.section("hostile suite")
    for area, row in counts.items():
        terminalreporter.write_line(
            f"{area}: {row['cases']} inputs tried, {row['passed']} clear errors or documented handling, "
            f"{row['silent acceptances']} silent acceptances, {row['crashes']} crashes"
        )


@pytest.fixture(autouse=True, scope="session")
def _sb3_logs_in_a_temporary_folder(tmp_path_factory):
    """Stable-Baselines3 makes a log folder for every ``learn()`` (``$SB3_LOGDIR``, else ``/tmp/SB3-<date>``): keep
    the suite's inside pytest's temporary folders, including the recipes run as subprocesses.
    """
    previous = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3_logs"))
    yield
    if previous is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = previous
