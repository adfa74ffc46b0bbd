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
        (["random*7"], "num_players=7"),
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
        (["--games", "0"], "--games: 0 is not allowed; expected an integer >= 1"),
        (["--games", "-3"], "--games: -3 is not allowed"),
        (["--decisions", "0"], "--decisions: 0 is not allowed"),
        (["--games", "many"], "--games: 'many' is not an integer"),
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
