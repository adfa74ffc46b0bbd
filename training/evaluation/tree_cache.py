"""The exact game trees on disk: built once per rule set and version of the game's code, then loaded.

Expanding every deal and move sequence of ``mini`` takes seconds (``exact.build_tree``), and
every process that computes an exact NashConv (``cockroach-exploit --exact``, the solvers,
the benchmarks) needs the tree again. ``load_or_build`` keeps each tree as a pickle under
the cache directory, named by a digest of the rule set and of the source of everything the
tree is made from (the ``cockroach_env`` package and the tree builder), so any change to
the game's code builds it anew. A file that cannot be read is rebuilt; one that cannot be
written is skipped.

The directory is ``COCKROACH_CACHE_DIR`` where set, else ``$XDG_CACHE_HOME/cockroach-poker-rl``
(``~/.cache/cockroach-poker-rl``), with the trees under ``trees/``. ``COCKROACH_CACHE_DIR=off``
turns the disk cache off. The files are pickles: like the package's own code, the cache
directory is trusted, so keep it yours.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import cockroach_env
from cockroach_env.config import GameConfig

OFF = "off"
"""``COCKROACH_CACHE_DIR`` value that turns the disk cache off."""


def cache_dir() -> Path | None:
    """Where the trees are kept, or None with the cache turned off."""
    configured = os.environ.get("COCKROACH_CACHE_DIR")
    if configured is not None:
        return None if configured.strip().lower() == OFF else Path(configured).expanduser() / "trees"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "cockroach-poker-rl" / "trees"


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of the source that a tree is made from: every module of ``cockroach_env`` and the tree builder."""
    digest = hashlib.sha256()
    package = Path(cockroach_env.__file__).parent
    sources = sorted(package.rglob("*.py")) + [Path(__file__).with_name("exact.py")]
    for path in sources:
        digest.update(str(path.relative_to(package.parent)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def tree_path(config: GameConfig) -> Path | None:
    """The file of ``config``'s tree (None with the cache turned off)."""
    folder = cache_dir()
    if folder is None:
        return None
    key = hashlib.sha256(f"{code_digest()}\n{config!r}".encode()).hexdigest()[:32]
    return folder / f"tree-{key}.pickle"


def load_or_build(config: GameConfig, build: Callable[[GameConfig], Any]) -> Any:
    """``config``'s tree from the cache, or ``build(config)`` stored there for next time."""
    path = tree_path(config)
    if path is not None and path.is_file():
        try:
            with open(path, "rb") as handle:
                tree = pickle.load(handle)
            if getattr(tree, "config", None) == config:
                return tree
        except Exception:  # noqa: BLE001 - a truncated or foreign file: build the tree again
            pass
    tree = build(config)
    if path is not None:
        _store(path, tree)
    return tree


def _store(path: Path, tree: Any) -> None:
    """Write ``tree`` to ``path`` atomically (a reader gets a whole file or none); skip what cannot be written."""
    temporary: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".tree-", delete=False) as handle:
            temporary = Path(handle.name)
            pickle.dump(tree, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
    except OSError:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
