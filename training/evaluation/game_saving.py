"""``cockroach-eval --save-games N DIR``: the first ``N`` games of a match as game records.

The arena tells a ``GameSaver`` every decision it takes (``play_match(on_decisions=...)``);
after the match each saved game is rebuilt on the AEC env from its deal and those
actions (``cockroach_env.record``, which checks that every action was legal and the
game ended) and written as ``DIR/game-00000.json``. These are the very games the
statistics count, on either engine. ``cockroach-replay`` turns one into a page.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.env import raw_env
from cockroach_env.record import deal_of, game_record, save_record

RECORD_NAME = re.compile(r"game-\d{5,}\.json")
"""The file name of a saved game (``game-00000.json``, ...)."""


class GameSaver:
    """Writes the games of a match as replayable game records (``cockroach-eval --save-games``)."""

    def __init__(self, count: Any, directory: str, replace: bool = False):
        """Saves the first ``count`` games of a match in ``directory``; earlier game records there are refused unless
        ``replace``.
        """
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(f"--save-games count {count!r} is not allowed; expected a positive integer")
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise ValueError(
                f"--save-games directory {directory!r} is a file; expected a directory (it is created if missing)"
            )
        parent = os.path.dirname(os.path.abspath(directory))
        if not os.path.isdir(parent):
            raise ValueError(f"--save-games directory {directory!r}: its parent {parent!r} does not exist")
        if not os.access(directory if os.path.isdir(directory) else parent, os.W_OK):
            raise ValueError(f"--save-games directory {directory!r} is not writable")
        earlier = (
            sorted(name for name in os.listdir(directory) if RECORD_NAME.fullmatch(name))
            if os.path.isdir(directory)
            else []
        )
        if earlier and not replace:
            shown = ", ".join(earlier[:3]) + (", ..." if len(earlier) > 3 else "")
            raise ValueError(
                f"--save-games directory {directory!r} already holds {len(earlier)} game records ({shown}); "
                f"pass --overwrite to replace them, or choose another directory"
            )
        self.count = int(count)
        self.directory = directory
        self.actions: dict[int, list[int]] = {}

    def __call__(self, games: np.ndarray, actions: np.ndarray) -> None:
        for game, action in zip(games.tolist(), actions.tolist()):
            if game < self.count:
                self.actions.setdefault(game, []).append(int(action))

    def write(self, result: Any) -> list[str]:
        """Write the saved games of ``result`` (the match they were recorded from); returns the paths."""
        from training.evaluation.arena import deal_for, reset_options, schedule, seat_entries

        config: GameConfig = result.config
        n = config.num_players
        os.makedirs(self.directory, exist_ok=True)
        paths = []
        for scheduled in schedule(n, result.games, result.duplicate)[: self.count]:
            env = raw_env(config=config)
            env.reset(options=reset_options(deal_for(config, result.seed, scheduled.deal), config, env.possible_agents))
            deal = deal_of(env)
            actions = self.actions.get(scheduled.index, [])
            for action in actions:
                env.step(action)
            entries = seat_entries(n, scheduled.rotation)
            players = {agent: result.lineup[entries[seat]] for seat, agent in enumerate(env.possible_agents)}
            meta = {
                "source": "cockroach-eval",
                "game": scheduled.index,
                "deal": scheduled.deal,
                "rotation": scheduled.rotation,
                "seed": result.seed,
                "engine": result.engine,
            }
            path = os.path.join(self.directory, f"game-{scheduled.index:05d}.json")
            save_record(game_record(env, deal, actions, players, meta), path)
            paths.append(path)
        return paths
