"""A tamper corpus over checkpoints: every damaged or
hostile file is a ``CheckpointError`` naming the file and the problem, never another
exception, never an unpickle, never a network built before its shapes are checked; a
save killed at any instant leaves a loadable checkpoint; old and shipped files still load.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from safetensors.torch import save as save_tensors  # noqa: E402

from cockroach_env import GameConfig  # noqa: E402
from training.cli import checkpoint as checkpoint_cli  # noqa: E402
from training.core import checkpoint as ckpt  # noqa: E402
from training.core.checkpoint import files as checkpoint_files  # noqa: E402
from training.core.model import ActorCritic  # noqa: E402

from .hostile import refused, within  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GAME = GameConfig(num_players=3)
SPEC = {"hidden_sizes": [8], "activation": "tanh", "card_counting": False}


def _model(seed: int = 0, hidden=(8,)) -> ActorCritic:
    return ActorCritic(GAME, list(hidden), "tanh", seed=seed)


def _save(path: Path, model: ActorCritic | None = None, spec: dict = SPEC) -> Path:
    model = model or _model()
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    return ckpt.save_checkpoint(
        path, tensors, {"kind": "agent", "name": "t", "game_config": GAME.to_dict(), "model": spec}
    )


def _rewrite_tensors(path: Path, tensors: dict | None = None, blob: bytes | None = None) -> None:
    """Replace the tensor file and record its true size and sha256: a tamper the checksum cannot catch."""
    import hashlib

    meta_path, tensor_path = ckpt.checkpoint_files(path)
    blob = blob if blob is not None else save_tensors(tensors)
    tensor_path.write_bytes(blob)
    meta = json.loads(meta_path.read_text())
    meta["tensors"].update(bytes=len(blob), sha256=hashlib.sha256(blob).hexdigest())
    meta_path.write_text(json.dumps(meta))


def _edit_meta(path: Path, edit) -> None:
    meta_path = ckpt.checkpoint_files(path)[0]
    meta = json.loads(meta_path.read_text())
    edit(meta)
    meta_path.write_text(json.dumps(meta))


def _state(model: ActorCritic) -> dict:
    return {f"model.{k}": v.clone() for k, v in model.state_dict().items()}


def _with_nan(value: float):
    def tamper(path):
        tensors = _state(_model())
        tensors["model.trunk.0.weight"][0, 0] = value
        _rewrite_tensors(path, tensors)

    return tamper


def _raw(path: Path, data: bytes, which: int) -> None:
    ckpt.checkpoint_files(path)[which].write_bytes(data)


def _flip(which: int, where: float):
    def tamper(path):
        file = ckpt.checkpoint_files(path)[which]
        data = bytearray(file.read_bytes())
        data[int(where * (len(data) - 1))] ^= 0x5A
        file.write_bytes(bytes(data))

    return tamper


def _pop(*keys):
    def edit(meta):
        node = meta
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return lambda path: _edit_meta(path, edit)


def _set(value, *keys):
    def edit(meta):
        node = meta
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return lambda path: _edit_meta(path, edit)


TAMPERS = [
    # metadata fields
    ("no model.hidden_sizes", _pop("model", "hidden_sizes"), ["'model.hidden_sizes'"]),
    ("no model.activation", _pop("model", "activation"), ["'model.activation'"]),
    ("no tensors.sha256", _pop("tensors", "sha256"), ["'tensors.sha256'"]),
    ("no tensors.file", _pop("tensors", "file"), ["'tensors.file'"]),
    ("tensors null", _set(None, "tensors"), ["'tensors'", "None"]),
    ("model a list", _set([], "model"), ["'model'", "[]"]),
    ("no game_config", _pop("game_config"), ["'game_config'"]),
    ("game_config a string", _set("classic", "game_config"), ["'game_config'"]),
    ("hidden_sizes a string", _set("16", "model", "hidden_sizes"), ["'model.hidden_sizes'", "'16'"]),
    ("hidden_sizes zero", _set([0], "model", "hidden_sizes"), ["'model.hidden_sizes'"]),
    ("hidden_sizes a bool", _set([True], "model", "hidden_sizes"), ["'model.hidden_sizes'"]),
    ("activation unknown", _set("gelu", "model", "activation"), ["'model.activation'", "'gelu'"]),
    ("card_counting a string", _set("yes", "model", "card_counting"), ["'model.card_counting'"]),
    ("tensors.file a path up", _set("../x.safetensors", "tensors", "file"), ["'tensors.file'"]),
    ("tensors.file absolute", _set("/etc/passwd", "tensors", "file"), ["'tensors.file'"]),
    ("tensors.bytes negative", _set(-1, "tensors", "bytes"), ["'tensors.bytes'"]),
    ("tensors.sha256 not hex", _set("xyz", "tensors", "sha256"), ["'tensors.sha256'"]),
    ("kind unknown", _set("weights", "kind"), ["'kind'"]),
    ("layout_version a string", _set("1", "layout_version"), ["'layout_version'"]),
    ("observation_size a float", _set(80.0, "observation_size"), ["'observation_size'"]),
    ("name a number", _set(5, "name"), ["'name'"]),
    ("format_version 2", _set(2, "format_version"), ["format version 2"]),
    ("format other", _set("pytorch", "format"), ["not a checkpoint of this project"]),
    ("game_config unknown option", _set({"num_players": 3, "colour": "red"}, "game_config"), ["game config", "colour"]),
    ("game_config bad value", _set({"num_players": 9}, "game_config"), ["num_players=9"]),
    ("rules of another player count", _set({"num_players": 4}, "game_config"), ["observation/action sizes"]),
    # metadata bytes
    ("metadata not UTF-8", lambda p: _raw(p, b'{"format": "\xff\xfe"}', 0), ["not UTF-8"]),
    ("metadata a pickle", lambda p: _raw(p, pickle.dumps({"format": ckpt.FORMAT}), 0), ["metadata"]),
    ("metadata empty", lambda p: _raw(p, b"", 0), ["not valid JSON"]),
    ("metadata a list", lambda p: _raw(p, b"[1, 2]", 0), ["not a checkpoint of this project"]),
    (
        "metadata NaN",
        lambda p: _raw(
            p, ckpt.checkpoint_files(p)[0].read_bytes().replace(b'"format_version": 1', b'"format_version": NaN'), 0
        ),
        ["NaN"],
    ),
    ("metadata truncated", lambda p: _raw(p, ckpt.checkpoint_files(p)[0].read_bytes()[:40], 0), ["not valid JSON"]),
    ("metadata flipped byte", _flip(0, 0.02), ["agent.json"]),
    # tensor bytes
    (
        "tensors truncated",
        lambda p: _raw(p, ckpt.checkpoint_files(p)[1].read_bytes()[:-10], 1),
        ["truncated, corrupted"],
    ),
    ("tensors empty", lambda p: _raw(p, b"", 1), ["truncated, corrupted"]),
    ("tensors missing", lambda p: ckpt.checkpoint_files(p)[1].unlink(), ["cannot read the tensor file"]),
    ("tensors flipped header byte", _flip(1, 0.001), ["truncated, corrupted"]),
    ("tensors flipped data byte", _flip(1, 0.7), ["truncated, corrupted"]),
    (
        "tensors a pickle, checksum matched",
        lambda p: _rewrite_tensors(p, blob=pickle.dumps(_state(_model()))),
        ["not a valid safetensors file"],
    ),
    (
        "tensors torch.save, checksum matched",
        lambda p: _rewrite_tensors(p, blob=_torch_save(_state(_model()))),
        ["not a valid safetensors file"],
    ),
    (
        "tensors garbage header, checksum matched",
        lambda p: _rewrite_tensors(p, blob=(8).to_bytes(8, "little") + b"{not js}"),
        ["not a valid safetensors file"],
    ),
    (
        "tensors huge header length, checksum matched",
        lambda p: _rewrite_tensors(p, blob=(2**62).to_bytes(8, "little") + b"{}"),
        ["not a valid safetensors file"],
    ),
    # layouts and shapes
    (
        "tensor names of another layout",
        lambda p: _rewrite_tensors(p, {k.replace("trunk", "body"): v for k, v in _state(_model()).items()}),
        ["do not fit", "model.body.0.weight"],
    ),
    (
        "a missing tensor",
        lambda p: _rewrite_tensors(p, {k: v for k, v in _state(_model()).items() if "value_head.bias" not in k}),
        ["do not fit", "value_head.bias"],
    ),
    (
        "tensors of a wider network",
        lambda p: _rewrite_tensors(p, _state(_model(hidden=(12,)))),
        ["do not fit", "(12, 106)", "(8, 106)"],
    ),
    ("hidden_sizes [6000, 6000]", _set([6000, 6000], "model", "hidden_sizes"), ["do not fit", "width 6000"]),
    (
        "hidden_sizes [100000, 100000]",
        _set([100000, 100000], "model", "hidden_sizes"),
        ["do not fit", "width 100000"],
    ),
    (
        "hidden_sizes [10**12, 10**12]",
        _set([10**12, 10**12], "model", "hidden_sizes"),
        ["do not fit", "width 1000000000000", "no tensor has a dimension above"],
    ),
    ("hidden_sizes [8, 10**12]", _set([8, 10**12], "model", "hidden_sizes"), ["do not fit", "1000000000000"]),
    (
        "tensors of a scalar shape",
        lambda p: _rewrite_tensors(p, {**_state(_model()), "model.trunk.0.bias": torch.zeros(())}),
        ["do not fit", "model.trunk.0.bias"],
    ),
    # values
    ("a NaN weight, checksum matched", _with_nan(float("nan")), ["'model.trunk.0.weight'", "NaN or infinite"]),
    ("an inf weight, checksum matched", _with_nan(float("inf")), ["'model.trunk.0.weight'", "NaN or infinite"]),
    ("a -inf weight, checksum matched", _with_nan(float("-inf")), ["'model.trunk.0.weight'", "NaN or infinite"]),
]


def _torch_save(state: dict) -> bytes:
    import io

    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("tamper, fragments", [pytest.param(t, f, id=i) for i, t, f in TAMPERS])
def test_a_tampered_checkpoint_is_a_checkpoint_error_naming_the_file(tmp_path, monkeypatch, tamper, fragments):
    _save(tmp_path / "agent")
    tamper(tmp_path / "agent")
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load must never be called"))
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("pickle.loads must never be called"))
    built = []
    real_init = ActorCritic.__init__

    def counting_init(self, *args, **kwargs):
        built.append(torch.get_default_device())
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(ActorCritic, "__init__", counting_init)
    message = refused(lambda: ckpt.load_agent(tmp_path / "agent"), "agent", *fragments, error=ckpt.CheckpointError)
    assert all(device.type == "meta" for device in built), (
        f"a network was built on {built} before the checkpoint was refused"
    )
    assert len(message) < 600


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _device(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def _directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


NOT_REGULAR = [
    ("metadata a FIFO", 0, _fifo, "a FIFO (named pipe)"),
    ("tensors a FIFO", 1, _fifo, "a FIFO (named pipe)"),
    ("metadata /dev/zero", 0, _device, "a character device"),
    ("tensors /dev/zero", 1, _device, "a character device"),
    ("tensors a directory", 1, _directory, "a directory"),
]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.parametrize("which, make, kind", [pytest.param(w, m, k, id=i) for i, w, m, k in NOT_REGULAR])
def test_a_checkpoint_file_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path, which, make, kind):
    """A FIFO would block every reader forever (and SIGTERM with it), ``/dev/zero`` would be read until memory runs
    out: only regular files of the declared size are read.
    """
    _save(tmp_path / "agent")
    target = ckpt.checkpoint_files(tmp_path / "agent")[which]
    make(target)
    with within(20, f"loading a checkpoint whose {target.name} is {kind}"):
        refused(
            lambda: ckpt.load_agent(tmp_path / "agent"),
            target.name,
            kind,
            "expected a regular file",
            error=ckpt.CheckpointError,
        )
        if which == 0:
            refused(lambda: ckpt.read_metadata(tmp_path / "agent"), kind, error=ckpt.CheckpointError)
            assert ckpt.checkpoint_files(tmp_path / "agent")[1].name == "agent.safetensors"


def test_a_tensor_file_larger_than_its_metadata_declares_is_refused_before_it_is_read(tmp_path, monkeypatch):
    _save(tmp_path / "agent")
    tensor = ckpt.checkpoint_files(tmp_path / "agent")[1]
    declared = tensor.stat().st_size
    with tensor.open("ab") as handle:
        handle.truncate(declared + 2**30)  # a sparse GiB: reading it whole is what the size check prevents
    read = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(len(data := real_read(fd, n))) or data)
    refused(
        lambda: ckpt.load_agent(tmp_path / "agent"),
        f"{declared + 2**30} bytes that do not match the {declared} bytes",
        error=ckpt.CheckpointError,
    )
    assert sum(read) == ckpt.checkpoint_files(tmp_path / "agent")[0].stat().st_size, read  # the metadata only


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_the_command_lines_refuse_a_fifo_checkpoint_instead_of_hanging(tmp_path, capsys):
    from training.cli.eval import main as evaluate
    from training.cli.exploit import main as exploit

    _save(tmp_path / "agent")
    _fifo(ckpt.checkpoint_files(tmp_path / "agent")[0])
    with within(60, "cockroach-eval and cockroach-exploit on a FIFO checkpoint"):
        assert evaluate([str(tmp_path / "agent"), "random", "random", "--games", "2", "--quiet"]) == 2
        assert exploit([str(tmp_path / "agent"), "--decisions", "64", "--games", "2"]) == 2
        assert evaluate(["random", "random", "--games", "2", "--quiet", "--json", str(tmp_path / "agent.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("a FIFO (named pipe); expected a regular file") == 2 and "Traceback" not in err, err
    assert "already exists" in err


def test_cockroach_exploit_names_a_tampered_network_shape(tmp_path, capsys):
    from training.cli.exploit import main as exploit

    _save(tmp_path / "agent")
    _set([10**12, 10**12], "model", "hidden_sizes")(tmp_path / "agent")
    assert exploit([str(tmp_path / "agent"), "--decisions", "64", "--games", "2"]) == 2
    err = capsys.readouterr().err
    assert "agent.json" in err and "1000000000000" in err and "Traceback" not in err, err


# ---------------------------------------------------------------------------- a tampered run state refuses --resume

RESUME_TINY = [
    "ppo.num_envs=16",
    "ppo.num_steps=8",
    "ppo.num_minibatches=2",
    "ppo.update_epochs=1",
    "model.hidden_sizes=[16]",
    "opponents.snapshot_every=1",
    "opponents.max_snapshots=2",
    "schedule.checkpoint_every=2",
    "evaluation.every=2",
    "evaluation.games=8",
    "evaluation.final_games=0",
]


def _train_argv(out: Path, updates: int, *extra: str) -> list[str]:
    sets = [*RESUME_TINY, "name=run", f"output_dir={out}", f"schedule.total_decisions={updates * 16 * 8}"]
    return ["--config", str(ROOT / "configs" / "quick.yaml"), "--no-progress", *[a for x in sets for a in ("--set", x)]]


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory) -> Path:
    """A 2-update run (checkpoint and evaluation at update 2), resumed by each test to 4 updates."""
    from training.cli.train import main as train

    out = tmp_path_factory.mktemp("runs")
    assert train(_train_argv(out, 2)) == 0
    return out / "run"


def _run_edit(edit):
    def tamper(run: Path) -> None:
        meta = json.loads((run / "checkpoint.json").read_text())
        edit(meta)
        (run / "checkpoint.json").write_text(json.dumps(meta))

    return tamper


def _group(**values):
    return _run_edit(lambda m: m["optimizer"]["param_groups"][0].update(values))


RUN_TAMPERS = [
    ("rng state out of range", _run_edit(lambda m: m["rng"]["numpy"]["state"].update(state=10**60)), ["'rng.numpy'"]),
    ("rng state not a mapping", _run_edit(lambda m: m["rng"]["numpy"].update(state=[1])), ["'rng.numpy'"]),
    ("rng of a function", _run_edit(lambda m: m["rng"]["numpy"].update(bit_generator="default_rng")), ["'rng.numpy'"]),
    (
        "an evaluation without its fields",
        _run_edit(lambda m: m["progress"].update(evaluations=[{"bogus": 1}])),
        ["'progress.evaluations'"],
    ),
    (
        "an evaluation with a loss rate of 7",
        _run_edit(
            lambda m: m["progress"].update(
                evaluations=[
                    {"update": 2, "decisions": 256, "final": False, "results": [{"opponent": "random", "loss_rate": 7}]}
                ]
            )
        ),
        ["'progress.evaluations'"],
    ),
    ("betas above 1", _group(betas=[2.0, 0.999]), ["'optimizer.param_groups'", "betas"]),
    ("betas of three", _group(betas=[0.9, 0.9, 0.9]), ["'optimizer.param_groups'"]),
    ("eps -1", _group(eps=-1), ["'optimizer.param_groups'", "eps > 0"]),
    ("lr 'fast'", _group(lr="fast"), ["'optimizer.param_groups'", "'fast'"]),
    ("lr 0", _group(lr=0), ["'optimizer.param_groups'", "lr > 0"]),
    ("params not indices", _group(params=["x"]), ["'optimizer.param_groups'"]),
    ("update 10**9", _run_edit(lambda m: m["progress"].update(update=10**9)), ["'progress'", "progress.update <="]),
]


@pytest.mark.parametrize("tamper, fragments", [pytest.param(t, f, id=i) for i, t, f in RUN_TAMPERS])
def test_a_tampered_run_state_refuses_resume_before_any_file_changes(stopped_run, tmp_path, capsys, tamper, fragments):
    """Each of these was accepted (and failed later, after ``eval.csv`` was rewritten) or crashed: the whole run state
    is checked against the schema before the run directory is touched, and a refused resume changes no byte and no
    modification time.
    """
    import shutil

    from training.cli.train import main as train

    run = tmp_path / "run"
    shutil.copytree(stopped_run, run)
    tamper(run)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(run.rglob("*")) if p.is_file()}
    time.sleep(0.01)
    assert train([*_train_argv(tmp_path, 4), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "checkpoint.json" in err, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    assert len(err) < 2000, err
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(run.rglob("*")) if p.is_file()}
    assert after == before


def test_the_untampered_run_resumes(stopped_run, tmp_path):
    import shutil

    from training.cli.train import main as train

    shutil.copytree(stopped_run, tmp_path / "run")
    assert train([*_train_argv(tmp_path, 4), "--resume"]) == 0
    assert ckpt.read_metadata(tmp_path / "run" / "checkpoint")["progress"]["update"] == 4


def test_the_checkpoint_cli_names_the_problem_instead_of_a_traceback(tmp_path, capsys):
    _save(tmp_path / "agent")
    _set(None, "tensors")(tmp_path / "agent")
    with pytest.raises(SystemExit) as exit_:
        checkpoint_cli.main([str(tmp_path / "agent")])
    assert "'tensors'" in str(exit_.value) and "agent.json" in str(exit_.value)


def test_an_export_to_a_place_that_cannot_hold_it_is_named_instead_of_a_traceback(tmp_path, monkeypatch):
    """``--export DEST`` under a file, or on a full disk: the CLI names DEST and the problem, and leaves no file
    behind.
    """
    import errno

    _save(tmp_path / "agent")
    (tmp_path / "notes.txt").write_text("x")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(SystemExit) as exit_:
        checkpoint_cli.main([str(tmp_path / "agent"), "--export", str(tmp_path / "notes.txt" / "small")])
    assert "notes.txt" in str(exit_.value) and "cannot write" in str(exit_.value)

    def no_space(final, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(final))

    monkeypatch.setattr(checkpoint_files, "_write_temporary", no_space)
    with pytest.raises(SystemExit) as exit_:
        checkpoint_cli.main([str(tmp_path / "agent"), "--export", str(tmp_path / "small")])
    assert "small" in str(exit_.value) and "No space left on device" in str(exit_.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_non_finite_weights_are_never_saved_over_a_good_checkpoint(tmp_path):
    good = _model(1)
    _save(tmp_path / "agent", good)
    before = sorted(p.name for p in tmp_path.iterdir())
    bad = _model(2)
    with torch.no_grad():
        bad.trunk[0].weight[0, 0] = float("nan")
    refused(lambda: _save(tmp_path / "agent", bad), "model.trunk.0.weight", "NaN", error=ckpt.CheckpointError)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert torch.equal(ckpt.load_agent(tmp_path / "agent").model.trunk[0].weight, good.trunk[0].weight)


# ---------------------------------------------------------------------------- formats that must keep loading


def test_a_checkpoint_of_the_fixed_name_layout_loads_and_is_upgraded_on_save(tmp_path):
    """Checkpoints written before generations have ``P.safetensors``; they load, and a save over one switches to a
    generation.
    """
    old = _model(3)
    _save(tmp_path / "agent", old)
    meta_path, tensor_path = ckpt.checkpoint_files(tmp_path / "agent")
    tensor_path.rename(tmp_path / "agent.safetensors")
    _set("agent.safetensors", "tensors", "file")(tmp_path / "agent")
    assert torch.equal(ckpt.load_agent(tmp_path / "agent.safetensors").model.trunk[0].weight, old.trunk[0].weight)
    new = _model(4)
    _save(tmp_path / "agent", new)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "agent.1.safetensors",
        "agent.json",
    ]  # the fixed-name file is gone
    assert torch.equal(ckpt.load_agent(tmp_path / "agent").model.trunk[0].weight, new.trunk[0].weight)


@pytest.mark.parametrize("name", ckpt.shipped_checkpoints())
def test_shipped_checkpoints_pass_the_schema_and_load(name):
    meta = ckpt.read_metadata(name)
    ckpt.validate_metadata(meta, ckpt.SCHEMA, name)
    agent = ckpt.load_agent(name)
    networks = (
        [member.model for member in agent.members] if meta["kind"] == "mixture" else [agent.model]
    )  # (classic-4p-mixture is a mixture)
    assert networks and all(model.num_actions == meta["num_actions"] for model in networks)


def test_every_path_form_of_a_checkpoint_loads(tmp_path):
    _save(tmp_path / "agent")
    _save(tmp_path / "agent")  # generation 2
    tensor = ckpt.checkpoint_files(tmp_path / "agent")[1]
    assert tensor.name == "agent.2.safetensors" and sorted(p.name for p in tmp_path.iterdir()) == [
        "agent.2.safetensors",
        "agent.json",
    ]
    for form in ("agent", "agent.json", "agent.safetensors", "agent.2.safetensors"):
        ckpt.load_agent(tmp_path / form)


# ---------------------------------------------------------------------------- kills and failures during a save


def test_a_failure_at_any_step_of_a_save_keeps_the_previous_checkpoint_and_leaves_no_files(tmp_path, monkeypatch):
    old = _model(5)
    _save(tmp_path / "agent", old)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    for failing in ("fsync", "replace", "write"):
        for at in range(1, 4):
            calls = []
            real = {"fsync": os.fsync, "replace": os.replace, "write": os.write}[failing]

            def fail_once(*args, real=real, calls=calls, at=at):
                calls.append(1)
                if len(calls) == at:
                    raise OSError(28, "No space left on device")
                return real(*args)

            monkeypatch.setattr(os, failing, fail_once)
            try:
                _save(tmp_path / "agent", _model(6))
            except OSError:
                monkeypatch.undo()
                assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before, (failing, at)
            else:  # the failure hit a step that may fail (a directory fsync): the save went through
                monkeypatch.undo()
                before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
                old = _model(6)
            assert torch.equal(ckpt.load_agent(tmp_path / "agent").model.trunk[0].weight, old.trunk[0].weight)


SAVER = """
import sys, torch
from cockroach_env import GameConfig
from training.core import checkpoint as ckpt
from training.core.model import ActorCritic
game = GameConfig(num_players=3)
saves = []
for i in range(7):  # built first, so that the loop below does little but save
    model = ActorCritic(game, [64, 64], "tanh")
    with torch.no_grad():  # exact values that name the save (a fresh random init could differ by threads)
        for p in model.parameters():
            p.fill_(i)
    saves.append({f"model.{k}": v for k, v in model.state_dict().items()})
