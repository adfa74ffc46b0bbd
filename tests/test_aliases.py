"""The module paths of the flat layout still import, as the very modules of the new one, and
``python -m OLD`` still runs the command line the docs name (``training._aliases``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from training._aliases import ALIASES, COMMANDS, REMOVED_IN, STABLE

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}


def _python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=120)


def test_every_old_path_imports_as_its_new_module_in_a_fresh_interpreter():
    code = "\n".join(
        [
            "import importlib, sys",
            "import training",
            "assert 'torch' not in sys.modules, 'import training imported torch'",
            f"aliases = {ALIASES!r}",
            "for old, new in aliases.items():",
            "    module = importlib.import_module(old)",
            "    assert module is importlib.import_module(new), (old, new)",
            "    assert module.__name__ == new and module.__spec__.name == new, (old, module.__spec__)",
            "    assert sys.modules[old] is module and getattr(training, old.split('.')[1]) is module, old",
            "import training.psro as psro",
            "from training.checkpoint import load_agent, read_metadata",
            "from training.cli import main",
            "import training.cli.train",
            "assert psro is training.algorithms.psro and main is training.cli.train.main",
            "assert load_agent is training.load_agent is training.core.checkpoint.load_agent",
            "assert read_metadata('mini')['kind'] == 'agent'",
            "print('ok')",
        ]
    )
    result = _python("-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_a_deprecated_old_path_warns_naming_its_new_path_and_a_promised_one_stays_quiet():
    """CONTRIBUTING promises ``training.checkpoint``, ``training.arena``, ``training.exact`` (``STABLE``); every other
    old path warns once, at the importing line, with the new path and the version that removes it.
    """
    code = "\n".join(
        [
            "import importlib, warnings",
            "import training",
            f"aliases, stable = {ALIASES!r}, {sorted(STABLE)!r}",
            "for old, new in aliases.items():",
            "    with warnings.catch_warnings(record=True) as caught:",
            "        warnings.simplefilter('always')",
            "        importlib.import_module(old)",
            "    messages = [str(w.message) for w in caught if w.category is DeprecationWarning]",
            "    if old in stable:",
            "        assert messages == [], (old, messages)",
            "    else:",
            f"        expected = f'{{old}} is deprecated and will be removed in version {REMOVED_IN}; use {{new}}'",
            "        assert messages == [expected], (old, messages)",
            "with warnings.catch_warnings(record=True) as caught:",
            "    warnings.simplefilter('always')",
            "    exec(compile('import training.ppo', 'user_script.py', 'exec'))",
            "    importlib.import_module('training.algorithms.ppo')",
            "assert caught == [], 'an old path warns only when first imported'",
            "print('ok')",
        ]
    )
    result = _python("-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert len(STABLE) == 3 and STABLE < set(ALIASES)
    promise = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert all(f"`{old}`" in promise for old in STABLE), "STABLE is what CONTRIBUTING promises"


def test_importing_a_deprecated_path_points_the_warning_at_the_importing_line(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text("import training.psro\n", encoding="utf-8")
    result = _python("-W", "always::DeprecationWarning", str(script))
    assert result.returncode == 0, result.stderr
    assert f"{script}:1: DeprecationWarning: training.psro is deprecated" in result.stderr
    assert "use training.algorithms.psro" in result.stderr


@pytest.mark.filterwarnings("ignore:training\\..* is deprecated:DeprecationWarning")  # (the old path is what it tests)
def test_a_monkeypatch_through_an_old_path_is_seen_through_the_new_one(monkeypatch):
    import training.ppo

    import training.algorithms.ppo

    monkeypatch.setattr(training.ppo, "AGENT_NAME", "patched")
    assert training.algorithms.ppo.AGENT_NAME == "patched"


@pytest.mark.filterwarnings("ignore:training\\..* is deprecated:DeprecationWarning")  # (the old path is what it tests)
def test_the_old_console_script_entry_points_still_resolve():
    """An install made before the split names ``training.cli:main``, ``training.eval_cli:main``, ... ."""
    import importlib

    import training.algorithms.best_response
    import training.cli.eval
    import training.cli.exploit
    import training.cli.mixture
    import training.cli.train
    import training.evaluation.exploitability as library

    for old, new in [
        ("training.cli", training.cli.train),
        ("training.eval_cli", training.cli.eval),
        ("training.exploitability", training.cli.exploit),
        ("training.mixture_cli", training.cli.mixture),
    ]:
        assert importlib.import_module(old).main is new.main, old
    old = importlib.import_module("training.exploitability")
    assert old.train_start is training.algorithms.best_response.train_start and old.FROZEN == library.FROZEN


def test_an_unknown_old_path_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        __import__("training.no_such_module")


@pytest.mark.parametrize(
    "module, usage",
    [
        ("training.checkpoint", "usage: python -m training.checkpoint"),
        ("training.exploitability", "usage: cockroach-exploit"),
        ("training.eval_cli", "usage: cockroach-eval"),
        ("training.mixture_cli", "usage: cockroach-mixture"),
        ("training.cli", "usage: cockroach-train"),
    ],
)
def test_python_dash_m_of_an_old_path_runs_its_command_line(module, usage):
    assert module in ALIASES or module in COMMANDS or module == "training.cli"
    result = _python("-m", module, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(usage), result.stdout[:200]
    assert "Warning" not in result.stderr, result.stderr


def test_python_dash_m_training_checkpoint_describes_a_shipped_checkpoint_and_prints_its_metadata():
    result = _python("-m", "training.checkpoint", "mini")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("mini\n") and "$ cockroach-train --config configs/cfr_mini.yaml" in result.stdout
    result = _python("-m", "training.checkpoint", "mini", "--json")
    assert result.returncode == 0, result.stderr
    assert '"format": "cockroach-poker-checkpoint"' in result.stdout


def test_python_dash_m_training_checkpoint_refuses_a_missing_checkpoint_by_name():
    result = _python("-m", "training.checkpoint", "no-such-checkpoint")
    assert result.returncode == 1
    assert "no-such-checkpoint" in result.stderr
