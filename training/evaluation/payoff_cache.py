"""Played tables by content, for ``cockroach-mixture --payoff-cache`` (``training.cli.mixture``): a network's
identity (``model_digest``), a table's seed from what it plays (``content_seed``) and the cache file itself
(``PayoffCache``), which builds of one rule set share.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from training.core import checkpoint as ckpt

PAYOFF_CACHE_FORMAT = "cockroach-poker-payoff-cache"


def model_digest(model) -> str:
    """The SHA-256 of a network's weights (names, dtypes, shapes and values): its identity in a payoff cache, wherever
    it was loaded from.
    """
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        array = tensor.detach().cpu().contiguous().numpy()
        digest.update(f"{name}|{array.dtype}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def content_seed(seed: int, *parts: Any) -> int:
    """A table's seed from ``--seed`` and what it plays (digests, names), not from the order of the command's
    arguments.
    """
    return int.from_bytes(hashlib.sha256("|".join(map(str, (seed, *parts))).encode()).digest()[:8], "little") % 2**31


class PayoffCache:
    """Played tables by content (``--payoff-cache``): key -> ``[seat_games, losses]`` of the player the key names.

    A key holds every digest, the game count and the seed of its table, so a cached table is exactly the one the command
    would play; one file serves every later build of the same rule set. ``path=None`` caches nothing.
    """

    def __init__(self, path: str | Path | None, game) -> None:
        self.path = None if path is None else Path(path)
        self.game = game.to_dict()
        self.entries: dict[str, list[int]] = self._read() if self.path is not None else {}
        self.hits = self.played = 0

    def _read(self) -> dict[str, list[int]]:
        """The entries of the file at ``path`` (none if it does not exist yet), each checked."""
        where = f"--payoff-cache {str(self.path)!r}"
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:  # (UnicodeDecodeError and JSONDecodeError are ValueErrors)
            raise ValueError(
                f"{where} cannot be read as a payoff cache ({error}); expected a JSON file written by "
                f"cockroach-mixture, or a path that does not exist yet"
            ) from None
        if (
            not isinstance(data, dict)
            or data.get("format") != PAYOFF_CACHE_FORMAT
            or not isinstance(data.get("entries"), dict)
        ):
            raise ValueError(
                f"{where} is not a payoff cache (format "
                f"{data.get('format') if isinstance(data, dict) else type(data).__name__!r}); expected format "
                f"{PAYOFF_CACHE_FORMAT!r} with an 'entries' object"
            )
        if data.get("game_config") != self.game:
            raise ValueError(
                f"{where} holds tables of {data.get('game_config')}, but the members play {self.game}; "
                f"expected a cache of one rule set: choose another path"
            )
        for key, value in data["entries"].items():
            if not (
                isinstance(value, list)
                and len(value) == 2
                and all(type(v) is int for v in value)
                and 0 <= value[1] <= value[0]
            ):
                raise ValueError(
                    f"{where}: entry {key!r} is {value!r}; expected [seat_games, losses] with 0 <= losses <= seat_games"
                )
        return data["entries"]

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def served(self, key: str) -> tuple[int, int]:
        """The cached ``(seat_games, losses)`` of ``key``, counted as reused."""
        self.hits += 1
        games, losses = self.entries[key]
        return games, losses

    def record(self, key: str, seat_games: int, losses: int) -> None:
        """A table just played."""
        self.entries[key] = [int(seat_games), int(losses)]
        self.played += 1

    def save(self) -> None:
        """Write the entries, merged with those other builds saved to the file since it was read.

        Builds that share one cache (two ``cockroach-mixture`` commands at once) each keep what the other played: the
        file is re-read and merged under an exclusive lock on a sidecar ``.lock`` file (POSIX ``flock``), then replaced
        atomically. A key names its table's content and seed, so two builds that both played it hold the same result.
        If the file was replaced by something that is not this rule set's cache, nothing is written and the error says
        so.
        """
        if self.path is None:
            return
        with _exclusive_lock(self.path.parent / f".{self.path.name}.lock"):
            merged = {**self._read(), **self.entries}
            text = json.dumps(
                {"format": PAYOFF_CACHE_FORMAT, "game_config": self.game, "entries": merged}, indent=0, sort_keys=True
            )
            ckpt.write_file_atomically(self.path, text.encode())
        self.entries = merged


@contextlib.contextmanager
def _exclusive_lock(path: Path):
    """Hold an exclusive advisory lock on ``path`` (created if missing) for the ``with`` block; a no-op where ``fcntl``
    is missing (Windows).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
