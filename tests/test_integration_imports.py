"""The adapters import their library lazily: importing the env or the integrations package imports none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "ray",
    "torch",
    "tianshou",
    "torchrl",
    "tensordict",
    "stable_baselines3",
    "sb3_contrib",
    "baselines",
    "training",
)


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.mark.parametrize(
    "statement",
    [
        "import cockroach_env",
        "import cockroach_env.integrations",
        "import cockroach_env.integrations.sb3",
        "import cockroach_env.vector",
    ],
)
def test_importing_the_env_and_the_integrations_package_imports_no_library(statement):
    loaded = _modules_after(statement)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
