"""Progress bars that suit where they are written.

On a terminal, ``progress_bar`` is a tqdm bar, redrawn in place. Anywhere else (a log file, a pipe, a CI job's
captured output) a bar redrawn with carriage returns becomes one line of hundreds of thousands of characters, so
``PlainProgress`` prints a plain line instead, at most every ``PLAIN_INTERVAL`` seconds and once at the end:

    <done>/<total> dec (<share>%), <rate> dec/s, <h:mm:ss> elapsed; <the bar's postfix, e.g. the last evaluation>
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

PLAIN_INTERVAL = 30.0
"""Seconds between two plain progress lines (a run of an hour writes about 120)."""


def progress_bar(
    total: int,
    unit: str,
    enabled: bool = True,
    initial: int = 0,
    stream: TextIO | None = None,
    interval: float = PLAIN_INTERVAL,
    **tqdm_options: Any,
):
    """A tqdm bar on a terminal, a ``PlainProgress`` elsewhere, a silent bar when not ``enabled``; all take
    ``update``, ``set_description``, ``set_postfix_str`` and ``close`` (and ``with``).
    """
    from tqdm import tqdm

    stream = sys.stderr if stream is None else stream
    if not enabled:
        return tqdm(total=total, disable=True)
    if _is_terminal(stream):
        return tqdm(total=total, initial=initial, unit=unit, file=stream, **tqdm_options)
    return PlainProgress(total, unit, initial, stream, interval)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # (no isatty, or a closed stream)
        return False


class PlainProgress:
    """Progress as whole lines: one at most every ``interval`` seconds while it advances, and one at ``close``."""

    def __init__(
        self,
        total: int,
        unit: str,
        initial: int = 0,
        stream: TextIO | None = None,
        interval: float = PLAIN_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total, self.unit, self.n, self.initial = total, unit, initial, initial
        self.stream = sys.stderr if stream is None else stream
        self.interval, self.clock = interval, clock
        self.description = self.postfix = ""
        self.started = self.printed = clock()
        self.closed = False

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.clock() - self.printed >= self.interval:
            self._print()

    def set_description(self, text: str) -> None:
        self.description = text

    def set_postfix_str(self, text: str) -> None:
        self.postfix = text

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.n != self.initial:
                self._print()

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def line(self) -> str:
        """The progress line: done of total (share), rate, time elapsed, description and postfix."""
        elapsed = max(self.clock() - self.started, 1e-9)
        share = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        rate = (self.n - self.initial) / elapsed
        minutes, seconds = divmod(int(elapsed), 60)
        text = (
            f"{self.n:,}/{self.total:,} {self.unit}{share}, {rate:,.0f} {self.unit}/s, "
            f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d} elapsed"
        )
        return (
            (f"{self.description}: " if self.description else "") + text + (f"; {self.postfix}" if self.postfix else "")
        )

    def _print(self) -> None:
        self.printed = self.clock()
        print(self.line(), file=self.stream, flush=True)
