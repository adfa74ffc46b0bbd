"""Command lines name bad input before doing any work:
``cockroach-eval`` and ``cockroach-exploit`` output paths, counts and lineups.
"""

from __future__ import annotations

import pytest

from training.cli.eval import main as evaluate

pytest.importorskip("torch")


def _a_checkpoint(tmp_path):
    """A saved checkpoint's metadata file: a report written there would destroy the checkpoint."""
    from training.core import checkpoint as ckpt

    source = ckpt.load_checkpoint("classic-2p")
    return ckpt.save_checkpoint(
        tmp_path / "saved",
        {k: v for k, v in source.tensors.items()},
        {k: v for k, v in source.metadata.items() if k not in ("tensors", "format", "format_version")},
    )


def _eval_paths(tmp_path):
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "a_file").write_text("x")
    return [
        (
            ["--json", str(_a_checkpoint(tmp_path))],
            "is the metadata of a checkpoint; writing there would destroy the checkpoint",
        ),
        (["--json", str(tmp_path / "missing" / "x.json")], "does not exist"),
        (["--json", str(tmp_path / "a_dir")], "is a directory"),
        (["--json", str(tmp_path / "a_file" / "x.json")], "is not a directory"),
        (["--plot", str(tmp_path / "missing" / "x.png")], "does not exist"),
        (["--plot", str(tmp_path / "a_dir")], "is a directory"),
        (["--json", "/proc/x.json"], "cannot create a file"),
    ]


def test_eval_output_paths_are_checked_before_any_game(tmp_path, capsys, monkeypatch):
    import training.cli.eval as eval_cli

    monkeypatch.setattr(
        eval_cli, "play_match", lambda *a, **k: pytest.fail("games were played before the output path was checked")
    )
    for extra, fragment in _eval_paths(tmp_path):
        assert evaluate(["random", "heuristic", "--games", "4", *extra]) == 2
        err = capsys.readouterr().err
        assert fragment in err and "Traceback" not in err, (extra, err)


@pytest.mark.parametrize(
    "lineup, fragment",
    [
        (["random*abc"], "'random*abc'"),
        (["random*abc", "heuristic"], "'random*abc'"),
        (["random*", "heuristic"], "'random*'"),
        (["random*0", "heuristic"], "'random*0'"),
        (["random*-2", "heuristic"], "'random*-2'"),
        (["random"], "at least 2"),
        (["random*6", "random"], "num_players=7"),
        (["nobody", "random"], "'nobody'"),
    ],
)
def test_eval_names_the_bad_lineup_entry(capsys, lineup, fragment):
    assert evaluate([*lineup, "--games", "4", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err, err


def test_eval_writes_json_and_plot_where_asked(tmp_path):
    assert (
        evaluate(
            [
                "random",
                "heuristic",
                "--games",
                "4",
                "--quiet",
                "--json",
                str(tmp_path / "r.json"),
                "--plot",
                str(tmp_path / "r.png"),
            ]
        )
        == 0
    )
    assert (tmp_path / "r.json").stat().st_size > 0 and (tmp_path / "r.png").stat().st_size > 0


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["--games", "0"], "--games: 0 is not allowed; expected an integer from 1 to 100,000,000"),
        (
            ["--games", "99999999999999"],
            "--games: 99999999999999 is not allowed; expected an integer from 1 to 100,000,000",
        ),
        (["--edge", "10000000000"], "--edge: 10000000000 is not allowed; expected an integer from 1 to 100,000,000"),
        (["--games", "-3"], "--games: -3 is not allowed"),
        (["--decisions", "0"], "--decisions: 0 is not allowed"),
        (["--games", "many"], "--games: 'many' is not an integer"),
        (["--history", "0"], "--history: 0 is not allowed; expected an integer >= 1"),
        (["--history", "eight"], "--history: 'eight' is not an integer"),
    ],
)
def test_exploit_counts_are_named_by_the_parser(capsys, extra, fragment):
    from training.cli.exploit import main as exploit

    with pytest.raises(SystemExit) as exit_:
        exploit(["classic-2p", *extra])
    assert exit_.value.code == 2 and fragment in capsys.readouterr().err