for i in range(10**9):
    ckpt.save_checkpoint(sys.argv[1], saves[i % 7],
                         {"kind": "agent", "name": str(i % 7), "game_config": game.to_dict(),
                          "model": {"hidden_sizes": [64, 64], "activation": "tanh"}})
    if i == 0:
        print("saved", flush=True)  # (once: a full pipe would block the saves)
"""


@pytest.mark.slow
def test_a_save_killed_at_random_instants_always_leaves_a_loadable_matching_pair(tmp_path):
    """SIGKILL a process that saves again and again, each time after a save of its own has finished: ``P.json`` always
    names complete tensors of the same save, and kills land in the middle of a later save.
    """
    rng = np.random.default_rng(0)
    path = tmp_path / "agent"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    checked = mid_save = 0
    # At least 8 kills, and more (up to 32) until 2 of them have landed in the middle of a save: on a loaded machine
    # a kill may land between two saves more often.
    while checked < 8 or (mid_save < 2 and checked < 32):
        process = subprocess.Popen([sys.executable, "-c", SAVER, str(path)], stdout=subprocess.PIPE, env=env)
        assert process.stdout.readline().strip() == b"saved"  # a first save finished: the kill lands after it
        time.sleep(0.05 * rng.random())
        process.send_signal(signal.SIGKILL)
        assert process.wait() == -signal.SIGKILL
        current = sorted(["agent.json", ckpt.checkpoint_files(path)[1].name])
        mid_save += sorted(p.name for p in tmp_path.iterdir()) != current  # files of an unfinished save
        agent = ckpt.load_agent(path)
        seed = int(agent.name)
        assert all(torch.all(p == seed) for p in agent.model.parameters()), (
            seed
        )  # every tensor from the save its metadata names
        ckpt.remove_stale(path)
        assert sorted(p.name for p in tmp_path.iterdir()) == current
        checked += 1
    assert mid_save >= 2, (checked, mid_save)


KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from training.core.checkpoint import files as checkpoint_files
print(checkpoint_files._write_temporary(Path(sys.argv[1]), b'{"half": '), flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # killed between the temporary and the replace
"""


