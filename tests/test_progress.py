"""Progress on a terminal is a bar redrawn in place; anywhere else (a log file, a CI job's captured output) it is a
plain line at a modest interval, never one line of carriage returns.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from training.core.progress import PlainProgress, progress_bar

ROOT = Path(__file__).resolve().parents[1]


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_plain_bar_prints_a_line_per_interval_and_one_at_the_end():
    stream, clock = io.StringIO(), Clock()
    bar = PlainProgress(1000, "dec", stream=stream, interval=30, clock=clock)
    for _ in range(100):  # 100 updates over 99 seconds: lines at 30, 60 and 90 s
        bar.update(10)
        clock.now += 1
    bar.set_postfix_str("random 0.3%")
    bar.close()
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4 and "\r" not in stream.getvalue()
    assert lines[0].startswith("310/1,000 dec (31%)") and lines[-1].startswith("1,000/1,000 dec (100%)")
    assert lines[-1].endswith("; random 0.3%") and "0:01:40 elapsed" in lines[-1]


def test_progress_bar_is_plain_off_a_terminal_and_silent_when_disabled():
    stream = io.StringIO()
    assert isinstance(progress_bar(10, "dec", stream=stream), PlainProgress)
    silent = progress_bar(10, "dec", enabled=False, stream=stream)
    silent.update(10)
    silent.close()
    assert stream.getvalue() == ""


def test_a_run_whose_stderr_is_not_a_terminal_writes_whole_short_lines(tmp_path, capsys):
    pytest.importorskip("torch")
    from training.cli.train import main

    sets = [
        f"output_dir={tmp_path}",
        "name=logged",
        "ppo.num_envs=16",
        "ppo.num_steps=8",
        "model.hidden_sizes=[16]",
        "warm_start.decisions=200",
        "warm_start.num_envs=16",
        "warm_start.epochs=1",
        "schedule.total_decisions=512",
        "schedule.checkpoint_every=2",
        "evaluation.every=0",
        "evaluation.final_games=8",
    ]
    assert main(["--config", str(ROOT / "configs" / "quick.yaml"), *[a for s in sets for a in ("--set", s)]]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and max(map(len, err.splitlines())) < 300, err[-2000:]
    assert "512/512 dec (100%)" in err, err  # the run's line at the end