def test_exploit_paths_are_checked_before_training(tmp_path, capsys, monkeypatch):
    import training.algorithms.ppo
    from training.cli.exploit import main as exploit

    monkeypatch.setattr(
        training.algorithms.ppo, "train", lambda *a, **k: pytest.fail("trained before the output paths were checked")
    )
    (tmp_path / "a_file").write_text("x")
    saved = _a_checkpoint(tmp_path)
    before = saved.read_bytes()
    cases = [
        (["--json", str(saved)], "is the metadata of a checkpoint"),
        (["--json", str(tmp_path / "missing" / "x.json")], "does not exist"),
        (["--json", str(tmp_path)], "is a directory"),
        (["--output-dir", str(tmp_path / "a_file")], "a_file"),
        (["--output-dir", "/proc/no-such/runs"], "cannot write to the run directory"),
    ]
    for extra, fragment in cases:
        assert exploit(["classic-2p", "--decisions", "64", "--games", "4", *extra]) == 2
        err = capsys.readouterr().err
        assert fragment in err and "Traceback" not in err, (extra, err)
    assert saved.read_bytes() == before


def test_exploit_keeps_an_existing_report_unless_told_to_replace_it(tmp_path, capsys, monkeypatch):
    """A best response's report is minutes to hours of work: ``--json`` onto an existing file is refused before
    any training, ``--overwrite`` replaces it (with the run), and ``--json -`` goes to stdout, creating no file.
    """
    import json

    import training.algorithms.ppo
    from training.cli.exploit import main as exploit

    report = tmp_path / "exploit.json"
    report.write_text("mine")
    with monkeypatch.context() as patched:
        patched.setattr(
            training.algorithms.ppo,
            "train",
            lambda *a, **k: pytest.fail("trained before the report's path was checked"),
        )
        assert (
            exploit(
                [
                    "classic-2p",
                    "--decisions",
                    "64",
                    "--games",
                    "4",
                    "--output-dir",
                    str(tmp_path / "runs"),
                    "--json",
                    str(report),
                ]
            )
            == 2
        )
        assert exploit(["honest", "--exact", "--preset", "mini", "--json", str(report)]) == 2
    err = capsys.readouterr().err
    assert err.count(f"--json {report} already exists; pass --overwrite") == 2 and report.read_text() == "mine"
    assert not (tmp_path / "runs").exists()
    assert exploit(["honest", "--exact", "--preset", "mini", "--json", str(report), "--overwrite"]) == 0
    assert json.loads(report.read_text())["nash_conv"] > 0
    monkeypatch.chdir(tmp_path)
    assert exploit(["honest", "--exact", "--preset", "mini", "--json", "-"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("\n{") + 1 :])["nash_conv"] > 0 and not (tmp_path / "-").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exploit.json"]  # no temporary file left behind


# ---------------------------------------------------------------------------- config files and --set values