def test_a_write_killed_before_its_replace_leaves_a_temporary_that_the_next_write_removes(tmp_path):
    """``write_file_atomically`` (the payoff cache): a SIGKILLed writer's temporary goes with the next write of the
    file;
    the temporary of a live writer (this process's parent stands in for one), of another host, or of another file stays.
    """
    target = tmp_path / "cache.json"
    ckpt.write_file_atomically(target, b"old")
    process = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(target)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.returncode == -signal.SIGKILL
    orphan = Path(process.stdout.decode().strip())
    assert orphan.parent == tmp_path and orphan.exists() and target.read_bytes() == b"old"  # the old file is whole
    host = checkpoint_files._writer_tag().split("-")[0]
    kept = [
        tmp_path / f".cache.json.{host}-{os.getppid()}-abcd1234.tmp",
        tmp_path / ".cache.json.0123abcd-1-abcd1234.tmp",
        tmp_path / f".other.json.{host}-999999999-abcd1234.tmp",
    ]
    for path in kept:
        path.write_bytes(b"x")
    ckpt.write_file_atomically(target, b"new")
    assert target.read_bytes() == b"new"
    assert not orphan.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["cache.json", *(p.name for p in kept)])


def test_the_table_of_shipped_checkpoints_in_the_docs_matches_the_files():
    """docs/training.md lists every shipped checkpoint once, with its network shape, member count and tensor-file
    size.
    """
    import re

    text = (ROOT / "docs" / "training.md").read_text()
    table = text[text.index("| name | rules | network | tensor file |") :].split("\n\n")[0].splitlines()[2:]
    rows = {
        m.group(1): (m.group(2), int(m.group(3)))
        for m in (re.match(r"\| `([^`]+)` \| [^|]+ \| ([^|]+) \| (\d+) KB \|$", r) for r in table)
        if m
    }
    assert len(rows) == len(table) and sorted(rows) == ckpt.shipped_checkpoints()
    for name, (network, kb) in rows.items():
        meta = ckpt.read_metadata(name)
        width = "x".join(map(str, meta["model"]["hidden_sizes"]))
        members = len(meta["mixture"]["members"]) if meta["kind"] == "mixture" else 1
        assert network.startswith(f"mixture of {members} networks, each {width}" if members > 1 else width), (
            name,
            network,
        )
        assert ("card counting" in network) == bool(meta["model"].get("card_counting")), name
        size = (ckpt.resolve(name).parent / meta["tensors"]["file"]).stat().st_size
        assert kb == size // 1000, (name, kb, size)


