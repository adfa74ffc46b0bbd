"""Versions: the versioned env module (PettingZoo's convention), the package version and the changelog."""

from __future__ import annotations

import importlib
import re
import sys
import warnings
from importlib import metadata
from pathlib import Path

import pytest
from pettingzoo.test import api_test, seed_test

import cockroach_env
from cockroach_env import cockroach_poker_v2
from cockroach_env.engine import LOSS_REASONS

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT_VERSION = re.search(
    r'^\[project\]$[^\[]*?^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.MULTILINE
).group(1)


@pytest.mark.parametrize("options", [{}, {"num_players": 2}, {"preset": "royal", "num_players": 3}], ids=str)
def test_the_versioned_module_passes_pettingzoos_api_test(options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # api_test passes an unknown reset option on purpose
        api_test(cockroach_poker_v2.env(**options), num_cycles=200)
    seed_test(lambda: cockroach_poker_v2.env(**options), num_cycles=50)


def test_the_latest_env_is_the_module_its_metadata_names():
    name = cockroach_env.raw_env.metadata["name"]
    assert re.fullmatch(r"cockroach_poker_v\d+", name)
    latest = importlib.import_module(f"cockroach_env.{name}")
    assert latest is cockroach_poker_v2
    assert latest.env is cockroach_env.env and latest.raw_env is cockroach_env.raw_env
    assert cockroach_poker_v2.env().metadata["name"] == name
    for exported in cockroach_poker_v2.__all__:
        assert getattr(cockroach_poker_v2, exported) is not None


def test_v1_still_imports_warns_and_gives_the_latest_version():
    sys.modules.pop("cockroach_env.cockroach_poker_v1", None)
    with pytest.warns(DeprecationWarning, match="cockroach_poker_v2"):
        v1 = importlib.import_module("cockroach_env.cockroach_poker_v1")
    assert v1.env is cockroach_poker_v2.env and v1.raw_env is cockroach_poker_v2.raw_env
    assert set(v1.__all__) == set(cockroach_poker_v2.__all__)


def test_the_env_docstring_lists_every_version_down_to_v0_latest_first():
    doc = importlib.import_module("cockroach_env.env").__doc__
    history = doc.split("## Version history", 1)[1]
    versions = [int(v) for v in re.findall(r"^\* v(\d+):", history, re.MULTILINE)]
    latest = int(cockroach_env.raw_env.metadata["name"].rsplit("_v", 1)[1])
    assert versions == list(range(latest, -1, -1))


def test_v1_infos_are_numbers_that_map_back_as_the_changelog_says():
    env = cockroach_poker_v2.env(num_players=3)
    hands = {"player_0": {"bat": 1}, "player_1": {"fly": 1}, "player_2": {"rat": 1}}
    env.reset(options={"starter": "player_1", "hands": hands, "collections": {"player_2": {"fly": 3}}})
    assert all(info == cockroach_poker_v2.INFO_DEFAULTS for info in env.infos.values())
    Move = cockroach_poker_v2.Move
    env.step(env.unwrapped.encode(Move("offer", card="fly", target="player_2", claim="bat")))
    env.step(env.unwrapped.encode(Move("call", believe=True)))  # wrong: player_2 takes a fourth fly
    for info in env.infos.values():
        assert all(isinstance(value, (int, bool)) for value in info.values())
        assert info["loser"] == env.agents.index("player_2") == int("player_2".split("_")[1])
        assert LOSS_REASONS[info["loss_reason"]] == "same_type"


def test_version_is_the_installed_package_metadata():
    assert cockroach_env.__version__ == metadata.version(cockroach_env.DISTRIBUTION)
    from cockroach_env import __version__

    assert __version__ == cockroach_env.__version__


def test_a_source_tree_that_is_not_installed_reads_pyproject():
    expected = PYPROJECT_VERSION if sys.version_info >= (3, 11) else "0+unknown"  # tomllib came in Python 3.11
    assert cockroach_env.package_version("no-such-distribution-installed") == expected


def test_the_changelog_keeps_a_changelog_and_its_latest_release_is_pyprojects_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[(.+?)\]", text, re.MULTILINE)
    if releases[0] == "Unreleased":  # changes not released yet sit on top, as Keep a Changelog has it
        releases = releases[1:]
    assert releases[0] == PYPROJECT_VERSION and "Unreleased" not in releases
    assert releases[-1] == "0.1.0" and len(set(releases)) == len(releases)
    kinds = set(re.findall(r"^### (.+)$", text, re.MULTILINE))
    assert kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    assert 'LOSS_REASONS[info["loss_reason"]]' in text and "env.agents.index(name)" in text
    assert LOSS_REASONS == ("same_type", "empty_hand", "rainbow")
