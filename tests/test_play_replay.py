"""cockroach-replay's output file: an existing file is replaced only with --overwrite, and a checkpoint's file
or a run's file never, whatever the options say; a pipe or a device is written into.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from cockroach_env.record import save_record
from play import replay

from .test_records import random_record

SHIPPED = Path(__file__).resolve().parents[1] / "training" / "agents"


@pytest.fixture()
def game(tmp_path) -> Path:
    record, _ = random_record("classic", 4, seed=3)
    path = tmp_path / "g0.json"
    save_record(record, str(path))
    return path


@pytest.fixture()
def run_dir(tmp_path) -> Path:
    """A run directory as cockroach-train leaves it: the run's checkpoint, the final agent, a log."""
    run = tmp_path / "runs" / "mini1"
    run.mkdir(parents=True)
    tensors = SHIPPED / "mini.safetensors"
    for stem in ("checkpoint", "final"):
        shutil.copy(SHIPPED / "mini.json", run / f"{stem}.json")
        shutil.copy(tensors, run / f"{stem}.1.safetensors")
    (run / "tensorboard").mkdir()
    (run / "metrics.csv").write_text("update,loss\n1,0.5\n")
    return run


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("final.json", "folder of the checkpoint tensors"),
        ("final.1.safetensors", "checkpoint's tensor file"),
        ("checkpoint.json", "folder of the checkpoint tensors"),
        ("metrics.csv", "folder of the checkpoint tensors"),
        ("new.html", "folder of the checkpoint tensors"),
        ("tensorboard/page.html", "inside the run directory"),
    ],
)
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_checkpoint_or_a_run_file_is_never_replaced(game, run_dir, capsys, name, fragment, overwrite):
    before = snapshot(run_dir)
    target = run_dir / name
    assert replay.main([str(game), "-o", str(target), *(["--overwrite"] if overwrite else [])]) == 2
    out, err = capsys.readouterr()
    assert fragment in err and f"-o {str(target)!r}" in err and "wrote" not in out, (out, err)
    assert snapshot(run_dir) == before, "the run directory is unchanged"


def test_an_existing_file_is_replaced_only_with_overwrite(game, tmp_path, capsys):
    page = tmp_path / "page.html"
    page.write_text("my notes")
    assert replay.main([str(game), "-o", str(page)]) == 2
    err = capsys.readouterr().err
    assert f"-o {page} already exists; pass --overwrite" in err
    assert page.read_text() == "my notes"
    assert replay.main([str(game), "-o", str(page), "--overwrite"]) == 0
    assert page.read_text().startswith("<!doctype html>")
    default = game.with_suffix(".html")
    assert not default.exists()
    assert replay.main([str(game)]) == 0 and default.read_text().startswith("<!doctype html>")
    assert replay.main([str(game)]) == 2 and "already exists" in capsys.readouterr().err


def test_the_game_record_itself_is_never_replaced(game, capsys):
    before = game.read_bytes()
    assert replay.main([str(game), "-o", str(game), "--overwrite"]) == 2
    assert "the game record itself" in capsys.readouterr().err
    assert game.read_bytes() == before


def test_a_device_is_written_into_without_overwrite(game, capsys):
    if not os.path.exists("/dev/null"):
        pytest.skip("no /dev/null here")
    assert replay.main([str(game), "-o", "/dev/null"]) == 0
    assert "wrote /dev/null" in capsys.readouterr().out


def test_the_page_of_an_arena_game_names_a_shipped_agent_by_its_shipped_name(tmp_path):
    """``cockroach-eval classic-4p ... --save-games``, then ``cockroach-replay``: the page says ``classic-4p``, not
    the name of the run that trained it.
    """
    pytest.importorskip("torch")
    from training.cli import eval as eval_cli
    from training.core.checkpoint import read_metadata

    run_name = read_metadata("classic-4p")["name"]
    games = tmp_path / "games"
    argv = ["random", "classic-4p", "heuristic*2", "--games", "4", "--quiet", "--save-games", "4", str(games)]
    assert eval_cli.main(argv) == 0
    for saved in sorted(games.glob("game-*.json")):
        page = saved.with_suffix(".html")
        assert replay.main([str(saved), "-o", str(page)]) == 0
        html = page.read_text()
        data = json.loads(html.split('id="replay-data"', 1)[1].split(">", 1)[1].split("</script>", 1)[0])
        assert sorted(data["players"].values()) == ["classic-4p", "heuristic", "heuristic", "random"]
        assert run_name not in html