# ---------------------------------------------------------------------------- an agent given the wrong observation


def _agents_and_observations():
    """A history-8 agent, an agent without a window, and an observation of each table."""
    from dataclasses import replace

    import cockroach_env
    from cockroach_env import GameConfig
    from training.core.model import ActorCritic, PolicyAgent

    plain = GameConfig(num_players=3)
    windowed = replace(plain, history=8)
    agents, observations = {}, {}
    for name, config in (("plain", plain), ("windowed", windowed)):
        agents[name] = PolicyAgent(ActorCritic(config, [8], "tanh", False, seed=0), config, seed=0, name=name)
        env = cockroach_env.raw_env(config=config)
        env.reset(seed=0)
        observations[name] = env.observe(env.agent_selection)
    return agents, observations


@pytest.mark.parametrize(
    "agent, observation, fragments",
    [
        ("windowed", "plain", ["windowed: observations of shape (1, ", "the 8-move window (history=8)"]),
        ("plain", "windowed", ["plain: observations of shape (1, ", "no move window (history=0)"]),
        ("plain", "all NaN", ["observation row 0 holds NaN or infinite entries"]),
        ("plain", "one inf", ["observation row 0 holds NaN or infinite entries"]),
        ("plain", "short mask", ["action masks of shape (1, 3) do not fit"]),
    ],
)
def test_an_agent_names_an_observation_that_does_not_fit_its_network(agent, observation, fragments):
    from .hostile import refused

    agents, observations = _agents_and_observations()
    given = dict(observations["plain"])
    if observation == "windowed":
        given = observations["windowed"]
    elif observation == "all NaN":
        given["observation"] = np.full(given["observation"].shape, np.nan, np.float32)
    elif observation == "one inf":
        given["observation"] = given["observation"].astype(np.float32)
        given["observation"][5] = np.inf
    elif observation == "short mask":
        given["action_mask"] = np.ones(3, np.int8)
    message = refused(lambda: agents[agent].act(given), *fragments)
    assert "Traceback" not in message
    for batch in (agents[agent].act_batch, agents[agent].action_probabilities_batch):
        refused(lambda b=batch: b(given["observation"][None], given["action_mask"][None]), *fragments)