def _bomb(levels: int, width: int = 9) -> str:
    """A YAML "billion laughs": ``levels`` anchors, each ``width`` aliases of the one before."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def _config_cases(tmp_path):
    import os

    (tmp_path / "latin1.yaml").write_bytes(b"name: caf\xe9\n")
    (tmp_path / "bomb.yaml").write_text(_bomb(9))  # 9**9 strings: 50 s, then MemoryError, before
    (tmp_path / "small_bomb.yaml").write_text("seed: " + _bomb(4).replace("\n", " ", 0)[4:])
    (tmp_path / "big.yaml").write_text("# " + "x" * (2**20 + 1) + "\n")
    os.mkfifo(tmp_path / "fifo.yaml")
    return [
        (["--config", str(tmp_path / "latin1.yaml")], ["latin1.yaml", "not UTF-8", "0xe9"]),
        (["--config", str(tmp_path / "bomb.yaml")], ["bomb.yaml", "alias *a0 is not allowed"]),
        (["--config", str(tmp_path / "small_bomb.yaml")], ["small_bomb.yaml", "alias"]),
        (["--config", str(tmp_path / "big.yaml")], ["big.yaml", "MAX_CONFIG_BYTES=1048576"]),
        (["--config", str(tmp_path / "fifo.yaml")], ["fifo.yaml", "not a regular file"]),
        (["--set", "seed=[&a [1, 1], *a]"], ["seed='[&a [1, 1], *a]'", "expected an integer"]),
        (["--set", "seed=" + "9" * 100_000], ["seed=", "…(", "chars)"]),
        (["--set", "seed=" + "[" * 100_000], ["seed=", "…(", "chars)"]),
        (["--set", "seed=x" + "9" * 100_000], ["seed=", "…(", "chars)"]),
        (["--set", "model.hidden_sizes=[" + "1, " * 50_000 + "0]"], ["hidden_sizes=", "…(", "chars)"]),
        (["--set", "x" * 100_000 + "=1"], ["unknown key", "…(", "chars)"]),
        (["--set", "torch_threads=100000"], ["torch_threads=100000", "MAX_TORCH_THREADS=256"]),
        (["--set", "ppo.num_envs=1000000000000"], ["num_envs=1000000000000", "MAX_NUM_ENVS=1048576"]),
        (["--set", "ppo.num_envs=1048576", "--set", "ppo.num_steps=64"], ["MAX_ROLLOUT_DECISIONS=16777216"]),
        (["--set", "evaluation.games=1000000000000"], ["games=1000000000000", "100,000,000"]),
        (["--set", "evaluation.final_games=1000000000000"], ["final_games=1000000000000", "100,000,000"]),
    ]


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="FIFOs are POSIX")
def test_hostile_config_files_and_values_are_named_errors_of_bounded_length(tmp_path, capsys, monkeypatch):
    """Non-UTF-8 files, alias bombs, FIFOs and huge values: each is a short ``ConfigError``, in seconds, in both
    commands that read a training config (before: tracebacks, a MemoryError after 50 s, 8 MB error lines, a segfault).
    """
    import training.algorithms.ppo
    from training.cli.exploit import main as exploit
    from training.cli.train import main as train

    from .hostile import within

    monkeypatch.setattr(training.algorithms.ppo, "train", lambda *a, **k: pytest.fail("trained a refused config"))
    monkeypatch.chdir(tmp_path)
    for extra, fragments in _config_cases(tmp_path):
        commands = [lambda x=extra: train(x)]
        if extra[0] == "--config" or "torch_threads" in extra[1]:  # the file reader and a value, in both commands
            commands.append(lambda x=extra: exploit(["classic-2p", "--decisions", "64", *x]))
        for command in commands:
            with within(30, f"the config of {extra[:2]}"):
                assert command() == 2, extra[:2]
            err = capsys.readouterr().err
            assert "Traceback" not in err and len(err) < 1500, (extra[:2], err[:3000])
            for fragment in fragments:
                assert fragment in err, (fragment, err)
    assert not (tmp_path / "runs").exists()


def test_the_quoted_value_of_an_error_is_cut_with_its_length():
    from training.core.schema import QUOTE_LIMIT, quoted

    assert quoted("abc") == "'abc'"
    long = quoted("x" * 10_000)
    assert long.startswith("'xxx") and long.endswith("…(10002 chars)") and len(long) < QUOTE_LIMIT + 20


# ---------------------------------------------------------------------------- counts and thread counts


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["random", "random", "--games", "99999999999999999999"], "100,000,000"),
        (["random", "random", "--torch-threads", "100000"], "MAX_TORCH_THREADS=256"),
        (["random", "random", "--torch-threads", "-1"], "MAX_TORCH_THREADS=256"),
    ],
)
def test_eval_counts_are_bounded_by_the_parser(capsys, argv, fragment):
    with pytest.raises(SystemExit) as exit_:
        evaluate(argv)
    assert exit_.value.code == 2 and fragment in capsys.readouterr().err


@pytest.mark.parametrize(
    "lineup, fragment",
    [
        (["random*99999999999"], "the repeat count must be from 1 to 6"),
        (["random*7", "heuristic"], "'random*7': the repeat count must be from 1 to 6"),
        (["random", "random", "--option", "num_players=abc"], "num_players='abc'"),
        (["random", "random", "--option", "num_players=3", "--players", "2"], "--players 2"),
    ],
)
def test_eval_refuses_huge_lineups_and_a_player_count_it_would_override(capsys, lineup, fragment):
    from .hostile import within

    with within(30, f"cockroach-eval {lineup}"):
        assert evaluate([*lineup, "--games", "4", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err, err


def test_a_match_schedule_is_bounded():
    from training.evaluation.arena import ArenaError, schedule

    from .hostile import refused

    refused(lambda: schedule(2, 10**12), "games=1000000000000", "100,000,000", error=ArenaError)
    assert len(schedule(3, 4)) == 6


def test_eval_checks_the_plot_suffix_and_the_game_records_folder_before_any_game(tmp_path, capsys, monkeypatch):
    import training.cli.eval as eval_cli

    monkeypatch.setattr(
        eval_cli, "play_match", lambda *a, **k: pytest.fail("games were played before the outputs were checked")
    )
    cases = [
        (["--plot", str(tmp_path / "out.txt")], "matplotlib cannot write .txt"),
        (["--plot", str(tmp_path / "out")], "a file without a suffix"),
        (["--save-games", "1", "/proc/nope"], "cannot write game records there"),
    ]
    for extra, fragment in cases:
        assert evaluate(["random", "heuristic", "--games", "4", "--quiet", *extra]) == 2
        err = capsys.readouterr().err
        assert fragment in err and "'.png'" in err or "records" in err, err
        assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- option combinations and file modes


def test_train_refuses_resume_with_overwrite_before_touching_the_run(tmp_path, capsys):
    from training.cli.train import main as train

    run = tmp_path / "runs" / "mine"
    run.mkdir(parents=True)
    (run / "metrics.csv").write_text("kept")
    assert train(["--set", f"output_dir={tmp_path / 'runs'}", "--set", "name=mine", "--resume", "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert "--resume" in err and "--overwrite" in err and "not allowed" in err, err
    assert (run / "metrics.csv").read_text() == "kept"


def test_play_names_a_save_dir_that_is_a_file(tmp_path, capsys):
    pytest.importorskip("fastapi")
    from play.cli import main as play

    (tmp_path / "a_file").write_text("x")
    assert play(["--no-browser", "--save-dir", str(tmp_path / "a_file"), "--port", "18799"]) == 2
    err = capsys.readouterr().err
    assert "a_file" in err and "is a file; expected a directory" in err, err


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_logs_reports_and_checkpoints_follow_the_umask_as_normal_files_do(tmp_path, umask):
    import os
    import stat

    from training.core import checkpoint as ckpt
    from training.core.runs import prepare_csv

    previous = os.umask(umask)
    try:
        (tmp_path / "normal").write_text("x")
        prepare_csv(tmp_path / "metrics.csv", ["update"], None)
        ckpt.write_file_atomically(tmp_path / "report.json", b"{}")
        saved = _a_checkpoint(tmp_path)
    finally:
        os.umask(previous)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [*tmp_path.iterdir(), *ckpt.checkpoint_files(saved)]}
    assert set(modes.values()) == {0o666 & ~umask}, {k: oct(v) for k, v in modes.items()}


def test_every_thread_count_that_reaches_torch_is_bounded():
    import torch

    from training.core.distributed import use_torch_threads

    from .hostile import refused

    before = torch.get_num_threads()
    for threads in (100_000, -1, 2.5, True):
        refused(lambda t=threads: use_torch_threads(t), "MAX_TORCH_THREADS=256")
    assert torch.get_num_threads() == before


# ---------------------------------------------------------------------------- the warm start's teacher, cockroach-
# exploit's rules and history windows


def _history_agent(path, num_players: int = 4, history: int = 8):
    """A tiny agent checkpoint trained for a table with a ``history``-move window."""
    from cockroach_env import GameConfig
    from training.core import checkpoint as ckpt
    from training.core.model import ActorCritic

    config = GameConfig(num_players=num_players, history=history)
    model = ActorCritic(config, [8], "tanh", False, seed=0)
    spec = {"hidden_sizes": [8], "activation": "tanh", "card_counting": False}
    return ckpt.save_checkpoint(
        path,
        {f"model.{k}": v for k, v in model.state_dict().items()},
        {"kind": "agent", "name": path.name, "game_config": config.to_dict(), "model": spec},
    )


def _teachers(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe.json")
    return {
        "unknown name": ("nobody", "unknown agent 'nobody'"),
        "another table's agent": ("mini-recall", "trained for 2-player classic"),
        "a history agent": (str(_history_agent(tmp_path / "windowed")), "--set game.history=8 in cockroach-train"),
        "a FIFO": (str(tmp_path / "pipe"), "pipe"),
        "a mixture": ("classic-4p-mixture", "does not give its action probabilities"),
    }


@pytest.mark.parametrize("case", ["unknown name", "another table's agent", "a history agent", "a FIFO", "a mixture"])
def test_a_teacher_that_cannot_teach_is_a_config_error_before_the_run_directory_is_made(tmp_path, capsys, case):
    from pathlib import Path

    from training.cli.train import main as train

    from .hostile import within

    teacher, fragment = _teachers(tmp_path)[case]
    config = Path(__file__).resolve().parents[1] / "configs" / "quick.yaml"
    sets = [f"output_dir={tmp_path / 'runs'}", "name=taught", f"warm_start.teacher={teacher}"]
    with within(60, f"the teacher {case}"):
        assert train(["--config", str(config), "--no-progress", *[a for s in sets for a in ("--set", s)]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cockroach-train: error: warm_start.teacher") and fragment in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "frozen, extra, fragment",
    [
        ("history-8 agent", ["--set", "game.history=4"], "--set game.history=4 is not allowed"),
        ("history-8 agent", ["--set", "game.history=0"], "expected game.history=8"),
        ("classic-2p", ["--set", "game.history=8"], "or --history 8 for a best response with a window classic-2p"),
        ("history-8 agent", ["--history", "4"], "--history 4 is not allowed: "),
        ("classic-2p", ["--history", "4", "--start-member", "all"], "--start-member is not allowed with --history 4"),
        ("classic-2p", ["--history", "4", "--exact"], "--history 4 is not allowed with --exact"),
        ("classic-2p", ["--history", "100000"], "history=100000 is not allowed"),
        (
            "classic-2p",
            ["--from-scratch", "--set", "game.history=8", "--set", "model.event_embedding=8"],
            "expected game.history=0",
        ),
        ("classic-4p", ["--set", "model.hidden_sizes=[32]"], "leave model.* unset, or pass --from-scratch"),
        ("classic-4p", ["--resume"], "--resume: no best-response run to continue"),
    ],
)
def test_exploit_refuses_other_rules_networks_and_an_empty_resume_before_making_a_run(
    tmp_path, capsys, monkeypatch, frozen, extra, fragment
):
    import training.algorithms.ppo
    from training.cli.exploit import main as exploit

    monkeypatch.setattr(training.algorithms.ppo, "train", lambda *a, **k: pytest.fail("a best response was trained"))
    if frozen == "history-8 agent":
        frozen = str(_history_agent(tmp_path / "windowed", num_players=2))
    out = tmp_path / "runs"
    assert exploit([frozen, "--decisions", "64", "--games", "4", "--output-dir", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cockroach-exploit: error:") and fragment in err and "Traceback" not in err, err
    assert not out.exists() or not any(out.iterdir())


def test_the_history_hint_names_each_commands_own_option(tmp_path, capsys):
    """``--option`` is cockroach-eval's; cockroach-train's is ``--set game.history``."""
    from pathlib import Path

    from training.cli.train import main as train

    windowed = _history_agent(tmp_path / "windowed")
    config = Path(__file__).resolve().parents[1] / "configs" / "quick.yaml"
    sets = [f"output_dir={tmp_path / 'runs'}", "name=started", "warm_start.teacher=null"]
    argv = ["--config", str(config), *[a for s in sets for a in ("--set", s)], "--init-from", str(windowed)]
    assert train(argv) == 2
    err = capsys.readouterr().err
    assert "(--option history=8 in cockroach-eval, --set game.history=8 in cockroach-train" in err, err


@pytest.mark.parametrize("stop", ["non-finite loss", "signal before the first checkpoint"])
def test_exploit_names_a_run_that_stopped_without_anything_to_resume(tmp_path, capsys, monkeypatch, stop):
    """A best response whose loss turns non-finite, or that a signal stopped before its first checkpoint: the message
    says what is true, with no ``--resume`` to a checkpoint that does not exist.
    """
    import signal

    import training.cli.exploit as exploit_cli
    from training.core.learner import NonFiniteUpdate
    from training.core.runs import Interrupted

    def stopped(*args, **kwargs):
        if stop == "non-finite loss":
            raise NonFiniteUpdate("the loss (v_loss = inf)", ["ppo.learning_rate"], update=3)
        raise Interrupted(signal.SIGTERM, tmp_path / "runs" / "exploit_classic-4p" / "checkpoint", 0, saved=False)

    monkeypatch.setattr(exploit_cli, "train_start", stopped)
    code = exploit_cli.main(["classic-4p", "--decisions", "64", "--games", "4", "--output-dir", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--resume" not in err, err
    if stop == "non-finite loss":
        assert code == 1 and "cockroach-exploit: error: update 3: the loss (v_loss = inf) is not finite" in err, err
        assert "No checkpoint of" in err, err
    else:
        assert code == 143 and "nothing to resume. Start it again with:" in err and "--overwrite" in err, err


@pytest.mark.parametrize("config", ["research/nfsp_4p.yaml", "research/psro_2p.yaml", "research/cfr_mini.yaml"])
def test_a_best_response_trains_by_ppo_whatever_algorithm_its_config_names(config):
    """``cockroach-exploit --config`` of an NFSP, PSRO or CFR config: its shared sections shape the best response,
    which trains by PPO; the other algorithm's section (and its checks, such as NFSP's population) does not apply.
    """
    from pathlib import Path

    from baselines import registry
    from training.core import checkpoint as ckpt
    from training.core.config import load_config
    from training.evaluation.exploitability import FROZEN, best_response_config

    path = Path(__file__).resolve().parents[1] / "configs" / config
    given = load_config(str(path))
    frozen = ckpt.load_checkpoint("mini")
    registry.register(FROZEN, lambda game, seed=None: registry.make("random", game, seed=seed))  # as the command does
    try:
        config = best_response_config(
            frozen, "mini", False, config=str(path), seed=3, output_dir="runs", decisions=4096, games=10, overrides=[]
        )
    finally:
        registry.unregister(FROZEN)
    assert config.algorithm == "ppo" and given.algorithm != "ppo"
    assert config.ppo == given.ppo and config.opponents.baselines == {FROZEN: 1.0}
    assert config.game_config() == frozen.game_config and config.schedule.total_decisions == 4096


def test_exploit_history_trains_a_windowed_best_response_against_the_prefix_reading_checkpoint(tmp_path, capsys):
    """``--history K`` against a checkpoint without a window: the best response plays the same rules with a ``K``-move
    window from scratch, in a run of its own, and the frozen seats read the observation's prefix.
    """
    import json

    from training.cli.exploit import main as exploit
    from training.core import checkpoint as ckpt

    out, report = tmp_path / "runs", tmp_path / "report.json"
    argv = ["mini", "--history", "4", "--decisions", "256", "--games", "8", "--output-dir", str(out)]
    assert exploit([*argv, "--no-progress", "--json", str(report)]) == 0
    result = json.loads(report.read_text())
    assert result["game_config"]["history"] == 4 and result["from_scratch"] is True
    trained = ckpt.load_checkpoint(result["best_response_checkpoint"])
    assert trained.game_config.history == 4 and trained.metadata["model"]["event_embedding"] == 16
    assert [p.name for p in out.iterdir()] == ["exploit_mini-history-4"]
    assert "best response vs mini-history-4 (2-player classic, 256 decisions)" in capsys.readouterr().out


def test_a_population_trained_without_the_tables_window_reads_the_observation_prefix():
    """``Population.reads_prefix``: each frozen member acts on the prefix of the table's observation (its own rules'
    observation), as ``load_agent`` plays such a checkpoint at that table.
    """
    import numpy as np
    import torch

    from cockroach_env.batched import BatchedGames
    from cockroach_env.config import GameConfig
    from training.core import checkpoint as ckpt
    from training.core.opponents import FixedOpponents, Population

    plain = ckpt.build_model(ckpt.load_checkpoint("mini"))
    windowed = GameConfig.from_options(preset="mini", history=4)
    step = BatchedGames(windowed, batch_size=16, seed=3).reset()
    assert step.observation.shape[1] > plain.observation_size
    wide = FixedOpponents(Population([plain], np.ones(1), ["mini"], reads_prefix=True), {})
    own = FixedOpponents(Population([plain], np.ones(1), ["mini"]), {})
    masks = step.action_mask
    drawn = wide.act(0, step.observation, masks, torch.Generator().manual_seed(5), "cpu")
    prefix = np.ascontiguousarray(step.observation[:, : plain.observation_size])
    assert np.array_equal(drawn, own.act(0, prefix, masks, torch.Generator().manual_seed(5), "cpu"))
    with pytest.raises(RuntimeError):  # without the flag, the wide observation does not fit
        own.act(0, step.observation, masks, torch.Generator().manual_seed(5), "cpu")
