"""Runs are never destroyed: the real ``cockroach-train`` on a
tiny config, hostile run directories, tampered run checkpoints, bad configs, signals and
SIGKILLs at random instants (real subprocesses). A refused command leaves every file as it was.
"""

from __future__ import annotations

import csv
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yaml")

from training.cli.train import main  # noqa: E402
from training.core import checkpoint as ckpt  # noqa: E402
from training.core.checkpoint import files as checkpoint_files  # noqa: E402
from training.core.config import ConfigError, load_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "ppo.num_envs=16",
    "ppo.num_steps=8",
    "ppo.anneal_lr=false",
    "ppo.num_minibatches=2",
    "ppo.update_epochs=1",
    "model.hidden_sizes=[16]",
    "opponents.snapshot_every=1",
    "opponents.max_snapshots=2",
    "opponents.learner_seats=[1, 3]",
    "schedule.checkpoint_every=2",
    "evaluation.every=2",
    "evaluation.games=8",
    "evaluation.final_games=8",
    "warm_start.decisions=200",
    "warm_start.num_envs=16",
    "warm_start.epochs=1",
]
DECISIONS = 16 * 8


def _argv(out: Path, name: str, updates: int, *extra: str) -> list[str]:
    sets = [*TINY, f"name={name}", f"output_dir={out}", f"schedule.total_decisions={updates * DECISIONS}"]
    return [
        "--config",
        str(ROOT / "configs" / "quick.yaml"),
        "--no-progress",
        *[a for s in sets for a in ("--set", s)],
        *extra,
    ]


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A finished 4-update run (checkpoints at 2 and 4, final evaluation), copied by each test that alters it."""
    out = tmp_path_factory.mktemp("runs")
    assert main(_argv(out, "done", 4)) == 0
    return out / "done"


def _copy(run: Path, tmp_path: Path) -> Path:
    target = tmp_path / run.name
    shutil.copytree(run, target, symlinks=True)
    return target


# ---------------------------------------------------------------------------- a plain run never overwrites


@pytest.mark.parametrize(
    "leave",
    [
        pytest.param(lambda run: (run / "checkpoint.json").unlink(), id="checkpoint.json missing"),
        pytest.param(lambda run: [p.unlink() for p in run.glob("checkpoint*")], id="no checkpoint at all"),
        pytest.param(
            lambda run: ((run / "checkpoint.json").unlink(), (run / "checkpoint.json").symlink_to("checkpoint.json")),
            id="checkpoint.json a symlink loop",
        ),
        pytest.param(
            lambda run: [p.unlink() for p in run.iterdir() if p.is_file() and p.name != "metrics.csv"],
            id="only metrics.csv",
        ),
    ],
)
def test_a_plain_run_refuses_any_existing_run_and_changes_nothing(finished_run, tmp_path, capsys, leave):
    run = _copy(finished_run, tmp_path)
    leave(run)
    before = _files(run)
    assert main(_argv(tmp_path, run.name, 4)) == 2
    err = capsys.readouterr().err
    assert "--resume" in err and "--overwrite" in err and "Traceback" not in err
    assert _files(run) == before


def test_overwrite_retires_the_replaced_runs_checkpoints_so_a_stop_before_the_first_save_resumes_nothing_of_it(
    finished_run, tmp_path, capsys, monkeypatch
):
    """``--overwrite`` starts again: stopped (second Ctrl-C, kill) before its first checkpoint, the new run must not
    leave the
    replaced run's ``checkpoint`` for ``--resume`` to continue under the new run's logs, nor its ``final`` to pass for
    the new agent.
    """
    import training.algorithms.ppo

    run = _copy(finished_run, tmp_path)

    def second_ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt("second SIGINT")

    monkeypatch.setattr(training.algorithms.ppo, "save_run_checkpoint", second_ctrl_c)
    assert main(_argv(tmp_path, run.name, 4, "--overwrite")) == 130
    monkeypatch.undo()
    assert not (run / "checkpoint.json").exists() and not (run / "final.json").exists()
    assert not list(run.glob("checkpoint.*safetensors")) and not list(run.glob("final.*safetensors"))
    capsys.readouterr()
    assert main(_argv(tmp_path, run.name, 4, "--resume")) == 2
    assert "no checkpoint" in capsys.readouterr().err
    assert main(_argv(tmp_path, run.name, 4, "--overwrite")) == 0


def test_an_empty_run_directory_may_be_used(tmp_path):
    (tmp_path / "empty").mkdir()
    assert main(_argv(tmp_path, "empty", 1, "--set", "evaluation.final_games=0")) == 0


# ---------------------------------------------------------------------------- a bad checkpoint is named
# before any file changes


def _meta_edit(edit):
    def tamper(run: Path):
        path = run / "checkpoint.json"
        meta = json.loads(path.read_text())
        edit(meta)
        path.write_text(json.dumps(meta))

    return tamper


def _tensor_edit(edit):
    def tamper(run: Path):
        import hashlib

        from safetensors.torch import load, save

        meta_path, tensor_path = ckpt.checkpoint_files(run / "checkpoint")
        tensors = load(tensor_path.read_bytes())
        edit(tensors)
        blob = save(tensors)
        tensor_path.write_bytes(blob)
        meta = json.loads(meta_path.read_text())
        meta["tensors"].update(bytes=len(blob), sha256=hashlib.sha256(blob).hexdigest())
        meta_path.write_text(json.dumps(meta))

    return tamper


def _nan(tensors):
    tensors["model.trunk.0.weight"][0, 0] = float("nan")


RESUME_TAMPERS = [
    ("progress.update negative", _meta_edit(lambda m: m["progress"].update(update=-5)), ["'progress.update'", "-5"]),
    ("progress missing", _meta_edit(lambda m: m.pop("progress")), ["'progress'"]),
    ("progress unknown entry", _meta_edit(lambda m: m["progress"].update(extra=1)), ["'progress'", "extra"]),
    (
        "progress.wall_seconds a string",
        _meta_edit(lambda m: m["progress"].update(wall_seconds="1")),
        ["'progress.wall_seconds'"],
    ),
    ("pool entry without id", _meta_edit(lambda m: m["pool"][0].pop("id")), ["'pool'"]),
    ("pool entry of a missing snapshot", _meta_edit(lambda m: m["pool"][0].update(id=77)), ["pool.77"]),
    (
        "optimizer param_groups null",
        _meta_edit(lambda m: m["optimizer"].update(param_groups=None)),
        ["'optimizer.param_groups'"],
    ),
    (
        "rng state bogus",
        _meta_edit(lambda m: m["rng"].update(numpy={"bit_generator": "Nope"})),
        ["checkpoint.json", "cannot be restored"],
    ),
    (
        "training_config invalid",
        _meta_edit(lambda m: m["training_config"]["ppo"].update(num_envs=0)),
        ["training config", "num_envs=0"],
    ),
    (
        "training_config changed",
        _meta_edit(lambda m: m["training_config"]["ppo"].update(num_envs=32)),
        ["different config", "ppo.num_envs"],
    ),
    ("model.hidden_sizes missing", _meta_edit(lambda m: m["model"].pop("hidden_sizes")), ["'model.hidden_sizes'"]),
    ("tensors null", _meta_edit(lambda m: m.update(tensors=None)), ["'tensors'"]),
    ("a NaN weight", _tensor_edit(_nan), ["'model.trunk.0.weight'", "NaN"]),
    (
        "a snapshot of another shape",
        _tensor_edit(
            lambda t: t.update(
                {min(k for k in t if k.startswith("pool.") and k.endswith("trunk.0.weight")): torch.zeros(3, 3)}
            )
        ),
        ["pool.", "trunk.0.weight", "(3, 3)"],
    ),
    ("metadata not UTF-8", lambda run: (run / "checkpoint.json").write_bytes(b"\xff\xfe{}"), ["not UTF-8"]),
    (
        "tensors truncated",
        lambda run: ckpt.checkpoint_files(run / "checkpoint")[1].write_bytes(b"12345678"),
        ["truncated"],
    ),
]


@pytest.mark.parametrize("tamper, fragments", [pytest.param(t, f, id=i) for i, t, f in RESUME_TAMPERS])
def test_a_bad_run_checkpoint_refuses_resume_by_name_and_changes_no_file(
    finished_run, tmp_path, capsys, tamper, fragments
):
    run = _copy(finished_run, tmp_path)
    tamper(run)
    before = _files(run)
    assert main(_argv(tmp_path, run.name, 6, "--resume")) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "checkpoint" in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    assert _files(run) == before


@pytest.mark.parametrize(
    "tamper, fragments",
    [
        pytest.param(_meta_edit(lambda m: m["model"].pop("activation")), ["'model.activation'"], id="no activation"),
        pytest.param(_tensor_edit(_nan), ["NaN"], id="NaN weights"),
        pytest.param(_meta_edit(lambda m: m.update(model=[])), ["'model'"], id="model a list"),
    ],
)
def test_init_from_a_bad_checkpoint_is_a_named_error(finished_run, tmp_path, capsys, tamper, fragments):
    source = _copy(finished_run, tmp_path / "source")
    tamper(source)
    assert main(_argv(tmp_path, "fresh", 2, "--init-from", str(source / "checkpoint"))) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and all(f in err for f in fragments), err
    assert not (tmp_path / "fresh" / "checkpoint.json").exists()


# ---------------------------------------------------------------------------- stale files, finished runs


def test_resume_removes_stale_temporary_files_and_old_generations(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    current = ckpt.checkpoint_files(run / "checkpoint")[1].name
    stale = [
        ".checkpoint.json.k1ll3d.tmp",
        ".checkpoint.9.safetensors.x.tmp",
        "checkpoint.1.safetensors",
        ".final.json.abc.tmp",
        ".metrics.csv.q.tmp",
    ]
    for name in stale:
        (run / name).write_bytes(b"partial")
    assert main(_argv(tmp_path, run.name, 6, "--resume")) == 0
    names = {p.name for p in run.iterdir()}
    assert not names & set(stale)
    assert current not in names and {"checkpoint.json", "final.json"} <= names  # generation switched on the new saves


def test_a_run_written_before_generations_resumes(finished_run, tmp_path):
    """Runs saved as ``checkpoint.safetensors`` (the fixed name of earlier versions) load and continue."""
    run = _copy(finished_run, tmp_path)
    for stem in ("checkpoint", "final"):
        meta_path, tensor_path = ckpt.checkpoint_files(run / stem)
        tensor_path.rename(run / f"{stem}.safetensors")
        meta = json.loads(meta_path.read_text())
        meta["tensors"]["file"] = f"{stem}.safetensors"
        meta_path.write_text(json.dumps(meta))
    assert main(_argv(tmp_path, run.name, 6, "--resume")) == 0
    assert ckpt.read_metadata(run / "checkpoint")["step"]["update"] == 6
    assert not (run / "checkpoint.safetensors").exists() and not (run / "final.safetensors").exists()


def test_resuming_a_finished_run_changes_nothing(finished_run, tmp_path, capsys):
    run = _copy(finished_run, tmp_path)
    before = _files(run)
    assert main(_argv(tmp_path, run.name, 4, "--resume")) == 0
    assert "already finished" in capsys.readouterr().err
    assert _files(run) == before


def test_a_run_killed_during_its_final_evaluation_evaluates_once_on_resume(finished_run, tmp_path):
    run = _copy(finished_run, tmp_path)
    reference = (run / "eval.csv").read_text()
    for path in run.glob("final*"):  # the kill came before the agent checkpoint was written
        path.unlink()
    assert main(_argv(tmp_path, run.name, 4, "--resume")) == 0

    def rows(text):  # wall_seconds differs between the two evaluations
        return [line.split(",")[:2] + line.split(",")[3:] for line in text.splitlines()]

    assert rows((run / "eval.csv").read_text()) == rows(reference)
    assert sum(line.split(",")[3] == "1" for line in reference.splitlines()) == 2  # two opponents, final rows once


# ---------------------------------------------------------------------------- configs and paths named
# before any work

CONFIG_CASES = [
    ("ppo.learning_rate=.inf", "learning_rate=inf"),
    ("ppo.learning_rate=.nan", "learning_rate=nan"),
    ("schedule.time_limit_minutes=.inf", "time_limit_minutes=inf"),
    ("opponents.self_play=.inf", "self_play=inf"),
    ("ppo.ent_coef=.inf", "ent_coef=inf"),
    ("ppo.gamma=-.inf", "gamma=-inf"),
    ("opponents.baselines={heuristic: .nan}", "heuristic=nan"),
    ("ppo.target_kl=1e400", "target_kl="),
    ("seed=-1", "seed=-1"),
    (f"seed={2**70}", f"seed={2**70}"),
    ("device=cudafoo", "device='cudafoo'"),
    ("device=cuda:x", "device='cuda:x'"),
    ("device=cuda:99", "device='cuda:99'"),
    ("name=..", "name='..'"),
    ("name=.", "name='.'"),
    ("name=a/b", "name='a/b'"),
    ("name=", "name="),
    ("output_dir=' '", "output_dir="),
    # coefficients bounded to a range that trains (a loss term of weight 1e300 is inf)
    ("ppo.kl_coef=1e300", "kl_coef=1e+300 is not allowed; expected a number from 0 to MAX_COEFFICIENT=100"),
    ("ppo.magnet_coef=1e308", "magnet_coef=1e+308 is not allowed; expected a number from 0 to MAX_COEFFICIENT=100"),
    ("ppo.magnet_coef=1e30", "magnet_coef=1e+30 is not allowed"),
    ("ppo.ent_coef=1000", "ent_coef=1000.0 is not allowed"),
    ("ppo.vf_coef=1e6", "vf_coef=1000000.0 is not allowed"),
    ("ppo.max_grad_norm=1e9", "max_grad_norm=1000000000.0 is not allowed"),
    ("ppo.clip_coef=500", "clip_coef=500.0 is not allowed; expected a number > 0 and at most MAX_COEFFICIENT=100"),
    ("ppo.learning_rate=10", "learning_rate=10.0 is not allowed; expected a number > 0 and at most MAX_LEARNING_RATE"),
    ("opponents.exploiter_learning_rate=3", "exploiter_learning_rate=3.0 is not allowed"),
    ("warm_start.learning_rate=5", "learning_rate=5.0 is not allowed"),
    ("nfsp.sl_learning_rate=2", "sl_learning_rate=2.0 is not allowed"),
    ("cfr.distill_learning_rate=9", "distill_learning_rate=9.0 is not allowed"),
    # counts bounded before any array is made
    ("warm_start.num_envs=10000000000", "num_envs=10000000000 is not allowed; expected at most MAX_NUM_ENVS=1048576"),
]


@pytest.mark.parametrize("override, fragment", [pytest.param(o, f, id=o) for o, f in CONFIG_CASES])
def test_bad_config_values_are_named_when_the_config_is_read(override, fragment):
    with pytest.raises(ConfigError) as error:
        load_config(ROOT / "configs" / "quick.yaml", [override])
    assert fragment in str(error.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_device_cuda_without_cuda_is_named_when_the_config_is_read():
    with pytest.raises(ConfigError, match="device='cuda' is not allowed; this machine has no CUDA device"):
        load_config(None, ["device=cuda"])


def test_output_paths_that_cannot_hold_a_run_are_named_before_training(tmp_path, capsys):
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "taken").write_text("x")
    cases = [
        (["--set", f"output_dir={tmp_path / 'a_file'}"], "a_file"),
        (["--set", f"output_dir={tmp_path / 'runs'}", "--set", "name=taken"], "is a file"),
        (["--set", "output_dir=/proc/no-such-place/runs"], "cannot write to the run directory"),
    ]
    for extra, fragment in cases:
        before = _files(tmp_path)
        assert main([*_argv(tmp_path, "x", 1), *extra]) == 2
        err = capsys.readouterr().err
        assert fragment in err and "Traceback" not in err, err
        assert _files(tmp_path) == before


def test_a_full_disk_keeps_the_previous_checkpoint_and_exits_with_a_message(tmp_path, capsys, monkeypatch):
    assert main(_argv(tmp_path, "full", 2, "--set", "evaluation.final_games=0")) == 0
    before = _files(tmp_path / "full")
    real = checkpoint_files._write_temporary

    def no_space(final, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(final))

    monkeypatch.setattr(checkpoint_files, "_write_temporary", no_space)
    assert main(_argv(tmp_path, "full", 4, "--resume", "--set", "evaluation.final_games=0")) == 1
    monkeypatch.setattr(checkpoint_files, "_write_temporary", real)
    err = capsys.readouterr().err
    assert (
        "No space left on device" in err
        and "previous checkpoint" in err
        and "--resume" in err
        and "Traceback" not in err
    )
    assert ckpt.read_metadata(tmp_path / "full" / "checkpoint")["step"]["update"] == 2
    assert {k: v for k, v in _files(tmp_path / "full").items() if "checkpoint" in k} == {
        k: v for k, v in before.items() if "checkpoint" in k
    }


# ---------------------------------------------------------------------------- signals, and SIGKILL at random
# instants


def _spawn(out: Path, name: str, updates: int, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "training.cli.train", *_argv(out, name, updates, *extra)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)


def _wait_for_rows(path: Path, rows: int, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) > rows:
            return
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    raise AssertionError(f"no {rows} rows in {path}")


@pytest.mark.slow
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_inside_a_segment_says_how_to_resume_exits_128_plus_the_signal_and_the_resume_replays_it(
    tmp_path, signum, code
):
    """The checkpoint of the segment's start (update 0) stays; ``--resume`` plays the updates again, to the same
    metrics.
    """
    run = tmp_path / "signalled"
    process = _spawn(tmp_path, "signalled", 10_000, "--set", "schedule.checkpoint_every=1000")
    _wait_for_rows(run / "metrics.csv", 2, process)
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    err = err.decode()
    assert process.returncode == code, err
    assert "Traceback" not in err and "--resume" in err and signal.Signals(signum).name in err
    before = _timeless_rows(run / "metrics.csv")
    rows = len(before) - 1
    assert rows >= 2 and f"at update {rows};" in err and f"plays updates 1-{rows} again" in err, err
    assert ckpt.read_metadata(run / "checkpoint")["step"]["update"] == 0  # the segment's start
    assert main(_argv(tmp_path, "signalled", rows + 1, "--resume", "--set", "schedule.checkpoint_every=1000")) == 0
    assert _timeless_rows(run / "metrics.csv")[: rows + 1] == before  # the same updates again


def _timeless_rows(path: Path) -> list[list[str]]:
    rows = [line.split(",") for line in path.read_text().splitlines()]
    timing = {rows[0].index(c) for c in ("wall_seconds", "decisions_per_second")}
    return [[v for i, v in enumerate(row) if i not in timing] for row in rows]


def _saved_update(run: Path) -> int | None:
    """The update of the run checkpoint in ``run``, or None without one (or while one is half written)."""
    try:
        return ckpt.read_metadata(run / "checkpoint")["step"]["update"]
    except ckpt.CheckpointError:
        return None


@pytest.mark.slow
def test_sigkill_at_random_instants_always_leaves_a_run_that_resumes_to_the_uninterrupted_result(tmp_path):
    """Kill a real ``python -m training.cli.train`` again and again, each time at a random instant after it wrote a
    checkpoint past the one it started from, and continue it with ``--resume``. At least one attempt resumes from a
    checkpoint past update 0 (so the weights, the Adam state and the generators come from it), and the result equals
    the uninterrupted run bitwise.
    """
    updates = 8  # checkpoints at 0, 2, 4, 6 and 8
    assert main(_argv(tmp_path, "whole", updates)) == 0
    run = tmp_path / "killed"
    rng = np.random.default_rng(10)
    kills, resumed_from = 0, []
    for _ in range(12):
        start = _saved_update(run)
        process = _spawn(tmp_path, "killed", updates, *(["--resume"] if start is not None else []))
        if kills < 3:
            deadline = time.monotonic() + 300
            while process.poll() is None and time.monotonic() < deadline:
                saved = _saved_update(run)
                if saved is not None and saved > (start or 0):
                    break  # this attempt wrote a checkpoint of its own
                time.sleep(0.02)
            time.sleep(0.4 * rng.random())  # somewhere in the next updates, evaluations or saves
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kills += 1
        _, err = process.communicate(timeout=300)
        if start is not None:
            assert f"resuming {run} at update {start} " in err.decode(), err.decode()
            resumed_from.append(start)
        if process.returncode == 0:
            break
        assert process.returncode == -signal.SIGKILL, err.decode()
    assert process.returncode == 0 and kills >= 1
    assert any(start > 0 for start in resumed_from), resumed_from  # resumed mid-run, not only from the start
    for name in ("checkpoint", "final"):
        reference = ckpt.load_checkpoint(tmp_path / "whole" / name)
        result = ckpt.load_checkpoint(run / name)
        assert result.metadata["step"]["decisions"] == reference.metadata["step"]["decisions"] == updates * DECISIONS
        assert reference.tensors.keys() == result.tensors.keys()
        for key, value in reference.tensors.items():
            assert torch.equal(value, result.tensors[key]), (name, key)


# ---------------------------------------------------------------------------- ppo.overlap's update process


@pytest.mark.slow
def test_ctrl_c_to_the_process_group_of_an_overlapped_run_stops_resumes_and_leaves_no_process(tmp_path):
    """A terminal's Ctrl-C reaches every process of the group: the update process ignores it, the main
    process finishes the update and exits 130 (its segment's checkpoint stays, for ``--resume`` to play the updates
    again), and both are gone.
    """
    overlap = ["--set", "ppo.overlap=true", "--set", "schedule.checkpoint_every=1000"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "training.cli.train", *_argv(tmp_path, "overlapped", 10_000, *overlap)]
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT, start_new_session=True
    )
    _wait_for_rows(tmp_path / "overlapped" / "metrics.csv", 2, process)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=120)
    err = err.decode()
    assert process.returncode == 130, err
    assert "Traceback" not in err and "--resume" in err
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the update process follows the main one out
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("a process of the run is still alive")
    before = _timeless_rows(tmp_path / "overlapped" / "metrics.csv")
    rows = len(before) - 1
    saved = ckpt.load_checkpoint(tmp_path / "overlapped" / "checkpoint", kind="run")
    assert rows >= 2 and saved.metadata["step"]["update"] == 0  # the segment's start, which the resume plays from
    assert main(_argv(tmp_path, "overlapped", rows + 1, "--resume", *overlap)) == 0
    assert _timeless_rows(tmp_path / "overlapped" / "metrics.csv")[: rows + 1] == before


def test_a_dead_update_process_is_a_clear_error_and_the_last_checkpoint_stays(tmp_path, capsys, monkeypatch):
    from training.core.update_process import UpdateProcess

    overlap = ["--set", "ppo.overlap=true", "--set", "schedule.checkpoint_every=2"]
    result = UpdateProcess.result
    calls = []

    def killed_on_the_third(self):
        calls.append(1)
        if len(calls) == 3:
            self._process.kill()  # killed by hand or by the kernel's out-of-memory killer
            self._process.wait()
        return result(self)

    monkeypatch.setattr(UpdateProcess, "result", killed_on_the_third)
    assert main(_argv(tmp_path, "orphaned", 6, *overlap)) == 1
    err = capsys.readouterr().err
    assert "update process is gone" in err and "--resume" in err and "Traceback" not in err
    assert (
        ckpt.read_metadata(tmp_path / "orphaned" / "checkpoint")["step"]["update"] == 2
    )  # the checkpoint before the failure
    monkeypatch.setattr(UpdateProcess, "result", result)
    assert main(_argv(tmp_path, "orphaned", 6, "--resume", *overlap)) == 0


def test_a_script_without_a_main_guard_can_train_with_overlap(tmp_path):
    """The update process is a fresh interpreter, not a multiprocessing child: it does not re-run the caller's
    script.
    """
    script = tmp_path / "train_me.py"
    sets = [
        *TINY,
        "name=scripted",
        f"output_dir={tmp_path}",
        f"schedule.total_decisions={3 * DECISIONS}",
        "ppo.overlap=true",
    ]
    script.write_text(
        "import sys\n"
        "from training.core.config import load_config\n"
        "from training.algorithms.ppo import train\n"
        f"config = load_config({str(ROOT / 'configs' / 'quick.yaml')!r}, {sets!r})\n"
        "print('ran', flush=True)\n"
        "train(config, progress_bar=False)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("ran") == 1  # the script ran once
    assert (tmp_path / "scripted" / "final.json").exists()


# ---------------------------------------------------------------------------- options that do nothing


@pytest.mark.parametrize(
    "sets, warning",
    [
        (
            ["ppo.magnet_reward=true"],
            "warning: ppo.magnet_reward: true does nothing with ppo.magnet_coef: 0",
        ),
        (
            ["ppo.magnet_coef=0.1", "ppo.magnet_ema=0.2"],
            "warning: ppo.magnet_ema=0.2 does nothing with ppo.magnet: copy",
        ),
        (["ppo.magnet=ema"], "warning: ppo.magnet='ema' does nothing with ppo.magnet_coef: 0"),
        (
            ["ppo.magnet_coef=0.1", "ppo.magnet=uniform", "ppo.magnet_every=7"],
            "warning: ppo.magnet_every=7 does nothing with ppo.magnet: uniform",
        ),
        (
            ["ppo.ent_coef=0", "ppo.anneal_regularization=0.5"],
            "warning: ppo.anneal_regularization=0.5 does nothing with ppo.ent_coef: 0 and ppo.magnet_coef: 0",
        ),
        (["opponents.exploiter_reset_every=5"], "warning: opponents.exploiter_reset_every=5 does nothing"),
        (["warm_start.teacher=null", "warm_start.rounds=3"], "warning: warm_start.rounds=3 does nothing"),
        (["nfsp.sl_steps=9"], "warning: nfsp.sl_steps=9 does nothing with algorithm: ppo"),
    ],
)
def test_options_that_do_nothing_in_their_combination_are_warned(capsys, sets, warning):
    argv = ["--config", str(ROOT / "configs" / "quick.yaml"), *[a for s in sets for a in ("--set", s)]]
    assert main([*argv, "--print-config"]) == 0
    err = capsys.readouterr().err
    assert f"cockroach-train: {warning}" in err, err


# ---------------------------------------------------------------------------- a loss that is not finite


@pytest.mark.parametrize("overlap", [False, True], ids=["in process", "ppo.overlap"])
def test_a_non_finite_loss_stops_the_run_naming_the_update_and_writes_nothing_of_it(
    tmp_path, capsys, monkeypatch, overlap
):
    """Values made infinite in the third update's rollout: the run stops at update 3 with the term and the option
    named, its metrics hold updates 1 and 2 only, all finite, and its run checkpoint (update 2) stays loadable.
    """
    from training.core.learner import Learner

    original, calls = Learner.carry_over, []

    def poisoned(self):
        finished = original(self)
        calls.append(1)
        if len(calls) == 3:
            finished.value[: finished.size] = np.inf
        return finished

    monkeypatch.setattr(Learner, "carry_over", poisoned)
    extra = ["--set", f"ppo.overlap={str(overlap).lower()}", "--set", "warm_start.teacher=null"]
    assert main(_argv(tmp_path, "diverged", 6, *extra)) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert "cockroach-train: error: update 3: the loss (v_loss = inf) is not finite" in err, err
    assert "likely cause: ppo.learning_rate" in err and "The last checkpoint in" in err, err
    run = tmp_path / "diverged"
    with (run / "metrics.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [row["update"] for row in rows] == ["1", "2"]
    for row in rows:
        for column in ("pg_loss", "v_loss", "entropy", "approx_kl", "clipfrac"):
            assert np.isfinite(float(row[column])), (column, row)
    checkpoint = ckpt.load_checkpoint(run / "checkpoint", kind="run")
    assert checkpoint.metadata["progress"]["update"] == 2
    assert not (run / "final.json").exists()


def test_a_non_finite_warm_start_names_its_learning_rate():
    from cockroach_env import GameConfig
    from training.algorithms import imitation
    from training.core.learner import NonFiniteUpdate
    from training.core.model import ActorCritic

    game = GameConfig(num_players=2)
    teacher = __import__("baselines").make("heuristic", game, seed=0)
    labelled = imitation.collect(game, teacher, 64, 8, seed=0)
    labelled.reward[:] = np.nan
    model = ActorCritic(game, [8], "tanh", False, seed=0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(NonFiniteUpdate) as error:
        imitation.fit(model, labelled, 1, 16, 1e-3, 0, "cpu")
    assert "the warm start's loss" in str(error.value) and "warm_start.learning_rate" in str(error.value)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # stopped before the first step


def test_a_non_finite_average_policy_loss_names_its_learning_rate():
    from types import SimpleNamespace

    from cockroach_env import GameConfig
    from training.algorithms.nfsp import AveragePolicy
    from training.algorithms.nfsp_config import NFSPConfig
    from training.core.learner import NonFiniteUpdate
    from training.core.model import ActorCritic

    game = GameConfig(num_players=2)
    model = ActorCritic(game, [8], "tanh", False, seed=0)
    settings = NFSPConfig(reservoir_size=64, sl_steps=1, sl_batch_size=8)
    average = AveragePolicy(model, settings, model.observation_size, model.num_actions, seed=0)
    mask = np.zeros((16, model.num_actions), bool)
    mask[:, 0] = True
    obs = np.full((16, model.observation_size), np.nan, np.float32)
    rollout = SimpleNamespace(obs=obs, mask=mask, action=np.zeros(16, np.int64), observations=lambda rows: obs[rows])
    with np.errstate(invalid="ignore"):  # (NaN has no uint8 value: the reservoir keeps float32 observations)
        average.observe(rollout, np.arange(16))
    with pytest.raises(NonFiniteUpdate, match=r"the average policy's loss .* nfsp.sl_learning_rate"):
        average.update()


# ---------------------------------------------------------------------------- a stop during the warm start


def test_sigterm_during_the_warm_start_of_an_overwrite_says_what_is_true_and_a_plain_start_then_works(
    finished_run, tmp_path, capsys, monkeypatch
):
    """No checkpoint exists during the warm start: the message says so and gives a command that works (no
    ``--resume``); ``--overwrite`` has cleared the replaced run's logs, so the plain command starts the run.
    """
    from training.algorithms import imitation

    run = _copy(finished_run, tmp_path)
    (run / "notes.txt").write_text("the user's own file")
    original = imitation.warm_start

    def signalled(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # (handled by the run: a stop at its next step)
        return original(*args, **kwargs)

    monkeypatch.setattr(imitation, "warm_start", signalled)
    teacher = ["--set", "warm_start.teacher=heuristic"]
    assert main(_argv(tmp_path, run.name, 4, *teacher, "--overwrite")) == 143
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--resume" not in err, err
    assert "before the run's first checkpoint" in err and "nothing to resume" in err, err
    command = err.split("Start it again with:\n", 1)[1].strip().split(" ")
    assert command[0] == "cockroach-train" and "--overwrite" in command, err  # (the user's file is still there)
    assert sorted(p.name for p in run.iterdir()) == ["notes.txt"]  # the replaced run's files are gone, the user's not
    (run / "notes.txt").unlink()
    assert main(_argv(tmp_path, run.name, 4, *teacher)) == 0  # a plain start
    assert (run / "final.json").exists()


def test_metrics_csv_leaves_a_statistic_with_no_value_yet_empty_rather_than_nan(tmp_path):
    """``explained_variance`` has no value when an update's returns do not vary, NFSP's ``sl_loss`` none before its
    first supervised step: the row holds an empty cell, never the text ``nan``; finite values are written rounded.
    """
    from training.core.runs import Progress, RunLogs

    logs = RunLogs(tmp_path, load_config(None, []), None, extra_columns=("sl_loss",))
    try:
        stats = {"pg_loss": 0.1234567, "explained_variance": float("nan"), "sl_loss": float("nan")}
        logs.train_row(Progress(update=1, decisions=64), 3e-4, 100.0, stats, {}, 0)
    finally:
        logs.close()
    text = (tmp_path / "metrics.csv").read_text()
    (row,) = csv.DictReader(text.splitlines())
    assert "nan" not in text.lower()
    assert row["explained_variance"] == "" and row["sl_loss"] == "" and row["pg_loss"] == "0.123457"


def test_the_time_limit_stops_at_the_last_checkpoint_before_it_when_the_next_segment_would_pass_it():
    """A stop inside a segment saves nothing, so the time limit is met at a segment end: there, the run stops (with
    its checkpoint) when a next segment as long as the last would end past the limit; inside a segment it stops only
    once past the limit; without a limit, or at the last update, never.
    """
    from training.core.config import ScheduleConfig
    from training.core.runs import time_limit_reason

    schedule = ScheduleConfig(time_limit_minutes=10, checkpoint_every=100)
    assert time_limit_reason(schedule, 7 * 60, False, 2 * 60) is None  # 7 + 2 <= 10 minutes: one more segment
    reason = time_limit_reason(schedule, 7 * 60, False, 4 * 60)  # 7 + 4 > 10: stop here, saved
    assert reason.startswith("time limit of 10 minutes: stopped at this checkpoint") and "100 updates, 4.0" in reason
    assert time_limit_reason(schedule, 9 * 60, False, None) is None  # inside a segment, before the limit
    assert time_limit_reason(schedule, 11 * 60, False, None) == "time limit of 10 minutes reached"
    assert time_limit_reason(schedule, 11 * 60, True, 60) is None  # the last update ends the run anyway
    assert time_limit_reason(ScheduleConfig(), 1e9, False, 1e9) is None


def test_a_run_that_the_time_limit_stops_at_a_segment_end_saves_there_and_resumes_to_the_end(
    tmp_path, monkeypatch, capsys
):
    """The time limit's forecast says stop at the first segment end after update 0 (update 2 of 4): the run stops
    there with its checkpoint at update 2, and ``--resume`` ends the run.
    """
    import training.algorithms.ppo as ppo
    from training.core.runs import time_limit_reason

    def forecast(schedule, wall_seconds, last, segment_seconds):  # as if the next segment would pass the limit
        return time_limit_reason(schedule, 0.0, last, None if segment_seconds is None else 1e9)

    monkeypatch.setattr(ppo, "time_limit_reason", forecast)
    argv = _argv(tmp_path, "limited", 4, "--set", "schedule.time_limit_minutes=60", "--set", "warm_start.teacher=null")
    assert main(argv) == 0
    assert _saved_update(tmp_path / "limited") == 2
    assert "stopped at this checkpoint" in capsys.readouterr().err
    monkeypatch.undo()
    assert main([*argv, "--resume"]) == 0
    assert _saved_update(tmp_path / "limited") == 4
