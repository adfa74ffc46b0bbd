"""The module paths of the flat layout (``training.ppo``, ``training.checkpoint``, ...), kept importable.

The package is split by role (``core``, ``algorithms``, ``evaluation``, ``cli``); users and the docs
still write the old paths. ``ALIASES`` maps each old path to its module; the finder that
``training/__init__.py`` puts on ``sys.meta_path`` answers an old path with the module itself, so
``training.checkpoint is training.core.checkpoint``: one module object, one set of globals (a
monkeypatch through either name is seen by both). ``python -m OLD`` runs the command line that the
old module used to run (``COMMANDS``), e.g. ``python -m training.checkpoint NAME``.

The paths that CONTRIBUTING promises (``STABLE``) stay; every other old path is deprecated: importing
it (or running it with ``python -m``) warns with a ``DeprecationWarning`` that names the new path, and
version ``REMOVED_IN`` removes it. The project's own code imports the real modules (``tests/test_layers.py``).

Nothing here imports torch or any module of the package until an old path is imported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import CodeType, ModuleType

ALIASES = {
    "training.arguments": "training.core.arguments",
    "training.checkpoint": "training.core.checkpoint",
    "training.config": "training.core.config",
    "training.distributed": "training.core.distributed",
    "training.kernels": "training.core.kernels",
    "training.learner": "training.core.learner",
    "training.mixture": "training.core.mixture",
    "training.model": "training.core.model",
    "training.output_paths": "training.core.output_paths",
    "training.update_process": "training.core.update_process",
    "training.cfr": "training.algorithms.cfr",
    "training.cfr_solver": "training.algorithms.cfr_solver",
    "training.descent": "training.algorithms.descent",
    "training.distill": "training.algorithms.distill",
    "training.meta_solvers": "training.algorithms.meta_solvers",
    "training.nfsp": "training.algorithms.nfsp",
    "training.ppo": "training.algorithms.ppo",
    "training.psro": "training.algorithms.psro",
    "training.arena": "training.evaluation.arena",
    "training.edge": "training.evaluation.edge",
    "training.exact": "training.evaluation.exact",
    "training.game_saving": "training.evaluation.game_saving",
    "training.ratings": "training.evaluation.ratings",
    "training.report": "training.evaluation.report",
    "training.sb3_agent": "training.evaluation.sb3_agent",
    # the command line of cockroach-exploit, which also imports the library part (train_start, FROZEN, ...)
    "training.exploitability": "training.cli.exploit",
    "training.eval_cli": "training.cli.eval",
    "training.mixture_cli": "training.cli.mixture",
}
"""``{old module path: the module it now is}``; ``training.cli`` (now the package of command lines)
keeps ``main`` and ``python -m training.cli`` itself."""

STABLE = frozenset({"training.checkpoint", "training.arena", "training.exact"})
"""The old paths that CONTRIBUTING promises to keep (with ``training.load_agent``): no warning."""
REMOVED_IN = "0.5.0"
"""The version that removes the deprecated old paths (every alias not in ``STABLE``)."""


def warn_if_deprecated(old: str) -> None:
    """Warn (``DeprecationWarning``, at the importing code) that ``old`` is deprecated, naming its new path."""
    if old in ALIASES and old not in STABLE:
        warnings.warn(
            f"{old} is deprecated and will be removed in version {REMOVED_IN}; use {ALIASES[old]}",
            DeprecationWarning,
            stacklevel=3,
        )


COMMANDS = {
    "training.checkpoint": "training.cli.checkpoint",
}
"""``{old module path: the command line that python -m OLD runs}``, where that is not the module itself."""


class _AliasLoader(importlib.abc.Loader):
    """Loads an old path as the module it now is (imported under its own name first)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.target_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self.target_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system set ``__spec__`` to the old path's spec; the module keeps its own.
        old = module.__spec__.name
        module.__spec__ = self.target_spec
        warn_if_deprecated(old)

    def get_code(self, fullname: str) -> CodeType | None:
        """The code that ``python -m OLD`` runs: the command line's module."""
        warn_if_deprecated(fullname)
        command = COMMANDS.get(fullname, self.target)
        spec = importlib.util.find_spec(command)
        return spec.loader.get_code(command)


class AliasFinder(importlib.abc.MetaPathFinder):
    """Finds the old module paths of ``ALIASES``; every other name is left to the other finders."""

    def find_spec(self, fullname: str, path=None, target=None) -> importlib.machinery.ModuleSpec | None:
        """A spec whose loader returns the module ``ALIASES[fullname]``, or None for any other name."""
        new = ALIASES.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, AliasFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder())
